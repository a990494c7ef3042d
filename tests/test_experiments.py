"""The experiment scripts of docs/experiments still run on what the report writes."""
from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

HEADER = "run_id,series,op,suite,category,statistic,against,value,low,high,significant,processes\n"


def data_csv(path, rows):
    path.write_text(HEADER + "".join(
        f"R,{series},{op},lutz2009,read-text,ratio_to_oldest,2.7,{value},{low},{high},"
        f"{low > 1 or high < 1},10\n" for series, op, value, low, high in rows))
    return path


def test_interval_calibration_prints_the_agreement_of_the_reports_ratios(tmp_path):
    first = data_csv(tmp_path / "a.csv", [("3.13", "read_x", 1.10, 1.05, 1.15),
                                          ("3.13", "read_y", 1.00, 0.98, 1.02)])
    second = data_csv(tmp_path / "b.csv", [("3.13", "read_x", 1.21, 1.16, 1.26),
                                           ("3.13", "read_y", 1.04, 1.01, 1.07)])
    out = subprocess.run([sys.executable, str(ROOT / "docs" / "experiments" /
                                              "interval_calibration.py"), str(first), str(second)],
                         capture_output=True, text=True, check=True).stdout
    assert "run pairs x ratios: 2" in out
    # |log(1.21/1.10)| = 0.095, |log(1.04/1.00)| = 0.039; read_y turned significant
    assert "max 0.095; verdict the same in every run: 1 of 2 (50%)" in out


FLOOR = ROOT / "docs" / "experiments" / "machine_floor.py"


def test_machine_floor_times_fixed_workloads_and_compares_runs(tmp_path):
    for name in ("a.tsv", "b.tsv"):
        subprocess.run([sys.executable, str(FLOOR), "run", str(tmp_path / name), "--seconds", "0.5"],
                       capture_output=True, text=True, check=True)
    out = subprocess.run([sys.executable, str(FLOOR), "compare", str(tmp_path / "a.tsv"),
                          str(tmp_path / "b.tsv")], capture_output=True, text=True, check=True).stdout
    assert "workload pairs: 28, run pairs: 1" in out
    assert "|log(ratio_i/ratio_j)|: median" in out


def test_machine_floor_never_writes_over_a_file_and_names_a_foreign_one(tmp_path):
    kept = tmp_path / "kept.tsv"
    kept.write_text("somebody's data\n")
    run = subprocess.run([sys.executable, str(FLOOR), "run", str(kept), "--seconds", "0.1"],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "exists" in run.stderr
    assert kept.read_text() == "somebody's data\n"
    compare = subprocess.run([sys.executable, str(FLOOR), "compare", str(kept), str(kept)],
                             capture_output=True, text=True)
    assert compare.returncode != 0 and "not a machine-floor file" in compare.stderr


def test_machine_floor_names_a_run_without_a_complete_round(tmp_path):
    subprocess.run([sys.executable, str(FLOOR), "run", str(tmp_path / "a.tsv"), "--seconds", "0.2"],
                   capture_output=True, text=True, check=True)
    header = (tmp_path / "a.tsv").read_text().splitlines()[0]
    stopped = tmp_path / "stopped.tsv"
    stopped.write_text(header + "\n0\tloop\t7\t0.000700000\t1795460000.000\n")
    compare = subprocess.run([sys.executable, str(FLOOR), "compare", str(tmp_path / "a.tsv"),
                              str(stopped)], capture_output=True, text=True)
    assert compare.returncode != 0 and "stopped.tsv: no complete round" in compare.stderr


START_AHEAD = ROOT / "docs" / "experiments" / "start_ahead_interference.py"


def test_start_ahead_interference_times_quiet_and_busy_windows():
    out = subprocess.run([sys.executable, str(START_AHEAD), sys.executable, "--windows", "2",
                          "--seconds", "0.3"], capture_output=True, text=True, cwd=ROOT,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "quiet" in lines[0] and "start-ups" in lines[1]
    assert lines[-1].startswith("with start-ups / quiet window before: median ")


def test_start_ahead_interference_wants_pairs_of_windows():
    out = subprocess.run([sys.executable, str(START_AHEAD), sys.executable, "--windows", "3"],
                         capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2 and "--windows: an even number" in out.stderr


MAIN_SPEED = ROOT / "docs" / "experiments" / "main_speed.py"


def write_series(run, series, rounds, ratio, start=1000.0):
    """A series file of one op: a round r's worker took ``ratio`` x 1 ms, started at
    start + 10 r (the planned rounds end at 8) and each op took 1 s."""
    runs = [{"metadata": {"iomatrix_round": r, "iomatrix_started": start + 10 * r,
                          "iomatrix_finished": start + 10 * r + 1},
             "values": [0.001 * ratio * (1 + 0.01 * ((r * 7) % 5 - 2))]} for r in rounds]
    document = {"version": "1.0", "metadata": {},
                "benchmarks": [{"metadata": {"name": "read_x", "iomatrix_series": series,
                                             "iomatrix_suite": "lutz2009", "loops": 1},
                                "runs": runs}]}
    (run / f"{series}.json").write_text(json.dumps(document))


def test_main_speed_shows_the_gaps_and_what_a_cut_of_the_extra_rounds_says(tmp_path):
    run = tmp_path / "R"
    run.mkdir()
    entry = {"implementation": "cpython", "recipe": "shared-O3", "free_threaded": False}
    manifest = {"profile_settings": {"rounds": 8}, "interpreters": {
        "3.12": {**entry, "version_info": [3, 12, 1], "source": "pyenv", "executable": "/a"},
        "3.13": {**entry, "version_info": [3, 13, 0], "source": "pyenv", "executable": "/b"},
        "3.13-aa": {**entry, "version_info": [3, 13, 0], "source": "aa", "executable": "/b",
                    "aa_of": "3.13"}}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    write_series(run, "3.12", range(12), 1.0)
    write_series(run, "3.13", range(12), 1.2)
    write_series(run, "3.13-aa", range(8), 1.2)
    gaps = subprocess.run([sys.executable, str(MAIN_SPEED), "gaps", str(run)],
                          capture_output=True, text=True, check=True).stdout
    assert "planned rounds: 71.0 s from the first op to the last" in gaps
    assert "extra round 9: +9.0 s to +10.0 s, 2 worker ops" in gaps
    cut = subprocess.run([sys.executable, str(MAIN_SPEED), "cut", str(run), "--at", "0,20"],
                         capture_output=True, text=True, check=True).stdout
    assert "2 cells (1 release steps and 1 A/A twin x ops)" in cut
    assert "extra rounds to the end: 1 findings, A/A 0 of 1 I/O ops flagged" in cut
    assert "extra rounds to +0 s: 1 findings" in cut and "0 reversed" in cut


def test_warm_calls_prints_each_calls_time_faults_and_switches(tmp_path):
    # docs/experiments/warm_calls.py (issue 42): the caches, not glibc, between 2.7's calls
    path = tmp_path / "file.txt"
    path.write_text("a line of text\n" * 1000)
    for between in ("none", "sleep", "evict"):
        out = subprocess.run([sys.executable, str(ROOT / "docs" / "experiments" / "warm_calls.py"),
                              str(path), "3", between], capture_output=True, text=True,
                             check=True).stdout
        rows = json.loads(out)
        assert len(rows) == 3 and all(len(row) == 3 and row[0] >= 0 for row in rows)
