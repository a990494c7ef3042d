"""The untouched allocator as a condition (issue 28): the worker's checks, the reproducer,
and the report section on constructed data.

Real interpreters and real files; never asserts a timing (faults are counts, and only
their presence in the output is checked, except where glibc's behaviour is the point).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import harness

from iomatrix.interpreters import discovery
from iomatrix.measuring import machine
from iomatrix.storing import contract, store
from iomatrix.reporting.allocator_section import (allocator_section, condition_of, condition_series_name,
                                                  step_changes)
from iomatrix.analysing.analysis import RunData

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "suites" / "harness.py"
PLAIN_TIMER = ROOT / "suites" / "_plain_timer.py"
REPRODUCER = ROOT / "docs" / "allocator_faults.py"
PY27 = str((discovery.pyenv_root() or Path("/nonexistent")) / "versions" / "2.7.18" / "bin" / "python")
OP = "read_allAtOnce_textMode"


def clean_environment(**extra) -> dict:
    """This process's environment without allocator variables, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in contract.allocator_variables(os.environ)}
    env.update(extra)
    return env


def batch(tmp_path, fixtures, ops, *options, env=None):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    output, errors = tmp_path / "out.json", tmp_path / "errors.json"
    proc = subprocess.run(
        [sys.executable, str(HARNESS), "--batch", "--suite", "lutz2009", "--ops", json.dumps(ops),
         "--fixtures", str(fixtures), "--scratch", str(scratch), "--iomatrix-profile", "smoke",
         "--warmups", "1", "--values", "2", "--output", str(output), "--errors", str(errors),
         *options], capture_output=True, text=True, timeout=300,
        env=clean_environment() if env is None else env)
    return proc, output, errors


def op_metadata(document: dict, index: int = 0) -> dict:
    """An op's metadata in a pyperf file: its benchmark's over the file's common metadata."""
    return {**document.get("metadata", {}), **document["benchmarks"][index]["metadata"]}


# -- the worker ----------------------------------------------------------------------

def test_one_op_under_default_runs_alone_and_records_what_it_saw(tmp_path, lutz_fixtures):
    proc, output, errors = batch(tmp_path, lutz_fixtures, [OP], "--allocator", "default")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(errors.read_text()) == {}
    rows = store.load_series(output)
    assert [r["op"] for r in rows] == [OP]
    assert rows[0]["allocator"] == "default"
    assert rows[0]["minflt"] is not None and rows[0]["minflt"] >= 0
    document = json.loads(output.read_text())
    assert op_metadata(document)[contract.KEY_ALLOCATOR_ENV] == "none"
    assert op_metadata(document)[contract.KEY_EARLIER_OPS] == 0
    # asked for one warm-up: three untimed calls at least (map and unmap, the heap's
    # growth, the first call of the settled heap), more while the calls still get faster
    # (harness.warm_until_settled, which compares from call 3 on)
    first = harness.MIN_WARMUPS_DEFAULT_ALLOCATOR
    warmups = [w[1] for w in document["benchmarks"][0]["runs"][0]["warmups"]]
    assert first == 3 and first <= len(warmups) <= harness.MAX_WARMUPS_DEFAULT_ALLOCATOR
    assert warmups == [w[1] for w in harness.warm_until_settled(
        [(1, t) for t in warmups[:first]], iter(warmups[first:]).__next__)]


def test_default_refuses_allocator_variables_from_the_caller(tmp_path, lutz_fixtures):
    env = clean_environment(MALLOC_ARENA_MAX="2")
    proc, output, errors = batch(tmp_path, lutz_fixtures, [OP], "--allocator", "default", env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "MALLOC_ARENA_MAX" in proc.stderr and "--keep-allocator-env" in proc.stderr
    assert not output.exists() and not errors.exists()


def test_kept_allocator_variables_are_recorded(tmp_path, lutz_fixtures):
    env = clean_environment(MALLOC_ARENA_MAX="2")
    proc, output, _ = batch(tmp_path, lutz_fixtures, [OP], "--allocator", "default",
                            "--keep-allocator-env", env=env)
    assert proc.returncode == 0, proc.stderr
    metadata = op_metadata(json.loads(output.read_text()))
    assert metadata[contract.KEY_ALLOCATOR_ENV] == "MALLOC_ARENA_MAX=2"
    assert metadata[contract.KEY_ALLOCATOR] == "default with the caller's MALLOC_ARENA_MAX=2"


def test_steady_records_its_pinned_variables(tmp_path, lutz_fixtures):
    env = clean_environment(**machine.allocator_environment("steady"))
    proc, output, _ = batch(tmp_path, lutz_fixtures, [OP, "read_allAtOnce_binaryMode"],
                            "--allocator", "steady", env=env)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(output.read_text())
    assert "MALLOC_MMAP_THRESHOLD_=33554432" in op_metadata(document)[contract.KEY_ALLOCATOR_ENV]
    earlier = sorted(op_metadata(document, i)[contract.KEY_EARLIER_OPS]
                     for i in range(len(document["benchmarks"])))
    assert earlier == [0, 1]  # a batch under a pinned condition still runs its ops in turn


def test_default_refuses_a_second_op_in_the_same_process(tmp_path, lutz_fixtures):
    proc, output, errors = batch(tmp_path, lutz_fixtures, [OP, "read_allAtOnce_binaryMode"],
                                 "--allocator", "default")
    assert proc.returncode == 2
    assert "one op per worker process" in proc.stderr
    assert not output.exists() and not errors.exists()


def test_unknown_allocator_lists_the_valid_ones(tmp_path, lutz_fixtures):
    proc, output, _ = batch(tmp_path, lutz_fixtures, [OP], "--allocator", "untouched")
    assert proc.returncode == 2
    assert "'default', 'steady', 'fresh'" in proc.stderr
    assert not output.exists()
    with pytest.raises(ValueError, match="valid: default, steady, fresh"):
        machine.allocator_environment("untouched")


def test_plain_timer_refuses_allocator_variables_under_default(tmp_path, lutz_fixtures):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = [sys.executable, str(PLAIN_TIMER), "--op", OP, "--fixtures", str(lutz_fixtures),
               "--scratch", str(scratch), "--calls", "3", "--allocator", "default"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120,
                             env=clean_environment(MIMALLOC_PURGE_DELAY="0"))
    assert refused.returncode == 2 and "MIMALLOC_PURGE_DELAY" in refused.stderr
    ran = subprocess.run(command, capture_output=True, text=True, timeout=120,
                         env=clean_environment())
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert (result["allocator"], result["allocator_env"]) == ("default", "none")
    assert len(result["minflt"]) == 3


def test_allocator_variables_are_found_by_name():
    found = contract.allocator_variables({
        "MALLOC_ARENA_MAX": "2", "MIMALLOC_PURGE_DELAY": "0", "PYTHONMALLOC": "malloc",
        "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1", "HOME": "/home/someone"})
    assert sorted(found) == ["GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MIMALLOC_PURGE_DELAY",
                             "PYTHONMALLOC"]
    assert contract.allocator_variables({"GLIBC_TUNABLES": "glibc.rtld.nns=2"}) == {}
    assert contract.describe_variables({}) == "none"
    assert machine.allocator_environment("default") == {}


# -- the reproducer --------------------------------------------------------------------

def reproducer_rows(python: str, *args: str) -> tuple[list[str], list[list[str]]]:
    proc = subprocess.run([python, str(REPRODUCER), *args], capture_output=True, text=True,
                          timeout=120, env=clean_environment())
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    comments = [line for line in lines if line.startswith("#")]
    table = [line.split() for line in lines if not line.startswith("#")]
    return comments, table


@pytest.mark.parametrize("python", [PY27, sys.executable], ids=["2.7", "3.x"])
def test_reproducer_prints_faults_and_times_per_size_and_mode(python):
    if not os.path.exists(python):
        pytest.skip(f"no {python} here")
    comments, table = reproducer_rows(python, "--size", "4K", "300K", "--calls", "3")
    assert "untouched" in comments[1]
    header, rows = table[0], table[1:]
    assert header == ["size", "mode", "calls", "pages", "faults_1st", "faults_2nd",
                      "faults/call", "ms/call", "cpu_ms/call"]
    assert [(r[0], r[1]) for r in rows] == [("4096", "text"), ("4096", "binary"),
                                            ("307200", "text"), ("307200", "binary")]
    for row in rows:
        assert int(row[3]) == -(-int(row[0]) // 4096)
        assert int(row[4]) >= 0 and int(row[5]) >= 0 and float(row[6]) >= 0
        assert float(row[7]) > 0 and float(row[8]) >= 0


def test_reproducer_names_allocator_variables_and_refuses_bad_input():
    proc = subprocess.run([sys.executable, str(REPRODUCER), "--size", "4K", "--calls", "3"],
                          capture_output=True, text=True, timeout=120,
                          env=clean_environment(MALLOC_TRIM_THRESHOLD_="1073741824"))
    assert proc.returncode == 0 and "MALLOC_TRIM_THRESHOLD_ SET" in proc.stdout
    for bad in (["--size", "12Q"], ["--size", "0"], ["--calls", "2"]):
        proc = subprocess.run([sys.executable, str(REPRODUCER), *bad], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2, bad
        assert "error:" in proc.stderr.strip().splitlines()[-1]


# -- the report section, on constructed data -----------------------------------------

STEADY_MS = {("2.7", OP): 0.15, ("3.13", OP): 0.30,
             ("2.7", "read_allAtOnce_binaryMode"): 0.11, ("3.13", "read_allAtOnce_binaryMode"): 0.19}
DEFAULT_MS = {("2.7", OP): 0.14, ("3.13", OP): 4.0,
              ("2.7", "read_allAtOnce_binaryMode"): 0.11, ("3.13", "read_allAtOnce_binaryMode"): 0.20}
FAULTS = {("3.13", OP, "default"): 1401.0}
ROUNDS = 8


def constructed_run(conditions=("steady", "default")) -> RunData:
    """Two interpreters under both conditions, lockstep rounds, a little noise per round."""
    rows, interpreters = [], {}
    for label, version in (("2.7", [2, 7, 18]), ("3.13", [3, 13, 0])):
        for allocator in conditions:
            # As the runner names them: the run's own condition unsuffixed, a further
            # condition as "<series>@<allocator>" with the series it times again.
            twin = allocator != conditions[0]
            series = condition_series_name(label, allocator) if twin else label
            interpreters[series] = {"series": series, "version_info": version,
                                    "implementation": "cpython", "allocator": allocator,
                                    **({"allocator_of": label} if twin else {})}
            times = DEFAULT_MS if allocator == "default" else STEADY_MS
            for (who, op), ms in times.items():
                if who != label:
                    continue
                for r in range(ROUNDS):
                    mean = ms / 1000 * (1 + 0.01 * ((r * 7) % 5 - 2))
                    rows.append({"series": series, "op": op, "suite": "lutz2009",
                                 "category": "read-text", "bytes": 2935401, "round": r, "io": "c",
                                 "cache": "warm", "profile": "quick", "mean": mean,
                                 "values": [mean], "clock": "cpu", "allocator": allocator,
                                 "output": None,
                                 "minflt": FAULTS.get((label, op, allocator), 0.0)})
    manifest = {"suites": ["lutz2009"], "allocator": "steady", "interpreters": interpreters,
                "order": {"method": store.LOCKSTEP_ORDER, "seed": 1}}
    return RunData(None, manifest, pd.DataFrame(rows), [])


def test_section_lists_the_steps_the_condition_changes_first():
    data = constructed_run()
    steps = step_changes(data)
    assert [(s.op, s.older, s.newer) for s in steps] == [(OP, "2.7", "3.13")]
    assert steps[0].pinned.ratio == pytest.approx(2.0, rel=0.05)
    assert steps[0].untouched.ratio == pytest.approx(4.0 / 0.14, rel=0.05)
    text = allocator_section(data)
    first_table = text.split("### Default against steady")[0]
    assert f"`{OP}` | 2.7 → 3.13" in first_table and "read_allAtOnce_binaryMode" not in first_table
    assert "1,401" in text                       # the faults per call of the default side
    assert text.count("**geometric mean**") == 2
    assert "▲" in text                           # 3.13's text read: significantly slower


def test_section_says_when_a_run_has_pinned_conditions_only():
    text = allocator_section(constructed_run(conditions=("steady",)))
    assert "shows pinned conditions only" in text and "`steady`" in text
    assert "###" not in text


def test_series_conditions_come_from_the_manifest_then_the_name():
    data = constructed_run()
    assert condition_of(data, "3.13@default") == ("3.13", "default")
    data.manifest["interpreters"]["3.13@default"].pop("allocator")
    assert condition_of(data, "3.13@default") == ("3.13", "default")
    assert condition_of(data, "3.13") == ("3.13", "steady")   # a plain name: the run's own


def test_an_analysis_compares_the_untouched_steps_once_for_every_page():
    from iomatrix.analysing import comparisons, conditions
    both = constructed_run()
    twins = both.frame["series"].str.contains("@")
    data = RunData(None, both.manifest, both.frame[~twins].reset_index(drop=True), [],
                   all_conditions=both.frame)
    an = comparisons.analyse(data, None, 0.05)
    steps = an.untouched_steps
    assert steps is an.untouched_steps                 # cached: the findings and data.csv share it
    assert set(steps) == {(OP, "2.7", "3.13"), ("read_allAtOnce_binaryMode", "2.7", "3.13")}
    assert steps[(OP, "2.7", "3.13")].ratio == pytest.approx(4.0 / 0.14, rel=0.05)
    assert steps.keys() == conditions.untouched_steps(data).keys()


# -- the main command: both conditions in one run ----------------------------------------------

def test_the_matrix_times_the_study_again_under_default_one_op_per_process(tmp_path, capsys):
    from conftest import run_nox
    results = tmp_path / "results"
    proc = run_nox("-s", "matrix", "--", "--pythons", "2.7,3.13", "--aa", "none", "--profile",
                   "smoke", "--suite", "lutz2009", "--results-dir", str(results),
                   "--run-id", "R", "--out", str(tmp_path / "reports" / "latest.md"),
                   env=clean_environment())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # before the report, the changelogs step ran in the report's environment (offline here)
    assert "Running session changelog" in proc.stdout + proc.stderr
    assert "iomatrix: changelogs: " in proc.stdout + proc.stderr
    # after the report, the main command's stages (iomatrix.measuring.stages)
    assert "the main command's stages (seconds):" in proc.stdout + proc.stderr
    assert "planned_rounds" in proc.stdout + proc.stderr
    run = store.Run(results, "R")
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["allocator"] == "steady" and manifest["allocator_twins"] == ["default"]
    twin = manifest["interpreters"]["3.13@default"]
    assert (twin["allocator"], twin["allocator_of"], twin["status"]) == ("default", "3.13", "ok")
    rows = store.load_series(run.series_file("3.13@default"))
    assert {r["allocator"] for r in rows} == {"default"} and len(rows) == 14
    assert {r["allocator"] for r in store.load_series(run.series_file("3.13"))} == {"steady"}
    for label in ("2.7@default", "3.13@default"):
        # The untouched allocator times one op per worker process: every run says no op was
        # timed before it in its process (pyperf keeps a value all runs share in the
        # benchmark's metadata).
        series = json.loads(run.series_file(label).read_text())
        earlier = {r.get("metadata", {}).get("iomatrix_earlier_ops",
                                             b["metadata"].get("iomatrix_earlier_ops"))
                   for b in series["benchmarks"] for r in b["runs"]}
        assert earlier == {0}, (label, earlier)
    main = (tmp_path / "reports" / "latest.md").read_text()
    assert "## What an ordinary program sees" in main
    assert "today, glibc untouched" in main
    assert "3.13@default" not in main.split("## Findings")[1].split("## What an ordinary")[0]
    page = (tmp_path / "reports" / "latest" / "allocator.md").read_text()
    assert "### Default against steady, per op and interpreter" in page
    assert "not crosschecked against a plain loop" in main     # issue 42: none stored yet
    # nox -s crosscheck checks the untouched condition too: its plain timer runs under glibc's
    # own allocator against the run's LABEL@default series; a condition the run lacks is refused.
    from iomatrix.commands import crosscheck
    out = tmp_path / "crosscheck.json"
    status = crosscheck.main(["--pythons", "2.7,3.13", "--run-dir", str(run.path), "--allocator",
                              "default", "--calls", "1", "--processes", "1", "--seed", "1",
                              "--json", str(out)])
    assert status in (0, 1)   # 1: an op differs by more than 25%; timings are not asserted
    checked = json.loads(out.read_text())
    assert checked["conditions"]["allocator"] == "default"
    assert checked["conditions"]["series"] == {"2.7": "2.7@default", "3.13": "3.13@default"}
    assert {p["allocator"] for p in checked["raw"]} == {"default"} and len(checked["rows"]) == 14
    assert crosscheck.run_allocators(run.path, ["2.7", "3.13"]) == ["steady", "default"]
    # stored in the run it checked; the main page's allocator section now says how far the
    # harness stands from the plain loop under glibc untouched, op by op (issue 42)
    from iomatrix.analysing import analysis
    from iomatrix.reporting import crosscheck_section
    stored = sorted((run.path / "crosscheck").glob("*.json"))
    assert len(stored) == 1 and stored[0].name.endswith("-2.7-3.13.json")
    text = "\n".join(crosscheck_section.main_page_lines(analysis.load_run(run)))
    assert "`nox -s crosscheck` of " in text and "3.13/2.7 under glibc untouched" in text
    assert text.count("`read_") + text.count("`write_") == 14
    capsys.readouterr()
    assert crosscheck.main(["--pythons", "2.7,3.13", "--run-dir", str(run.path), "--allocator",
                            "fresh"]) == 2
    assert "it holds: steady, default" in capsys.readouterr().err


def test_default_is_refused_with_the_callers_allocator_variables_named(tmp_path):
    from conftest import run_nox
    proc = run_nox("-s", "matrix", "--", "--pythons", "3.13", "--aa", "none", "--profile",
                   "smoke", "--suite", "lutz2009", "--results-dir", str(tmp_path / "results"),
                   "--no-report", env=clean_environment(MALLOC_ARENA_MAX="2"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "MALLOC_ARENA_MAX=2" in proc.stdout + proc.stderr
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    unknown = run_nox("-s", "matrix", "--", "--allocator", "steady,glibc", "--no-report",
                      "--results-dir", str(tmp_path / "results"), env=clean_environment())
    assert unknown.returncode == 2 and "valid: default, steady, fresh" in unknown.stdout + \
        unknown.stderr


REFERENCE_RUN = Path(__file__).resolve().parent.parent / "results" / "20261124T140834Z-vm"


@pytest.mark.skipif(not REFERENCE_RUN.is_dir(), reason="the reference run is not in results/")
def test_the_main_page_shows_the_whole_file_text_reads_steps_under_both_conditions():
    from iomatrix.analysing import analysis
    from iomatrix.reporting import allocator_section as section
    data = analysis.load_run(store.Run(REFERENCE_RUN.parent, REFERENCE_RUN.name))
    text = "\n".join(section.main_page_lines(data)).replace("\xa0", " ")   # nowrap's spaces
    for step in ("2.7 → 3.6", "3.12 → 3.13.15"):
        row = next(line for line in text.splitlines()
                   if "`read_allAtOnce_textMode`" in line and step in line)
        assert row.count("[") == 2 and "→" in row.split("|")[-2]   # both ratios, faults a side


def test_untouched_warm_ups_go_on_while_the_calls_still_get_faster():
    # 2.7's whole-file read in a fresh process under glibc untouched, calls 3 on (issue 42):
    # faster and faster without a page fault, then steady.
    calls = iter([0.65, 0.46, 0.21, 0.16, 0.145, 0.14, 0.14, 0.14])
    warmups = harness.warm_until_settled([(1, 2.1), (1, 1.3)], lambda: next(calls))
    assert [w[1] for w in warmups] == [2.1, 1.3, 0.65, 0.46, 0.21, 0.16, 0.145]
    flat = harness.warm_until_settled([(1, 4.0), (1, 3.9)], lambda: 1 / 0)
    assert len(flat) == 2                                  # settled: no further call
    endless = harness.warm_until_settled([(1, 1.0)], iter(0.5 ** k for k in range(1, 99)).__next__)
    assert len(endless) == harness.MAX_WARMUPS_DEFAULT_ALLOCATOR
