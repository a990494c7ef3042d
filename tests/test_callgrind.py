"""Callgrind's output as the counting pass keeps it (iomatrix/callgrind.py): event totals,
simulated cache misses, estimated cycles and the functions the instructions ran in.

Real valgrind runs of real interpreters; counts are asserted only where they are exact by
construction (self costs add up to at most the total), never a timing.
"""
from __future__ import annotations

import platform
import shutil
import subprocess

import pytest

from conftest import need
from iomatrix import callgrind
from iomatrix.measuring import counters, counttools
from iomatrix.storing import store
from test_counters import BLOCKS, CONDITIONS, series_of

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None or
                                    shutil.which("setarch") is None,
                                    reason="valgrind or setarch not installed")


@needs_valgrind
def test_a_real_profile_has_every_event_and_self_costs_that_add_up(tmp_path, machine_interpreters):
    interp = need(machine_interpreters, "3.12")
    out = tmp_path / "callgrind.out"
    subprocess.run(["setarch", platform.machine(), "-R", "valgrind", "--tool=callgrind",
                    f"--callgrind-out-file={out}", *callgrind.CACHE_OPTIONS,
                    interp.executable, "-c", "b'x' * 1000000"],
                   check=True, capture_output=True, timeout=120)
    profile = callgrind.read_profile(out)
    assert set(profile["events"]) == set(callgrind.EVENTS)
    total = profile["events"]["Ir"]
    self_costs = sum(costs["Ir"] for costs in profile["functions"].values())
    # Self costs exclude what a function called: they add up to the total, never past it.
    assert 0.99 * total <= self_costs <= total
    kept = callgrind.kept_functions(profile)
    by_cost = [row for row in kept if row[2] >= callgrind.FUNCTION_SHARE * total]
    assert by_cost and kept[:len(by_cost)] == by_cost
    assert [row[2] for row in by_cost] == sorted((row[2] for row in by_cost), reverse=True)
    # then the most-entered of the others, most entered first
    rest = kept[len(by_cost):]
    assert [row[3] for row in rest] == sorted((row[3] for row in rest), reverse=True)
    assert all(len(row) == 4 and row[3] >= 0 for row in kept)
    cache = callgrind.cache_counts(profile)
    assert set(cache) == set(callgrind.EVENTS[1:])
    cycles = callgrind.estimated_cycles(total, cache)
    assert cycles >= total + cache["Dr"] + cache["Dw"]


@needs_valgrind
def test_the_counting_pass_keeps_cache_counts_and_functions_per_op(tmp_path, machine_interpreters):
    interp = need(machine_interpreters, "3.12")
    fixtures = tmp_path / "fixtures"
    counters.make_fixtures(["lutz2009"], "smoke", fixtures)
    run = store.Run(tmp_path / "results", "R")
    run.make_directory()
    series = series_of(interp, [BLOCKS])
    work = tmp_path / "work"
    entry = counters.count_series(run, series, ("instructions",),
                                  counttools.tool_problems(("instructions",), work), fixtures,
                                  work, "smoke", CONDITIONS, 120.0,
                                  counttools.methods(("instructions",)), log=lambda m: None)
    assert entry["status"] == "ok"
    op = counters.read_document(run.counters_file(series.series))["ops"][BLOCKS]
    assert op["instructions"] > 0
    assert set(op["cache"]) == set(callgrind.EVENTS[1:])
    names = [name for name, _, _, _ in op["functions"]]
    assert names and len(names) == len(set(names))
    assert sum(ir for _, _, ir, _ in op["functions"]) <= op["instructions"]
    assert callgrind.entered_bound(op["functions"]) is not None


def test_where_the_instructions_went_names_one_sided_functions():
    a = [["read_loop", "io.c", 1000], ["gone", "old.c", 300], ["same", "x.c", 50]]
    b = [["read_loop", "io.c", 1600], ["new_helper", "new.c", 200], ["same", "x.c", 50]]
    rows = callgrind.where_instructions_went(a, b, calls_a=1, calls_b=1, top=5)
    by_name = {row["name"]: row for row in rows}
    assert [row["name"] for row in rows[:3]] == ["read_loop", "gone", "new_helper"]
    assert by_name["gone"]["b"] is None and by_name["new_helper"]["a"] is None
    assert by_name["read_loop"]["share"] == pytest.approx(600 / 500)
    assert by_name["same"]["change"] == 0


def test_estimated_cycles_weights():
    cache = {"Dr": 40, "Dw": 10, "I1mr": 2, "D1mr": 5, "D1mw": 3, "ILmr": 1, "DLmr": 1,
             "DLmw": 0}
    # accesses 150; L1 misses 10, of which 2 went to RAM: 140 + 5 * 8 + 35 * 2
    assert callgrind.estimated_cycles(100, cache) == 140 + 40 + 70
    assert callgrind.estimated_cycles(100, {}) is None


@pytest.mark.parametrize("text, message", [
    ("", "no events or summary"),
    ("events: Ir\nfn=(3)\n", "used before it is defined"),
    ("events: Ir\nfn=(3 broken\n", "bad compressed name"),
])
def test_a_damaged_profile_is_a_clear_error(tmp_path, text, message):
    path = tmp_path / "callgrind.out"
    path.write_text(text)
    with pytest.raises(callgrind.CallgrindFormatError, match=message):
        callgrind.read_profile(path)
    assert counttools.window_counts(path) is None


@pytest.mark.parametrize("name, canonical", [
    ("PyEval_EvalFrameEx", "_PyEval_EvalFrameDefault"),          # renamed: 2.7 -> 3.6
    ("PyEval_EvalFrameEx'2", "_PyEval_EvalFrameDefault"),        # and a recursion level
    ("_PyObject_Alloc.constprop.0", "_PyObject_Alloc"),          # compiler clones
    ("take_gil.isra.0.part.0", "take_gil"),
    ("list_resize.cold", "list_resize"),
    ("unicode_decode.lto_priv.0", "unicode_decode"),
    ("__GI__IO_un_link.part.0", "_IO_un_link"),                  # glibc's internal alias
    ("fclose@@GLIBC_2.2.5", "fclose"),                           # a symbol version
    ("__memcpy_avx_unaligned_erms", "memcpy/memmove (libc)"),    # glibc's ifunc variants
    ("__memmove_avx_unaligned_erms", "memcpy/memmove (libc)"),
    ("__memmove_sse2_unaligned_erms", "memcpy/memmove (libc)"),
    ("memcpy@GLIBC_2.2.5", "memcpy/memmove (libc)"),
    ("__memchr_avx2", "memchr (libc)"),
    ("__strlen_evex", "strlen (libc)"),
    ("__memset_avx2_unaligned_erms", "memset (libc)"),
    ("_PyEval_EvalFrameDefault", "_PyEval_EvalFrameDefault"),    # the rest is itself
    ("__tls_get_addr", "__tls_get_addr"),
    ("ascii_decode", "ascii_decode"),
])
def test_canonical_function_rule(name, canonical):
    assert callgrind.canonical_function(name) == canonical


def test_functions_under_two_names_are_one_row_and_never_one_sided():
    """The reference run's "only in" rows: the eval loop under its 2.7 name, memcpy under
    another ifunc variant, a clone; each present on both sides, so one two-sided row."""
    a = [["PyEval_EvalFrameEx", "ceval.c", 5000], ["__memmove_avx_unaligned_erms", "???", 100],
         ["pymalloc_alloc.constprop.0", "obmalloc.c", 40]]
    b = [["_PyEval_EvalFrameDefault", "ceval.c", 2000], ["__memcpy_avx_unaligned_erms", "???", 900],
         ["pymalloc_alloc", "obmalloc.c", 40], ["ascii_decode", "unicodeobject.c", 300]]
    rows = callgrind.where_instructions_went(a, b, calls_a=1, calls_b=1, top=10)
    by_name = {row["name"]: row for row in rows}
    assert set(by_name) == {"_PyEval_EvalFrameDefault", "memcpy/memmove (libc)",
                            "pymalloc_alloc", "ascii_decode"}
    for name in ("_PyEval_EvalFrameDefault", "memcpy/memmove (libc)", "pymalloc_alloc"):
        assert by_name[name]["a"] is not None and by_name[name]["b"] is not None, name
    assert by_name["_PyEval_EvalFrameDefault"]["names"] == {
        "a": ["PyEval_EvalFrameEx"], "b": ["_PyEval_EvalFrameDefault"]}
    assert by_name["ascii_decode"]["a"] is None     # only in B: 2.7 decodes nothing
    assert by_name["_PyEval_EvalFrameDefault"]["change"] == -3000
