"""The comparisons a report is built from, made once: along the lineage, against the oldest
release, of each variant against its twin and against a chosen baseline; and the findings.

A finding (a release step significant and beyond the threshold either way) carries three
classes that say how far to trust it (issue 26):

- ``evidence``: do the counts of the same run move with it? "confirmed" (instructions beyond
  ``counts.INSTRUCTIONS_MOVE``, the system calls per call, or the bytes they moved beyond
  ``counts.BYTES_MOVE``, the step's way; or a mix of system calls or bytes that changed at the
  same total: ``counts.count_move``), "memory" (instructions and system calls flat, the
  estimated cycles moving the step's way), "repeats" (counts flat or the other way, and the
  step held in every run of a pool: ``REPEATS``), "time only" (counts flat or the other way),
  None when a side has no counts. Steps whose counts moved
  while the timing did not decide are "counts only" (``Analysis.counts_only``).
- ``firmness``: "firm" when the interval for the next run (``stats.next_run_interval``, a
  block bootstrap of the per-round log ratios) lies wholly beyond the threshold by at least
  the op's floor (``Analysis.firm_floor``: how far the A/A twin's 95% interval on the same op
  reaches from 1 in the same run) and, in a run that counted, its counts back it
  (``FIRM_EVIDENCE``: a time-only or uncounted step is never firm), "borderline" otherwise;
  None in a run without lockstep rounds (nothing to pair).
- ``modes``: the series that split into two modes (``stats.split_modes``), in words; such
  a finding is never firm.
"""
from __future__ import annotations

import dataclasses
import functools
import math

from iomatrix import cli, stats
from iomatrix.analysing import callpaths, changelog, conditions, counts
from iomatrix.measuring import native
from iomatrix.analysing.analysis import (Lineage, RunData, compare_all, default_baseline, lineage,
                                         ordered_ops, ordered_series, process_means, python_ops,
                                         series_info)

MAX_FINDINGS = 10         # per direction on the main page; every finding is on its suite's page


EVIDENCE = ("confirmed", "memory", "repeats", "time only", "counts only")
# A step whose counts do not move its way (instructions may even fall while the time rises: a
# second pass over the data, cache and memory behaviour) but that held in every run of a pool
# of at least REPEAT_RUNS runs on REPEAT_BOOTS boots or more, the same way: repetition is its
# evidence, not "time only". read_allAtOnce_textMode 3.13.15 -> 3.14 (held 12 of 12 on 3
# boots, instructions -23%: 3.14's UTF-8 decoder scans ASCII, then copies it) is one.
REPEATS = "repeats"
REPEAT_RUNS = 3
REPEAT_BOOTS = 2


@dataclasses.dataclass(frozen=True)
class Repeated:
    """A pooled cell that held in every run (pooling.PooledCell's figures)."""
    held: int
    runs: int
    boots: int
    cpu_kinds: int | None = None    # the CPU kinds it was seen on, where the pool knows them
    cpus: tuple = ()                # their names ("AMD EPYC"), where the pool knows them

    @property
    def may_be_firm(self) -> bool:
        """Seen on one CPU kind only, a step the counts do not back is never firm (the
        pool's rule, pooling.Pool.one_cpu_time_only): repetition on one kind is still one
        kind's code layout and caches."""
        return self.cpu_kinds is not None and self.cpu_kinds >= 2

    def words(self) -> str:
        """"the same way in every run (12 of 12, 3 boots, 1 CPU kind: AMD EPYC only)": the
        pool's "time only, seen on" in the same words wherever the row is shown."""
        kinds = ""
        if self.cpu_kinds:
            kinds = f", {self.cpu_kinds} CPU kind{'s' * (self.cpu_kinds > 1)}"
            if self.cpus and not self.may_be_firm:
                kinds += f": {', '.join(self.cpus)} only"
        return (f"the same way in every run ({self.held} of {self.runs}, {self.boots} boots"
                f"{kinds})")


def repeated_cells(pool) -> dict:
    """{(op, a, b): Repeated} of a pool's cells (pooling.Pool) that held in every run, at
    least REPEAT_RUNS runs on REPEAT_BOOTS boots, with a verdict (slower or faster)."""
    found = {}
    for key, cell in pool.cells.items():
        if cell.verdict in ("slower", "faster") and cell.held == cell.n >= REPEAT_RUNS \
                and cell.boots >= REPEAT_BOOTS:
            kinds = getattr(cell, "known_cpus", None)
            found[key] = Repeated(cell.held, cell.n, cell.boots,
                                  len(kinds) if kinds is not None else None,
                                  tuple(kinds or ()))
    return found
FIRMNESS = ("firm", "borderline")


@dataclasses.dataclass
class Finding:
    op: str
    a: str
    b: str
    comparison: stats.Comparison
    evidence: str | None = None     # EVIDENCE, or None when a side has no counts
    firmness: str | None = None     # FIRMNESS, or None without lockstep rounds
    modes: str | None = None        # "3.13: 6 of 10 processes 7.0x slower", or None
    note: str | None = None         # what the evidence rests on when not every count
    next_run: tuple | None = None   # (low, high): its rounds resampled (stats.next_run_interval);
                                    # firmness is judged on it. Not a prediction of another
                                    # run's estimate (`nox -s agree` measures how often it is)
    floor: float | None = None      # log margin beyond the threshold a firm step must clear


def is_finding(comparison: stats.Comparison, threshold: float) -> bool:
    """Significant, and the estimate beyond the threshold either way."""
    return bool(comparison.significant) and (comparison.beyond(threshold)
                                             or comparison.ratio < 1 / (1 + threshold))


def evidence_of(comparison: stats.Comparison, threshold: float, move: dict | None,
                repeated: bool = False) -> str | None:
    """The class of one step from its timing and its counts' move (``counts.count_move``):
    "confirmed", "memory" (estimated cycles, not instructions or system calls, move with
    it), "repeats" (neither, and ``repeated``: it held in every pooled run, REPEATS), "time
    only", "counts only", or None (no counts on a side, or nothing moved). A step's counts
    moving the other way (instructions fell, the time rose) never demote a repeated one."""
    if move is None:
        return None
    if is_finding(comparison, threshold):
        side = "up" if comparison.ratio > 1 else "down"
        if move[side]:
            return "confirmed"
        # Instructions and system calls flat, but the simulated cache misses move the estimated
        # cycles the same way: explained by memory behaviour, not by the code run.
        if move.get(f"cycles_{side}"):
            return "memory"
        return REPEATS if repeated else "time only"
    return "counts only" if move["up"] or move["down"] else None


# The evidence a firm finding needs when the run counted: the counts moved with the time.
# A step the counts do not back ("time only", or an op the counting pass did not count)
# repeated within one boot 97-100% of the time and across boots 86-96% (2026-11-24/25):
# code layout, page placement and the host move such a step, and nothing in the run can
# tell them from the interpreter's code. So it is never firm, whatever its interval.
FIRM_EVIDENCE = ("confirmed", "memory")


def firmness_of(comparison: stats.Comparison, threshold: float, next_run: tuple | None,
                split: bool, floor: float = 0.0, evidence: str | None = None,
                counted: bool = False) -> str | None:
    """A finding is "firm" when its resampled interval (``stats.next_run_interval``; the
    argument keeps its historical name) lies wholly beyond the threshold on
    its side by at least ``floor`` (on the log scale: ``Analysis.firm_floor``), neither
    series splits into modes and, in a run that counted (``counted``), its counts back it
    (``FIRM_EVIDENCE``); "borderline" otherwise; None when it is no finding or there is no
    interval for the next run."""
    if not is_finding(comparison, threshold) or next_run is None:
        return None
    low, high = next_run
    margin = math.log1p(threshold) + max(floor, 0.0)
    beyond = math.log(low) > margin if comparison.ratio > 1 else math.log(high) < -margin
    backed = not counted or evidence in FIRM_EVIDENCE
    return "firm" if beyond and not split and backed else "borderline"


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
    counted: list = dataclasses.field(default_factory=list)   # counts.load_counts rows
    repeated: dict = dataclasses.field(default_factory=dict)  # (op, a, b) -> Repeated

    def note_repetition(self, pool) -> None:
        """Take the pool's repeated cells (repeated_cells) into the findings' classes: the
        findings and verdicts computed before are dropped and made again (once: the same
        pool again changes nothing)."""
        cells = repeated_cells(pool)
        if cells == self.repeated:
            return
        self.repeated = cells
        for name in ("_classified", "_verdicts"):
            self.__dict__.pop(name, None)

    def repeated_of(self, f) -> Repeated | None:
        """The finding's repetition where its class is REPEATS, else None."""
        return self.repeated.get((f.op, f.a, f.b)) if f.evidence == REPEATS else None

    @property
    def suites(self) -> list:
        return list(dict.fromkeys(self.suite_of[op] for op in self.ops))

    def findings(self) -> list[Finding]:
        """Steps that are significant and beyond the threshold either way, largest first;
        a step between two build recipes is not one (Lineage.recipe_differs)."""
        return list(self._classified[0])

    def counts_only(self) -> list[Finding]:
        """Steps whose counts moved beyond their threshold while the timing found nothing
        (within the threshold or undecided), largest count change first."""
        return list(self._classified[1])

    def modes_of(self, series: str, op: str) -> stats.Modes | None:
        return stats.split_modes((self.means.get((series, op)) or {}).values())

    def round_log_ratios(self, op: str, a: str, b: str) -> list[float]:
        """The per-round log ratios of a lockstep step, in round order (stats.compare's)."""
        pa, pb = self.means[(a, op)], self.means[(b, op)]
        return [math.log(pb[r]) - math.log(pa[r])
                for r in sorted(pa) if r in pb and pa[r] > 0 and pb[r] > 0]

    def firm_floor(self, op: str, a: str, b: str) -> float:
        """How far beyond the threshold (log scale) a step's resampled interval must lie to be
        firm: how far the A/A twin's 95% interval on the same op reaches from 1 in this run
        (the largest, with several twins); in a run without an A/A interval on the op, half
        the width of the step's own 95% interval.

        Why: a firm finding should be a finding again in the next run, and that asks for the
        next run's own interval to clear 1, not only for its estimate to land beyond the
        threshold, which is all the resampled interval was meant to predict (and it does
        not quite: stats.next_run_interval). With 8 rounds (a main command
        of every interpreter here) one round of the next run that goes the other way takes
        the significance of a 10-20% step (its signed-rank interval then crosses 1), and the
        step's own 8 rounds need not show such a round. The A/A twin times the same op in the
        same rounds between two identical interpreters: how far its interval reaches from 1
        is how large a ratio the run's noise on that op, wild rounds included, can make out
        of no difference at all. Three back-to-back main commands (2026-11-24): firm cells a finding in every
        other run 58/77 by the next-run interval alone, 50/51 with this floor; the published
        trio (2026-11-23): 37/42, 27/27; none contradicted (docs/experiments/firm_findings.py).
        """
        reach = [max(abs(math.log(c.low)), abs(math.log(c.high)))
                 for v in self.lin.variants if v.kind == "aa"
                 for c in [self.twin_cmp.get((op, v.series))]
                 if c is not None and c.low and c.high]
        if reach:
            return max(reach)
        c = self.step_cmp[(op, a, b)]
        return (math.log(c.high) - math.log(c.low)) / 2 if c.low and c.high else 0.0

    def classify(self, op: str, a: str, b: str) -> Finding:
        """One step with its classes (the module docstring)."""
        c = self.step_cmp[(op, a, b)]
        move = counts.count_move(self.counted, op, a, b) if self.counted else None
        split = [f"{s}: {m.describe()}" for s in (a, b) if (m := self.modes_of(s, op))]
        next_run = floor = None
        if self.data.paired and is_finding(c, self.threshold):
            next_run = stats.next_run_interval(self.round_log_ratios(op, a, b))
            floor = self.firm_floor(op, a, b)
        repeated = self.repeated.get((op, a, b))
        evidence = evidence_of(c, self.threshold, move, repeated is not None)
        # repetition backs firmness as the counts do, where it was seen on two CPU kinds
        backing = "confirmed" if evidence == REPEATS and repeated.may_be_firm else evidence
        return Finding(op, a, b, c, evidence,
                       firmness_of(c, self.threshold, next_run, bool(split), floor or 0.0,
                                   backing, counted=bool(self.counted)),
                       "; ".join(split) or None, move["note"] if move else None, next_run,
                       floor)

    @functools.cached_property
    def functions(self) -> dict:
        """The functions the counting pass kept per (series, op) (counts.load_functions),
        read once for every page of the report."""
        return counts.load_functions(self.data.run.path) if self.data.run else {}

    @functools.cached_property
    def call_graphs(self) -> dict:
        """The functions and call edges the counting pass kept per (series, op)
        (callpaths.load_call_graphs), read once for every page of the report."""
        return callpaths.load_call_graphs(self.data.run.path) if self.data.run else {}

    @functools.cached_property
    def why(self) -> changelog.Why:
        """The candidate upstream changes of release steps (analysing.changelog), from the
        changelogs in the cache only: a report never downloads."""
        return changelog.Why({s: series_info(self.data, s).get("version") for s in self.order})

    @functools.cached_property
    def untouched_steps(self) -> dict:
        """The lineage steps timed under glibc's untouched allocator too
        (conditions.untouched_steps), compared once for the findings' notes and data.csv."""
        return conditions.untouched_steps(self.data)

    def candidates_of(self, f: Finding) -> changelog.StepWhy:
        return self.why.of(f.op, self.suite_of.get(f.op, ""), f.a, f.b)

    @functools.cached_property
    def _classified(self) -> tuple[list[Finding], list[Finding]]:
        # The bootstrap costs some 50 ms a finding: classify once, for every page.
        found, counts_only = [], []
        for (op, a, b), c in self.step_cmp.items():
            if (a, b) in self.lin.recipe_differs:
                continue
            move = counts.count_move(self.counted, op, a, b) if self.counted else None
            if is_finding(c, self.threshold):
                found.append(self.classify(op, a, b))
            elif evidence_of(c, self.threshold, move) == "counts only":
                counts_only.append(Finding(op, a, b, c, "counts only", note=move["note"]))
        found.sort(key=lambda f: (-abs(math.log(f.comparison.ratio)), f.op))
        counts_only.sort(key=lambda f: (-abs(self._instructions(f) or 0), f.op, f.a))
        return found, counts_only

    def _instructions(self, f: Finding) -> float | None:
        move = counts.count_move(self.counted, f.op, f.a, f.b)
        return move["instructions"] if move else None

    def recipe_twins(self, series: str) -> list[str]:
        """The series of the same release built by another recipe (VARIANT_KINDS "recipe")."""
        return [v.series for v in self.lin.variants if v.kind == "recipe" and v.twin == series]

    def recipe_check(self, f: Finding) -> tuple[str, str, stats.Comparison, bool] | None:
        """Whether a lineage finding survives another recipe (PGO+LTO, static), where the run
        has one: the same step with each side that has a recipe twin replaced by it, as
        (older series, newer series, its comparison, still a finding the same way); None
        when neither side has a twin. The lineage's builds are shared -O3 without PGO/LTO;
        shipped builds are PGO+LTO, which moves some ops as much as a release step does."""
        older = (self.recipe_twins(f.a) or [f.a])[0]
        newer = (self.recipe_twins(f.b) or [f.b])[0]
        if (older, newer) == (f.a, f.b) or (older, f.op) not in self.means \
                or (newer, f.op) not in self.means:
            return None
        c = stats.compare(self.means[(older, f.op)], self.means[(newer, f.op)],
                          paired=self.data.paired)
        same_way = is_finding(c, self.threshold) and (c.ratio > 1) == (f.comparison.ratio > 1)
        return older, newer, c, same_way

    def listed(self) -> tuple[list[Finding], list[Finding]]:
        """The findings the main page lists: the largest slowdowns, then the largest speed-ups,
        of the I/O findings (analysing.controls: not a control's own step, nor one its
        control explains)."""
        from iomatrix.analysing import controls     # it imports this module
        return controls.listed(self, MAX_FINDINGS)


def analyse(data: RunData, baseline: str | None, threshold: float) -> Analysis:
    order = ordered_series(data)
    if baseline is not None and baseline not in order:
        raise cli.BadInput(f"unknown baseline {baseline!r}; valid: {', '.join(order)}")
    timed = python_ops(data.frame)
    ops = [op for op in ordered_ops(data) if op in timed]
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
                    compare_all(means, ops, chosen, order, data.paired) if chosen else {},
                    counts.load_counts(data.run.path) if data.run is not None else [])
