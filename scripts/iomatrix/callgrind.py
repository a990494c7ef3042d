"""Callgrind's output, read: event totals, simulated cache misses, and where the instructions ran.

The counting pass runs callgrind with its cache simulation on (``--cache-sim=yes``)
and a fixed cache geometry (``CACHE_OPTIONS``), and keeps per op:

- the totals of every event (instructions ``Ir``, data reads ``Dr`` and writes
  ``Dw``, first-level misses ``I1mr D1mr D1mw``, last-level misses ``ILmr DLmr
  DLmw``);
- the functions the instructions ran in: a function's *self* instructions (not
  those of what it called), for every function above ``FUNCTION_SHARE`` of the
  op's total, matched across interpreters by name.

- how often each function was entered: the calls into it, summed over its callers
  (callgrind's call edges, ``calls=N``), for the kept functions and for the most-entered
  ones (``MAX_CALLED_FUNCTIONS``), so that a function entered on one side and not on the
  other (a path one version takes and the other does not) is seen even when its self cost
  is small.

Hand-written, on purpose: ``callgrind_annotate`` is a Perl script that prints text for
people, and the one parser on PyPI, gprof2dot's ``CallgrindParser`` (2025.4.14), is the
inside of a graph-drawing script, not a documented API: it reads into its own graph model
made for drawing, and would be one more dependency of the counting pass for what is
about 30 lines here. This
module parses the part we need: name compression (``fn=(12) name`` defines id 12,
``fn=(12)`` reuses it), the position columns, and the call edges: ``cfn=`` names the callee,
``calls=N target`` says it was called N times from there, and the cost line after it is the
inclusive cost of those calls, which belongs to the callee, not to the caller's self cost;
``read_profile`` keeps each caller → callee edge (calls, inclusive instructions) and
``kept_edges`` the ones stored per op, for the call paths of a step
(analysing/callpaths.py). The file ends with callgrind's ``totals:`` line: a file without
it was cut short (``complete``).

Estimated cycles: ``L1 hits + 5 x LL hits + 35 x RAM hits``, the weights of
cachegrind's documentation (its "rough estimate" of cycles, which iai-callgrind
also uses), where L1 hits are accesses that did not miss the first level, LL
hits first-level misses that hit the last level, and RAM hits last-level misses.
A count of memory behaviour, not a timing: it repeats as the instruction count
does. The simulated caches see only instrumented code: with instrumentation
switched on at the window (counters.py), the window starts with whatever the
simulation last held, not with what the untimed warm-up call left in a real cache,
so first-level misses of a short call are a little high; alike for every
interpreter, and repeatable.
"""
from __future__ import annotations

import re
from pathlib import Path

EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
# The simulated caches are fixed, not detected: valgrind takes them from CPUID, which a VM
# reports as its host likes (one machine of this kind said LL: 256 MiB, direct-mapped), so
# two hosts would simulate different caches and their counts could not be compared.
CACHE_OPTIONS = ["--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64",
                 "--LL=8388608,16,64"]
CACHE_DESCRIPTION = ("callgrind --cache-sim=yes, caches fixed: I1 and D1 32 KiB 8-way, "
                     "LL 8 MiB 16-way, 64 B lines")
# Weights of cachegrind's documented rough cycle estimate (and iai-callgrind's).
LL_HIT_CYCLES = 5
RAM_HIT_CYCLES = 35
# A function is kept when its self instructions are at least this share of the op's total;
# at most MAX_FUNCTIONS of them. Enough to say where a change of a few percent went.
FUNCTION_SHARE = 0.002
MAX_FUNCTIONS = 40
# Besides those, the functions entered most often in the window, however small their self
# cost: a function entered once a line on one side and never on the other names a path the
# other side does not take (3.12's buffered_iternext calling _io__Buffered_readline as a
# method, issue 35). A side's list then holds every function entered more often than the
# least-entered of these (``entered_bound``).
MAX_CALLED_FUNCTIONS = 30
# The file names callgrind uses for code without debug information.
UNKNOWN_FILE = "???"


RECURSION_LEVEL = re.compile(r"'\d+$")

# canonical_function's rule, in its parts (its docstring states the whole).
SYMBOL_VERSION = re.compile(r"@@?[A-Z][A-Za-z0-9_.]*$")             # memcpy@@GLIBC_2.14
COMPILER_CLONE = re.compile(r"(\.(?:constprop|isra|part|lto_priv|cold|localalias)(?:\.\d+)?)+$")
GLIBC_INTERNAL = re.compile(r"^__GI_")                              # __GI__IO_un_link
# glibc's ifunc variants of its string functions: __memmove_avx_unaligned_erms, __memchr_avx2,
# __strlen_evex, __memcmp_sse4_1, __memset_avx2_unaligned_erms ...
LIBC_VARIANT = re.compile(r"^__((?:mem|str|stp|wmem|wcs|raw)[a-z]*?)_"
                          r"(?:sse\d?|ssse3|avx\d*|evex\d*|erms|unaligned|aligned)(?:_\w+)?$")
# memcpy and memmove are one function in glibc (memcpy's ifunc resolves to a __memmove_*
# variant or to its __memcpy_* alias, as the build and the CPU choose): one row.
LIBC_FAMILIES = {"memcpy": "memcpy/memmove", "memmove": "memcpy/memmove"}
# Functions CPython renamed while their work stayed: the old name -> the newest one.
RENAMED = {
    "PyEval_EvalFrameEx": "_PyEval_EvalFrameDefault",   # the eval loop: 2.7 -> 3.6 (PEP 523)
    "unicode_count": "unicode_count_impl",              # str.count: 3.12's Argument Clinic
}
# Functions that do the same work under another name, because a release moved it into
# another function: the old one -> the function that does it now. 2.7's str.count (and
# find) call ``fastsearch`` out of line; 3.x inlines the same search into ``unicode_count``
# (3.12 on ``unicode_count_impl``), whose own instructions are that search: for
# manyfiles_read_sequential's count("\n") 2,432,800 instructions a call under 2.7 in
# fastsearch, 2,435,125 under 3.6 in unicode_count (run 20261126T040828Z-vm), one job.
#
# 2.7's file object (Objects/fileobject.c, what builtin open() returns) and 2.7's io module
# (io.open, the 2.7 names of Modules/_io) do the jobs 3.x's io does under Argument Clinic's
# names: a method of a file is the 3.x method of the same job (file.read is
# BufferedReader.read, iterating a file is buffered_iternext, 2.7's get_line is the line
# search of _buffered_readline). How they do it differs (2.7's file object reads through
# stdio's fread): a step from 2.7 shows that as a change of the one function.
SAME_WORK = {
    "fastsearch": "unicode_count_impl",
    # 2.7's file object
    "file_read": "_io__Buffered_read",
    "file_iternext": "buffered_iternext",
    "file_readline": "_io__Buffered_readline",
    "get_line": "_buffered_readline",
    "file_write": "_io_BufferedWriter_write",
    "file_seek": "_io__Buffered_seek",
    # 2.7's io module
    "buffered_read": "_io__Buffered_read",
    "buffered_readline": "_io__Buffered_readline",
    "buffered_seek": "_io__Buffered_seek",
    "bufferedwriter_write": "_io_BufferedWriter_write",
    "fileio_readinto": "_io_FileIO_readinto",
    "fileio_write": "_io_FileIO_write",
    "fileio_seek": "_io_FileIO_seek",
    "fileio_init": "_io_FileIO___init__",
    "textiowrapper_read": "_io_TextIOWrapper_read",
    "textiowrapper_write": "_io_TextIOWrapper_write",
    "textiowrapper_seek": "_io_TextIOWrapper_seek",
    "io_open": "_io_open",
}
# What the build adds, not the release's code (build_only): the functions only a shared
# libpython runs (SHARED_LIBPYTHON_ONLY, below), the dynamic linker's (lazy binding of a PLT
# slot: _dl_runtime_resolve*, _dl_fixup, _dl_lookup_symbol_x ...), PLT stubs (``name@plt``)
# and code callgrind could not name (``0x...``: a stub of the procedure linkage table in a
# shared libpython, or code of a stripped build). A finding's "most in" never names one of
# these; their change is shown apart as the build's share.
DYNAMIC_LINKER = re.compile(r"^_dl_")
PLT_STUB = re.compile(r"@plt$|^0x[0-9a-fA-F]+$")


# Functions only a shared libpython runs: the share of a step's instruction change that is
# the build's linkage, not the release's code. Why these: code in a shared library reaches
# its thread-local variables (3.12 on: the current thread state, ``_Py_tss_tstate``) through
# the dynamic TLS models, a call to ``__tls_get_addr`` (and, the first time in a thread, its
# slow path) on every access; an executable, libpython linked in, uses the local-exec model,
# an offset from %fs and no call at all. The dynamic linker's lazy binding
# (``_dl_runtime_resolve*``, ``_dl_fixup``) is not on the list: a python binary linked
# statically against libpython still calls libc through its PLT, so both linkages run it.
SHARED_LIBPYTHON_ONLY = ("__tls_get_addr", "__tls_get_addr_slow", "update_get_addr",
                         "tls_get_addr_tail")


def shared_libpython_only(name: str) -> bool:
    """Whether only a shared libpython runs function ``name`` (SHARED_LIBPYTHON_ONLY)."""
    return canonical_function(name) in SHARED_LIBPYTHON_ONLY


def build_only(name: str) -> bool:
    """Whether function ``name`` is a cost of how the interpreter was built and linked, not
    of the release's code (SAME_WORK's comment: shared-libpython-only functions, the dynamic
    linker, PLT stubs, unnamed code)."""
    canonical = canonical_function(name)
    return (canonical in SHARED_LIBPYTHON_ONLY or bool(DYNAMIC_LINKER.match(canonical))
            or bool(PLT_STUB.search(canonical)))


def canonical_function(name: str) -> str:
    """The name a function is matched by across interpreters and builds.

    The rule, applied in this order to the name callgrind gives:

    1. a recursion level (``f'2``) and a symbol version (``fclose@@GLIBC_2.2.5``) are dropped;
    2. a compiler's clone suffixes are dropped, any number of them: ``.constprop.N``,
       ``.isra.N``, ``.part.N``, ``.lto_priv.N``, ``.cold``, ``.localalias``
       (``_PyObject_Alloc.constprop.0`` is ``_PyObject_Alloc``), and glibc's internal
       alias prefix ``__GI_``;
    3. glibc's ifunc variants of a string function are that function, marked as libc's:
       ``__memchr_avx2`` is ``memchr (libc)``; memcpy and memmove, which glibc implements
       as one, are both ``memcpy/memmove (libc)``, variant or not (``__memmove_avx_unaligned_erms``,
       ``__memcpy_avx_unaligned_erms``, ``memcpy``);
    4. a function CPython renamed without changing its job is its newest name (``RENAMED``:
       ``PyEval_EvalFrameEx``, 2.7's eval loop, is ``_PyEval_EvalFrameDefault``);
    5. a function whose work a release moved into another function is that function
       (``SAME_WORK``: 2.7's ``fastsearch``, str.count's search, is ``unicode_count_impl``,
       into which 3.x inlines it).

    Two names with one canonical name are one function: their self costs add up. Nothing
    else is merged; a function that is absent on one side is absent (inlined, new, gone).
    """
    name = SYMBOL_VERSION.sub("", RECURSION_LEVEL.sub("", name))
    name = GLIBC_INTERNAL.sub("", COMPILER_CLONE.sub("", name))
    variant = LIBC_VARIANT.match(name)
    base = variant.group(1) if variant else name
    if base in LIBC_FAMILIES:
        return f"{LIBC_FAMILIES[base]} (libc)"
    if variant:
        return f"{base} (libc)"
    name = RENAMED.get(name, name)
    return SAME_WORK.get(name, name)


class CallgrindFormatError(ValueError):
    pass


def _compressed(value: str, table: dict) -> str:
    """``(12) name`` defines id 12 and returns name; ``(12)`` looks it up; ``name`` is itself."""
    value = value.strip()
    if not value.startswith("("):
        return value
    close = value.find(")")
    if close < 0:
        raise CallgrindFormatError(f"bad compressed name {value!r}")
    key, rest = value[1:close], value[close + 1:].strip()
    if rest:
        table[key] = rest
        return rest
    if key not in table:
        raise CallgrindFormatError(f"compressed name ({key}) used before it is defined")
    return table[key]


def read_profile(path: Path) -> dict:
    """{"events": {event: total}, "functions": {name: {"file": str, event: self cost,
    "calls": times entered}}, "edges": {(caller, callee): (calls, inclusive Ir)},
    "complete": whether the file ends with callgrind's ``totals:`` line (a file cut short
    reads, its header's summary whole, its functions and edges not)}.

    Self costs are summed over every object a function name appears in (two libraries
    with a function of one name are one row: names are how functions are matched). A
    function's calls are the ``calls=N`` of every call edge into it, summed over its
    callers (a recursion's levels are one function, so its inner calls count too); a
    function entered in the window but with no self cost there is a row with zero costs.
    """
    fn_names, file_names = {}, {}
    events, positions = None, 1
    summary = None
    functions = {}
    entered = {}                 # callee -> calls into it
    edges = {}                   # (caller, callee) -> [calls, inclusive Ir]
    current, current_file, callee, after_calls = None, UNKNOWN_FILE, None, False
    edge = None                  # the edge whose inclusive cost is the next cost line
    complete = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                if after_calls:
                    after_calls = False      # the inclusive cost of the call just named
                    if edge is not None and events is not None and "Ir" in events:
                        values = line.split()[positions:]
                        at = events.index("Ir")
                        if at < len(values):
                            edge[1] += int(values[at])
                    continue
                if current is None or events is None:
                    continue
                values = line.split()[positions:]
                costs = functions[current]
                for event, value in zip(events, values):
                    costs[event] += int(value)
                continue
            key, _, value = line.partition("=")
            if key in ("fl", "fi", "fe"):
                name = _compressed(value, file_names)
                if key == "fl":
                    current_file = name
            elif key in ("cfi", "cfl"):
                _compressed(value, file_names)
            elif key == "fn":
                # "PyEval_EvalFrameEx'2": callgrind's name for the second level of a
                # recursion; the levels are one function.
                current = RECURSION_LEVEL.sub("", _compressed(value, fn_names))
                functions.setdefault(current, {"file": current_file,
                                               **{event: 0 for event in events or EVENTS}})
            elif key == "cfn":
                callee = RECURSION_LEVEL.sub("", _compressed(value, fn_names))
            elif key == "calls":
                after_calls = True
                count = value.split()
                if callee is None or not count or not count[0].isdigit():
                    raise CallgrindFormatError(f"{path}: a calls= line without its cfn= "
                                               f"or count: {line.strip()[:80]!r}")
                entered[callee] = entered.get(callee, 0) + int(count[0])
                edge = None
                if current is not None:
                    edge = edges.setdefault((current, callee), [0, 0])
                    edge[0] += int(count[0])
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("positions:"):
                positions = len(line.split()) - 1
            elif line.startswith(("summary:", "totals:")) and summary is None and events:
                summary = dict(zip(events, (int(v) for v in line.split()[1:])))
            if line.startswith("totals:"):
                complete = True      # callgrind writes it last: the body is whole
    if events is None or summary is None:
        raise CallgrindFormatError(f"{path}: no events or summary line")
    for name, calls in entered.items():
        functions.setdefault(name, {"file": UNKNOWN_FILE, **{event: 0 for event in events}})
    for name, costs in functions.items():
        costs["calls"] = entered.get(name, 0)
    return {"events": {e: summary.get(e, 0) for e in events}, "functions": functions,
            "edges": {pair: tuple(value) for pair, value in edges.items()},
            "complete": complete}


def read_summary(path: Path, max_lines: int = 200) -> dict:
    """{event: total} from the header of a callgrind file alone (``events:`` and
    ``summary:``, within its first ``max_lines`` lines): the totals callgrind counted, which a
    damaged or cut body does not change. Raises CallgrindFormatError without them."""
    events = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f):
            if number >= max_lines:
                break
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:") and events:
                values = line.split()[1:]
                if len(values) != len(events) or not all(v.isdigit() for v in values):
                    break
                return dict(zip(events, (int(v) for v in values)))
    raise CallgrindFormatError(f"{path}: no events or summary line in its header")


def kept_functions(profile: dict) -> list:
    """[[name, file, self instructions, calls]]: the functions above FUNCTION_SHARE of the
    total (at most MAX_FUNCTIONS), largest first, then those of the MAX_CALLED_FUNCTIONS
    most-entered functions that are not among them, most entered first: the compact form
    stored per op. ``calls``: the times the function was entered in the window."""
    total = profile["events"].get("Ir", 0)
    if total <= 0:
        return []
    rows = sorted(((name, costs["file"], costs.get("Ir", 0), costs.get("calls", 0))
                   for name, costs in profile["functions"].items()),
                  key=lambda row: (-row[2], row[0]))
    kept = [list(row) for row in rows[:MAX_FUNCTIONS] if row[2] >= FUNCTION_SHARE * total]
    names = {row[0] for row in kept}
    most_entered = sorted((row for row in rows if row[3] > 0),
                          key=lambda row: (-row[3], row[0]))[:MAX_CALLED_FUNCTIONS]
    return kept + [list(row) for row in most_entered if row[0] not in names]


# The call edges kept per op, for the call paths of a step (analysing/callpaths.py): for
# every function whose inclusive instructions (the costs of the calls into it) are at least
# EDGE_SHARE of the window's total, or that kept_functions keeps, its EDGES_PER_CALLEE
# heaviest callers; at most MAX_EDGES edges, heaviest first. Enough to walk up from a
# function that changed to the C function Python code called (its dominant caller each
# step); a function with many light callers ends its path early, never at a wrong caller.
EDGE_SHARE = 0.005
EDGES_PER_CALLEE = 2
MAX_EDGES = 120


def kept_edges(profile: dict, kept: list | None = None) -> list:
    """[[caller, callee, calls, inclusive instructions]]: the call edges stored per op (the
    rule above EDGE_SHARE). A recursion's edge from a function into itself is left out: it
    says nothing of the path, and its inclusive cost counts the same instructions twice."""
    total = profile["events"].get("Ir", 0)
    edges = profile.get("edges") or {}
    if total <= 0 or not edges:
        return []
    names = {row[0] for row in (kept if kept is not None else kept_functions(profile))}
    into = {}
    for (caller, callee), (calls, inclusive) in edges.items():
        if caller != callee:
            into.setdefault(callee, []).append((inclusive, calls, caller))
    found = []
    for callee, callers in into.items():
        if callee in names or sum(c[0] for c in callers) >= EDGE_SHARE * total:
            callers.sort(key=lambda c: (-c[0], -c[1], c[2]))
            found += [[caller, callee, calls, inclusive]
                      for inclusive, calls, caller in callers[:EDGES_PER_CALLEE]]
    found.sort(key=lambda e: (-e[3], e[0], e[1]))
    return found[:MAX_EDGES]


def entered_bound(functions: list) -> int | None:
    """At most how many times (in the window) a function missing from a side's kept
    functions was entered; None when the entries carry no calls (a file of before they
    were kept: nothing is known of what was not entered).

    kept_functions keeps the MAX_CALLED_FUNCTIONS most-entered functions of the window, so
    a function that is not there was entered at most as often as the MAX_CALLED_FUNCTIONS-th
    most-entered entry; with fewer entered entries than that, every entered function is
    there, and one that is not was never entered (0)."""
    if not functions or any(len(entry) < 4 for entry in functions):
        return None
    by_calls = sorted((entry[3] for entry in functions if entry[3] > 0), reverse=True)
    return by_calls[MAX_CALLED_FUNCTIONS - 1] if len(by_calls) >= MAX_CALLED_FUNCTIONS else 0


def cache_counts(profile: dict) -> dict:
    """The cache events of one profile (everything but Ir), or {} without cache simulation."""
    events = profile["events"]
    if "D1mr" not in events:
        return {}
    return {event: events[event] for event in EVENTS[1:]}


def estimated_cycles(instructions: int, cache: dict) -> int | None:
    """Cachegrind's rough cycle estimate; None without cache counts."""
    if not cache or instructions is None:
        return None
    accesses = instructions + cache["Dr"] + cache["Dw"]
    l1_misses = cache["I1mr"] + cache["D1mr"] + cache["D1mw"]
    ram = cache["ILmr"] + cache["DLmr"] + cache["DLmw"]
    return (accesses - l1_misses) + LL_HIT_CYCLES * (l1_misses - ram) + RAM_HIT_CYCLES * ram


# A function entered on one side and not among the other side's kept functions is "entered
# on one side only" when it was entered at least once a call there and more than
# ENTERED_FACTOR times the other side's bound (entered_bound): so many more entries that the
# other side cannot be taking the same path as often.
ENTERED_FACTOR = 2


def _per_call(functions: list, calls: int) -> dict:
    """{canonical name: (file, self instructions per call, [names], entries per call or
    None)}: calls are None when an entry carries none (a file of before they were kept)."""
    found = {}
    for entry in functions:
        name, file, ir = entry[:3]
        entered = entry[3] if len(entry) > 3 else None
        key = canonical_function(name)
        _, total, names, times = found.get(key, (file, 0.0, [], 0.0))
        times = None if times is None or entered is None else times + entered / calls
        found[key] = (file, total + ir / calls, names + [RECURSION_LEVEL.sub("", name)], times)
    return found


def entered_one_side(a_functions: list, b_functions: list, calls_a: int, calls_b: int,
                     limit: int = 5) -> list:
    """Functions entered on one side and (as good as) never on the other, most entered first:
    {"name", "side" ("a" or "b": where it was entered), "calls" (entries per call there),
    "bound" (at most this many entries per call on the other side; 0: never)}. Only where
    both sides' entries carry calls (entered_bound); [] otherwise: nothing is guessed."""
    bound_a, bound_b = entered_bound(a_functions), entered_bound(b_functions)
    if bound_a is None or bound_b is None:
        return []
    a, b = _per_call(a_functions, calls_a), _per_call(b_functions, calls_b)
    found = []
    for side, here, there, bound in (("a", a, b, bound_b / calls_b),
                                     ("b", b, a, bound_a / calls_a)):
        for name, (_, _, _, times) in here.items():
            if name in there or not times or times < 1 or times <= ENTERED_FACTOR * bound:
                continue
            found.append({"name": name, "side": side, "calls": times, "bound": bound})
    found.sort(key=lambda row: (-row["calls"], row["name"]))
    return found[:limit]


def where_instructions_went(a_functions: list, b_functions: list, calls_a: int, calls_b: int,
                            top: int | None = 5, entered: int = 0) -> list:
    """The ``top`` functions (None: all) whose self instructions per call changed most from A
    to B, then
    up to ``entered`` functions entered on one side only (entered_one_side) not among them:
    a path one side takes shows even when its self cost is small.

    Rows: {"name" (canonical_function's), "names" ({"a": [...], "b": [...]}: the names
    callgrind gave on each side), "file", "a", "b" (per call; None when the function is
    not among that side's kept functions: below FUNCTION_SHARE of its instructions, or
    absent), "calls_a", "calls_b" (times entered per call; None when not kept on that side
    or when its file has no calls), "share" (of the whole change of the kept functions,
    signed)}. Functions are matched by ``canonical_function``; one that is still two names
    after it (inlined into another, new) shows as two one-sided rows, never dropped.
    """
    a, b = _per_call(a_functions, calls_a), _per_call(b_functions, calls_b)
    rows = []
    for name in set(a) | set(b):
        file = (b.get(name) or a.get(name))[0]
        before = a[name][1] if name in a else None
        after = b[name][1] if name in b else None
        rows.append({"name": name, "file": file, "a": before, "b": after,
                     "names": {"a": sorted(set(a[name][2])) if name in a else [],
                               "b": sorted(set(b[name][2])) if name in b else []},
                     "calls_a": a[name][3] if name in a else None,
                     "calls_b": b[name][3] if name in b else None,
                     "change": (after or 0.0) - (before or 0.0)})
    total_change = sum(row["change"] for row in rows)
    # By name after the size of the change: the rows come from a set, and equal changes
    # (a function renamed between the versions) must not swap places from one report to the next.
    rows.sort(key=lambda row: (-abs(row["change"]), row["name"]))
    for row in rows:
        row["share"] = row["change"] / total_change if total_change else None
    chosen = rows[:top]
    if entered:
        shown = {row["name"] for row in chosen}
        by_name = {row["name"]: row for row in rows}
        chosen += [by_name[one["name"]] for one in
                   entered_one_side(a_functions, b_functions, calls_a, calls_b,
                                    limit=len(chosen) + entered)
                   if one["name"] not in shown][:entered]
    return chosen


def shared_only_change(a_functions: list, b_functions: list, calls_a: int, calls_b: int) \
        -> tuple[float, list]:
    """The change of self instructions per call, A to B, of the functions only a shared
    libpython runs (shared_libpython_only), and their canonical names; a function below the
    kept share on a side counts 0 there (its instructions are not known, and small)."""
    a, b = _per_call(a_functions, calls_a), _per_call(b_functions, calls_b)
    names = sorted(name for name in set(a) | set(b) if shared_libpython_only(name))
    change = sum((b[name][1] if name in b else 0.0) - (a[name][1] if name in a else 0.0)
                 for name in names)
    return change, names
