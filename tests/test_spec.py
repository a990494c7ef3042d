"""The run spec and the selection: built and checked once, recorded in the manifest, and a
resume that asks for another spec refused with the differences named."""
from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys

import pytest

from iomatrix import cli
from iomatrix.measuring import bench, planning, runner, selection, spec
from iomatrix.paths import SUITES_DIR
from iomatrix.storing.profiles import PROFILES
from iomatrix.measuring.spec import RunSpec
from conftest import copy_of_smoke, need, run_nox
from test_backbone import STUDY_OPS

SMOKE = PROFILES["smoke"]


def smoke_spec(tmp_path, **options) -> RunSpec:
    return RunSpec.create(**{"suites": "lutz2009", "profile": "smoke",
                             "results_dir": tmp_path / "results", "run_id": "S",
                             "work_dir": tmp_path, **options})


# -- the selection -------------------------------------------------------------------

def test_core_is_the_study_plus_telling_ops_of_every_other_suite():
    core = selection.core_ops()
    assert set(core["lutz2009"]) == set(STUDY_OPS)
    assert set(core) == set(selection.available_suites())  # every suite adds some
    for suite, ops in core.items():
        assert ops and all(why.strip() for why in ops.values()), suite
        if suite != "lutz2009":
            assert 1 <= len(ops) <= 5, f"{suite}: a handful, not {len(ops)}"
    wanted = {"mmapio_slices_seek_read", "chunks_iterate_lines", "copies_copyfileobj_default",
              "manyfiles_read_sequential", "textio_decode_utf8"}
    assert wanted <= {op for ops in core.values() for op in ops}
    suites, ops = selection.resolve("core")
    # core takes the control of each core op that has one (issue 41; tests/test_controls.py)
    controls = selection.declared_controls()
    with_controls = sum(op in controls.get(suite, {}) for suite, chosen in core.items()
                        for op in chosen)
    assert suites == tuple(core) and len(ops) == sum(map(len, core.values())) + with_controls


@pytest.mark.parametrize("suite", selection.available_suites())
def test_each_core_op_is_an_op_of_its_suite_and_its_reason_is_in_the_docstring(suite):
    listed = subprocess.run([sys.executable, str(runner.HARNESS), "--list-ops", suite, "c",
                             "quick"], capture_output=True, text=True, check=True)
    ops = {row["op"] for row in json.loads(listed.stdout)["ops"]}
    docstring = ast.get_docstring(ast.parse((SUITES_DIR / f"{suite}.py").read_text()))
    for op, why in selection.core_ops()[suite].items():
        assert op in ops
        assert f"``{op}``: " in docstring
        # one line per op: the reason as the docstring wraps it
        assert " ".join(why.split()) in " ".join(docstring.split())


def test_the_host_lists_the_suites_the_harness_lists():
    listed = subprocess.run([sys.executable, str(runner.HARNESS), "--list-suites"],
                            capture_output=True, text=True, check=True)
    assert json.loads(listed.stdout)["suites"] == selection.available_suites()


@pytest.mark.parametrize("value, suites, ops", [
    ("lutz2009", ("lutz2009",), None),
    ("all", tuple(selection.available_suites()), None),
    (" mmapio, lutz2009 ,mmapio", ("mmapio", "lutz2009"), None),
])
def test_suite_names_choose_every_op_of_those_suites(value, suites, ops):
    assert selection.resolve(value) == (suites, ops)


@pytest.mark.parametrize("value, message", [
    ("nosuch", "unknown suite(s) 'nosuch'; valid: core, all, chunks, copies"),
    ("", "unknown suite(s) ''; valid: core, all"),
    ("core,mmapio", "'core' and 'all' stand alone"),
    ("all,core", "'core' and 'all' stand alone"),
])
def test_a_bad_selection_lists_the_valid_names(value, message):
    with pytest.raises(selection.SelectionError) as caught:
        selection.resolve(value)
    assert message in str(caught.value) and "\n" not in str(caught.value)


# -- building the spec ---------------------------------------------------------------

def test_the_command_line_becomes_one_spec_with_the_defaults_of_the_main_command(tmp_path):
    args = bench.parser("matrix", matrix=True).parse_args(
        ["--results-dir", str(tmp_path), "--run-id", "R", "--seed", "7"])
    made = RunSpec.from_args(args, interpreters=["2.7", "3.13"], aa="3.13", matrix=True)
    assert made.selection == "core" and made.ops == selection.resolve("core")[1]
    assert made.profile == PROFILES["quick"] and made.seed == 7
    assert made.budget_seconds == PROFILES["quick"].budget_seconds
    assert made.extra_seconds == PROFILES["quick"].extra_seconds > 0
    # a --budget given is the whole budget: no extra seconds beyond it
    given = bench.parser("matrix", matrix=True).parse_args(
        ["--results-dir", str(tmp_path), "--run-id", "R", "--budget", "5"])
    assert RunSpec.from_args(given, interpreters=["2.7"], matrix=True).extra_seconds == 0
    assert made.counting == ("syscalls", "rusage", "instructions")
    # the suites with counting sizes: every suite of the core selection (issue 35)
    assert "lutz2009" in made.counted_suites and "mmapio" in made.counted_suites
    assert set(made.counted_suites) == {s for s in selection.available_suites()
                                        if selection.declared(s, "COUNT_DIVISOR")}
    assert made.aa_twin == "3.13-aa" and made.interpreters == ("2.7", "3.13")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.seed = 8
    # --counters given: every chosen op is counted
    args = bench.parser("matrix", matrix=True).parse_args(
        ["--results-dir", str(tmp_path), "--counters", "syscalls", "--suite", "all"])
    made = RunSpec.from_args(args, matrix=True)
    assert made.counting == ("syscalls",) and made.counted_suites == made.suites
    # a bench session does not count unless asked
    args = bench.parser("bench", matrix=False).parse_args(["--results-dir", str(tmp_path)])
    assert RunSpec.from_args(args).counting == ()


def test_the_manifest_records_the_spec_as_json_scalars_lists_and_conditions(tmp_path):
    recorded = smoke_spec(tmp_path, suites="core", seed=3, aa="3.13",
                          interpreters=["3.13"]).to_manifest()
    assert json.loads(json.dumps(recorded)) == recorded
    for key, value in recorded.items():
        if key == "conditions":
            assert value == {"cache": "warm", "allocator": "steady", "output": "new",
                             "clock": "auto", "affinity": "one"}
        elif isinstance(value, list):
            assert all(isinstance(item, str) for item in value), key
        else:
            assert value is None or isinstance(value, (str, int, float, bool)), key
    assert recorded["selection"] == "core" and recorded["seed"] == 3
    assert "mmapio_slices_seek_read" in recorded["ops"]


@pytest.mark.parametrize("options, message", [
    ({"affinity": "some"}, "unknown affinity 'some'; valid: one, all"),
    ({"clock": "sundial"}, "unknown clock 'sundial'; valid: auto, cpu, wall"),
    ({"io_stacks": ["java"]}, "unknown io stack(s) 'java'"),
    ({"io_stacks": []}, "unknown io stack(s) none"),
    ({"timeout": 0}, "timeout 0: seconds"),
    ({"budget": float("nan")}, "budget nan: seconds"),
    ({"target": 0}, "target 0: a fraction"),
    ({"seed": -1}, "seed -1: a whole number"),
    ({"counting": ("vibes",)}, "unknown counter(s) 'vibes'"),
    ({"run_id": "../x"}, "run id '../x'"),
    ({"profile": "fast"}, "unknown profile 'fast'"),
    ({"suites": "nosuch"}, "unknown suite(s) 'nosuch'"),
])
def test_a_bad_spec_is_one_clear_error(tmp_path, options, message):
    with pytest.raises(spec.SpecError) as caught:
        smoke_spec(tmp_path, **options)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "results").exists()


def test_the_counting_pass_sees_only_the_counted_suites(tmp_path):
    made = smoke_spec(tmp_path, suites="core", counting=("syscalls",),
                      counted_suites=("lutz2009",))
    plan = planning.SeriesPlan("3.13", None, "c",
                               ops=[("lutz2009", "read_byLines_textMode"),
                                    ("mmapio", "mmapio_slices_seek_read")])
    counted = runner.counted_plans(None, {"3.13": plan}, made)
    assert counted["3.13"].ops == [("lutz2009", "read_byLines_textMode")]
    assert plan.ops[1] == ("mmapio", "mmapio_slices_seek_read")  # the plan itself unchanged


# -- resuming ------------------------------------------------------------------------

def test_a_run_resumes_with_what_may_differ_and_records_each_sessions_spec(
        tmp_path, machine_interpreters):
    old, new = need(machine_interpreters, "2.7"), need(machine_interpreters, "3.13")
    first = smoke_spec(tmp_path, seed=1, interpreters=["2.7"])
    runner.run_matrix([old], first, log=lambda *a: None)
    # Another interpreter, seed, timeout, budget and target: the run grows by a series.
    later = smoke_spec(tmp_path, seed=2, interpreters=["3.13"], timeout=300, budget=5,
                       target=0.05, keep_fixtures=False)
    manifest = runner.run_matrix([new], later, log=lambda *a: None)
    assert {e["status"] for e in manifest["interpreters"].values()} == {"ok"}
    assert manifest["spec"] == first.to_manifest()  # the run's spec is its first session's
    assert [s["spec"]["seed"] for s in manifest["sessions"]] == [1, 2]
    assert manifest["sessions"][1]["spec"]["interpreters"] == ["3.13"]


def test_a_resume_with_another_spec_is_refused_naming_each_difference(
        tmp_path, machine_interpreters, smoke_313):
    real = need(machine_interpreters, "3.13")
    copy_of_smoke(smoke_313, tmp_path)     # the run smoke_spec(tmp_path) makes
    manifest_path = tmp_path / "results" / "S" / "manifest.json"
    before = manifest_path.read_bytes()
    with pytest.raises(spec.SpecError) as caught:
        runner.run_matrix([real], smoke_spec(tmp_path, clock="wall", output="overwrite",
                                             profile="quick"), log=lambda *a: None)
    message = str(caught.value)
    for difference in ("profile: 'smoke' -> 'quick'", "conditions.clock: 'auto' -> 'wall'",
                       "conditions.output: 'new' -> 'overwrite'", f"profile rounds: 1 -> {PROFILES['quick'].rounds}"):
        assert difference in message
    assert "\n" not in message and "another --run-id" in message
    assert manifest_path.read_bytes() == before  # nothing of the run is touched
    # An unreadable stored spec is not guessed at (the manifest's schema, or the spec's own
    # check, refuses it: bad input either way).
    manifest = json.loads(before)
    manifest["spec"] = "core"
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(cli.BadInput, match="spec"):
        runner.run_matrix([real], smoke_spec(tmp_path), log=lambda *a: None)
    assert spec.resume_differences(manifest, smoke_spec(tmp_path)) == [
        "spec: unreadable (str) -> 'lutz2009' run"]


def test_a_run_made_before_the_spec_is_checked_by_its_stated_conditions(
        tmp_path, machine_interpreters, smoke_313):
    real = need(machine_interpreters, "3.13")
    copy_of_smoke(smoke_313, tmp_path)     # the run smoke_spec(tmp_path) makes
    manifest_path = tmp_path / "results" / "S" / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    del manifest["spec"]
    for entry in manifest["sessions"]:
        del entry["spec"]
    manifest_path.write_text(json.dumps(manifest))
    with pytest.raises(spec.SpecError, match="affinity: 'one' -> 'all'"):
        runner.run_matrix([real], smoke_spec(tmp_path, affinity="all"), log=lambda *a: None)
    resumed = runner.run_matrix([real], smoke_spec(tmp_path), log=lambda *a: None)
    assert "spec" not in resumed  # an older run does not claim a spec it was not made with
    assert resumed["sessions"][-1]["spec"]["selection"] == "lutz2009"


def test_nox_refuses_a_resume_with_another_spec_with_exit_2(tmp_path, machine_interpreters,
                                                            smoke_313):
    need(machine_interpreters, "3.13")
    # The run `nox -s bench-3.13 -- --profile smoke --suite lutz2009` makes (a bench session
    # exits 0 on such a run: tests/test_backbone.py's smoke_run).
    results = copy_of_smoke(smoke_313, tmp_path)
    common = ["--profile", "smoke", "--suite", "lutz2009", "--results-dir", str(results),
              "--run-id", "S"]
    again = run_nox("-s", "bench-3.13", "--", *common, "--clock", "wall")
    output = again.stdout + again.stderr
    assert again.returncode == 2, output
    assert "error: run S was made with another spec" in output
    assert "conditions.clock: 'auto' -> 'wall'" in output and "Traceback" not in output
