"""Findings that explain themselves (issue 26): confirmed by counts or time only, firm or
borderline by an interval for the next run, and series that split into modes."""
from __future__ import annotations

import csv
import io
import re
import json
import math
import shutil
import subprocess
import sys

import pytest

from iomatrix import stats
from iomatrix.analysing import analysis, comparisons, counts
from iomatrix.reporting import suite_pages
from iomatrix.storing import store
from conftest import ROOT, write_pyperf_file

RESULTS = ROOT / "results"
TRIO = ["20261123T165527Z-vm", "20261123T170327Z-vm", "20261123T171157Z-vm"]
FIRM_FINDINGS = ROOT / "docs" / "experiments" / "firm_findings.py"
SPLIT_OP = "read_allAtOnce_binaryMode"


def stored(run_id: str) -> store.Run:
    if not (RESULTS / run_id / store.MANIFEST).is_file():
        pytest.skip(f"the published run {run_id} is not in results/")
    return store.Run(RESULTS, run_id)


def kept_runs() -> list[str]:
    """The runs of the published trio still in the tree (results/ keeps 171157Z; git history
    has the other two)."""
    return [r for r in TRIO if (RESULTS / r / store.MANIFEST).is_file()]


@pytest.fixture(scope="module")
def trio():
    """The runs of the published trio in the tree, analysed as the report does."""
    kept = kept_runs()
    if not kept:
        pytest.skip("no run of the published trio is in results/")
    return [comparisons.analyse(analysis.load_run(stored(r)), None, 0.05) for r in kept]


# -- evidence: do the counts move with the timing? ------------------------------------------

def comparison(ratio, low, high):
    return stats.Comparison(ratio, low, high, low > 1 or high < 1, 25, 25, True)


MORE_INSTRUCTIONS = {"up": True, "down": False, "instructions": 0.10, "syscalls": [], "note": None}
FLAT = {"up": False, "down": False, "instructions": 0.001, "syscalls": [], "note": None}


def test_the_evidence_classes_by_hand():
    slower, faster = comparison(1.20, 1.15, 1.25), comparison(0.80, 0.75, 0.85)
    within = comparison(1.02, 1.01, 1.03)
    assert comparisons.evidence_of(slower, 0.05, MORE_INSTRUCTIONS) == "confirmed"
    assert comparisons.evidence_of(faster, 0.05, MORE_INSTRUCTIONS) == "time only"  # other way
    assert comparisons.evidence_of(slower, 0.05, FLAT) == "time only"
    assert comparisons.evidence_of(within, 0.05, MORE_INSTRUCTIONS) == "counts only"
    assert comparisons.evidence_of(within, 0.05, FLAT) is None
    assert comparisons.evidence_of(slower, 0.05, None) is None       # a side without counts


def test_the_counts_of_the_published_runs_move_as_the_issue_says(trio):
    rows = trio[-1].counted
    byline = counts.count_move(rows, "read_byLines_binaryMode", "3.11", "3.12")
    assert byline["up"] and byline["instructions"] == pytest.approx(0.898, abs=0.001)
    # PyPy has no instruction counts: its evidence is its syscalls, and the note says so.
    pypy = counts.count_move(rows, "read_byLines_binaryMode", "3.9", "pypy3.9")
    assert pypy["instructions"] is None
    assert pypy["note"] == "syscalls only: no instruction counts for pypy3.9"
    # A series the counting pass did not count: nothing to say, nothing guessed.
    assert counts.count_move([r for r in rows if r["series"] != "3.12"],
                             "read_byLines_binaryMode", "3.11", "3.12") is None


def test_instruction_noise_is_far_below_the_move_threshold(trio):
    """INSTRUCTIONS_MOVE is 100 times what the A/A twin shows; syscalls are identical."""
    for an in trio:
        for e in counts.aa_exactness(an.counted):
            if e["counter"] == "syscalls":
                assert e["identical"] == e["ops"]
            if e["counter"] == "instructions":
                assert e["max_rel_diff"] < counts.INSTRUCTIONS_MOVE / 100


def test_every_finding_of_the_published_runs_has_a_class(trio):
    for an in trio:
        found = {(f.op, f.a, f.b): f for f in an.findings()}
        assert found and all(f.evidence in ("confirmed", "time only") for f in found.values())
        assert all(f.firmness in comparisons.FIRMNESS for f in found.values())
        assert found[("read_byLines_binaryMode", "3.11", "3.12")].evidence == "confirmed"
        # The whole-file text reads of issue 26: the same counts, slower then faster.
        for step in (("3.7", "3.8"), ("3.8", "3.9")):
            assert found[("read_allAtOnce_textMode", *step)].evidence == "time only"
        counts_only = an.counts_only()
        assert counts_only and all(f.evidence == "counts only" for f in counts_only)
        assert not any(comparisons.is_finding(f.comparison, an.threshold) for f in counts_only)


def test_the_tidy_csv_carries_each_findings_classes(trio):
    """data.csv's release-step rows say what the pages say: evidence, firmness, where the
    next run should land, modes; "counts only" steps their evidence alone."""
    an = trio[-1]
    rows = {(r["op"], r["against"], r["series"]): r
            for r in csv.DictReader(io.StringIO(suite_pages.tidy_csv(an)))
            if r["statistic"] == "ratio_to_previous_release"}
    for f in an.findings():
        row = rows[(f.op, f.a, f.b)]
        assert (row["evidence"], row["firmness"]) == (f.evidence, f.firmness)
        assert float(row["resampled_low"]) == f.next_run[0] and row["modes"] == (f.modes or "")
    for f in an.counts_only():
        assert (rows[(f.op, f.a, f.b)]["evidence"], rows[(f.op, f.a, f.b)]["firmness"]) == \
            ("counts only", "")
    unclassified = set(rows) - {(f.op, f.a, f.b) for f in an.findings() + an.counts_only()}
    assert unclassified and all(rows[k]["evidence"] == "" for k in unclassified)


# -- firm or borderline: an interval for the next run ---------------------------------------

def test_the_next_run_interval_holds_the_estimate_and_is_wider_than_this_runs():
    rng = __import__("random").Random(26)
    diffs = [0.10 + rng.gauss(0, 0.03) for _ in range(25)]
    low, high = stats.next_run_interval(diffs)
    c = stats.compare({r: 1.0 for r in range(25)}, {r: math.exp(d) for r, d in enumerate(diffs)},
                      paired=True)
    assert low < c.ratio < high
    assert high / low > c.high / c.low                  # the next run's noise is in it
    assert stats.next_run_interval(diffs) == (low, high)   # seeded: the same page every time
    shifted = stats.next_run_interval([d + 0.5 for d in diffs])
    assert shifted == pytest.approx((low * math.exp(0.5), high * math.exp(0.5)), rel=1e-9)


def test_too_few_rounds_give_no_next_run_interval():
    assert stats.next_run_interval([0.1, 0.2, 0.1, 0.2, 0.1]) is None


def test_firm_and_borderline_by_hand():
    slower = comparison(1.20, 1.15, 1.25)
    assert comparisons.firmness_of(slower, 0.05, (1.10, 1.30), split=False) == "firm"
    assert comparisons.firmness_of(slower, 0.05, (1.03, 1.30), split=False) == "borderline"
    assert comparisons.firmness_of(slower, 0.05, (1.10, 1.30), split=True) == "borderline"
    faster = comparison(0.80, 0.75, 0.85)
    assert comparisons.firmness_of(faster, 0.05, (0.70, 0.90), split=False) == "firm"
    assert comparisons.firmness_of(faster, 0.05, (0.70, 0.96), split=False) == "borderline"
    assert comparisons.firmness_of(comparison(1.02, 1.01, 1.03), 0.05, (1.0, 1.04), False) is None
    assert comparisons.firmness_of(slower, 0.05, None, split=False) is None


# Two main commands of one boot that results/ carries; the second is the reference run, whose
# report says its firm findings held in the other run of its boot (and the other's in it).
REPLICATED = ["20261126T034702Z-vm", "20261126T040828Z-vm"]


def test_firm_findings_of_the_reference_hold_in_the_other_run_of_its_boot():
    """The experiment script over two stored runs (issue 26's published trio is no longer in
    results/; these are): the issue's target is 95% and none the other way."""
    missing = [r for r in REPLICATED if not (RESULTS / r / store.MANIFEST).is_file()]
    assert not missing, f"results/ no longer carries {missing}: name the runs the reference needs"
    out = subprocess.run([sys.executable, str(FIRM_FINDINGS), *REPLICATED], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    print(out.stdout)
    held, pairs = map(int, out.stdout.split("other run ")[1].split()[0].split("/"))
    assert held / pairs >= 0.95
    assert "in another run): 0\n" in out.stdout
    assert "firm findings from a series split into modes: 0" in out.stdout


def test_the_experiment_names_bad_input_in_one_line(tmp_path):
    out = subprocess.run([sys.executable, str(FIRM_FINDINGS), str(tmp_path), str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2
    assert out.stderr.strip() == f"firm_findings.py: {tmp_path}: not a run directory " \
                                 "(no manifest.json)"
    out = subprocess.run([sys.executable, str(FIRM_FINDINGS), "--threshold", "5", "a", "b"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and "'5' is not a fraction between 0 and 1" in out.stderr


# -- a series that splits into modes ----------------------------------------------------------

# 3.13's whole-file binary reads in the second of issue 26's fresh runs: 6 of its first 10
# processes read the file in 1.3-2.1 ms instead of 0.2-0.3 ms (that run is not stored here).
FAST_MS = [0.21, 0.24, 0.27, 0.29]
SLOW_MS = [1.3, 1.45, 1.6, 1.75, 1.9, 2.1]


def test_the_issues_split_is_found_and_named():
    modes = stats.split_modes([v / 1000 for v in FAST_MS + SLOW_MS])
    assert modes is not None and (modes.processes, modes.slow) == (10, 6)
    assert modes.describe() == "6 of 10 processes 6.6x slower"


def test_modes_close_together_are_named_with_two_decimals():
    """3.13.15's whole-file binary writes in a main command: 3 of 10 processes 5% slower,
    each group within 2%; "1.0x slower" would read as no difference at all."""
    modes = stats.split_modes([53.3, 53.1, 53.4, 54.0, 53.7, 53.8, 54.1, 56.2, 56.8, 56.2])
    assert modes is not None and modes.describe() == "3 of 10 processes 1.05x slower"


def test_one_slow_process_is_no_mode_and_steady_series_do_not_split():
    assert stats.split_modes([0.3] * 9 + [1.42]) is None            # 1 of 10: no second mode
    rng = __import__("random").Random(5)
    for _ in range(200):
        assert stats.split_modes([math.exp(rng.gauss(0, 0.05)) for _ in range(25)]) is None


def test_the_published_runs_3_13_whole_file_reads_do_not_split(trio):
    for an in trio:
        assert an.modes_of("3.13", SPLIT_OP) is None


def make_lockstep_run(results, run_id, slow_ms):
    """A lockstep run of 3.12 and 3.13 reading SPLIT_OP: 3.12 at 0.25 ms, 3.13 in the
    per-round times ``slow_ms``; the counts are the published run's, so evidence has them."""
    run_dir = results / run_id
    run_dir.mkdir(parents=True)
    base = [0.25, 0.24, 0.26, 0.25, 0.27, 0.24, 0.25, 0.26, 0.25, 0.24]
    series = {"3.12": base, "3.13": slow_ms}
    manifest = {"run_id": run_id, "host": "testhost", "profile": "quick", "cache": "warm",
                "suites": ["lutz2009"], "io": ["c"], "started": "2026-01-01T00:00:00+00:00",
                "order": {"method": store.LOCKSTEP_ORDER}, "interpreters": {}}
    for label, per_round in series.items():
        write_pyperf_file(run_dir / f"{label}.json",
                          {SPLIT_OP: [[ms / 1000] * 3 for ms in per_round]})
        minor = int(label.split(".")[1])
        manifest["interpreters"][label] = {"label": label, "implementation": "cpython",
                                           "version_info": [3, minor, 0],
                                           "version": f"3.{minor}.0", "status": "ok"}
        published = store.stored_form(   # plain or compressed, copied as it is stored
            RESULTS / (kept_runs() or TRIO)[0] / f"{label}{store.COUNTERS_SUFFIX}")
        if published.is_file():
            shutil.copy(published, run_dir / published.name)
    (run_dir / store.MANIFEST).write_text(json.dumps(manifest))
    return store.Run(results, run_id)


def test_a_finding_from_a_split_series_says_so_and_is_never_firm(tmp_path):
    # Rounds 1-10 of 3.13: the slow mode mixed in as the issue's run had it.
    split = [0.24, 1.3, 1.45, 0.27, 1.6, 1.75, 0.29, 1.9, 2.1, 0.21]
    an = comparisons.analyse(analysis.load_run(make_lockstep_run(tmp_path, "S", split)), None,
                             0.05)
    (finding,) = an.findings()
    assert (finding.op, finding.a, finding.b) == (SPLIT_OP, "3.12", "3.13")
    assert finding.comparison.ratio > 2 and finding.comparison.significant
    assert finding.modes == "3.13: 6 of 10 processes 6.6x slower"
    assert finding.firmness == "borderline"
    # Its counts (the published run's: instructions -5.4%, the same syscalls) do not move
    # with a slowdown: time only, as issue 26 found for this finding.
    if an.counted:
        assert finding.evidence == "time only"


def test_the_same_slowdown_in_every_round_is_firm_and_unsplit_where_nothing_counted(tmp_path):
    steady = [0.50, 0.49, 0.52, 0.50, 0.51, 0.50, 0.49, 0.52, 0.51, 0.50]
    run = make_lockstep_run(tmp_path, "F", steady)
    for path in store.counters_files(run.path):
        path.unlink()     # a run without the counting pass: firm on its rounds alone
    an = comparisons.analyse(analysis.load_run(run), None, 0.05)
    (finding,) = an.findings()
    assert finding.modes is None and finding.firmness == "firm"
    assert finding.next_run[0] > 1.05


def test_a_time_only_step_is_never_firm_in_a_run_that_counted(tmp_path):
    """The same rounds with the published run's counts, which do not move 3.12 -> 3.13 on
    this op: time only, so borderline however far its rounds lie (comparisons.FIRM_EVIDENCE)."""
    steady = [0.50, 0.49, 0.52, 0.50, 0.51, 0.50, 0.49, 0.52, 0.51, 0.50]
    run = make_lockstep_run(tmp_path, "T", steady)
    if not store.counters_files(run.path):
        pytest.skip("the published run's counters are not in results/")
    an = comparisons.analyse(analysis.load_run(run), None, 0.05)
    (finding,) = an.findings()
    assert finding.evidence == "time only" and finding.firmness == "borderline"
    assert finding.next_run[0] > 1.05


def test_a_run_without_counts_has_no_evidence_and_says_nothing_guessed(tmp_path):
    run = make_lockstep_run(tmp_path, "N", [0.50] * 10)
    for path in store.counters_files(run.path):
        path.unlink()
    an = comparisons.analyse(analysis.load_run(run), None, 0.05)
    (finding,) = an.findings()
    assert finding.evidence is None and finding.note is None and an.counts_only() == []


def test_memory_explains_a_finding_whose_estimated_cycles_move_with_it():
    slower, faster = comparison(1.20, 1.15, 1.25), comparison(0.80, 0.75, 0.85)
    cache_up = {**FLAT, "cycles": 0.15, "cycles_up": True, "cycles_down": False}
    assert comparisons.evidence_of(slower, 0.05, cache_up) == "memory"
    assert comparisons.evidence_of(faster, 0.05, cache_up) == "time only"   # the other way
    assert comparisons.evidence_of(slower, 0.05, {**MORE_INSTRUCTIONS, "cycles_up": True}) \
        == "confirmed"                                  # instructions say it first


def test_estimated_cycles_and_functions_are_read_from_a_counters_file(tmp_path):
    from iomatrix import callgrind
    from iomatrix.storing import countsfile
    cache = {"Dr": 400, "Dw": 100, "I1mr": 20, "D1mr": 50, "D1mw": 30, "ILmr": 10, "DLmr": 10,
             "DLmw": 0}
    documents = {
        "3.11": [["PyEval", "Python/ceval.c", 600], ["memcpy", "string/memmove.S", 300]],
        "3.12": [["PyEval", "Python/ceval.c", 700], ["__tls_get_addr", "elf/tls.S", 900]],
    }
    for series, functions in documents.items():
        instructions = sum(ir for _, _, ir in functions) + 100
        (tmp_path / f"{series}{store.COUNTERS_SUFFIX}").write_text(json.dumps({
            "iomatrix_counters_version": countsfile.FORMAT_VERSION, "series": series,
            "ops": {"op": {"suite": "lutz2009", "calls": 1, "bytes_per_call": 1000,
                           "syscalls": {"read": 3}, "instructions": instructions,
                           "cache": cache, "functions": functions}}}))
    rows = counts.load_counts(tmp_path)
    cycles = {r["series"]: r["per_call"] for r in rows if r["counter"] == "estimated_cycles"}
    assert cycles["3.11"] == callgrind.estimated_cycles(1000, cache)
    move = counts.count_move(rows, "op", "3.11", "3.12")
    assert move["instructions"] == pytest.approx(0.7) and move["cycles"] is not None
    went = counts.where_instructions_went(counts.load_functions(tmp_path), "op", "3.11", "3.12")
    assert [r["name"] for r in went][:2] == ["__tls_get_addr", "memcpy/memmove (libc)"]
    assert went[0]["a"] is None and went[1]["b"] is None   # one-sided, named, never dropped
    assert counts.where_instructions_went({}, "op", "3.11", "3.12") == []


# -- the bytes the system calls move (issue 35 items 4 and 6) ----------------------------

def write_counts(run_dir, read_bytes: dict):
    """Counters files of 3.12 and 3.13 for SPLIT_OP with the same calls and instructions;
    ``read_bytes``: {series: bytes read() moved}, a series left out has no syscall_bytes
    (a file counted before they were)."""
    from iomatrix.storing import countsfile
    for path in store.counters_files(run_dir):
        path.unlink()
    for series in ("3.12", "3.13"):
        op = {"suite": "lutz2009", "calls": 1, "bytes_per_call": 80_000,
              "syscalls": {"read": 1250, "lseek": 1251}, "instructions": 7_700_000}
        if series in read_bytes:
            op["syscall_bytes"] = {"read": read_bytes[series]}
        (run_dir / f"{series}{store.COUNTERS_SUFFIX}").write_text(json.dumps({
            "iomatrix_counters_version": countsfile.FORMAT_VERSION, "series": series,
            "ops": {SPLIT_OP: op}}))


STEADY_SLOWER = [0.95, 0.96, 0.94, 0.95, 0.97, 0.95, 0.96, 0.94, 0.95, 0.96]


def test_the_same_reads_moving_16x_the_bytes_confirm_a_slowdown_and_show_both_throughputs(
        tmp_path):
    """mmapio_slices_seek_read 3.13 -> 3.14 (gh-117151): as many reads, the same
    instructions, each read refilling a 16 times larger buffer. With the bytes counted, the
    step is confirmed, its count cell names them and its throughput is shown both ways."""
    from conftest import all_pages
    from iomatrix.reporting import findings
    run = make_lockstep_run(tmp_path, "B", STEADY_SLOWER)
    write_counts(run.path, {"3.12": 1250 * 8192, "3.13": 1250 * 131072})
    data = analysis.load_run(run)
    an = comparisons.analyse(data, None, 0.05)
    (finding,) = an.findings()
    move = counts.count_move(an.counted, SPLIT_OP, "3.12", "3.13")
    assert move["syscalls"] == [] and move["bytes"] == [("read", 1250 * 8192, 1250 * 131072)]
    assert finding.evidence == "confirmed"
    assert counts.change_of(an.counted, SPLIT_OP, "3.12", "3.13") == \
        "`read` bytes 10 MB → 164 MB"
    nbytes_of = dict(zip(an.data.frame["op"], an.data.frame["bytes"]))
    cell = findings.time_cell(an, finding, nbytes_of).replace("\u00a0", " ")
    # returned: 10^6 bytes in 0.25 ms = 4,000 MB/s; moved: 128 times that (10.24 MB for 80 KB)
    assert "returned 4,000 → " in cell and "moved by system calls<br>512,000 → " in cell
    text = all_pages(data)
    assert "### Throughput of the system calls (MB/s)" in text
    assert "`read` bytes 10 MB → 164 MB" in text
    # data.csv states both throughputs per series and op, from the time_s rows
    rows = {(r["series"], r["statistic"]): float(r["value"])
            for r in csv.DictReader(io.StringIO(suite_pages.tidy_csv(an)))}
    for series, moved_per_returned in (("3.12", 1250 * 8192 / 80_000),
                                       ("3.13", 1250 * 131072 / 80_000)):
        returned = 1_000_000 / rows[(series, "time_s")] / 1e6
        assert rows[(series, "throughput_MBps")] == pytest.approx(returned)
        assert rows[(series, "moved_throughput_MBps")] == pytest.approx(
            returned * moved_per_returned)


def test_a_counters_file_without_bytes_is_read_and_nothing_is_said_of_them(tmp_path):
    from conftest import all_pages
    run = make_lockstep_run(tmp_path, "O", STEADY_SLOWER)
    write_counts(run.path, {"3.13": 1250 * 131072})       # 3.12's file predates the bytes
    data = analysis.load_run(run)
    an = comparisons.analyse(data, None, 0.05)
    (finding,) = an.findings()
    assert counts.count_move(an.counted, SPLIT_OP, "3.12", "3.13")["bytes"] is None
    assert counts.moved_per_returned(an.counted, SPLIT_OP, "3.12") is None
    # nothing guessed: the same calls and instructions, so the step stays time only
    assert finding.evidence == "time only"
    text = all_pages(data)
    assert not re.search(r"`read` bytes [0-9]", text) and "returned 4,000" not in text
    # 3.13 alone has the bytes: its suite page shows what it has, 3.12's column "—"
    assert "### Throughput of the system calls (MB/s)" in text
    statistics = {(r["series"], r["statistic"])
                  for r in csv.DictReader(io.StringIO(suite_pages.tidy_csv(an)))}
    assert ("3.12", "throughput_MBps") in statistics
    assert ("3.12", "moved_throughput_MBps") not in statistics
    assert ("3.13", "moved_throughput_MBps") in statistics


def test_a_row_whose_instructions_were_not_compared_says_so_and_not_no_change():
    """Unchanged system calls with no instructions to compare (PyPy, ``--counters`` without
    instructions) are not "counts: no change"."""
    from iomatrix.reporting.findings import finding_notes
    op = "read_byLines_textMode"
    rows = [{"series": s, "op": op, "suite": "lutz2009", "counter": "syscalls", "per_call": 10,
             "per_MiB": None, "bytes_per_call": 1000, "implementation": "cpython",
             "method": "strace"} for s in ("3.11", "3.12")]
    found = comparisons.Finding(op, "3.11", "3.12",
                                stats.Comparison(1.3, 1.2, 1.4, True, 10, 10, True))
    cell = finding_notes(found, rows).replace("\u00a0", " ")
    assert "system calls: no change" in cell and "instructions not compared" in cell
    assert "counts: no change" not in cell
    both = rows + [{**r, "counter": "instructions", "per_call": 1000, "method": "callgrind"}
                   for r in rows]
    assert "counts: no change" in finding_notes(found, both).replace("\u00a0", " ")
