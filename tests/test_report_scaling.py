"""A report's work grows with its input, not with its square (issue 34, item 6).

A report filtered the whole table once per op (and the counts' rows once per finding):
20,000 ops in 3 series took minutes. No timing here: the report of a run of many ops is
built with a tally of the work that a per-op filter does, the table's element-wise
comparisons (``frame["op"] == op``) and the counts' lookups (``countrows.build_lookup``),
and the tally must not grow with the number of ops. The runs come from
docs/experiments/many_ops.py (real pyperf-format files, counters files, allocator twins),
which times the report on 20,000 ops (docs/experiments/log.md).
"""
from __future__ import annotations

import subprocess
import sys

import pandas as pd

from conftest import ROOT
from iomatrix.analysing import analysis, countrows, counts
from iomatrix.reporting import pages
from iomatrix.storing import store

MANY_OPS = ROOT / "docs" / "experiments" / "many_ops.py"
RUN_ID = "20260101T000000Z-manyops"
COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "isin")


def generated_run(tmp_path, ops: int) -> store.Run:
    out = tmp_path / f"{ops}-ops"
    subprocess.run([sys.executable, str(MANY_OPS), "--ops", str(ops), "--counters",
                    "--allocator-twins", "--out", str(out)], check=True, capture_output=True,
                   text=True)
    return store.Run(out / "results", RUN_ID)


def tally_of_report(run: store.Run, monkeypatch) -> tuple[dict, pages.Pages]:
    """The report's pages, and how many table comparisons and count lookups it made."""
    tally = dict.fromkeys(("table comparisons", "count lookups built"), 0)

    def counted(original, what):
        def wrapper(*args, **kwargs):
            tally[what] += 1
            return original(*args, **kwargs)
        return wrapper
    for name in COMPARISONS:   # raising=True: a pandas without them fails here, not silently
        monkeypatch.setattr(pd.Series, name,
                            counted(getattr(pd.Series, name), "table comparisons"))
    # build_lookup lives in countrows (counts re-exports it): patched where CountRows calls it.
    monkeypatch.setattr(countrows, "build_lookup",
                        counted(countrows.build_lookup, "count lookups built"))
    try:
        built = pages.build_pages(analysis.load_run(run), draw=False)
    finally:
        monkeypatch.undo()
    return tally, built


def test_the_reports_work_on_the_table_does_not_grow_with_its_ops(tmp_path, monkeypatch):
    few, few_pages = tally_of_report(generated_run(tmp_path, 20), monkeypatch)
    many, many_pages = tally_of_report(generated_run(tmp_path, 200), monkeypatch)
    # Both reports are whole ones: every op on the suite page, counts and allocator read.
    assert "write_n00199_binaryMode" in many_pages.suites["lutz2009"]
    assert "write_n00019_binaryMode" in few_pages.suites["lutz2009"]
    assert many["count lookups built"] >= 1
    # 10 times the ops, the same work on the table and the counts: no per-op filtering
    # (one filter per op would add 180 comparisons; 200 ops, not 600, keep it quick).
    assert many == few, (few, many)


def test_count_lookups_are_built_once_per_set_of_rows():
    rows = counts.CountRows([
        {"series": s, "suite": "lutz2009", "op": f"op{k}", "counter": counter,
         "per_call": 4 + (s == "B"), "per_MiB": None, "bytes_per_call": 0,
         "method": "strace"}
        for s in ("A", "B") for k in range(50) for counter in ("syscalls", "syscall:read")])
    built = [counts.count_move(rows, f"op{k}", "A", "B") for k in range(50)]
    assert all(m["up"] and m["syscalls"] == [("read", 4, 5)] for m in built)
    assert counts.change_of(rows, "op7", "A", "B") == "`read` 4 → 5"
    assert counts.counted_series(rows, "op7") == {"A", "B"}
    assert rows.lookup is rows.lookup          # built once, kept
    # A plain list gives the same answers (a lookup built for the call).
    assert counts.count_move(list(rows), "op7", "A", "B") == built[7]
