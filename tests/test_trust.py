"""How far the numbers can be trusted: cache modes, the native ceiling, machine state, A/A, order."""
from __future__ import annotations

import json
import os
import re

import pytest

import _fixtures
from iomatrix.measuring import phase, planning, runner
from iomatrix.measuring import native
from iomatrix.analysing import analysis
from iomatrix.reporting import pages
from conftest import all_pages
from iomatrix.storing import store
from iomatrix.storing.profiles import PROFILES
from conftest import copy_of_smoke, need, shared_between_workers

SMOKE = PROFILES["smoke"]


def smoke(interpreters, tmp_path, run_id="T", **options):
    lines = []
    manifest = runner.run_matrix(interpreters, suites=["lutz2009"], profile=SMOKE,
                                 results_dir=tmp_path, run_id=run_id, log=lines.append, **options)
    return manifest, lines


def test_cold_cache_is_recorded_and_shown(tmp_path, machine_interpreters):
    """Under 3.13 (os.posix_fadvise) and 2.7 (through ctypes), in one run."""
    interps = [need(machine_interpreters, "2.7"), need(machine_interpreters, "3.13")]
    manifest, _ = smoke(interps, tmp_path, cache="cold")
    assert manifest["cache"] == "cold"
    assert manifest["interpreters"]["2.7"]["status"] == "ok"
    rows = store.load_series(tmp_path / "T" / "3.13.json")
    assert {row["cache"] for row in rows} == {"cold"}
    assert {row["cache"] for row in store.load_series(tmp_path / "T" / "2.7.json")} == {"cold"}
    text = pages.build_report(analysis.load_run(store.Run(tmp_path, "T")))
    assert "page cache **cold**" in text


def test_cold_cache_where_eviction_is_impossible_is_an_error(monkeypatch):
    monkeypatch.delattr(_fixtures.os, "posix_fadvise", raising=False)
    monkeypatch.setattr(_fixtures.sys, "platform", "sunos5")
    with pytest.raises(RuntimeError, match="--cache cold needs posix_fadvise, which sunos5 lacks"):
        _fixtures.cold_cache_evictor()


@pytest.fixture(scope="module")
def both_stacks(tmp_path_factory, machine_interpreters):
    """One smoke run of 2.7 and 3.13 under both io stacks (c, pyio): (results directory,
    manifest, log lines), read by the tests of the pyio axis and of the native ceiling (each
    made a run of its own)."""
    interps = [need(machine_interpreters, "2.7"), need(machine_interpreters, "3.13")]
    results, (manifest, lines) = shared_between_workers(
        tmp_path_factory, "both-stacks",
        lambda results: smoke(interps, results, run_id="P", io_stacks=("c", "pyio")))
    return results, manifest, lines


def test_the_native_ceiling_is_measured_and_shown(both_stacks):
    results, manifest, _ = both_stacks
    assert manifest["native"]["status"] == "ok"
    rows = store.load_series(results / "P" / "native.json")
    assert {r["op"] for r in rows} >= {"read_byBlocks_binaryMode", "write_byBlocks_binaryMode"}
    text = all_pages(analysis.load_run(store.Run(results, "P")))
    assert "## Against the C program with the same call pattern" in text
    assert "share of the native ceiling" not in text
    best = manifest["native"]["best"]
    assert best["ops"]["read_byBlocks_binaryMode"]["block"] == 1 << 20 and not best["errors"]
    assert "### Against the C program's 1 MiB blocks" in text
    # the fastest of the profile's native_repeat calls (2 in a smoke run), and the page says so
    assert best["repeat"] == 2 and "the fastest of 2 calls" in text


def test_a_missing_native_tool_is_reported_and_the_run_goes_on(tmp_path, monkeypatch,
                                                                machine_interpreters):
    interp = need(machine_interpreters, "3.13")
    monkeypatch.setattr(native, "build_tool",
                        lambda work_dir: (None, "no C compiler (cc, gcc or clang) on this machine"))
    manifest, lines = smoke([interp], tmp_path)
    assert manifest["interpreters"]["3.13"]["status"] == "ok"
    assert not (tmp_path / "T" / "native.json").exists()
    assert any("no C compiler" in line for line in lines)
    text = pages.build_report(analysis.load_run(store.Run(tmp_path, "T")))
    assert "Not measured: no C compiler" in text


def test_machine_state_order_and_progress_are_recorded(tmp_path, machine_interpreters):
    interps = [need(machine_interpreters, "2.7"), need(machine_interpreters, "3.13")]
    manifest, lines = smoke(interps, tmp_path, seed=1234)
    for when in ("machine_state_start", "machine_state_end"):
        state = manifest[when]
        assert len(state["load_average"]) == 3 and state["cpu_governor"] and state["affinity"]
    assert manifest["order"]["seed"] == 1234
    assert any("done" in line and "round 1/1: suite lutz2009" in line for line in lines)
    assert any(line.strip() in ("2.7", "3.13") for line in lines)  # which interpreter runs


def test_the_machines_phase_is_probed_in_every_session_and_stated(tmp_path,
                                                                  machine_interpreters,
                                                                  smoke_313):
    interp = need(machine_interpreters, "3.13")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the probe needs a CPU beside the timed one")
    results = copy_of_smoke(smoke_313, tmp_path)    # a first session's run
    first = json.loads((results / "S" / "manifest.json").read_text())
    again, _ = smoke([interp], results, run_id="S")  # a second session of the same run
    files = [session["phase_probe"]["file"] for session in again["sessions"]]
    assert [s["phase_probe"]["status"] for s in again["sessions"]] == ["measured"] * 2
    assert len(set(files)) == 2 and files[0] == first["sessions"][0]["phase_probe"]["file"]
    for name in files:
        assert (results / "S" / name).read_text().startswith(phase.HEADER)
    assert "Machine phase:" in pages.build_report(analysis.load_run(store.Run(results, "S")))


def test_the_same_seed_gives_the_same_order(tmp_path):
    plans = {s: planning.SeriesPlan(s, None, "c", ops=[("lutz2009", "a"), ("textio", "b")])
             for s in ("x", "y", "z")}
    run = store.Run(tmp_path, "O")
    profile = PROFILES["quick"]
    first = [(t.round_index, t.suite, t.series) for t in planning.schedule(run, plans, profile, 7)]
    again = [(t.round_index, t.suite, t.series) for t in planning.schedule(run, plans, profile, 7)]
    other = [(t.round_index, t.suite, t.series) for t in planning.schedule(run, plans, profile, 8)]
    assert first == again and first != other
    # every round visits every series for every suite
    assert len(first) == profile.rounds * 2 * 3


def test_aa_section_reports_the_share_flagged_and_the_geometric_mean(tmp_path):
    from conftest import write_pyperf_file
    run_dir = tmp_path / "AA"
    run_dir.mkdir()
    values = [[0.010 * (1 + 0.01 * ((i * 3) % 5))] for i in range(10)]
    shifted = [[v[0] * 1.001] for v in values[3:] + values[:3]]
    write_pyperf_file(run_dir / "3.13.json", {"read_byLines_textMode": values})
    write_pyperf_file(run_dir / "3.13-aa.json", {"read_byLines_textMode": shifted})
    interp = {"implementation": "cpython", "version_info": [3, 13, 0], "status": "ok"}
    (run_dir / "manifest.json").write_text(json.dumps({
        "run_id": "AA", "interpreters": {"3.13": interp, "3.13-aa": {**interp, "aa_of": "3.13"}}}))
    text = pages.build_report(analysis.load_run(store.Run(tmp_path, "AA")))
    assert "## A/A check: `3.13` against itself" in text
    assert "0 of 1 (0.0%)" in text and re.search(r"\|\s*meets\s*\|", text)


def test_the_pyio_axis_is_a_series_of_its_own(both_stacks):
    results, manifest, _ = both_stacks
    for series in ("2.7", "2.7+pyio", "3.13", "3.13+pyio"):
        assert manifest["interpreters"][series]["status"] == "ok", series
    assert {r["io"] for r in store.load_series(results / "P" / "3.13+pyio.json")} == {"pyio"}
    text = pages.build_report(analysis.load_run(store.Run(results, "P")))
    assert "today, pure-Python io: `3.13+pyio` / `2.7`" in text


def test_skipped_ops_are_recorded_with_their_reason_and_shown(tmp_path, machine_interpreters):
    interp = need(machine_interpreters, "2.7")
    manifest = runner.run_matrix([interp], suites=["copies", "manyfiles"], profile=SMOKE,
                                 results_dir=tmp_path, run_id="S", log=lambda *a: None)
    skipped = manifest["interpreters"]["2.7"]["skipped_ops"]
    assert "copies_os_copy_file_range" in skipped and "manyfiles_write_asyncio_to_thread" in skipped
    text = pages.build_report(analysis.load_run(store.Run(tmp_path, "S")))
    assert "## Skipped ops" in text and "`copies_os_copy_file_range`" in text


def test_each_value_states_its_clock_and_concurrent_ops_use_the_wall_clock(
        tmp_path, machine_interpreters):
    real = need(machine_interpreters, "3.12")
    runner.run_matrix([real], suites=["lutz2009", "manyfiles"], profile=SMOKE,
                      results_dir=tmp_path, run_id="C", work_dir=tmp_path, log=lambda *a: None)
    clocks = {row["op"]: row["clock"] for row in store.load_series(tmp_path / "C" / "3.12.json")}
    assert clocks["read_byLines_textMode"] == "cpu"      # warm cache: nothing waits
    assert clocks["write_byLines_textMode"] == "cpu"     # a new file: nothing waits
    assert {clocks[op] for op in clocks if op.startswith("manyfiles_")} == {"wall"}
    manifest = json.loads((tmp_path / "C" / "manifest.json").read_text())
    assert manifest["clock"] == "auto"
