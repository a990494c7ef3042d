"""nox -s crosscheck: the plain timer against the harness, with tiny settings.

Real interpreters and real files; never a timing assertion.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, need, run_nox, shared_between_workers, write_pyperf_file
from iomatrix.commands import crosscheck
from iomatrix.storing import crosschecks

SUITES = ROOT / "suites"


@pytest.fixture(scope="module")
def pair(machine_interpreters):
    need(machine_interpreters, "2.7")
    need(machine_interpreters, "3.13")
    return "2.7,3.13"


@pytest.fixture(scope="module")
def smoke_run(pair, tmp_path_factory):
    """One crosscheck with a smoke run of the harness: (exit status, JSON, run dir)."""
    def build(tmp):
        out = tmp / "crosscheck.json"
        status = crosscheck.main(["--pythons", pair, "--profile", "smoke", "--calls", "2",
                                  "--processes", "1", "--results-dir", str(tmp / "results"),
                                  "--seed", "1", "--json", str(out)])
        return status, json.loads(out.read_text())
    _, (status, result) = shared_between_workers(tmp_path_factory, "crosscheck", build)
    return status, result


def test_every_lutz2009_op_gets_both_ratios(smoke_run):
    status, result = smoke_run
    assert status in (0, 1)   # 1: some op differs by more than 25%; timings are not asserted
    assert result["labels"] == ["2.7", "3.13"]
    assert len(result["rows"]) == 14
    for row in result["rows"]:
        assert row["plain_ratio"] > 0 and row["harness_ratio"] > 0, row
        assert row["plain_mean_ratio"] > 0 and row["best_over_harness"] > 0, row
        # judged like for like: the plain loop's mean of settled calls against the harness
        assert row["plain_over_harness"] == pytest.approx(
            row["plain_mean_ratio"] / row["harness_ratio"])
    assert sorted(result["differ"]) == sorted(
        r["op"] for r in result["rows"]
        if abs(math.log(r["plain_over_harness"])) > math.log(1.25))


def test_plain_timer_runs_under_the_runs_conditions(smoke_run):
    _, result = smoke_run
    conditions = result["conditions"]
    assert conditions == {"allocator": "steady", "output": "new", "cache": "warm", "clock": "cpu",
                          "affinity": "one", "series": {"2.7": "2.7", "3.13": "3.13"}}
    processes = result["raw"]
    assert len(processes) == 28   # 14 ops x 2 interpreters x 1 process
    assert {p["python"][:3] for p in processes} == {"2.7", "3.1"}
    for p in processes:
        assert p["allocator"] == "steady"
        assert len(p["wall"]) == len(p["cpu"]) == len(p["minflt"]) == len(p["nivcsw"]) == 2
        assert p["warmups"] == 2     # two calls: both are warm-ups by the harness's rule
        assert p["output"] == ("new" if p["op"].startswith("write") else None)


def test_an_existing_run_is_reused(smoke_run, pair, tmp_path, capsys):
    _, result = smoke_run
    status = crosscheck.main(["--pythons", pair, "--run-dir", result["run_dir"], "--calls", "1",
                              "--processes", "1"])
    assert status in (0, 1)
    out = capsys.readouterr().out
    assert "plain/harness" in out and "best/harness" in out
    assert "geometric mean (mean)" in out and "geometric mean (best)" in out
    assert "judged like for like (mean against mean)" in out
    # stored with every call of every process, the statistic of the page beside the best
    stored = crosschecks.read_all(Path(result["run_dir"]))[0][-1]
    assert stored["iomatrix_crosscheck_version"] == 2
    condition = stored["conditions"][0]
    assert len(condition["plain_processes"]) == 28
    assert {len(p["cpu"]) for p in condition["plain_processes"]} == {stored["calls"]}
    assert all(row["plain_mean_seconds"] for row in condition["rows"])


def exit_status(argv) -> int:
    """crosscheck.main's status; argparse's errors exit through SystemExit."""
    try:
        return crosscheck.main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.mark.parametrize("argv, message", [
    (["--pythons", "2.7,9.9"], "unknown interpreter label(s) 9.9; valid labels: "),
    (["--pythons", "2.7"], "takes two different labels"),
    (["--pythons", "2.7,2.7"], "takes two different labels"),
    (["--calls", "0"], "must be at least 1"),
    (["--calls", "500", "--processes", "3"],
     f"at most {crosschecks.MAX_CALLS_PER_OP} per op and interpreter"),
    (["--threshold", "-1"], "a threshold is a fraction"),
    (["--profile", "full"], "unknown profile 'full'; valid: smoke, quick"),
    (["--bogus"], "unknown option(s) --bogus; valid options: "),
])
def test_bad_input_is_exit_2_with_the_valid_choices(pair, argv, message, capsys):
    assert exit_status(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    if "valid labels" in message:
        assert "2.7" in err.split("valid labels:")[1]


def test_a_run_without_both_series_or_stated_conditions_is_refused(pair, tmp_path, capsys):
    run_dir = tmp_path / "R"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(json.dumps({"run_id": "R", "cache": "warm"}))
    (run_dir / "2.7.json").write_text("{}")
    assert crosscheck.main(["--pythons", pair, "--run-dir", str(run_dir)]) == 2
    assert "no series 3.13; the run has: 2.7" in capsys.readouterr().err
    (run_dir / "3.13.json").write_text("{}")
    assert crosscheck.main(["--pythons", pair, "--run-dir", str(run_dir)]) == 2
    assert "does not state its allocator" in capsys.readouterr().err
    assert crosscheck.main(["--pythons", pair, "--run-dir", str(tmp_path / "nope")]) == 2
    assert "no such run directory" in capsys.readouterr().err


def test_plain_timer_verifies_and_refuses_unknown_ops(pair, tmp_path):
    fixtures = tmp_path / "fixtures"
    subprocess.run([sys.executable, str(SUITES / "harness.py"), "--make-fixtures", "lutz2009",
                    "smoke", str(fixtures)], check=True, capture_output=True)
    base = [str(SUITES / "_plain_timer.py"), "--fixtures", str(fixtures),
            "--scratch", str(tmp_path), "--calls", "1"]
    bad = subprocess.run([sys.executable, *base, "--op", "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and "valid ops: read_allAtOnce_binaryMode" in bad.stderr
    (fixtures / "large.txt").write_bytes(b"short\n")   # a changed fixture is never timed
    broken = subprocess.run([sys.executable, *base, "--op", "read_byLines_textMode"],
                            capture_output=True, text=True)
    assert broken.returncode != 0 and "VerificationError" in broken.stderr


def test_nox_lists_the_session():
    proc = run_nox("-l")
    assert "crosscheck" in proc.stdout


def test_a_run_whose_writes_did_not_record_the_output_state_is_refused(pair, tmp_path, capsys):
    """Runs made before lutz2009's writes applied --output-state wrote over old files."""
    run_dir = tmp_path / "OLD"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_text(json.dumps(
        {"run_id": "OLD", "cache": "warm", "allocator": "steady", "output": "new"}))
    for label in ("2.7", "3.13"):
        write_pyperf_file(run_dir / f"{label}.json",
                          {"write_byLines_textMode": [[0.2, 0.2], [0.2, 0.2]]})
    assert crosscheck.main(["--pythons", pair, "--run-dir", str(run_dir)]) == 2
    assert "not made in the stated output state 'new' (recorded: None)" in capsys.readouterr().err


def test_the_plain_loops_warm_ups_are_the_harness_rule():
    """The calls the plain statistic leaves out are the ones the harness would have taken as
    warm-ups under glibc untouched (harness.warm_until_settled), same constants."""
    sys.path.insert(0, str(SUITES))
    import harness
    assert (crosscheck.MIN_WARMUPS, crosscheck.MAX_WARMUPS, crosscheck.SETTLED_WITHIN) == (
        harness.MIN_WARMUPS_DEFAULT_ALLOCATOR, harness.MAX_WARMUPS_DEFAULT_ALLOCATOR,
        harness.SETTLED_WITHIN)
    sequences = [
        [2.1, 1.3, 0.65, 0.46, 0.21, 0.16, 0.14, 0.14, 0.15, 0.14],  # 2.7's text read
        [4.4, 4.0, 4.3, 4.6, 3.9, 4.8],                                # 3.12's: flat, varying
        [0.30, 0.31, 0.65, 0.46, 0.21, 0.16, 0.14, 0.14],              # call 2 not faster
        [1.0] * 20,
        [2.0 ** -i for i in range(20)],                                # never settles: 12
    ]
    for times in sequences:
        calls = iter(times)
        # as measure_in_batch: the first MIN_WARMUPS_DEFAULT_ALLOCATOR calls, then the rule
        first = [(1, next(calls)) for _ in range(harness.MIN_WARMUPS_DEFAULT_ALLOCATOR)]
        warmups = harness.warm_until_settled(first, lambda: next(calls))
        assert crosscheck.settled_from(times) == len(warmups), times
    assert crosscheck.settled_from([1.0]) == 1


def test_the_mean_of_settled_calls_against_the_best_call():
    """On calls that vary (3.12's faulting read) the best call is the lucky one; the mean of
    the settled, unpreempted calls is the typical one, the harness's statistic."""
    clock = {"clock": "cpu"}
    varying = {"cpu": [4.4, 4.0, 4.3, 4.6, 3.9, 4.8, 1.0], "nivcsw": [0, 0, 0, 0, 0, 0, 1]}
    assert crosscheck.best_call(varying, clock) == 3.9
    assert crosscheck.settled_mean(varying, clock) == pytest.approx((4.6 + 3.9 + 4.8) / 3)
    # every settled call preempted: all of them; none settled: the last call
    preempted = {"cpu": [3.0, 3.0, 3.0, 2.0, 4.0], "nivcsw": [0, 0, 0, 1, 1]}
    assert crosscheck.settled_mean(preempted, clock) == 3.0
    assert crosscheck.settled_mean({"cpu": [5.0, 2.0], "nivcsw": [0, 0]}, clock) == 2.0
    row = crosscheck.Row("op", plain={"a": 1.0, "b": 3.9}, harness={"a": 1.0, "b": 4.4},
                         plain_mean={"a": 1.0, "b": 4.4})
    assert row.disagreement("a", "b") == pytest.approx(1.0)
    assert row.best_disagreement("a", "b") == pytest.approx(3.9 / 4.4)
