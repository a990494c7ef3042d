"""The comparisons a report is built from, made once: along the lineage, against the oldest
release, of each variant against its twin and against a chosen baseline; and the findings.
"""
from __future__ import annotations

import dataclasses
import math

from iomatrix import cli, native, stats
from iomatrix.analysis import (Lineage, RunData, compare_all, default_baseline, lineage,
                               ordered_ops, ordered_series, process_means)

MAX_FINDINGS = 10         # per direction on the main page; every finding is on its suite's page


@dataclasses.dataclass
class Finding:
    op: str
    a: str
    b: str
    comparison: stats.Comparison


@dataclasses.dataclass
class Analysis:
    """Everything the pages are built from, computed once."""
    data: RunData
    ops: list
    order: list
    means: dict
    lin: Lineage
    oldest: str
    baseline: str | None          # the user's --baseline when it is not the oldest
    threshold: float
    suite_of: dict
    category_of: dict
    steps: list                   # (a, b) along the lineage
    step_cmp: dict                # (op, a, b) -> Comparison
    oldest_cmp: dict              # (op, series) -> Comparison against the oldest
    twin_cmp: dict                # (op, series) -> Comparison of a variant against its twin
    baseline_cmp: dict            # (op, series) -> Comparison against --baseline

    @property
    def suites(self) -> list:
        return list(dict.fromkeys(self.suite_of[op] for op in self.ops))

    def findings(self) -> list[Finding]:
        """Steps that are significant and beyond the threshold either way, largest first;
        a step between two build recipes is not one (Lineage.recipe_differs)."""
        found = [Finding(op, a, b, c) for (op, a, b), c in self.step_cmp.items()
                 if (a, b) not in self.lin.recipe_differs
                 and c.significant and (c.beyond(self.threshold)
                                       or c.ratio < 1 / (1 + self.threshold))]
        return sorted(found, key=lambda f: (-abs(math.log(f.comparison.ratio)), f.op))

    def listed(self) -> tuple[list[Finding], list[Finding]]:
        """The findings the main page lists: the largest slowdowns, then the largest speed-ups."""
        found = self.findings()
        return ([f for f in found if f.comparison.ratio > 1][:MAX_FINDINGS],
                [f for f in found if f.comparison.ratio < 1][:MAX_FINDINGS])


def analyse(data: RunData, baseline: str | None, threshold: float) -> Analysis:
    order = ordered_series(data)
    if baseline is not None and baseline not in order:
        raise cli.BadInput(f"unknown baseline {baseline!r}; valid: {', '.join(order)}")
    ops = [op for op in ordered_ops(data)
           if (data.frame.loc[data.frame["op"] == op, "series"] != native.SERIES).any()]
    means = process_means(data.frame)
    lin = lineage(data, order)
    oldest = lin.releases[0] if lin.releases else default_baseline(data, order)
    steps = list(zip(lin.releases, lin.releases[1:]))
    step_cmp = {(op, a, b): c for a, b in steps
                for (op, _), c in compare_all(means, ops, a, [b], data.paired).items()}
    twin_cmp = {}
    for v in lin.variants:
        if v.twin:
            twin_cmp.update(compare_all(means, ops, v.twin, [v.series], data.paired))
    chosen = baseline if baseline not in (None, oldest) else None
    return Analysis(data, ops, order, means, lin, oldest, chosen, threshold,
                    dict(zip(data.frame["op"], data.frame["suite"])),
                    dict(zip(data.frame["op"], data.frame["category"])), steps, step_cmp,
                    compare_all(means, ops, oldest, order, data.paired), twin_cmp,
                    compare_all(means, ops, chosen, order, data.paired) if chosen else {})
