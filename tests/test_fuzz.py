"""Fuzzing the readers of a run directory with malformed manifests and pyperf files.

Two layers, both driven by hypothesis with a fixed seed (derandomized), so CI runs
the same bounded set of cases every time:

- in process, many cases: the store's readers either return well-formed rows or
  raise ``ResultFileError`` naming the file; never another exception;
- the command-line tools (report, compare, history), fewer cases because each one
  starts Python: under a memory and time limit, exit 0 (the bad file named as
  skipped) or 2, never a traceback, and nothing written outside their output.

A longer run: ``IOMATRIX_FUZZ_EXAMPLES=10000 nox -s tests -- tests/test_fuzz.py``.
"""
from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from iomatrix import cli, contract, store
from conftest import ROOT, write_pyperf_file

EXAMPLES = int(os.environ.get("IOMATRIX_FUZZ_EXAMPLES", "200"))
CLI_EXAMPLES = max(6, EXAMPLES // 25)
MEMORY_LIMIT = 2 * 2 ** 30  # bytes of address space a tool may use on one bad file
OPS = ("read_byLines_textMode", "write_byLines_textMode")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=12)


def maybe(valid):
    """Mostly the valid shape, sometimes any JSON value in its place."""
    return st.one_of(valid, valid, valid, json_values)


positive = st.floats(min_value=1e-7, max_value=10.0)
runs = st.fixed_dictionaries({
    "metadata": maybe(st.fixed_dictionaries({contract.KEY_ROUND: maybe(st.integers(0, 9))})),
    "values": maybe(st.lists(maybe(positive), max_size=4)),
    "warmups": maybe(st.lists(maybe(st.tuples(st.just(1), positive).map(list)), max_size=2)),
})
benchmarks = st.fixed_dictionaries({
    "metadata": maybe(st.fixed_dictionaries({
        "name": maybe(st.sampled_from(OPS)), "unit": maybe(st.just("second")),
        "loops": maybe(st.just(1)), contract.KEY_SUITE: maybe(st.just("lutz2009")),
        contract.KEY_BYTES: maybe(st.integers(0, 2 ** 40)),
        contract.KEY_CATEGORY: maybe(st.just("read-text"))})),
    "runs": maybe(st.lists(runs, max_size=3)),
})
pyperf_documents = st.fixed_dictionaries({
    "version": maybe(st.just("1.0")), "metadata": maybe(st.just({})),
    "benchmarks": maybe(st.lists(benchmarks, max_size=3)),
})
manifests = st.fixed_dictionaries({
    "run_id": maybe(st.just("R")), "profile": maybe(st.sampled_from(contract.PROFILES)),
    "suites": maybe(st.lists(maybe(st.just("lutz2009")), max_size=2)),
    "interpreters": maybe(st.dictionaries(st.sampled_from(["3.12", "3.13", "x"]), maybe(
        st.fixed_dictionaries({"status": maybe(st.sampled_from(["ok", "failed"])),
                               "version_info": maybe(st.just([3, 13, 0]))})), max_size=3)),
    "sessions": maybe(st.lists(maybe(st.fixed_dictionaries({
        "work_dir": maybe(st.just("/")), "pid": maybe(st.integers(-1, 2 ** 31))})),
        max_size=2)),
})


def as_bytes(document, cut: int | None) -> bytes:
    data = json.dumps(document, allow_nan=True).encode()
    return data if cut is None else data[:cut]


files = st.one_of(
    st.tuples(pyperf_documents, st.none() | st.integers(0, 400)).map(lambda t: as_bytes(*t)),
    st.binary(max_size=200))

FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


@FUZZ
@given(content=files)
def test_load_series_returns_rows_or_names_the_file(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("fuzz") / "3.13.json"
    path.write_bytes(content)
    try:
        rows = store.load_series(path)
    except store.ResultFileError as exc:
        assert str(path) in str(exc) or path.name in str(exc)
        return
    for row in rows:  # what the analysis relies on
        assert isinstance(row["op"], str) and row["op"]
        assert row["values"] and all(isinstance(v, float) and math.isfinite(v) and v > 0
                                     for v in row["values"])


@FUZZ
@given(manifest=manifests, cut=st.none() | st.integers(0, 200))
def test_read_manifest_returns_an_object_or_names_the_file(tmp_path_factory, manifest, cut):
    results = tmp_path_factory.mktemp("fuzz")
    (results / "R").mkdir()
    (results / "R" / "manifest.json").write_bytes(as_bytes(manifest, cut))
    try:
        loaded = store.Run(results, "R").read_manifest()
    except (store.ResultFileError, cli.BadInput) as exc:
        assert "manifest.json" in str(exc)
        return
    assert isinstance(loaded, dict)
    assert isinstance(loaded.get("interpreters", {}), dict)


def limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def tool(name: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / f"{name}.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          preexec_fn=limited)


def tree(directory: Path) -> dict:
    return {p.relative_to(directory): (p.read_bytes() if p.is_file() and not p.is_symlink()
                                       else None)
            for p in sorted(directory.rglob("*")) if "fifo" not in p.name}


SPECIAL = ["/dev/zero", "fifo", "directory", "dangling"]


@settings(max_examples=CLI_EXAMPLES, derandomize=True, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
@given(series=files, manifest=manifests | st.just(None),
       special=st.none() | st.sampled_from(SPECIAL))
def test_the_tools_exit_0_or_2_and_write_only_their_output(tmp_path_factory, series, manifest,
                                                           special):
    root = tmp_path_factory.mktemp("fuzz")
    results = root / "results"
    run_dir = results / "R"
    run_dir.mkdir(parents=True)
    write_pyperf_file(run_dir / "3.12.json", {op: [[0.01], [0.011]] for op in OPS})
    (run_dir / "3.13.json").write_bytes(series)
    if manifest is not None:
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
    if special == "/dev/zero":
        (run_dir / "3.14.json").symlink_to("/dev/zero")
    elif special == "fifo":
        os.mkfifo(run_dir / "3.14-fifo.json")
    elif special == "directory":
        (run_dir / "3.14.json").mkdir()
    elif special == "dangling":
        (run_dir / "3.14.json").symlink_to(root / "nowhere")
    out = root / "out"
    before = tree(root)
    for name, args in (("report", ["--results-dir", results, "--run-id", "R", "--out",
                                   out / "report.md", "--no-figures"]),
                       ("compare", [run_dir / "3.12.json", run_dir / "3.13.json"]),
                       ("history", ["3.13", "--results-dir", results])):
        done = tool(name, *args)
        assert done.returncode in (0, 1, 2), (name, done.stderr[-2000:])
        assert "Traceback" not in done.stderr, (name, done.stderr[-2000:])
        if name != "compare":
            assert done.returncode in (0, 2), (name, done.stderr[-2000:])
    after = tree(root)
    written = {p for p in after if p not in before or after[p] != before[p]}
    assert all(p.parts[0] == "out" for p in written), written
