"""The machine's phase: the probe process, its files, and what the report and compare say."""
from __future__ import annotations

import json
import os
import time

import pytest

from iomatrix.analysing import analysis
from iomatrix.measuring import phase
from iomatrix.reporting import pages
from iomatrix.storing import store
from test_compare import processes, make_run, READ, run_main

HEADER = phase.HEADER + "\n"


def samples(loop, copy, n=12, start=1_800_000_000.0):
    return "".join(f"{start + i:.3f}\t{loop * (1 + i % 3 / 10):.7f}\t{copy:.7f}\n"
                   for i in range(n))


def run_with_phase(results, run_id, files: dict | None = None, **manifest_fields):
    """A hand-made run of 3.13 (tests/test_compare.py's make_run) with these phase files,
    {name: text or bytes}."""
    run = make_run(results, run_id, {"3.13": {READ: processes(0.010)}}, **manifest_fields)
    if files:
        (run.path / "phase").mkdir()
        for name, content in files.items():
            path = run.path / "phase" / name
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
    return run


def timed_cpu():
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("the probe needs a CPU beside the timed one")
    return {allowed[-1]}


def test_the_probe_samples_on_a_spare_cpu_until_stopped(tmp_path):
    timed = timed_cpu()
    probe = phase.Probe(tmp_path, "s1", timed, interval=0.05)
    try:
        time.sleep(1.5)
    finally:
        probe.stop()
    assert probe.proc.poll() is not None  # stopped by closing its stdin
    entry = probe.manifest_entry()
    assert entry["status"] == "measured" and entry["cpu"] not in timed
    lines = (tmp_path / entry["file"]).read_text().splitlines()
    assert lines[0] == phase.HEADER and len(lines) > phase.MIN_SAMPLES
    found, problems = phase.read_phase(tmp_path)
    assert problems == [] and found.samples == len(lines) - 1
    assert 0 < found.loop_fastest <= found.loop_median
    assert 0 < found.copy_fastest <= found.copy_median


def test_no_probe_when_every_cpu_times_workers(tmp_path):
    probe = phase.Probe(tmp_path, "s1", None)
    probe.stop()
    assert probe.manifest_entry()["status"].startswith(
        "not measured: the timed workers are not pinned to one CPU (--affinity all")
    assert not (tmp_path / "phase").exists()


def test_a_planted_phase_symlink_is_not_written_through(tmp_path):
    timed_cpu()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "phase").symlink_to(elsewhere)
    probe = phase.Probe(run_dir, "s1", timed_cpu())
    probe.stop()
    assert probe.proc is None and "is not a plain directory" in probe.manifest_entry()["status"]
    assert list(elsewhere.iterdir()) == []
    assert phase.read_phase(run_dir) == (None, [("phase", "not a plain directory; not read")])


def test_an_earlier_sessions_file_is_never_overwritten(tmp_path):
    timed_cpu()
    (tmp_path / "phase").mkdir()
    earlier = tmp_path / "phase" / "s1.tsv"
    earlier.write_text(HEADER + samples(0.002, 0.001))
    probe = phase.Probe(tmp_path, "s1", timed_cpu())
    probe.stop()
    assert probe.proc is None and "cannot create phase/s1.tsv" in probe.manifest_entry()["status"]
    assert earlier.read_text() == HEADER + samples(0.002, 0.001)


def test_damaged_and_foreign_phase_files_are_named_and_skipped(tmp_path):
    directory = tmp_path / "phase"
    directory.mkdir()
    (directory / "a.tsv").write_text(HEADER + samples(0.002, 0.001) + "x\ty\n1\tnan\t1\n1\t-1\t1\n")
    (directory / "b.tsv").write_bytes(b"\xff\xfe not text")
    (directory / "c.tsv").symlink_to("/etc/hostname")
    found, problems = phase.read_phase(tmp_path)
    assert found.samples == 12
    messages = dict(problems)
    assert messages["phase/a.tsv"] == "3 line(s) are not a probe sample; skipped"
    assert "not read" in messages["phase/b.tsv"]
    assert "symbolic link" in messages["phase/c.tsv"]
    assert (directory / "a.tsv").exists() and (directory / "c.tsv").is_symlink()  # left alone


def test_every_session_counts_and_the_fastest_is_a_low_percentile(tmp_path):
    directory = tmp_path / "phase"
    directory.mkdir()
    (directory / "s1.tsv").write_text(HEADER + samples(0.002, 0.001, n=20))
    (directory / "s2.tsv").write_text(HEADER + samples(0.004, 0.002, n=20))
    found, _ = phase.read_phase(tmp_path)
    assert found.samples == 40
    assert found.loop_fastest == pytest.approx(0.002) and found.copy_fastest == pytest.approx(0.001)
    assert found.loop_median > 0.002 and found.copy_slowdown == pytest.approx(1.5)


def test_what_the_report_says_of_the_phase(tmp_path):
    run = make_run(tmp_path, "A", {"3.12": {READ: processes(0.010)},
                                   "3.13": {READ: processes(0.012)}})
    text = pages.build_report(analysis.load_run(run))
    assert "Machine phase: not measured (a run made before the probe)." in text
    (run.path / "phase").mkdir()
    (run.path / "phase" / "s1.tsv").write_text(HEADER + samples(0.002, 0.001) + "junk\n")
    text = pages.build_report(analysis.load_run(run))
    assert "Machine phase: a probe on a CPU that timed no worker ran a fixed Python loop in" in text
    assert "(12 samples)" in text
    assert "`phase/s1.tsv`: 1 line(s) are not a probe sample; skipped" in text
    sessions = [{"phase_probe": {"status": "not measured: every CPU may time a worker "
                                           "(--affinity all)"}}]
    assert phase.describe(None, {"sessions": sessions}) == \
        "Machine phase: not measured: every CPU may time a worker (--affinity all)."


def test_compare_says_when_two_runs_ran_at_different_speeds(tmp_path, capsys):
    results = tmp_path / "results"
    for run_id, loop in (("A", 0.002), ("B", 0.0025)):
        run_with_phase(results, run_id, {"s.tsv": HEADER + samples(loop, 0.001)})
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0
    assert ("> **Machine phase:** The machine ran at another speed in B than in A: the phase "
            "probe's Python loop took 1.25x and its memory copy 1.00x A's time") in out
    (results / "B" / "phase" / "s.tsv").write_text(HEADER + samples(0.00205, 0.001))
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0 and "Machine phase" not in out
    status, out, _ = run_main(capsys, results / "A" / "3.13.json", results / "A" / "3.13.json")
    assert "Machine phase" not in out  # one run: one phase


def test_compare_json_carries_each_sides_phase(tmp_path, capsys):
    results = tmp_path / "results"
    run_with_phase(results, "A")
    run_with_phase(results, "B", {"s.tsv": HEADER + samples(0.002, 0.001)})
    out_json = tmp_path / "compare.json"
    status, _, _ = run_main(capsys, "A", "B", "--results-dir", results, "--json", out_json)
    assert status == 0
    phases = json.loads(out_json.read_text())["machine_phase"]
    assert phases["a"] is None
    assert phases["b"]["samples"] == 12 and phases["b"]["copy_median"] == pytest.approx(0.001)


def test_compare_says_when_a_run_did_not_measure_its_phase(tmp_path, capsys):
    results = tmp_path / "results"
    run_with_phase(results, "A")
    run_with_phase(results, "B", {"s.tsv": HEADER + samples(0.002, 0.001)})
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0 and "The machine's phase was not measured in A:" in out


def test_a_damaged_phase_file_is_named_by_compare_and_blocks_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    run_with_phase(results, "A")
    run = run_with_phase(results, "B", {"s.tsv": b"\xff not a sample"})
    status, out, err = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0, err
    assert "Phase files not read: B `phase/s.tsv`: not read" in out
    assert (run.path / "phase" / "s.tsv").read_bytes() == b"\xff not a sample"


def test_history_lists_each_runs_phase(tmp_path, capsys):
    import history
    results = tmp_path / "results"
    run_with_phase(results, "A")
    run_with_phase(results, "B", {"s.tsv": HEADER + samples(0.002, 0.001), "t.tsv": "garbage\n"},
                   started="2026-01-02T00:00:00+00:00")
    assert history.main(["3.13", "--results-dir", str(results)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines()
            if line.startswith("|") and ("`A`" in line or "`B`" in line)]
    assert "not measured" in rows[0]
    assert "copy 1.00 ms, loop 2.20 ms; 1 phase file(s) not read" in rows[1]
