"""The multi-host workflow: its shape, read with yaml.safe_load (no GitHub needed)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"


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


# Issue 14: the workflow's own supply chain. yaml drops comments, so the pins are read
# from the text; the yaml is used to make sure no `uses:` escaped the text scan.
USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>.*?)\s*$")
PINNED = re.compile(r"^(?P<action>[\w.-]+/[\w./-]+)@(?P<sha>[0-9a-f]{40})"
                    r"\s+#\s*(?P<tag>v\d+(?:\.\d+)*)$")


def uses_lines():
    return [(n, m["ref"]) for n, line in enumerate(WORKFLOW.read_text().splitlines(), 1)
            if (m := USES_LINE.match(line))]


def test_every_action_is_pinned_to_a_commit_sha_with_its_version_tag(workflow):
    found = uses_lines()
    in_yaml = [s["uses"] for job in workflow["jobs"].values() for s in steps_of(job)
               if "uses" in s]
    assert in_yaml and len(found) == len(in_yaml)       # every step's uses: is on a line of its own
    pins = {}
    for n, ref in found:
        m = PINNED.match(ref)
        assert m, (f"matrix.yml:{n}: {ref!r} is not `owner/action@<40-hex sha> # vX.Y.Z`")
        pins.setdefault(m["action"], set()).add((m["sha"], m["tag"]))
    for action, versions in pins.items():               # one action, one pin
        assert len(versions) == 1, f"{action} is pinned to several commits: {sorted(versions)}"


def test_every_checkout_does_not_persist_credentials(workflow):
    checkouts = [s for job in workflow["jobs"].values() for s in steps_of(job)
                 if str(s.get("uses", "")).startswith("actions/checkout@")]
    assert len(checkouts) == 2                          # one per job
    for step in checkouts:
        assert (step.get("with") or {}).get("persist-credentials") is False, step


def zizmor_executable():
    """zizmor's PyPI wheel installs a binary only (no `python -m zizmor`): look on PATH,
    then beside the running interpreter (a venv whose bin/ is not on PATH)."""
    found = shutil.which("zizmor")
    if found:
        return found
    scripts = sysconfig.get_path("scripts")
    return shutil.which("zizmor", path=scripts) if scripts else None


def test_zizmor_finds_nothing_at_medium_severity_or_above():
    zizmor = zizmor_executable()
    if zizmor is None:
        pytest.skip("zizmor is not installed (pip install zizmor; it is in the test extra)")
    command = [zizmor, "--offline", "--min-severity", "medium", ".github/workflows"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, (f"{' '.join(command[1:])} exited {done.returncode}:\n"
                                  f"{done.stdout}\n{done.stderr}")
