"""What the counting pass stored, compared: version steps, A/A exactness, tables, compare.

The counting pass itself (``iomatrix.measuring.counters``) writes ``<series>.counters.json``
beside a run's series; its docstring gives the format. ``countrows`` reads those files
into tidy rows (its names are importable from here too); this module makes of them what
the report, ``compare`` and the gate show, using only the standard library.
Counts need no statistics: a change is a change. How exact each counter is comes
from the run's A/A twin (``aa_exactness``).
"""
from __future__ import annotations

import math

from iomatrix import callgrind
from iomatrix.markup import NARROW_OP_LINE, code, code_lines, md
# How functions are matched across interpreters (its docstring states the rule).
from iomatrix.callgrind import canonical_function  # noqa: F401
from iomatrix.measuring import countsizes
from iomatrix.storing import store
# The file's format lives with its reader, below the stages (iomatrix.storing.countsfile); the
# names stay importable from here for the readers.
from iomatrix.storing.countsfile import (COUNT_CALLS, COUNTERS, FORMAT_VERSION,  # noqa: F401
                                         RUSAGE_FIELDS, read_document)
# Reading the files into rows and their index live in countrows.py; the names stay
# importable from here, where the report, compare and the tests have always found them.
from iomatrix.analysing.countrows import (  # noqa: F401
    MIB, CountRows, Lookup, build_lookup, counted_series, load_counts, load_document_rows,
    load_functions, lookup, misattributed_functions, side_rows, skipped_counts,
    unreadable_files)

MAX_SERIES_COLUMNS = 8
# The bytes' columns hold up to 11 digits (122,811,011): eight of them took the table to
# 1,108 px in GitHub's 1,012 px column (nox -s preview).
MAX_BYTES_COLUMNS = 6
MAX_COMPARE_ROWS = 40   # rows of each list in compare's comment


def _index(rows) -> dict:
    return lookup(rows).by_key


def _series_info(rows) -> dict:
    info = {}
    for r in rows:
        info.setdefault(r["series"], r)
    return info


def series_order(rows) -> list:
    """CPython by version (default build first), then the others: the report's column order."""
    def key(item):
        name, r = item
        version = tuple(r.get("version_info") or (0,))[:3]
        return (r.get("implementation") != "cpython", version, bool(r.get("free_threaded")),
                bool(r.get("aa_of")), name)
    return [name for name, _ in sorted(_series_info(rows).items(), key=key)]


def step_pairs(rows) -> list:
    """(before, after, kind) series pairs: successive CPython versions (one default build
    per minor version, pyenv's or a provisioned one first, per io stack), every other
    default build of a version against that one ("build"), each free-threaded build
    ("free-threaded") and other implementation of the same language version
    ("implementation": PyPy) against it, and each A/A twin against its original ("A/A")."""
    info = _series_info(rows)
    order = series_order(rows)

    def minor(name):
        return tuple(info[name].get("version_info") or ())[:2]

    def plain(name):
        r = info[name]
        return r.get("implementation") == "cpython" and not r.get("free_threaded") \
            and not r.get("aa_of")

    chains = {}   # io stack -> {minor version: series}
    for name in sorted((n for n in order if plain(n)),
                       key=lambda n: (info[n].get("source") not in ("pyenv", "provisioned"),
                                      order.index(n))):
        chains.setdefault(store.split_series(name)[1], {}).setdefault(minor(name), name)
    pairs = []
    for chain in chains.values():
        names = [chain[v] for v in sorted(chain)]
        pairs += [(a, b, "version") for a, b in zip(names, names[1:])]
    for name in order:
        r = info[name]
        base = chains.get(store.split_series(name)[1], {}).get(minor(name))
        if base is None or base == name:
            continue
        if r.get("aa_of"):
            continue
        kind = "free-threaded" if r.get("free_threaded") else \
            "build" if r.get("implementation") == "cpython" else "implementation"
        pairs.append((base, name, kind))
    for name in order:
        if info[name].get("aa_of") in info:
            pairs.append((info[name]["aa_of"], name, "A/A"))
    return pairs


def _ratio(before, after) -> float:
    """How far apart two counts are, as |log ratio|; a count from or to zero is large."""
    if before == after:
        return 0.0
    if not before or not after:
        return math.inf
    return abs(math.log(after / before))


def _fmt(value) -> str:
    # a count per call is a finite number >= 0: anything else (inf, NaN, negative) shows as –
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value) or value < 0:
        return "–"
    if value >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def _fmt_rel(value) -> str:
    return "0 on one side only" if value == math.inf else f"{value:.3%}"


def steps(rows, pairs=None, counters=("syscalls", "instructions")) -> list:
    """Changes between series pairs per op, biggest first.

    Each item: {before, after, kind, suite, op, changes: [(counter, a, b)], syscalls:
    [(name, a, b)] (the syscalls whose count per call changed), size} where size
    is the largest |log ratio| among ``counters``.
    """
    found = lookup(rows)
    pairs = step_pairs(rows) if pairs is None else pairs
    out = []
    for a, b, kind in pairs:
        for suite, op in found.suite_ops:
            step = _step(found, a, b, kind, suite, op, counters)
            if step is not None:
                out.append(step)
    out.sort(key=lambda s: (-s["size"], s["before"], s["after"], s["op"]))
    return out


def _step(found: Lookup, a: str, b: str, kind: str, suite, op: str, counters) -> dict | None:
    """One op's change from series ``a`` to ``b`` (an item of ``steps``), None if none."""
    index = found.by_key
    changes = []
    for counter in counters:
        ra, rb = index.get((a, op, counter)), index.get((b, op, counter))
        if ra and rb and ra["per_call"] != rb["per_call"]:
            changes.append((counter, ra["per_call"], rb["per_call"]))
    changed = []
    if (a, op, "syscalls") in index and (b, op, "syscalls") in index:
        names = sorted(found.syscall_names.get((a, op), set())
                       | found.syscall_names.get((b, op), set()))
        for name in names:
            va = index.get((a, op, "syscall:" + name), {}).get("per_call", 0)
            vb = index.get((b, op, "syscall:" + name), {}).get("per_call", 0)
            if va != vb:
                changed.append((name, va, vb))
    if not changes and not changed:
        return None
    size = max([_ratio(x, y) for _, x, y in changes] or [0.0])
    changed.sort(key=lambda c: (-abs(c[2] - c[1]), c[0]))
    return {"before": a, "after": b, "kind": kind, "suite": suite, "op": op,
            "changes": changes, "syscalls": changed, "size": size}


def change_of(rows, op: str, before: str, after: str, max_syscalls: int = 2) -> str:
    """What changed in one op's counts between two series, briefly ("`read` 91 -> 4;
    `read` bytes 131 KB -> 2.1 MB; instructions -3.2%"), per call, for a finding's row; ""
    when nothing was counted or changed."""
    found = lookup(rows)
    step = _step(found, before, after, "finding", found.suite_of.get(op), op,
                 ("syscalls", "instructions")) if op in found.suite_of else None
    moved = bytes_moved(rows, op, before, after) if op in found.suite_of else None
    parts = [f"{code(name)} {_fmt(a)} → {_fmt(b)}"
             for name, a, b in (step["syscalls"] if step else [])[:max_syscalls]]
    parts += [f"{code(name)} bytes {fmt_bytes(a)} → {fmt_bytes(b)}"
              for name, a, b in (moved["changed"] if moved else [])[:max_syscalls]]
    parts += [f"instructions {(b - a) / a:+.1%}" for counter, a, b in
              (step["changes"] if step else []) if counter == "instructions" and a]
    return "; ".join(parts)


def describe_step(step: dict, max_syscalls: int = 4) -> str:
    """One line: "`read_byBlocks_binaryMode` 3.13 -> 3.14: syscalls per call 47 -> 7 ..."."""
    parts = []
    for counter, a, b in step["changes"]:
        parts.append(f"{counter} per call {_fmt(a)} -> {_fmt(b)} ({(b - a) / a:+.1%})"
                     if a else f"{counter} per call {_fmt(a)} -> {_fmt(b)}")
    named = [f"{code(name)} calls per call: {_fmt(a)} -> {_fmt(b)}"
             for name, a, b in step["syscalls"][:max_syscalls]]
    if len(step["syscalls"]) > max_syscalls:
        named.append(f"{len(step['syscalls']) - max_syscalls} more")
    text = "; ".join(parts + named)
    return (f"{code(step['op'])} ({md(step['suite'])}) {md(step['before'])} -> "
            f"{md(step['after'])}: {text}")


def _aa_comparisons(rows, counters):
    """(original, twin, counter, relative differences of the ops the twin counted again, how
    many of its counts it took from the counts cache) per A/A pair and counter of ``counters``."""
    index = _index(rows)
    for a, b, kind in step_pairs(rows):
        if kind != "A/A":
            continue
        for counter in counters:
            diffs, copied = [], 0
            for (series, op, c), r in index.items():
                if series == a and c == counter and (b, op, c) in index:
                    if index[(b, op, c)].get("from_cache"):
                        copied += 1
                        continue
                    other = index[(b, op, c)]["per_call"]
                    diffs.append(abs(other - r["per_call"]) / r["per_call"]
                                 if r["per_call"] else (0.0 if other == 0 else math.inf))
            yield a, b, counter, diffs, copied


def aa_exactness(rows) -> list:
    """Per A/A pair and counter: how many ops counted the same, and the largest difference.

    Only the ops the twin counted again are compared: a twin's count taken from the counts
    cache (``from_cache``: its original's, iomatrix.measuring.twincount) repeats nothing, so
    it is left out and counted in ``copied``. Older runs' twins counted every op (copied 0).
    """
    return [{"original": a, "twin": b, "counter": counter, "ops": len(diffs),
             "identical": sum(d == 0 for d in diffs), "max_rel_diff": max(diffs),
             "copied": copied}
            for a, b, counter, diffs, copied in _aa_comparisons(
                rows, ("syscalls", "instructions", "estimated_cycles", "minflt", "majflt",
                       "nvcsw", "nivcsw"))
            if diffs]


def aa_recounts(rows) -> dict:
    """{(original, twin): {counter: (ops counted again, ops taken from the counts cache)}} of
    syscalls and instructions, for each A/A twin that took some from the cache; {} for twins
    that counted every op (every run before the sample, and ``--aa-recount all``)."""
    found: dict = {}
    for a, b, counter, diffs, copied in _aa_comparisons(rows, ("syscalls", "instructions")):
        if diffs or copied:
            found.setdefault((a, b), {})[counter] = (len(diffs), copied)
    return {pair: counts for pair, counts in found.items()
            if any(copied for _, copied in counts.values())}


def aa_sample_sentence(rows, exact: list) -> list:
    """What the A/A rows compare when a twin took counts from the counts cache: lines before
    the table ("`3.13-aa`: the system calls of 6 ops counted again: all equal. ..."); [] for
    twins that counted every op."""
    names = {"syscalls": "system calls", "instructions": "instructions"}
    lines = []
    for (original, twin), found in aa_recounts(rows).items():
        again, copied = [], []
        for counter, (n, m) in found.items():
            entry = next((e for e in exact if (e["original"], e["twin"], e["counter"])
                          == (original, twin, counter)), None)
            if n and entry:
                equal = "all equal" if entry["identical"] == entry["ops"] else \
                    f"{entry['identical']} of {entry['ops']} equal (see the table)"
                again.append(f"the {names[counter]} of {_ops(n)} counted again: {equal}")
            if m:
                copied.append(f"the {names[counter]} of "
                              + (f"its other {_ops(m)}" if n else "every op"))
        text = f"{code(twin)}: " + ("; ".join(again) if again else
                                    "no system calls or instructions counted again") + ". "
        said = (" and ".join(copied) + f" are {code(original)}'s, taken from the counts cache, "
                "and are not compared")
        text += said[:1].upper() + said[1:]
        if "instructions" in found and found["instructions"][1]:
            text += (" (an op's instructions depend on what ran before it in its worker "
                     "process: only counting every op again, `--aa-recount all`, repeats them)")
        lines += [text + "; page faults and context switches are counted for every op.", ""]
    return lines


def _ops(n: int) -> str:
    return f"{n} op" if n == 1 else f"{n} ops"


def _table(header, rows) -> list:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def markdown_section(rows, skipped: dict | None = None, top: int = 15,
                     heading: str = "## Counts: system calls, page faults, instructions",
                     order: list | None = None) -> list:
    """The report's counters section: markdown lines.

    How exact each counter is (A/A), then tables of counts per call per op and series
    (system calls, the bytes they moved where counted, instructions and instructions per
    MiB, minor page faults), then the biggest version steps and the biggest steps to other
    builds and implementations of the same version, each naming the syscalls that changed.
    """
    lines = [heading, ""]
    if not rows:
        lines.append("No counts in this run (`--counters off`, or every counter skipped).")
        for series, reasons in sorted((skipped or {}).items()):
            for what, why in reasons.items():
                lines.append(f"- {code(series)}: {md(what)}: {md(why)}")
        return lines + [""]
    # The page's column order when it gives one (releases, then variants); else by version.
    order = [s for s in order or [] if s in _series_info(rows)] + \
        [s for s in series_order(rows) if s not in (order or [])]
    index = _index(rows)
    method = {r["counter"]: r["method"] for r in rows}
    lines += [f"Counted apart from timing: one warm-up call, then {COUNT_CALLS} counted call(s) "
              "between markers, per op and interpreter (`scripts/iomatrix/measuring/counters.py`). "
              + basis_paragraph(rows), ""]
    for counter in ("syscalls", "instructions", "minflt"):
        if counter in method:
            lines.append(f"- {counter}: {md(method[counter])}")
    lines.append("")
    exact = aa_exactness(rows)
    if exact:
        lines += ["How exact (A/A twin: the same interpreter counted twice):", ""]
        lines += aa_sample_sentence(rows, exact)
        lines += _table(["counter", "pair", "ops identical", "largest difference"],
                        [[md(e["counter"]), f"{code(e['original'])} / {code(e['twin'])}",
                          f"{e['identical']}/{e['ops']}"
                          + (" counted again" if e.get("copied") else ""),
                          _fmt_rel(e["max_rel_diff"])]
                         for e in exact])
        lines += ["", "Context switches count what else the machine ran meanwhile (two series "
                      "are counted at a time); they are shown for completeness, not compared.", ""]
    ops = sorted({(r["suite"], r["op"], r["bytes_per_call"]) for r in rows})
    for counter, title, field in (("syscalls", "System calls per call", "per_call"),
                                  ("syscall_bytes", "Bytes the system calls moved per call "
                                   "(read, write and their kin; –: not counted)", "per_call"),
                                  ("instructions", "Instructions per call (millions)",
                                   "per_call"),
                                  ("instructions", "Instructions per MiB (millions)", "per_MiB"),
                                  ("minflt", "Minor page faults per call", "per_call")):
        columns = [s for s in order if any((s, op, counter) in index for _, op, _ in ops)]
        if not columns:
            continue
        scale = 1e6 if counter == "instructions" else 1
        lines += [f"### {title}", ""]
        # At most MAX_SERIES_COLUMNS series a table, so a page reads at GitHub's width.
        per_table = MAX_BYTES_COLUMNS if counter == "syscall_bytes" else MAX_SERIES_COLUMNS
        for start in range(0, len(columns), per_table):
            part = columns[start:start + per_table]
            body = []
            for suite, op, nbytes in ops:
                cells = []
                for s in part:
                    r = index.get((s, op, counter))
                    cells.append(_fmt(r[field] / scale) if r and r[field] is not None else "–")
                body.append([code_lines(op, NARROW_OP_LINE), _fmt(nbytes)] + cells)
            lines += _table(["op", "bytes/call"] + [code(s) for s in part], body)
            lines.append("")
    found = [s for s in steps(rows) if s["kind"] == "version"]
    lines += ["### Biggest changes between versions", ""]
    if found:
        lines += [f"- {describe_step(s)}" for s in found[:top]]
        if len(found) > top:
            lines.append(f"- ... {len(found) - top} more changes")
    else:
        lines.append("No count changed between successive versions.")
    lines.append("")
    builds = [s for s in steps(rows) if s["kind"] in ("free-threaded", "build", "implementation")]
    if builds:
        lines += ["### Other builds and implementations of the same version", ""]
        lines += [f"- {describe_step(s)}" for s in builds[:top]]
        if len(builds) > top:
            lines.append(f"- ... {len(builds) - top} more changes")
        lines.append("")
    if skipped:
        lines += ["Not counted:", ""]
        for series, reasons in sorted(skipped.items()):
            for what, why in reasons.items():
                lines.append(f"- {code(series)}: {md(what)}: {md(why)}")
        lines.append("")
    return lines


# -- compare and the gate --------------------------------------------------------------

def compare_counts(side_a, side_b, fail_above: float) -> tuple[list, bool]:
    """Counts of side B against side A, exactly: (rows, whether the gate fails).

    A side is a run directory, a series' pyperf file (its ``.counters.json``
    beside it is used) or a counters file. Two runs are paired by series name;
    two files are one pair whatever their names. Each row: {series_a, series_b,
    suite, op, counter, a, b, change, fails}; counters compared: instructions,
    syscalls and each syscall by name. The gate fails when instructions per call
    grow by more than ``fail_above`` (a fraction); every syscall-per-call increase
    is a row to list, but does not fail the gate on its own. Instruction counts
    are compared only when both sides used the same callgrind method, and counts only
    where both sides counted the op at the same size (bytes per call).
    """
    return compare_count_rows(side_rows(side_a), side_rows(side_b), fail_above)


def compare_count_rows(a: dict, b: dict, fail_above: float) -> tuple[list, bool]:
    """compare_counts on two sides already read (``side_rows``)."""
    if len(a) == 1 and len(b) == 1:
        pairs = [(next(iter(a)), next(iter(b)))]
    else:
        pairs = [(s, s) for s in a if s in b]
    out, fails = [], False
    for sa, sb in pairs:
        ia, ib = _index(a[sa]), _index(b[sb])
        for (_, op, counter), ra in sorted(ia.items()):
            rb = ib.get((sb, op, counter))
            if rb is None or not (counter == "instructions" or counter == "syscalls"
                                  or counter.startswith("syscall:")):
                continue
            if counter == "instructions" and ra["method"] != rb["method"]:
                continue
            if ra["bytes_per_call"] != rb["bytes_per_call"]:
                # Counted at other sizes (a run of before counts were made at the timed size,
                # at 1/8 of it: countsizes): counts per call do not compare.
                continue
            va, vb = ra["per_call"], rb["per_call"]
            change = (vb - va) / va if va else (0.0 if vb == va else math.inf)
            fail = counter == "instructions" and change > fail_above
            fails = fails or fail
            if va != vb:
                out.append({"series_a": sa, "series_b": sb, "suite": ra["suite"], "op": op,
                            "counter": counter, "a": va, "b": vb, "change": change,
                            "fails": fail})
        for (_, op, counter), rb in sorted(ib.items()):   # a syscall only side B makes
            if counter.startswith("syscall:") and (sa, op, counter) not in ia \
                    and (sa, op, "syscalls") in ia:
                out.append({"series_a": sa, "series_b": sb, "suite": rb["suite"], "op": op,
                            "counter": counter, "a": 0, "b": rb["per_call"],
                            "change": math.inf, "fails": False})
    return out, fails


def compare_markdown(rows, fail_above: float) -> list:
    """compare_counts' rows as markdown lines: instruction changes, then syscall increases."""
    lines = ["### Counts", ""]
    instr = [r for r in rows if r["counter"] == "instructions"]
    more_calls = [r for r in rows if r["counter"].startswith("syscall") and r["b"] > r["a"]]
    if not instr and not more_calls:
        return lines + ["No count changed (or no counts on one side).", ""]
    if instr:
        # The largest increases first; a pull-request comment has room for a limited list.
        ranked = sorted(instr, key=lambda r: -r["change"])
        lines += _table(["op", "series", "instructions per call", "change"],
                        [[code(r['op']), f"{code(r['series_a'])} -> {code(r['series_b'])}",
                          f"{_fmt(r['a'])} -> {_fmt(r['b'])}",
                          (f"**{r['change']:+.2%}**" if r["fails"] else f"{r['change']:+.2%}")]
                         for r in ranked[:MAX_COMPARE_ROWS]])
        if len(ranked) > MAX_COMPARE_ROWS:
            lines += ["", f"{len(ranked) - MAX_COMPARE_ROWS} smaller changes are left out."]
        lines += ["", f"**bold**: more instructions than {fail_above:.0%} above the baseline "
                      "(the gate fails).", ""]
    if more_calls:
        lines += ["More system calls per call:", ""]
        listed = sorted(more_calls, key=lambda r: (r["op"], r["counter"]))
        if len(listed) > MAX_COMPARE_ROWS:
            lines += [f"({len(listed) - MAX_COMPARE_ROWS} more are left out; `counts."
                      "compare_counts` has them all.)"]
        for r in listed[:MAX_COMPARE_ROWS]:
            name = "all syscalls" if r["counter"] == "syscalls" else f"{code(r['counter'][8:])} calls"
            lines.append(f"- {code(r['op'])} {code(r['series_a'])} -> {code(r['series_b'])}: {name} per call "
                         f"{_fmt(r['a'])} -> {_fmt(r['b'])}")
        lines.append("")
    return lines


# -- how one op's counts moved, for a finding's class (comparisons.evidence_of) -------------

# Instructions per call "moved" beyond 2%: 100 times the largest A/A difference of the published
# trio (0.018%, 3.15 counted twice in one run), and under half the 5% timing threshold, so an
# instruction change below it cannot carry a finding alone. Counts of two hosts differ by up
# to 3.5% (another memcpy for the CPU, issue 26): across hosts pass a larger fraction.
INSTRUCTIONS_MOVE = 0.02
# Across hosts (or hosts not known to be one): above the 3.5% two hosts of one CPU model gave.
CROSS_HOST_INSTRUCTIONS_MOVE = 0.05
# Bytes the system calls move per call "moved" beyond 2%. They are exact like the syscall counts
# (return values of reads and writes of one fixture repeat in an A/A twin), so any fraction
# would do; 2%, as for instructions, keeps a last short read or one more block of a buffer
# from standing as evidence, and is far below what a buffer size changes (3.14's 8 -> 128 KiB
# default buffer moves 16 times the bytes per read).
BYTES_MOVE = 0.02


def bytes_moved(rows, op: str, before: str, after: str) -> dict | None:
    """How the bytes ``op``'s system calls moved per call changed from ``before`` to ``after``;
    None when a side has no byte count (a file counted before them: nothing guessed).

    {"total": (a, b) per call, "changed": [(name, a, b)] per call, the calls whose bytes
    moved beyond BYTES_MOVE, largest change first}."""
    found = lookup(rows)
    index = found.by_key
    ra, rb = index.get((before, op, "syscall_bytes")), index.get((after, op, "syscall_bytes"))
    if ra is None or rb is None:
        return None
    changed = _changed_per_name(found, op, before, after, found.byte_syscall_names,
                                "syscall_bytes:", lambda a, b: _moved_beyond(a, b, BYTES_MOVE))
    changed.sort(key=lambda c: (-abs(c[2] - c[1]), c[0]))
    return {"total": (ra["per_call"], rb["per_call"]), "changed": changed}


# The throughput of the bytes the system calls move is shown beside that of the bytes the op
# returns where the two differ by more than 10%: below that they say the same thing (a last
# empty read, a buffer's tail), and a page that doubled every figure would hide the ops where
# they really differ (3.14's 128 KiB buffer read for 64-byte records: 16 times).
MOVED_DIFFERS = 0.10


def moved_per_returned(rows, op: str, series: str) -> float | None:
    """Bytes ``op``'s system calls moved per byte it returned (or wrote), in the counting
    pass (``bytes_per_call`` of its call: the timed size; in older files counted at the
    counting sizes, COUNT_DIVISOR times smaller, the ratio, not the bytes, carries over);
    None without a byte count or for an op that returns no bytes. Times it by a timing
    throughput for the bytes moved at the timing pass's sizes. None too where the calls moved
    no bytes: an op on a memory map reads through page faults, and "0 MB/s" would say it
    stood still."""
    row = lookup(rows).by_key.get((series, op, "syscall_bytes"))
    if row is None or not row.get("bytes_per_call") or not row["per_call"]:
        return None
    return row["per_call"] / row["bytes_per_call"]


def counted_bytes_per_call(rows, op: str, series: str) -> float | None:
    """The bytes one counted call of ``op`` processed under ``series`` (its counting
    fixtures' size); None when it was not counted or records no size."""
    index = lookup(rows).by_key
    for counter in ("syscalls", "instructions", "syscall_bytes", "minflt"):
        row = index.get((series, op, counter))
        if row is not None and row.get("bytes_per_call"):
            return float(row["bytes_per_call"])
    return None


def counting_divisor(rows, op: str, series, timed_bytes) -> float | None:
    """How many times smaller than timed ``op`` was counted: the bytes a timed call processed
    (``timed_bytes``: the op's bytes per value) over the bytes a counted call did, for the
    series given (one or several: the largest); None when not counted, or counted at the
    timed size (within 1%: a text file ends on a whole line)."""
    series = [series] if isinstance(series, str) else list(series)
    found = [counted_bytes_per_call(rows, op, s) for s in series]
    found = [b for b in found if b]
    if not found or not timed_bytes or not math.isfinite(timed_bytes):
        return None
    divisor = timed_bytes / min(found)
    return divisor if abs(divisor - 1) > 0.01 else None


def counted_smaller(rows, op: str, series) -> bool:
    """Whether ``op``'s counts for ``series`` are an older run's, made at the counting pass's
    smaller sizes and not scaled (OLD_BASIS): only those need their size said beside them; a
    run counted by iomatrix.measuring.countsizes has them per call at the timed size."""
    found = lookup(rows).by_key
    sides = [found.get((s, op, "instructions")) or found.get((s, op, "syscalls"))
             for s in ([series] if isinstance(series, str) else series)]
    sides = [r for r in sides if r is not None]
    return bool(sides) and all(r.get("count_basis", OLD_BASIS) == OLD_BASIS for r in sides)


def fmt_divisor(divisors) -> str:
    """"1/8", "1/8 to 1/32" of the timed size, from the divisors (counting_divisor)."""
    rounded = sorted({round(d) if d >= 1.5 else round(d, 2) for d in divisors})
    text = [f"1/{d:g}" for d in rounded]
    return text[0] if len(text) == 1 else f"{text[0]} to {text[-1]}"


OLD_BASIS = "counting size, not scaled"


def basis_paragraph(rows) -> str:
    """What size the counts per call are at (iomatrix.measuring.countsizes): the timed size,
    the ops whose instructions are scaled with the rule they were checked by, and the
    counts of older files, made at the counting size and not scaled."""
    said = []
    if any(r.get("count_basis", OLD_BASIS) != OLD_BASIS for r in rows):
        said.append("Counts per call are at the timed size: each op counted as it was timed "
                    "(the bytes/call column), the system calls and the bytes they moved "
                    "exactly.")
        scaled = sorted({(r["op"], r["count_basis"]) for r in rows
                         if r.get("count_basis", "").startswith("scaled")})
        if scaled:
            said.append("The instructions of the ops too long for callgrind at the timed size "
                        "are scaled to it by their instructions per byte, counted and checked "
                        f"at two smaller sizes (within {countsizes.TOLERANCE:.0%}): "
                        + "; ".join(f"{code(op)} {md(basis)}" for op, basis in scaled) + ".")
    if any(r.get("count_basis", OLD_BASIS) == OLD_BASIS for r in rows):
        said.append("Counts of an older run are per call at the counting pass's sizes, not "
                    "scaled (a suite with a `COUNT_DIVISOR` made its files and writes that many "
                    "times smaller than in the timing pass, one pass a call: see the bytes/call "
                    "column); per MiB they compare across sizes.")
    return " ".join(said)


def size_sentence(rows, listed) -> str:
    """For a table of findings ``listed`` as (op, a, b, timed bytes per call): which size the
    counts per call are at, said once; "" when no listed op was counted.

    A run counted by iomatrix.measuring.countsizes has its counts per call at the timed size,
    the instructions of a few long ops scaled to it by their instructions per byte, a rule
    checked at two smaller sizes: the sentence names those ops. An older run counted every op
    on smaller fixtures and did not scale: a count per call need not scale with the file (a
    buffer's refills, a last short read, open and close), so "24 times more bytes" counted on
    a file 1/16 of the timed size is what the page says it is, at that size (the same step
    moved 32 times more bytes at the timed size)."""
    found = lookup(rows).by_key
    divisors, timed, scaled = {}, False, {}
    for op, a, b, nbytes in listed:
        sides = [found.get((s, op, "instructions")) or found.get((s, op, "syscalls"))
                 for s in (a, b)]
        sides = [r for r in sides if r is not None]
        if not sides:
            continue
        if all(r.get("count_basis", OLD_BASIS) == OLD_BASIS for r in sides):
            d = counting_divisor(rows, op, (a, b), nbytes)
            if d is not None:
                divisors[op] = d
            continue
        timed = True
        for s in (a, b):
            r = found.get((s, op, "instructions"))
            if r is not None and r.get("count_divisor"):
                scaled.setdefault(op, []).append(r["count_divisor"])
    said = []
    if timed:
        said.append("Counts per call are at the timed size" + (
            "; the instructions of " + ", ".join(code(op) for op in sorted(scaled))
            + f" are scaled from {fmt_divisor(d for ds in scaled.values() for d in ds)} of the "
            "timed size, instructions per byte checked at two sizes (the counts page)."
            if scaled else "."))
    if divisors:
        said.append(f"Counts per call of this older run are the counting pass's, at "
                    f"{fmt_divisor(divisors.values())} of "
                    "the timed size (its fixtures and writes are that many times smaller, see the "
                    "bytes/call column of the counts page): compare them across versions, not with "
                    "the times, and not scaled, since a count per call need not grow with the file "
                    "(a buffer's refills, open and close).")
    return " ".join(said)


def moved_differs(ratios) -> bool:
    """Whether any of these moved-per-returned ratios (None: not counted) is more than
    MOVED_DIFFERS away from 1, so the page shows both throughputs."""
    return any(r is not None and abs(r - 1) > MOVED_DIFFERS for r in ratios)


def _moved_beyond(a: float, b: float, fraction: float) -> bool:
    return abs(b - a) > fraction * a if a else b > 0


def fmt_bytes(value) -> str:
    """Bytes in decimal units, as the throughput's MB/s (10^6 bytes): "131 KB", "2.1 MB"."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if value >= size:
            scaled = value / size
            return f"{scaled:.1f} {unit}" if scaled < 10 else f"{scaled:,.0f} {unit}"
    return f"{value:,.0f} B"



def _changed_per_name(found, op: str, before: str, after: str, names_of: dict, prefix: str,
                      changed) -> list:
    """[(name, a, b)] per call for every system call either side made (``names_of``: the
    lookup's names per (series, op)) whose rows ``prefix + name`` ``changed(a, b)``; a side
    without the call counts 0."""
    names = sorted(names_of.get((before, op), set()) | names_of.get((after, op), set()))
    found_rows = []
    for name in names:
        a = found.by_key.get((before, op, prefix + name), {}).get("per_call", 0)
        b = found.by_key.get((after, op, prefix + name), {}).get("per_call", 0)
        if changed(a, b):
            found_rows.append((name, a, b))
    return found_rows


def count_move(rows, op: str, before: str, after: str,
               instructions_move: float = INSTRUCTIONS_MOVE) -> dict | None:
    """How ``op``'s counts moved from series ``before`` to ``after``; None when a side has no
    syscall count of the op (nothing to say, nothing guessed).

    {"up": bool, "down": bool, "instructions": relative change or None, "syscalls":
    [(name, a, b)] per call that changed, "bytes": [(name, a, b)] the bytes per call of the
    calls that moved them (read, write...) that changed beyond BYTES_MOVE, or None when a
    side has no byte count, "note": why instructions were left out or None}.
    "up": instructions grew beyond ``instructions_move``, there are more syscalls per call or
    the syscalls move more bytes per call beyond BYTES_MOVE (the same number of reads, each
    16 times larger, is more work); "down" the reverse; a syscall mix that changed at the
    same total counts both ways (one kind of call for another can cost more or less). A side
    without instruction counts (PyPy, no valgrind) or counted by another method: syscalls
    only, said in "note".
    """
    found = lookup(rows)
    index = found.by_key
    ops = [index.get((series, op, "syscalls")) for series in (before, after)]
    if None in ops:
        return None
    changed = _changed_per_name(found, op, before, after, found.syscall_names, "syscall:",
                                lambda a, b: a != b)
    total_a, total_b = ops[0]["per_call"], ops[1]["per_call"]
    up, down = total_b > total_a, total_b < total_a
    if changed and total_a == total_b:
        up = down = True
    moved = bytes_moved(rows, op, before, after)
    if moved is not None:
        bytes_a, bytes_b = moved["total"]
        if _moved_beyond(bytes_a, bytes_b, BYTES_MOVE):
            up, down = up or bytes_b > bytes_a, down or bytes_b < bytes_a
        elif moved["changed"]:
            up = down = True    # one call's bytes for another's at the same total
    ia, ib = index.get((before, op, "instructions")), index.get((after, op, "instructions"))
    instructions, note = None, None
    if ia is None or ib is None:
        missing = [s for s, r in ((before, ia), (after, ib)) if r is None]
        note = f"syscalls only: no instruction counts for {' and '.join(missing)}"
    elif ia["method"] != ib["method"]:
        note = "syscalls only: instructions counted by different methods"
    elif ia["per_call"]:
        instructions = (ib["per_call"] - ia["per_call"]) / ia["per_call"]
        up = up or instructions > instructions_move
        down = down or instructions < -instructions_move
    # Estimated cycles (instructions and simulated cache misses): what moves them beyond the
    # instructions is memory behaviour. Only where both sides were counted with the cache.
    ca, cb = index.get((before, op, "estimated_cycles")), index.get((after, op, "estimated_cycles"))
    cycles = (cb["per_call"] - ca["per_call"]) / ca["per_call"] \
        if ca and cb and ca["per_call"] and instructions is not None else None
    return {"up": up, "down": down, "instructions": instructions, "syscalls": changed,
            "bytes": moved["changed"] if moved is not None else None, "note": note, "cycles": cycles,
            "cycles_up": cycles is not None and cycles > instructions_move,
            "cycles_down": cycles is not None and cycles < -instructions_move}


def where_instructions_went(functions: dict, op: str, before: str, after: str,
                            top: int | None = 5, entered: int = 0) -> list:
    """The ``top`` functions whose self instructions per call changed most from ``before``
    to ``after``, and up to ``entered`` functions entered on one side only
    (iomatrix.callgrind.where_instructions_went); [] without both sides."""
    a, b = functions.get((before, op)), functions.get((after, op))
    if not a or not b:
        return []
    return callgrind.where_instructions_went(a[1], b[1], a[0], b[0], top, entered)


def calls_known(functions: dict, op: str, series: str) -> bool:
    """Whether ``series``' kept functions of ``op`` carry the times each was entered (files
    counted before that have three-element entries: calls unknown)."""
    side = functions.get((series, op))
    return bool(side) and callgrind.entered_bound(side[1]) is not None


def entered_bound(functions: dict, op: str, series: str) -> float | None:
    """At most how many times per call ``series`` entered a function of ``op`` that is not
    among its kept functions (iomatrix.callgrind.entered_bound); None when unknown."""
    side = functions.get((series, op))
    bound = callgrind.entered_bound(side[1]) if side else None
    return None if bound is None else bound / side[0]


def entered_one_side(functions: dict, op: str, before: str, after: str,
                     limit: int = 20) -> list | None:
    """The functions entered on one side only (iomatrix.callgrind.entered_one_side); None
    when a side's calls are unknown (calls_known) or it kept no functions."""
    if not (calls_known(functions, op, before) and calls_known(functions, op, after)):
        return None
    a, b = functions[(before, op)], functions[(after, op)]
    return callgrind.entered_one_side(a[1], b[1], a[0], b[0], limit)


def shared_only_change(functions: dict, op: str, before: str, after: str) \
        -> tuple[float, list] | None:
    """(change of self instructions per call, names) of the functions only a shared
    libpython runs (iomatrix.callgrind.shared_only_change); None without both sides."""
    a, b = functions.get((before, op)), functions.get((after, op))
    if not a or not b:
        return None
    return callgrind.shared_only_change(a[1], b[1], a[0], b[0])


def instructions_per_call(rows, op: str, series: str) -> float | None:
    """``series``' instructions per call of ``op`` from the counting pass; None uncounted."""
    row = lookup(rows).by_key.get((series, op, "instructions"))
    return row["per_call"] if row else None
