"""An op's release step beside its control's: how much of the step is the code around the I/O.

An op times a loop around its I/O (``for line in f: n += len(line)``, a read followed by a
transform). Its control, the op ``<op>__control`` of the same suite (suites/_api.py,
``control_op``), runs the same loop and payload over data already in memory, in the same
lockstep rounds. For a release step a → b of an op, ``step`` sets the control's step
beside it:

- ``share``: the control's change of time over the op's, (c_b − c_a) / (t_b − t_a), each
  time the Hodges-Lehmann location of the per-process means (what the pages show);
- ``without``: the op's step without the control, compared round by round as every step
  is (``stats.compare``) on the per-round differences op − control of each side: the time
  the I/O itself took in that round.

The rule (docs/methodology.md, "Controls"): a step is **the code around the I/O, not I/O**
when the control's change explains at least ``EXPLAINED_SHARE`` (50%) of the op's, the
same way, and the op's step without the control is no finding (not significant, or
within the report's threshold). Such a step stays in data.csv and on the suite page,
labelled, and is not among the main page's I/O findings nor in the summary; neither is
any step of a control op itself.

A control slower than its op on a side (its time at least the op's) is a bug in the
control (it does work the op does not: ``chunks_iterate_lines``' once walked 57 MB of distinct
pieces the op never holds at once): nothing is subtracted (``ControlStep.subtracted`` false,
no ``without``), the step is judged as I/O and its row says why (``sentence``).

An op whose suite declares a control (``CONTROLS``, read from the suite with ``ast`` by
iomatrix.measuring.selection) but whose control has no times on a side (it failed, did not
verify, or the run predates controls) is "control missing": its findings are reported as
before, saying so.
"""
from __future__ import annotations

import dataclasses
import functools
import math

from iomatrix import stats
from iomatrix.measuring import selection

CONTROL_SUFFIX = selection.CONTROL_SUFFIX
# The least share of an op's change of time that its control's change must explain, the
# same way, for the step to be the code around the I/O (with the rest no finding).
EXPLAINED_SHARE = 0.5

AROUND = "the code around the I/O, not I/O"
MISSING = "control missing"
IO = "I/O"


def is_control(op: str) -> bool:
    return op.endswith(CONTROL_SUFFIX)


def control_of(op: str) -> str:
    return selection.control_name(op)


@functools.lru_cache(maxsize=1)
def declared() -> frozenset:
    """The ops whose suites declare a control (every suite's ``CONTROLS``), read once."""
    return frozenset(op for ops in selection.declared_controls().values() for op in ops)


@dataclasses.dataclass
class ControlStep:
    op: str
    a: str
    b: str
    verdict: str                          # AROUND, IO or MISSING
    op_times: tuple | None = None         # (t_a, t_b) seconds
    control_times: tuple | None = None    # (c_a, c_b) seconds
    share: float | None = None            # (c_b - c_a) / (t_b - t_a)
    without: stats.Comparison | None = None   # the op's step without the control
    missing_sides: tuple = ()             # the sides without control times (MISSING)

    @property
    def around(self) -> bool:
        return self.verdict == AROUND

    @property
    def subtracted(self) -> bool:
        """Whether the control may be subtracted: it is faster than its op on both sides."""
        return self.op_times is not None and self.control_times is not None and all(
            c < t for c, t in zip(self.control_times, self.op_times))

    @property
    def slower_sides(self) -> list:
        """The sides (a, b) whose control took at least its op's time."""
        if self.op_times is None or self.control_times is None:
            return []
        return [s for s, c, t in zip((self.a, self.b), self.control_times, self.op_times)
                if c >= t]


def has_control(an, op: str) -> bool:
    """Whether ``op`` has a control: its suite declares one, or the run timed one."""
    return not is_control(op) and (op in declared() or any(
        (s, control_of(op)) in an.means for s in an.order))


def without_control(op_means: dict, control_means: dict) -> dict:
    """{round: op's mean − control's mean} of one series, for the rounds both have."""
    return {r: op_means[r] - control_means[r] for r in op_means if r in control_means}


def is_finding(comparison: stats.Comparison, threshold: float) -> bool:
    """comparisons.is_finding's rule (significant, beyond the threshold either way), here
    because comparisons imports this module for its listing (Analysis.listed)."""
    return bool(comparison.significant) and (comparison.beyond(threshold)
                                             or comparison.ratio < 1 / (1 + threshold))


def judge(share: float | None, without: stats.Comparison | None, threshold: float) -> str:
    """The rule of the module docstring."""
    if share is None or share < EXPLAINED_SHARE:
        return IO
    if without is None or is_finding(without, threshold):
        return IO
    return AROUND


def step(an, op: str, a: str, b: str) -> ControlStep | None:
    """The control's step beside op's step a → b; None when op has no control (a control
    op itself included). Computed once per analysis: the listing, the summary and every
    page ask for it."""
    cache = an.__dict__.setdefault("_control_steps", {})
    if (op, a, b) not in cache:
        cache[(op, a, b)] = _step(an, op, a, b)
    return cache[(op, a, b)]


def _step(an, op: str, a: str, b: str) -> ControlStep | None:
    if not has_control(an, op):
        return None
    control = control_of(op)
    missing = tuple(s for s in (a, b) if not an.means.get((s, control)))
    if missing:
        return ControlStep(op, a, b, MISSING, missing_sides=missing)
    times = tuple(stats.location(an.means[(s, op)].values()) for s in (a, b))
    control_times = tuple(stats.location(an.means[(s, control)].values()) for s in (a, b))
    change = times[1] - times[0]
    control_change = control_times[1] - control_times[0]
    share = control_change / change if change and all(map(math.isfinite, (
        change, control_change))) else None
    residual = [without_control(an.means[(s, op)], an.means[(s, control)]) for s in (a, b)]
    without = None
    slower = any(c >= t for c, t in zip(control_times, times))
    if not slower and all(any(v > 0 for v in side.values()) for side in residual):
        without = stats.compare(*residual, paired=an.data.paired)
    # a control slower than its op: nothing subtracted, the step is I/O (module docstring)
    return ControlStep(op, a, b, IO if slower else judge(share, without, an.threshold), times,
                       control_times, share, without)


def not_io(an, f) -> bool:
    """Whether finding ``f`` is not an I/O finding: a control op's own step, or a step its
    control explains (AROUND)."""
    if is_control(f.op):
        return True
    found = step(an, f.op, f.a, f.b)
    return found is not None and found.around


def io_findings(an) -> list:
    """The analysis' findings that are about I/O (``not_io`` false), largest first."""
    return [f for f in an.findings() if not not_io(an, f)]


def listed(an, limit: int) -> tuple[list, list]:
    """The I/O findings the main page lists: the largest ``limit`` slowdowns, then speed-ups."""
    found = io_findings(an)
    return ([f for f in found if f.comparison.ratio > 1][:limit],
            [f for f in found if f.comparison.ratio < 1][:limit])


def set_apart(an) -> list:
    """The findings of ops (not controls) whose control explains them (AROUND)."""
    return [f for f in an.findings() if not is_control(f.op) and not_io(an, f)]


def _ms(seconds: float) -> str:
    value = seconds * 1e3
    return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"


def sentence(found: ControlStep) -> str:
    """"of 8.1 → 15.5 ms, the loop without I/O 1.0 → 0.9 ms (12% of the change)", or
    "control missing" (with the sides it lacks)."""
    if found.verdict == MISSING:
        return f"{MISSING} ({', '.join(found.missing_sides)})"
    (ta, tb), (ca, cb) = found.op_times, found.control_times
    text = (f"of {_ms(ta)} → {_ms(tb)} ms, the loop without I/O {_ms(ca)} → {_ms(cb)} ms")
    if not found.subtracted:
        return (text + f" (the control is slower than its op under "
                f"{', '.join(found.slower_sides)}: a bug of the control; nothing subtracted)")
    if found.share is not None:
        text += f" ({found.share:.0%} of the change)"
    return text
