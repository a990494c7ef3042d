"""The report's allocator section: what glibc's untouched allocator costs, op by op.

A run that measures both allocator conditions (issue 28) has two series per
interpreter: one timed under ``steady`` (thresholds pinned high) and one under
``default`` (glibc's own behaviour, one op per worker process). Which condition a
series was timed under is read from the manifest's entry of the series
(``manifest["interpreters"][series]["allocator"]``); without that field, from the
series' name, ``<label>@<allocator>`` (``3.13@default``); a name without ``@``
is the run's own condition (``manifest["allocator"]``, ``steady`` in older runs):
analysing.conditions.

``allocator_section(data)`` returns the section as markdown: first the lineage
steps whose ratio the condition changes by more than 25%, then default against
steady for every op and interpreter, with the minor faults per call of each side
(docs/allocator.md explains where they come from).
"""
from __future__ import annotations

import dataclasses
import math

from iomatrix import stats
from iomatrix.analysing.analysis import (RunData, cell_values, lineage, ordered_ops, ordered_series,
                                         process_means, series_info, with_all_conditions)
# Which condition a series was timed under lives in analysing (Analysis.untouched_steps uses
# it); its names are re-exported here, where the report's pages and tests have used them.
from iomatrix.analysing.conditions import (CONDITION_SEPARATOR, PINNED, UNTOUCHED,  # noqa: F401
                                           condition_of, condition_series_name, pair_series,
                                           untouched_steps)
from iomatrix.reporting import crosscheck_section
from iomatrix.reporting.markdown import (NARROW_OP_LINE, code, code_lines, finite, fmt_ratio,
                                         fmt_time, md, nowrap, table)

# A lineage step listed first: the condition moves its ratio by more than this, either way.
STEP_CHANGE = 0.25
TITLE = "## What the allocator costs: glibc untouched (`default`) against pinned (`steady`)"


@dataclasses.dataclass
class Cell:
    """One op under one interpreter: default against steady."""
    op: str
    interpreter: str
    comparison: stats.Comparison      # default / steady
    faults_pinned: float | None       # minor faults per call, mean over processes
    faults_untouched: float | None
    recorded: str | None              # the state the default worker recorded, when not "default"


@dataclasses.dataclass
class StepChange:
    """A lineage step whose ratio differs between the conditions by more than STEP_CHANGE."""
    op: str
    older: str
    newer: str
    pinned: stats.Comparison
    untouched: stats.Comparison

    @property
    def factor(self) -> float:
        return self.untouched.ratio / self.pinned.ratio


def faults_per_call(data: RunData, series: str, op: str,
                    faults: dict | None = None) -> float | None:
    """Mean over the processes of the minor faults per timed call (None: not recorded);
    ``faults``: ``cell_values(frame, "minflt")`` when asked for many cells."""
    faults = cell_values(data.frame, "minflt") if faults is None else faults
    values = faults.get((series, op))
    return float(sum(values) / len(values)) if values else None


def recorded_state(data: RunData, series: str, op: str,
                   allocators: dict | None = None) -> str | None:
    """The allocator state the worker recorded, when it is not plain ``default`` (another
    libc, the caller's variables kept); ``allocators``: ``cell_values(frame, "allocator")``."""
    allocators = cell_values(data.frame, "allocator") if allocators is None else allocators
    states = set(allocators.get((series, op), ())) - {UNTOUCHED}
    return "; ".join(sorted(states)) or None


def cells(data: RunData) -> list[Cell]:
    means = process_means(data.frame)
    # Every lookup below from tables made once: per cell, a filter of the whole table made
    # the section quadratic in ops (issue 34).
    faults = cell_values(data.frame, "minflt")
    allocators = cell_values(data.frame, "allocator")
    pairs = pair_series(data)
    out = []
    for op in ordered_ops(data):
        for interpreter, by_condition in pairs.items():
            pinned, untouched = by_condition.get(PINNED), by_condition.get(UNTOUCHED)
            if (pinned, op) not in means or (untouched, op) not in means:
                continue
            out.append(Cell(op, interpreter,
                            stats.compare(means[(pinned, op)], means[(untouched, op)],
                                          paired=data.paired),
                            faults_per_call(data, pinned, op, faults),
                            faults_per_call(data, untouched, op, faults),
                            recorded_state(data, untouched, op, allocators)))
    return out


# Steps of the whole-file text read the main page shows under both conditions whatever the
# change: from 2.7 to the first 3.x (the 2009 study's step) and from 3.12 to 3.13 (where a
# plain loop first met the 3-4 ms a call of today's 3.x), as (op, older minor, newer minor).
ALWAYS_SHOWN = {("read_allAtOnce_textMode", (2, 7), (3, 6)),
                ("read_allAtOnce_textMode", (3, 12), (3, 13))}


def always_shown(data: RunData, step: StepChange) -> bool:
    def minor(series):
        return tuple(series_info(data, series).get("version_info") or ())[:2]
    return (step.op, minor(step.older), minor(step.newer)) in ALWAYS_SHOWN


def releases_under_both(data: RunData, pairs: dict) -> list[str]:
    """The lineage's releases (by interpreter, without the condition) that ``pairs``
    (pair_series) has under both conditions, oldest first."""
    releases = dict.fromkeys(condition_of(data, s)[0]
                             for s in lineage(data, ordered_series(data)).releases)
    return [r for r in releases if PINNED in pairs.get(r, {}) and UNTOUCHED in pairs[r]]


def step_changes(data: RunData, change: float = STEP_CHANGE, keep=None) -> list[StepChange]:
    """Lineage steps (consecutive plain CPython releases) whose ratio under ``default``
    and under ``steady`` differ by more than ``change`` either way, largest first; and the
    steps ``keep(step)`` asks for whatever their change, after them."""
    means = process_means(data.frame)
    pairs = pair_series(data)
    releases = releases_under_both(data, pairs)
    found, kept = [], []
    for op in ordered_ops(data):
        for older, newer in zip(releases, releases[1:]):
            sides = {}
            for allocator in (PINNED, UNTOUCHED):
                a, b = pairs[older][allocator], pairs[newer][allocator]
                if (a, op) in means and (b, op) in means:
                    sides[allocator] = stats.compare(means[(a, op)], means[(b, op)],
                                                     paired=data.paired)
            if len(sides) < 2:
                continue
            step = StepChange(op, older, newer, sides[PINNED], sides[UNTOUCHED])
            if step.factor > 1 + change or step.factor < 1 / (1 + change):
                found.append(step)
            elif keep is not None and keep(step):
                kept.append(step)
    return sorted(found, key=lambda s: (-abs(math.log(s.factor)), s.op)) + kept


def fmt_faults(value: float | None) -> str:
    if not finite(value) or value < 0:
        return "—"
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def allocator_section(data: RunData, change: float = STEP_CHANGE) -> str:
    """The section as markdown; for a run without both conditions, a note of what it has."""
    pairs = pair_series(data)
    conditions = sorted({allocator for by in pairs.values() for allocator in by})
    if not any(PINNED in by and UNTOUCHED in by for by in pairs.values()):
        shown = ", ".join(code(c) for c in conditions) or "none"
        return "\n".join([
            TITLE, "",
            f"This run measured one allocator condition ({shown}): it shows pinned conditions "
            "only, not what a program under glibc's untouched allocator sees "
            "(docs/allocator.md).", ""])
    lines = [
        TITLE, "",
        "Each op timed under glibc's own allocator (`default`: nothing pinned, one op per "
        "worker process) against the same op with the thresholds pinned high (`steady`). "
        "Above 1: the untouched allocator is slower. Faults: minor page faults per call, "
        "mean over the processes (docs/allocator.md explains them).", "",
        stats.method_sentence(data.paired), "",
    ]
    steps = step_changes(data, change)
    lines += [f"### Lineage steps the condition changes by more than {change:.0%}", ""]
    if steps:
        rows = [[code(s.op), f"{md(s.older)} → {md(s.newer)}", fmt_ratio(s.pinned),
                 fmt_ratio(s.untouched), f"{s.factor:.2f}"] for s in steps]
        lines += [table(rows, ["op", "step", "steady", "default", "default ÷ steady"],
                        ["left", "left", "right", "right", "right"]), ""]
    else:
        lines += [f"None: every lineage step is within {change:.0%} under both conditions.", ""]
    lines += ["### Default against steady, per op and interpreter", ""]
    all_cells = cells(data)
    means = process_means(data.frame)
    rows = []
    for cell in all_cells:
        by_condition = pairs[cell.interpreter]
        rows.append([code(cell.op), md(cell.interpreter),
                     op_time(means, by_condition[PINNED], cell.op),
                     op_time(means, by_condition[UNTOUCHED], cell.op), fmt_ratio(cell.comparison),
                     fmt_faults(cell.faults_pinned), fmt_faults(cell.faults_untouched),
                     md(cell.recorded) if cell.recorded else ""])
    for interpreter in pairs:
        ratios = [c.comparison.ratio for c in all_cells if c.interpreter == interpreter]
        if ratios:
            rows.append(["**geometric mean**", md(interpreter), "", "",
                         f"{stats.geometric_mean(ratios):.2f}", "", "", ""])
    lines += [table(rows, ["op", "interpreter", "steady", "default", "default ÷ steady",
                           "faults steady", "faults default", "note"],
                    ["left", "left", "right", "right", "right", "right", "right", "left"]), ""]
    return "\n".join(lines)


def op_time(means: dict, series: str, op: str) -> str:
    """The op's time per call under ``series``, by the ratios' estimator; ``means`` are
    ``process_means`` of the run's frame."""
    per_round = means.get((series, op))
    return fmt_time(stats.location(per_round.values())) if per_round else "—"


# -- what the main page says of the untouched allocator ---------------------------------------

MAIN_TITLE = "## What an ordinary program sees: glibc's allocator untouched"


def finding_note(untouched: dict, op: str, older: str, newer: str,
                 threshold: float) -> str | None:
    """What a finding's row says of the other condition: the ratio under ``default`` where
    it is not a finding the same way, or differs from it by more than STEP_CHANGE; None
    where the op was not timed under ``default`` or agrees. Its lines are split by "\\n"."""
    comparison = untouched.get((op, older, newer))
    if comparison is None:
        return None
    same_way = comparison.significant and abs(math.log(comparison.ratio)) > math.log1p(threshold)
    # Two lines where it is no finding: one line was the widest of the main page's
    # findings tables (nox -s preview).
    return f"glibc untouched: {fmt_ratio(comparison, interval=False)}" + (
        "" if same_way else "\n(not a finding)")


def lineage_cells(data: RunData) -> tuple[list, dict]:
    """(the lineage releases timed under both conditions, {op: {release: Cell}}) for the ops
    whose untouched/steady ratio is significant and beyond STEP_CHANGE under some release."""
    full = with_all_conditions(data)
    pairs = pair_series(full)
    releases = releases_under_both(data, pairs)
    by_op: dict = {}
    for cell in cells(full):
        if cell.interpreter in releases:
            by_op.setdefault(cell.op, {})[cell.interpreter] = cell
    moved = {op: by for op, by in by_op.items()
             if any(c.comparison.significant and abs(math.log(c.comparison.ratio))
                    > math.log1p(STEP_CHANGE) for c in by.values())}
    return releases, moved


def main_page_lines(data: RunData, label=lambda series: series) -> list[str]:
    """The main page's section: every lineage release's untouched/steady ratio for the ops the
    condition moves by more than STEP_CHANGE (a condition across versions, one table), then
    the steps whose ratio it changes, and a link to the full comparison; [] for a run that
    timed one allocator condition only."""
    if data.all_conditions is None:
        return []
    full = with_all_conditions(data)
    releases, moved = lineage_cells(data)
    lines = [MAIN_TITLE, "",
             "The findings above are timed with glibc's thresholds pinned (`steady`: a call's "
             "buffers come from a heap that stays), so that a ratio is the interpreters' code "
             "and not the allocator's moves. An ordinary program runs glibc untouched "
             "(`default`): the study's ops and the chunked reads were timed that way too, one "
             "op per worker process (its only earlier work: its own untimed calls). "
             "What the condition costs, per release: time untouched over time pinned, for the "
             f"ops it moves by more than {STEP_CHANGE:.0%} under some release. It is a "
             "property of the condition across versions, not of one release step:", ""]
    if not moved:
        return lines + [f"None: under every release the condition is within "
                        f"{STEP_CHANGE:.0%}.", ""] + crosscheck_section.main_page_lines(data)
    rows = []
    for op, by in moved.items():
        rows.append([code_lines(op, NARROW_OP_LINE)] + [nowrap(fmt_ratio(by[r].comparison, interval=False))
                                  if r in by else "—" for r in releases])
    lines += [table(rows, ["op"] + [md(label(r)) for r in releases],
                    ["left"] + ["right"] * len(releases)), ""]
    steps = step_changes(full, keep=lambda step: always_shown(full, step))
    pairs = pair_series(full)
    if steps:
        step_rows = []
        for s in steps:
            older, newer = pairs[s.older], pairs[s.newer]
            faults = [faults_per_call(full, older[UNTOUCHED], s.op),
                      faults_per_call(full, newer[UNTOUCHED], s.op)]
            step_rows.append([code(s.op), nowrap(f"{md(label(s.older))} → {md(label(s.newer))}"),
                              nowrap(fmt_ratio(s.untouched)), nowrap(fmt_ratio(s.pinned)),
                              nowrap(f"{fmt_faults(faults[0])} → {fmt_faults(faults[1])}")])
        lines += [f"Release steps whose ratio the condition changes by more than "
                  f"{STEP_CHANGE:.0%} (because one side pays the condition and the other does "
                  "not), then the whole-file text read's steps from 2.7 and to 3.13:", "",
                  table(step_rows, ["op", "step", nowrap("glibc untouched"), nowrap("steady heap"),
                                    nowrap("faults per call")],
                        ["left", "left", "right", "right", "right"]), ""]
    return lines + crosscheck_section.main_page_lines(data) + [
        "Why a 3.x whole-file text read faults every page in again on every call, and a "
        "script that shows it under any Python: [docs/allocator.md](../docs/allocator.md).", ""]


def summary_clause(data: RunData, label=lambda series: series) -> str:
    """The summary's clause on the untouched allocator, as what it is: a condition across
    versions. The op it moves most, the range of its untouched/steady ratio over the 3.x
    releases (and 2.x's apart, which pays it differently); '' when the run timed one
    condition only or the condition moves no op beyond STEP_CHANGE."""
    if data.all_conditions is None:
        return ""
    releases, moved = lineage_cells(data)
    if not moved:
        return ""
    op, by = max(moved.items(), key=lambda kv: max(abs(math.log(c.comparison.ratio))
                                                   for c in kv[1].values()))

    def major(series):
        return (series_info(data, series).get("version_info") or [0])[0]
    threes = [by[r].comparison.ratio for r in releases if r in by and major(r) == 3]
    twos = [f"{label(r)}: {by[r].comparison.ratio:.2f}" for r in releases
            if r in by and major(r) == 2]
    if not threes:
        return ""
    beyond = sum(r > 1 + STEP_CHANGE or r < 1 / (1 + STEP_CHANGE) for r in threes)
    low, high = min(threes), max(threes)
    span = f"{low:.1f}" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f} to {high:.1f}"
    where = (f"under all {len(threes)} 3.x releases here" if beyond == len(threes) else
             f"under {beyond} of the {len(threes)} 3.x releases here")
    return (f"Apart from the release steps, glibc's allocator untouched, as an ordinary "
            f"program runs, makes {op} {span} times as slow as with the heap pinned {where}"
            + (f" ({'; '.join(twos)})" if twos else "")
            + ": a property of that condition across versions, not of one release; "
            + crosscheck_section.summary_words(data))
