"""A finding's "most in" as the call path that changed (iomatrix/analysing/callpaths.py, issue
41 item 3): callgrind's call edges kept by the counting pass, the functions that explain a step
grouped by path, matched across versions by the stated table, the build's share apart.

Real valgrind runs of real interpreters for the paths (3.11's and 3.12's line loop); the
table, the build's split and bad input on small inline sides. No timing is asserted.
"""
from __future__ import annotations

import gzip
import json
import platform
import shutil

import pytest

from conftest import need
from iomatrix import callgrind, stats
from iomatrix.analysing import callpaths, comparisons
from iomatrix.measuring import countcache, counttools
from iomatrix.storing import countsfile
from test_callgrind import LINES, line_window_profile

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("setarch") is None
    or platform.machine() not in ("x86_64", "AMD64"),
    reason="valgrind or setarch not installed, or not x86-64 (the client requests)")

OP = "read_byLines_binaryMode"


def kept(profile):
    functions = callgrind.kept_functions(profile)
    return functions, callgrind.kept_edges(profile, functions)


@needs_valgrind
def test_a_real_line_loop_names_the_readline_method_path(tmp_path, machine_interpreters):
    """3.12 calls readline as a method once a line from buffered_iternext (gh-101819): the
    path of the step is buffered_iternext -> PyObject_VectorcallMethod, taken once a line
    under 3.12 and never under 3.11; the shared libpython's __tls_get_addr is the build's
    share, on no path."""
    old = line_window_profile(tmp_path, need(machine_interpreters, "3.11"))
    new = line_window_profile(tmp_path, need(machine_interpreters, "3.12"))
    sides = []
    for profile in (old, new):
        functions, edges = kept(profile)
        assert edges and len(edges) <= callgrind.MAX_EDGES
        assert all(caller != callee for caller, callee, _, _ in edges)
        total = profile["events"]["Ir"]
        assert all(0 < inclusive <= total for _, _, _, inclusive in edges)
        # what the counting pass stores of a window: the same edges
        sides.append((3, functions, edges))
    found = callpaths.explain(*sides)
    top = found.groups[0]
    assert top.path[:2] == ["buffered_iternext", "PyObject_VectorcallMethod"], top
    assert top.change > 0
    before, after = top.calls
    assert before is None and after == pytest.approx(LINES + 1)    # once a line, and the end
    assert "_PyObject_GetMethod" in dict(top.functions)
    assert not any(callgrind.build_only(name) for group in found.groups
                   for name in group.path + [n for n, _ in group.functions])
    assert "__tls_get_addr" in found.build_names and found.build_change > 0


@needs_valgrind
def test_a_damaged_or_truncated_callgrind_file_makes_call_paths_unavailable(tmp_path,
                                                                            machine_interpreters):
    """The counting pass names the op's instructions failed (window_counts: None); the check
    tool's reader says "call paths unavailable"; neither raises anything else."""
    import importlib.util
    from iomatrix.paths import REPO_ROOT as ROOT
    profile_dir = tmp_path / "p"
    profile_dir.mkdir()
    line_window_profile(profile_dir, need(machine_interpreters, "3.12"))
    dump = counttools.callgrind_dumps(profile_dir / "3.12")[1]
    text = dump.read_text()
    truncated = tmp_path / "callgrind.1.2"
    truncated.write_text(text[:len(text) // 2])
    damaged = tmp_path / "callgrind.2.2"
    damaged.write_text(text.replace("calls=", "calls=x", 1))
    spec = importlib.util.spec_from_file_location(
        "callpaths_check", ROOT / "docs" / "experiments" / "callpaths_check.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    assert check.read_window(dump)[2]                       # the whole file reads
    whole = counttools.window_counts(dump)
    assert whole["functions"] and whole["call_edges"]
    for bad in (truncated, damaged):
        # the header's totals stand; the functions and call paths are said to be unavailable
        counted = counttools.window_counts(bad)
        assert counted["instructions"] == whole["instructions"]
        assert "functions" not in counted and "call_edges" not in counted
        assert counted["call_paths_unavailable"]
        with pytest.raises(callpaths.Unavailable):
            check.read_window(bad)
    good = check.read_window(dump)
    path, note = check.whole_op_path({"a": callpaths.Unavailable("x"), "b": good}, OP, "a", "b")
    assert path is None and note == callpaths.UNAVAILABLE


# -- the stated table: functions matched by what they do -------------------------------------

@pytest.mark.parametrize("old, new", [
    ("fastsearch.constprop.0", "unicode_count_impl"),      # 2.7's str.count search
    ("unicode_count", "unicode_count_impl"),               # 3.12's Argument Clinic
    ("PyEval_EvalFrameEx", "_PyEval_EvalFrameDefault"),    # the eval loop (PEP 523)
    ("file_read", "_io__Buffered_read"),                   # 2.7's file object ...
    ("file_iternext", "buffered_iternext"),
    ("get_line", "_buffered_readline"),
    ("file_write", "_io_BufferedWriter_write"),
    ("textiowrapper_write", "_io_TextIOWrapper_write"),    # ... and 2.7's io module
    ("fileio_readinto", "_io_FileIO_readinto"),
])
def test_the_equivalence_table(old, new):
    assert callgrind.canonical_function(old) == callgrind.canonical_function(new) == new


def test_a_2_7_file_method_and_its_3_x_job_are_one_function_on_a_path():
    """2.7's file_iternext and 3.6's buffered_iternext are one function: its change is one
    row, and a path through it reads the same on both sides."""
    a = (1, [["file_iternext", "Objects/fileobject.c", 100_000, 1000],
             ["get_line", "Objects/fileobject.c", 50_000, 1000]],
         [["PyEval_EvalFrameEx", "file_iternext", 1000, 150_000],
          ["file_iternext", "get_line", 1000, 50_000]])
    b = (1, [["buffered_iternext", "Modules/_io/bufferedio.c", 300_000, 1000],
             ["_buffered_readline", "Modules/_io/bufferedio.c", 60_000, 1000]],
         [["_PyEval_EvalFrameDefault", "buffered_iternext", 1000, 360_000],
          ["buffered_iternext", "_buffered_readline", 1000, 60_000]])
    found = callpaths.explain(a, b)
    (group,) = found.groups
    assert group.path == ["buffered_iternext"]
    assert group.functions == [("buffered_iternext", 200_000)]
    assert group.calls == (1000, 1000)


# -- the build's share apart -------------------------------------------------------------------

def sides_with_a_build_cost():
    a = (1, [["buffered_iternext", "Modules/_io/bufferedio.c", 100_000, 10],
             ["_PyEval_EvalFrameDefault", "Python/ceval.c", 500_000, 1]],
         [["_PyEval_EvalFrameDefault", "buffered_iternext", 10, 100_000]])
    b = (1, [["__tls_get_addr", "elf/dl-tls.c", 800_000, 9000],
             ["_PyObject_GetMethod", "Objects/object.c", 255_000, 8000],
             ["PyObject_VectorcallMethod", "Objects/call.c", 245_000, 8000],
             ["buffered_iternext", "Modules/_io/bufferedio.c", 110_000, 10],
             ["_PyEval_EvalFrameDefault", "Python/ceval.c", 510_000, 1],
             ["0x00000000048c73c0", "???", 50_000, 100]],
         [["_PyEval_EvalFrameDefault", "buffered_iternext", 10, 1_500_000],
          # a PLT stub of the shared libpython between two of its functions
          ["buffered_iternext", "0x00000000048c73c0", 8000, 1_300_000],
          ["0x00000000048c73c0", "PyObject_VectorcallMethod", 8000, 1_250_000],
          ["PyObject_VectorcallMethod", "_PyObject_GetMethod", 8000, 700_000],
          ["_PyObject_GetMethod", "__tls_get_addr", 8000, 400_000],
          ["PyObject_VectorcallMethod", "PyObject_VectorcallMethod", 5, 10]])
    return a, b


def test_the_build_is_never_on_a_path_nor_the_headline():
    found = callpaths.explain(*sides_with_a_build_cost())
    top = found.groups[0]
    assert top.path == ["buffered_iternext", "PyObject_VectorcallMethod"]
    # 255K is under half the code's net change (520K): the next function joins it
    assert dict(top.functions) == {"_PyObject_GetMethod": 255_000,
                                   "PyObject_VectorcallMethod": 245_000}
    assert top.calls == (None, 8000)    # through the stub, counted on its edge
    assert found.build_names == ["0x00000000048c73c0", "__tls_get_addr"]
    assert found.build_change == 850_000
    assert callpaths.path_to("_PyEval_EvalFrameDefault", {}) == ["_PyEval_EvalFrameDefault"]


def counted_finding(op):
    """(count rows, finding) of ``op`` 3.11 -> 3.12, 1.9x: 600,000 -> 1,960,000 instructions
    and 10 system calls a call on each side (test_controls uses it too)."""
    rows = [{"series": s, "op": op, "suite": "lutz2009", "counter": "instructions",
             "per_call": n, "per_MiB": None, "bytes_per_call": 1000, "implementation": "cpython",
             "method": "callgrind"} for s, n in (("3.11", 600_000), ("3.12", 1_960_000))]
    rows += [{**row, "counter": "syscalls", "per_call": 10, "method": "strace"} for row in rows]
    found = comparisons.Finding(op, "3.11", "3.12",
                                stats.Comparison(1.9, 1.8, 2.0, True, 10, 10, True))
    return rows, found


def finding_rows(sides):
    functions = {("3.11", OP): sides[0][:2], ("3.12", OP): sides[1][:2]}
    graphs = {("3.11", OP): sides[0], ("3.12", OP): sides[1]}
    return (functions, graphs) + counted_finding(OP)


def test_the_page_names_the_path_and_the_build_apart():
    from iomatrix.reporting import findings
    functions, graphs, rows, found = finding_rows(sides_with_a_build_cost())
    cell = findings.top_function(functions, rows, found, graphs).replace("\u00a0", " ")
    assert cell.startswith("most in `buffered_iternext` → `PyObject_VectorcallMethod`<br>"
                           "+500,000/call in 2 functions")
    assert "taken – → 8,000/call" in cell and "build: +850,000/call" in cell
    assert "tls" not in cell.split("build")[0]
    # without edges (a file of before): the function, as before, and nothing said of paths
    old = {key: (calls, functions, None) for key, (calls, functions, _) in graphs.items()}
    cell = findings.top_function(functions, rows, found, old)
    assert cell.startswith("most in `_PyObject_GetMethod`") and "call paths" not in cell


@pytest.mark.parametrize("edges", [
    [["a", "b", -1, 5]], [["a", "b", 1]], "edges", [[1, "b", 1, 5]], [["a", "b", 1.5, 5]]])
def test_damaged_stored_edges_say_call_paths_unavailable_and_the_page_goes_on(edges):
    from iomatrix.reporting import findings
    functions, graphs, rows, found = finding_rows(sides_with_a_build_cost())
    graphs[("3.12", OP)] = (1, graphs[("3.12", OP)][1], edges)
    with pytest.raises(callpaths.Unavailable) as raised:
        callpaths.step_paths(graphs, OP, "3.11", "3.12")
    assert not raised.value.absent
    cell = findings.top_function(functions, rows, found, graphs)
    assert cell.startswith("most in `_PyObject_GetMethod`")      # the function, as before
    assert cell.endswith("<br>call paths unavailable")


def test_function_names_are_data_on_the_page():
    from iomatrix.reporting import findings
    a, b = sides_with_a_build_cost()
    hostile = "<img src=x onerror=alert(1)>*_[x](y)`|"
    rename = {"buffered_iternext": hostile}
    b = (b[0], [[rename.get(f[0], f[0])] + f[1:] for f in b[1]],
         [[rename.get(e[0], e[0]), rename.get(e[1], e[1])] + e[2:] for e in b[2]])
    a = (a[0], [[rename.get(f[0], f[0])] + f[1:] for f in a[1]],
         [[rename.get(e[0], e[0]), rename.get(e[1], e[1])] + e[2:] for e in a[2]])
    functions, graphs, rows, found = finding_rows((a, b))
    cell = findings.top_function(functions, rows, found, graphs)
    assert "<img" not in cell and "|" not in cell.replace("\\|", "")


def test_call_edges_are_stored_validated_and_cached(tmp_path):
    """The counters file's schema and the counts cache accept call_edges; a file without them
    is read as before (its edges None: no path, nothing guessed)."""
    path = tmp_path / "3.12.counters.json.gz"
    entry = {"suite": "lutz2009", "bytes_per_call": 10, "calls": 1, "instructions": 1000,
             "functions": [["f", "f.c", 900, 1]], "call_edges": [["g", "f", 1, 900]]}
    document = {"iomatrix_counters_version": 1, "series": "3.12", "calls": 1,
                "fixtures": "counting", "methods": {}, "skipped": {},
                "ops": {OP: entry, "old": {k: v for k, v in entry.items() if k != "call_edges"}}}
    with gzip.open(path, "wt") as f:
        json.dump(document, f)
    assert countsfile.read_document(path)["ops"][OP]["call_edges"] == [["g", "f", 1, 900]]
    graphs = callpaths.load_call_graphs(tmp_path)
    assert graphs[("3.12", OP)][2] == [["g", "f", 1, 900]]
    assert graphs[("3.12", "old")][2] is None
    assert countcache.valid_value("instructions", {k: entry[k] for k in
                                                   ("instructions", "functions", "call_edges")})


def test_a_side_whose_dump_was_damaged_says_call_paths_unavailable_on_the_page(tmp_path):
    """The counting pass kept the totals of a damaged dump and why it has no functions
    (counttools.window_counts): the finding's cell says so, and the report goes on."""
    from iomatrix.reporting import findings
    path = tmp_path / "3.12.counters.json"
    entry = {"suite": "lutz2009", "bytes_per_call": 10, "calls": 1, "instructions": 1000,
             "call_paths_unavailable": "callgrind's dump ends before its totals line"}
    document = {"iomatrix_counters_version": 1, "series": "3.12", "calls": 1,
                "fixtures": "counting", "methods": {}, "skipped": {}, "ops": {OP: entry}}
    path.write_text(json.dumps(document))
    graphs = callpaths.load_call_graphs(tmp_path)
    functions, _, rows, found = finding_rows(sides_with_a_build_cost())
    graphs[("3.11", OP)] = sides_with_a_build_cost()[0]
    del functions[("3.12", OP)]
    assert findings.top_function(functions, rows, found, graphs) == callpaths.UNAVAILABLE


def test_the_call_machinery_at_the_top_of_a_path_is_dropped_and_kept_inside():
    """3.6 reaches a C function through call_function and the fast-call trampolines: the
    path starts at the function called; 3.12's method call inside buffered_iternext stays."""
    callers = {
        "ascii_decode": [("PyUnicode_DecodeUTF8Stateful", 7, 900)],
        "PyUnicode_DecodeUTF8Stateful": [("_codecs_utf_8_decode", 7, 950)],
        "_codecs_utf_8_decode": [("_PyCFunction_FastCallDict", 7, 960)],
        "_PyCFunction_FastCallDict": [("_PyCFunction_FastCallKeywords", 7, 970)],
        "_PyCFunction_FastCallKeywords": [("call_function", 7, 980)],
        "call_function": [("_PyEval_EvalFrameDefault", 7, 990)],
        "_PyObject_GetMethod": [("PyObject_VectorcallMethod", 10, 100)],
        "PyObject_VectorcallMethod": [("buffered_iternext", 10, 200)],
        "buffered_iternext": [("method_vectorcall_NOARGS", 1, 300)],
        "method_vectorcall_NOARGS": [("_PyEval_EvalFrameDefault", 1, 400)],
    }
    assert callpaths.path_to("ascii_decode", callers) == [
        "_codecs_utf_8_decode", "PyUnicode_DecodeUTF8Stateful", "ascii_decode"]
    assert callpaths.path_to("_PyObject_GetMethod", callers) == [
        "buffered_iternext", "PyObject_VectorcallMethod", "_PyObject_GetMethod"]
    # a function that is itself machinery keeps its own name
    assert callpaths.path_to("call_function", callers) == ["call_function"]


def test_the_suite_page_says_every_path_and_the_build_apart():
    from iomatrix.reporting.callpath_words import paths_sentence
    _, graphs, _, _ = finding_rows(sides_with_a_build_cost())
    said = paths_sentence(graphs, OP, "3.11", "3.12").replace("\u00a0", " ")
    assert "`buffered_iternext` → `PyObject_VectorcallMethod`: +500,000/call " \
           "(`_PyObject_GetMethod` +255,000/call, `PyObject_VectorcallMethod` +245,000/call), " \
           "taken – → 8,000/call" in said
    assert said.endswith("The build's share, apart: +850,000/call in `0x00000000048c73c0`, "
                         "`__tls_get_addr`.")
    graphs[("3.12", OP)] = (1, [], "callgrind's dump ends <b>before</b> its totals line")
    said = paths_sentence(graphs, OP, "3.11", "3.12")
    assert said.startswith("Call paths unavailable: ") and "<b>" not in said
    graphs[("3.12", OP)] = (1, graphs[("3.11", OP)][1], None)
    assert paths_sentence(graphs, OP, "3.11", "3.12") is None
