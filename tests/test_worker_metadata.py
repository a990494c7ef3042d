"""The batch worker's pyperf metadata: collected by pyperf once per interpreter on the host,
written by the worker without importing pyperf, and read back by pyperf.

Real interpreters, real files, real workers (smoke sizes); no timing is asserted.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import harness
import pyperf
import pytest

from iomatrix.measuring import runner

ROOT = Path(__file__).resolve().parent.parent
HARNESS = ROOT / "suites" / "harness.py"
OP = "read_allAtOnce_binaryMode"
# Runs harness.py as __main__ in a process where ``import pyperf`` fails.
WITHOUT_PYPERF = ("import runpy, sys; sys.modules['pyperf'] = None; sys.argv = sys.argv[1:]; "
                  "sys.path.insert(0, sys.argv[0].rsplit('/', 1)[0]); "
                  "runpy.run_path(sys.argv[0], run_name='__main__')")


def batch(tmp_path, fixtures, *options, python=(sys.executable,)):
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    output, errors = tmp_path / "out.json", tmp_path / "errors.json"
    proc = subprocess.run(
        [*python, str(HARNESS), "--batch", "--suite", "lutz2009", "--ops", json.dumps([OP]),
         "--fixtures", str(fixtures), "--scratch", str(scratch), "--iomatrix-profile", "smoke",
         "--allocator", "steady", "--warmups", "1", "--values", "2", "--output", str(output),
         "--errors", str(errors), *options], capture_output=True, text=True, timeout=300)
    return proc, output, errors


def test_the_host_collects_pyperfs_metadata_without_what_belongs_to_one_process():
    # runner.system_metadata's call, with the host's Python (it has pyperf) for an environment's
    collected = runner.run_harness("--system-metadata", cpus={max(os.sched_getaffinity(0))})
    assert collected["perf_version"] == pyperf.__version__
    assert "python_version" in collected and "cpu_count" in collected
    assert not set(collected) & {"date", "mem_max_rss", "load_avg_1min", "uptime", "cpu_affinity"}


def test_a_worker_given_the_metadata_never_imports_pyperf_and_pyperf_reads_its_file(
        tmp_path, lutz_fixtures):
    system = json.loads(subprocess.run([sys.executable, str(HARNESS), "--system-metadata"],
                                       capture_output=True, text=True, check=True,
                                       timeout=120).stdout)
    proc, output, errors = batch(tmp_path, lutz_fixtures, "--system-metadata", json.dumps(system),
                                 python=(sys.executable, "-c", WITHOUT_PYPERF))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(errors.read_text()) == {}
    bench = pyperf.BenchmarkSuite.load(str(output)).get_benchmarks()[0]
    metadata = bench.get_metadata()
    assert bench.get_name() == OP and bench.get_nvalue() == 2
    for key in ("perf_version", "python_version", "hostname", "cpu_count"):
        assert metadata[key] == system[key]
    run_metadata = bench.get_runs()[0].get_metadata()
    assert run_metadata["mem_max_rss"] > 0 and run_metadata["date"]
    assert "load_avg_1min" in run_metadata and "uptime" in run_metadata


def test_without_the_metadata_the_worker_collects_it_with_pyperf(tmp_path, lutz_fixtures):
    proc, output, _ = batch(tmp_path, lutz_fixtures)
    assert proc.returncode == 0, proc.stderr
    metadata = pyperf.BenchmarkSuite.load(str(output)).get_benchmarks()[0].get_metadata()
    assert metadata["perf_version"] == pyperf.__version__ and metadata["mem_max_rss"] > 0


@pytest.mark.parametrize("given", ["{not json", "[1, 2]"])
def test_bad_metadata_is_one_line_and_nothing_is_timed_or_written(tmp_path, lutz_fixtures, given):
    proc, output, errors = batch(tmp_path, lutz_fixtures, "--system-metadata", given)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--system-metadata" in proc.stderr
    assert not output.exists() and not errors.exists()


def test_pyperfs_checks_of_values_hold_without_pyperf():
    harness.check_run([0.5, 1.0], [(1, 0.7)])
    for values, warmups in (([0.0], []), ([-1.0], []), (["1"], []), ([True], []),
                            ([1.0], [(0, 1.0)]), ([1.0], [(1, -1.0)]), ([], [])):
        with pytest.raises(ValueError):
            harness.check_run(values, warmups)
    assert harness.format_cpu_list({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"


def test_a_refused_worker_started_by_hand_refuses_before_it_imports_pyperf(tmp_path, lutz_fixtures):
    # No --system-metadata (a worker started by hand) and a MALLOC_* variable under the untouched
    # allocator: the one-line refusal, not pyperf's import (made to fail here) nor a traceback.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    output = tmp_path / "out.json"
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_PYPERF, str(HARNESS), "--batch", "--suite", "lutz2009",
         "--ops", json.dumps([OP]), "--fixtures", str(lutz_fixtures), "--scratch", str(scratch),
         "--iomatrix-profile", "smoke", "--allocator", "default", "--warmups", "1", "--values",
         "2", "--output", str(output), "--errors", str(tmp_path / "errors.json")],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "MALLOC_ARENA_MAX": "2"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "MALLOC_ARENA_MAX" in proc.stderr
    assert not output.exists()
