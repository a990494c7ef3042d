"""Sampling where the noise is: extra rounds for loose ops, within the profile's limits."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest

from iomatrix.measuring import planning, runner, sampling
from iomatrix.storing import store
from iomatrix.storing.profiles import PROFILES
from conftest import need


@pytest.mark.parametrize("n, expected", [(5, None), (6, (1, 6)), (10, (2, 9)), (30, (10, 21))])
def test_the_median_interval_is_the_sign_test_one(n, expected):
    values = list(range(1, n + 1))
    assert sampling.median_interval(values) == expected


def test_the_half_width_is_relative_to_the_median_and_inf_without_an_interval():
    assert sampling.own_half_width([1.0] * 4) == math.inf
    assert sampling.own_half_width([1.0] * 10) == 0
    values = [0.9, 0.95, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.05, 1.1]
    assert sampling.own_half_width(values) == pytest.approx(0.05)


def run_27(machine_interpreters, tmp_path, run_id: str, **profile_settings) -> dict:
    """The manifest of a real lutz2009 run of 2.7 under the smoke profile changed by
    ``profile_settings``; ``budget`` and ``target`` go to the run."""
    options = {key: profile_settings.pop(key) for key in ("budget", "target")
               if key in profile_settings}
    profile = dataclasses.replace(PROFILES["smoke"], **profile_settings)
    return runner.run_matrix([need(machine_interpreters, "2.7")], suites=["lutz2009"],
                             profile=profile, results_dir=tmp_path, run_id=run_id,
                             work_dir=tmp_path, log=lambda *a: None, **options)


def test_loose_ops_get_extra_rounds_up_to_the_profiles_maximum(tmp_path, machine_interpreters):
    manifest = run_27(machine_interpreters, tmp_path, "S", rounds=2, max_rounds=3,
                      budget_seconds=600, target=1e-9)
    sampled = manifest["sessions"][-1]["sampling"]
    assert sampled["extra_rounds"] == 1 and sampled["stopped_by"] == "the profile's 3 rounds"
    assert manifest["interpreters"]["2.7"]["status"] == "ok"
    rows = store.load_series(tmp_path / "S" / "2.7.json")
    per_op = {}
    for row in rows:
        per_op[row["op"]] = per_op.get(row["op"], 0) + 1
    assert set(per_op.values()) == {3}
    assert set(sampled["loose_ops"]) == set(per_op)  # 3 processes: still no interval


def test_a_spent_budget_adds_no_round(tmp_path, machine_interpreters):
    manifest = run_27(machine_interpreters, tmp_path, "B", rounds=1, max_rounds=5,
                      budget_seconds=600, budget=0.001)
    sampled = manifest["sessions"][-1]["sampling"]
    assert sampled["extra_rounds"] == 0 and sampled["stopped_by"] == "the time budget"


def test_planned_rounds_that_spend_the_budget_leave_the_extra_seconds(tmp_path,
                                                                       machine_interpreters):
    """A main command of many interpreters on a slow host spends the profile's budget on its
    planned rounds; the extra rounds still get the profile's extra_seconds after them (the
    main commands of 2026-11-25/26 took none and left 68-92 steps borderline)."""
    assert sampling.extra_rounds_deadline(100.0, 500.0, 150.0) == 650.0   # budget spent
    assert sampling.extra_rounds_deadline(900.0, 500.0, 150.0) == 900.0   # budget left
    manifest = run_27(machine_interpreters, tmp_path, "X", rounds=1, max_rounds=2,
                      budget_seconds=0, extra_seconds=600, target=1e-9)
    sampled = manifest["sessions"][-1]["sampling"]
    assert sampled["extra_rounds"] == 1 and sampled["stopped_by"] == "the profile's 2 rounds"
    assert manifest["spec"]["extra_seconds"] == 600


def test_extra_rounds_go_to_the_looser_half_of_the_loose_ops():
    loose = {"short_read": 0.30, "other_read": 0.12, "block_read": 0.05, "big_write": 0.04}
    assert sampling.loosest(loose) == {"short_read", "other_read"}
    assert sampling.loosest({"a": math.inf, "b": math.inf, "c": 0.5}) == {"a", "b"}
    assert sampling.loosest({"only": 0.04}) == {"only"}
    assert sampling.loosest({}) == set()


@pytest.mark.parametrize("target, shown", [(0.015, "±1.5%"), (0.03, "±3%")])
def test_the_report_names_the_target_as_it_was_set(target, shown):
    from iomatrix.reporting import sections
    manifest = {"order": {"method": store.LOCKSTEP_ORDER}, "sessions": [{"sampling": {
        "target": target, "stopped_by": "the time budget", "loose_ops": {"read_x": 0.22}}}]}
    warning, = sections.sampling_warnings(manifest)
    assert f"every ratio within {shown};" in warning and "`read_x` (±22%)" in warning
    # the page says how many extra rounds there were and how many steps stayed borderline:
    # none, where the planned rounds spent the budget
    manifest["sessions"][0]["sampling"].update(extra_rounds=0, borderline_steps=[
        "read_x: 3.12 → 3.13", "read_x: 3.13 → 3.14"])
    warning, = sections.sampling_warnings(manifest)
    assert "stopped by the time budget after 0 extra rounds)" in warning
    assert "2 steps stayed borderline." in warning


def test_a_part_of_one_op_is_read_with_its_metadata_at_the_top(tmp_path):
    """pyperf moves what every benchmark of a file shares to the file's own metadata, so a
    part of one op (a suite with one chosen op, a redo of one op) has its name there."""
    run = store.Run(tmp_path, "P")
    part = run.parts_dir("3.13") / "r000--copies.json"
    part.parent.mkdir(parents=True)
    part.write_text(json.dumps({
        "version": "1.0", "metadata": {"name": "copies_copyfileobj_default", "loops": 1,
                                    "iomatrix_suite": "copies", store.KEY_RUN_ID: "P",
                                    store.KEY_SERIES: "3.13"},
        "benchmarks": [{"runs": [{"metadata": {"date": "2026-01-01"},
                                  "values": [0.02, 0.04]}]}]}))
    assert planning.parts_on_disk(run, "3.13") == {("copies", 0): {"copies_copyfileobj_default"}}
    assert sampling.process_means(run, "3.13") == {"copies_copyfileobj_default": {0: 0.03}}


def test_a_step_is_borderline_when_its_interval_reaches_back_across_the_threshold():
    from iomatrix import stats
    def comparison(ratio, low, high):
        return stats.Comparison(ratio, low, high, None if low is None else (low > 1 or high < 1),
                                8, 8, True)
    assert sampling.is_borderline(comparison(1.08, 1.03, 1.12), 0.05)        # slower, unsure
    assert not sampling.is_borderline(comparison(1.08, 1.06, 1.12), 0.05)    # firmly beyond
    assert not sampling.is_borderline(comparison(1.02, 0.97, 1.08), 0.05)    # within
    assert sampling.is_borderline(comparison(0.90, 0.85, 0.97), 0.05)        # faster, unsure
    assert not sampling.is_borderline(comparison(0.90, 0.85, 0.94), 0.05)
    assert sampling.is_borderline(comparison(1.30, None, None), 0.05)        # no interval yet


def plans_with_rounds(run, times: dict, twins: dict = {}) -> dict:
    """SeriesPlans of lineage releases ({label: {op: per-round values}}) and of A/A twins
    ({twin label: original label}: the same executable), with their parts on disk."""
    from iomatrix.interpreters import discovery
    plans = {}
    for label, ops in times.items():
        original = twins.get(label, label)
        info = {"version_info": [3, int(original[2:]), 0], "implementation": "cpython",
                "recipe": "shared-O3"}
        source = "aa" if label in twins else "pyenv"
        plans[label] = planning.SeriesPlan(
            label, discovery.Interpreter(label, f"/x/{original}", source, info), "c",
            ops=[("lutz2009", op) for op in ops])
        for r in range(6):
            part = run.part_file(label, "lutz2009", r)
            part.parent.mkdir(parents=True, exist_ok=True)
            # stamped as the runner stamps a part it takes in (store.seal_part)
            stamp = {store.KEY_RUN_ID: run.run_id, store.KEY_SERIES: label,
                     "iomatrix_suite": "lutz2009"}
            part.write_text(json.dumps({"version": "1.0", "metadata": stamp, "benchmarks": [
                {"metadata": {"name": op, "loops": 1},
                 "runs": [{"metadata": {}, "values": [values[r]]}]}
                for op, values in ops.items()]}))
    return plans


def test_extra_rounds_go_to_the_ops_of_borderline_release_steps_first(tmp_path):
    """Two lineage releases: one op's step is settled beyond 5%, the other's estimate is
    beyond it with rounds that disagree; only the second gets the extra round."""
    run = store.Run(tmp_path, "B")
    plans = plans_with_rounds(run, {
        "3.12": {"settled": [1.0] * 6, "unsure": [1.0] * 6},
        "3.13": {"settled": [1.2, 1.21, 1.19, 1.2, 1.22, 1.2],
                 "unsure": [1.3, 0.98, 1.25, 1.01, 1.2, 1.15]}})
    assert sampling.borderline_steps(run, plans) == [("unsure", "3.12", "3.13")]
    tasks = sampling.extra_round(run, plans, 6, 0.015, __import__("random").Random(0))
    assert {op for task in tasks for op in task.ops} == {"unsure"}
    assert {task.series for task in tasks} == {"3.12", "3.13"}


def test_a_borderline_step_takes_its_two_series_only_and_the_aa_twin_takes_the_same_rule(
        tmp_path):
    """Three releases and an A/A twin of the newest: the extra round runs "unsure" under
    the two releases of its unsure step only, and "wobbly" under 3.14 and its twin, whose
    A/A step is borderline by the same rule as a release step."""
    run = store.Run(tmp_path, "B")
    unsure = [1.3, 0.98, 1.25, 1.01, 1.2, 1.15]
    plans = plans_with_rounds(run, {
        "3.12": {"unsure": [1.0] * 6, "wobbly": [1.0] * 6},
        "3.13": {"unsure": unsure, "wobbly": [1.0] * 6},
        "3.14": {"unsure": unsure, "wobbly": [1.0] * 6},
        "3.14-aa": {"unsure": unsure, "wobbly": [1.3, 0.98, 1.25, 1.01, 1.2, 1.15]}},
        twins={"3.14-aa": "3.14"})
    assert sampling.aa_steps(plans) == [("3.14", "3.14-aa")]
    assert sampling.borderline_steps(run, plans) == [("unsure", "3.12", "3.13"),
                                                     ("wobbly", "3.14", "3.14-aa")]
    tasks = sampling.extra_round(run, plans, 6, 0.015, __import__("random").Random(0))
    assert sorted((task.series, op) for task in tasks for op in task.ops) == [
        ("3.12", "unsure"), ("3.13", "unsure"), ("3.14", "wobbly"), ("3.14-aa", "wobbly")]
