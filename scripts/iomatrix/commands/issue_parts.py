"""Parts of the upstream issue text (``nox -s upstream``, issue 43 item 6) beyond the lead.

- ``title``: the issue's title by behaviour: what got slower (the reproducer template's
  words), by how much, since which release.
- ``fixes_line``: the known fixes, branch by branch, from analysing.status (the fix a
  later patch of a branch carries, with the changelog entry between, and the branches that
  still have it).
- ``twin_lines``: whether the numbers come from enough rounds: the run's A/A twin (the
  same interpreter timed twice in the same rounds) on this op and on the whole run. The
  twin is within its bound on the op when its 95% interval holds 1 and reaches less far from
  1 than the step does (the step stands out of what the run's noise makes of no difference);
  otherwise the text says so and how many rounds the step would need: the interval's reach
  shrinks as one over the square root of the rounds, so ``rounds * (reach / step)**2``,
  rounded up. The run as a whole meets the A/A target when at most 5% of its ops are
  flagged and their geometric mean ratio is 1.00 ± 0.02 (reporting.sections.section_aa).
"""
from __future__ import annotations

import dataclasses
import math

from iomatrix import stats
from iomatrix.markup import code, md

# The run's A/A target (reporting.sections.section_aa's): at most this share of ops flagged,
# and the geometric mean ratio within this of 1.
AA_FLAGGED_SHARE = 0.05
AA_MEAN_BOUND = 0.02
# More rounds than this are not proposed for a rerun of the reproducer (minutes each).
MAX_REPRO_ROUNDS = 40


def title(behaviour: str | None, op: str, old: str, new: str, ratio: float | None) -> str:
    """The title line. Not escaped: it is copied as the tracker's title, and its words are
    the template's (this module's code) or a vetted op name and releases (cli.checked's op
    rule, VERSION_RE), in which nothing acts as markup."""
    what = behaviour or op
    if ratio is None:
        return f"# {what}: {old} -> {new}"
    how = f"{ratio:.2f}x slower" if ratio > 1 else f"{1 / ratio:.2f}x faster"
    return f"# {what} is {how} since {new} (than {old})"


def fixes_line(an, f) -> str | None:
    """"**Known fixes:** ..." from the branches' status, or None when the finding has no
    status (a speed-up, no release at hand after it)."""
    from iomatrix.analysing import status
    branches = status.status_of(an, f)
    if not branches:
        return None
    fixed, still = [], []
    for b in branches:
        minor = ".".join(map(str, b.minor))
        if b.bracket[0] and b.change:
            fixed.append(f"{md(b.change)} in {md(b.fixed_in or b.bracket[1])} ({minor}"
                         f"{', partly' if b.state == status.PART else ''})")
        elif b.bracket[0]:
            fixed.append(f"a change between {md(b.bracket[0])} and {md(b.bracket[1])} "
                         f"({minor}; no changelog entry named)")
        elif b.state in (status.HAS, status.PART, status.UNKNOWN):
            still.append(minor)
    said = "; ".join(fixed) if fixed else "none known in the releases at hand"
    if still:
        said += f". Not fixed (as far as the builds at hand show) in {', '.join(still)}"
    return f"**Known fixes:** {said}."


@dataclasses.dataclass
class TwinCheck:
    series: str                     # the A/A twin's series ("3.15-aa")
    of: str                         # the series it is the twin of ("3.15")
    comparison: stats.Comparison    # the twin against its original on this op
    reach: float                    # how far (log) its interval reaches from 1
    within: bool                    # within its bound on this op
    rounds_needed: int | None       # rounds the step would need, where it is not
    flagged: int                    # ops of the run the twin flags significant
    ops: int                        # ops the twin was compared on
    mean: float                     # their geometric mean ratio

    @property
    def run_meets(self) -> bool:
        return self.flagged <= AA_FLAGGED_SHARE * self.ops and \
            abs(self.mean - 1) <= AA_MEAN_BOUND


def twin_check(an, f) -> TwinCheck | None:
    """The A/A twin of ``an``'s run on ``f``'s op (the one reaching farthest, with several);
    None in a run without an A/A twin that timed the op."""
    checks = []
    step = abs(math.log(f.comparison.ratio)) if f.comparison.ratio > 0 else 0.0
    rounds = max(f.comparison.n_a, 1)
    for v in an.lin.variants:
        if v.kind != "aa":
            continue
        c = an.twin_cmp.get((f.op, v.series))
        if c is None:
            continue
        reach = max(abs(math.log(c.low)), abs(math.log(c.high))) if c.low and c.high else \
            float("inf")
        within = c.significant is False and reach < step
        needed = None
        if not within and step > 0 and math.isfinite(reach):
            needed = max(rounds + 1, math.ceil(rounds * (reach / step) ** 2))
        own = [cc for (op, s), cc in an.twin_cmp.items() if s == v.series]
        ratios = [cc.ratio for cc in own if cc.ratio and cc.ratio > 0]
        checks.append(TwinCheck(v.series, v.twin, c, reach, within, needed,
                                sum(bool(cc.significant) for cc in own), len(own),
                                stats.geometric_mean(ratios) if ratios else 1.0))
    return max(checks, key=lambda t: t.reach) if checks else None


def twin_lines(an, f) -> list[str]:
    """The issue's paragraph on the rounds: the twin's verdict on the op and on the run."""
    t = twin_check(an, f)
    if t is None:
        return ["**Enough rounds?** This run has no A/A twin that timed this op: the numbers' "
                "noise is not measured (a main command's run has one: `--aa`).", ""]
    c = t.comparison
    interval = (f"{c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]" if c.low and c.high
                else f"{c.ratio:.3f} (too few rounds for an interval)")
    reach = f"±{math.expm1(t.reach):.1%}" if math.isfinite(t.reach) else "unbounded"
    step = f"{abs(f.comparison.ratio - 1):.0%}"
    run = (f"On the whole run it flags {t.flagged} of {t.ops} ops, geometric mean "
           f"{t.mean:.3f}: it {'meets' if t.run_meets else 'misses'} its target (at most "
           f"{AA_FLAGGED_SHARE:.0%} flagged, 1.00 ± {AA_MEAN_BOUND:.2f}).")
    head = (f"**Enough rounds?** The run's A/A twin ({code(t.series)}, the interpreter of "
            f"{code(t.of)} timed again in the same rounds) gives this op {interval}: ")
    if t.within:
        said = (f"within its bound (its interval holds 1 and reaches {reach}, less than this "
                f"step's {step}), from {f.comparison.n_a} rounds.")
    else:
        why = "it flags this op" if c.significant else (
            f"its interval reaches {reach}, as far as this step's {step} or farther")
        more = (f"; the step would need about {t.rounds_needed} rounds (this run has "
                f"{f.comparison.n_a}; the interval narrows as one over the square root of the "
                "rounds), so these numbers are not yet firm" if t.rounds_needed else
                "; more rounds cannot be estimated from this run")
        said = f"**more than its bound**: {why}{more}."
    return [head + said + " " + run, ""]


def repro_rounds(an, f, default: int) -> int:
    """The rounds the reproducer runs for ``--run-repro``: ``default``, or the rounds the A/A
    twin says the step needs (at most MAX_REPRO_ROUNDS)."""
    t = twin_check(an, f) if an is not None else None
    if t is None or t.within or not t.rounds_needed:
        return default
    return max(default, min(t.rounds_needed, MAX_REPRO_ROUNDS))


