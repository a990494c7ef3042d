"""The bench, matrix and crosscheck sessions end with cli's exit statuses, not nox's 1 for any
failure: an interpreter that fails is exit 3, never 1, which a CI gate reads as a regression."""
from __future__ import annotations

import json
import os

import pytest

from conftest import run_nox
from iomatrix import cli


@pytest.fixture
def broken_env(tmp_path, machine_interpreters):
    """The environment of a nox call that declares ``broken``: a python that exits 1."""
    if not machine_interpreters:
        pytest.skip("no interpreter on this machine")
    broken = tmp_path / "bin" / "python"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho 'python: broken on purpose' >&2\nexit 1\n")
    broken.chmod(0o755)
    return {**os.environ, "IOMATRIX_PYTHONS": f"broken={broken}"}


def newest_cpython(machine_interpreters) -> str:
    cpythons = [i for i in machine_interpreters.values()
                if i.ok and i.implementation == "cpython" and not i.free_threaded]
    if not cpythons:
        pytest.skip("no CPython on this machine")
    return max(cpythons, key=lambda i: i.version_info).label


def test_a_matrix_with_a_failed_interpreter_exits_3_and_still_reports(tmp_path, broken_env,
                                                                        machine_interpreters):
    good = newest_cpython(machine_interpreters)
    results, out = tmp_path / "results", tmp_path / "report.md"
    proc = run_nox("-s", "matrix", "--", "--pythons", f"{good},broken", "--profile", "smoke",
                   "--suite", "lutz2009", "--allocator", "steady", "--aa", "none",
                   "--results-dir", str(results), "--run-id", "X", "--out", str(out),
                   env=broken_env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == cli.EXIT_INTERNAL_ERROR, output
    assert "not complete: broken (failed)" in output
    manifest = json.loads((results / "X" / "manifest.json").read_text())
    assert manifest["interpreters"][good]["status"] == "ok"
    assert manifest["interpreters"]["broken"]["status"] == "failed"
    text = out.read_text()  # the report ran after the failed session, and names it
    assert "## Failed interpreters and ops" in text and "`broken`" in text


def test_a_bench_session_of_a_failed_interpreter_exits_3(tmp_path, broken_env):
    proc = run_nox("-s", "bench-broken", "--", "--profile", "smoke", "--suite", "lutz2009",
                   "--results-dir", str(tmp_path), "--run-id", "B", env=broken_env)
    assert proc.returncode == cli.EXIT_INTERNAL_ERROR, proc.stdout + proc.stderr
    assert "not complete: broken (failed)" in proc.stdout + proc.stderr


def test_bad_input_stays_exit_2(tmp_path, broken_env):
    proc = run_nox("-s", "matrix", "--", "--pythons", "9.9", "--results-dir", str(tmp_path),
                   env=broken_env)
    assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stdout + proc.stderr


def test_the_crosscheck_session_passes_its_exit_status_on(tmp_path):
    proc = run_nox("-s", "crosscheck", "--", "--run-dir", str(tmp_path / "nope"))
    assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stdout + proc.stderr
    assert "no such run directory" in proc.stderr
