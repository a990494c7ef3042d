"""The call path a step's instructions changed on: "most in" as a path, not one function.

A finding's instruction change is spread over many C functions; the function whose own
(self) instructions changed most says little on its own (``_PyObject_GetMethod`` +717K a
call) where the path says what happened (3.12's ``buffered_iternext`` calls ``readline`` as
a method once a line: ``buffered_iternext`` → ``PyObject_VectorcallMethod`` →
``_PyObject_GetMethod``). From what the counting pass keeps per op (iomatrix.callgrind:
``functions``, the self instructions and entries of each kept function, and
``call_edges``, the heaviest callers of each heavy function with the calls and inclusive
instructions of each edge), ``explain`` says:

1. which functions explain the step: the functions of the release's code (never the
   build's, ``callgrind.build_only``) whose self instructions per call moved the way the
   whole change did, largest first, until they make ``EXPLAINED`` of the code functions'
   net change (at most ``MAX_LISTED``);
2. the path of each: from the function up through its heaviest caller on the side where it
   ran more (the newer side for a function that grew, the older for one that shrank),
   passing through the build's functions without naming them (a PLT stub between two
   functions of a shared libpython), up to the eval loop (``STOP_AT``: every path of
   Python code runs under it, so it is where a path starts to say something), at most
   ``PATH_DEPTH`` functions, less the generic call machinery at its top
   (``CALL_MACHINERY``: the path starts at the function Python code called);
3. the groups: the functions whose paths start at one function (the C function the
   Python code called), with their paths' common part as the group's path, the sum of
   their changes, and how often the path's first edge was taken per call on each side;
4. apart: the build's share, the change of the build's functions (``__tls_get_addr`` of a
   shared libpython, PLT stubs, the dynamic linker), never a headline.

Functions are matched across versions by ``callgrind.canonical_function`` (its stated
tables ``RENAMED`` and ``SAME_WORK``: ``fastsearch`` is ``unicode_count_impl``, 2.7's file
object's ``file_read`` is ``_io__Buffered_read``, ...), in edges as in self costs.

Where the call edges are missing (a file counted before they were kept) ``explain`` raises
``Unavailable`` with ``absent`` set; where they are not what the counting pass writes (a
damaged file, a callgrind dump that could not be read) with ``absent`` unset: the finding
then says "call paths unavailable", and the report goes on.
"""
from __future__ import annotations

import dataclasses
import re

from iomatrix import callgrind
from iomatrix.analysing import countrows

# Functions are listed until they explain this share of the code functions' net change.
EXPLAINED = 0.5
MAX_LISTED = 4
# At most this many functions on a path (the changed one included), before the call
# machinery at its top is dropped.
PATH_DEPTH = 8
# The eval loop: every path of Python code runs under it, so a path is read from just below.
STOP_AT = frozenset({"_PyEval_EvalFrameDefault"})
# The generic call machinery between the eval loop and the C function Python code called
# (2.7 to 3.10's call_function, the _PyCFunction_FastCall*/_PyMethodDef_RawFastCall* and
# vectorcall trampolines, METH_* dispatch): the same for every call, it is dropped from the
# top of a path, which then starts at the function that was called (3.6's call_function →
# _PyCFunction_FastCallKeywords → _PyCFunction_FastCallDict → _codecs_utf_8_decode → ... is
# _codecs_utf_8_decode → ...). Inside a path it stays: there it is part of what changed
# (3.12's buffered_iternext → PyObject_VectorcallMethod → method_vectorcall_FASTCALL).
CALL_MACHINERY = re.compile(
    r"^(?:call_function|fast_function|do_call_core|ext_do_call|function_code_fastcall"
    r"|_PyCFunction_\w*Call\w*|PyCFunction_Call|_PyMethodDef_RawFastCall\w*"
    r"|_PyObject_FastCall\w*|_?PyObject_Call|PyObject_Vectorcall|_PyObject_VectorcallTstate"
    r"|PyVectorcall_Call|_PyObject_MakeTpCall|_PyFunction_Vectorcall|_PyFunction_FastCall\w*"
    r"|_PyEval_Vector|cfunction_call|cfunction_vectorcall_\w+|method_vectorcall_\w+"
    r"|PyEval_CallObjectWithKeywords)$")
# What the page says when a side's call edges cannot be used.
UNAVAILABLE = "call paths unavailable"


class Unavailable(ValueError):
    """A step's call paths cannot be read. ``absent``: the edges were never kept (a file
    counted before they were), not damaged."""

    def __init__(self, why: str, absent: bool = False):
        super().__init__(why)
        self.absent = absent


@dataclasses.dataclass
class Group:
    path: list              # canonical names, the outermost (called from Python code) first
    functions: list         # [(canonical name, change of self instructions per call)]
    change: float           # their sum, per call
    calls: tuple            # (a, b): times per call the path's first edge was taken (or its
    #                         only function entered), None where not kept on that side


@dataclasses.dataclass
class Explanation:
    groups: list            # Group, the largest change first
    code_change: float      # the net change of the release's code functions kept, per call
    build_change: float     # the build's functions' change, per call (callgrind.build_only)
    build_names: list       # their canonical names


def _valid_edges(edges) -> bool:
    return isinstance(edges, list) and all(
        isinstance(e, (list, tuple)) and len(e) == 4 and isinstance(e[0], str)
        and isinstance(e[1], str) and all(type(v) is int and v >= 0 for v in e[2:])
        for e in edges)


def _graph(calls: int, edges: list) -> dict:
    """{callee: [(caller, calls per call, inclusive per call)]}, canonical names, heaviest
    caller first; a function's edge into itself (after canonical names) left out."""
    merged = {}
    for caller, callee, n, inclusive in edges:
        pair = (callgrind.canonical_function(caller), callgrind.canonical_function(callee))
        if pair[0] == pair[1]:
            continue
        had = merged.get(pair, (0, 0))
        merged[pair] = (had[0] + n, had[1] + inclusive)
    callers = {}
    for (caller, callee), (n, inclusive) in merged.items():
        callers.setdefault(callee, []).append((caller, n / calls, inclusive / calls))
    for found in callers.values():
        found.sort(key=lambda c: (-c[2], -c[1], c[0]))
    return callers


def path_to(name: str, callers: dict) -> list:
    """The path from the outermost function below the eval loop down to ``name``, through
    each function's heaviest caller; the build's functions are passed through, not named,
    and the call machinery at its top (CALL_MACHINERY) dropped."""
    path, seen, node = [name], {name}, name
    while len(path) < PATH_DEPTH:
        above = callers.get(node)
        if not above:
            break
        caller = above[0][0]
        while callgrind.build_only(caller) and caller not in seen:
            seen.add(caller)
            further = callers.get(caller)
            if not further:
                caller = None
                break
            caller = further[0][0]
        if caller is None or caller in STOP_AT or caller in seen or name in STOP_AT:
            break
        seen.add(caller)
        path.insert(0, caller)
        node = caller
    while len(path) > 1 and CALL_MACHINERY.match(path[0]):
        del path[0]
    return path


def _edge_calls(callers: dict, caller: str, callee: str, depth: int = 3):
    """Calls per call from ``caller`` into ``callee``, directly or through the build's
    functions (a PLT stub between them: the stub's edge into ``callee``); None if not kept."""
    for name, n, _ in callers.get(callee, ()):
        if name == caller:
            return n
    for name, n, _ in callers.get(callee, ()):
        if depth and callgrind.build_only(name) and \
                _edge_calls(callers, caller, name, depth - 1) is not None:
            return n
    return None


def explain(a: tuple, b: tuple) -> Explanation:
    """The call paths of a step from side ``a`` to side ``b``, each side (counted calls,
    kept functions, call edges or None) as the counting pass stored them. Raises
    Unavailable (see the module's docstring)."""
    sides = []
    for calls, functions, edges in (a, b):
        if edges is None:
            raise Unavailable("no call edges (counted before they were kept)", absent=True)
        if isinstance(edges, str):      # the counting pass's reason (load_call_graphs)
            raise Unavailable(edges)
        if not _valid_edges(edges) or not isinstance(calls, int) or calls < 1 \
                or not isinstance(functions, list) or not functions:
            raise Unavailable("the stored call edges or functions are not what the counting "
                              "pass writes")
        sides.append((calls, functions, _graph(calls, edges)))
    (calls_a, functions_a, graph_a), (calls_b, functions_b, graph_b) = sides
    try:
        rows = callgrind.where_instructions_went(functions_a, functions_b, calls_a, calls_b,
                                                 top=None)
    except (TypeError, ValueError, IndexError) as exc:
        raise Unavailable(f"the stored functions cannot be read: {exc}") from None
    build = [row for row in rows if callgrind.build_only(row["name"])]
    code = [row for row in rows if not callgrind.build_only(row["name"])]
    net = sum(row["change"] for row in code)
    chosen, explained = [], 0.0
    if net:
        for row in sorted((row for row in code if row["change"] * net > 0),
                          key=lambda row: (-abs(row["change"]), row["name"])):
            chosen.append(row)
            explained += row["change"]
            if abs(explained) >= EXPLAINED * abs(net) or len(chosen) >= MAX_LISTED:
                break
    by_start = {}
    for row in chosen:
        path = path_to(row["name"], graph_b if row["change"] > 0 else graph_a)
        by_start.setdefault(path[0], []).append((path, row))
    groups = []
    for members in by_start.values():
        common = members[0][0]
        for path, _ in members[1:]:
            size = 0
            while size < min(len(common), len(path)) and common[size] == path[size]:
                size += 1
            common = common[:size]
        if len(common) >= 2:
            taken = (_edge_calls(graph_a, common[0], common[1]),
                     _edge_calls(graph_b, common[0], common[1]))
        else:
            row = next((r for _, r in members if r["name"] == common[0]), None)
            taken = (row["calls_a"], row["calls_b"]) if row else (None, None)
        groups.append(Group(common, [(r["name"], r["change"]) for _, r in members],
                            sum(r["change"] for _, r in members), taken))
    groups.sort(key=lambda g: (-abs(g.change), g.path))
    return Explanation(groups, net, sum(row["change"] for row in build),
                       sorted(row["name"] for row in build))


def load_call_graphs(run_dir) -> dict:
    """{(series, op): (counted calls, kept functions, call edges or None)} of a run's counters
    files, for the ops whose functions were kept; None edges: a file of before they were
    kept; a string instead of edges (and no functions): why callgrind's dump gave none. Files that cannot be read or whose functions are misattributed are left out
    (countrows.usable_counters_documents)."""
    found = {}
    for series, document in countrows.usable_counters_documents(run_dir):
        for op, entry in document["ops"].items():
            if entry.get("functions"):
                found[(series, op)] = (entry.get("calls") or 1, entry["functions"],
                                       entry.get("call_edges"))
            elif entry.get("call_paths_unavailable"):
                # callgrind's dump was damaged or cut short: said on the page, never guessed
                found[(series, op)] = (entry.get("calls") or 1, [],
                                       str(entry["call_paths_unavailable"]))
    return found


def step_paths(sides: dict, op: str, before: str, after: str) -> Explanation:
    """``explain`` for one op's step from ``sides``: {(series, op): (calls, functions, edges)}
    (``load_call_graphs``). Raises Unavailable, ``absent`` where a side was not
    counted with functions at all."""
    a, b = sides.get((before, op)), sides.get((after, op))
    if a is None or b is None:
        raise Unavailable("a side has no kept functions", absent=True)
    return explain(a, b)


def path_text(group: Group) -> str:
    """The path in plain words (names unescaped: the caller escapes): "a → b → c"."""
    return " → ".join(group.path)
