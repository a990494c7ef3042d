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
    above = sum(1 for costs in profile["functions"].values()
                if costs["Ir"] >= callgrind.FUNCTION_SHARE * total)
    by_cost = kept[:min(above, callgrind.MAX_FUNCTIONS)]
    assert by_cost and all(row[2] >= callgrind.FUNCTION_SHARE * total for row in by_cost)
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


# A line loop in a window, as the counting pass runs it (suites/_counting.py): 3 calls of an
# op reading LINES lines, so buffered_iternext is entered 3 x (LINES + 1) times (the last
# call of each loop ends it).
LINES = 2000
LINE_WINDOW = r"""
import os, sys
sys.path.insert(0, sys.argv[1])
from _counting import ValgrindSwitch, in_fresh_frame
def op():
    with open(sys.argv[2], 'rb') as f:
        for line in f:
            pass
def window(_):
    os.getppid()
    for _ in range(3):
        op()
    os.getppid()
op()
switch = ValgrindSwitch()
switch.start()
in_fresh_frame(window)
switch.stop()
"""


def line_window_profile(tmp_path, interp):
    from iomatrix.paths import SUITES_DIR
    lines = tmp_path / "lines.bin"
    lines.write_bytes(b"".join(b"%070d\n" % i for i in range(LINES)))
    script = tmp_path / "window.py"
    script.write_text(LINE_WINDOW)
    out = tmp_path / interp.label
    out.mkdir()
    subprocess.run(["setarch", platform.machine(), "-R", "valgrind", "--tool=callgrind",
                    "--vgdb=no", f"--callgrind-out-file={out}/callgrind.%p",
                    "--dump-before=getppid", "--instr-atstart=no", interp.executable,
                    str(script), str(SUITES_DIR), str(lines)],
                   check=True, capture_output=True, timeout=300)
    dumps = counttools.callgrind_dumps(out)
    assert len(dumps) == 2, dumps
    return callgrind.read_profile(dumps[1])


@needs_valgrind
@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                    reason="the client requests are x86-64 machine code")
def test_calls_are_summed_over_every_call_edge_of_a_real_profile(tmp_path, machine_interpreters):
    """3.11 iterates lines through buffered_iternext's fast path; 3.12 (the io module's
    isolation) calls readline as a method every line: _io__Buffered_readline is entered once a
    line under 3.12 and not among 3.11's most-entered functions."""
    old = line_window_profile(tmp_path, need(machine_interpreters, "3.11"))
    new = line_window_profile(tmp_path, need(machine_interpreters, "3.12"))
    entries = 3 * (LINES + 1)
    for profile in (old, new):
        assert profile["functions"]["buffered_iternext"]["calls"] == entries
        assert profile["functions"]["_buffered_readline"]["calls"] == entries
    assert new["functions"]["_io__Buffered_readline"]["calls"] == entries
    assert old["functions"].get("_io__Buffered_readline", {"calls": 0})["calls"] < LINES / 10
    kept_old, kept_new = callgrind.kept_functions(old), callgrind.kept_functions(new)
    assert all(len(row) == 4 for row in kept_old + kept_new)
    one_side = callgrind.entered_one_side(kept_old, kept_new, 3, 3, limit=40)
    by_name = {row["name"]: row for row in one_side}
    assert by_name["_io__Buffered_readline"]["side"] == "b"
    assert by_name["_io__Buffered_readline"]["calls"] == pytest.approx(entries / 3)
    assert "__tls_get_addr" in by_name                   # a shared libpython's TLS, from 3.12
    assert callgrind.shared_libpython_only("__tls_get_addr")
    assert not callgrind.shared_libpython_only("_dl_runtime_resolve_xsavec")


def test_build_costs_are_told_apart_from_the_releases_code():
    """callgrind.build_only (issue 41): a shared libpython's TLS calls, the dynamic linker,
    PLT stubs and code callgrind could not name are the build's; everything else is code."""
    for name in ("__tls_get_addr", "_dl_runtime_resolve_xsavec", "_dl_fixup",
                 "_dl_lookup_symbol_x", "PyObject_Malloc@plt", "0x00000000048c73c0"):
        assert callgrind.build_only(name), name
    for name in ("buffered_iternext", "_PyEval_EvalFrameDefault", "memcpy",
                 "__memmove_avx_unaligned_erms", "unicode_count_impl", "dl_iterate_phdr"):
        assert not callgrind.build_only(name), name


def test_functions_matched_by_what_they_do_across_versions():
    """The stated tables: a rename (RENAMED) and work a release moved (SAME_WORK) are one
    function; 2.7's str.count search and 3.x's are one row."""
    assert callgrind.canonical_function("unicode_count") == "unicode_count_impl"
    assert callgrind.canonical_function("fastsearch.constprop.0") == "unicode_count_impl"
    assert callgrind.canonical_function("PyEval_EvalFrameEx") == "_PyEval_EvalFrameDefault"
    two_seven = [("fastsearch.constprop.0", "Objects/stringlib/fastsearch.h", 2432800, 25)]
    three_six = [("unicode_count", "Objects/unicodeobject.c", 2435125, 25)]
    (row,) = callgrind.where_instructions_went(two_seven, three_six, 1, 1)
    assert row["name"] == "unicode_count_impl" and row["change"] == 2435125 - 2432800
    assert row["names"] == {"a": ["fastsearch.constprop.0"], "b": ["unicode_count"]}
