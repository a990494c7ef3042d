"""Issue 56, families 2 and 6: the iomatrix cache read as hostile input, and the cases still
bad from before (changelog's versions, provision's leftovers, upstream's --run-repro, a file
as --results-dir). Real files in tmp_path: FIFOs, links to /dev/zero, sparse files."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iomatrix import cli
from iomatrix.analysing import news
from iomatrix.interpreters import cache, discovery, probing, sources
from iomatrix.measuring import countcache
from iomatrix.paths import REPO_ROOT

SCRIPTS = REPO_ROOT / "scripts"


def _sparse(path: Path) -> None:
    with open(path, "wb") as f:
        f.truncate(2 << 30)


HOSTILE = {
    "fifo": os.mkfifo,
    "dev-zero": lambda path: path.symlink_to("/dev/zero"),
    "loop": lambda path: path.symlink_to(path.name),
    "deep": lambda path: path.write_text("[" * 100_000 + "]" * 100_000),
    "sparse-2GiB": _sparse,
    "directory": lambda path: path.mkdir(),
    "not-json": lambda path: path.write_bytes(b"\xff{"),
}


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def build_file(root: Path, version: str) -> Path:
    path = root / "pythons" / version / cache.BUILD_INFO
    path.parent.mkdir(parents=True)
    return path


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_cache_file_that_is_not_ours_is_refused_quickly_naming_its_place(root, kind):
    path = build_file(root, "3.13.0")
    HOSTILE[kind](path)
    started = time.monotonic()
    with pytest.raises(cache.BadCacheEntry) as caught:
        cache.read_json(path)
    assert time.monotonic() - started < 5     # a FIFO is not waited on, /dev/zero not read
    message = str(caught.value)
    assert message.startswith("pythons/3.13.0/iomatrix-build.json: ")
    assert str(root) not in message and "\n" not in message
    assert isinstance(caught.value, cli.BadInput)   # a command that needs it: exit 2


def test_an_absent_cache_file_is_none(root):
    assert cache.read_json(root / "nothing.json") is None
    assert cache.read_bytes(root / "pythons" / "x" / "y") is None


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_one_bad_build_is_skipped_with_one_line_the_others_listed(root, kind):
    good = build_file(root, "3.13.1")
    good.write_text('{"version": "3.13.1", "recipe": "lineage"}')
    HOSTILE[kind](build_file(root, "3.13.0"))
    lines = []
    builds = cache.list_builds(warn=lines.append)
    assert [b["version"] for b in builds] == ["3.13.1"]
    assert len(lines) == 1 and "pythons/3.13.0/iomatrix-build.json" in lines[0]
    assert str(root) not in lines[0]


def test_discovery_lists_the_cache_once_and_says_a_bad_build_once(root):
    HOSTILE["fifo"](build_file(root, "3.13.0"))
    lines = []
    assert discovery.provisioned_builds(warn=lines.append) == []
    assert len(lines) == 1


@pytest.mark.parametrize("kind", ["loop", "file", "under-a-file", "dev-null"])
def test_a_cache_root_that_is_no_directory_is_one_clear_error(tmp_path, monkeypatch, kind):
    where = tmp_path / "root"
    if kind == "loop":
        where.symlink_to("root")
    elif kind == "file":
        where.write_text("x")
    elif kind == "dev-null":
        where.symlink_to("/dev/null")
    else:
        (tmp_path / "f").write_text("x")
        where = tmp_path / "f" / "root"
    monkeypatch.setenv("IOMATRIX_CACHE", str(where))
    with pytest.raises(cache.BadCache, match=r"^IOMATRIX_CACHE .*: (a symbolic link loop|not a "
                                             r"directory|lies under a file); give a directory"):
        cache.cache_root()
    with pytest.raises(discovery.DiscoveryError):
        discovery.provisioned_builds()
    assert news.cached_tarballs() == {}      # the report reads changelogs only: it goes on


def test_a_missing_cache_root_is_fine_and_made_later(tmp_path, monkeypatch):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "not-yet"))
    assert cache.cache_root() == tmp_path / "not-yet"
    assert cache.list_builds() == []
    assert not (tmp_path / "not-yet").exists()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep", "not-json"])
def test_a_bad_counts_entry_is_named_and_counted_again(tmp_path, kind):
    lines = []
    counts = countcache.CountsCache(tmp_path / "counts", log=lines.append)
    key = {"interpreter": {"binary": "0123456789abcdef0123"}, "counter": "syscalls"}
    path = counts.path(key)
    path.parent.mkdir(parents=True)
    HOSTILE[kind](path)
    assert counts.get(key) is None
    assert len(lines) == 1 and f"{path.parent.name}/{path.name} is damaged" in lines[0]


def test_a_counts_directory_that_is_a_file_turns_the_counts_cache_off(root):
    root.mkdir()
    (root / "counts").write_text("x")
    lines = []
    counts = countcache.CountsCache(log=lines.append)
    key = {"interpreter": {"binary": "0123456789abcdef"}, "counter": "syscalls"}
    assert counts.get(key) is None
    counts.put(key, {"syscalls": {}}, None)
    assert len(lines) == 1 and "not used" in lines[0]
    assert (root / "counts").read_text() == "x"


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep"])
def test_a_bad_changelog_cache_is_a_value_error_not_a_hang(tmp_path, kind):
    path = tmp_path / "Python-3.13.0.tar.xz.news.json"
    HOSTILE[kind](path)
    with pytest.raises(ValueError):
        news.read_cache(path)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "deep"])
def test_a_bad_probe_cache_is_ignored(tmp_path, monkeypatch, kind):
    path = tmp_path / "probes.json"
    HOSTILE[kind](path)
    monkeypatch.setenv(probing.PROBE_CACHE_ENV, str(path))
    assert probing._read_probe_cache() == {}


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_bad_debian_dsc_is_refused_naming_it(root, kind):
    tarballs = root / "tarballs"
    tarballs.mkdir(parents=True)
    tarball = tarballs / "python3.99_3.99.1.orig.tar.xz"
    tarball.write_bytes(b"x")
    HOSTILE[kind](tarballs / "python3.99_3.99.1-1.dsc")
    with pytest.raises(sources.UsageError, match=r"^tarballs/python3\.99_3\.99\.1-1\.dsc: "):
        sources.dsc_sha256(tarball)


# -- family 6: still bad from before -------------------------------------------------------

def run(script: str, *args, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / f"{script}.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


def one_error_line(done) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "error: " in lines[-1]
    return lines[-1]


@pytest.mark.parametrize("version", ["3.14.7t", "3.15.0rc2t"])
def test_changelog_of_a_free_threaded_version_is_exit_2_naming_the_release(tmp_path, version):
    done = run("changelog", "--offline", version, env={"IOMATRIX_CACHE": str(tmp_path / "c")})
    assert version[:-1] in one_error_line(done)
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("kind", ["root-file", "tarballs-file", "root-loop"])
def test_changelog_with_a_cache_that_is_no_directory_is_exit_2_fetching_nothing(tmp_path,
                                                                                  kind):
    root = tmp_path / "c"
    if kind == "root-file":
        root.write_text("x")
    elif kind == "root-loop":
        root.symlink_to("c")
    else:
        root.mkdir()
        (root / "tarballs").write_text("x")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    one_error_line(run("changelog", "3.13.0", env={"IOMATRIX_CACHE": str(root)}))
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_provision_refusing_a_downloaded_tarball_leaves_no_directory(tmp_path):
    bogus = tmp_path / "Python-3.99.1.tar.gz"
    bogus.write_text("not a tarball\n")
    root = tmp_path / "cache"
    done = run("provision", "3.99.1", "--url", bogus.as_uri(), env={"IOMATRIX_CACHE": str(root)})
    assert "not a readable source tarball" in one_error_line(done)
    assert not root.exists()


def test_resolve_tarball_keeps_an_existing_tarballs_directory(tmp_path):
    (tmp_path / "tarballs").mkdir()
    bogus = tmp_path / "bogus.tar.gz"
    bogus.write_text("no")
    with pytest.raises(sources.BadTarball):
        sources.resolve_tarball(sources.parse_version("3.99.1"), tmp_path, url=bogus.as_uri(),
                                say=lambda text: None)
    assert list((tmp_path / "tarballs").iterdir()) == []


@pytest.mark.parametrize("python", ["/bin/false", "/bin/true", "/nonexistent/python"])
def test_upstream_run_repro_with_an_interpreter_that_is_no_python_is_exit_2(tmp_path, python):
    done = run("upstream", "read_byLines_textMode", "--between", "3.13.5", "3.14.7",
               "--results-dir", tmp_path / "results", "--out-dir", tmp_path / "u",
               "--run-repro", python, sys.executable, "--repeat", "1",
               env={"IOMATRIX_PROBE_CACHE": str(tmp_path / "probes.json")})
    assert f"--run-repro {python}" in one_error_line(done)
    assert sorted(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["file", "under-a-file", "loop"])
def test_results_dir_that_is_no_directory_is_refused_by_the_argparse_type(tmp_path, kind):
    (tmp_path / "f").write_text("x")
    (tmp_path / "loop").symlink_to("loop")
    text = {"file": "f", "under-a-file": "f/results", "loop": "loop"}[kind]
    with pytest.raises(argparse.ArgumentTypeError, match="give the results store"):
        cli.results_dir(str(tmp_path / text))
    assert cli.results_dir(str(tmp_path)) == tmp_path
    assert cli.results_dir(str(tmp_path / "new")) == tmp_path / "new"


def test_every_tool_checks_results_dir_with_the_one_type():
    """Every ``--results-dir`` option of every tool goes through cli.results_dir."""
    found = []
    for path in [*SCRIPTS.glob("*.py"), *SCRIPTS.glob("iomatrix/**/*.py")]:
        for line in path.read_text().splitlines():
            if re.search(r'add_argument\(\s*"--results-dir"', line):
                found.append((path.name, "type=cli.results_dir" in line))
    assert len(found) >= 10 and all(ok for _, ok in found), found


@pytest.mark.parametrize("tool", ["upstream", "compress", "report", "history"])
def test_a_file_as_results_dir_is_exit_2_with_nothing_written(tmp_path, tool):
    (tmp_path / "results").write_text("not a directory\n")
    args = {"upstream": ["read_byLines_textMode", "--between", "3.13.5", "3.14.7",
                         "--out-dir", "u"],
            "compress": ["20260101T000000Z-a"], "report": ["--out", "o.md", "--no-figures"],
            "history": []}[tool]
    done = run(tool, *args, "--results-dir", "results", cwd=tmp_path)
    assert "results: not a directory" in one_error_line(done)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]
