"""The counting pass (iomatrix/measuring/counters.py, suites/_counting.py) with real interpreters,
real strace and valgrind runs on the counting pass's small fixtures, one or two ops each.

Counts are asserted where they are exact by construction (one open and one close per
whole-file read); timings never.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import need, shared_between_workers
from iomatrix import procs
from iomatrix.analysing import counts
from iomatrix.measuring import counters, countsizes, counttools, runner
from iomatrix.reporting import count_csv
from iomatrix.storing import contract, store
from iomatrix.storing.profiles import PROFILES

WHOLE_TEXT = "read_allAtOnce_textMode"
WHOLE_BIN = "read_allAtOnce_binaryMode[large.bin]"
BLOCKS = "read_byBlocks_binaryMode"
CONDITIONS = runner.Conditions()

needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")
needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None or
                                    shutil.which("setarch") is None,
                                    reason="valgrind or setarch not installed")


@pytest.fixture(scope="module")
def fixtures(lutz_count_fixtures):
    return lutz_count_fixtures


@pytest.fixture(scope="module")
def counted_two_ops(tmp_path_factory, fixtures):
    """``counted(interp)``: (run, entry) of interp's every counter of WHOLE_TEXT and BLOCKS,
    counted once per test run (shared_between_workers: valgrind runs of real interpreters
    take seconds each) into a run of its own; the tests of every counter and of the report
    and compare on real counts read the same files."""
    def counted(interp):
        def build(directory):
            _, _, entry = count(directory, interp, [WHOLE_TEXT, BLOCKS], counters.COUNTERS,
                                fixtures)
            return entry
        directory, entry = shared_between_workers(tmp_path_factory,
                                                  f"counted-{interp.label}", build)
        return store.Run(directory / "results", "R"), entry
    return counted


def series_of(interp, ops, label=None):
    info = interp.as_manifest()
    return counters.Series(label or interp.label, info, "c", [("lutz2009", op) for op in ops])


def count(tmp_path, interp, ops, which, fixtures, timeout=120.0, label=None, run_id="R",
          slot=0):
    run = store.Run(tmp_path / "results", run_id)
    run.make_directory()
    series = series_of(interp, ops, label)
    work = tmp_path / "work"
    problems = counttools.tool_problems(which, work)
    entry = counters.count_series(run, series, which, problems, fixtures, work, "smoke",
                                  CONDITIONS, timeout, counttools.methods(which), slot,
                                  log=lambda m: None)
    return run, series, entry


def test_parse_counters():
    assert counters.parse_counters("on") == counters.COUNTERS
    assert counters.parse_counters("off") == ()
    assert counters.parse_counters("instructions,syscalls") == ("syscalls", "instructions")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown counter.*cycles"):
        counters.parse_counters("syscalls,cycles")


def test_counting_fixtures_are_the_timed_size_and_two_smaller_ones(fixtures):
    import lutz2009
    timed, first, second = (json.loads((counters.fixture_dir(fixtures, size) / "fixtures.json")
                                       .read_text()) for size in ("timed", 1, 2))
    assert timed["counting"] is False and first["counting"] is True
    assert timed["files"]["large.txt"]["bytes"] == lutz2009.TEXT_FILE_BYTES
    assert first["files"]["large.txt"]["bytes"] == \
        lutz2009.TEXT_FILE_BYTES // lutz2009.COUNT_DIVISOR
    assert second["count_factor"] == 2 and second["files"]["large.txt"]["bytes"] == \
        lutz2009.TEXT_FILE_BYTES // (2 * lutz2009.COUNT_DIVISOR)


def test_bad_counting_fixtures_kind_is_refused(tmp_path):
    proc = subprocess.run([sys.executable, str(counters.HARNESS), "--make-fixtures", "lutz2009",
                           "smoke", str(tmp_path / "f"), "counting:x"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "counting:K" in proc.stderr
    assert not (tmp_path / "f").exists()


@needs_strace
@needs_valgrind
@pytest.mark.parametrize("label", ["2.7", "3.13", "3.14t"])
def test_every_counter_of_two_ops(machine_interpreters, fixtures, counted_two_ops, label):
    interp = need(machine_interpreters, label)
    run, entry = counted_two_ops(interp)
    assert entry["status"] == "ok", entry
    document = store.read_json(run.counters_file(label))
    assert document["iomatrix_counters_version"] == 1
    whole = document["ops"][WHOLE_TEXT]
    # counted at the timed size, and the file says so for every counter
    assert document["fixtures"] == "timed"
    assert whole["bytes_per_call"] == json.loads(
        (counters.fixture_dir(fixtures, "timed") / "fixtures.json").read_text()
    )["files"]["large.txt"]["bytes"]
    assert set(whole["count_size"]) == set(counters.COUNTERS)
    assert all(basis == {"basis": "timed"} for basis in whole["count_size"].values())
    # one whole-file read: one open, one close, and the markers' getppid() not counted
    assert whole["syscalls"].get("openat", 0) + whole["syscalls"].get("open", 0) == 1
    assert whole["syscalls"]["close"] == 1
    assert "getppid" not in whole["syscalls"]
    assert whole["instructions"] > 0
    assert set(whole["rusage"]) == set(counters.RUSAGE_FIELDS)
    # a 4 KiB block loop over 358 KiB reads in several calls, even with 3.14's 128 KiB buffer
    assert document["ops"][BLOCKS]["syscalls"]["read"] >= 3
    # nothing was written outside the work and results directories' files we know
    assert sorted(p.name for p in run.path.iterdir()) == [f"{label}.counters.json"]


@needs_strace
def test_pypy_counts_syscalls_not_instructions(tmp_path, machine_interpreters, fixtures):
    interp = next((i for i in machine_interpreters.values() if i.implementation == "pypy"), None)
    if interp is None:
        pytest.skip("no PyPy here")
    run, _, entry = count(tmp_path, interp, [WHOLE_TEXT], ("syscalls", "instructions"), fixtures)
    assert "PyPy" in entry["skipped"]["instructions"]
    document = store.read_json(run.counters_file(interp.label))
    assert document["ops"][WHOLE_TEXT]["syscalls"]["close"] == 1
    assert "instructions" not in document["ops"][WHOLE_TEXT]


@needs_strace
def test_aa_twin_counts_identical_syscalls(tmp_path, machine_interpreters, fixtures):
    interp = need(machine_interpreters, "3.13")
    run, _, _ = count(tmp_path, interp, [WHOLE_TEXT, BLOCKS], ("syscalls",), fixtures)
    count(tmp_path, interp, [WHOLE_TEXT, BLOCKS], ("syscalls",), fixtures, label="3.13-aa",
          slot=1)
    a = store.read_json(run.counters_file("3.13"))["ops"]
    b = store.read_json(run.counters_file("3.13-aa"))["ops"]
    assert {op: e["syscalls"] for op, e in a.items()} == {op: e["syscalls"] for op, e in b.items()}


def test_hanging_op_fails_for_counting_only(tmp_path, machine_interpreters, fixtures):
    """A fixture that is a FIFO blocks the op's first read: a real hang, cut by the timeout."""
    interp = need(machine_interpreters, "3.13")
    hanging = tmp_path / "fixtures"
    shutil.copytree(fixtures, hanging)
    os.remove(hanging / "timed" / "large.txt")
    os.mkfifo(hanging / "timed" / "large.txt")
    run, _, entry = count(tmp_path, interp, [WHOLE_TEXT, WHOLE_BIN], ("rusage",), hanging,
                          timeout=5.0)
    assert entry["status"] == "partial"
    assert "timed out after 5 s" in entry["failed_ops"][WHOLE_TEXT]["rusage"]
    document = store.read_json(run.counters_file("3.13"))
    assert "rusage" in document["ops"][WHOLE_BIN]          # the op after it was counted
    assert "rusage" not in document["ops"][WHOLE_TEXT]


def test_resume_keeps_counted_ops(tmp_path, machine_interpreters, fixtures):
    interp = need(machine_interpreters, "3.13")
    run, _, _ = count(tmp_path, interp, [WHOLE_TEXT], ("rusage",), fixtures)
    path = run.counters_file("3.13")
    document = store.read_json(path)
    # A value no real count has: if the op were counted again, it would be gone.
    document["ops"][WHOLE_TEXT]["rusage"]["minflt"] = 123456789
    contract.atomic_write_json(str(path), document)
    _, _, entry = count(tmp_path, interp, [WHOLE_TEXT, WHOLE_BIN], ("rusage",), fixtures)
    assert entry["status"] == "ok"
    document = store.read_json(path)
    assert document["ops"][WHOLE_TEXT]["rusage"]["minflt"] == 123456789
    assert "rusage" in document["ops"][WHOLE_BIN]


def test_a_broken_counters_file_is_kept_aside_and_counted_again(tmp_path, machine_interpreters,
                                                                fixtures):
    interp = need(machine_interpreters, "3.13")
    run = store.Run(tmp_path / "results", "R")
    run.make_directory()
    run.counters_file("3.13").write_text("{not json")
    _, _, entry = count(tmp_path, interp, [WHOLE_TEXT], ("rusage",), fixtures)
    assert entry["status"] == "ok"
    assert "rusage" in store.read_json(run.counters_file("3.13"))["ops"][WHOLE_TEXT]
    kept = list(run.path.glob(".3.13.counters.json.damaged-*"))  # nothing lost, never read
    assert len(kept) == 1 and kept[0].read_text() == "{not json"
    assert counts.unreadable_files(run.path) == []


def test_tools_missing_from_path(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    problems = counttools.tool_problems(counters.COUNTERS, tmp_path / "work",
                                      environ={**os.environ, "PATH": str(empty)})
    assert "strace is not installed" in problems["syscalls"]
    assert "valgrind is not installed" in problems["instructions"]
    assert "rusage" not in problems


@needs_strace
def test_matrix_without_strace_skips_syscalls_and_times(tmp_path, machine_interpreters,
                                                        monkeypatch):
    """PATH without strace: the run's timing completes, syscalls are skipped with why."""
    interp = need(machine_interpreters, "3.13")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = bin_dir / name
            if name != "strace" and not os.path.lexists(target):
                target.symlink_to(os.path.join(directory, name))
    monkeypatch.setenv("PATH", str(bin_dir))
    (tmp_path / "work").mkdir()
    manifest = runner.run_matrix([interp], suites=["lutz2009"], profile=PROFILES["smoke"],
                                 results_dir=tmp_path / "results", run_id="R",
                                 work_dir=tmp_path / "work", counting=("syscalls", "rusage"),
                                 log=lambda m: None)
    entry = manifest["interpreters"]["3.13"]
    assert entry["status"] == "ok"
    assert "strace is not installed" in entry["counters"]["skipped"]["syscalls"]
    assert entry["counters"]["counters"] == ["rusage"]
    run = store.Run(tmp_path / "results", "R")
    assert run.series_file("3.13").exists() and run.counters_file("3.13").exists()
    assert "strace is not installed" in counts.skipped_counts(run.path)["3.13"]["syscalls"]
    assert not list((tmp_path / "work").iterdir())    # the work dir went with the run


@needs_strace
@needs_valgrind
def test_report_and_compare_on_real_counts(tmp_path, machine_interpreters, counted_two_ops):
    old, new = need(machine_interpreters, "2.7"), need(machine_interpreters, "3.13")
    run = store.Run(tmp_path / "results", "R")   # one run of both interpreters' counts
    run.make_directory()
    for interp in (old, new):
        shutil.copy(counted_two_ops(interp)[0].counters_file(interp.label), run.path)
    rows = [r for r in counts.load_counts(run.path) if r["series"] in ("2.7", "3.13")]
    assert {r["series"] for r in rows} == {"2.7", "3.13"}
    assert all(r["per_MiB"] > 0 for r in rows if r["counter"] == "instructions")
    found = counts.steps(rows)
    assert found and found[0]["before"] == "2.7" and found[0]["after"] == "3.13"
    text = "\n".join(counts.markdown_section(rows))
    assert "### Biggest changes between versions" in text
    assert "calls per call:" in text
    # 3.x's io stack runs more instructions per whole-file text read than 2.7's stdio:
    # the gate fails on it, and not the other way round
    result, fails = counts.compare_counts(run.series_file("2.7"), run.series_file("3.13"), 0.05)
    assert fails and any(r["op"] == WHOLE_TEXT and r["counter"] == "instructions" and r["fails"]
                         for r in result)
    _, fails_back = counts.compare_counts(run.counters_file("3.13"), run.counters_file("2.7"),
                                            10.0)
    assert not fails_back
    assert "### Counts" in "\n".join(counts.compare_markdown(result, 0.05))
    # a side without counts: nothing to compare, nothing fails
    assert counts.compare_counts(tmp_path / "nowhere.json", run.series_file("2.7"), 0.05) \
        == ([], False)


def test_markdown_without_counts_says_why():
    lines = counts.markdown_section([], {"3.13": {"syscalls": "strace is not installed"}})
    assert any("strace is not installed" in line for line in lines)


def test_every_core_suite_has_counting_sizes():
    """--counters on counts every core op: each core suite declares COUNT_DIVISOR (the main
    command's counted suites, spec.RunSpec.from_args) and its fixtures take ``counting``."""
    import inspect
    from iomatrix.measuring import selection
    for suite in selection.core_ops():
        assert isinstance(selection.declared(suite, "COUNT_DIVISOR"), int), suite
        module = __import__(suite)
        assert "counting" in inspect.signature(module.fixtures).parameters, suite


@needs_strace
@needs_valgrind
def test_core_ops_of_other_suites_are_counted_with_their_threads(tmp_path, machine_interpreters):
    interp = need(machine_interpreters, "3.12")
    fixtures = tmp_path / "fixtures"
    counters.make_fixtures(["manyfiles", "mmapio"], "smoke", fixtures)
    run = store.Run(tmp_path / "results", "R")
    run.make_directory()
    series = counters.Series("3.12", interp.as_manifest(), "c",
                             [("manyfiles", "manyfiles_read_threads"),
                              ("mmapio", "mmapio_find_mmap")])
    which = ("syscalls", "instructions")
    work = tmp_path / "work"
    entry = counters.count_series(run, series, which, counttools.tool_problems(which, work),
                                  fixtures, work, "smoke", CONDITIONS, 300.0,
                                  counttools.methods(which), log=lambda m: None)
    assert entry["status"] == "ok", entry
    ops = counters.read_document(run.counters_file("3.12"))["ops"]
    threads = ops["manyfiles_read_threads"]
    # every file opened once, by the threads: strace -f sees them
    assert threads["syscalls"].get("openat", 0) >= 50 // 4
    assert threads["instructions"] > 0
    assert ops["mmapio_find_mmap"]["instructions"] > 0


def test_resume_counts_again_what_another_method_counted(tmp_path, machine_interpreters,
                                                         fixtures):
    """A file counted by an older method (the switch without a fresh frame, issue 35) is
    counted again when its run is resumed, not mixed with the new method's counts."""
    interp = need(machine_interpreters, "3.13")
    run, _, _ = count(tmp_path, interp, [WHOLE_TEXT], ("rusage",), fixtures)
    path = run.counters_file("3.13")
    document = store.read_json(path)
    document["ops"][WHOLE_TEXT]["rusage"]["minflt"] = 123456789
    document["methods"]["rusage"] = "an older method"
    contract.atomic_write_json(str(path), document)
    _, _, entry = count(tmp_path, interp, [WHOLE_TEXT], ("rusage",), fixtures)
    assert entry["status"] == "ok"
    document = store.read_json(path)
    assert document["ops"][WHOLE_TEXT]["rusage"]["minflt"] != 123456789
    assert document["methods"]["rusage"] == counttools.methods(("rusage",))["rusage"]


def test_functions_of_the_older_switch_are_not_used(tmp_path):
    old = "valgrind-3.19.0 callgrind, ...; instrumentation on in the window only " \
          "(--instr-atstart=no, client requests); ..."
    new = counttools.methods(("instructions",)).get("instructions") or \
        "callgrind; (--instr-atstart=no, client requests; the window in a frame entered " \
        "after the switch)"
    assert counts.misattributed_functions({"methods": {"instructions": old}})
    assert not counts.misattributed_functions({"methods": {"instructions": new}})
    assert not counts.misattributed_functions({"methods": {"instructions": "whole process "
                                                                           "instrumented"}})
    for series, method in (("old", old), ("new", new)):
        contract.atomic_write_json(str(tmp_path / f"{series}{store.COUNTERS_SUFFIX}"), {
            "iomatrix_counters_version": counts.FORMAT_VERSION, "series": series,
            "methods": {"instructions": method}, "ops": {"op": {
                "suite": "s", "calls": 1, "instructions": 100,
                "functions": [["_PyObject_MakeTpCall", "call.c", 60]]}}})
    assert set(counts.load_functions(tmp_path)) == {("new", "op")}


# -- the bytes the system calls move (issue 35 item 6) -----------------------------------

STRACE_THREADS = os.path.join(os.path.dirname(__file__), "data", "strace-threads-window.txt")


def test_syscall_bytes_of_a_real_strace_capture_with_split_lines():
    """A real `strace -f -qq` capture (tests/data): two threads each read a 300,000-byte file
    three times in 64 KiB reads, strace splitting most reads into "<unfinished ...>" and
    "<... read resumed> ... = N", while the main thread writes 10,000 bytes."""
    (window,) = counttools.syscall_byte_windows(STRACE_THREADS).values()
    calls, moved = window
    assert moved == {"read": 2 * 3 * 300_000, "write": 10_000}
    assert calls["read"] == 36 and calls["write"] == 1
    assert counttools.syscall_windows(STRACE_THREADS) == {0: calls}


def test_syscall_bytes_count_only_returns_of_byte_moving_calls(tmp_path):
    """Errors (-1) are no bytes; a ") = 5" inside a string is no return value; a call still
    unfinished at the window's end moved nothing the window saw; lseek's offset is no bytes."""
    lines = [
        '7 newfstatat(AT_FDCWD, "iomatrix-count-begin-3", 0x7ffd, 0) = -1 ENOENT (No such file)',
        "7 getppid()                  = 1",
        '7 read(3, "ab) = 99"..., 4096) = 4096',
        "8 read(4,  <unfinished ...>",
        "7 read(5, 0x7f00, 4096)      = -1 EAGAIN (Resource temporarily unavailable)",
        '8 <... read resumed>"xyz", 8192) = 3',
        "7 lseek(3, 123456, SEEK_SET)  = 123456",
        '7 pwrite64(6, "data", 4, 0)   = 4',
        "7 sendfile(6, 3, [0] => [100], 100) = 100",
        "8 read(4,  <unfinished ...>",
        "7 getppid()                  = 1",
        '7 newfstatat(AT_FDCWD, "iomatrix-count-end-3", 0x7ffd, 0) = -1 ENOENT (No such file)',
        '8 <... read resumed>"late", 8192) = 4',
    ]
    path = tmp_path / "strace.txt"
    path.write_text("\n".join(lines) + "\n")
    calls, moved = counttools.syscall_byte_windows(path)[3]
    assert moved == {"read": 4096 + 3, "pwrite64": 4, "sendfile": 100}
    assert calls == {"read": 4, "lseek": 1, "pwrite64": 1, "sendfile": 1}


@needs_strace
def test_a_real_count_stores_the_bytes_a_whole_file_read_moves(tmp_path, machine_interpreters,
                                                               fixtures):
    interp = need(machine_interpreters, "3.13")
    run, _, entry = count(tmp_path, interp, [WHOLE_BIN], ("syscalls",), fixtures)
    assert entry["status"] == "ok", entry
    op = store.read_json(run.counters_file("3.13"), kind="counters")["ops"][WHOLE_BIN]
    size = json.loads((counters.fixture_dir(fixtures, "timed") / "fixtures.json")
                      .read_text())["files"]["large.bin"]["bytes"]
    assert op["bytes_per_call"] == size
    # the whole file comes through read(); the final empty read adds nothing
    assert op["syscall_bytes"]["read"] >= size
    rows = [r for r in counts.load_document_rows(run.counters_file("3.13"))
            if r["counter"] in ("syscall_bytes", "syscall_bytes:read")]
    assert {r["counter"]: r["per_call"] for r in rows} == {
        "syscall_bytes": op["syscall_bytes"]["read"],
        "syscall_bytes:read": op["syscall_bytes"]["read"]}
    assert counts.moved_per_returned(rows, WHOLE_BIN, "3.13") == pytest.approx(
        op["syscall_bytes"]["read"] / size)


@needs_valgrind
def test_a_long_op_is_scaled_with_its_rule_checked(tmp_path, machine_interpreters, fixtures):
    """read_byLines_textMode (countsizes.SCALED): counted at 1/8 and 1/16 of the timed file,
    scaled to the timed size by its instructions per byte, which agree at the two sizes."""
    interp = need(machine_interpreters, "3.13")
    op = "read_byLines_textMode"
    run, _, entry = count(tmp_path, interp, [op, WHOLE_TEXT], ("rusage", "instructions"),
                          fixtures)
    assert entry["status"] == "ok", entry
    document = store.read_json(run.counters_file("3.13"))
    lines, whole = document["ops"][op], document["ops"][WHOLE_TEXT]
    basis = lines["count_size"]["instructions"]
    assert basis["basis"] == "scaled" and basis["rule"] == "instructions per byte"
    assert basis["divisor"] == pytest.approx(8, rel=0.01)
    assert basis["checked_divisor"] == pytest.approx(16, rel=0.01)
    a, b = basis["per_byte"]
    assert abs(a - b) <= countsizes.TOLERANCE * a
    timed = lines["bytes_per_call"]
    assert timed == whole["bytes_per_call"]           # the timed call's bytes, not 1/8's
    assert basis["counted_bytes"][0] * 7.9 < timed
    assert lines["instructions"] == round(basis["counted"][0] * timed / basis["counted_bytes"][0])
    assert lines["count_size"]["rusage"] == {"basis": "timed"}
    assert whole["count_size"]["instructions"] == {"basis": "timed"}
    # the counts page and data.csv rows say the basis
    rows = [r for r in counts.load_document_rows(run.counters_file("3.13"))
            if r["counter"] == "instructions"]
    said = {r["op"]: r["count_basis"] for r in rows}
    assert said == {op: "scaled from 1/8, instructions per byte checked at 1/16",
                    WHOLE_TEXT: "timed size"}


def test_scaling_rule_that_fails_counts_at_the_timed_size():
    calls = []

    def run(size, ops):
        calls.append((size, tuple(ops)))
        per_byte = {1: 10.0, 2: 12.0, "timed": 10.0}[size]    # 1/16 costs 20% more a byte
        nbytes = {1: 1000, 2: 500, "timed": 8000}[size]
        return ({op: ("ok", {"instructions": int(per_byte * nbytes)}) for op in ops},
                {op: nbytes for op in ops})
    found = countsizes.count_instructions(["read_byLines_textMode", WHOLE_TEXT], run,
                                          lambda ops: {op: 8000 for op in ops})
    assert calls == [(1, ("read_byLines_textMode",)), (2, ("read_byLines_textMode",)),
                     ("timed", (WHOLE_TEXT, "read_byLines_textMode"))]
    state, value = found["read_byLines_textMode"]
    assert state == "ok" and value["instructions"] == 80000
    assert value["count_size"]["basis"] == "timed"
    assert "20.0% apart" in value["count_size"]["not_scaled"]
    assert found[WHOLE_TEXT][1]["count_size"] == {"basis": "timed"}


def test_an_older_file_says_its_counts_are_at_the_counting_size(tmp_path):
    path = tmp_path / "3.13.counters.json"
    path.write_text(json.dumps({
        "iomatrix_counters_version": 1, "series": "3.13", "interpreter": {}, "calls": 1,
        "fixtures": "counting", "methods": {}, "skipped": {},
        "ops": {WHOLE_TEXT: {"suite": "lutz2009", "calls": 1, "bytes_per_call": 366925,
                             "instructions": 499878}}}))
    rows = counts.load_document_rows(path)
    assert [r["count_basis"] for r in rows] == ["counting size, not scaled"]


def _document(path, series, ops, fixtures="timed"):
    path.write_text(json.dumps({"iomatrix_counters_version": 1, "series": series,
                                "interpreter": {}, "calls": 1, "fixtures": fixtures,
                                "methods": {}, "skipped": {}, "ops": ops}))
    return counts.load_document_rows(path)


def test_the_findings_sentence_says_the_size_of_the_counts(tmp_path):
    scaled = {"basis": "scaled", "rule": "instructions per byte", "divisor": 8.0,
              "checked_divisor": 16.0, "per_byte": [24.3, 24.4], "tolerance": 0.03,
              "counted": [8925903, 4478310], "counted_bytes": [366925, 183462]}
    timed = {"basis": "timed"}

    def new(series, n):
        return _document(tmp_path / f"{series}.counters.json", series, {
            WHOLE_TEXT: {"suite": "lutz2009", "bytes_per_call": 2935401, "instructions": n,
                         "syscalls": {"read": 3}, "count_size": {"instructions": timed,
                                                                 "syscalls": timed}},
            "read_byLines_textMode": {"suite": "lutz2009", "bytes_per_call": 2935401,
                                      "instructions": 8 * n, "syscalls": {"read": 3},
                                      "count_size": {"instructions": scaled,
                                                     "syscalls": timed}}})
    rows = new("3.13", 3650571) + new("3.14", 2872022)
    said = counts.size_sentence(rows, [(WHOLE_TEXT, "3.13", "3.14", 2935401.0)])
    assert said == "Counts per call are at the timed size."
    said = counts.size_sentence(rows, [(WHOLE_TEXT, "3.13", "3.14", 2935401.0),
                                       ("read_byLines_textMode", "3.13", "3.14", 2935401.0)])
    assert said.startswith("Counts per call are at the timed size; the instructions of "
                           "`read_byLines_textMode` are scaled from 1/8 of the timed size, "
                           "instructions per byte checked at two sizes")
    assert "scaled from 1/8, instructions per byte checked at 1/16" in \
        counts.basis_paragraph(rows)
    # an older run: counted at 1/8, not scaled, and the sentence says so
    (tmp_path / "old").mkdir()
    old = [_document(tmp_path / "old" / f"{s}.counters.json", s, {
        WHOLE_TEXT: {"suite": "lutz2009", "bytes_per_call": 366925, "instructions": 499878}},
        fixtures="counting") for s in ("3.13", "3.14")]
    said = counts.size_sentence(old[0] + old[1], [(WHOLE_TEXT, "3.13", "3.14", 2935401.0)])
    assert "older run" in said and "at 1/8 of the timed size" in said and "not scaled" in said
    assert "counting pass's sizes, not scaled" in counts.basis_paragraph(old[0])


def test_data_csv_rows_of_the_counts_say_their_basis(tmp_path):
    import csv
    import io
    from types import SimpleNamespace
    from iomatrix.reporting import suite_pages
    rows = _document(tmp_path / "3.13.counters.json", "3.13", {
        WHOLE_TEXT: {"suite": "lutz2009", "bytes_per_call": 2935401, "instructions": 3650571,
                     "syscalls": {"read": 3, "openat": 1}, "syscall_bytes": {"read": 2935401},
                     "count_size": {"instructions": {"basis": "timed"},
                                    "syscalls": {"basis": "timed"}}}})
    an = SimpleNamespace(counted=rows, suite_of={WHOLE_TEXT: "lutz2009"},
                         category_of={WHOLE_TEXT: "read"})
    out = io.StringIO()
    writer = suite_pages.TextGuardedWriter(out)
    writer.writerow(suite_pages.CSV_FIELDS)
    count_csv.count_rows(an, writer, "R", suite_pages.CSV_FIELDS)
    found = {r["statistic"]: r for r in csv.DictReader(io.StringIO(out.getvalue()))}
    assert set(found) == {"instructions_per_call", "syscalls_per_call", "syscall_bytes_per_call"}
    assert float(found["instructions_per_call"]["value"]) == 3650571
    assert float(found["syscalls_per_call"]["value"]) == 4
    assert {r["count_basis"] for r in found.values()} == {"timed size"}


def test_compare_leaves_out_counts_made_at_other_sizes(tmp_path):
    """An older run counted at 1/8 of the timed size against a run counted at the timed size:
    eight times the instructions is the size, not a regression."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _document(tmp_path / "a" / "3.13.counters.json", "3.13", {
        WHOLE_TEXT: {"suite": "lutz2009", "bytes_per_call": 366925, "instructions": 499878,
                     "syscalls": {"read": 3}}}, fixtures="counting")
    _document(tmp_path / "b" / "3.13.counters.json", "3.13", {
        WHOLE_TEXT: {"suite": "lutz2009", "bytes_per_call": 2935401, "instructions": 3650571,
                     "syscalls": {"read": 3},
                     "count_size": {"instructions": {"basis": "timed"},
                                    "syscalls": {"basis": "timed"}}}})
    rows, fails = counts.compare_counts(tmp_path / "a" / "3.13.counters.json",
                                        tmp_path / "b" / "3.13.counters.json", 0.05)
    assert rows == [] and not fails


@needs_strace
def test_the_ops_of_every_suite_are_counted_by_one_worker_per_tool(tmp_path, machine_interpreters):
    """One process per tool and series runs every suite's ops (a process per suite cost a
    valgrind start-up each); an op that hangs fails alone, and the ops of the next suite are
    counted by the worker started again after it."""
    interp = need(machine_interpreters, "3.13")
    fixtures = tmp_path / "fixtures"
    counters.make_fixtures(["lutz2009", "mmapio"], "smoke", fixtures)
    timed = counters.fixture_dir(fixtures, "timed")
    os.remove(timed / "large.txt")
    os.mkfifo(timed / "large.txt")          # WHOLE_TEXT's first read blocks: a real hang
    run = store.Run(tmp_path / "results", "R")
    run.make_directory()
    series = counters.Series("3.13", interp.as_manifest(), "c",
                             [("mmapio", "mmapio_find_mmap"), ("lutz2009", WHOLE_TEXT),
                              ("lutz2009", WHOLE_BIN)])
    which = ("syscalls", "rusage")
    work = tmp_path / "work"
    entry = counters.count_series(run, series, which, counttools.tool_problems(which, work),
                                  fixtures, work, "smoke", CONDITIONS, 5.0,
                                  counttools.methods(which), log=lambda m: None)
    assert entry["status"] == "partial"
    assert set(entry["failed_ops"]) == {WHOLE_TEXT}
    ops = counters.read_document(run.counters_file("3.13"))["ops"]
    assert {op: e["suite"] for op, e in ops.items()} == {
        "mmapio_find_mmap": "mmapio", WHOLE_TEXT: "lutz2009", WHOLE_BIN: "lutz2009"}
    for op in ("mmapio_find_mmap", WHOLE_BIN):
        assert "syscalls" in ops[op] and "rusage" in ops[op] and ops[op]["bytes_per_call"] > 0
    # suites in name order, each tool's worker started once and again after the hang only
    attempts = sorted(p.name for p in (work / "s0000").iterdir())
    assert attempts == ["all-plain-1", "all-plain-2", "all-strace-1", "all-strace-2"]
    first = [json.loads(line)["suite"] for line in
             (work / "s0000" / "all-plain-1" / "counts.jsonl").read_text().splitlines()]
    assert first == []                           # the hang was its first op: lutz2009's
    second = [json.loads(line)["op"] for line in
              (work / "s0000" / "all-plain-2" / "counts.jsonl").read_text().splitlines()]
    assert second == [WHOLE_BIN, "mmapio_find_mmap"]


def test_the_counting_worker_refuses_an_op_without_its_suite(tmp_path, machine_interpreters,
                                                             fixtures):
    import subprocess
    interp = need(machine_interpreters, "3.13")
    cmd = counters.worker_command(interp.executable, None, [WHOLE_TEXT],
                                  counters.fixture_dir(fixtures, "timed"), tmp_path,
                                  tmp_path / "rows.jsonl", "smoke", "c", "new", 0)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "without its suite" in proc.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "rows.jsonl").read_text()


def test_only_an_older_runs_counts_have_their_size_said_in_the_summary(tmp_path):
    """summary.counting_size says "(per call at 1/8 of the timed size)" only of counts made at
    the counting pass's smaller sizes; counts at the timed size need no divisor (the timing's
    bytes per value and a counted call's bytes are not always one measure: mmapio_find_mmap's
    differ by two, which once read "at 1/0.5 of the timed size")."""
    (tmp_path / "new").mkdir()
    (tmp_path / "old").mkdir()
    new = _document(tmp_path / "new" / "3.13.counters.json", "3.13", {
        WHOLE_TEXT: {"suite": "lutz2009", "bytes_per_call": 2935401, "instructions": 3650571,
                     "count_size": {"instructions": {"basis": "timed"}}}})
    old = _document(tmp_path / "old" / "3.13.counters.json", "3.13", {
        WHOLE_TEXT: {"suite": "lutz2009", "bytes_per_call": 366925, "instructions": 499878}},
        fixtures="counting")
    assert not counts.counted_smaller(new, WHOLE_TEXT, ("3.13",))
    assert counts.counted_smaller(old, WHOLE_TEXT, ("3.13",))
    assert not counts.counted_smaller(old, "no_such_op", ("3.13",))


@needs_strace
def test_strace_and_the_program_it_traces_start_on_the_one_cpu_given():
    # pin() after the start would come too late: strace forks the traced program at once
    cpu = max(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    done = procs.run(["strace", "-f", "-qq", "-o", os.devnull, sys.executable, "-c",
                      "import os; print(sorted(os.sched_getaffinity(0)))"], timeout=60,
                     cpus={cpu})
    assert done.returncode == 0 and done.stdout.strip() == f"[{cpu}]"
    assert os.sched_getaffinity(0) == before      # the calling thread is free again
    assert counttools.STRACE_ON_ONE_CPU in counttools.methods(("syscalls",))["syscalls"]
