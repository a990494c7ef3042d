"""Exit codes of every command (issue 34, item 5): bad input is 2 with one line, a command
that failed 3, a regression 1 only from a comparison. Also the untouched allocator as the
run's own condition (item 7) and the README's sections that errors cite (item 8)."""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import compare
from conftest import ROOT, need, run_nox, write_pyperf_file
from iomatrix import cli
from iomatrix.measuring import bench
from iomatrix.storing import store


def one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


# -- discovery's errors: exit 2, one line -------------------------------------------

@pytest.mark.parametrize("declared, says", [
    ("../x=/usr/bin/python3", "'../x'"),
    ("a=/usr/bin/python3;a=/usr/bin/python3", "declared twice"),
    ("no-equals-sign", "is not label=/path/to/python"),
])
def test_a_bad_iomatrix_pythons_is_exit_2(declared, says):
    proc = run_nox("-l", env={**os.environ, "IOMATRIX_PYTHONS": declared})
    assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stdout + proc.stderr
    assert says in one_error_line(proc)


def test_a_bad_iomatrix_toml_is_exit_2(tmp_path):
    # A copy of the project whose iomatrix.toml is not TOML: discovery reads the file beside
    # the package it runs from.
    clone = tmp_path / "clone"
    for tree in ("scripts", "suites"):
        shutil.copytree(ROOT / tree, clone / tree, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("noxfile.py", "pyproject.toml"):
        shutil.copy(ROOT / name, clone / name)
    (clone / "iomatrix.toml").write_text("[interpreters\nx = 1\n")
    proc = subprocess.run([sys.executable, "-m", "nox", "-l"], cwd=clone, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stdout + proc.stderr
    assert "iomatrix.toml" in one_error_line(proc)


def test_a_reserved_label_is_refused_before_any_timing(tmp_path, machine_interpreters):
    if not hasattr(cli, "name_problem"):
        pytest.skip("the reserved-name rule (cli.name_problem) is another branch's (names)")
    good = next(iter(machine_interpreters.values())).executable
    for label in ("manifest", "native", "py.counters"):
        proc = run_nox("-s", "matrix", "--", "--profile", "smoke", "--suite", "lutz2009",
                       "--results-dir", str(tmp_path), env={**os.environ,
                                                            "IOMATRIX_PYTHONS": f"{label}={good}"})
        assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stdout + proc.stderr
        assert repr(label) in one_error_line(proc)
    assert list(tmp_path.iterdir()) == []


# -- a results directory that cannot be written, or fills up -------------------------

def newest_cpython(machine_interpreters):
    cpythons = [i for i in machine_interpreters.values()
                if i.ok and i.implementation == "cpython" and not i.free_threaded]
    if not cpythons:
        pytest.skip("no CPython on this machine")
    return max(cpythons, key=lambda i: i.version_info).label


def test_a_results_dir_that_is_a_file_is_exit_2(tmp_path, machine_interpreters):
    label = newest_cpython(machine_interpreters)
    blocker = tmp_path / "results"
    blocker.write_text("a file, not a directory\n")
    proc = run_nox(f"-s", f"bench-{label}", "--", "--profile", "smoke", "--suite", "lutz2009",
                   "--results-dir", str(blocker), "--run-id", "R")
    assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stdout + proc.stderr
    # refused while the options are read (cli.results_dir): argparse's "PROG: error:" line
    last = proc.stderr.strip().splitlines()[-1]
    assert "error: argument --results-dir:" in last and "not a directory" in last, proc.stderr
    assert "Traceback" not in proc.stderr
    assert blocker.read_text() == "a file, not a directory\n"


def test_a_results_dir_it_may_not_write_in_is_exit_2(machine_interpreters):
    # sysfs refuses new files even to root (chmod would not): /sys holds the directory
    # "fs", which as a run directory cannot take the run's lock file.
    if not Path("/sys/fs").is_dir() or os.access("/sys/fs", os.W_OK) and \
            Path("/sys/fs/.lock").exists():
        pytest.skip("no sysfs here")
    label = newest_cpython(machine_interpreters)
    proc = run_nox(f"-s", f"bench-{label}", "--", "--profile", "smoke", "--suite", "lutz2009",
                   "--results-dir", "/sys", "--run-id", "fs")
    assert proc.returncode == cli.EXIT_BAD_INPUT, proc.stdout + proc.stderr
    assert "--results-dir /sys: cannot write in /sys/fs" in one_error_line(proc)


def test_a_full_disk_stops_the_run_with_one_line(tmp_path, machine_interpreters, monkeypatch):
    label = newest_cpython(machine_interpreters)
    written = []

    def full_disk(path, text, overwrite=True):
        written.append(path)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    monkeypatch.setattr(store, "atomic_write_text", full_disk)
    args = bench.parser("nox -s bench --", matrix=False).parse_args(
        ["--profile", "smoke", "--suite", "lutz2009", "--results-dir", str(tmp_path),
         "--run-id", "F"])
    with pytest.raises(bench.BenchError) as raised:
        bench.run_checked(list(machine_interpreters.values()), [label], args, log=lambda _: None)
    assert not isinstance(raised.value, bench.BadBenchInput)   # exit 3, not 2
    message = str(raised.value)
    assert message.startswith("the disk is full (") and "\n" not in message
    assert f"kept in {tmp_path / 'F'}" in message and "--run-id F" in message
    assert written


# -- compare's JSON for any two valid files -----------------------------------------

@pytest.mark.parametrize("a_seconds, b_seconds", [(1e-9, 3600.0), (3600.0, 1e-9)])
def test_compare_json_of_1_ns_against_1_hour(tmp_path, capsys, a_seconds, b_seconds):
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "out.json"
    write_pyperf_file(a, {"read_x": [[a_seconds] * 3] * 6})
    write_pyperf_file(b, {"read_x": [[b_seconds] * 3] * 6})
    status = compare.main([str(a), str(b), "--json", str(out)])
    assert status == (cli.EXIT_REGRESSION if b_seconds > a_seconds else cli.EXIT_OK)
    assert "Traceback" not in capsys.readouterr().err
    ratio = json.loads(out.read_text())["comparisons"][0]["ratio"]
    assert ratio == pytest.approx(b_seconds / a_seconds)


# -- the untouched allocator as the run's own condition (issue 34, item 7) ------------

# Slow (a whole smoke matrix of lutz2009 under 3.12 through nox, about 13 s of CPU): the
# default run checks the same planning of one op per worker under the untouched allocator in
# tests/test_allocator.py (test_the_matrix_times_the_study_again_under_default_one_op_per_process,
# the matrix with the untouched allocator's twins; test_one_op_under_default_runs_alone_and_\
# records_what_it_saw, the worker).
@pytest.mark.slow
def test_allocator_default_alone_times_one_op_per_worker(tmp_path, machine_interpreters):
    # One interpreter: 2.7 and 3.13 as the steady run's twins are checked the same way in
    # tests/test_allocator.py; here the untouched allocator is the run's own condition.
    need(machine_interpreters, "3.12")
    proc = run_nox("-s", "matrix", "--", "--pythons", "3.12", "--suite", "lutz2009",
                   "--allocator", "default", "--profile", "smoke", "--aa", "none",
                   "--no-report", "--results-dir", str(tmp_path), "--run-id", "D")
    assert proc.returncode == cli.EXIT_OK, proc.stdout[-3000:] + proc.stderr[-3000:]
    manifest = json.loads((tmp_path / "D" / "manifest.json").read_text())
    assert manifest["interpreters"]["3.12"]["status"] == "ok"
    assert manifest["allocator"] == "default"
    series = json.loads((tmp_path / "D" / "3.12.json").read_text())
    # One op per worker process: every run says no op was timed before it in its process.
    # (pyperf keeps a value all runs share in the benchmark's metadata)
    key = "iomatrix_earlier_ops"
    earlier = {run.get("metadata", {}).get(key, benchmark["metadata"].get(key))
               for benchmark in series["benchmarks"] for run in benchmark["runs"]}
    assert earlier == {0}, earlier
    assert len(series["benchmarks"]) >= 10


# -- every README section an error cites exists (issue 34, item 8) ---------------------

# README.md: "Heading", README.md, "Heading", README "Heading", the README's "Heading"
CITATION = re.compile(r'README(?:\.md|\'s)?[:,]?\s*\\?"(?P<heading>[^"\\]+)\\?"')


def test_every_cited_readme_section_exists():
    headings = {line.lstrip("#").strip() for line in (ROOT / "README.md").read_text().splitlines()
                if line.startswith("#")}
    cited = {}
    for path in [*ROOT.glob("scripts/**/*.py"), ROOT / "noxfile.py", *ROOT.glob("suites/*.py")]:
        text = path.read_text()
        for match in CITATION.finditer(text):
            cited.setdefault(match["heading"].strip(), []).append(path.name)
    assert "Offline builds from Debian's source tarballs" in cited   # the test finds them
    missing = {heading: files for heading, files in cited.items() if heading not in headings}
    assert not missing, f"cited but not in README.md: {missing}"
