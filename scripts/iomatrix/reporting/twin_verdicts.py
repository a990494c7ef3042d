"""The twins' verdicts on the findings: does a finding hold in the shipped kind of build?

``nox -s provision`` builds the newest stable release (3.14.7) three ways: the lineage's
plain build, its free-threaded twin (3.14t) and its PGO+LTO twin (3.14.7-pgo, the recipe
python.org and most distributions ship). The lineage's steps are between plain builds, so
each finding on a step with a side that has such a twin is checked again with the twin in
that side's place (3.13 → 3.14.7-pgo for 3.13 → 3.14; both sides where both releases have
a twin built the same way: 3.13t → 3.14t): it *holds* when that step is
significant and beyond the threshold the same way. The main page counts them per twin
("2 of 3 findings hold in the PGO+LTO build") and names those that do not; the twin's own
difference from its plain build (its row under "Variants against their twins") adds to
every such step, which the sentences say.

Only the twins of a release of the lineage speak: a free-threaded build or one of
another recipe (``VARIANT_KINDS`` "free-threaded" and "recipe") whose twin is a lineage
release. The per-row notes of the findings table (findings.recipe_note) say the same for
the recipe twins, finding by finding.
"""
from __future__ import annotations

import dataclasses

from iomatrix import stats
from iomatrix.analysing import controls
from iomatrix.analysing.analysis import series_info
from iomatrix.analysing.comparisons import Analysis, Finding, is_finding
from iomatrix.reporting.markdown import code, md, names

# The variant kinds that are twins of one release of the lineage (analysis.VARIANT_KINDS).
TWIN_KINDS = ("recipe", "free-threaded")


@dataclasses.dataclass
class Verdict:
    """One finding re-checked with a twin in place of one side."""
    finding: Finding
    older: str                      # the step with the twin in place
    newer: str
    comparison: stats.Comparison
    holds: bool                     # significant and beyond the threshold the same way


@dataclasses.dataclass
class TwinVerdicts:
    twin: str                       # the twin's series (3.14t, 3.14.7-pgo)
    plain: str                      # the lineage release it is the twin of (3.14)
    kind: str                       # "recipe" or "free-threaded"
    verdicts: list                  # Verdict per finding on a step with ``plain``
    own: list                       # its comparisons against ``plain``, op by op

    @property
    def held(self) -> int:
        return sum(v.holds for v in self.verdicts)


def build_name(an: Analysis, twin: str, kind: str) -> str:
    """How the page names a twin's build: "free-threaded", "PGO+LTO", else its recipe."""
    if kind == "free-threaded":
        return "free-threaded"
    recipe = series_info(an.data, twin).get("recipe") or ""
    parts = recipe.split("-")
    if "pgo" in parts and "lto" in parts:
        return "PGO+LTO"
    return md(recipe) if recipe else "other-recipe"


def verdict(an: Analysis, f: Finding, older: str, newer: str) -> Verdict | None:
    """``f`` with its step between ``older`` and ``newer``; None without both sides' times."""
    if (older, f.op) not in an.means or (newer, f.op) not in an.means:
        return None
    c = stats.compare(an.means[(older, f.op)], an.means[(newer, f.op)], paired=an.data.paired)
    same_way = is_finding(c, an.threshold) and (c.ratio > 1) == (f.comparison.ratio > 1)
    return Verdict(f, older, newer, c, same_way)


def twin_verdicts(an: Analysis) -> list[TwinVerdicts]:
    """Every twin of a lineage release with the findings on its release's steps, checked
    with the twin in place (module docstring), in the order of the run's series."""
    out = []
    findings = controls.io_findings(an)   # the I/O findings: not a control's, nor one it explains
    twins = [v for v in an.lin.variants if v.kind in TWIN_KINDS and v.twin in an.lin.releases]

    def same_kind(v, side: str) -> str:
        """The twin of ``side`` built the way ``v`` is (3.13t for 3.14t), else ``side``:
        where both releases of a step have such a twin, the step is between twins."""
        build = series_info(an.data, v.series).get("recipe")
        return next((w.series for w in twins if w.twin == side and w.kind == v.kind
                     and (v.kind == "free-threaded"
                          or series_info(an.data, w.series).get("recipe") == build)), side)
    for v in twins:
        checked = []
        for f in findings:
            if v.twin not in (f.a, f.b):
                continue
            older, newer = (v.series, same_kind(v, f.b)) if f.a == v.twin else \
                (same_kind(v, f.a), v.series)
            found = verdict(an, f, older, newer)
            if found is not None:
                checked.append(found)
        own = [c for (op, s), c in an.twin_cmp.items() if s == v.series]
        out.append(TwinVerdicts(v.series, v.twin, v.kind, checked, own))
    return out


def own_difference(tv: TwinVerdicts) -> str:
    """The twin against its plain build: its geometric mean and significant ops."""
    ratios = [c.ratio for c in tv.own if c.ratio and c.ratio > 0]
    slower = sum(bool(c.significant) and c.ratio > 1 for c in tv.own)
    faster = sum(bool(c.significant) and c.ratio < 1 for c in tv.own)
    mean = f"geometric mean {stats.geometric_mean(ratios):.2f}, " if ratios else ""
    return (f"{mean}{slower} of {len(tv.own)} ops significantly slower, {faster} "
            "significantly faster")


def twin_sentence(an: Analysis, tv: TwinVerdicts) -> str:
    """One paragraph per twin: its own difference, then how many findings hold with it."""
    what = build_name(an, tv.twin, tv.kind)
    recipes = [series_info(an.data, s).get("recipe") for s in (tv.twin, tv.plain)]
    built = (f" ({md(recipes[0])}; the lineage's {code(tv.plain)}: {md(recipes[1])})"
             if tv.kind == "recipe" and all(recipes) else "")
    head = (f"{code(tv.twin)} against {code(tv.plain)}, the {what} twin of the same "
            f"release{built}: {own_difference(tv)}.")
    if not tv.verdicts:
        return head + (f" No finding is on a step with {code(tv.plain)}, so it has none to "
                       "check.")
    failed = [v for v in tv.verdicts if not v.holds]
    text = (f" {tv.held} of {len(tv.verdicts)} findings on a step with {code(tv.plain)} hold "
            f"in the {what} build ({code(tv.twin)} in place of {code(tv.plain)}: significant "
            f"and beyond {an.threshold:.0%} the same way)")
    if failed:
        text += "; not: " + names(
            [f"{v.finding.op} ({v.older} → {v.newer}: {v.comparison.ratio:.2f})"
             for v in failed], style=lambda item: md(item))
    return head + text + "."


def section_twins(an: Analysis) -> list[str]:
    """The main page's paragraph of the twins' verdicts (none without a twin of a lineage
    release)."""
    found = twin_verdicts(an)
    if not found or not controls.io_findings(an):
        return []
    lines = [f"**The twins.** Each finding on a step with a release that was also built "
             f"another way is checked again with that build in the release's place; the other "
             f"side stays the lineage's build, so the twin's own difference (its first "
             f"sentence) is part of the checked step.", ""]
    lines += [f"- {twin_sentence(an, tv)}" for tv in found]
    return lines + [""]

