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


def title(behaviour: str | None, op: str, old: str, new: str, ratio: float | None,
          since: str | None = None) -> str:
    """The title line: since ``since``, the release that brought the change (the tested
    cause's, release_of_change), else NEW; measured OLD -> NEW. Its words are the template's
    (this module's code), a vetted op name and releases (cli.checked's op rule, VERSION_RE),
    and a changelog's release, which is escaped (a release name is data)."""
    what = behaviour or op
    if ratio is None:
        return f"# {what}: {old} -> {new}"
    how = f"{ratio:.2f}x slower" if ratio > 1 else f"{1 / ratio:.2f}x faster"
    if since and since != new:
        return f"# {what} is {how} since {md(since)} (measured {old} -> {new})"
    return f"# {what} is {how} since {new} (than {old})"


def fixes_line(an, f) -> str | None:
    """"**Known fixes:** ..." from the branches' status and lifecycle (status.branches_now):
    each fix with its release per branch and how it is known (a bracket of two patches at
    hand, or the changelog's release with the branch moved back), then the branches that still
    have it, each with its lifecycle ("3.12 (security fixes only, to 2028-10: will not get
    gh-144380)"). None when the finding has no status (a speed-up, no release at hand after
    it). "Not fixed" is said only of a branch whose newest patch at hand has it and for which
    no later entry of its changelog is the same change."""
    from iomatrix.analysing import status
    rows = status.branches_now(an, f)
    if not rows:
        return None
    fixed, still = [], []
    for row in rows:
        b = row.branch
        minor = ".".join(map(str, b.minor))
        partly = ", partly" if b.state != status.FIXED else ""
        if b.change and b.from_changelog:
            fixed.append(f"{md(b.change)} in {md(b.fixed_in)} ({minor}{partly}: the "
                         f"changelog's release; {md(b.version)} at hand is "
                         f"{b.ratio.ratio:.2f}x {md(f.a)})")
        elif b.change:
            fixed.append(f"{md(b.change)} in {md(b.fixed_in)} ({minor}{partly}: between "
                         f"{md(b.bracket[0])} and {md(b.bracket[1])} at hand)")
        elif b.bracket[0]:
            fixed.append(f"a change between {md(b.bracket[0])} and {md(b.bracket[1])} "
                         f"({minor}; no changelog entry named)")
        elif b.state in (status.HAS, status.PART, status.UNKNOWN):
            life = row.lifecycle.words()
            pending = row.pending_words()
            if pending.startswith("will not get"):
                life += f": {md(pending)}"
            still.append(f"{minor} ({life})")
    said = "; ".join(fixed) if fixed else "none known in the releases and changelogs at hand"
    if still:
        said += f". Not fixed in the newest patch at hand of {', '.join(still)}"
    return f"**Known fixes:** {said}."


def known_issue_lines(an, f) -> list[str]:
    """"**Already on the tracker:** ..." for each later changelog entry that is the same
    change as the step (status.same_change: it names the tested cause's number or a function
    that moved, or a measured bracket named it), with the releases that list it; [] for none.
    The entry's words are data: rendered escaped (reporting.rst), linked by number only."""
    from iomatrix.analysing import status
    from iomatrix.reporting import rst, why
    if f.comparison.ratio <= 1:
        return []
    bracketed = {b.change for b in status.status_of(an, f) if b.change and
                 not b.from_changelog}
    lines = []
    for fix in an.why.later_of(f.op, an.suite_of.get(f.op, ""), f.b, status.LATER_LOOKED_AT):
        entry = fix.candidate.entry
        reason = status.same_change(an, f, entry, bracketed)
        if reason is None:
            continue
        releases = ", ".join(md(r) for r in (entry.release, *fix.also))
        lines += [f"**Already on the tracker:** {why.link(fix.candidate)} (in {releases}): "
                  f"{rst.render(entry.text, 300)} — the same change as this step "
                  f"({md(reason)}): this text adds the measurement, it is not a new "
                  "issue.", ""]
    return lines


def source_lines(an, f) -> list[str]:
    """"**Source checked:** ..." for the functions that moved in the step (evidence's
    Moved, in CPython's tree), in the newest source at hand of each branch from NEW's on (a
    tarball in the cache: the changelog's or a provisioned build's): whether each is as in
    NEW's source (the step's code still there) or as in OLD's, where those are at hand too;
    else whether the branches' newest agree, and that OLD's and NEW's are not at hand. []
    when no function moved or no branch's source is at hand."""
    from iomatrix.analysing import csource, evidence, status
    from iomatrix.analysing.analysis import series_info
    from iomatrix.analysing.changelog import cached_tarballs, version_key
    moved = evidence.verdict_for(an, f).moved
    rows = status.status_of(an, f)
    if not moved or not rows:
        return []
    at_hand = {version_key(v): p for v, p in
               cached_tarballs(getattr(an.why, "directory", None)).items()}
    old = str(series_info(an.data, f.a).get("version") or "")
    new = str(series_info(an.data, f.b).get("version") or "")
    newest = [(b.version, at_hand[version_key(b.version)]) for b in rows
              if version_key(b.version) in at_hand]
    if not newest:
        return []
    sides = [(v, at_hand.get(version_key(v))) for v in (new, old) if v]
    sides = [(v, p) for v, p in sides if p is not None]
    said = []
    for m in moved[:3]:
        name = code(csource.bare_name(m.name))
        texts = [csource.member_text(str(p), m.path) for _, p in newest]
        bodies = [csource.functions_of(t) if t else {} for t in texts]
        found = [next((b[csource.bare_name(n)] for n in m.names
                       if csource.bare_name(n) in b), None) for b in bodies]
        if all(t is None for t in found):
            continue
        if not sides:
            versions = ", ".join(md(v) for (v, _), t in zip(newest, found) if t is not None)
            agree = len({t for t in found if t is not None}) == 1 and len(found) > 1
            said.append(f"{name} ({code(m.path)}) read in {versions}"
                        + (" (the same text in each)" if agree else ""))
            continue
        per_branch = []
        for (version, path), text in zip(newest, found):
            verdicts = []
            for side, side_path in sides:
                changed = csource.function_changed(side_path, path, m.path, m.names)
                if changed is not None:
                    verdicts.append(f"{'changed since' if changed else 'as in'} {md(side)}")
            per_branch.append(f"{md(version)}: {', '.join(verdicts) or 'not compared'}")
        said.append(f"{name} ({code(m.path)}): {'; '.join(per_branch)}")
    if said and not sides:
        said[-1] += (f"; {md(old)}'s and {md(new)}'s sources are not at hand (nox -s "
                     f"changelog -- {md(new)}), so none is compared with the step's code: "
                     "the fix is the changelog's word, not checked in the source")
    if not said:
        return []
    return ["**Source checked** (the newest source at hand of each branch): "
            + ". ".join(said) + ".", ""]


def release_of_change(an, f, new: str) -> tuple:
    """(the release that brought the step's change, how that is known): the tested cause's
    changelog release ("3.14.0a6", "gh-117151's release"), else NEW ("the release measured")."""
    from iomatrix.analysing import evidence
    verdict = evidence.verdict_for(an, f) if an is not None else None
    if verdict is not None and verdict.candidate is not None and verdict.test is not None \
            and verdict.test.tested:
        entry = verdict.candidate.entry
        return str(entry.release), f"{entry.number}'s release"
    return new, "the release measured"


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


