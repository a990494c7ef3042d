"""Runs that survive: interruption and resume, crashing and hanging interpreters, full disks,
concurrent runs, containment. Every fault is driven for real (signals, processes, tmpfs)."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iomatrix.interpreters import discovery
from iomatrix.interpreters import environments
import _fixtures
from iomatrix.measuring import runner, workers
from iomatrix.analysing import analysis
from iomatrix.reporting import pages
from iomatrix.storing import store
from iomatrix.storing.profiles import PROFILES
from conftest import ROOT, copy_of_smoke, need, run_nox

SMOKE = PROFILES["smoke"]


def start_nox(*args, cwd=ROOT):
    # SIGINT as a terminal's nox has it: a test run started in the background (nohup, &)
    # inherits an ignored SIGINT, which would make nox deaf to the Ctrl-C under test.
    return subprocess.Popen([sys.executable, "-m", "nox", "--noxfile", str(ROOT / "noxfile.py"),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=cwd, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def wait_for_parts(parts_dir: Path, count: int, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if parts_dir.is_dir() and len(list(parts_dir.glob("r*--*.json"))) >= count:
            return
        if proc.poll() is not None:
            pytest.fail("the run ended before it could be interrupted:\n" + proc.stdout.read())
        time.sleep(0.05)
    pytest.fail("no progress")


def partial_files(run_dir: Path):
    return [p for p in run_dir.rglob("*") if ".partial" in p.name]


# kill -9 is the slower of the two (the killed session's work dir is found and removed by the
# next one): it runs with the slow tests (`nox -s tests -- -m slow`), Ctrl-C on every run.
@pytest.mark.parametrize("sig", [signal.SIGINT,
                                 pytest.param(signal.SIGKILL, marks=pytest.mark.slow)],
                         ids=["ctrl-c", "kill-9"])
def test_interrupted_run_resumes_without_losing_or_redoing_work(tmp_path, sig, machine_interpreters):
    need(machine_interpreters, "2.7")
    results, work = tmp_path / "results", tmp_path / "work"
    work.mkdir()
    # No extra rounds, no counting pass: the timing rounds are what is interrupted and resumed.
    # mmapio: the quick profile's 8 rounds in about 8 s under 2.7 (lutz2009's took 20).
    args = ["-s", "bench-2.7", "--", "--profile", "quick", "--budget", "0.001",
            "--suite", "mmapio", "--counters", "off", "--results-dir", str(results),
            "--run-id", "R", "--work-dir", str(work)]
    proc = start_nox(*args)
    parts_dir = results / "R" / ".parts" / "2.7"
    wait_for_parts(parts_dir, 2, proc)
    os.killpg(proc.pid, sig)  # the whole process group, as a terminal's Ctrl-C does
    output, _ = proc.communicate(timeout=60)
    kept = {p.name: p.read_bytes() for p in parts_dir.glob("r*--*.json")}
    assert len(kept) >= 2, output
    assert not (results / "R" / "2.7.json").exists()
    for part in parts_dir.glob("r*--*.json"):
        json.loads(part.read_text())  # every kept part is complete JSON
    if sig == signal.SIGINT:
        assert not partial_files(results / "R")
        assert list(work.iterdir()) == []  # fixtures removed after the interruption
        manifest = json.loads((results / "R" / "manifest.json").read_text())
        assert manifest["sessions"][-1].get("interrupted")
    time.sleep(0.5)  # a worker orphaned by kill -9 finishes its last value
    done = run_nox(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming run R" in done.stdout + done.stderr
    manifest = json.loads((results / "R" / "manifest.json").read_text())
    assert manifest["sessions"][-1]["resumed_parts"] >= len(kept)
    assert manifest["interpreters"]["2.7"]["status"] == "ok"
    assert not partial_files(results / "R")
    assert list(work.iterdir()) == []  # the killed session's work dir is gone too
    rows = store.load_series(results / "R" / "2.7.json")
    per_op = {}
    for row in rows:
        per_op.setdefault(row["op"], []).append(row["round"])
    # every op of mmapio runs under 2.7: 17 and the control of one (issue 41)
    assert len([op for op in per_op if not op.endswith("__control")]) == 17
    assert len(per_op) == 17 + 1
    for op, rounds in per_op.items():
        assert sorted(rounds) == list(range(PROFILES["quick"].rounds)), op


def fake_env(tmp_envs: Path, label: str, real: discovery.Interpreter, script: str):
    """An environment whose python is a wrapper: normal for everything but pyperf workers."""
    env = environments.ensure_environment(real)
    wrapper = tmp_envs / label / "python"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f"#!/bin/sh\ncase \"$*\" in *--batch*) {script} ;; esac\n"
                       f"exec {env.python} \"$@\"\n")
    wrapper.chmod(0o755)
    (tmp_envs / label / environments.MARKER).write_text(json.dumps({
        "executable": os.path.realpath(real.executable), "version": real.version,
        "pyperf": environments.pyperf_pin(real.version_info), "python": str(wrapper),
        "pythonpath": env.pythonpath}))
    return discovery.Interpreter(label, real.executable, "declared", real.info)


def test_crashing_and_hanging_interpreters_do_not_stop_the_matrix(tmp_path, machine_interpreters):
    real = need(machine_interpreters, "3.13")
    envs = tmp_path / "envs"
    good = fake_env(envs, "good", real, ":")
    crash = fake_env(envs, "segfault", real, "kill -SEGV $$")
    hang = fake_env(envs, "hang", real, "sleep 120")
    missing = fake_env(envs, "nomodule", real, f"exec {sys.executable} -c 'import no_such_module'")
    lines = []
    manifest = runner.run_matrix([good, crash, hang, missing], suites=["lutz2009"], profile=SMOKE,
                                 results_dir=tmp_path / "results", run_id="F", timeout=3,
                                 envs_dir=envs, log=lines.append)
    # gave up on the hanging one after its first few workers, instead of one timeout per task
    gave_up = f"hang: gave up after its first {workers.GIVE_UP_AFTER_FAILURES} worker processes"
    [where] = [i for i, line in enumerate(lines) if line.startswith("iomatrix: " + gave_up)]
    assert not [line for line in lines[where:] if line.startswith("iomatrix: hang ")
                and "FAILED" in line]                      # no worker of it started after that
    entries = manifest["interpreters"]
    assert entries["good"]["status"] == "ok"
    assert (tmp_path / "results" / "F" / "good.json").exists()
    assert entries["segfault"]["status"] == "failed"
    assert "SIGSEGV" in entries["segfault"]["error_tail"]
    assert entries["hang"]["status"] == "failed"
    assert "timed out after 3 s" in entries["hang"]["error_tail"]
    assert entries["nomodule"]["status"] == "failed"
    assert "No module named 'no_such_module'" in entries["nomodule"]["error_tail"]
    text = pages.build_report(analysis.load_run(store.Run(tmp_path / "results", "F")))
    assert "## Failed interpreters and ops" in text and "SIGSEGV" in text


def test_result_files_from_elsewhere_are_refused_by_name(tmp_path):
    other_suite = tmp_path / "pyperf.json"
    other_suite.write_text(json.dumps({"version": "1.0", "metadata": {}, "benchmarks": [
        {"metadata": {"name": "json_dumps", "loops": 1, "unit": "second"},
         "runs": [{"metadata": {}, "values": [0.1, 0.1]}]}]}))
    with pytest.raises(store.ResultFileError, match="not written by an iomatrix suite"):
        store.load_series(other_suite)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(store.MAX_RESULT_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(store.ResultFileError, match="more than any iomatrix result"):
        store.load_series(huge)
    assert huge.exists() and other_suite.exists()


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                            str(path)], capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_a_write_op_hitting_enospc_names_the_op_and_leaves_nothing(tmp_path):
    fixtures = tmp_path / "fixtures"
    _fixtures.make_fixtures(["lutz2009"], "smoke", str(fixtures))
    with tmpfs(tmp_path / "small", "8m") as scratch:
        proc = subprocess.run([sys.executable, str(runner.HARNESS), "--suite", "lutz2009",
                               "--op", "write_allAtOnce_binaryMode", "--fixtures", str(fixtures),
                               "--scratch", str(scratch), "--worker", "--worker-task", "0",
                               "-l", "1", "-w", "0", "-n", "1", "-o", str(tmp_path / "out.json")],
                              capture_output=True, text=True)
        assert proc.returncode != 0
        assert f"op write_allAtOnce_binaryMode: no space left on device in {scratch}" in proc.stderr
        assert list(scratch.iterdir()) == []
    assert not (tmp_path / "out.json").exists()


def test_too_little_disk_is_refused_before_anything_starts(tmp_path, machine_interpreters,
                                                          smoke_27):
    real = need(machine_interpreters, "2.7")
    results = copy_of_smoke(smoke_27, tmp_path)   # a finished run beside the refused one
    first = json.loads((results / "S" / "manifest.json").read_text())
    assert first["interpreters"]["2.7"]["status"] == "ok"
    kept = (results / "S" / "2.7.json").read_bytes()
    with tmpfs(tmp_path / "tiny", "4m") as tiny:
        with pytest.raises(runner.MatrixError, match=f"not enough free disk in {tiny}"):
            runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE, results_dir=results,
                              run_id="R2", work_dir=tiny, log=lambda *a: None)
        assert list(tiny.iterdir()) == []
    assert (results / "S" / "2.7.json").read_bytes() == kept


def test_fixtures_hitting_enospc_are_a_clear_error_and_cleaned_up(tmp_path, monkeypatch,
                                                                 machine_interpreters):
    real = need(machine_interpreters, "2.7")
    # The free-space check would refuse at once; skip it to reach a real ENOSPC mid-fixture.
    monkeypatch.setattr(runner, "FREE_DISK_MARGIN", 0)
    with tmpfs(tmp_path / "tiny", "4m") as tiny:
        with pytest.raises(runner.MatrixError, match=f"cannot write fixtures in {tiny}.*No space"):
            runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE,
                              results_dir=tmp_path / "results", run_id="R", work_dir=tiny,
                              log=lambda *a: None)
        assert list(tiny.iterdir()) == []


def test_a_live_run_id_is_refused(tmp_path, machine_interpreters):
    label = next(iter(machine_interpreters))
    run_dir = tmp_path / "R"
    run_dir.mkdir()
    with open(run_dir / store.LOCK_FILE, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("pid 12345 on testhost\n")
        lock.flush()
        proc = run_nox("-s", f"bench-{label}", "--", "--profile", "smoke", "--results-dir",
                       str(tmp_path), "--run-id", "R")
    assert proc.returncode != 0
    assert "run R in" in proc.stdout + proc.stderr and "is in use by pid 12345" in proc.stdout + proc.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == [store.LOCK_FILE]


def test_benchmarks_write_only_inside_their_run(tmp_path, machine_interpreters):
    """From a read-only working directory, a run still works and writes nothing there or in the repo."""
    need(machine_interpreters, "3.13")
    readonly = tmp_path / "readonly"
    readonly.mkdir()
    if subprocess.run(["mount", "--bind", str(readonly), str(readonly)]).returncode != 0:
        pytest.skip("bind mounts need root")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(readonly)], check=True)
        with pytest.raises(OSError):
            (readonly / "probe").write_text("x")

        def repo_files():
            # The tools' caches aside, which other tests write while this one runs: Python's
            # bytecode (2.7 keeps a suite's beside it, suites/x.pyc; 3.x in __pycache__/)
            # and hypothesis's (.hypothesis/, in the working directory of the test run).
            # Walked with those directories pruned: rglob went through .nox's venvs too.
            skipped = {".nox", "__pycache__", ".pytest_cache", ".hypothesis"}
            found = set()
            for directory, subdirectories, files in os.walk(ROOT):
                subdirectories[:] = [d for d in subdirectories if d not in skipped]
                found.update(Path(directory, name) for name in subdirectories + files
                             if not name.endswith(".pyc"))
            return found
        before = repo_files()
        work = tmp_path / "work"
        work.mkdir()
        proc = run_nox("-s", "bench-3.13", "--", "--profile", "smoke", "--results-dir",
                       str(tmp_path / "results"), "--run-id", "C", "--work-dir", str(work),
                       cwd=readonly)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert list(readonly.iterdir()) == []
        assert repo_files() == before
        assert list(work.iterdir()) == []  # the fixtures are removed at the end
    finally:
        subprocess.run(["umount", str(readonly)], check=False)


def test_keep_fixtures_keeps_them(tmp_path, machine_interpreters):
    real = need(machine_interpreters, "2.7")
    work = tmp_path / "work"
    work.mkdir()
    runner.run_matrix([real], suites=["lutz2009"], profile=SMOKE, results_dir=tmp_path / "r",
                      run_id="K", work_dir=work, keep_fixtures=True, log=lambda *a: None)
    kept = list(work.iterdir())
    assert len(kept) == 1 and (kept[0] / "fixtures" / "large.txt").exists()


def test_a_ctrl_c_inside_a_groups_cleanup_leaves_no_half_written_file(tmp_path, monkeypatch,
                                                                       machine_interpreters):
    """A Ctrl-C that lands inside a group's cleanup (workers.run_groups' finally, under load
    between a part sealed and its errors file removed) stops it there; the session's close
    removes what it left, once every worker has exited."""
    real = need(machine_interpreters, "3.13")

    def interrupted(batch):
        raise KeyboardInterrupt   # before this batch's errors file is removed
    monkeypatch.setattr(workers, "remove_leftovers", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runner.run_matrix([real], suites=["lutz2009"], profile=PROFILES["smoke"],
                          results_dir=tmp_path, run_id="L", counting=(), log=lambda *a: None)
    run = store.Run(tmp_path, "L")
    assert list((run.path / store.PARTS_DIR / "3.13").glob("r*--*.json"))   # its part is kept
    assert run.partial_files() == []
