"""Issue 40's interpreter-report, config-file and generated-file families: what an
interpreter says about itself, iomatrix.toml and IOMATRIX_PYTHONS, and the files
``nox -s upstream`` writes are untrusted input.

A hostile "interpreter" is a small ``#!/bin/sh`` script that answers the probe with a line
of its own: real input to the real probe code (discovery runs it as it runs any Python).
The nox tests run ``python -m nox -l`` for real, with the probe cache in tmp_path.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import ROOT, need
from iomatrix import cli, stats
from iomatrix.commands import reproducer, upstream
from iomatrix.interpreters import discovery, newest, probing
from iomatrix.interpreters.discovery import DiscoveryError

QUIET = dict(log=lambda *a: None)
ESC, RLO = "\x1b", "\u202e"


def good_answer(version="3.99.1", **overrides) -> dict:
    parts = re.match(r"([0-9]+)\.([0-9]+)\.([0-9]+)", version)
    answer = {"version": version,
              "version_info": [int(p) for p in parts.groups()] if parts else [3, 13, 0],
              "implementation": "cpython", "executable": "", "sys_version": f"{version} (main)",
              "free_threaded": False, "gil_enabled": True, "debug": False, "linkage": "static",
              "shared": False, "configure_args": "'--prefix=/x'", "optimized": False,
              "lto": False, "compiler": "GCC 12.2.0",
              "sysconfig": {"CONFIG_ARGS": "'--prefix=/x'", "OPT": "-O3", "Py_ENABLE_SHARED": 0}}
    answer.update(overrides)
    return answer


def sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def hostile_python(path: Path, line: str | None = None, *, stderr: str = "",
                   status: int = 0, raw: str | None = None) -> Path:
    """An executable that answers ``EXE -c PROBE`` with ``line`` (or the shell code ``raw``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = raw if raw is not None else f"printf '%s\\n' {sh_quote(line)}"
    err = f"printf '%s\\n' {sh_quote(stderr)} >&2\n" if stderr else ""
    path.write_text(f"#!/bin/sh\n{body}\n{err}exit {status}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def probe_cache(tmp_path, monkeypatch):
    path = tmp_path / "probes.json"
    monkeypatch.setenv(probing.PROBE_CACHE_ENV, str(path))
    return path


def declared(tmp_path, executable: Path, label="x"):
    """discover() of one declared interpreter, no automatic sources: (interpreters, warnings)."""
    warnings: list[str] = []
    found = discovery.discover(config_file=tmp_path / "absent.toml",
                               environ={"IOMATRIX_PYTHONS": f"{label}={executable}"},
                               automatic=False, warn=warnings.append)
    return found, warnings


# -- the probe's answer --------------------------------------------------------------------

HOSTILE_ANSWERS = {
    "a string version_info": good_answer(version_info="3.13.0"),
    "version_info of strings": good_answer(version_info=["3", "13", "0"]),
    "a boolean in version_info": good_answer(version_info=[True, 13, 0]),
    "a minor of 3000": good_answer("3.3000.0"),
    "a major of 4": good_answer("4.0.0"),
    "a 2**70 micro": good_answer(version="3.13.0", version_info=[3, 13, 2 ** 70]),
    "markup in the version": good_answer(version="3.99.1<script>alert(1)</script>"),
    "a version that is not version_info's": good_answer(version="3.12.0",
                                                        version_info=[3, 13, 0]),
    "a two-part version": good_answer(version="3.13", version_info=[3, 13, 0]),
    "Arabic-Indic digits": good_answer(version="٣.١٣.٠", version_info=[3, 13, 0]),
    "an implementation with a slash": good_answer(implementation="../py"),
    "an ANSI escape in sys_version": good_answer(sys_version="3.99.1 \x1b[31mred"),
    "a bidi override in the compiler": good_answer(compiler="GCC \u202e21.2.1"),
    "a NUL in the executable": good_answer(executable="/usr/bin/python\x00"),
    "a 100 kB configure_args": good_answer(configure_args="x" * 100_000),
    "free_threaded as a string": good_answer(free_threaded="yes"),
    "an unknown key": good_answer(evil="<img src=x onerror=alert(1)>"),
    "a sysconfig list": good_answer(sysconfig={"OPT": ["-O3"]}),
}


@pytest.mark.parametrize("answer", HOSTILE_ANSWERS.values(), ids=HOSTILE_ANSWERS.keys())
def test_a_bad_probe_answer_makes_the_interpreter_unusable_with_one_line(
        tmp_path, probe_cache, answer):
    exe = hostile_python(tmp_path / "bin" / "python3", json.dumps(answer))
    (interp,), warnings = declared(tmp_path, exe)
    assert not interp.ok and "is not what a Python reports" in interp.error
    assert interp.info == {} and interp.version_info == (0, 0, 0)
    assert len(warnings) == 1 and cli.one_line(warnings[0]) == warnings[0]
    assert "<script>" not in warnings[0] or "version" in warnings[0]  # quoted, never raw HTML
    assert not probe_cache.exists() or str(exe) not in probe_cache.read_text()


@pytest.mark.parametrize("title, raw", [
    ("invalid UTF-8", r"printf 'abc\377\376\n'"),
    ("JSON nested 100,000 deep", "i=0; while [ $i -lt 100000 ]; do printf '['; i=$((i+1)); "
                                 "done; printf '\\n'"),
    ("a 300 kB answer line", "i=0; while [ $i -lt 3000 ]; do printf '%0100d' 0; i=$((i+1)); "
                             "done; printf '\\n'"),
])
def test_an_answer_that_is_not_json_a_probe_prints_is_refused(tmp_path, probe_cache, title, raw):
    exe = hostile_python(tmp_path / "bin" / "python3", raw=raw)
    (interp,), warnings = declared(tmp_path, exe)
    assert not interp.ok and "unexpected probe output" in interp.error, title
    assert len(warnings) == 1


def test_what_a_failing_interpreter_prints_is_one_escaped_line(tmp_path, probe_cache):
    exe = hostile_python(tmp_path / "bin" / "python3", raw="true",
                         stderr=f"{ESC}[2J{ESC}]0;owned\a{RLO}evil\rline", status=1)
    (interp,), warnings = declared(tmp_path, exe)
    for text in (interp.error, warnings[0]):
        assert ESC not in text and RLO not in text and "\r" not in text and "\a" not in text
        assert "\\x1b" in text and "\\u202e" in text


def test_real_interpreters_answers_pass_the_check(machine_interpreters, probe_cache):
    answers = probing.probe_all([i.executable for i in machine_interpreters.values()])
    for executable, info in answers.items():
        assert not isinstance(info, RuntimeError), info
        assert probing.answer_problem(info) is None, (executable, probing.answer_problem(info))


def test_a_probe_cache_entry_that_is_no_valid_answer_is_asked_again(
        machine_interpreters, probe_cache):
    interp = next(iter(machine_interpreters.values()))
    key = probing._binary_key(interp.executable)
    probe_cache.write_text(json.dumps({key: good_answer(version_info="3.13.0",
                                                        executable=interp.executable)}))
    info = probing.probe_all([interp.executable])[interp.executable]
    assert info["version"] == interp.version and probing.answer_problem(info) is None
    assert json.loads(probe_cache.read_text())[key]["version_info"] == list(interp.version_info)


@pytest.mark.parametrize("kind", ["fifo", "deep", "huge", "directory"])
def test_a_probe_cache_that_is_no_cache_is_ignored_without_blocking(
        machine_interpreters, probe_cache, kind):
    if kind == "fifo":
        os.mkfifo(probe_cache)
    elif kind == "deep":
        probe_cache.write_text("[" * 200_000)
    elif kind == "huge":
        with open(probe_cache, "wb") as f:
            f.truncate(probing.MAX_CACHE_BYTES + 1)
    else:
        probe_cache.mkdir()
    interp = next(iter(machine_interpreters.values()))
    done = {}
    worker = threading.Thread(target=lambda: done.update(
        probing.probe_all([interp.executable])), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "reading the probe cache blocked"
    assert done[interp.executable]["version"] == interp.version


# -- nox -l with a hostile interpreter --------------------------------------------------------

def nox_list(tmp_path, env_extra: dict, cwd=ROOT):
    env = {**os.environ, "IOMATRIX_PROBE_CACHE": str(tmp_path / "probes.json"), **env_extra}
    return subprocess.run([sys.executable, "-m", "nox", "--noxfile", str(cwd / "noxfile.py"),
                           "-l", "--envdir", str(tmp_path / "envs")], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_nox_lists_its_sessions_when_a_found_interpreter_reports_a_string_version_info(
        tmp_path, machine_interpreters):
    # Before: the session list sorted by version_info and every nox command failed (exit 1).
    bin_dir = tmp_path / "bin"
    hostile_python(bin_dir / "python3.99", json.dumps(good_answer(version_info="3.99.1")))
    hostile_python(bin_dir / "python3.98", json.dumps(good_answer(
        version="3.98.0<b>x</b>", version_info=[3, 98, 0])))
    proc = nox_list(tmp_path, {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "python3.9" in line]
    assert len(warnings) == 2 and all("is not what a Python reports" in w for w in warnings)
    label = next(iter(machine_interpreters))
    assert f"bench-{label}" in proc.stdout and "bench-3.99" not in proc.stdout


def test_nox_lists_a_declared_interpreter_with_a_bad_answer_as_unusable_on_one_line(tmp_path):
    exe = hostile_python(tmp_path / "bin" / "python3",
                         json.dumps(good_answer(version="3.99.1\x1b[31m\u202e")))
    proc = nox_list(tmp_path, {"IOMATRIX_PYTHONS": f"hostile={exe}"})
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if "bench-hostile" in line)
    assert "unusable" in line and ESC not in proc.stdout + proc.stderr
    assert RLO not in proc.stdout + proc.stderr


# -- iomatrix.toml and IOMATRIX_PYTHONS ------------------------------------------------------

def test_a_fifo_config_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "iomatrix.toml"
    os.mkfifo(fifo)
    outcome = {}

    def read():
        try:
            discovery.parse_config_declarations(fifo)
        except DiscoveryError as exc:
            outcome["error"] = str(exc)
    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "a FIFO config blocked discovery"
    assert "not a regular file" in outcome["error"]


@pytest.mark.parametrize("text, says", [
    ("x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested more than"),
    ("[interpreters]\n" + "".join(f'l{n} = "/x"\n' for n in range(discovery.MAX_DECLARED + 1)),
     "at most"),
    ("[interpreters]\n" + "x" * (discovery.MAX_CONFIG_BYTES + 1), "bytes"),
    ('[interpreters]\nx = "/usr/bin/python3\\u001b[31m"\n', "control character"),
    ('[interpreters]\nx = ""\n', "not a path"),
])
def test_a_config_beyond_its_bounds_is_a_discovery_error(tmp_path, text, says):
    config = tmp_path / "iomatrix.toml"
    config.write_text(text)
    with pytest.raises(DiscoveryError, match=says):
        discovery.parse_config_declarations(config)


@pytest.mark.parametrize("value, says", [
    (";".join(f"l{n}=/x" for n in range(100_000)), "characters; at most"),
    (";".join(f"l{n}=/x" for n in range(discovery.MAX_DECLARED + 1)), "more than"),
    (";".join([f"l{n}=/x" for n in range(discovery.MAX_DECLARED - 1)] + ["l7=/y"]),
     "'l7' is declared twice"),
    ("x=/usr/bin/python3\x1b[31m", "control character"),
    ("\u202eevil=/x", "label"),
])
def test_iomatrix_pythons_beyond_its_bounds_is_a_discovery_error(tmp_path, value, says):
    with pytest.raises(DiscoveryError, match=re.escape(says)) as raised:
        discovery.discover(config_file=tmp_path / "absent.toml",
                           environ={"IOMATRIX_PYTHONS": value}, automatic=False)
    assert cli.one_line(str(raised.value)) == str(raised.value)
    assert ESC not in str(raised.value) and RLO not in str(raised.value)


def test_the_duplicate_check_is_linear_in_the_declarations(tmp_path):
    # 256 labels, the last a duplicate of the first: one Counter pass names it (a
    # labels.count per label made 100,000 labels hang).
    pairs = [(f"l{n}", "/x") for n in range(discovery.MAX_DECLARED - 1)] + [("l0", "/y")]
    value = ";".join(f"{label}={path}" for label, path in pairs)
    with pytest.raises(DiscoveryError, match="'l0' is declared twice"):
        discovery.discover(config_file=tmp_path / "absent.toml",
                           environ={"IOMATRIX_PYTHONS": value}, automatic=False)


def clone_with_config(tmp_path, write) -> Path:
    """A copy of the project whose iomatrix.toml ``write(path)`` makes (discovery reads the
    file beside the package it runs from)."""
    clone = tmp_path / "clone"
    for tree in ("scripts", "suites"):
        shutil.copytree(ROOT / tree, clone / tree, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("noxfile.py", "pyproject.toml"):
        shutil.copy(ROOT / name, clone / name)
    write(clone / "iomatrix.toml")
    return clone


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_nox_l_with_a_fifo_or_deeply_nested_config_is_exit_2_with_one_line(tmp_path, kind):
    def write(path):
        if kind == "fifo":
            os.mkfifo(path)
        else:
            path.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    clone = clone_with_config(tmp_path, write)
    proc = nox_list(tmp_path, {}, cwd=clone)
    assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "iomatrix.toml" in errors[0] and "Traceback" not in proc.stderr


# -- provision --list ------------------------------------------------------------------------

def test_the_newest_plan_asks_about_a_bounded_number_of_minor_versions(tmp_path, monkeypatch):
    # 3.6 and a (valid, if unlikely) 3.99 on the machine: 16 minor versions asked about, the
    # newest, not the 96 between them (a 3.3000 is refused by the probe before this).
    asked = []
    real = newest.offers_in_apt
    monkeypatch.setattr(newest, "offers_in_apt", lambda series: asked.append(series) or
                        real(series))
    interpreters = [discovery.Interpreter(f"3.{m}", "/x", "pyenv", good_answer(f"3.{m}.0"))
                    for m in (6, 99)]
    steps, notes = newest.plan(interpreters, tmp_path / "tarballs", online=False)
    assert len(asked) == newest.MAX_PLANNED_MINORS and asked[-1] == "3.101"
    assert any("newest 16 minor versions only" in note for note in notes)


# -- upstream: ISSUE.md, the reproducer, --out-dir ---------------------------------------------

MARKUP = "<script>alert(1)</script>\n# injected\n\x1b[31mevil\u202e `tick` | cell"


def rendered(text: str) -> str:
    from markdown_it import MarkdownIt
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(text)


def hostile_finding() -> dict:
    class RunStub:   # the run's id is all issue_text reads of a store.Run
        run_id = "20260101T000000Z-a"
    comparison = stats.compare(dict(enumerate([1.0, 1.01, 0.99, 1.02, 1.0, 1.01])),
                               dict(enumerate([1.2, 1.21, 1.19, 1.22, 1.2, 1.21])))
    entry = {"version": "3.13.15", "source": MARKUP, "recipe": MARKUP, "compiler": MARKUP,
             "configure_args": "'--prefix=/x' \"--with-lto CFLAGS='-O3", "opt": MARKUP,
             "sys_version": MARKUP}
    return {"run": RunStub(), "manifest": {"host": MARKUP, "cpu": MARKUP, "os": MARKUP,
                                           "interpreters": {"3.13": entry, "3.14": entry}},
            "old": "3.13", "new": "3.14", "comparison": comparison,
            "counts": {"3.13": {f"syscall:{MARKUP}": 1.0, "syscalls": float("nan")},
                       "3.14": {f"syscall:{MARKUP}": 2.0, "syscalls": 3.0}}}


def test_issue_md_escapes_the_manifest_counters_and_output_strings():
    text = upstream.issue_text("read_byLines_textMode", "lutz2009", "3.13.15", "3.14.7",
                               hostile_finding(), "repro_x.py",
                               f"round 1\n```\n# injected\n{ESC}[2Jowned{RLO}\n", ["- none"])
    html = rendered(text)
    assert "<script>" not in html and not re.search(r"<h[1-6]>\s*injected", html)
    assert ESC not in text and RLO not in text
    # the output's "# injected" stays a line of the fenced block, not a heading
    headings = re.findall(r"<h[1-6]>(.*?)</h", html)
    assert headings[0].startswith("Reading a text file by lines is 1.20x slower since 3.14.7")
    assert headings[1:] == ["Builds", "Machine", "Reproducer", "Candidate upstream changes"]
    assert " nan" not in text.lower()


def test_a_reproducer_is_refused_when_a_target_interpreter_cannot_compile_it(tmp_path):
    rejecting = hostile_python(tmp_path / "python", raw="cat >/dev/null",
                               stderr="SyntaxError: Non-ASCII character", status=1)
    with pytest.raises(reproducer.ReproducerError, match="SyntaxError: Non-ASCII"):
        reproducer.checked_reproducer("chunks_read_64KiB", "3.13.15", "3.14.7",
                                      [sys.executable, str(rejecting)])


def test_the_reproducer_compiles_under_2_7_and_3_x(machine_interpreters):
    pythons = [need(machine_interpreters, "2.7").executable, sys.executable]
    source = reproducer.checked_reproducer("chunks_read_64KiB", "3.13.15", "3.14.7", pythons)
    assert source.isascii() and "READ_SIZE = 65536" in source


@pytest.mark.parametrize("op, vetted", [("chunks_read_٦٤KiB", False), ("chunks_read_６４KiB", False),
                                        ("chunks_read_064KiB", True),
                                        ("chunks_read_99999999MiB", True),
                                        ("read_byLines_textMode\n", False)])
def test_an_op_that_is_no_vetted_name_gets_no_reproducer(tmp_path, capsys, op, vetted,
                                                         no_changelog_download):
    assert reproducer.template_for(op) is None
    with pytest.raises(ValueError):
        reproducer.reproducer(op, "3.13.15", "3.14.7")
    status = upstream.main([op, "--between", "3.13.15", "3.14.7", "--results-dir",
                            str(tmp_path / "results"), "--out-dir", str(tmp_path / "u")],
                           **QUIET)
    # a valid op name without a template that no run holds leaves nothing to write (with a
    # run, the issue says "No reproducer" in one line: test_upstream_repro); an unvetted one
    # is refused as a name
    assert status == cli.EXIT_BAD_INPUT and not (tmp_path / "u").exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
    assert ("nothing to write" in err[0]) == vetted


def upstream_args(out_dir, results_dir, *extra):
    return ["chunks_read_64KiB", "--between", "3.13.15", "3.14.7", "--results-dir",
            str(results_dir), "--out-dir", str(out_dir), *extra]


@pytest.mark.parametrize("where", ["run directory", "results store", "under a file",
                                   "dangling link", "read-only file system"])
def test_upstream_out_dir_is_refused_with_one_line_and_nothing_left(tmp_path, capsys, where):
    results = tmp_path / "results"
    run_dir = results / "R"
    run_dir.mkdir(parents=True)
    (run_dir / "manifest.json").write_text("{}")
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    out_dir = {"run directory": run_dir / "upstream", "results store": results / "u",
               "under a file": tmp_path / "file" / "u", "dangling link": tmp_path / "link",
               "read-only file system": Path("/proc/iomatrix-upstream/u")}[where]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    status = upstream.main(upstream_args(out_dir, results), **QUIET)
    err = capsys.readouterr().err.strip().splitlines()
    assert status == cli.EXIT_BAD_INPUT, err
    assert len(err) == 1 and err[0].startswith("error: --out-dir")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_upstream_writes_its_directory_whole_and_leaves_no_staging(tmp_path, capsys,
                                                                    no_changelog_download):
    out_dir = tmp_path / "deep" / "er" / "u"
    status = upstream.main(upstream_args(out_dir, tmp_path / "results"), **QUIET)
    assert status == 0, capsys.readouterr().err
    assert sorted(p.name for p in out_dir.iterdir()) == ["ISSUE.md", "repro_chunks_read_64KiB.py"]
    assert [p.name for p in out_dir.parent.iterdir()] == ["u"]
    assert "python repro_chunks_read_64KiB.py OLD_PYTHON" in (
        out_dir / "repro_chunks_read_64KiB.py").read_text()


def test_a_run_repro_interpreter_that_fails_is_exit_2_and_writes_nothing(tmp_path, capsys):
    failing = hostile_python(tmp_path / "bin" / "python", raw="cat >/dev/null",
                             stderr="boom", status=1)
    # a named interpreter that does not run as Python is bad input (issue 56), refused
    # before the reproducer is compiled or run (tests/test_hostile_cache.py: /bin/false)
    status = upstream.main(upstream_args(tmp_path / "u", tmp_path / "results", "--run-repro",
                                         str(failing), sys.executable, "--repeat", "1"), **QUIET)
    err = capsys.readouterr().err.strip().splitlines()
    assert status == cli.EXIT_BAD_INPUT and len(err) == 1 and "boom" in err[0]
    assert not (tmp_path / "u").exists()
