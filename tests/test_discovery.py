"""Tests for scripts/discovery.py on fake interpreter trees.

A fake interpreter is a ``#!/bin/sh`` script that answers ``EXE -c PROBE`` the
way the probe script would: a stray line, then one JSON line. Every test runs
on a machine of its own: ``$PYENV_ROOT`` and ``$IOMATRIX_CACHE`` under
tmp_path, ``PATH`` holding only tmp_path directories (the scripts need no PATH:
their shebang is absolute and they use shell builtins only), and Debian's
``/usr/bin`` and uv replaced by monkeypatched candidate lists. No real
interpreter runs, so the whole file takes well under a second.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from iomatrix.interpreters import discovery
from iomatrix.interpreters.discovery import DiscoveryError, Interpreter

LIBPYTHON_MISSING = ("error while loading shared libraries: libpython3.14.so.1.0: "
                     "cannot open shared object file: No such file or directory")


def probe_answer(version: str, implementation: str = "cpython", free_threaded: bool = False,
                 debug: bool = False, executable: str = "", **overrides) -> dict:
    """What PROBE_SCRIPT prints for an interpreter of this kind."""
    version_info = [int(part) for part in re.match(r"(\d+)\.(\d+)\.(\d+)", version).groups()]
    answer = {
        "version": version,
        "version_info": version_info,
        "implementation": implementation,
        "executable": executable,
        "sys_version": f"{version} (main, Jan  1 2026, 00:00:00) [GCC 12.2.0]",
        "free_threaded": free_threaded,
        "gil_enabled": not free_threaded,
        "debug": debug,
        "shared": False,
        "configure_args": "'--prefix=/fake'",
        "optimized": False,
        "lto": False,
        "compiler": "GCC 12.2.0",
    }
    answer.update(overrides)
    # A fake binary stands for one linked as its build variables say (the probe reads the
    # real linkage from the process's mappings; the real interpreters' test checks that).
    if "linkage" not in overrides and isinstance(answer.get("sysconfig"), dict):
        answer["linkage"] = "shared" if answer["sysconfig"].get("Py_ENABLE_SHARED") else "static"
    return answer


def fake_python(path: Path, version: str, **answer) -> Path:
    """An executable script at ``path`` that answers the probe like ``version`` would.

    ``executable`` in the answer is the script's own path unless given.
    """
    answer.setdefault("executable", str(path))
    line = json.dumps(probe_answer(version, **answer)).replace("'", "'\\''")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n"
                    '[ "$1" = "-c" ] || exit 2  # discovery always runs EXE -c PROBE\n'
                    "printf '%s\\n' 'a stray line, as a sitecustomize might print'\n"
                    f"printf '%s\\n' '{line}'\n")
    path.chmod(0o755)
    return path


def broken_python(path: Path) -> Path:
    """A python that no longer runs: its libpython is gone (exit 127, like ld.so)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0: {LIBPYTHON_MISSING}" >&2\nexit 127\n')
    path.chmod(0o755)
    return path


@dataclasses.dataclass
class Machine:
    """A fake machine: where its interpreters live and what discovery said about them."""
    root: Path
    pyenv: Path
    cache: Path
    bin: Path
    config: Path
    warnings: list = dataclasses.field(default_factory=list)

    def pyenv_python(self, name: str, version: str, **answer) -> Path:
        return fake_python(self.pyenv / "versions" / name / "bin" / "python3", version, **answer)

    def provisioned(self, name: str, version: str, build_info: bool = True,
                    recipe: str | None = None, **answer) -> Path:
        prefix = self.cache / "pythons" / name
        exe = fake_python(prefix / "bin" / "python3", version, **answer)
        if build_info:
            write_build_info(prefix, version, answer.get("free_threaded", False), recipe)
        return exe

    def discover(self, environ=None, **kwargs) -> list[Interpreter]:
        return discovery.discover(config_file=self.config, environ=environ or {},
                                  warn=self.warnings.append, **kwargs)

    def labels(self, **kwargs) -> dict[str, Interpreter]:
        found = self.discover(**kwargs)
        by_label = {i.label: i for i in found}
        assert len(by_label) == len(found), "labels must be unique"
        return by_label


def write_build_info(prefix: Path, version: str, free_threaded: bool, recipe: str | None = None):
    """iomatrix-build.json as provision.py writes it (the keys of a real 3.14.7 build);
    without a recipe, as it wrote it before recipes."""
    info = {
        "version": prefix.name,
        "python_version": version,
        "free_threaded": free_threaded,
        "configure_args": [f"--prefix={prefix}"] + (["--disable-gil"] if free_threaded else []),
        "optimized": False,
        "tarball": "/nonexistent/python3.14_3.14.7.orig.tar.xz",
        "sha256": "0" * 64,
        "build_seconds": 1.0,
        "built_at": "2026-01-01T00:00:00+00:00",
        "log": "/nonexistent/build.log",
        "sys_version": f"{version} (main, Jan  1 2026, 00:00:00) [GCC 12.2.0]",
        "missing_modules": [],
    }
    if recipe is not None:
        info.update(recipe=recipe, optimized=recipe == "release")
    (prefix / "iomatrix-build.json").write_text(json.dumps(info, indent=2))


@pytest.fixture
def machine(tmp_path, monkeypatch) -> Machine:
    m = Machine(root=tmp_path, pyenv=tmp_path / "pyenv", cache=tmp_path / "cache",
                bin=tmp_path / "bin", config=tmp_path / "iomatrix.toml")
    m.bin.mkdir()
    monkeypatch.setenv("PYENV_ROOT", str(m.pyenv))
    monkeypatch.setenv("IOMATRIX_CACHE", str(m.cache))
    monkeypatch.setenv("PATH", str(m.bin))  # path_candidates() scans this for real
    monkeypatch.delenv(discovery.ENV_VARIABLE, raising=False)
    # /usr/bin here holds real python3.11 and pypy3; uv is replaced in case it is on PATH later.
    monkeypatch.setattr(discovery, "debian_candidates", lambda: [])
    monkeypatch.setattr(discovery, "uv_candidates", lambda: [])
    return m


# -- automatic sources -------------------------------------------------------------

def test_pyenv_builds_get_natural_labels(machine):
    machine.pyenv_python("3.12.4", "3.12.4")
    machine.pyenv_python("3.13.1", "3.13.1")
    machine.pyenv_python("3.13.1t", "3.13.1", free_threaded=True)
    machine.pyenv_python("pypy3.10-7.3.17", "3.10.14", implementation="pypy",
                         sys_version="3.10.14 (39dc8d3c85a7, Aug 27 2024)\n[PyPy 7.3.17]")
    found = machine.labels()
    assert sorted(found) == ["3.12", "3.13", "3.13t", "pypy3.10"]
    assert {i.source for i in found.values()} == {"pyenv"}
    assert all(i.ok for i in found.values())
    assert found["3.13t"].free_threaded and not found["3.13"].free_threaded
    assert found["3.13t"].executable == str(machine.pyenv / "versions/3.13.1t/bin/python3")
    assert found["pypy3.10"].implementation == "pypy"
    assert found["3.12"].version == "3.12.4" and found["3.12"].version_info == (3, 12, 4)
    assert machine.warnings == []


def test_pyenv_aliases_and_unbuilt_versions_are_not_candidates(machine):
    machine.pyenv_python("3.12.4", "3.12.4")
    (machine.pyenv / "versions" / "3.12").symlink_to(machine.pyenv / "versions" / "3.12.4")
    (machine.pyenv / "versions" / "3.14-dev" / "bin").mkdir(parents=True)  # failed install
    assert [i.label for i in machine.discover()] == ["3.12"]


def test_path_candidates_follow_the_name_pattern(machine):
    fake_python(machine.bin / "python3.12", "3.12.4")
    fake_python(machine.bin / "python3.13t", "3.13.1", free_threaded=True)
    fake_python(machine.bin / "pypy3", "3.10.14", implementation="pypy")
    fake_python(machine.bin / "python3", "3.12.4")  # not pythonX.Y: not a candidate
    fake_python(machine.bin / "python3.12-config", "3.12.4")
    shims = machine.root / "pyenv-shims" / "shims"
    fake_python(shims / "python3.11", "3.11.9")
    os.environ["PATH"] += os.pathsep + str(shims)  # monkeypatch restores PATH
    found = machine.labels()
    assert sorted(found) == ["3.12", "3.13t", "pypy3.10"]
    assert {i.source for i in found.values()} == {"path"}


def test_a_second_build_of_a_version_gets_its_source_as_suffix(machine, monkeypatch):
    machine.pyenv_python("3.11.9", "3.11.9")
    # A stand-in for Debian's /usr/bin/python3.11: classify() goes by the real path, and
    # one under tmp_path is a "path" interpreter (the Debian case is test_classify_*).
    debian = fake_python(machine.root / "usr-bin" / "python3.11", "3.11.2")
    monkeypatch.setattr(discovery, "debian_candidates", lambda: [str(debian)])
    found = machine.labels()
    assert sorted(found) == ["3.11", "3.11-path"]
    assert found["3.11"].source == "pyenv" and found["3.11"].version == "3.11.9"
    assert found["3.11-path"].source == "path"
    assert found["3.11-path"].executable == str(debian)


def test_a_third_build_of_a_version_is_numbered(machine, monkeypatch):
    second, third = machine.root / "opt-a", machine.root / "opt-b"
    fake_python(machine.bin / "python3.11", "3.11.1")
    fake_python(second / "python3.11", "3.11.2")
    fake_python(third / "python3.11", "3.11.3")
    monkeypatch.setenv("PATH", os.pathsep.join(map(str, [machine.bin, second, third])))
    found = machine.labels()
    assert {label: i.version for label, i in found.items()} == {
        "3.11": "3.11.1", "3.11-path": "3.11.2", "3.11-path2": "3.11.3"}


def test_uv_builds_are_labelled_uv(machine, monkeypatch):
    machine.pyenv_python("3.12.4", "3.12.4")
    uv = fake_python(machine.root / "share" / "uv" / "python" / "cpython-3.12.8-linux-x86_64-gnu"
                     / "bin" / "python3.12", "3.12.8")
    monkeypatch.setattr(discovery, "uv_candidates", lambda: [str(uv)])
    found = machine.labels()
    # another patch release of 3.12 gets a label that says which one
    assert found["3.12.8"].source == "uv" and found["3.12.8"].version == "3.12.8"
    same = fake_python(machine.root / "share" / "uv" / "python" / "cpython-3.12.4-linux-x86_64-gnu"
                       / "bin" / "python3.12", "3.12.4")
    monkeypatch.setattr(discovery, "uv_candidates", lambda: [str(same)])
    found = machine.labels()
    assert found["3.12-uv"].source == "uv" and found["3.12-uv"].version == "3.12.4"


@pytest.mark.skipif(not os.path.exists("/etc/debian_version"), reason="not a Debian system")
def test_classify_names_debian_interpreters_by_their_path(machine):
    # classify() needs no file: it looks at the real path only.
    assert discovery.classify("/usr/bin/python3.11") == "debian"
    assert discovery.classify(str(machine.root / "python3.11")) == "path"


def test_a_symlink_to_a_found_binary_is_not_listed_twice(machine, monkeypatch):
    target = machine.pyenv_python("3.12.4", "3.12.4")
    (machine.bin / "python3.12").symlink_to(target)
    other = machine.root / "other-bin"
    other.mkdir()
    (other / "python3.12").symlink_to(machine.bin / "python3.12")  # a chain of two
    monkeypatch.setenv("PATH", f"{machine.bin}{os.pathsep}{other}")
    found = machine.discover()
    assert [(i.label, i.executable) for i in found] == [("3.12", str(target))]


def test_a_copy_that_reports_a_found_executable_is_not_listed_twice(machine):
    target = machine.pyenv_python("3.12.4", "3.12.4")
    # A copy or wrapper: another file, but sys.executable says it is the pyenv build.
    fake_python(machine.bin / "python3.12", "3.12.4", executable=str(target))
    assert [i.executable for i in machine.discover()] == [str(target)]


def test_provisioned_builds_are_found_in_the_cache(machine):
    machine.provisioned("3.14.7", "3.14.7")
    machine.provisioned("3.14.7t", "3.14.7", free_threaded=True)
    machine.provisioned("3.15.0a1", "3.15.0a1", build_info=False)  # partial: still building
    (machine.cache / "pythons" / "logs").mkdir()
    found = machine.labels()
    assert sorted(found) == ["3.14", "3.14t"]
    assert {i.source for i in found.values()} == {"provisioned"}
    assert found["3.14t"].executable == str(machine.cache / "pythons/3.14.7t/bin/python3")
    assert machine.warnings == []


def test_a_provisioned_build_after_a_pyenv_one_is_labelled_built(machine):
    machine.pyenv_python("3.14.7", "3.14.7")
    machine.provisioned("3.14.7", "3.14.7")
    found = machine.labels()
    assert found["3.14"].source == "pyenv"
    assert found["3.14-built"].source == "provisioned"
    assert found["3.14-built"].version == "3.14.7"


def test_patch_releases_of_one_minor_version_get_labels_that_say_which(machine):
    machine.pyenv_python("3.13.0", "3.13.0")
    machine.provisioned("3.13.15", "3.13.15")
    machine.provisioned("3.15.0rc2", "3.15.0rc2")
    found = machine.labels()
    assert found["3.13"].version == "3.13.0"
    assert found["3.13.15"].source == "provisioned" and found["3.13.15"].version == "3.13.15"
    assert found["3.15"].version == "3.15.0rc2"  # the only 3.15 keeps the short label


def test_the_newest_patch_release_of_a_minor_version_gets_its_label(machine):
    """3.14.4 .. 3.14.7 built in that order: "3.14" is 3.14.7 (what "3.14" means on a release
    day and in the lineage), not the first one built; the others say which they are."""
    for version in ("3.14.4", "3.14.5", "3.14.6", "3.14.7"):
        machine.provisioned(version, version)
    machine.provisioned("3.14.4t", "3.14.4", free_threaded=True)
    machine.provisioned("3.14.7t", "3.14.7", free_threaded=True)
    machine.provisioned("3.15.0rc1", "3.15.0rc1")
    machine.provisioned("3.15.0rc2", "3.15.0rc2")
    found = machine.labels()
    assert {label: i.version for label, i in found.items()} == {
        "3.14": "3.14.7", "3.14.4": "3.14.4", "3.14.5": "3.14.5", "3.14.6": "3.14.6",
        "3.14t": "3.14.7", "3.14.4t": "3.14.4", "3.15": "3.15.0rc2", "3.15.0rc1": "3.15.0rc1"}
    # Discovery's order is kept: only the labels are claimed newest first.
    assert [i.version for i in machine.discover()][:4] == ["3.14.4", "3.14.4", "3.14.5",
                                                          "3.14.6"]


def test_an_earlier_source_keeps_the_minor_label_beside_newer_builds_in_the_cache(machine):
    # As in every run so far: pyenv's 3.13.0 is "3.13", the cache's newer ones say which.
    machine.pyenv_python("3.13.0", "3.13.0")
    machine.provisioned("3.13.14", "3.13.14")
    machine.provisioned("3.13.15", "3.13.15")
    found = machine.labels()
    assert {label: i.version for label, i in found.items()} == {
        "3.13": "3.13.0", "3.13.14": "3.13.14", "3.13.15": "3.13.15"}


def test_builds_label_the_newest_3_14_and_the_lineage_takes_it(machine):
    """A cache of the test's own with 3.14.4 .. 3.14.7 built (the lineage's recipe, as
    provision builds them) beside pyenv's 3.13.0: "3.14" is the newest, and the lineage,
    the allocator twins' choice (planning.lineage_labels), takes that label. (It read this
    machine's own cache before, and so never ran where none was built.)"""
    from iomatrix.measuring import bench, planning
    machine.pyenv_python("3.13.0", "3.13.0", sysconfig=PYENV_3_13)
    for version in ("3.14.4", "3.14.5", "3.14.6", "3.14.7"):
        machine.provisioned(version, version, recipe="lineage", sysconfig=PYENV_3_13)
    found = machine.discover()
    built = [i for i in found if i.ok and i.source == "provisioned"]
    assert len(built) == 4
    newest = max(built, key=lambda i: i.version_info)
    assert newest.label == "3.14"
    assert all(i.label == i.version for i in built if i is not newest)
    lineage = planning.lineage_labels(found)
    assert "3.14" in lineage and not any(i.label in lineage for i in built if i is not newest)
    # An A/A twin of "the newest" among 3.14's builds: 3.14.7, now labelled "3.14".
    labels = [i.label for i in built]
    assert bench.resolve_aa("newest", labels, found) == "3.14"


def test_a_provisioned_build_that_no_longer_runs_is_reported_and_skipped(machine):
    machine.provisioned("3.14.7t", "3.14.7", free_threaded=True)
    broken = machine.cache / "pythons" / "3.14.7" / "bin" / "python3"
    broken_python(broken)
    write_build_info(broken.parent.parent, "3.14.7", free_threaded=False)
    fake_python(machine.bin / "python3.13", "3.13.1")  # a later source still runs
    found = machine.labels()
    assert sorted(found) == ["3.13", "3.14t"]
    assert len(machine.warnings) == 1
    assert str(broken) in machine.warnings[0]
    assert "exit 127" in machine.warnings[0]
    assert "libpython3.14.so.1.0" in machine.warnings[0]


# -- declared interpreters -----------------------------------------------------------

def test_declared_interpreters_keep_their_labels_and_come_first(machine):
    machine.pyenv_python("3.12.4", "3.12.4")
    pgo = fake_python(machine.root / "opt" / "pgo" / "python3", "3.13.1", optimized=True)
    main = fake_python(machine.root / "src" / "cpython" / "python", "3.15.0")
    machine.config.write_text(f'[interpreters]\nmain-branch = "{main}"\n"3.13-pgo" = "{pgo}"\n')
    other = fake_python(machine.root / "other" / "python3", "3.12.7")
    found = machine.discover(environ={"IOMATRIX_PYTHONS": f" other = {other} ; "})
    assert [(i.label, i.source) for i in found] == [
        ("main-branch", "declared"), ("3.13-pgo", "declared"), ("other", "declared"),
        ("3.12", "pyenv")]
    assert found[1].info["optimized"] is True
    assert found[2].executable == str(other)


def test_a_declared_label_takes_precedence_over_a_natural_one(machine):
    machine.pyenv_python("3.12.4", "3.12.4")
    mine = fake_python(machine.root / "mine" / "python3", "3.12.9")
    found = machine.labels(environ={"IOMATRIX_PYTHONS": f"3.12={mine}"})
    assert found["3.12"].executable == str(mine) and found["3.12"].source == "declared"
    assert found["3.12-pyenv"].version == "3.12.4"


def test_one_path_under_two_labels_is_two_interpreters(machine):
    exe = fake_python(machine.root / "python3", "3.13.1")
    found = machine.discover(environ={"IOMATRIX_PYTHONS": f"A={exe};B={exe}"}, automatic=False)
    assert [(i.label, i.executable, i.ok) for i in found] == [
        ("A", str(exe), True), ("B", str(exe), True)]


def test_config_paths_expand_the_home_directory(machine, monkeypatch):
    monkeypatch.setenv("HOME", str(machine.root))
    fake_python(machine.root / "src" / "python", "3.15.0")
    machine.config.write_text('[interpreters]\ndev = "~/src/python"\n')
    [dev] = machine.discover(automatic=False)
    assert dev.ok and dev.executable == str(machine.root / "src" / "python")


def test_unusable_declared_interpreters_are_kept_with_their_error(machine):
    missing = machine.root / "nowhere" / "python3"
    not_executable = machine.root / "python.txt"
    not_executable.write_text("print('hi')\n")
    environ = {"IOMATRIX_PYTHONS": f"ghost={missing};notpy=/bin/true;text={not_executable}"}
    found = {i.label: i for i in machine.discover(environ=environ, automatic=False)}
    assert list(found) == ["ghost", "notpy", "text"]
    assert not any(i.ok for i in found.values())
    assert {i.source for i in found.values()} == {"declared"}
    assert "no such file" in found["ghost"].error
    assert "does not behave as Python" in found["notpy"].error
    assert "not executable" in found["text"].error
    assert found["ghost"].as_manifest()["error"] == found["ghost"].error
    assert len(machine.warnings) == 3
    for warning, path in zip(machine.warnings, [missing, "/bin/true", not_executable]):
        assert str(path) in warning


@pytest.mark.parametrize("value, message", [
    ("nolabel", r"IOMATRIX_PYTHONS: entry 'nolabel' is not label=/path/to/python"),
    ("my label=/usr/bin/python3", r"label 'my label': a label uses letters"),
    ("a|b=/usr/bin/python3", r"label 'a\|b': a label uses letters"),
    ("=/usr/bin/python3", r"label '': a label uses"),
    ("-x=/usr/bin/python3", r"label '-x': a label uses"),
    ("a=/bin/true;a=/bin/false", r"label 'a' is declared twice"),
])
def test_bad_environment_declarations_are_errors(machine, value, message):
    with pytest.raises(DiscoveryError, match=message):
        machine.discover(environ={"IOMATRIX_PYTHONS": value}, automatic=False)


def test_a_label_declared_in_both_places_is_an_error(machine):
    machine.config.write_text('[interpreters]\ndev = "/bin/true"\n')
    with pytest.raises(DiscoveryError, match="label 'dev' is declared twice"):
        machine.discover(environ={"IOMATRIX_PYTHONS": "dev=/bin/false"}, automatic=False)


@pytest.fixture(params=["tomllib", "fallback"])
def toml_parser(request, monkeypatch):
    """Both ways to read iomatrix.toml: tomllib, and the small parser for Python < 3.11."""
    if request.param == "tomllib":
        pytest.importorskip("tomllib")
    else:
        monkeypatch.setitem(sys.modules, "tomllib", None)  # import tomllib -> ImportError
    return request.param


def test_both_toml_parsers_read_the_interpreters_table(machine, toml_parser):
    machine.config.write_text('# iomatrix\n[other]\nx = "y"\n\n[interpreters]\n'
                              'dev = "/opt/dev/python"  # a comment\n"3.13-pgo" = "/opt/pgo"\n')
    assert discovery.parse_config_declarations(machine.config) == [
        ("dev", "/opt/dev/python"), ("3.13-pgo", "/opt/pgo")]


def test_a_config_without_an_interpreters_table_declares_nothing(machine, toml_parser):
    machine.config.write_text('[other]\nx = "y"\n')
    assert discovery.parse_config_declarations(machine.config) == []
    assert discovery.parse_config_declarations(machine.root / "absent.toml") == []


@pytest.mark.parametrize("text, message", [
    ('[interpreters]\ndev = 3\n', r"\[interpreters\] dev must be a path string"),
    ('[interpreters]\ndev = ["/opt/python"]\n', r"\[interpreters\] dev must be a path string"),
    ('[interpreters]\ndev = "/opt/a"\ndev = "/opt/b"\n', r"iomatrix\.toml: .*"),
    ('[interpreters\ndev = "/opt/a"\n', r"iomatrix\.toml: .*"),
    ('[interpreters]\ndev = /opt/a\n', r"iomatrix\.toml: .*"),
    ('[interpreters]\n"my label" = "/opt/a"\n', r"label 'my label': a label uses"),
])
def test_bad_config_declarations_are_errors(machine, text, message):
    machine.config.write_text(text)
    with pytest.raises(DiscoveryError, match=message):
        machine.discover(automatic=False)


@pytest.mark.parametrize("text", ['[interpreters]\ndev = 3\n', '[interpreters]\ndev = /opt/a\n'])
def test_the_fallback_toml_parser_names_the_bad_line(machine, text, monkeypatch):
    monkeypatch.setitem(sys.modules, "tomllib", None)
    machine.config.write_text(text)
    with pytest.raises(DiscoveryError, match=r'iomatrix\.toml:2: expected label = "/path"'):
        machine.discover(automatic=False)


def test_an_interpreters_key_that_is_not_a_table_is_an_error(machine):
    machine.config.write_text('interpreters = "/opt/python"\n')
    with pytest.raises(DiscoveryError, match=r"\[interpreters\] must be a table"):
        machine.discover(automatic=False)


@pytest.mark.parametrize("answer", ["3.12", "{}"])
def test_a_candidate_printing_json_that_is_not_a_probe_answer_is_skipped(machine, answer):
    odd = machine.bin / "python3.12"
    odd.write_text(f"#!/bin/sh\necho '{answer}'\n")
    odd.chmod(0o755)
    fake_python(machine.bin / "python3.13", "3.13.1")
    assert [i.label for i in machine.discover()] == ["3.13"]
    assert str(odd) in machine.warnings[0]


# -- labels, order, selection --------------------------------------------------------

@pytest.mark.parametrize("answer, label", [
    (probe_answer("3.13.1"), "3.13"),
    (probe_answer("3.13.1", debug=True), "3.13d"),
    (probe_answer("3.13.1", free_threaded=True), "3.13t"),
    (probe_answer("3.13.1", free_threaded=True, debug=True), "3.13td"),
    (probe_answer("2.7.18", debug=True), "2.7d"),
    (probe_answer("3.10.14", implementation="pypy"), "pypy3.10"),
    (probe_answer("3.10.14", implementation="pypy", debug=True), "pypy3.10"),
    (probe_answer("3.11.7", implementation="graalpy"), "graalpy3.11"),
])
def test_natural_label(answer, label):
    assert discovery.natural_label(answer) == label


def test_a_debug_build_is_found_with_a_d_suffix(machine):
    machine.pyenv_python("3.13.1", "3.13.1")
    machine.pyenv_python("3.13.1-debug", "3.13.1", debug=True)
    assert sorted(machine.labels()) == ["3.13", "3.13d"]


def interp(label: str, version: str, **answer) -> Interpreter:
    return Interpreter(label, f"/fake/{label}/python", "path", probe_answer(version, **answer))


def test_sort_key_orders_by_implementation_version_then_free_threading():
    ordered = [interp("2.7", "2.7.18"), interp("3.6", "3.6.15"), interp("3.13", "3.13.1"),
               interp("3.13t", "3.13.1", free_threaded=True),
               interp("pypy3.9", "3.9.19", implementation="pypy"),
               interp("pypy3.10", "3.10.14", implementation="pypy")]
    shuffled = [ordered[i] for i in (4, 3, 5, 1, 2, 0)]
    assert [i.label for i in sorted(shuffled, key=discovery.sort_key)] == [
        "2.7", "3.6", "3.13", "3.13t", "pypy3.9", "pypy3.10"]


def test_select_returns_the_named_interpreters_in_the_order_asked():
    found = [interp("3.12", "3.12.4"), interp("3.13", "3.13.1"), interp("3.13t", "3.13.1")]
    assert [i.label for i in discovery.select(found, ["3.13t", "3.12"])] == ["3.13t", "3.12"]


def test_select_with_an_unknown_label_lists_the_valid_ones():
    found = [interp("3.12", "3.12.4"), interp("3.13", "3.13.1")]
    with pytest.raises(DiscoveryError, match=r"unknown interpreter label\(s\) 3\.11, pypy; "
                                             r"valid labels: 3\.12, 3\.13$"):
        discovery.select(found, ["3.12", "3.11", "pypy"])


# -- build facts and recipes (issue 25) ------------------------------------------------

PYENV_3_13 = {  # what sysconfig says in pyenv's 3.13.0 on this machine
    "CONFIG_ARGS": "'--prefix=/root/.pyenv/versions/3.13.0' '--enable-shared' "
                   "'--libdir=/root/.pyenv/versions/3.13.0/lib' "
                   "'LDFLAGS=-L/root/.pyenv/versions/3.13.0/lib -Wl,-rpath,/root/.pyenv/versions/"
                   "3.13.0/lib'",
    "OPT": "-DNDEBUG -g -O3 -Wall",
    "CFLAGS": "-fno-strict-overflow -Wsign-compare -DNDEBUG -g -O3 -Wall",
    "PY_CFLAGS_NODIST": "-std=c11 -Wextra -fvisibility=hidden  -I./Include/internal",
    "CONFIGURE_CFLAGS_NODIST": "-std=c11 -Wextra -fvisibility=hidden",
    "Py_ENABLE_SHARED": 1, "Py_JIT": None,
}


def facts(source="pyenv", implementation="cpython", **raw):
    answer = probe_answer("3.13.0", implementation=implementation,
                          sysconfig={**PYENV_3_13, **raw})
    return discovery.build_facts(answer, source)


@pytest.mark.parametrize("source, raw, recipe, flags", [
    ("pyenv", {}, "shared-O3", dict(pgo=False, frame_pointers=False, jit=False)),
    ("provisioned", {"Py_ENABLE_SHARED": 0, "CONFIG_ARGS": "'--prefix=/p'"}, "static-O3", {}),
    ("provisioned", {"Py_ENABLE_SHARED": 0,
                     "CONFIG_ARGS": "'--prefix=/p' '--enable-optimizations' '--with-lto'"},
     "static-O3-pgo-lto", dict(pgo=True)),
    # 3.15's configure puts frame pointers into BASECFLAGS, so into CFLAGS
    ("provisioned", {"CFLAGS": "-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer "
                               "-fno-strict-overflow -DNDEBUG -g -O3 -Wall"},
     "shared-O3-fp", dict(frame_pointers=True)),
    ("provisioned", {"CONFIGURE_CFLAGS_NODIST": "-std=c11 -D_Py_JIT -D_Py_TIER2=1"},
     "shared-O3-jit", dict(jit=True)),
    ("provisioned", {"CONFIG_ARGS": "'--enable-shared' '--enable-experimental-jit=no'"},
     "shared-O3", dict(jit=False)),
    # the last -O is the one the compiler keeps (Python 2.7: "-g -O2 ... -O3")
    ("pyenv", {"CFLAGS": "-fno-strict-aliasing -g -O2 -DNDEBUG -g -fwrapv -O3 -Wall"},
     "shared-O3", {}),
    ("pyenv", {"CFLAGS": "-g -Wall", "OPT": "-g -Wall"}, "shared-O0", {}),
    # a distribution's scripts may apply PGO and LTO outside configure: not read as absent
    ("debian", {"OPT": "-DNDEBUG -g -fwrapv -O2 -Wall", "CFLAGS": "-DNDEBUG -g -fwrapv -O2"},
     "debian-O2", dict(pgo=None)),
])
def test_build_facts_name_the_recipe(source, raw, recipe, flags):
    found = facts(source, **raw)
    assert found["recipe"] == recipe
    assert {key: found[key] for key in flags} == flags
    assert set(found) == set(discovery.BUILD_FACT_KEYS)


@pytest.mark.parametrize("implementation, raw", [
    ("pypy", {"CONFIG_ARGS": None, "OPT": "-DNDEBUG -O2"}),  # what PyPy 7.3's sysconfig says
    ("cpython", {"CONFIG_ARGS": None, "OPT": None, "CFLAGS": None}),  # no build variables
])
def test_unreadable_build_facts_are_null_not_guessed(implementation, raw):
    assert facts(implementation=implementation, **raw) == dict.fromkeys(discovery.BUILD_FACT_KEYS)


def test_an_answer_without_build_variables_has_null_facts(machine):
    machine.pyenv_python("3.12.1", "3.12.1")  # a probe answer of an older iomatrix
    (found,) = machine.discover()
    assert found.recipe is None
    assert {key: found.as_manifest()[key] for key in discovery.BUILD_FACT_KEYS} == \
        dict.fromkeys(discovery.BUILD_FACT_KEYS)


def test_build_facts_are_in_the_manifest_entry(machine):
    machine.pyenv_python("3.13.0", "3.13.0", sysconfig=PYENV_3_13)
    (found,) = machine.discover()
    entry = found.as_manifest()
    assert entry["recipe"] == "shared-O3"
    assert entry["opt"] == "-DNDEBUG -g -O3 -Wall"
    assert entry["cflags"] == PYENV_3_13["CFLAGS"]
    assert (entry["pgo"], entry["frame_pointers"], entry["jit"]) == (False, False, False)
    assert entry["sysconfig"]["CONFIG_ARGS"] == PYENV_3_13["CONFIG_ARGS"]  # the evidence
    json.dumps(entry)


def test_builds_of_another_recipe_than_the_lineages_say_which(machine):
    machine.pyenv_python("3.13.0", "3.13.0")
    machine.provisioned("3.13.15", "3.13.15", recipe="lineage")
    machine.provisioned("3.13.15-pgo", "3.13.15", recipe="release")
    machine.provisioned("3.13.15-static", "3.13.15", recipe="static")
    machine.provisioned("3.14.7-pgo", "3.14.7", recipe="release")
    found = machine.labels()
    assert sorted(found) == ["3.13", "3.13.15", "3.13.15-pgo", "3.13.15-static", "3.14.7-pgo"]
    assert found["3.13.15-pgo"].executable.endswith("pythons/3.13.15-pgo/bin/python3")


def test_a_build_from_before_recipes_keeps_its_plain_label(machine):
    machine.provisioned("3.14.7", "3.14.7")  # no recipe in its build info: static then
    assert sorted(machine.labels()) == ["3.14"]


def test_real_interpreters_build_facts(machine_interpreters):
    """The interpreters of this machine, probed for real: pyenv's are shared -O3 builds."""
    pyenv = [i for i in machine_interpreters.values() if i.source == "pyenv" and i.ok
             and i.implementation == "cpython"]
    if not pyenv:
        pytest.skip("no pyenv CPython on this machine")
    for interp in pyenv:
        assert interp.info["shared"] is True and interp.recipe == "shared-O3", interp.label
        assert "-O3" in interp.info["opt"]
    for interp in machine_interpreters.values():
        if interp.implementation == "pypy":
            assert interp.recipe is None and interp.info["pgo"] is None
        if interp.source == "debian" and interp.implementation == "cpython":
            assert interp.recipe.startswith("debian-O")
            # Debian's sysconfig says shared; its binary links no libpython
            assert interp.info["linkage"] == "static" and interp.info["shared"] is False
            assert discovery.linkage_text(interp.info) == "static"


def test_linkage_unknown_is_said_and_sysconfig_alone_is_named():
    assert discovery.linkage_text({}) == "unknown"
    assert discovery.linkage_text({"shared": True}) == "shared (sysconfig's word)"
    assert discovery.linkage_text({"linkage": "static", "shared": False}) == "static"
    raw = {**PYENV_3_13}
    answer = probe_answer("3.13.0", sysconfig=raw, linkage=None)
    assert discovery.build_facts(answer, "pyenv")["recipe"] == "unknown-O3"


def test_probes_are_cached_by_binary_and_a_changed_binary_is_probed_again(tmp_path, monkeypatch):
    monkeypatch.setenv(discovery.PROBE_CACHE_ENV, str(tmp_path / "cache" / "probes.json"))
    calls = tmp_path / "calls"
    wrapper = tmp_path / "python-wrapped"
    wrapper.write_text(f"#!/bin/sh\necho probe >> {calls}\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    first = discovery.probe_all([str(wrapper)])[str(wrapper)]
    again = discovery.probe_all([str(wrapper)])[str(wrapper)]
    assert first == again and first["implementation"] == "cpython"
    assert calls.read_text().count("probe") == 1          # the second answer came from the cache
    wrapper.write_text(wrapper.read_text() + "# changed\n")  # a rebuilt binary: probed again
    discovery.probe_all([str(wrapper)])
    assert calls.read_text().count("probe") == 2
    (tmp_path / "cache" / "probes.json").write_text("{not json")  # damaged: ignored
    assert discovery.probe_all([str(wrapper)])[str(wrapper)]["implementation"] == "cpython"


def test_discovery_s_own_command_refuses_a_bad_cache_in_one_line(tmp_path):
    """`python -m iomatrix.interpreters.discovery` (release's advice) maps a DiscoveryError
    to exit 2 and one line, as every tool does (cli.main_guard), never a traceback."""
    cache = tmp_path / "cache"
    cache.write_text("a file, not a directory")
    env = {**os.environ, "IOMATRIX_CACHE": str(cache), "PYTHONPATH": str(ROOT / "scripts")}
    proc = subprocess.run([sys.executable, "-m", "iomatrix.interpreters.discovery"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: IOMATRIX_CACHE") and "Traceback" not in proc.stderr
