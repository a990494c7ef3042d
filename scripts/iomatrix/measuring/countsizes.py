"""At which size the counting pass counts an op, and the basis each count states.

The counts behind a finding are per call at the size the op was timed at (issue 41, item 4):
a count at a smaller fixture does not carry over by the bytes in general. Measured on
``read_allAtOnce_textMode`` 3.13.15 -> 3.14: instructions +46% at 1/8 of the timed file,
-21% at the timed size (3.14's ``memcpy`` of the decoded text outweighs the removed
``ascii_decode`` on the small file only; glibc's allocator thresholds and buffer sizes do
not grow with the file).

So every op is counted at its timed size (the timing pass's own fixtures, a call as the
timing pass makes it) by every counter, except the instructions of the ops in ``SCALED``,
whose call at the timed size is too long for callgrind in the main command: those are
counted at two smaller sizes, the suite's ``COUNT_DIVISOR`` (1/8 of the timed file for the
study's ops) and twice it, and scaled to the timed size by the rule "instructions per
byte", which is checked: the two sizes' instructions per byte must agree within
``TOLERANCE``. Where they do not, the op is counted at the timed size after all (its basis
says why). System calls, and the bytes they moved, are always counted at the timed size:
exact, never scaled.

Each count's basis is stored with it in the counters file (``count_size`` of an op, per
counter)::

    {"basis": "timed"}
    {"basis": "scaled", "rule": "instructions per byte", "divisor": 8.0,
     "checked_divisor": 16.0, "per_byte": [24.33, 24.41], "tolerance": 0.03,
     "counted": [8925903, 4478310], "counted_bytes": [366925, 183462]}
    {"basis": "timed", "not_scaled": "instructions per byte 24.3 at 1/8, 26.1 at 1/16: ..."}

A file of an older version has no ``count_size`` and ``"fixtures": "counting"``: its counts
are per call at the counting size, not scaled (``basis_of``: ``{"basis": "counting"}``).

Why these ops and no others: their call at the timed size (``quick``) ran more than 50
million instructions under 3.13.15 (a line or a record at a time: the per-line work grows
with the bytes, which is what the check asks); every other core op ran under 25 million,
and the whole pass at the timed size took 43.6 s of CPU per interpreter where the old one
at the counting sizes took 19.1 s (docs/methodology.md, "Counts at the timed size").
"""
from __future__ import annotations

# Instructions of one call at the timed size (quick), 3.13.15, measured 2026-11-27.
SCALED = {
    "write_byLines_textMode": 391_890_434,
    "write_byLines_binaryMode": 340_993_848,
    "chunks_iterate_lines": 322_149_676,
    "mmapio_slices_seek_read": 123_617_460,
    "read_byLines_textMode": 71_156_699,
    "textio_decode_utf8": 69_905_356,
    "read_byLines_binaryMode": 54_248_436,
}
# The second, smaller size: this many times smaller again than the counting size.
CHECK_FACTOR = 2
# How far the two sizes' instructions per byte may be apart (relative to the larger size's)
# for the rule to hold. The check refuses a size too small for the rule (3.14's 128 KiB
# buffer against a 40 KB file: 72% apart); it does not bound a scaled count's error, which
# carries the smaller call's fixed work (open, close, the first buffer) times the factor.
# Measured against counts at the timed size: within 0.4%, one op 1.2% (docs/methodology.md).
TOLERANCE = 0.03
TIMED = {"basis": "timed"}
OLD = {"basis": "counting"}


def base_op(op: str) -> str:
    """The op a variant or a control belongs to: ``read_byBlocks_binaryMode[large.bin]`` and
    ``read_byLines_textMode__control`` are counted as their op is."""
    return op.split("[", 1)[0].split("__", 1)[0]


def is_scaled(op: str) -> bool:
    return base_op(op) in SCALED


def basis_of(document: dict, entry: dict, counter: str) -> dict:
    """The basis of one op's count: its ``count_size``; a file without it was counted at the
    counting size and not scaled (older files)."""
    found = (entry.get("count_size") or {}).get(counter)
    if isinstance(found, dict) and found.get("basis") in ("timed", "scaled"):
        return found
    return OLD


def fraction(divisor: float) -> str:
    """1/8 of the timed size, from a divisor of 7.98 (a text file ends on a whole line)."""
    return f"1/{round(divisor) if divisor >= 1.5 else round(divisor, 2):g}"


def basis_words(basis: dict) -> str:
    """A count's basis in a few words (the counts page, data.csv's ``count_basis``)."""
    if basis.get("basis") == "scaled":
        return (f"scaled from {fraction(basis['divisor'])}, instructions per byte checked at "
                f"{fraction(basis['checked_divisor'])}")
    if basis.get("basis") == "timed":
        return "timed size" + (" (instructions per byte differed at two smaller sizes)"
                               if basis.get("not_scaled") else "")
    return "counting size, not scaled"


def key_of(counter: str, op: str):
    """The size rule of one count, for the counts cache's key: a count made at the timed
    size is never taken for one scaled, nor one scaled under another rule."""
    if counter == "instructions" and is_scaled(op):
        return {"basis": "scaled", "rule": "instructions per byte",
                "check_factor": CHECK_FACTOR, "tolerance": TOLERANCE}
    return "timed"


def check(counted: tuple, counted_bytes: tuple) -> tuple[bool, list, str]:
    """(holds, [per byte at each size], why not) of the rule for two counts."""
    if not all(counted_bytes) or any(b <= 0 for b in counted_bytes):
        return False, [], "the counted calls moved no bytes"
    per_byte = [c / b for c, b in zip(counted, counted_bytes)]
    apart = abs(per_byte[0] - per_byte[1]) / per_byte[0] if per_byte[0] else 1.0
    if apart <= TOLERANCE:
        return True, per_byte, ""
    return False, per_byte, (f"instructions per byte {per_byte[0]:.2f} and {per_byte[1]:.2f} at "
                             f"the two counting sizes, {apart:.1%} apart (more than "
                             f"{TOLERANCE:.0%}): counted at the timed size")


def _scaled(value, factor: float):
    return round(value * factor) if isinstance(value, (int, float)) and \
        not isinstance(value, bool) else value


def scale_value(value: dict, factor: float) -> dict:
    """An instructions value (counttools.window_counts) scaled by ``factor``: the count, the
    cache events, each function's self instructions and calls, each edge's calls and
    inclusive instructions (the same rule for all: what one byte costs)."""
    out = dict(value)
    out["instructions"] = _scaled(value["instructions"], factor)
    if isinstance(value.get("cache"), dict):
        out["cache"] = {k: _scaled(v, factor) for k, v in value["cache"].items()}
    if isinstance(value.get("functions"), list):
        out["functions"] = [list(f[:2]) + [_scaled(x, factor) for x in f[2:]]
                            for f in value["functions"]]
    if isinstance(value.get("call_edges"), list):
        out["call_edges"] = [list(e[:2]) + [_scaled(x, factor) for x in e[2:]]
                             for e in value["call_edges"]]
    return out


def count_instructions(ops: list, run, timed_bytes) -> dict:
    """{op: ("ok", value with "count_size") | ("failed", why)} for the instructions of
    ``ops`` (a series' ops, of every suite: one worker per size).

    ``run(size, ops)``: counts ``ops`` at ``size`` ("timed", 1: the counting size,
    CHECK_FACTOR: smaller again) and returns ({op: result}, {op: bytes per call}).
    ``timed_bytes(ops)``: {op: bytes of one call at the timed size}."""
    timed = [op for op in ops if not is_scaled(op)]
    scaled = [op for op in ops if is_scaled(op)]
    results = {}
    retry = {}
    if scaled:
        first, first_bytes = run(1, scaled)
        second, second_bytes = run(CHECK_FACTOR, scaled)
        at_timed = timed_bytes(scaled)
        for op in scaled:
            a, b = first.get(op), second.get(op)
            if a is None or a[0] != "ok":
                results[op] = a or ("failed", "the worker never reached this op")
                continue
            if b is None or b[0] != "ok":
                retry[op] = "not counted at the second size: counted at the timed size"
                continue
            counted = (a[1]["instructions"], b[1]["instructions"])
            counted_bytes = (first_bytes.get(op) or 0, second_bytes.get(op) or 0)
            holds, per_byte, why = check(counted, counted_bytes)
            if holds and at_timed.get(op):
                value = scale_value(a[1], at_timed[op] / counted_bytes[0])
                value["count_size"] = {
                    "basis": "scaled", "rule": "instructions per byte",
                    "divisor": round(at_timed[op] / counted_bytes[0], 2),
                    "checked_divisor": round(at_timed[op] / counted_bytes[1], 2),
                    "per_byte": [round(x, 4) for x in per_byte], "tolerance": TOLERANCE,
                    "counted": list(counted), "counted_bytes": list(counted_bytes)}
                results[op] = ("ok", value)
            else:
                retry[op] = why or "no byte count at the timed size: counted at the timed size"
    if timed or retry:
        found, _ = run("timed", timed + list(retry))
        for op in timed + list(retry):
            state = found.get(op) or ("failed", "the worker never reached this op")
            if state[0] == "ok":
                basis = dict(TIMED, not_scaled=retry[op]) if op in retry else TIMED
                state = ("ok", {**state[1], "count_size": basis})
            results[op] = state
    return results
