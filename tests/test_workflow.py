"""The multi-host workflow: its shape, read with yaml.safe_load (no GitHub needed)."""
from __future__ import annotations

from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

WORKFLOW = Path(__file__).resolve().parent.parent / ".github" / "workflows" / "matrix.yml"


@pytest.fixture(scope="module")
def workflow():
    return yaml.safe_load(WORKFLOW.read_text())


def steps_of(job):
    return job.get("steps", [])


def test_triggers_are_manual_and_scheduled(workflow):
    triggers = workflow.get("on", workflow.get(True))   # YAML 1.1 reads a bare `on` as True
    assert "workflow_dispatch" in triggers and "schedule" in triggers


def test_bench_job_is_a_matrix_over_three_operating_systems(workflow):
    bench = workflow["jobs"]["bench"]
    assert bench["strategy"]["matrix"]["os"] == ["ubuntu-latest", "macos-latest",
                                                 "windows-latest"]
    assert bench["strategy"]["fail-fast"] is False
    assert bench["runs-on"] == "${{ matrix.os }}"


def test_bench_sets_up_every_interpreter_including_free_threaded_and_pypy(workflow):
    setups = [s for s in steps_of(workflow["jobs"]["bench"])
              if str(s.get("uses", "")).startswith("actions/setup-python@")]
    versions = {(s["with"]["python-version"], bool(s["with"].get("freethreaded")))
                for s in setups}
    for version in ("3.9", "3.10", "3.11", "3.12", "3.13", "pypy3.9"):
        assert (version, False) in versions
    assert ("3.13", True) in versions
    run = next(s for s in steps_of(workflow["jobs"]["bench"])
               if "nox -s matrix" in s.get("run", ""))
    declared = run["env"]["IOMATRIX_PYTHONS"]
    labels = run["env"]["LABELS"]
    for s in setups:                       # each interpreter is declared and selected by its id
        assert f"steps.{s['id']}.outputs.python-path" in declared
        if s["id"] != "py312":
            assert f"steps.{s['id']}.outcome" in labels
    assert "--no-report" in run["run"] and "--run-id" in run["run"] and "matrix.os" in run["run"]


def test_each_host_uploads_its_results_under_its_own_name(workflow):
    upload = next(s for s in steps_of(workflow["jobs"]["bench"])
                  if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert "${{ matrix.os }}" in upload["with"]["name"] and upload["with"]["path"] == "results/"
    assert "cancelled()" in upload["if"]        # a failed run still uploads what it has


def test_report_job_needs_bench_and_merges_every_artifact(workflow):
    report = workflow["jobs"]["report"]
    needs = report["needs"]
    assert "bench" in ([needs] if isinstance(needs, str) else needs)
    download = next(s for s in steps_of(report)
                    if str(s.get("uses", "")).startswith("actions/download-artifact@"))
    assert download["with"]["merge-multiple"] is True and download["with"]["path"] == "results"
    run = next(s for s in steps_of(report) if "nox -s report" in s.get("run", ""))
    assert run["run"].count("--run-id") == 3
    upload = next(s for s in steps_of(report)
                  if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
    assert upload["with"]["path"] == "reports/"


def test_every_run_step_uses_nox(workflow):
    runs = [s["run"] for job in workflow["jobs"].values() for s in steps_of(job) if "run" in s]
    assert runs
    for command in runs:
        assert "nox" in command, command
