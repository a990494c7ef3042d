"""Damaged run directories and output paths, at random: the tools keep the exit-code contract.

hypothesis damages one stored document of a good run (a series, native.json, the
manifest, a counters file, a phase file) in one of many ways (truncation, a wrong
type at any depth, deep nesting, huge, tiny, negative and non-finite numbers, a
symlink, a FIFO, a directory, no read permission) or points an output path at a
run's own files, then runs what ``report``, ``compare``, ``history``, ``release``
(its comparison: compare of two series files of one run) and ``crosscheck`` (its
reading of a run) do, in process, through the same ``main`` functions. Each time:

- never a traceback (exit 3) and never exit 1 from damage: compare may find a
  regression only when the damaged document is still a valid one (then it is data);
- never a non-finite or negative number in a page;
- nothing written outside the output directory;
- every document that is refused is named (report's "Files not read", history's
  list, compare's one-line error or its phase note);
- bounded time (MAX_SECONDS an example).

One end-to-end test runs the scripts themselves on a store damaged several ways at once,
under a 2 GiB address-space limit (the exit codes as CI sees them, bounded memory).

Profiles: ``ci`` (the default; CI_EXAMPLES examples a property, derandomized, the
file well under a minute) and ``long`` (IOMATRIX_FUZZ_PROFILE=long, with
IOMATRIX_FUZZ_EXAMPLES examples, new ones each time). The damaged-documents property runs
in the default suite with KNOWN_DAMAGES (one explicit example of each kind of damage that
found a bug or that a reader must name) plus FAST_EXAMPLES generated ones; its ``slow``
twin generates CI_EXAMPLES (`nox -s tests -- -m slow`). As root (CI containers) the
"unreadable" damage reads fine (root reads anything) and is kept as a plain case.
"""
from __future__ import annotations

import json
import math
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings, strategies as st

from iomatrix import cli
from iomatrix.commands import crosscheck
from iomatrix.storing import contract, store
from conftest import ROOT, write_pyperf_file

import compare
import history
import report

CI_EXAMPLES = 25
# The damaged-documents property reports, compares and reads a whole store per example (about
# a second each on an idle 2-CPU machine): the default suite generates FAST_EXAMPLES beside
# the known damages below; the slow twin generates CI_EXAMPLES.
FAST_EXAMPLES = 6
# No shrinking in CI: a failure is shown as found, in bounded time (shrinking a damaged
# store can take minutes); the long profile shrinks.
settings.register_profile("ci", max_examples=CI_EXAMPLES, derandomize=True, deadline=None,
                          database=None, suppress_health_check=list(HealthCheck),
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.register_profile("long", max_examples=int(os.environ.get("IOMATRIX_FUZZ_EXAMPLES",
                                                                  "1000")),
                          deadline=None, database=None, suppress_health_check=list(HealthCheck))
PROFILE_NAME = os.environ.get("IOMATRIX_FUZZ_PROFILE", "ci")
PROFILE = settings.get_profile(PROFILE_NAME)
MAX_SECONDS = 60
OPS = ("read_byLines_textMode", "write_byLines_textMode")
DOCUMENTS = ("3.13.json", "native.json", "manifest.json", "3.13.counters.json", "phase/s.tsv")
SPECIAL_NUMBERS = (1e308, -1e308, 5e-324, 0, -1, -0.0, 2 ** 70, -(2 ** 70), float("nan"),
                   float("inf"), float("-inf"), 3599.0, 1e-9, 1.5)


# -- a good store: runs A and B measured alike, so A → B is no regression ----------------

def counters_document(series: str) -> dict:
    ops = {op: {"suite": "lutz2009", "bytes_per_call": 100_000, "calls": 1,
                "syscalls": {"read": 4, "openat": 1}, "instructions": 50_000,
                "rusage": {"minflt": 2, "majflt": 0, "nvcsw": 0, "nivcsw": 1}} for op in OPS}
    return {"iomatrix_counters_version": 1, "series": series, "calls": 1,
            "interpreter": {"label": series, "implementation": "cpython",
                            "version_info": [3, int(series.split(".")[1]), 0]},
            "methods": {"syscalls": "strace", "instructions": "callgrind"}, "skipped": {},
            "ops": ops}


def make_run(results: Path, run_id: str) -> Path:
    run_dir = results / run_id
    run_dir.mkdir(parents=True)
    manifest = {"run_id": run_id, "host": "testhost", "profile": "quick", "cache": "warm",
                "allocator": "steady", "output": "new", "clock": "auto", "affinity": "one",
                "suites": ["lutz2009"], "io": ["c"], "cpu_count": 2,
                "started": "2026-01-01T00:00:00+00:00", "interpreters": {},
                "sessions": [{"started": "2026-01-01T00:00:00+00:00", "pid": 1,
                              "phase_probe": {"status": "measured", "cpu": 1,
                                              "file": "phase/s.tsv"}}]}
    for minor in (12, 13):
        label = f"3.{minor}"
        write_pyperf_file(run_dir / f"{label}.json",
                          {op: [[0.01 * (1 + 0.001 * k)] * 2 for k in range(6)] for op in OPS},
                          {contract.KEY_ALLOCATOR: "steady", contract.KEY_OUTPUT: "new",
                           contract.KEY_CLOCK: "cpu"})
        contract.atomic_write_json(str(run_dir / f"{label}.counters.json"),
                                   counters_document(label))
        manifest["interpreters"][label] = {"label": label, "implementation": "cpython",
                                           "version_info": [3, minor, 0], "status": "ok",
                                           "version": f"3.{minor}.0", "recipe": "shared-O3"}
    write_pyperf_file(run_dir / "native.json", {OPS[0]: [[0.005]] * 6},
                      {contract.KEY_IO: "native"})
    (run_dir / "phase").mkdir()
    (run_dir / "phase" / "s.tsv").write_text(
        "# iomatrix phase probe 1: wall_time loop_seconds copy_seconds\n"
        + "".join(f"{1.7e9 + i:.3f}\t0.0015\t0.0008\n" for i in range(12)))
    contract.atomic_write_json(str(run_dir / "manifest.json"), manifest)
    return run_dir


# -- damage ---------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.sampled_from(SPECIAL_NUMBERS)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                 max_size=3),
    max_leaves=6)

damages = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("replace"), st.integers(0, 10 ** 6), json_values),
    st.tuples(st.just("number"), st.integers(0, 10 ** 6), st.sampled_from(SPECIAL_NUMBERS)),
    st.tuples(st.just("nest"), st.integers(0, 10 ** 6), st.sampled_from([65, 1000, 100_000])),
    st.tuples(st.just("file"), st.sampled_from(["symlink-sibling", "symlink-outside",
                                                 "symlink-dev-zero", "dangling", "fifo",
                                                 "directory", "unreadable", "empty"])),
)


def locations(value, path=()):
    """Every place in a JSON document: (path, value)."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from locations(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from locations(item, path + (index,))


def put(document, path, value):
    if not path:
        return value
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


def damage_json(data: bytes, kind: str, index: int, value) -> bytes:
    document = json.loads(data)
    places = [(p, v) for p, v in locations(document)
              if kind != "number" or (isinstance(v, (int, float)) and not isinstance(v, bool))]
    if not places:
        return data
    path, old = places[index % len(places)]
    if kind == "nest":   # written as text: json itself cannot build 100,000 levels
        marker = "\u0000nest\u0000"
        text = json.dumps(put(document, path, marker), allow_nan=True)
        nested = "[" * value + json.dumps(old, allow_nan=True) + "]" * value
        return text.replace(json.dumps(marker), nested, 1).encode()
    return json.dumps(put(document, path, value), allow_nan=True).encode()


def damage_text(data: bytes, kind: str, index: int, value) -> bytes:
    """A phase file: the same damage on its tab-separated numbers."""
    lines = data.decode().splitlines()
    row = 1 + index % (len(lines) - 1)
    fields = lines[row].split("\t")
    fields[index % 3] = repr(value) if kind == "number" else \
        json.dumps(value, allow_nan=True) if kind == "replace" else "[" * value
    lines[row] = "\t".join(fields)
    return ("\n".join(lines) + "\n").encode()


def apply_damage(path: Path, damage, outside: Path) -> None:
    kind = damage[0]
    if kind == "file":
        how = damage[1]
        if how == "unreadable":
            path.chmod(0)
            return
        path.unlink()
        if how == "symlink-sibling":
            path.symlink_to(path.parent / ("3.12.json" if path.parent.name != "phase"
                                           else "../3.12.json"))
        elif how == "symlink-outside":
            path.symlink_to(outside)
        elif how == "symlink-dev-zero":
            path.symlink_to("/dev/zero")
        elif how == "dangling":
            path.symlink_to(outside.parent / "nowhere")
        elif how == "fifo":
            os.mkfifo(path)
        elif how == "directory":
            path.mkdir()
        else:
            path.write_bytes(b"")
        return
    data = path.read_bytes()
    if kind == "truncate":
        data = data[:int(len(data) * damage[1])]
    elif path.suffix == ".tsv":
        data = damage_text(data, kind, damage[1], damage[2])
    else:
        data = damage_json(data, kind, damage[1], damage[2])
    path.write_bytes(data)


def still_valid(path: Path) -> bool:
    """Whether the damaged document is still one its reader accepts (then it is data)."""
    if path.suffix == ".tsv":
        return True   # a phase file's bad lines are skipped and named, never a gate's input
    kind = "manifest" if path.name == store.MANIFEST else \
        "counters" if path.name.endswith(store.COUNTERS_SUFFIX) else "series"
    try:
        store.read_json(path, kind=kind)
    except store.ResultFileError:
        return False
    return True


# -- what every page and every run must keep ----------------------------------------------

NON_FINITE = re.compile(r"(?i)(?<![\w-])-?(nan|inf|infinity)(?![\w-])")
# A negative number that is not a signed change ("-3.2%", "−12%") nor part of a word,
# a date (2026-01-01) or a range/arrow.
NEGATIVE = re.compile(r"(?<![\w.\-])-\d[\d,]*(?:\.\d+)?(?![\d.]*%)(?![\w-])")


def check_page(text: str, where: str) -> None:
    # A refused document is named with its bad value quoted, "(got -1)": that line reports
    # the damage, it does not present it as a measurement.
    text = "\n".join(line for line in text.splitlines() if "(got " not in line)
    assert not NON_FINITE.search(text), (where, NON_FINITE.search(text).group(), text[:2000])
    found = NEGATIVE.search(text)
    assert not found, (where, found.group(), text[max(0, found.start() - 200):found.end() + 50])


def tree(directory: Path) -> dict:
    """{path: bytes or kind} of everything under ``directory``, never opening a special file."""
    out = {}
    for p in sorted(directory.rglob("*")):
        if p.is_symlink():
            out[p] = ("symlink", os.readlink(p))
        elif p.is_file():
            out[p] = p.read_bytes() if os.access(p, os.R_OK) and p.stat().st_mode & 0o444 \
                else ("unreadable",)
        else:
            out[p] = ("dir" if p.is_dir() else "special",)
    return out


def call(main, args, capsys) -> tuple[int, str, str]:
    """A tool's main through cli.main_guard, as its script runs it: (exit, stdout, stderr)."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:   # argparse's own exit 2
        code = exc.code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err, \
        captured.err[-3000:]
    assert code != cli.EXIT_INTERNAL_ERROR, captured.err[-3000:]
    return code, captured.out, captured.err


def fresh_store(tmp_path_factory) -> tuple[Path, Path, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    results = root / "results"
    make_run(results, "A")
    make_run(results, "B")
    outside = root / "outside.json"
    outside.write_text(json.dumps({"version": "1.0", "benchmarks": []}))
    return root, results, outside


# One of each kind of damage, in every run whatever hypothesis generates: the two the fuzz
# found (a manifest whose interpreters table is null, commit 970b63b; a series value of 0,
# de823a1), deep nesting, a truncated file, a non-finite number in a phase file, and the
# special files (a symlink to /dev/zero, a FIFO, a directory, a symlink out of the run).
# The indexes are places in make_run's documents (tests/test_fuzz.py's ``locations`` order):
# 7 is the manifest's "interpreters", 3 the first value of a series.
KNOWN_DAMAGES = [
    ("manifest.json", ("replace", 7, None)),
    ("3.13.json", ("number", 3, 0)),
    ("3.13.json", ("nest", 0, 100_000)),
    ("3.13.counters.json", ("number", 5, float("nan"))),
    ("manifest.json", ("truncate", 0.5)),
    ("phase/s.tsv", ("number", 1, float("inf"))),
    ("native.json", ("file", "symlink-dev-zero")),
    ("3.13.counters.json", ("file", "fifo")),
    ("3.13.json", ("file", "directory")),
    ("manifest.json", ("file", "symlink-outside")),
]


def with_known_damages(test):
    for document, damage in reversed(KNOWN_DAMAGES):
        test = example(document=document, damage=damage)(test)
    return test


@settings(PROFILE, max_examples=FAST_EXAMPLES if PROFILE_NAME == "ci" else PROFILE.max_examples)
@with_known_damages
@given(document=st.sampled_from(DOCUMENTS), damage=damages)
def test_damaged_documents_keep_the_exit_code_contract(tmp_path_factory, capsys, document,
                                                       damage):
    damaged_store_keeps_the_contract(tmp_path_factory, capsys, document, damage)


@pytest.mark.slow
@PROFILE
@given(document=st.sampled_from(DOCUMENTS), damage=damages)
def test_damaged_documents_keep_the_exit_code_contract_at_length(tmp_path_factory, capsys,
                                                                 document, damage):
    """The property above with CI_EXAMPLES generated damages (slow: the default suite runs
    FAST_EXAMPLES and KNOWN_DAMAGES, one of each kind)."""
    damaged_store_keeps_the_contract(tmp_path_factory, capsys, document, damage)


def damaged_store_keeps_the_contract(tmp_path_factory, capsys, document, damage):
    root, results, outside = fresh_store(tmp_path_factory)
    run_b = results / "B"
    damaged = run_b / document
    apply_damage(damaged, damage, outside)
    valid = still_valid(damaged) if damaged.is_file() and not damaged.is_symlink() else False
    out = root / "out"
    before = tree(root)
    started = time.monotonic()
    try:
        # report: the rest of the run is reported, the damaged document named
        code, _, err = call(report.main, ["--results-dir", results, "--run-id", "B", "--out",
                                          out / "b.md", "--no-figures"], capsys)
        assert code in (0, 2), err
        if code == 0:
            pages = "\n".join(p.read_text() for p in out.rglob("*.md"))
            check_page(pages, "report")
            if not valid and document != "phase/s.tsv":
                assert Path(document).name in pages, (document, damage)
        # compare (and release's comparison of two series of one run)
        for args in (["A", "B", "--results-dir", results],
                     [run_b / "3.12.json", run_b / "3.13.json"]):
            code, text, err = call(compare.main, args, capsys)
            assert code in (0, 1, 2), err
            assert code != 1 or valid, (document, damage, text[:1500])
            if code == 2:
                assert len(err.strip().splitlines()) == 1, err
            else:
                check_page(text, "compare")
        if not valid and document != "phase/s.tsv":
            code, _, err = call(compare.main, ["A", "B", "--results-dir", results], capsys)
            assert code == 2 and Path(document).name in err, (document, damage, err)
        # history: the run with the damaged file is named and left out
        code, text, err = call(history.main, ["3.13", "--results-dir", results], capsys)
        assert code in (0, 2), err
        if code == 0:
            check_page(text, "history")
            if not valid and document in ("3.13.json", "manifest.json"):
                assert Path(document).name in text, (document, damage, text[:1500])
        # crosscheck's reading of a run: its conditions and the harness's times
        try:
            crosscheck.run_conditions(run_b, ["3.12", "3.13"])
            times, _, _ = crosscheck.harness_times(run_b, "3.13")
            assert all(math.isfinite(t) and t > 0 for t in times.values())
        except cli.BadInput as exc:
            assert "\n" not in str(exc)
        after = tree(root)
    finally:
        if damaged.is_file() and not damaged.is_symlink():
            damaged.chmod(0o644)   # the damage "unreadable": let the temporary tree go
    assert time.monotonic() - started < MAX_SECONDS
    written = {p for p in set(after) | set(before) if before.get(p) != after.get(p)}
    assert all(p == out or out in p.parents for p in written), sorted(written)[:5]


# -- output paths ---------------------------------------------------------------------------

OUTPUTS = {
    "run's series": "results/B/3.13.json", "run's manifest": "results/B/manifest.json",
    "run's counters": "results/B/3.13.counters.json", "run's phase": "results/B/phase/s.tsv",
    "new json in a run": "results/B/new.json", "run directory": "results/B",
    "a directory": "out", "under a file": "outside.json/x.md",
    "hidden file in a run": "results/B/.x.md", "in .parts": "results/B/.parts/x.md",
}
TOOL_OUTPUTS = [(report.main, "--out", ["--results-dir", "{results}", "--run-id", "B",
                                        "--no-figures"]),
                (compare.main, "--out", ["A", "B", "--results-dir", "{results}"]),
                (compare.main, "--json", ["A", "B", "--results-dir", "{results}"]),
                (history.main, "--out", ["3.13", "--results-dir", "{results}"]),
                (history.main, "--figure", ["3.13", "--results-dir", "{results}"])]


@PROFILE
@given(where=st.sampled_from(sorted(OUTPUTS)), tool=st.sampled_from(range(len(TOOL_OUTPUTS))))
def test_an_output_path_among_a_runs_files_is_refused(tmp_path_factory, capsys, where, tool):
    root, results, _ = fresh_store(tmp_path_factory)
    (root / "out").mkdir()
    main, option, args = TOOL_OUTPUTS[tool]
    before = tree(root)
    code, _, err = call(main, [str(a).format(results=results) for a in args]
                        + [option, root / OUTPUTS[where]], capsys)
    assert code == cli.EXIT_BAD_INPUT, (where, option, err)
    assert len(err.strip().splitlines()) == 1 and option in err, err
    assert tree(root) == before


def test_report_and_compare_may_write_report_files_in_a_run_directory(tmp_path, capsys):
    """The matrix's RUN/report.md and release's RUN/release.md stay possible."""
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")
    code, _, err = call(compare.main, ["A", "B", "--results-dir", results,
                                       "--out", results / "B" / "compare.md"], capsys)
    assert code == 0, err
    code, _, err = call(report.main, ["--results-dir", results, "--run-id", "B", "--out",
                                      results / "B" / "report.md", "--no-figures"], capsys)
    assert code == 0, err


def test_the_good_store_reads_cleanly(tmp_path, capsys):
    """The fixture itself: no problem named, no regression, and pages the checks accept."""
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")
    code, _, err = call(report.main, ["--results-dir", results, "--run-id", "B", "--out",
                                      tmp_path / "out" / "b.md", "--no-figures"], capsys)
    assert code == 0 and "skipped" not in err, err
    pages = "\n".join(p.read_text() for p in (tmp_path / "out").rglob("*.md"))
    check_page(pages, "report")
    assert "Files not read" not in pages
    code, text, err = call(compare.main, ["A", "B", "--results-dir", results], capsys)
    assert code == 0, err
    check_page(text, "compare")
    code, text, err = call(history.main, ["3.13", "--results-dir", results], capsys)
    assert code == 0 and "Files not read" not in text, text
    check_page(text, "history")
    assert crosscheck.run_conditions(results / "B", ["3.12", "3.13"])["allocator"] == "steady"


def test_the_checks_catch_what_they_look_for():
    with pytest.raises(AssertionError):
        check_page("| `op` | nan |", "x")
    with pytest.raises(AssertionError):
        check_page("throughput -0 MB/s", "x")
    with pytest.raises(AssertionError):
        check_page("-27,216 instructions", "x")
    check_page("2026-01-01 run-vm, 3.13 → 3.14: -3.2% (12% faster) |---:| -> x", "x")


# -- end to end: the scripts themselves, under a memory limit ---------------------------------

MEMORY_LIMIT = 2 * 2 ** 30  # bytes of address space a tool may use on a damaged store


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_the_scripts_keep_the_contract_on_a_damaged_store_within_memory_and_time(tmp_path):
    """Several damages at once, each script run as CI runs it: exit 0 or 2, never a
    traceback, under 2 GiB of address space and two minutes."""
    results = tmp_path / "results"
    make_run(results, "A")
    run_b = make_run(results, "B")
    (run_b / "3.13.json").write_bytes(b"[" * 100_000 + b"]" * 100_000)
    (run_b / "native.json").unlink()
    (run_b / "native.json").symlink_to("/dev/zero")
    os.mkfifo(run_b / "3.14.json")
    (run_b / "3.12.counters.json").write_text('{"iomatrix_counters_version": 1, "ops": NaN}')
    (run_b / "phase" / "s.tsv").write_text("1\t1e308\t5e-324\n" * 20)
    for name, args, codes in (
            ("report", ["--results-dir", results, "--run-id", "B", "--out",
                        tmp_path / "out" / "b.md", "--no-figures"], (0,)),
            ("compare", ["A", "B", "--results-dir", results], (2,)),
            ("history", ["3.13", "--results-dir", results], (0,))):
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"),
                               *map(str, args)], capture_output=True, text=True, timeout=120,
                              preexec_fn=limited)
        assert done.returncode in codes and "Traceback" not in done.stderr, \
            (name, done.stderr[-2000:])
    page = (tmp_path / "out" / "b.md").read_text()
    for damaged in ("3.13.json", "native.json", "3.14.json", "3.12.counters.json", "s.tsv"):
        assert damaged in page, damaged
