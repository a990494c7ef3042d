"""An ablation series is timed under its main series' conditions (issue 57's follow-up).

A lockstep run of 2.7.18 and 3.6.15 timed ``chunks_iterate_lines`` under 3.6 with
buffering=4096 (its own default) at twice the main series' time, with 2,928 minor faults a
call against 560. The host gave both workers the same environment, allocator, CPU and round;
what differed was the worker's command line (the series name in its result paths), which set
how full pymalloc's arenas were, and 3.6's pymalloc maps and unmaps an arena per object when
none has a free pool (harness.keep_spare_arena; docs/experiments/2026-12-05-ablation-conditions.md).
These tests check the conditions, never a time: the host's side (the same environment, CPUs
and command but for the knob and the result paths), the worker's spare arena under
``steady``, and a real 3.6 worker whose page faults a call no longer follow its command line.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import _api  # noqa: E402  (suites/ is on the path: pyproject.toml)
import harness  # noqa: E402
from conftest import ROOT, need
from iomatrix.measuring import knobs, machine, planning, runner, workers
from iomatrix.measuring.spec import RunSpec
from iomatrix.storing import store
from iomatrix.storing.profiles import PROFILES

OP = "chunks_iterate_lines"


# -- the host: what each worker is given ----------------------------------------------------

def without_result_paths(cmd: list[str]) -> list[str]:
    """A worker's command without its --knob and the paths of its result and errors files
    (they name the series)."""
    out, skip = [], False
    for arg in cmd:
        if skip:
            skip = False
            continue
        if arg in ("--knob", "--output", "--errors"):
            skip = True
            continue
        out.append(arg)
    return out


def test_an_ablation_worker_gets_its_main_series_environment_cpus_and_command(
        tmp_path, machine_interpreters):
    # bpo-36103's copy buffer: 3.8 timed again with 16 KiB, 3.7 with 64 KiB (test_ablation's)
    interps = [need(machine_interpreters, label) for label in ("3.7", "3.8")]
    spec = RunSpec.create(suites="copies", profile=PROFILES["smoke"], seed=7,
                          results_dir=tmp_path / "results", run_id="C", work_dir=tmp_path)
    run = store.Run(spec.results_dir, spec.run_id)
    manifest = {"interpreters": {}}
    plans = runner._plan_series(run, interps, spec, manifest, log=lambda *a: None)
    ablations = [p for p in plans.values() if p.ablation_of is not None]
    assert {(p.series, p.knob) for p in ablations} == {("3.8~copy_bufsize=16384", ("copy_bufsize", 16384)),
                                                       ("3.7~copy_bufsize=65536", ("copy_bufsize", 65536))}
    session = workers.Session(spec, tmp_path / "fixtures", tmp_path / "scratch")
    for ablation in ablations:
        main = plans[ablation.ablation_of]
        assert ablation.interp is main.interp and ablation.env is main.env
        assert ablation.allocator == main.allocator
        ops = [op for _, op in ablation.ops]
        mine = workers.Batch(ablation, planning.Task(ablation.series, "c", "copies", 0), ops,
                             tmp_path / "a.json", tmp_path / "a.partial")
        theirs = workers.Batch(main, planning.Task(main.series, "c", "copies", 0), ops,
                               tmp_path / "m.json", tmp_path / "m.partial")
        assert workers.worker_environment(ablation, spec) == workers.worker_environment(main, spec)
        assert workers.worker_cpus(mine, spec) == workers.worker_cpus(theirs, spec)
        cmd = workers.worker_command(session, mine, ops)
        assert cmd[cmd.index("--knob") + 1] == "%s=%d" % ablation.knob
        assert without_result_paths(cmd) == \
            without_result_paths(workers.worker_command(session, theirs, ops))
        assert knobs.split_ablation(ablation.series)[0] == main.series


# -- the worker: a spare arena under steady -------------------------------------------------

def a_small_op():
    return _api.Op("small", "read-binary", 1, lambda: 1, lambda result: None)


@pytest.mark.parametrize("allocator, spares", [("steady", 1), ("default", 0), ("fresh", 0)])
def test_the_worker_keeps_a_spare_arena_under_steady_only(tmp_path, allocator, spares):
    ctx = _api.Context(str(tmp_path), str(tmp_path), "smoke")
    before = len(harness.SPARE_ARENAS)
    harness.prepare(a_small_op(), ctx, set(), allocator=allocator)
    assert len(harness.SPARE_ARENAS) - before == spares


@pytest.fixture(scope="module")
def chunks_fixtures(tmp_path_factory):
    directory = tmp_path_factory.mktemp("chunks-fixtures")
    subprocess.run([sys.executable, str(ROOT / "suites" / "harness.py"), "--make-fixtures",
                    "chunks", "smoke", str(directory)], check=True, capture_output=True,
                   timeout=300)
    return directory


def faults_per_call(python: str, fixtures: Path, result: Path, knob: str | None) -> float:
    """The minor faults a timed call of OP paid in a worker whose result file is ``result``,
    as workers.worker_command starts one (lockstep's host answered by a plain "go")."""
    result.parent.mkdir(parents=True, exist_ok=True)
    cmd = [python, str(harness.__file__), "--batch", "--suite", "chunks",
           "--ops", json.dumps([OP]), "--fixtures", str(fixtures),
           "--scratch", str(fixtures), "--iomatrix-profile", "smoke", "--io", "c",
           "--cache", "warm", "--allocator", "steady", "--output-state", "new",
           *(["--knob", knob] if knob else []), "--round", "0", "--warmups", "1",
           "--values", "2", "--output", str(result), "--errors", f"{result}.errors",
           "--system-metadata", "{}", "--lockstep"]
    env = machine.allocator_environment("steady")
    proc = subprocess.run(cmd, input="go\n" * 4, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", **env})
    assert proc.returncode == 0, proc.stderr
    benchmark = json.loads(result.read_text())["benchmarks"][0]
    return benchmark["metadata"]["iomatrix_minflt_per_value"]


def test_a_3_6_worker_s_page_faults_do_not_follow_its_command_line(
        tmp_path, machine_interpreters, chunks_fixtures):
    """Before the spare arena this worker paid 0, 24, 560 or 2,928 faults a call as its result
    path grew a character at a time (the same interpreter, environment and op)."""
    interp = need(machine_interpreters, "3.6")
    counts = set()
    for pad in range(0, 24, 3):
        for series, knob in (("3.6", None), ("3.6~buffering=4096", "buffering=4096")):
            result = tmp_path / ("p" * pad) / series / "r000--chunks.json.partial"
            counts.add(faults_per_call(interp.executable, chunks_fixtures, result, knob))
    assert counts == {0.0}
