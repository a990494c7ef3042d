"""nox -s crosscheck: the plain timer against the harness, with tiny settings.

Real interpreters and real files; never a timing assertion.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from conftest import ROOT, need, run_nox, shared_between_workers, write_pyperf_file
from iomatrix.commands import crosscheck

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
        assert len(p["wall"]) == len(p["cpu"]) == 2
        assert p["output"] == ("new" if p["op"].startswith("write") else None)


def test_an_existing_run_is_reused(smoke_run, pair, tmp_path, capsys):
    _, result = smoke_run
    status = crosscheck.main(["--pythons", pair, "--run-dir", result["run_dir"], "--calls", "1",
                              "--processes", "1"])
    assert status in (0, 1)
    assert "plain/harness" in capsys.readouterr().out


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
