"""Lockstep rounds: every series' worker of a round takes each op in turn, one at a time,
and the report compares series round by round. Real interpreters, real workers."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

import harness
from iomatrix.analysing import analysis
from iomatrix.measuring import planning, runner, spec
from iomatrix.reporting import pages
from iomatrix.storing import contract, store
from iomatrix.storing.profiles import PROFILES
from conftest import copy_of_smoke, need, run_nox
from test_robustness import fake_env

TWO_ROUNDS = dataclasses.replace(PROFILES["smoke"], rounds=2, max_rounds=2)


def windows(run_dir: Path, series: str) -> list[tuple[float, float, int, str, str]]:
    """(started, finished, round, series, op) of every op of a series file."""
    rows = []
    # the matrix stores a finished session's series compressed (store.compress_finished)
    document = store.read_json(store.Run(run_dir.parent, run_dir.name).series_file(series))
    for bench in document["benchmarks"]:
        common = bench.get("metadata", {})
        for process in bench["runs"]:
            meta = {**common, **process.get("metadata", {})}
            rows.append((meta[contract.KEY_STARTED], meta[contract.KEY_FINISHED],
                         meta[contract.KEY_ROUND], series, meta["name"]))
    return rows


def every_page(data) -> str:
    """The text of all of a run's pages (machine facts may live beside the main page)."""
    built = pages.build_pages(data)
    return "\n".join([built.main, *built.suites.values(),
                      *getattr(built, "others", {}).values()])


def test_each_op_is_timed_by_every_series_one_after_the_other(tmp_path, machine_interpreters,
                                                              monkeypatch):
    monkeypatch.delenv(runner.PLAIN_RESULTS_ENV)   # the default: a run stored compressed
    old, new = need(machine_interpreters, "2.7"), need(machine_interpreters, "3.13")
    manifest = runner.run_matrix([old, new], suites=["lutz2009"], profile=TWO_ROUNDS,
                                 results_dir=tmp_path, run_id="L", work_dir=tmp_path,
                                 log=lambda *a: None)
    assert manifest["order"]["method"] == store.LOCKSTEP_ORDER
    assert {e["status"] for e in manifest["interpreters"].values()} == {"ok"}
    # the run's series are written compressed by the matrix itself, and pyperf reads them
    run = store.Run(tmp_path, "L")
    names = [p.name for p in run.series_files()]
    assert {"2.7.json.gz", "3.13.json.gz", "native.json.gz"} <= set(names)
    # the rest are 3.13's ablations of the text layer's knobs (measuring/knobs.py)
    assert all(n.startswith("3.13~") and n.endswith(".json.gz") for n in names
               if n not in ("2.7.json.gz", "3.13.json.gz", "native.json.gz"))
    assert not list(run.path.glob("*.json")) or \
        [p.name for p in run.path.glob("*.json")] == ["manifest.json"]
    import pyperf
    assert pyperf.BenchmarkSuite.load(str(run.series_file("3.13"))).get_benchmark_names()
    rows = sorted(windows(tmp_path / "L", "2.7") + windows(tmp_path / "L", "3.13"))
    by_op = {}
    for row in rows:
        by_op.setdefault((row[2], row[4]), []).append(row)
    spans = sorted((min(r[0] for r in rs), max(r[1] for r in rs)) for rs in by_op.values())
    for before, after in zip(spans, spans[1:]):
        assert before[1] <= after[0], f"{before} overlaps {after}"  # one op at a time
    for (round_index, op), (first, second) in by_op.items():
        # Both series' warm-ups come before either series' value: each window, from the
        # op's setup to its last value, holds the other's start.
        assert first[0] <= second[0] <= first[1], (round_index, op, first, second)
    for round_index in (0, 1):
        # Op-major: once an op has started in a round, every series does it before any
        # series starts the next op.
        ops = [op for _, _, r, _, op in rows if r == round_index]
        blocks = [op for i, op in enumerate(ops) if i == 0 or ops[i - 1] != op]
        assert len(blocks) == len(set(blocks)) and ops.count(blocks[0]) == 2

    data = analysis.load_run(store.Run(tmp_path, "L"))
    assert data.paired
    text = pages.build_report(data)
    assert "per-round log ratios" in text and "signed-rank" in text
    assert "made before lockstep rounds" not in text


def test_a_worker_that_crashes_mid_round_costs_its_op_and_not_the_round(tmp_path,
                                                                        machine_interpreters):
    real = need(machine_interpreters, "3.13")
    envs = tmp_path / "envs"
    good = fake_env(envs, "good", real, ":")
    # Crashes when an op's timed call opens the large binary fixture: mid-round, after other
    # ops ran (not when a control reads it in its setup: two ops crash, as before controls).
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import builtins, io, os, signal, sys\n"
        "_open = io.open\n"
        "def crashing_open(file, *args, **kwargs):\n"
        "    if str(file).endswith('large.bin') and sys._getframe(1).f_code.co_name == 'run':\n"
        "        os.kill(os.getpid(), signal.SIGSEGV)\n"
        "    return _open(file, *args, **kwargs)\n"
        "builtins.open = crashing_open\n")
    crash = fake_env(envs, "crashes", real, f"export PYTHONPATH={hooks}:$PYTHONPATH")
    manifest = runner.run_matrix([good, crash], suites=["lutz2009"], profile=PROFILES["smoke"],
                                 results_dir=tmp_path / "results", run_id="C", timeout=60,
                                 envs_dir=envs, log=lambda *a: None)
    entries = manifest["interpreters"]
    assert entries["good"]["status"] == "ok"
    failed = entries["crashes"]["failed_ops"]
    assert failed and all(op.endswith("[large.bin]") for op in failed)
    assert all("SIGSEGV" in why for why in failed.values())
    # Its other ops were redone on their own and kept.
    parts = list((tmp_path / "results" / "C" / ".parts" / "crashes").glob("r*--*.json"))
    kept = {b["metadata"]["name"] for p in parts for b in store.read_json(p)["benchmarks"]}
    assert kept and not kept & set(failed)
    assert not [p for p in (tmp_path / "results").rglob("*") if ".partial" in p.name]


def test_workers_take_their_turns_in_version_order_either_way():
    """Neighbours in version order take their values one right after the other; the
    direction is drawn per step, so each side goes first in about half the steps."""
    import random
    from iomatrix.measuring import lockstep
    workers = ["3.15", "2.7", "3.15-aa", "3.14", "3.6"]
    versions = {"2.7": (2, 7, 18), "3.6": (3, 6, 15), "3.14": (3, 14, 7), "3.15": (3, 15, 0),
                "3.15-aa": (3, 15, 0)}
    position = lambda label: (versions[label], label)
    rng = random.Random(1)
    seen = [lockstep.in_version_order(workers, position, rng) for _ in range(200)]
    ascending = ["2.7", "3.6", "3.14", "3.15", "3.15-aa"]
    assert all(order in (ascending, ascending[::-1]) for order in seen)
    assert 60 < seen.count(ascending) < 140


def test_every_subset_of_a_rounds_ops_is_in_the_rounds_order():
    ops = [f"op{i}" for i in range(14)]
    full = planning.round_order(ops, 7, 3, "lutz2009")
    assert sorted(full) == sorted(ops) and full != sorted(ops)  # shuffled
    for subset in (ops[::2], ops[5:], [ops[13], ops[0]]):
        assert planning.round_order(subset, 7, 3, "lutz2009") == [op for op in full
                                                                   if op in subset]
    assert planning.round_order(ops, 7, 4, "lutz2009") != full  # another round, another order


def test_timed_workers_run_on_one_cpu_and_the_report_says_which(smoke_313):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to choose")
    cpu = max(os.sched_getaffinity(0))
    manifest = json.loads((smoke_313 / "S" / "manifest.json").read_text())
    assert manifest["affinity"] == "one" and manifest["timing_cpus"] == f"CPU {cpu}"
    document = json.loads((smoke_313 / "S" / "3.13.json").read_text())
    seen = {({**b["metadata"], **r.get("metadata", {})})[contract.KEY_CPU]
            for b in document["benchmarks"] for r in b["runs"]}
    assert seen == {str(cpu)}
    text = pages.build_report(analysis.load_run(store.Run(smoke_313, "S")))
    assert f"timed workers on **CPU {cpu}**" in text


def test_an_unknown_affinity_is_an_error_listing_the_valid_ones(tmp_path, machine_interpreters):
    real = need(machine_interpreters, "3.13")
    with pytest.raises(spec.SpecError, match="valid: one, all"):
        runner.run_matrix([real], suites=["lutz2009"], profile=PROFILES["smoke"],
                          results_dir=tmp_path, run_id="U", affinity="some",
                          log=lambda *a: None)
    assert not (tmp_path / "U").exists()
    done = run_nox("-s", "bench-3.13", "--", "--profile", "smoke", "--affinity", "some",
                   "--results-dir", str(tmp_path))
    assert done.returncode == 2 and "valid: one, all" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_a_run_resumed_with_another_affinity_is_refused_and_kept(tmp_path, machine_interpreters,
                                                                 smoke_313):
    real = need(machine_interpreters, "3.13")
    results = copy_of_smoke(smoke_313, tmp_path)
    options = dict(suites=["lutz2009"], profile=PROFILES["smoke"], results_dir=results,
                   run_id="S", work_dir=tmp_path, log=lambda *a: None)
    before = (results / "S" / "manifest.json").read_bytes()
    with pytest.raises(spec.SpecError, match="conditions.affinity: 'one' -> 'all'"):
        runner.run_matrix([real], affinity="all", **options)
    assert (results / "S" / "manifest.json").read_bytes() == before
    assert (results / "S" / "3.13.json").exists()


@pytest.mark.parametrize("key, wanted", [("values", "settled"),
                                         ("fixture_page_cache", "read back from disk")])
def test_a_run_made_before_a_condition_was_stated_is_not_resumed_with_it(
        tmp_path, machine_interpreters, smoke_313, key, wanted):
    real = need(machine_interpreters, "3.13")
    results = copy_of_smoke(smoke_313, tmp_path)
    options = dict(suites=["lutz2009"], profile=PROFILES["smoke"], results_dir=results,
                   run_id="S", work_dir=tmp_path, log=lambda *a: None)
    manifest_path = results / "S" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["fixture_page_cache"] == contract.FIXTURE_READ_BACK
    assert f"fixtures {contract.FIXTURE_READ_BACK}" in \
        every_page(analysis.load_run(store.Run(results, "S")))
    del manifest[key]
    manifest_path.write_text(json.dumps(manifest))
    before = manifest_path.read_bytes()
    with pytest.raises(spec.SpecError, match=f"{key}: 'unstated' -> '{wanted}"):
        runner.run_matrix([real], **options)
    assert manifest_path.read_bytes() == before
    assert (results / "S" / "3.13.json").exists()


def test_an_older_run_is_reported_with_what_it_states(tmp_path, smoke_313):
    """A run made before lockstep rounds and pinning: unpaired, and the report says so."""
    results = copy_of_smoke(smoke_313, tmp_path)
    manifest_path = results / "S" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert "each value of short calls begins right after an untimed call of the op" in \
        pages.build_report(analysis.load_run(store.Run(results, "S")))
    del manifest["values"]  # a lockstep run made before values were settled
    manifest_path.write_text(json.dumps(manifest))
    assert "whether values were settled is unstated" in \
        pages.build_report(analysis.load_run(store.Run(results, "S")))
    for key in ("affinity", "timing_cpus", "allocator"):
        del manifest[key]
    manifest["order"]["method"] = "interleaved rounds, shuffled suites and series per round"
    manifest_path.write_text(json.dumps(manifest))
    data = analysis.load_run(store.Run(results, "S"))
    assert not data.paired
    text = pages.build_report(data)
    assert "allocator **unstated (an older run: a mix)**" in text
    assert "timed workers on **unstated (not pinned)**" in text
    assert "made before lockstep rounds" in text


@pytest.mark.parametrize("call_seconds, loops", [(None, 1), (0.0, 1), (0.02, 1), (0.005, 1),
                                                 (0.001, 5), (0.0003, 17), (1e-9, 1000)])
def test_a_value_lasts_at_least_five_milliseconds(call_seconds, loops):
    assert harness.loops_per_value(call_seconds) == loops


def test_a_pypy_value_lasts_long_enough_to_average_its_collections():
    for implementation in ("CPython", "PyPy"):
        seconds = harness.min_value_seconds(implementation)
        assert harness.loops_per_value(0.001, seconds) == round(seconds / 0.001)
    assert harness.min_value_seconds("PyPy") == 10 * harness.min_value_seconds("CPython")


def test_a_settling_call_is_made_once_and_its_counts_are_not_kept():
    # harness.settle runs one untimed call before a lockstep value; what that call adds to
    # the counts (page faults, context switches) must not be charged to the timed values.
    calls = []
    totals = {"iomatrix_minflt": 3}

    def timer(loops):
        calls.append(loops)
        totals["iomatrix_minflt"] += 180  # what a call after an idle wait may pay
        totals["iomatrix_nivcsw"] = 1
        return 0.001

    harness.settle(timer, totals)
    assert calls == [1]
    assert totals == {"iomatrix_minflt": 3}


def test_under_the_untouched_allocator_the_settling_calls_go_on_until_settled():
    # issue 42: once other work filled the caches, 2.7's whole-file read takes a few calls
    # back to back to come down; under default the settling goes on while calls get faster
    times = iter([0.45, 0.30, 0.15, 0.11, 0.108, 0.5])
    calls = []
    totals = {"iomatrix_minflt": 3}

    def timer(loops):
        calls.append(loops)
        totals["iomatrix_minflt"] += 1
        return next(times)

    harness.settle(timer, totals, until_settled=True)
    assert calls == [1] * 5 and totals == {"iomatrix_minflt": 3}


def test_a_group_started_ahead_never_takes_a_part_a_running_batch_will_write(tmp_path):
    # The one-op workers of a twin series share (series, suite, round): while one runs, the
    # next group's batch of the same series is made; it must write beside it, not over it.
    run = store.Run(tmp_path, "R")
    task = planning.Task("3.12@default", "c", "lutz2009", 3, ["read_x"], True)
    reserved: set = set()
    first = planning.part_for(run, task, reserved)
    reserved.add(first)
    second = planning.part_for(run, task, reserved)
    assert first.name == "r003--lutz2009.json"
    assert second.name == "r003--lutz2009--2.json"
    assert planning.part_key(second.name) == ("lutz2009", 3)
