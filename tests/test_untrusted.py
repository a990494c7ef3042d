"""A run directory is untrusted input: one test per probe of the issue on untrusted results.

Run directories travel (git, CI artifacts, other hosts), so nothing in one may make
iomatrix delete, overwrite or hang, a failure never reads as "ok", and every bad
value is exit 2 naming the file or option, never a traceback or the regression code.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iomatrix import cli, contract, discovery, environments, procs, runner, store, workdirs
from iomatrix.profiles import PROFILES
from conftest import ROOT, need, run_nox, write_pyperf_file
from test_robustness import tmpfs

SMOKE = PROFILES["smoke"]
SCRIPTS = ROOT / "scripts"


def tool(name: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run scripts/<name>.py as nox does; a hang fails the test instead of blocking it."""
    return subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


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

@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "huge-sparse", "directory"])
def test_special_series_files_are_skipped_by_name_quickly(tmp_path, kind):
    results = tmp_path / "results"
    run_dir = good_run(results)
    bad = run_dir / "3.11.json"
    if kind == "dev-zero":
        bad.symlink_to("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(bad)
    elif kind == "huge-sparse":
        with open(bad, "wb") as f:
            f.truncate(contract.MAX_RESULT_BYTES + 1)
    else:
        bad.mkdir()
    before = snapshot(run_dir)
    started = time.monotonic()
    done = tool("report", "--results-dir", results, "--run-id", "R", "--out",
                tmp_path / "out" / "report.md", "--no-figures", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "3.11.json" in done.stderr
    assert time.monotonic() - started < 60
    for name in ("compare", "history"):
        args = (bad, run_dir / "3.13.json") if name == "compare" else ("3.11",)
        done = tool(name, *args, "--results-dir", results, timeout=60)
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr
    assert snapshot(run_dir) == before


# -- 4. a failure never turns into "ok" ---------------------------------------------------

def test_status_is_derived_from_the_files_never_carried_over(tmp_path, machine_interpreters):
    real = need(machine_interpreters, "2.7")
    results = tmp_path / "results"
    manifest = runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE,
                                 results_dir=results, run_id="D", work_dir=tmp_path,
                                 log=lambda *a: None)
    assert manifest["interpreters"]["2.7"]["status"] == "ok"
    series = results / "D" / "2.7.json"
    # Someone removes an op from the series file: the next session says so.
    document = json.loads(series.read_text())
    lost = document["benchmarks"].pop()["metadata"]["name"]
    series.chmod(0o644)
    series.write_text(json.dumps(document))
    manifest = runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE,
                                 results_dir=results, run_id="D", work_dir=tmp_path,
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
    monkeypatch.setattr(discovery, "PROBE_TIMEOUT_SECONDS", 2)
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
    code = ("import sys; sys.path.insert(0, %r); from iomatrix import discovery, environments; "
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
    from iomatrix import bench
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
    from iomatrix import bench
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
