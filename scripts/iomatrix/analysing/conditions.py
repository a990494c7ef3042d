"""Which allocator condition each series of a run was timed under, and the lineage steps timed
under glibc's untouched allocator.

A run that measures both allocator conditions (issue 28) has two series per interpreter: one
timed under ``steady`` (thresholds pinned high) and one under ``default`` (glibc's own
behaviour, one op per worker process). Which condition a series was timed under is read from
the manifest's entry of the series (``manifest["interpreters"][series]["allocator"]``);
without that field, from the series' name, ``<label>@<allocator>`` (``3.13@default``); a name
without ``@`` is the run's own condition (``manifest["allocator"]``, ``steady`` in older runs).

These live in analysing, not in the report's allocator section, so that an ``Analysis``
(comparisons) can compute ``untouched_steps`` once for every page that asks for it.
"""
from __future__ import annotations

from iomatrix import stats
from iomatrix.analysing.analysis import (RunData, lineage, ordered_ops, ordered_series,
                                         process_means, series_info, with_all_conditions)

CONDITION_SEPARATOR = "@"
UNTOUCHED = "default"
PINNED = "steady"


def condition_of(data: RunData, series: str) -> tuple[str, str | None]:
    """(the interpreter's series name without the condition, the allocator condition)."""
    base, separator, suffix = series.partition(CONDITION_SEPARATOR)
    recorded = series_info(data, series).get("allocator")
    if isinstance(recorded, str) and recorded:
        return base, recorded
    if separator:
        return base, suffix
    return base, data.manifest.get("allocator") or PINNED


def condition_series_name(label: str, allocator: str) -> str:
    """The name a two-condition run gives the series of ``label`` under ``allocator``."""
    return f"{label}{CONDITION_SEPARATOR}{allocator}"


def pair_series(data: RunData) -> dict:
    """{interpreter: {allocator: series}} for the interpreters' series of the run."""
    pairs: dict = {}
    for series in ordered_series(data):
        base, allocator = condition_of(data, series)
        pairs.setdefault(base, {})[allocator] = series
    return pairs


def untouched_steps(data: RunData) -> dict:
    """{(op, older, newer): default comparison} for the lineage steps (named by the run's own
    condition's series) that were timed under ``default`` too."""
    full = with_all_conditions(data)
    means = process_means(full.frame)
    pairs = pair_series(full)
    releases = [r for r in lineage(data, ordered_series(data)).releases
                if UNTOUCHED in pairs.get(r, {})]
    found = {}
    for op in ordered_ops(full):
        for older, newer in zip(releases, releases[1:]):
            a, b = pairs[older][UNTOUCHED], pairs[newer][UNTOUCHED]
            if (a, op) in means and (b, op) in means:
                found[(op, older, newer)] = stats.compare(means[(a, op)], means[(b, op)],
                                                          paired=full.paired)
    return found
