"""agree.py on small hand-made lockstep runs: figures known by construction, bad input."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import pytest

import agree as agree_command
from iomatrix.commands import agree
from iomatrix.storing import store
from conftest import ROOT, write_pyperf_file

READ, WRITE = "read_byLines_textMode", "write_byLines_textMode"
ROUNDS = 8
VERSIONS = {"3.11": [3, 11, 0], "3.12": [3, 12, 0], "3.13": [3, 13, 0], "3.13-aa": [3, 13, 0]}


def processes(base, factor=1.0, phase=0):
    """One process per round, 3 values each, with a deterministic jitter of about ±2%
    that differs from series to series (``phase``)."""
    return [[base * factor * (1 + 0.02 * (((i + phase) * 7 + j) % 5 - 2) / 2) for j in range(3)]
            for i in range(ROUNDS)]


def make_run(results_dir, run_id, factors=None, labels=("3.11", "3.12", "3.13", "3.13-aa"),
             ops=(READ, WRITE), **manifest_fields):
    """A lockstep run: READ 10 ms and WRITE 100 ms under every label, 3.13 reads 1.5x slower;
    ``factors`` {(label, op): factor} changes more; 3.13-aa is 3.13's A/A twin."""
    factors = {("3.13", READ): 1.5, ("3.13-aa", READ): 1.5, **(factors or {})}
    run_dir = results_dir / run_id
    run_dir.mkdir(parents=True)
    manifest = {"run_id": run_id, "host": "testhost", "profile": "quick", "cache": "warm",
                "allocator": "steady", "clock": "auto", "output": "new", "affinity": "one",
                "suites": ["lutz2009"], "io": ["c"], "started": "2026-01-01T00:00:00+00:00",
                "order": {"method": store.LOCKSTEP_ORDER}, "interpreters": {},
                **manifest_fields}
    for index, label in enumerate(labels):
        write_pyperf_file(run_dir / f"{label}.json", {
            op: processes(0.010 if op == READ else 0.100, factors.get((label, op), 1.0),
                          phase=index) for op in ops})
        manifest["interpreters"][label] = {
            "label": label, "implementation": "cpython", "version_info": VERSIONS[label],
            "version": ".".join(map(str, VERSIONS[label])), "status": "ok",
            **({"aa_of": "3.13"} if label == "3.13-aa" else {})}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def run_main(capsys, *argv):
    status = agree_command.main([str(a) for a in argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_identical_runs_agree_completely(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")   # the same data; a copy of A's directory would be A again
    status, out, err = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0, err
    assert "Same conditions in every run: profile `quick`, allocator `steady`" in out
    assert "over 4 cells × 1 pair of runs, |log(r_i / r_j)|: median 0.000, p90 0.000, " \
           "max 0.000." in out
    assert "the same in every run: 4 of 4 (100%)." in out
    # The one finding: 3.13 reads 1.5x slower than 3.12, in both runs.
    assert "hold in every run: 1; in some runs only: 0." in out
    held = out.split("#### Findings that hold in every run (1)")[1].split("####")[0]
    assert f"`{READ}` | 3.12 → 3.13" in held and "**1.50 [1.48, 1.52] ▲**" in held
    assert "Findings that do not hold in every run (0)" in out
    aa = out.split("#### A/A twins")[1]
    assert aa.count("`3.13-aa` against `3.13` |        0 of 2 |") == 2
    assert "left out" not in out
    twins = agree.agree(["A", "B"], results, 0.05).aa["A"]
    assert [(t.twin, t.of, t.flagged, t.ops) for t in twins] == [("3.13-aa", "3.13", [], 2)]
    assert twins[0].geometric_mean == pytest.approx(1, abs=0.01)


def test_the_figures_of_runs_that_differ_by_construction(tmp_path, capsys):
    """B: 3.13 reads 1.2x slower still (one cell moves by log 1.2), 3.12 writes 0.7x (two
    cells move by |log 0.7|, and both become findings)."""
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B", {("3.13", READ): 1.8, ("3.13-aa", READ): 1.8, ("3.12", WRITE): 0.7})
    result = agree.agree(["A", "B"], results, 0.05)
    moved = {cell: values[0] for cell, values in result.spreads.items()}
    assert moved[agree.Cell(READ, "3.11", "3.12")] == pytest.approx(0, abs=1e-12)
    assert moved[agree.Cell(READ, "3.12", "3.13")] == pytest.approx(math.log(1.2))
    assert moved[agree.Cell(WRITE, "3.11", "3.12")] == pytest.approx(-math.log(0.7))
    assert moved[agree.Cell(WRITE, "3.12", "3.13")] == pytest.approx(-math.log(0.7))
    median, p90, largest = agree.spread_figures(result.pair_values)
    assert median == pytest.approx((math.log(1.2) - math.log(0.7)) / 2)
    assert p90 == largest == pytest.approx(-math.log(0.7))
    most = result.moved_most()
    assert {cell.op for cell in most[:2]} == {WRITE} and most[2] == agree.Cell(READ, "3.12", "3.13")
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0
    assert "median 0.269, p90 0.357, max 0.357." in out
    assert "the same in every run: 2 of 4 (50%)." in out
    # each flipped cell: 1.0 in A, 0.7 or 1/0.7 in B, so exp(|log 0.7| / 2) - 1 from 1
    assert result.distance_from_one(agree.Cell(WRITE, "3.11", "3.12")) == \
        pytest.approx(math.exp(-math.log(0.7) / 2) - 1, abs=0.005)
    assert "hold in every run: 1; in some runs only: 2 (their estimates a median 20% from 1, " \
           "at most 20%)." in out
    somewhere = out.split("do not hold in every run (2)")[1].split("####")[0]
    assert "3.11 → 3.12" in somewhere and "0.70 [0.69, 0.71] ▼" in somewhere
    assert "3.12 → 3.13" in somewhere and "**1.43 [1.41, 1.45] ▲**" in somewhere
    moved_table = out.split("cells that moved most")[1].split("####")[0]
    assert moved_table.count(f"`{WRITE}`") == 2 and "0.357" in moved_table


def test_a_threshold_decides_what_is_a_finding(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B", {("3.12", WRITE): 1.04})   # significant, 4% slower: below 5%
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0 and "the same in every run: 4 of 4 (100%)" in out
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results, "--threshold", "0.01")
    assert status == 0 and "the same in every run: 2 of 4 (50%)" in out


def test_runs_that_differ_compare_what_they_share_and_name_the_rest(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B", labels=("3.12", "3.13"), ops=(READ,), allocator="fresh",
             clock="cpu", order={"method": "interleaved rounds"})
    status, out, err = run_main(capsys, results / "A", results / "B")
    assert status == 0, err
    differ = next(line for line in out.splitlines() if line.startswith("> **Conditions differ"))
    assert "allocator (`steady` → `fresh`)" in differ and "clock (`auto` → `cpu`)" in differ
    assert "rounds (`paired (lockstep)` → `unpaired`)" in differ
    assert "The runs differ in method" in out
    left = next(line for line in out.splitlines() if line.startswith("Compared on what"))
    assert "interpreters not in every run, `A` has `3.11`, `3.13-aa`" in left
    assert f"ops not in every run, `A` has `{WRITE}`" in left
    assert "3 cells of `A` left out (steps 3.11 → 3.12, 3.12 → 3.13; 0 of them findings)" \
        in left
    assert "over 1 cells × 1 pair of runs" in out
    assert "| `B`   | " not in out.split("#### A/A twins")[1]   # B has no twin


def test_a_spec_condition_and_an_interpreter_version_are_differences(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", spec={"conditions": {"allocator": "steady"}})
    make_run(results, "B", spec={"conditions": {"allocator": "default"}})
    manifest = json.loads((results / "B" / "manifest.json").read_text())
    manifest["interpreters"]["3.12"]["version"] = "3.12.1"
    (results / "B" / "manifest.json").write_text(json.dumps(manifest))
    _, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    differ = next(line for line in out.splitlines() if line.startswith("> **Conditions differ"))
    assert "allocator (`steady` → `default`)" in differ
    assert "the interpreter `3.12` (`3.12.0` → `3.12.1`)" in differ


def test_json_has_every_shared_cell_and_is_never_overwritten(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B", {("3.12", WRITE): 0.7})
    out_json = tmp_path / "out" / "agree.json"
    status, _, err = run_main(capsys, "A", "B", "--results-dir", results, "--json", out_json)
    assert status == 0 and "wrote" in err
    data = json.loads(out_json.read_text())
    assert data["cells"] == 4 and len(data["all_cells"]) == 4 and data["same_verdict"] == 2
    assert data["spread"]["max"] == pytest.approx(-math.log(0.7))
    cell = data["findings_somewhere"][0]
    assert cell["runs"]["A"]["verdict"] == "same" and cell["runs"]["B"]["verdict"] != "same"
    assert data["aa"]["A"][0]["twin"] == "3.13-aa" and data["aa"]["A"][0]["ops"] == 2
    before = out_json.read_text()
    status, out, err = run_main(capsys, "A", "B", "--results-dir", results, "--json", out_json)
    assert status == 2 and out == "" and "exists" in err
    assert out_json.read_text() == before
    # A JSON file in a run directory would be read as a series of that run.
    status, _, err = run_main(capsys, "A", "B", "--results-dir", results, "--json",
                              results / "A" / "agree.json")
    assert status == 2 and "is a run directory" in err
    assert not (results / "A" / "agree.json").exists()


def bad_input(tmp_path, capsys, *argv):
    status, out, err = run_main(capsys, *argv)
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_missing_run_exits_2_naming_it(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    err = bad_input(tmp_path, capsys, "A", "nope", "--results-dir", results)
    assert "nope: no such run" in err


def test_one_run_exits_2(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    assert "two or more runs" in bad_input(tmp_path, capsys, "A", "--results-dir", results)


def test_a_run_given_twice_is_compared_once_and_alone_exits_2(tmp_path, capsys):
    """Issue 56: counted once, said in a line; bad input only when one run is left."""
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")
    status, out, err = run_main(capsys, "A", "B", results / "A", "--results-dir", results)
    assert status == 0 and f"agree: {results / 'A'}: the same run as A" in err
    assert "1 pair of runs" in out
    err = bad_input(tmp_path, capsys, "A", results / "A", "--results-dir", results)
    assert f"{results / 'A'}: the same run as A" in err and "two or more different runs" in err


def test_a_directory_without_manifest_and_a_file_are_not_runs(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    (tmp_path / "notes").mkdir()
    err = bad_input(tmp_path, capsys, "A", tmp_path / "notes", "--results-dir", results)
    assert "notes: not a run directory (no manifest.json" in err
    (results / "C").mkdir()
    assert "C: not a run directory" in bad_input(tmp_path, capsys, "A", "C", "--results-dir",
                                                 results)
    stray = tmp_path / "a.json"
    stray.write_text("{}")
    assert "a.json: not a run directory" in bad_input(tmp_path, capsys, "A", stray,
                                                      "--results-dir", results)


@pytest.mark.parametrize("name, content", [
    ("3.12.json", '{"benchmarks": ['),                    # truncated
    ("3.12.json", json.dumps({"tool": "asv"})),           # another tool's JSON
    ("manifest.json", "[1, 2]"),                          # not a manifest
    ("manifest.json", "{"),
])
def test_a_damaged_or_foreign_run_exits_2_and_is_left_alone(tmp_path, capsys, name, content):
    results = tmp_path / "results"
    make_run(results, "A")
    damaged = make_run(results, "B")
    (damaged / name).write_text(content)
    before = {p.name: p.read_bytes() for p in damaged.iterdir()}
    err = bad_input(tmp_path, capsys, "A", "B", "--results-dir", results)
    # the store's own wording says what is wrong; the line names the run and the file
    assert err.startswith("error: run B: ") and name in err
    assert {p.name: p.read_bytes() for p in damaged.iterdir()} == before


def test_runs_without_a_release_step_or_a_shared_cell_exit_2(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "ONE", labels=("3.13",))
    assert "run ONE: no release step" in bad_input(tmp_path, capsys, "A", "ONE",
                                                   "--results-dir", results)
    make_run(results, "EARLY", labels=("3.11", "3.12"), ops=(READ,))
    make_run(results, "LATE", labels=("3.12", "3.13"), ops=(WRITE,))
    err = bad_input(tmp_path, capsys, "EARLY", "LATE", "--results-dir", results)
    assert "share no op at any release step" in err


def test_a_bad_threshold_or_option_exits_2(capsys):
    for argv in (["A", "B", "--threshold", "-1"], ["A", "B", "--bogus"]):
        with pytest.raises(SystemExit) as exc:
            agree_command.main(argv)
        assert exc.value.code == 2
    assert "valid options: --help, --json, --results-dir, --threshold" in capsys.readouterr().err


def test_the_command_line_runs_as_nox_runs_it(tmp_path):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B", {("3.12", WRITE): 0.7})
    env = {**os.environ, "PYTHONPATH": str(ROOT / "scripts")}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "agree.py"), "A", "B",
                           "--results-dir", str(results)], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("### iomatrix agree: `A`, `B`")
    assert "the same in every run: 2 of 4 (50%)" in done.stdout
    failed = subprocess.run([sys.executable, str(ROOT / "scripts" / "agree.py"), "A", "gone",
                             "--results-dir", str(results)], capture_output=True, text=True,
                            env=env, cwd=tmp_path)
    assert failed.returncode == 2 and failed.stdout == ""
    assert failed.stderr.strip().splitlines() == [
        f"error: gone: no such run (looked for the directory gone and the run "
        f"{results / 'gone'})"]
