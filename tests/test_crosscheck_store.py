"""A crosscheck stored in the run it checked (RUN/crosscheck/), and what the main page says of
it (issue 42); the untouched condition alone where the heap cannot be pinned.

Real files and real interpreters; never a timing assertion. The stored documents here are
written by the store's own writer (checked by the schema) with figures of the kind a
crosscheck makes; the real crosscheck of a real run is in test_allocator's matrix test.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

from conftest import need, run_nox
from iomatrix import cli
from iomatrix.analysing.analysis import RunData
from iomatrix.commands import crosscheck
from iomatrix.measuring import machine
from iomatrix.reporting import crosscheck_section
from iomatrix.storing import crosschecks, schema, store

OP = "read_allAtOnce_textMode"


def document(made="2026-11-27T17:30:05Z", plain=(0.14e-3, 3.0e-3), harness=(0.15e-3, 3.1e-3),
             allocator="default", mean=(0.15e-3, 3.6e-3), version=2):
    """A crosscheck of 2.7 and 3.12 as the command stores it (two ops): version 2 with the
    plain loop's best call (``plain``) and mean of settled calls (``mean``) and every call
    of its processes (one here), version 1 with the best call only."""
    rows = [{"op": OP, "plain_seconds": {"2.7": plain[0], "3.12": plain[1]},
             "harness_seconds": {"2.7": harness[0], "3.12": harness[1]}},
            {"op": "read_byLines_textMode",
             "plain_seconds": {"2.7": 1e-3, "3.12": 1.2e-3},
             "harness_seconds": {"2.7": 1e-3, "3.12": 1.5e-3}}]
    condition = {"allocator": allocator, "output": "new", "cache": "warm", "clock": "cpu",
                 "affinity": "one", "series": {"2.7": "2.7@default", "3.12": "3.12@default"},
                 "rows": rows, "differ": []}
    if version == 2:
        rows[0]["plain_mean_seconds"] = {"2.7": mean[0], "3.12": mean[1]}
        rows[1]["plain_mean_seconds"] = {"2.7": 1e-3, "3.12": 1.3e-3}
        # 3.12's faulting text read: calls that vary, the best one lucky (0 CPU time: a
        # call shorter than getrusage's resolution is a valid call)
        condition["plain_processes"] = [{
            "op": OP, "label": "3.12", "process": 0, "warmups": 2,
            "wall": [4.4e-3, 4.0e-3, 4.3e-3, 3.0e-3, 4.8e-3],
            "cpu": [4.4e-3, 4.0e-3, 4.3e-3, 3.0e-3, 0.0],
            "minflt": [1435, 1434, 1403, 1403, 1403], "nivcsw": [0, 0, 0, 0, 1]}]
    return {"iomatrix_crosscheck_version": version, "made": made, "labels": ["2.7", "3.12"],
            "calls": 7, "processes": 5, "threshold": 0.25, "seed": 1, "conditions": [condition]}


def run_dir(tmp_path):
    directory = tmp_path / "R"
    directory.mkdir()
    (directory / "manifest.json").write_text(json.dumps({"run_id": "R"}))
    return directory


def run_data(directory) -> RunData:
    return RunData(store.Run(directory.parent, directory.name), {}, None, [])


def test_a_crosscheck_is_a_new_file_each_time_never_replacing_one(tmp_path):
    directory = run_dir(tmp_path)
    first = crosschecks.write(directory, document())
    before = first.read_bytes()
    second = crosschecks.write(directory, document())      # the same second: another name
    assert first != second and first.read_bytes() == before
    assert [p.name for p in crosschecks.files(directory)] == [
        "20261127T173005Z-2.7-3.12-2.json", "20261127T173005Z-2.7-3.12.json"]
    later = crosschecks.write(directory, document(made="2026-11-28T09:00:00Z",
                                                  plain=(0.14e-3, 3.5e-3)))
    found, problems = crosschecks.read_all(directory)
    assert len(found) == 3 and problems == []
    newest, condition, _ = crosschecks.newest_untouched(directory)
    assert newest["made"] == "2026-11-28T09:00:00Z" and condition["allocator"] == "default"
    assert later.parent.name == "crosscheck"
    # nothing but the store writes there: no report, no --json of any tool
    with pytest.raises(cli.BadInput, match="crosscheck/"):
        store.check_output(directory / "crosscheck" / "page.md", "--out")


def test_the_main_page_says_how_far_the_harness_stands_from_a_plain_loop(tmp_path):
    """Like for like: the plain loop's mean of settled calls against the harness's means;
    the best call is shown beside it, not judged."""
    directory = run_dir(tmp_path)
    crosschecks.write(directory, document())
    data = run_data(directory)
    words = crosscheck_section.summary_words(data)
    # 3.12/2.7: plain mean 24.0, harness 20.7 -> the harness 14% below a plain loop's (by the
    # best call, 21.4, it would read "within 4%")
    assert words == (f"timed that way, {OP}'s 3.12/2.7 stands 14% below a plain loop's in "
                     "fresh processes (each the mean of its settled calls, as the harness's; "
                     "crosscheck of 2026-11-27)")
    # within 10%: "within N% of", in a newer crosscheck
    crosschecks.write(directory, document(made="2026-11-28T09:00:00Z", mean=(0.15e-3, 3.2e-3)))
    assert crosscheck_section.summary_words(data) == (
        f"timed that way, {OP}'s 3.12/2.7 stands within 4% of a plain loop's in fresh "
        "processes (each the mean of its settled calls, as the harness's; crosscheck of "
        "2026-11-28)")
    text = "\n".join(crosscheck_section.main_page_lines(data)).replace("\xa0", " ")  # nowrap's
    assert "`nox -s crosscheck` of 2026-11-28" in text
    assert "7 calls in each of 5 processes" in text and "mean of each process's settled" in text
    header = next(line for line in text.splitlines() if "plain loop (mean)" in line)
    assert [cell.strip() for cell in header.strip("|").split("|")][1:5] == [
        "plain loop (mean)", "plain loop (best)", "harness", "plain ÷ harness"]
    row = next(line for line in text.splitlines() if f"`{OP}`" in line)
    assert "21.33" in row and "21.43" in row and "20.67" in row and "1.03" in row
    assert "within 4%" in row
    assert "**geometric mean**" in text


def test_a_crosscheck_stored_with_the_best_call_only_is_quoted_as_such(tmp_path):
    """A version 1 crosscheck (before the mean of settled calls was kept) is still read; the
    page says its figure is the best call."""
    directory = run_dir(tmp_path)
    crosschecks.write(directory, document(version=1, harness=(0.15e-3, 2.6e-3)))
    data = run_data(directory)
    assert crosscheck_section.summary_words(data) == (
        f"timed that way, {OP}'s 3.12/2.7 stands 19% below a plain loop's in fresh processes "
        "(the best of 7 calls; crosscheck of 2026-11-27)")
    text = "\n".join(crosscheck_section.main_page_lines(data)).replace("\xa0", " ")
    assert "the best of 7 calls, the median of 5 processes" in text
    assert "kept the best call only" in text
    row = next(line for line in text.splitlines() if f"`{OP}`" in line)
    assert "21.43" in row and "17.33" in row and "1.24" in row and "19% below" in row


def test_a_report_without_a_crosscheck_says_so(tmp_path):
    directory = run_dir(tmp_path)
    data = run_data(directory)
    assert crosscheck_section.summary_words(data) == "not crosschecked against a plain loop"
    assert "not crosschecked" in "\n".join(crosscheck_section.main_page_lines(data))
    # a crosscheck of the pinned condition only says nothing of the untouched one
    crosschecks.write(directory, document(allocator="steady"))
    assert crosscheck_section.summary_words(data) == "not crosschecked against a plain loop"
    # a page without a run (a merged report) has nothing to read
    assert crosscheck_section.summary_words(RunData(None, {}, None, [])) == \
        "not crosschecked against a plain loop"


@pytest.mark.parametrize("damage, reason", [
    (lambda d: d.update(made="yesterday"), "field made"),
    (lambda d: d["conditions"][0]["rows"][0].update(op="<script>x"), "field conditions"),
    (lambda d: d["conditions"][0]["rows"][0]["plain_seconds"].update({"2.7": 1e9}),
     "field conditions"),
    (lambda d: d.update(extra="x"), "field extra"),
])
def test_a_damaged_stored_crosscheck_is_named_and_not_used(tmp_path, damage, reason):
    directory = run_dir(tmp_path)
    bad = document()
    damage(bad)
    (directory / "crosscheck").mkdir()
    (directory / "crosscheck" / "bad.json").write_text(json.dumps(bad))
    (directory / "crosscheck" / "half.json").write_text('{"iomatrix_crosscheck_version": 1, ')
    found, problems = crosschecks.read_all(directory)
    assert found == [] and [name for name, _ in problems] == ["bad.json", "half.json"]
    assert reason in problems[0][1] and str(directory) not in problems[0][1]
    data = run_data(directory)
    assert crosscheck_section.summary_words(data) == "not crosschecked against a plain loop"
    text = "\n".join(crosscheck_section.main_page_lines(data))
    assert "Stored crosschecks not used: `bad.json`" in text and "<script>" not in text


def test_a_linked_crosscheck_directory_is_not_followed(tmp_path):
    directory = run_dir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (directory / "crosscheck").symlink_to(elsewhere, target_is_directory=True)
    assert crosschecks.directory_problem(directory).endswith(
        "is a symbolic link; a crosscheck is stored in the run itself only")
    with pytest.raises(OSError):
        crosschecks.write(directory, document())
    assert list(elsewhere.iterdir()) == []
    assert crosschecks.read_all(directory) == ([], [("crosscheck", "a symbolic link, not followed")])


def test_the_stored_document_is_what_the_schema_takes():
    schema.check("crosscheck", document())
    schema.check("crosscheck", document(version=1))
    bad = document()
    bad["conditions"][0]["plain_processes"][0]["cpu"][0] = -1.0
    with pytest.raises(schema.SchemaError, match="plain_processes"):
        schema.check("crosscheck", bad)
    with pytest.raises(schema.SchemaError, match="not an iomatrix crosscheck file"):
        schema.check("crosscheck", {"made": "2026-11-27T17:30:05Z"})


@pytest.mark.parametrize("gap, words", [(1.05, "within 5%"), (0.95, "within 6%"),
                                        (1.0, "within 1%"), (0.71, "41% above"),
                                        (1.3, "23% below")])
def test_the_gap_in_words(gap, words):
    # gap: the plain loop's ratio over the harness's
    assert crosscheck_section.standing(gap) == words


def test_a_run_that_cannot_store_its_crosscheck_is_refused_before_any_timing(
        machine_interpreters, tmp_path, capsys):
    need(machine_interpreters, "2.7")
    need(machine_interpreters, "3.13")
    directory = run_dir(tmp_path)
    (directory / "crosscheck").write_text("not a directory")
    assert crosscheck.main(["--pythons", "2.7,3.13", "--run-dir", str(directory)]) == 2
    err = capsys.readouterr().err
    assert "cannot store the crosscheck in the run" in err and "--no-store" in err
    assert (directory / "crosscheck").read_text() == "not a directory"


# -- a libc without glibc's knobs: the untouched condition only -------------------------------

def launcher(tmp_path, python=sys.executable):
    """A real interpreter behind a launcher script: the file names no libc, as a musl build's
    executable names no glibc (the probe reads the executable, as platform.libc_ver does)."""
    path = tmp_path / "python-launcher"
    path.write_text(f'#!/bin/sh\nexec "{python}" "$@"\n')
    path.chmod(0o755)
    return path


def test_the_probe_reads_the_executables_libc(tmp_path):
    assert machine.libc_of(sys.executable)[0] == "glibc"
    assert machine.pinning_problem([sys.executable]) is None
    script = launcher(tmp_path)
    assert machine.libc_of(str(script)) == ("", "")
    assert "does not link glibc" in machine.pinning_problem([sys.executable, str(script)])
    assert machine.usable_allocators(["steady", "default"], [sys.executable]) == \
        (["steady", "default"], None)
    chosen, line = machine.usable_allocators(["steady", "default"], [str(script)])
    assert chosen == ["default"] and "\n" not in line
    assert "pinned allocator condition (steady) is unavailable" in line
    assert machine.usable_allocators("default", [str(script)]) == (["default"], None)


def test_a_glibc_too_old_for_the_knobs_gets_the_untouched_condition_only(tmp_path):
    """An executable that needs nothing newer than glibc 2.3 (before the rising mmap
    threshold that pinning stops): a real file that names that glibc, read as
    platform.libc_ver reads one."""
    old = tmp_path / "python-old-glibc"
    old.write_bytes(b"\x7fELF\0\0GLIBC_2.2.5\0GLIBC_2.3\0\0")
    old.chmod(0o755)
    assert machine.libc_of(str(old)) == ("glibc", "2.3")
    assert "links glibc 2.3, older than the 2.5" in machine.pinning_problem([str(old)])
    chosen, line = machine.usable_allocators("steady,default", [sys.executable, str(old)])
    assert chosen == ["default"] and "\n" not in line
    assert line.startswith("the pinned allocator condition (steady) is unavailable: ")
    assert line.endswith("timing glibc's or the platform's allocator untouched (default) only")
    # the untouched condition asked for alone needs no knob: nothing to say
    assert machine.usable_allocators("default", [str(old)]) == (["default"], None)


def test_a_machine_without_glibcs_knobs_times_the_untouched_condition_only(
        machine_interpreters, tmp_path):
    python = need(machine_interpreters, "3.13").executable
    env = dict(os.environ, IOMATRIX_PYTHONS=f"wrapped={launcher(tmp_path, python)}")
    for key in list(env):
        if key.startswith(("MALLOC_", "MIMALLOC_")):
            del env[key]
    results = tmp_path / "results"
    # copies: the untouched condition times one op per worker, and its 10 ops take half the
    # workers of lutz2009's 23; what is tested is the run's condition, not a suite's.
    proc = run_nox("-s", "matrix", "--", "--pythons", "wrapped", "--aa", "none", "--profile",
                   "smoke", "--suite", "copies", "--results-dir", str(results), "--run-id",
                   "M", "--no-report", "--counters", "off", env=env)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    said = [line for line in output.splitlines() if "is unavailable" in line]
    assert len(said) == 1 and "timing glibc's or the platform's allocator untouched" in said[0]
    manifest = json.loads((results / "M" / "manifest.json").read_text())
    assert manifest["allocator"] == "default" and manifest.get("allocator_twins", []) == []
    rows = store.load_series(results / "M" / "wrapped.json")
    assert rows and {r["allocator"] for r in rows} == {"default"}


def test_the_most_calls_a_stored_crosscheck_takes_fit_in_what_a_reader_reads(tmp_path):
    """--calls x --processes up to MAX_CALLS_PER_OP, three conditions of the 14 ops: the file
    written stays under the reader's MAX_BYTES (a larger one is refused before any timing)."""
    import random
    rng = random.Random(1)
    ops = [f"read_op{i}" for i in range(14)]

    def process(op, label):
        raw = {"op": op, "label": label, "process": 0, "warmups": 2,
               "wall": [rng.uniform(1e-4, 0.2) for _ in range(crosschecks.MAX_CALLS_PER_OP)],
               "cpu": [rng.uniform(1e-4, 0.2) for _ in range(crosschecks.MAX_CALLS_PER_OP)],
               "minflt": [rng.randrange(3000) for _ in range(crosschecks.MAX_CALLS_PER_OP)],
               "nivcsw": [rng.randrange(3) for _ in range(crosschecks.MAX_CALLS_PER_OP)]}
        return crosscheck.stored_process(raw)
    big = document()
    template = big["conditions"][0]
    big["conditions"] = [
        {**template, "allocator": allocator,
         "plain_processes": [process(op, label) for op in ops for label in ("2.7", "3.12")]}
        for allocator in ("steady", "default", "fresh")]
    path = crosschecks.write(run_dir(tmp_path), big)
    assert path.stat().st_size < crosschecks.MAX_BYTES
    found, problems = crosschecks.read_all(path.parent.parent)
    assert problems == [] and len(found) == 1
