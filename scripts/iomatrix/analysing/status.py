"""Where a regression stands now: in the newest patch release of each minor version at hand
(issue 43, item 5).

A finding OLD -> NEW that made an op slower is looked for in every release of the run from
NEW's minor version on: the lineage's release of each minor version and the other patch
releases the run timed of the same recipe (``3.13.14`` beside ``3.13.15``). Each is compared
with OLD, paired by round as the step was, and is said to

- **have it**: significantly slower than OLD by more than the threshold and by at least half
  the step (in log terms);
- **have part of it**: significantly slower by more than the threshold, less than half the
  step;
- be **fixed**: within the threshold of OLD, or faster (the estimate);
- be **unclear**: the estimate beyond the threshold, not significant.

A minor version's state is its newest patch's at hand. That is the branch's state only where
that patch is the newest release of the branch known here: the cache's tarballs and the
changelogs in them (offline; ``nox -s provision`` or ``nox -s changelog`` fetch more). Where a
newer patch is known and the one at hand still has the regression, the branch is **unknown**
(the newer one may have the fix); where no changelog of the branch is at hand to tell its
newest patch, the page says "newest not known here". Where a patch at hand is fixed and an
earlier one of the branch at hand had it, the fix is between the two; a later entry of the
changelog (``changelog.later_fixes``: it speaks of the op's machinery and of speed) whose
release of that branch lies between them is named as the change that did it: "fixed in 3.13.12
by gh-144380", as far as the builds at hand show. Where a branch has no earlier patch at hand
but its newest is significantly faster than NEW (fixed or part of it), a later entry of the
changelog listed in a release of that branch up to its newest at hand is named when it is the
same change as the step's (``same_change``: it names the step's tested cause by number, or a
function that moved in the step, or it is the change a measured bracket of another branch
named): "3.14 partly fixed in 3.14.3 by gh-144380" (the release the changelog lists it in).

Each branch also has its place in CPython's release cycle (``lifecycle_of``), from a small
table in this module (FIRST_RELEASES: each minor version's .0 date) and PEP 602's rule: bugfix
releases for 2 years after the .0, then security fixes only until 5 years after it, then end
of life; taken on the run's date, so a page regenerated later says the same. A branch with no
.0 in the table is a pre-release when its newest version at hand is one (3.15.0rc2), else
"lifecycle unknown". ``branches_now`` gives both for a finding, one row a branch.
"""
from __future__ import annotations

import datetime
import math
import re
from dataclasses import dataclass, field

from iomatrix import stats
from iomatrix.analysing.analysis import comparable_recipe, series_info
from iomatrix.analysing.changelog import cached_tarballs, newest_changelogs, version_key
# A branch's place in the release cycle lives in its own module (evidence asks it too); its
# names stay importable from here, where the pages and tests have always found them.
from iomatrix.analysing.lifecycle import (  # noqa: F401
    BUGFIX, END_OF_LIFE, FIRST_RELEASES, LIFECYCLE_UNKNOWN, PRERELEASE, SECURITY, Lifecycle,
    _months_after, _years_after, bugfix_months, lifecycle_note, lifecycle_of)

HAS, PART, FIXED, UNCLEAR, UNKNOWN = "has it", "has part of it", "fixed", "unclear", "unknown"
LATER_LOOKED_AT = 5     # later entries looked at for the change that fixed it


@dataclass
class Branch:
    """One minor version's state for one regression."""
    minor: tuple                  # (3, 13)
    release: str                  # the newest patch at hand: its series ("3.13.15")
    version: str                  # its exact version
    state: str                    # HAS, PART, FIXED, UNCLEAR or UNKNOWN
    ratio: stats.Comparison | None = None   # the release against the step's older side
    newest_known: str | None = None          # the branch's newest release known here
    fixed_in: str | None = None              # where a fix lies: "3.13.12", or a range
    change: str | None = None                # the entry named as the fix ("gh-144380")
    had_it: list = field(default_factory=list)   # earlier patches at hand that had it
    # a fix's bracket: (the last patch at hand that had it or None, the first without it)
    bracket: tuple = (None, None)
    # the fix's release read from the changelog only (no earlier patch of the branch at
    # hand had it): the branch moved back against NEW and the entry is the same change
    from_changelog: bool = False

    def words(self) -> str:
        """"3.13: fixed in 3.13.12 by gh-144380 (3.13.15: 1.02x)", "3.12: has it (3.12.1:
        1.85x; newest not known here)", plain text."""
        minor = ".".join(map(str, self.minor))
        ratio = f"{self.ratio.ratio:.2f}x" if self.ratio is not None else ""
        after, first = self.bracket
        fixed = "fixed" if self.state == FIXED else "partly fixed"
        left = "" if self.state == FIXED else f", {self.state}"
        if after and self.change:
            return (f"{minor}: {fixed} in {self.fixed_in} by {self.change}{left} "
                    f"({after} had it; {self.version}: {ratio})")
        if self.from_changelog:
            return (f"{minor}: {fixed} in {self.fixed_in} by {self.change}{left} (the "
                    f"changelog's release; {self.version}: {ratio})")
        if after:
            return (f"{minor}: {fixed} after {after} (by {first}){left} "
                    f"({self.version}: {ratio})")
        if self.state == FIXED:
            return f"{minor}: fixed ({self.version}: {ratio})"
        if self.state == UNKNOWN:
            return (f"{minor}: unknown ({self.version}, {ratio}, still {HAS}; "
                    f"{self.newest_known} not at hand)")
        newest = "" if self.newest_known else "; newest not known here"
        return f"{minor}: {self.state} ({self.version}: {ratio}{newest})"


def state_of(c: stats.Comparison, step: float, threshold: float) -> str:
    slower = c.ratio > 1 + threshold
    if not slower:
        return FIXED
    if not c.significant:
        return UNCLEAR
    return HAS if math.log(c.ratio) >= math.log(step) / 2 else PART


def releases_at_hand(an) -> dict:
    """{(major, minor): [(version key, version, series)] oldest first}: the lineage's releases
    and the run's other patch releases of the lineage's recipe (the same build of a release:
    a step between two recipes measures the build as much as the release)."""
    found: dict = {}
    wanted = set(an.lin.releases) | {v.series for v in an.lin.variants if v.kind == "patch"}
    for series in wanted:
        info = series_info(an.data, series)
        key = version_key(str(info.get("version") or ""))
        if key is None:
            continue
        if an.lin.recipe and comparable_recipe(info) and comparable_recipe(info) != an.lin.recipe:
            continue
        found.setdefault(key.release[:2], []).append((key, str(info["version"]), series))
    return {minor: sorted(rows) for minor, rows in found.items()}


def newest_known(an, minors) -> dict:
    """{(major, minor): the newest final release known here}: the cache's tarballs and the
    release sections of the changelogs in them (offline); a minor version absent: not known."""
    directory = getattr(an.why, "directory", None)
    cache = an.__dict__.setdefault("_newest_known", {})
    if "all" not in cache:
        versions = list(cached_tarballs(directory))
        oldest = min((".".join(map(str, m)) for m in minors), key=version_key, default=None)
        if oldest is not None:
            # A branch's own changelog lists its patch releases; another branch's lists
            # some of them (merged sections), never all: only a log's own branch counts.
            for log in newest_changelogs(f"{oldest}.0", directory):
                own = version_key(str(log.version or ""))
                versions += [r.version for r in log.releases if own is not None and
                             (version_key(r.version) or own).release[:2] == own.release[:2]]
        newest: dict = {}
        for text in versions:
            key = version_key(str(text))
            if key is None or key.is_prerelease:
                continue
            if key.release[:2] not in newest or key > newest[key.release[:2]]:
                newest[key.release[:2]] = key
        cache["all"] = newest
    return cache["all"]


def moved_back(an, f, judged: list) -> tuple | None:
    """(the last patch at hand that had it, the first after it that moved it back) within a
    branch: the first adjacent pair of its patches at hand whose state got better (HAS to
    PART, UNCLEAR or FIXED; PART to FIXED) with the newer one significantly faster than the older,
    paired as the step; None when none did."""
    rank = {HAS: 2, PART: 1, UNCLEAR: 1, FIXED: 0}
    for (ka, va, sa, _, xa), (kb, vb, sb, _, xb) in zip(judged, judged[1:]):
        if rank[xb] >= rank[xa] or xa == UNCLEAR:
            continue
        try:
            c = stats.compare(an.means[(sa, f.op)], an.means[(sb, f.op)], paired=an.data.paired)
        except ValueError:
            continue
        if c.significant and c.ratio < 1 / (1 + an.threshold):
            return va, vb
    return None


def fix_between(an, f, minor: tuple, after: str | None, upto: str) -> tuple:
    """(number, release) of the later entry (changelog.later_fixes, best first) listed in a
    release of ``minor`` in (AFTER, UPTO] (AFTER None: up to UPTO); (None, None) for none."""
    lo, hi = version_key(after) if after else None, version_key(upto)
    for fix in an.why.later_of(f.op, an.suite_of.get(f.op, ""), f.b, LATER_LOOKED_AT):
        for release in (fix.candidate.entry.release, *fix.also):
            key = version_key(str(release))
            if key is not None and key.release[:2] == minor and key <= hi and \
                    (lo is None or key > lo):
                return fix.candidate.entry.number, str(release)
    return None, None


def status_of(an, f) -> list[Branch]:
    """The branches of regression ``f`` (a finding that made its op slower) from NEW's minor
    version on, oldest first; [] for a speed-up or where NEW's version is unknown."""
    if f.comparison.ratio <= 1:
        return []
    cache = an.__dict__.setdefault("_status", {})
    key = (f.op, f.a, f.b)
    if key not in cache:
        cache[key] = _status(an, f)
    return cache[key]


def _status(an, f) -> list[Branch]:
    new = version_key(str(series_info(an.data, f.b).get("version") or ""))
    base = an.means.get((f.a, f.op))
    if new is None or not base:
        return []
    at_hand = {m: rows for m, rows in releases_at_hand(an).items() if m >= new.release[:2]}
    newest = newest_known(an, at_hand)
    branches = []
    for minor, rows in sorted(at_hand.items()):
        judged = []
        for key, version, series in rows:
            if key < new or (series, f.op) not in an.means:
                continue
            try:
                c = stats.compare(base, an.means[(series, f.op)], paired=an.data.paired)
            except ValueError:      # no round with both sides
                continue
            judged.append((key, version, series, c, state_of(c, f.comparison.ratio,
                                                             an.threshold)))
        if not judged:
            continue
        key, version, series, c, state = judged[-1]
        known = newest.get(minor)
        branch = Branch(minor, series, version, state, c,
                        str(max(known, key)) if known is not None else None)
        branch.had_it = [v for _, v, _, _, s in judged[:-1] if s in (HAS, PART)]
        if state in (HAS, PART) and known is not None and known > key:
            branch.state = UNKNOWN
        if state == FIXED and not branch.had_it:
            branch.bracket = (None, version)
        else:
            moved = moved_back(an, f, judged)
            if moved is not None:
                branch.bracket = moved
                branch.change, branch.fixed_in = fix_between(an, f, minor, *moved)
        branches.append(branch)
    bracketed = {b.change for b in branches if b.change}
    for branch in branches:
        if branch.change is None and branch.bracket[0] is None and \
                branch.state in (PART, FIXED, UNCLEAR) and faster_than_new(an, f, branch):
            branch.change, branch.fixed_in = fix_in_branch(an, f, branch, bracketed)
            branch.from_changelog = branch.change is not None
    return branches


def faster_than_new(an, f, branch: Branch) -> bool:
    """Whether the branch's newest patch at hand is significantly faster than NEW, beyond the
    threshold, paired as the step: the step moved back there."""
    try:
        c = stats.compare(an.means[(f.b, f.op)], an.means[(branch.release, f.op)],
                          paired=an.data.paired)
    except (KeyError, ValueError):
        return False
    return bool(c.significant) and c.ratio < 1 / (1 + an.threshold)


def same_change(an, f, entry, bracketed: set) -> str | None:
    """Why a later changelog entry is the same change as step ``f``'s, in words, or None:
    it names the step's tested cause by its number (a word of its own: "gh-101819", not
    "gh-1018190"), or names a function that moved in the step (by its name, or its file's),
    or a measured bracket of another branch named it (``bracketed``). An entry that only
    speaks of the op's machinery is not enough: every io entry does."""
    from iomatrix.analysing import csource, evidence
    verdict = evidence.verdict_for(an, f)
    text = str(entry.text)
    tested = verdict.candidate is not None and verdict.test is not None and verdict.test.tested
    cause = verdict.candidate.entry.number if tested else None
    if cause and re.search(rf"(?<!\d){re.escape(cause.split('-')[-1])}(?!\d)", text):
        return f"it names {cause}"
    lower = text.lower()
    for moved in verdict.moved:
        for word in [moved.path.rsplit("/", 1)[-1], *map(csource.bare_name, moved.names)]:
            if len(word) > 3 and word.lower() in lower:
                return f"it names {word}"
    if entry.number in bracketed:
        return "a bracket of another branch names it"
    return None


def fix_in_branch(an, f, branch: Branch, bracketed: set) -> tuple:
    """(number, release) of the best later entry (changelog.later_fixes) listed in a release
    of ``branch``'s minor version up to its newest patch at hand that is the same change as
    the step (same_change); (None, None) for none."""
    upto = version_key(branch.version)
    for fix in an.why.later_of(f.op, an.suite_of.get(f.op, ""), f.b, LATER_LOOKED_AT):
        for release in (fix.candidate.entry.release, *fix.also):
            key = version_key(str(release))
            if key is not None and key.release[:2] == branch.minor and key <= upto and \
                    same_change(an, f, fix.candidate.entry, bracketed):
                return fix.candidate.entry.number, str(release)
    return None, None


def short_words(an, f) -> str:
    """The branches as the main page's row says them, plain text: neighbouring minor versions
    in the same state in one run ("3.12 has it, security-only, will not get gh-144380; 3.13
    fixed in 3.13.12 by gh-144380; 3.15 unknown"), '' for none. A branch's lifecycle is said
    where it is not bugfix or pre-release (lifecycle_of). The suite page and data.csv have
    each branch's words."""
    groups: list = []
    for row in branches_now(an, f):
        b = row.branch
        said = b.state
        fixed = bool(b.bracket[0] or b.from_changelog)
        if fixed:
            said = ("fixed" if b.state == FIXED else "partly fixed") + (
                f" in {b.fixed_in} by {b.change}" if b.change else f" by {b.bracket[1]}")
        tail = SHORT_PHASES.get(row.lifecycle.phase, "") if row.open else ""
        pending = row.pending_words()
        if tail and pending.startswith("will not get"):    # the row names no "may get"
            tail += f", {pending}"
        if groups and groups[-1][1] == (said, tail) and not fixed:
            groups[-1][0].append(b)
        else:
            groups.append(([b], (said, tail)))
    parts = []
    for branches, (said, tail) in groups:
        first = ".".join(map(str, branches[0].minor))
        last = ".".join(map(str, branches[-1].minor))
        plural = len(branches) > 1
        if said == HAS:
            said = "have it" if plural else "has it"
        elif said == PART:
            said = "have part of it" if plural else "has part of it"
        said += f", {tail}" if tail else ""
        parts.append(f"{first}–{last} {said}" if plural else f"{first} {said}")
    return "; ".join(parts)


# The main page's row says a branch's lifecycle in a word where it is not bugfix or pre-release
SHORT_PHASES = {SECURITY: "security-only", END_OF_LIFE: "end of life",
                LIFECYCLE_UNKNOWN: "lifecycle unknown"}


def status_words(an, f) -> str:
    """The branches in one line, each with its lifecycle: "3.12 (security fixes only, to
    2028-10): has it (3.12.1: 1.85x), will not get gh-144380; 3.13 (bugfix): fixed in 3.13.12
    by gh-144380 (3.13.15: 1.02x)", plain text; '' for none."""
    said = []
    for row in branches_now(an, f):
        minor, words = row.branch.words().split(": ", 1)
        pending = row.pending_words()
        words += f", {pending}" if pending else ""
        said.append(f"{minor} ({row.lifecycle.words()}): {words}")
    return "; ".join(said)


def note(an, findings: list) -> str:
    """The sentence under a page's findings that says how to read "now" (plain text), '' when
    no finding has a status: which minor versions' newest patch is not known here."""
    branches = [b for f in findings for b in status_of(an, f)]
    if not branches:
        return ""
    unknown = sorted({b.minor for b in branches if b.newest_known is None})
    said = ("\"now\": where each regression stands in the newest patch at hand of every minor "
            "version from its newer side on, against the step's older side (has it: by half "
            "the step or more; has part of it; fixed: within the threshold; unclear: not "
            "significant; unknown: a newer patch is known and not at hand); \"fixed in X by "
            "N\": an earlier patch at hand had it and a later changelog entry of the branch, "
            "N, lies between (docs/methodology.md, \"Where it stands now\")")
    if unknown:
        said += ("; the newest patch of " + ", ".join(".".join(map(str, m)) for m in unknown)
                 + " is not known here (no changelog of the branch at hand: nox -s changelog "
                 "-- VERSION), so there it is as far as the run's builds show")
    return said + "; " + lifecycle_note() + "."


RUN_DATE_RE = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})")


def run_date(an) -> datetime.date | None:
    """The day the run started (its manifest's ``started``, else its id's date), the day a
    branch's lifecycle is taken on; None when neither gives one."""
    manifest = getattr(an.data, "manifest", None) or {}
    run = getattr(an.data, "run", None)
    for text in (manifest.get("started"), manifest.get("run_id"),
                 getattr(run, "run_id", None)):
        match = RUN_DATE_RE.match(str(text or ""))
        if match:
            try:
                return datetime.date(*map(int, match.groups()))
            except ValueError:
                continue
    return None


@dataclass(frozen=True)
class BranchNow:
    """One branch of a regression now: its state (Branch), its place in the release cycle
    and the fix another branch got that this one has not (``pending``: "gh-144380")."""
    branch: Branch
    lifecycle: Lifecycle
    pending: str | None = None

    @property
    def open(self) -> bool:
        """Whether the regression is still there in the branch (has it, part of it, unknown)
        and nothing of the branch is named as its fix."""
        return self.branch.state in (HAS, PART, UNKNOWN) and self.branch.change is None

    def words(self) -> str:
        """"3.12: security fixes only, to 2028-10; has it, will not get gh-144380", "3.14:
        bugfix; partly fixed in 3.14.3 by gh-144380", plain text."""
        minor = ".".join(map(str, self.branch.minor))
        return f"{minor}: {self.lifecycle.words()}; {self.state_words()}"

    def state_words(self) -> str:
        """"has it, will not get gh-144380", "partly fixed in 3.14.3 by gh-144380": the
        branch's state and pending fix without its name or lifecycle, plain text."""
        b = self.branch
        if b.change:
            said = (f"{'fixed' if b.state == FIXED else 'partly fixed'} in {b.fixed_in} by "
                    f"{b.change}")
        elif b.bracket[0]:
            said = f"{'fixed' if b.state == FIXED else 'partly fixed'} by {b.bracket[1]}"
        else:
            said = {HAS: "has it", PART: "has part of it"}.get(b.state, b.state)
        pending = self.pending_words()
        return said + (f", {pending}" if pending else "")

    def pending_words(self) -> str:
        """"will not get gh-144380" (security fixes only, or end of life), "may get
        gh-144380 (not in its releases known here)" (bugfix or pre-release), or '': the one
        rule every page and ISSUE.md say a branch's pending fix by. Not said of a branch
        whose state is unknown (a newer patch, not at hand, may have had it before its end)
        nor of one whose lifecycle is unknown."""
        if not (self.pending and self.open and self.branch.state != UNKNOWN):
            return ""
        if self.lifecycle.phase in (SECURITY, END_OF_LIFE):
            return f"will not get {self.pending}"
        if self.lifecycle.gets_bugfixes:
            return f"may get {self.pending} (not in its releases known here)"
        return ""


def branches_now(an, f) -> list[BranchNow]:
    """For regression ``f``, each branch from NEW's minor version on, oldest first: its
    state and fix (status_of), its lifecycle on the run's date (lifecycle_of), and the fix
    named in another branch that it lacks; [] for a speed-up. ``BranchNow.lifecycle
    .maintained`` keeps the branches that still get releases. The first screen's table of
    open regressions and the issue text read this."""
    branches = status_of(an, f)
    day = run_date(an)
    named = [b.change for b in branches if b.change]
    pending = named[0] if named else None
    rows = []
    for b in branches:
        key = version_key(b.version)
        prerelease = key is not None and key.is_prerelease
        rows.append(BranchNow(b, lifecycle_of(b.minor, day, prerelease),
                              pending if b.change is None else None))
    return rows
