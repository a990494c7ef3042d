"""Ablations: a finding's mechanism tested by setting its knob back (issue 43).

Where a finding's likely change has a knob (3.14 raised io.DEFAULT_BUFFER_SIZE from 8 KiB
to 128 KiB, gh-117151), the op is timed again in the same lockstep run with the knob set to
the other side's value: under the new release with the old value, under the old release
with the new one. The ablation reproduces the step when the new release with the old value
is within the threshold of the old release (the knob takes the whole step away), or the
old release with the new value moves the step's way by at least half the step.

A knob is one entry of measuring.knobs.KNOBS (the run plans the ablations from it, below
this layer): its name, the words of a changelog entry that speak of it, the release whose
default changed and the values on either side. docs/methodology.md, "Ablations", gives the
rule and the table.

The run times an ablation as a series of its own (``3.14.7~buffering=4096``); the loader
puts its processes under the release's own series as ops ``OP~KNOB=VALUE``
(analysis.load_run: ``RunData.ablations``). ``outcome`` reads them when the run planned
them and says None otherwise. An ablation that failed (planned, its op not timed) says so
beside the finding; it never removes the finding.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from iomatrix import stats
from iomatrix.analysing.changelog import _lower, _word_re
from iomatrix.measuring.knobs import (KNOBS, SEPARATOR as ABLATION_SEPARATOR,  # noqa: F401
                                      Knob, ablation_op, knobs_between, release_key,
                                      split_ablation)


def is_ablation(op: str) -> bool:
    return ABLATION_SEPARATOR in str(op)


@dataclass(frozen=True)
class Outcome:
    knob: Knob
    reproduces: bool
    words: str           # "confirmed by ablation: with a 4 KiB buffer 3.14.7 is 1.02x 3.13.15"
    failed: bool = False  # planned, but no ablation op was timed
    others: tuple = ()    # the other knobs of the step whose results ``words`` also says

    def speaks_of(self, text: str) -> bool:
        return any(_word_re(k.words).search(_lower(text)) is not None
                   for k in (self.knob, *self.others))


def knob_for(op: str, old: str, new: str) -> Knob | None:
    """The knob whose default changed inside the step OLD -> NEW and that applies to ``op``."""
    found = knobs_between(release_key(old), release_key(new), op)
    return found[0] if found else None


def value_words(knob: Knob, value: int) -> str:
    """How a page says a knob's value: "a 4 KiB buffer", "encoding='latin-1'"."""
    if knob.phrase is not None:
        return knob.phrase(value)
    size = size_words(value)
    # "an 8 KiB buffer", "an 18 KiB buffer": the article as the number is said
    article = "an" if re.match(r"8|1[18](\D|$)", size) else "a"
    return f"{article} {size} {knob.what}"


def size_words(value: int) -> str:
    if value >= 1 << 20 and value % (1 << 20) == 0:
        return f"{value >> 20} MiB"
    return f"{value >> 10} KiB" if value % 1024 == 0 else f"{value:,} bytes"


def timed(means: dict, series: str, op: str, knob: Knob) -> tuple[int, dict] | None:
    """(value, per-round means) of ``op``'s ablation under ``series`` with ``knob``."""
    prefix = f"{op}{ABLATION_SEPARATOR}{knob.name}="
    for (s, name), rounds in means.items():
        if s == series and name.startswith(prefix):
            split = split_ablation(name)
            if split is not None:
                return split[2], rounds
    return None


def planned(manifest: dict, series: str, knob: Knob) -> list[tuple[str, dict]]:
    """The ablation series the run planned for ``series`` with ``knob``: (name, entry)."""
    return [(name, info) for name, info in manifest.get("interpreters", {}).items()
            if isinstance(info, dict) and info.get("ablation_of") == series
            and info.get("knob") == knob.name]


def failure_words(manifest: dict, f, knob: Knob) -> str | None:
    """Why the planned ablations of a finding's sides timed nothing, or None when none was
    planned (a run made before ablations, a step outside the lineage)."""
    said = []
    for side in (f.b, f.a):
        for name, info in planned(manifest, side, knob):
            failed = (info.get("failed_ops") or {}).get(f.op)
            status = info.get("status")
            reason = failed or info.get("error_tail") or (
                status if status not in (None, "ok") else "no results of it in the run")
            if f.op in (info.get("planned_ops") or [f.op]):
                said.append(f"{name}: {' '.join(str(reason).split())[:160]}")
    if not said:
        return None
    return f"the ablation failed ({knob.name}; {'; '.join(said)}): the finding stands as measured"


def ratio_words(c) -> str:
    interval = f" [{c.low:.2f}, {c.high:.2f}]" if c.low is not None and c.high is not None \
        else ""
    return f"{c.ratio:.2f}x{interval}"


def outcome(an, f) -> Outcome | None:
    """The ablation of finding ``f`` (Analysis ``an``) when the run planned one; None when
    no knob applies or the run planned none (the page says nothing). A step with several
    knobs (the text layer's encoding and newline) says each one's result, in the table's
    order; it is confirmed when one of them reproduces the step."""
    from iomatrix.analysing.analysis import process_means, series_info
    old = series_info(an.data, f.a).get("version") or ""
    new = series_info(an.data, f.b).get("version") or ""
    found = knobs_between(release_key(old), release_key(new), f.op)
    if not found:
        return None
    frame = getattr(an.data, "ablations", None)
    means = process_means(frame) if frame is not None else {}
    results = [r for r in (_outcome(an, f, knob, means, old, new) for knob in found)
               if r is not None]
    if len(results) <= 1:
        return results[0] if results else None
    first = next((r for r in results if r.reproduces), results[0])
    return Outcome(first.knob, any(r.reproduces for r in results),
                   "; ".join(r.words for r in results), all(r.failed for r in results),
                   tuple(r.knob for r in results if r is not first))


def _outcome(an, f, knob: Knob, means: dict, old: str, new: str) -> Outcome | None:
    """One knob's result for finding ``f`` (outcome)."""
    new_old = timed(means, f.b, f.op, knob)     # the new release with the old value
    old_new = timed(means, f.a, f.op, knob)     # the old release with the new value
    base = an.means
    said, reproduces, step = [], False, f.comparison.ratio
    head_ratio = None
    try:
        if new_old is not None and (f.a, f.op) in base:
            value, rounds = new_old
            c = stats.compare(base[(f.a, f.op)], rounds, paired=True)
            reproduces |= abs(math.log(c.ratio)) <= math.log(1 + an.threshold)
            head_ratio = c.ratio
            said.append(f"with {value_words(knob, value)} {new} is {ratio_words(c)} {old}")
        if old_new is not None and (f.a, f.op) in base:
            value, rounds = old_new
            own = stats.compare(base[(f.a, f.op)], rounds, paired=True)
            reproduces |= abs(math.log(own.ratio)) >= abs(math.log(step)) / 2 and \
                (own.ratio - 1) * (step - 1) > 0
            said.append(f"with {value_words(knob, value)} {old} is {ratio_words(own)} "
                        "its own default")
    except ValueError:      # no round with both sides: nothing compared
        said = []
    if not said:
        failed = failure_words(an.data.manifest, f, knob)
        return None if failed is None else Outcome(knob, False, failed, failed=True)
    head = "confirmed by ablation" if reproduces else (
        f"not reproduced by the ablation ({head_ratio:.2f} of the step's {step:.2f})"
        if head_ratio is not None else f"not reproduced by the ablation (the step: {step:.2f})")
    return Outcome(knob, reproduces, f"{head}: {'; '.join(said)}")
