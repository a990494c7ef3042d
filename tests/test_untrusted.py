"""A run directory is untrusted input: one test per probe of the issue on untrusted results.

Run directories travel (git, CI artifacts, other hosts), so nothing in one may make
iomatrix delete, overwrite or hang, a failure never reads as "ok", and every bad
value is exit 2 naming the file or option, never a traceback or the regression code.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iomatrix import cli, procs
from iomatrix.interpreters import discovery, environments, probing
from iomatrix.measuring import runner
from iomatrix.storing import contract, store, workdirs
from iomatrix.storing.profiles import PROFILES
from conftest import ROOT, copy_of_smoke, need, run_nox, write_pyperf_file
from test_robustness import tmpfs

SMOKE = PROFILES["smoke"]
SCRIPTS = ROOT / "scripts"


def tool(name: str, *args) -> subprocess.CompletedProcess:
    """scripts/<name>.py's main, as its script runs it (cli.main_guard maps the exit status),
    in this process: each script started anew paid 2-3 s of imports (pandas, scipy), and these
    tests call them some sixty times. A case that could hang (special files) runs its tools in
    a child process with a deadline instead (``tools_in_one_process``)."""
    argv = [str(a) for a in args]
    module = importlib.import_module(name)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = module.main(argv)
        except SystemExit as exc:     # argparse's own exit 2
            code = exc.code
    return subprocess.CompletedProcess([name, *argv], code, out.getvalue(), err.getvalue())


# Several tools, one after the other, as ``tool`` runs each, in one process of their own with a
# deadline (a hang fails the test instead of blocking it), paying the imports once.
TOOLS_DRIVER = """
import contextlib, io, json, sys
sys.path.insert(0, sys.argv[1])
done = []
for name, argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = __import__(name).main(argv)
        except SystemExit as exc:
            code = exc.code
    done.append([name, code, out.getvalue(), err.getvalue()])
print(json.dumps(done))
"""


def tools_in_one_process(calls, timeout: float) -> list[subprocess.CompletedProcess]:
    """[(name, args), ...] run as ``tool`` runs each, in one child process with a deadline."""
    argv = json.dumps([[name, [str(a) for a in args]] for name, args in calls])
    child = subprocess.run([sys.executable, "-c", TOOLS_DRIVER, str(SCRIPTS), argv],
                           capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert child.returncode == 0, child.stderr
    return [subprocess.CompletedProcess([name], code, out, err)
            for name, code, out, err in json.loads(child.stdout.splitlines()[-1])]


def good_run(results: Path, run_id: str = "R", slower: float = 1.0) -> Path:
    run_dir = results / run_id
    run_dir.mkdir(parents=True)
    ops = ("read_byLines_textMode", "write_byLines_textMode")
    series = {"3.12": 1.0, "3.13": slower}
    manifest = {"run_id": run_id, "host": "testhost", "profile": "quick", "cache": "warm",
                "suites": ["lutz2009"], "io": ["c"], "started": "2026-01-01T00:00:00+00:00",
                "interpreters": {}}
    for index, (label, factor) in enumerate(series.items()):
        write_pyperf_file(run_dir / f"{label}.json",
                          {op: [[0.01 * factor * (1 + 0.001 * i)] * 2 for i in range(8)]
                           for op in ops})
        manifest["interpreters"][label] = {"label": label, "implementation": "cpython",
                                           "version_info": [3, 12 + index, 0],
                                           "version": f"3.{12 + index}.0", "status": "ok"}
    contract.atomic_write_json(str(run_dir / "manifest.json"), manifest)
    return run_dir


def snapshot(directory: Path) -> dict:
    return {p.relative_to(directory): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and not p.is_symlink()}


# -- 1. a manifest cannot make iomatrix delete a directory ------------------------------

def test_a_work_dir_named_in_a_manifest_is_never_deleted(tmp_path, machine_interpreters):
    real = need(machine_interpreters, "2.7")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    results, work = tmp_path / "results", tmp_path / "work"
    work.mkdir()
    run_dir = results / "V"
    run_dir.mkdir(parents=True)
    contract.atomic_write_json(str(run_dir / "manifest.json"), {
        "run_id": "V", "profile": "smoke", "cache": "warm", "allocator": "steady", "output": "new",
        "clock": "auto", "affinity": "one", "values": "settled",
        "fixture_page_cache": contract.FIXTURE_READ_BACK,
        "suites": ["lutz2009"], "interpreters": {},
        "sessions": [{"work_dir": str(victim), "pid": 2 ** 22 + 1, "started": "x"}]})
    # A directory of our name pattern but without our marker is not ours either.
    lookalike = work / f"{workdirs.WORK_PREFIX}V-abcd"
    lookalike.mkdir()
    (lookalike / "data").write_text("not ours")
    messages = []
    runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE, results_dir=results,
                      run_id="V", work_dir=work, log=messages.append)
    assert (victim / "precious.txt").read_text() == "keep me"
    assert (lookalike / "data").read_text() == "not ours"
    assert any("left" in m and str(lookalike) in m for m in messages)


def test_our_stale_work_dir_is_removed_but_a_live_or_foreign_one_is_left(tmp_path, monkeypatch):
    def made(name: str, pid: int, run_id: str = "R") -> Path:
        directory = tmp_path / f"{workdirs.WORK_PREFIX}{name}"
        directory.mkdir()
        contract.atomic_write_json(str(directory / workdirs.WORK_MARKER), {
            "run_id": run_id, "pid": pid, "host": os.uname().nodename})
        return directory

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = made("R-stale", dead.pid)
    alive = made("R-alive", os.getppid())
    other_run = made("R-other", dead.pid, run_id="S")
    messages = []
    workdirs.clean_stale_work_dirs(tmp_path, "R", messages.append)
    assert not stale.exists() and alive.exists() and other_run.exists()

    # A process we may not signal (EPERM: another user's) is alive, never "dead".
    foreign = made("R-foreign", dead.pid)

    def refuse(pid, sig):
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "kill", refuse)
    assert procs.pid_alive(dead.pid)
    workdirs.clean_stale_work_dirs(tmp_path, "R", messages.append)
    assert foreign.exists()
    assert any(str(foreign) in m and "alive" in m for m in messages)


# -- 2. a .lock symlink cannot make iomatrix overwrite a file --------------------------

def test_a_lock_symlink_is_refused_and_its_target_untouched(tmp_path, machine_interpreters):
    real = need(machine_interpreters, "2.7")
    victim = tmp_path / "victim.txt"
    victim.write_text("original")
    run_dir = tmp_path / "results" / "L"
    run_dir.mkdir(parents=True)
    (run_dir / ".lock").symlink_to(victim)
    with pytest.raises(cli.BadInput, match=r"\.lock.*symbolic link"):
        runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE,
                          results_dir=tmp_path / "results", run_id="L", work_dir=tmp_path,
                          log=lambda *a: None)
    assert victim.read_text() == "original"


# -- 3. special files neither hang nor eat memory ----------------------------------------

def test_special_series_files_are_skipped_by_name_quickly(tmp_path):
    """/dev/zero, a fifo, a huge sparse file and a directory, each a series file of one run:
    the report skips each by name; compare and history refuse each (exit 2), in one child
    process with a deadline (the imports paid once, not once a kind)."""
    results = tmp_path / "results"
    run_dir = good_run(results)
    bad = {kind: run_dir / f"3.{minor}.json" for kind, minor in
           (("dev-zero", 8), ("fifo", 9), ("huge-sparse", 10), ("directory", 11))}
    bad["dev-zero"].symlink_to("/dev/zero")
    os.mkfifo(bad["fifo"])
    with open(bad["huge-sparse"], "wb") as f:
        f.truncate(contract.MAX_RESULT_BYTES + 1)
    bad["directory"].mkdir()
    before = snapshot(run_dir)
    started = time.monotonic()
    calls = [("report", ("--results-dir", results, "--run-id", "R", "--out",
                         tmp_path / "out" / "report.md", "--no-figures"))]
    for path in bad.values():
        calls += [("compare", (path, run_dir / "3.13.json", "--results-dir", results)),
                  ("history", (path.stem, "--results-dir", results))]
    report, *others = tools_in_one_process(calls, timeout=90)
    assert report.returncode == 0, report.stderr
    for path in bad.values():
        assert path.name in report.stderr, (path.name, report.stderr)
    assert time.monotonic() - started < 90
    for done in others:
        assert done.returncode == 2, (done.args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
    assert snapshot(run_dir) == before


# -- 4. a failure never turns into "ok" ---------------------------------------------------

def test_status_is_derived_from_the_files_never_carried_over(tmp_path, machine_interpreters,
                                                            smoke_27):
    real = need(machine_interpreters, "2.7")
    results = copy_of_smoke(smoke_27, tmp_path)
    manifest = json.loads((results / "S" / "manifest.json").read_text())
    assert manifest["interpreters"]["2.7"]["status"] == "ok"
    series = results / "S" / "2.7.json"
    # Someone removes an op from the series file: the next session says so.
    document = json.loads(series.read_text())
    lost = document["benchmarks"].pop()["metadata"]["name"]
    series.chmod(0o644)
    series.write_text(json.dumps(document))
    manifest = runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE,
                                 results_dir=results, run_id="S", work_dir=tmp_path,
                                 log=lambda *a: None)
    entry = manifest["interpreters"]["2.7"]
    assert entry["status"] == "incomplete" and lost in entry["missing"]
    assert entry["results_file"] is None


def test_a_disk_full_mid_run_is_not_ok_and_a_rerun_redoes_the_failed_ops(
        tmp_path, machine_interpreters, monkeypatch):
    real = need(machine_interpreters, "2.7")
    results = tmp_path / "results"
    options = dict(suites=["lutz2009"], profile=SMOKE, results_dir=results, run_id="F",
                   log=lambda *a: None)
    monkeypatch.setattr(runner, "FREE_DISK_MARGIN", 0)  # reach the real ENOSPC mid-run
    # Room for the 16 MB of fixtures, not for a 25 MiB write: the writes fail, reads pass.
    with tmpfs(tmp_path / "small", "20m") as small:
        manifest = runner.run_matrix([real], work_dir=small, **options)
    entry = manifest["interpreters"]["2.7"]
    assert entry["status"] == "incomplete" and entry["results_file"] is None
    failed = set(entry["failed_ops"])
    assert failed and all(op.startswith("write_") for op in failed)
    assert set(entry["missing"]) == failed
    assert not (results / "F" / "2.7.json").exists()
    # Room again: the rerun does only what failed, and only now is the series ok.
    manifest = runner.run_matrix([real], work_dir=tmp_path, **options)
    entry = manifest["interpreters"]["2.7"]
    assert entry["status"] == "ok" and entry["missing"] == {}
    names = {row["op"] for row in store.load_series(results / "F" / "2.7.json")}
    assert failed <= names


# -- 5. the gate cannot be switched off; odd files are exit 2 ----------------------------

@pytest.mark.parametrize("value", ["nan", "inf", "-1", "10", "abc"])
def test_compare_refuses_a_fail_above_that_would_switch_the_gate_off(tmp_path, value):
    results = tmp_path / "results"
    good_run(results, "A")
    good_run(results, "B", slower=2.0)
    done = tool("compare", "A", "B", "--results-dir", results, "--fail-above", value)
    assert done.returncode == 2, done.stdout
    assert "--fail-above" in done.stderr and "Traceback" not in done.stderr
    assert tool("compare", "A", "B", "--results-dir", results).returncode == 1  # the real gate


@pytest.mark.parametrize("content", ["[1, 2]", '"text"', '{"interpreters": [1]}',
                                     '{"sessions": {}}', "{", ""])
def test_an_odd_manifest_is_named_by_report_and_exit_2_for_compare(tmp_path, content):
    results = tmp_path / "results"
    good_run(results, "A")
    bad = good_run(results, "B")
    (bad / "manifest.json").write_text(content)
    # report: the rest of the run is reported, the manifest named as not read
    done = tool("report", "--results-dir", results, "--run-id", "B", "--out",
                tmp_path / "b.md", "--no-figures")
    assert done.returncode == 0 and "manifest.json" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    page = (tmp_path / "b.md").read_text()
    assert "Files not read" in page and "manifest.json" in page
    done = tool("compare", "A", "B", "--results-dir", results)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    # The bad run does not break the rest of the results directory.
    assert tool("report", "--results-dir", results, "--run-id", "A", "--out",
                tmp_path / "a.md", "--no-figures").returncode == 0
    done = tool("history", "3.13", "--results-dir", results)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("document", [
    {"benchmarks": "x"}, {"benchmarks": [{"metadata": []}]},
    {"benchmarks": [{"metadata": {"name": "op"}, "runs": [{"values": ["1"]}]}]},
    {"benchmarks": [{"metadata": {"name": 7}, "runs": []}]}])
def test_oddly_shaped_pyperf_files_are_exit_2_naming_the_file(tmp_path, document):
    results = tmp_path / "results"
    run_dir = good_run(results)
    (run_dir / "3.13.json").write_text(json.dumps({"version": "1.0", "metadata": {},
                                                   **document}))
    done = tool("compare", run_dir / "3.12.json", run_dir / "3.13.json")
    assert done.returncode == 2 and "3.13.json" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


# -- 6. smaller holes: one validation layer for every value -------------------------------

@pytest.mark.parametrize("value", ["R\n", "a" * 300, "../x", "", "a/b", ".hidden"])
def test_bad_run_ids_and_labels_are_refused_before_anything_runs(value):
    with pytest.raises(argparse.ArgumentTypeError):
        cli.run_id(value)
    with pytest.raises(argparse.ArgumentTypeError):
        cli.label(value)


@pytest.mark.parametrize("value", ["10", "-1", "nan", "inf", "0", "x"])
def test_thresholds_outside_0_to_10_are_refused(value):
    with pytest.raises(argparse.ArgumentTypeError):
        cli.threshold(value)


@pytest.mark.parametrize("value", ["0", "-5", "nan", "inf", "x"])
def test_timeouts_must_be_positive_and_finite(value):
    with pytest.raises(argparse.ArgumentTypeError):
        cli.positive_seconds(value)


@pytest.mark.parametrize("value", ["", ",", " , "])
def test_an_empty_interpreter_list_selects_nothing_and_is_an_error(value):
    with pytest.raises(argparse.ArgumentTypeError):
        cli.label_list(value)


def test_bad_command_lines_are_exit_2_and_run_nothing(tmp_path, machine_interpreters):
    label = "2.7" if "2.7" in machine_interpreters else next(iter(machine_interpreters))
    results_file = tmp_path / "results-is-a-file"
    results_file.write_text("not a directory")
    for posargs in (["--run-id", "R\n"], ["--timeout", "nan"], ["--run-id", "x" * 300],
                    ["--results-dir", str(results_file)]):
        done = run_nox("-s", f"bench-{label}", "--", "--profile", "smoke", *posargs)
        output = done.stdout + done.stderr
        assert done.returncode != 0 and "Traceback" not in output, (posargs, output)
    assert results_file.read_text() == "not a directory"
    done = run_nox("-s", "matrix", "--", "--pythons", "", "--profile", "smoke")
    assert done.returncode != 0 and "--pythons" in done.stdout + done.stderr


def test_a_config_that_is_not_utf8_is_a_clear_error(tmp_path):
    config = tmp_path / "iomatrix.toml"
    config.write_bytes(b"[interpreters]\ndev = \"/opt/\xff\xfe\"\n")
    with pytest.raises(discovery.DiscoveryError, match="iomatrix.toml"):
        discovery.parse_config_declarations(config)


def test_a_probe_that_never_answers_costs_one_timeout_and_leaves_no_child(tmp_path, monkeypatch):
    sleeper = tmp_path / "python3.99"
    marker = tmp_path / "child-pid"
    # A "python" that starts a grandchild holding the pipes, then sleeps forever.
    sleeper.write_text(f"#!/bin/sh\nsleep 1000 &\necho $! > {marker}\nsleep 1000\n")
    sleeper.chmod(0o755)
    monkeypatch.setattr(probing, "PROBE_TIMEOUT_SECONDS", 2)   # read where probe() runs
    started = time.monotonic()
    found = discovery.probe_all([str(sleeper), str(sleeper) + "-missing"])
    assert time.monotonic() - started < 10
    assert "did not answer" in str(found[str(sleeper)])
    child = int(marker.read_text())
    time.sleep(0.2)
    assert not procs.pid_alive(child) or _is_zombie(child)


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z"
    except OSError:
        return True


def test_two_runs_making_one_environment_at_once_both_get_it(tmp_path, machine_interpreters):
    interp = next((i for label, i in machine_interpreters.items()
                   if i.ok and i.version_info[:2] >= (3, 9) and i.source == "pyenv"), None)
    if interp is None:
        pytest.skip("no pyenv CPython 3.9+ here")
    envs = tmp_path / "envs"
    code = ("import sys; sys.path.insert(0, %r); from iomatrix.interpreters import discovery, environments; "
            "i = [i for i in discovery.discover(automatic=False, config_file=__import__('pathlib')"
            ".Path('/nonexistent'), environ={'IOMATRIX_PYTHONS': 'x=%s'})][0]; "
            "print(environments.ensure_environment(i, __import__('pathlib').Path(%r), "
            "log=lambda *a: None).python)") % (str(SCRIPTS), interp.executable, str(envs))
    both = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=600) for p in both]
    assert [p.returncode for p in both] == [0, 0], outputs
    assert outputs[0][0] == outputs[1][0]
    env = environments.BenchEnvironment(outputs[0][0].strip(), None, "")
    assert subprocess.run([env.python, "-c", "import pyperf"]).returncode == 0


def test_the_matrix_writes_latest_md_only_for_the_default_results_dir(tmp_path):
    from iomatrix.measuring import bench
    args = bench.parser("matrix", matrix=True).parse_args(
        ["--results-dir", str(tmp_path / "elsewhere"), "--run-id", "R"])
    posargs = bench.report_arguments(args)
    out = Path(posargs[posargs.index("--out") + 1])
    assert out == tmp_path / "elsewhere" / "R" / "report.md"
    args = bench.parser("matrix", matrix=True).parse_args(["--run-id", "R"])
    assert "--out" not in bench.report_arguments(args)  # the default dir: reports/latest.md


@pytest.mark.parametrize("where", ["beside-the-runs", "a-run-dir-as-pages", "not-markdown"])
def test_a_report_whose_pages_would_mix_with_results_is_refused(tmp_path, where):
    results = tmp_path / "results"
    run_dir = good_run(results, "A")
    other_store = tmp_path / "other"
    good_run(other_store, "B")
    out = {"beside-the-runs": results / "A.md",  # its pages would be results/A/
           "a-run-dir-as-pages": other_store / "B.md",  # its pages would be other/B/
           "not-markdown": tmp_path / "out" / "report.json"}[where]
    before = snapshot(tmp_path)
    done = tool("report", "--results-dir", results, "--run-id", "A", "--out", out,
                "--no-figures")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "--out" in done.stderr and "Traceback" not in done.stderr
    assert snapshot(tmp_path) == before
    assert sorted(p.name for p in run_dir.iterdir()) == ["3.12.json", "3.13.json",
                                                         "manifest.json"]


def test_the_matrix_refuses_such_a_report_before_it_runs(tmp_path, machine_interpreters):
    from iomatrix.measuring import bench
    real = need(machine_interpreters, "2.7")
    results = tmp_path / "results"
    args = bench.parser("matrix", matrix=True).parse_args(
        ["--results-dir", str(results), "--run-id", "A", "--out", str(results / "A.md"),
         "--profile", "smoke", "--suite", "lutz2009"])
    with pytest.raises(bench.BenchError, match="among the runs of --results-dir"):
        bench.run([real], ["2.7"], args, log=lambda *a: None)
    assert not results.exists()  # nothing ran, nothing was written


def test_a_failed_manifest_write_still_removes_the_fixtures(tmp_path, machine_interpreters,
                                                            monkeypatch):
    real = need(machine_interpreters, "2.7")
    work = tmp_path / "work"
    work.mkdir()

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")
    calls = {"n": 0}
    original = store.Run.write_manifest

    def fail_late(self, manifest):
        calls["n"] += 1
        if manifest.get("finished"):
            fail()
        return original(self, manifest)
    monkeypatch.setattr(store.Run, "write_manifest", fail_late)
    with pytest.raises(OSError):
        runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE,
                          results_dir=tmp_path / "results", run_id="M", work_dir=work,
                          log=lambda *a: None)
    assert list(work.iterdir()) == []


# -- issue 24: each case found by hand, with the outcome the contract asks for -------------

from test_fuzz import call, check_page, make_run  # noqa: E402  (the fuzz test's good store)
import compare as compare_tool  # noqa: E402
import history as history_tool  # noqa: E402
import report as report_tool  # noqa: E402
from iomatrix.commands import crosscheck, release  # noqa: E402

DEEP = b"[" * 100_000 + b"]" * 100_000
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def store_of_two(tmp_path) -> Path:
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")
    return results


def edit_json(path: Path, change) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, allow_nan=True))


def set_first_values(value):
    def change(document):
        for run in document["benchmarks"][0]["runs"]:
            run["values"] = [value] * len(run["values"])
    return change


def counters_change(**op):
    def change(document):
        next(iter(document["ops"].values())).update(op)
    return change


def manifest_change(document):
    document["interpreters"]["3.13"]["version_info"] = "3.13"


def cpu_count_change(document):
    document["cpu_count"] = "many"


def negative_bytes(document):
    document["benchmarks"][0]["metadata"][contract.KEY_BYTES] = -1000


def one_process_huge(document):
    document["benchmarks"][0]["runs"][0]["values"][0] = 1e308


WHY_CASES = {
    # name: (file in run B, damage: bytes or a change of its JSON, field named)
    "series nested 100,000 levels": ("3.13.json", DEEP, "nested 100000 levels deep"),
    "manifest nested 100,000 levels": ("manifest.json", DEEP, "nested 100000 levels deep"),
    "counts that are strings": ("3.13.counters.json",
                                counters_change(syscalls={"read": "lots"}), "syscalls.read"),
    "counts that are NaN": ("3.13.counters.json", counters_change(instructions=float("nan")),
                            "non-finite number"),
    "version_info a string": ("manifest.json", manifest_change, "version_info"),
    "cpu_count a word": ("manifest.json", cpu_count_change, "cpu_count"),
    "one process mean of 1e308 s": ("3.13.json", one_process_huge, "values[0]"),
    "every value of an op at 1e308 s": ("3.13.json", set_first_values(1e308), "values[0]"),
    "a negative byte count": ("3.13.json", negative_bytes, "iomatrix_bytes"),
    "calls: -1 in a counters file": ("3.13.counters.json", counters_change(calls=-1), "calls"),
}


@pytest.mark.parametrize("case", sorted(WHY_CASES))
def test_issue_24_damage_is_named_by_report_and_history_and_exit_2_for_compare(
        tmp_path, capsys, case):
    name, damage, field = WHY_CASES[case]
    results = store_of_two(tmp_path)
    path = results / "B" / name
    if isinstance(damage, bytes):
        path.write_bytes(damage)
    else:
        edit_json(path, damage)
    code, _, err = call(report_tool.main, ["--results-dir", results, "--run-id", "B", "--out",
                                           tmp_path / "out" / "b.md", "--no-figures"], capsys)
    assert code == 0, err
    page = "\n".join(p.read_text() for p in (tmp_path / "out").rglob("*.md"))
    check_page(page, case)
    page = re.sub(r"\\(.)", r"\1", page)   # markdown escapes: iomatrix\_bytes
    assert "Files not read" in page and name in page and field in page, case
    code, _, err = call(compare_tool.main, ["A", "B", "--results-dir", results], capsys)
    assert code == 2 and name in err and field in err and len(err.splitlines()) == 1, err
    code, text, _ = call(history_tool.main, ["3.13", "--results-dir", results], capsys)
    assert code == 0
    check_page(text, case)
    if name != "3.13.counters.json":   # history reads no counts
        text = re.sub(r"\\(.)", r"\1", text)
        assert name in text and field in text


def test_a_crash_is_exit_3_never_1_and_says_please_report(tmp_path, monkeypatch, capsys):
    """Any unexpected exception: exit 3 with the traceback; a gate never reads it as 1."""
    results = store_of_two(tmp_path)

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(compare_tool, "compare_full", broken)
    assert compare_tool.main(["A", "B", "--results-dir", str(results)]) == cli.EXIT_INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "Traceback" in err and "ZeroDivisionError" in err and "please report" in err


def test_release_is_exit_2_when_compare_refuses_the_run(tmp_path, capsys):
    results = store_of_two(tmp_path)
    (results / "B" / "3.13.json").write_bytes(DEEP)
    with pytest.raises(release.ReleaseError, match="3.13.json"):
        release.compare_files(sys.executable, results / "B" / "3.12.json",
                              results / "B" / "3.13.json", 0.05)


@pytest.mark.parametrize("where", ["a directory", "under a file", "not writable",
                                   "the run's series", "the run's manifest"])
def test_output_paths_that_cannot_be_written_are_exit_2_naming_them(tmp_path, where):
    results = store_of_two(tmp_path)
    before = snapshot(results)
    (tmp_path / "file").write_text("x")
    out = {"a directory": tmp_path, "under a file": tmp_path / "file" / "c.md",
           "not writable": Path("/proc/iomatrix-cannot-write/c.md"),
           "the run's series": results / "B" / "3.13.json",
           "the run's manifest": results / "B" / "manifest.json"}[where]
    for option in ("--out", "--json"):
        done = tool("compare", "A", "B", "--results-dir", results, option, out)
        assert done.returncode == 2, (option, done.stderr)
        assert option in done.stderr and str(out) in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert snapshot(results) == before


def test_a_history_label_is_never_a_path(tmp_path):
    results = store_of_two(tmp_path)
    (tmp_path / "somewhere").mkdir()
    (tmp_path / "somewhere" / "file.json").write_text("{}")
    done = tool("history", "../../somewhere/file", "--results-dir", results)
    assert done.returncode == 2 and "label" in done.stderr and "Traceback" not in done.stderr


def test_a_run_directory_that_is_a_symlink_is_refused_by_name(tmp_path, capsys):
    results = store_of_two(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    make_run(elsewhere, "C")
    (results / "C").symlink_to(elsewhere / "C")
    code, _, err = call(report_tool.main, ["--results-dir", results, "--run-id", "C", "--out",
                                           tmp_path / "c.md", "--no-figures"], capsys)
    assert code == 2 and "symbolic link" in err and str(results / "C") in err
    code, _, err = call(compare_tool.main, ["A", "C", "--results-dir", results], capsys)
    assert code == 2 and "symbolic link" in err
    code, text, _ = call(history_tool.main, ["3.13", "--results-dir", results], capsys)
    assert code == 0 and "symbolic link" in text and "`#3" not in text
    with pytest.raises(cli.BadInput, match="symbolic link"):
        crosscheck.run_conditions(results / "C", ["3.12", "3.13"])


def test_a_counters_file_that_is_a_symlink_is_named(tmp_path, capsys):
    results = store_of_two(tmp_path)
    counters = results / "B" / "3.13.counters.json"
    counters.unlink()
    counters.symlink_to(results / "A" / "3.13.counters.json")
    code, _, _ = call(report_tool.main, ["--results-dir", results, "--run-id", "B", "--out",
                                         tmp_path / "out" / "b.md", "--no-figures"], capsys)
    page = "\n".join(p.read_text() for p in (tmp_path / "out").rglob("*.md"))
    assert code == 0 and "3.13.counters.json" in page and "symbolic link" in page


@pytest.mark.parametrize("value", ["1e308", "5e-324"])
def test_implausible_phase_samples_are_skipped_and_compare_goes_on(tmp_path, capsys, value):
    results = store_of_two(tmp_path)
    for run_id in ("A", "B"):
        (results / run_id / "phase" / "s.tsv").write_text(
            "".join(f"{1.7e9 + i}\t{value}\t{value}\n" for i in range(12)))
    code, text, err = call(compare_tool.main, ["A", "B", "--results-dir", results], capsys)
    assert code == 0, err
    assert "12 line(s) are not a probe sample" in text
    check_page(text, "compare")
    code, text, _ = call(history_tool.main, ["3.13", "--results-dir", results], capsys)
    assert code == 0 and "phase/s.tsv" in text and "not a probe sample" in text


def test_an_unreadable_phase_directory_is_named_not_too_few_samples(tmp_path, capsys):
    results = store_of_two(tmp_path)
    phase_dir = results / "B" / "phase"
    phase_dir.chmod(0)
    try:
        if IS_ROOT:
            # root reads a directory without read permission: the compare runs as its script,
            # still root but without the capabilities that override permissions (setpriv,
            # util-linux), so the directory is as unreadable to it as to any user
            done = subprocess.run(
                ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search",
                 sys.executable, str(ROOT / "scripts" / "compare.py"), "A", "B",
                 "--results-dir", str(results)], capture_output=True, text=True, timeout=300)
            code, text = done.returncode, done.stdout
            assert "Traceback" not in done.stderr, done.stderr[-3000:]
        else:
            code, text, _ = call(compare_tool.main, ["A", "B", "--results-dir", results], capsys)
    finally:
        phase_dir.chmod(0o755)
    assert code == 0 and "cannot be read" in text


@pytest.mark.parametrize("text, ok", [("3.13", True), ("3.13+pyio", True), ("3.13@default", True),
                                      ("3.13+pyio@fresh", True), ("../x", False),
                                      ("3.13+x", False), ("3.13@", False), ("a/b", False),
                                      ("/etc/passwd", False), ("3.13\n", False)])
def test_a_series_name_is_a_label_with_its_io_stack_and_allocator_only(text, ok):
    if ok:
        assert cli.series(text) == text
    else:
        with pytest.raises(argparse.ArgumentTypeError):
            cli.series(text)
