"""Callgrind's output, read: event totals, simulated cache misses, and where the instructions ran.

The counting pass runs callgrind with its cache simulation on (``--cache-sim=yes``)
and a fixed cache geometry (``CACHE_OPTIONS``), and keeps per op:

- the totals of every event (instructions ``Ir``, data reads ``Dr`` and writes
  ``Dw``, first-level misses ``I1mr D1mr D1mw``, last-level misses ``ILmr DLmr
  DLmw``);
- the functions the instructions ran in: a function's *self* instructions (not
  those of what it called), for every function above ``FUNCTION_SHARE`` of the
  op's total, matched across interpreters by name.

No library reads callgrind's format (``callgrind_annotate`` is a Perl script
that prints text for people), so this module parses the part we need: name
compression (``fn=(12) name`` defines id 12, ``fn=(12)`` reuses it), the
position columns, and the cost line after ``calls=``, which is the inclusive cost
of a call and belongs to the callee, not to the caller's self cost.

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
}


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
       ``PyEval_EvalFrameEx``, 2.7's eval loop, is ``_PyEval_EvalFrameDefault``).

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
    return RENAMED.get(name, name)


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
    """{"events": {event: total}, "functions": {name: {"file": str, event: self cost}}}.

    Self costs are summed over every object a function name appears in (two libraries
    with a function of one name are one row: names are how functions are matched).
    """
    fn_names, file_names = {}, {}
    events, positions = None, 1
    summary = None
    functions = {}
    current, current_file, after_calls = None, UNKNOWN_FILE, False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.strip():
                continue
            head = line[0]
            if head.isdigit() or head in "+-*":
                if after_calls:
                    after_calls = False      # the inclusive cost of the call just named
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
                _compressed(value, fn_names)
            elif key == "calls":
                after_calls = True
            elif line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("positions:"):
                positions = len(line.split()) - 1
            elif line.startswith(("summary:", "totals:")) and summary is None and events:
                summary = dict(zip(events, (int(v) for v in line.split()[1:])))
    if events is None or summary is None:
        raise CallgrindFormatError(f"{path}: no events or summary line")
    return {"events": {e: summary.get(e, 0) for e in events}, "functions": functions}


def kept_functions(profile: dict) -> list:
    """[[name, file, self instructions]] of the functions above FUNCTION_SHARE of the total,
    largest first: the compact form stored per op."""
    total = profile["events"].get("Ir", 0)
    if total <= 0:
        return []
    rows = sorted(((name, costs["file"], costs.get("Ir", 0))
                   for name, costs in profile["functions"].items()),
                  key=lambda row: -row[2])
    return [[name, file, ir] for name, file, ir in rows[:MAX_FUNCTIONS]
            if ir >= FUNCTION_SHARE * total]


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


def where_instructions_went(a_functions: list, b_functions: list, calls_a: int, calls_b: int,
                            top: int = 5) -> list:
    """The ``top`` functions whose self instructions per call changed most from A to B.

    Rows: {"name" (canonical_function's), "names" ({"a": [...], "b": [...]}: the names
    callgrind gave on each side), "file", "a", "b" (per call; None when the function is
    not among that side's kept functions: below FUNCTION_SHARE of its instructions, or
    absent), "share" (of the whole change of the kept functions, signed)}. Functions are
    matched by ``canonical_function``; one that is still two names after it (inlined into
    another, new) shows as two one-sided rows, never dropped.
    """
    def per_call(functions, calls):
        found = {}
        for name, file, ir in functions:
            key = canonical_function(name)
            _, total, names = found.get(key, (file, 0.0, []))
            found[key] = (file, total + ir / calls,
                          names + [RECURSION_LEVEL.sub("", name)])
        return found
    a, b = per_call(a_functions, calls_a), per_call(b_functions, calls_b)
    rows = []
    for name in set(a) | set(b):
        file = (b.get(name) or a.get(name))[0]
        before = a[name][1] if name in a else None
        after = b[name][1] if name in b else None
        rows.append({"name": name, "file": file, "a": before, "b": after,
                     "names": {"a": sorted(set(a[name][2])) if name in a else [],
                               "b": sorted(set(b[name][2])) if name in b else []},
                     "change": (after or 0.0) - (before or 0.0)})
    total_change = sum(row["change"] for row in rows)
    # By name after the size of the change: the rows come from a set, and equal changes
    # (a function renamed between the versions) must not swap places from one report to the next.
    rows.sort(key=lambda row: (-abs(row["change"]), row["name"]))
    for row in rows:
        row["share"] = row["change"] / total_change if total_change else None
    return rows[:top]
