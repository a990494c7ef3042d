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
    """Three ways an interpreter fails, in one run: ``broken`` exits 1, ``ghost`` is a declared
    path that is missing, ``notpy`` is not Python. Each is named; the others still run."""
    good = newest_cpython(machine_interpreters)
    env = {**broken_env, "IOMATRIX_PYTHONS": broken_env["IOMATRIX_PYTHONS"]
           + f";ghost={tmp_path}/no/python;notpy=/bin/true"}
    results, out = tmp_path / "results", tmp_path / "report.md"
    proc = run_nox("-s", "matrix", "--", "--pythons", f"{good},broken,ghost,notpy", "--profile",
                   "smoke", "--suite", "lutz2009", "--allocator", "steady", "--aa", "none",
                   "--counters", "off",   # what fails, not what is timed
                   "--results-dir", str(results), "--run-id", "X", "--out", str(out),
                   env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == cli.EXIT_INTERNAL_ERROR, output
    assert "not complete: broken (failed)" in output
    assert f"{tmp_path}/no/python: no such file" in output
    assert "/bin/true: does not behave as Python" in output
    manifest = json.loads((results / "X" / "manifest.json").read_text())
    assert manifest["interpreters"][good]["status"] == "ok"
    assert (results / "X" / f"{good}.json").exists()
    for label in ("broken", "ghost", "notpy"):
        assert manifest["interpreters"][label]["status"] == "failed", label
    assert "no such file" in manifest["interpreters"]["ghost"]["error_tail"]
    text = out.read_text()  # the report ran after the failed session, and names them
    assert "## Failed interpreters and ops" in text
    assert "`broken`" in text and "`ghost`" in text and "no such file" in text


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
