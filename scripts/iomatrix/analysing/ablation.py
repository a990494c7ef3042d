"""Ablations: a finding's mechanism tested by setting its knob back (issue 43).

Where a finding's likely change has a knob (3.14 raised io.DEFAULT_BUFFER_SIZE from 8 KiB
to 128 KiB, gh-117151), the op is timed again in the same lockstep run with the knob set to
the other side's value: under the new release with the old value, under the old release
with the new one. The ablation reproduces the step when the new release with the old value
is within the threshold of the old release (the knob takes the whole step away), or the
old release with the new value moves the step's way by at least half the step.

A knob is one entry of KNOBS: its name (the ablation op's suffix, ``OP~buffering=8192``),
the words of a changelog entry that speak of it, the releases whose default changed and the
values on either side. docs/methodology.md, "Ablations", gives the rule and the table.

An ablation's ops are named ``OP~KNOB=VALUE`` in a series' results; ``outcome`` reads them
when the run has them and says None otherwise. An ablation that failed (its op did not run)
says so beside the finding; it never removes the finding.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from iomatrix import stats
from iomatrix.analysing.changelog import _lower, _word_re, version_key

ABLATION_SEPARATOR = "~"


@dataclass(frozen=True)
class Knob:
    name: str            # "buffering": the op's open() gets buffering=VALUE
    words: str           # an entry that speaks of it ("a|b|c", changelog's matching)
    changed_in: str      # the first release with the new default ("3.14.0a6")
    old_value: int       # the default before
    new_value: int       # the default from changed_in on
    ops: str             # the ops it applies to (re.search on the op name)
    unit: str = "bytes"


KNOBS = [
    # gh-117151: io.DEFAULT_BUFFER_SIZE 8 KiB -> 128 KiB, and open() takes
    # max(min(st_blksize, 8 MiB), DEFAULT_BUFFER_SIZE) (on Linux st_blksize is 4 KiB).
    Knob("buffering", "default_buffer_size|buffer size|buffering|st_blksize", "3.14.0a6",
         8192, 131072, r"^(read_by|write_by|chunks_|mmapio_slices_seek|iobench_)"),
]


def ablation_op(op: str, knob: Knob, value: int) -> str:
    return f"{op}{ABLATION_SEPARATOR}{knob.name}={value}"


def is_ablation(op: str) -> bool:
    return ABLATION_SEPARATOR in str(op)


@dataclass(frozen=True)
class Outcome:
    knob: Knob
    reproduces: bool
    words: str           # "confirmed by ablation: with an 8 KiB buffer 3.14.7 is 1.02x 3.13.15"

    def speaks_of(self, text: str) -> bool:
        return _word_re(self.knob.words).search(_lower(text)) is not None


def knob_for(op: str, old: str, new: str) -> Knob | None:
    """The knob whose default changed inside the step OLD -> NEW and that applies to ``op``."""
    import re
    lo, hi = version_key(old), version_key(new)
    if lo is None or hi is None:
        return None
    for knob in KNOBS:
        if lo < version_key(knob.changed_in) <= hi and re.search(knob.ops, op):
            return knob
    return None


def size_words(value: int) -> str:
    return f"{value >> 10} KiB" if value % 1024 == 0 else f"{value:,} bytes"


def outcome(an, f) -> Outcome | None:
    """The ablation of finding ``f`` (Analysis ``an``) when the run timed one; None when
    no knob applies or the run has no ablation ops at all (the page says nothing)."""
    from iomatrix.analysing.analysis import series_info
    old = series_info(an.data, f.a).get("version") or ""
    new = series_info(an.data, f.b).get("version") or ""
    knob = knob_for(f.op, old, new)
    frame = getattr(an.data, "ablations", None)
    if knob is None or frame is None:
        return None
    from iomatrix.analysing.analysis import process_means
    means = process_means(frame)
    base = an.means
    new_old = means.get((f.b, ablation_op(f.op, knob, knob.old_value)))
    old_new = means.get((f.a, ablation_op(f.op, knob, knob.new_value)))
    if new_old is None and old_new is None:
        return Outcome(knob, False, f"ablation failed: no {knob.name} op was timed")
    said, reproduces = [], False
    step = f.comparison.ratio
    if new_old is not None and (f.a, f.op) in base:
        c = stats.compare(base[(f.a, f.op)], new_old, paired=True)
        within = abs(math.log(c.ratio)) <= math.log(1 + an.threshold)
        reproduces |= within
        said.append(f"with a {size_words(knob.old_value)} buffer {new} is {c.ratio:.2f}x "
                    f"{old}")
    if old_new is not None and (f.b, f.op) in base:
        c = stats.compare(old_new, base[(f.b, f.op)], paired=True)
        # old release with the new value: its time over the old release's own time
        own = stats.compare(base[(f.a, f.op)], old_new, paired=True)
        half = abs(math.log(own.ratio)) >= abs(math.log(step)) / 2 and \
            (own.ratio - 1) * (step - 1) > 0
        reproduces |= half
        said.append(f"with a {size_words(knob.new_value)} buffer {old} is "
                    f"{own.ratio:.2f}x its own default")
    head = "confirmed by ablation" if reproduces else \
        f"not reproduced by the ablation (the step: {step:.2f})"
    return Outcome(knob, reproduces, f"{head}: {'; '.join(said)}")
