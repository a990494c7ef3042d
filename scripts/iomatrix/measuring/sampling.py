"""Sample where the noise is: more rounds for the ops whose ratios are still loose.

After a run's planned rounds, each (series, op) has one mean per round (one
worker process per round). In a lockstep run the series of one round are
measured side by side, so what decides how sure a ratio is, is the spread of
the per-round ratios, not of either side alone (that also holds the machine's
drift, which the pairing cancels). So an op is loose while any series' ratio
to the reference series (the oldest plain CPython, as the report's default
base) has a 95% interval (stats.compare, paired) wider than ``target`` on
either side of its estimate (an op that only one series has: its median's
distribution-free interval, ``median_interval``). An extra lockstep round goes
first to the borderline steps (``borderline_steps``: a release step or the A/A
twin's, the estimate beyond the finding threshold, its interval reaching back
across it), one more worker for each of the step's two series, running only those
ops; when there are none, to the looser half of the loose ops (``loosest``), one
more worker per series. Sampling stops when every op is within the target, when
the profile's ``max_rounds`` are reached, or when the run's time budget would
be overrun (but never before the profile's ``extra_seconds`` after the planned
rounds: ``extra_rounds_deadline``); the manifest names the ops that did not reach
the target, and the report shows them.
"""
from __future__ import annotations

import math
import random
import time

from iomatrix import stats
from iomatrix.measuring import planning
from iomatrix.storing import store
from iomatrix.measuring.planning import Task

CONFIDENCE = stats.CONFIDENCE
# A ratio's 95% interval within +-1.5% of its estimate. Why not 3%: a regression is a
# significant change whose estimate exceeds 5%, and an interval of +-3% leaves the estimate
# a standard error of about 1.5%, so a real 6% slowdown lands at or below 5% in one run of
# five or so (measured: 1.05 [1.02, 1.07] in one of two runs of a +6.4% copy, 13-14 rounds
# of that op). +-1.5% halves that error. It costs the main command nothing (its budget ends
# sampling long before any op reaches +-3%) and a run of two interpreters little (both stop
# at the quick profile's 60 rounds: 111-121 s with 3%, 97-117 s with 1.5%). Measured with
# 1.5%: 1.08 [1.05, 1.11] or so, a regression, in three runs of three (docs/methodology.md, "Sampling target and budget").
DEFAULT_TARGET = 0.015
CRITERION = ("the 95% interval of every series' ratio to the op's reference series, paired "
             "by round, within the target on either side")


def median_interval(values: list[float], confidence: float = CONFIDENCE):
    """(low, high) bounds of the median's distribution-free interval, or None when there are
    too few values for any interval at this confidence (fewer than 6 at 95%)."""
    xs = sorted(values)
    n = len(xs)
    alpha = 1 - confidence
    k, cumulative = 0, 0.0
    for j in range(n):  # the largest k with P(Binomial(n, 1/2) < k) <= alpha / 2
        cumulative += math.comb(n, j) / 2 ** n
        if cumulative > alpha / 2:
            break
        k = j + 1
    if k == 0:
        return None
    return xs[k - 1], xs[n - k]


def own_half_width(values: list[float]) -> float:
    """Half the median interval's width over the median; inf when there is no interval.
    The criterion of an op that only one series has: no ratio to pair it with."""
    bounds = median_interval(values)
    positive = [v for v in values if v > 0]
    if bounds is None or not positive:
        return math.inf
    median = sorted(positive)[len(positive) // 2]
    return (bounds[1] - bounds[0]) / 2 / median


# The means of each part file read so far: {path: ((run id, series, size, mtime), means)}.
# Why: every extra round decides what it runs from every part of the sampled series, and
# reading and checking all of them again took 1.3 to 1.9 s between two rounds of the main
# command (25 rounds: about 40 s of its 150). A part is written once (sealed, then renamed
# into place, never rewritten); one that changed on disk is read again.
_PART_MEANS: dict = {}


def _part_means(run: store.Run, series: str, part) -> list:
    """[(op, mean of the worker's values)] of one part file; [] when it cannot be read."""
    try:
        stat = part.stat()
    except OSError:
        return []
    stamp = (run.run_id, series, stat.st_size, stat.st_mtime_ns)
    cached = _PART_MEANS.get(part)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    found = []
    try:
        document = store.read_part(run, series, part)   # this run's, this series'
        for bench in document["benchmarks"]:
            for process in bench["runs"]:
                values = [float(v) for v in process.get("values") or []]
                if values:
                    found.append((planning.op_name(document, bench), sum(values) / len(values)))
    except (store.ResultFileError, KeyError, TypeError, ValueError):
        found = []  # an unreadable part adds no evidence; the merge will report it
    _PART_MEANS[part] = (stamp, found)
    return found


def process_means(run: store.Run, series: str) -> dict:
    """{op: {round: mean of that round's worker's values}} from the series' parts on disk."""
    means: dict = {}
    directory = run.parts_dir(series)
    if not directory.is_dir() or directory.is_symlink():
        return means
    for part in sorted(directory.glob("r*--*.json")):
        key = planning.part_key(part.name)
        if key is None:
            continue
        for op, mean in _part_means(run, series, part):
            means.setdefault(op, {})[key[1]] = mean
    return means


def ratio_half_width(comparison: stats.Comparison) -> float:
    """How far the wider side of a ratio's interval lies from its estimate (0.015: 1.5%);
    inf when there is no interval yet."""
    if comparison.low is None or comparison.high is None:
        return math.inf
    return max(comparison.high / comparison.ratio, comparison.ratio / comparison.low) - 1


def sampled_series(plans: dict) -> list:
    """The series that take extra rounds: interpreters that ran this session, not the C
    reference (it enters no ratio's significance), nor the series of a further allocator
    condition (their planned twin rounds only: a round of them costs a process per op), nor
    an ablation's (its planned rounds only: it tests a finding's cause, not a step)."""
    return [p for p in plans.values() if p.interp is not None and p.error is None and p.ops
            and not p.kept and p.allocator is None and p.ablation_of is None]


def reference_order(plan: planning.SeriesPlan):
    """The report's order of series (store.series_order_key): the first series that has an
    op is the reference of that op's ratios."""
    interp = plan.interp
    return store.series_order_key(plan.series, interp.implementation, interp.version_info,
                                  interp.free_threaded)


def loose_ops(run: store.Run, plans: dict, target: float) -> dict:
    """{op: relative half-width of its loosest ratio} of the ops wider than ``target``."""
    series = sorted(sampled_series(plans), key=reference_order)
    means = {plan.series: process_means(run, plan.series) for plan in series}
    ops = {op for plan in series for _, op in plan.ops if op not in plan.failed_ops}
    loose = {}
    for op in sorted(ops):
        having = [p.series for p in series if op in means[p.series] and
                  op not in p.failed_ops]
        if not having:
            loose[op] = math.inf
            continue
        if len(having) == 1:
            width = own_half_width(list(means[having[0]][op].values()))
        else:
            # exact=False: nox's own interpreter runs this without scipy (normal critical values,
            # within one of the exact ones from 6 pairs on; a stopping rule, not a figure).
            width = max(ratio_half_width(stats.compare(means[having[0]][op], means[s][op],
                                                       paired=True, exact=False))
                        for s in having[1:])
        if width > target:
            loose[op] = width
    return loose


def next_round(run: store.Run, plans: dict, planned_rounds: int) -> int:
    """The first round index that no part on disk uses (a resumed run continues after it)."""
    used = [key[1] for plan in plans.values()
            for key in planning.parts_on_disk(run, plan.series)]
    return max([planned_rounds - 1, *used]) + 1


def loosest(loose: dict) -> set:
    """The looser half of the loose ops (rounded up, so at least one): those whose
    half-width is at least the upper median of the loose ops' half-widths.

    Why not all of them: an extra round costs what its ops cost, and the loosest ops are
    the short, noisy ones (whole-file reads of 0.2-2 ms a call), while a round of every
    op is dominated by the 25 MiB writes, which are already the tightest. A round of the
    looser half is several times cheaper, so the budget buys those ops several times more
    rounds; an op that stays loose rejoins the looser half as the others narrow."""
    if not loose:
        return set()
    widths = sorted(loose.values())
    middle = widths[len(widths) // 2]  # the upper median: half the ops, rounded up
    return {op for op, width in loose.items() if width >= middle}


def lineage_steps(plans: dict) -> list[tuple[str, str]]:
    """(older, newer) series of each release step of the lineage, as the report takes it
    (planning.lineage_labels), among the sampled series."""
    sampled = {p.series: p for p in sampled_series(plans)}
    labels = planning.lineage_labels([p.interp for p in sampled.values()])
    lineage = sorted((sampled[label] for label in labels if label in sampled),
                     key=lambda p: p.interp.version_info)
    return [(a.series, b.series) for a, b in zip(lineage, lineage[1:])]


def aa_steps(plans: dict) -> list[tuple[str, str]]:
    """(original, twin) series of each A/A twin among the sampled series: the twin is the
    same executable under a second label (discovery source "aa")."""
    sampled = sampled_series(plans)
    return [(original.series, twin.series) for twin in sampled if twin.interp.source == "aa"
            for original in sampled if original.interp.source != "aa"
            and original.interp.executable == twin.interp.executable
            and original.io_stack == twin.io_stack]


def is_borderline(comparison: stats.Comparison, threshold: float) -> bool:
    """The estimate is beyond the threshold either way but its interval reaches back across
    it (or there is no interval yet): the step's verdict is not settled."""
    slower = comparison.ratio > 1 + threshold
    faster = comparison.ratio < 1 / (1 + threshold)
    if not (slower or faster):
        return False
    if comparison.low is None or comparison.high is None:
        return True
    return comparison.low <= 1 + threshold if slower else comparison.high >= 1 / (1 + threshold)


def borderline_steps(run: store.Run, plans: dict,
                     threshold: float = stats.FINDING_THRESHOLD) -> list[tuple[str, str, str]]:
    """(op, older, newer) of the lineage steps, and of each A/A twin against its original,
    that are borderline (``is_borderline``) by the paired comparison of their rounds so far.

    Why the A/A twin too: extra rounds go where a step is unsure, and a step sampled until it
    settles can settle on the wrong side more often than one sampled a fixed number of
    rounds. The twin takes the same rule, so the A/A flags of the report count that too."""
    steps = lineage_steps(plans) + aa_steps(plans)
    means = {series: process_means(run, series) for step in steps for series in step}
    found = []
    for older, newer in steps:
        for op in sorted(set(means[older]) & set(means[newer])):
            try:
                comparison = stats.compare(means[older][op], means[newer][op], paired=True,
                                           exact=False)
            except ValueError:
                continue   # no round with both sides: nothing to sample towards
            if is_borderline(comparison, threshold):
                found.append((op, older, newer))
    return found


def extra_round(run: store.Run, plans: dict, round_index: int, target: float,
                rng: random.Random, allocator: str = "steady") -> list[Task]:
    """One more lockstep round: of the borderline steps (``borderline_steps``) while there
    are any, each op by the two series of its unsure steps only; else of the looser half of
    the loose ops (``loosest``) by every series that has them, so each ratio gets another
    pair. Suites and series are shuffled like the planned rounds.

    Why borderline steps first: a finding is what a reader quotes, and a borderline one is
    where another round most often changes what the report says (a step of 1.06 whose
    interval reaches 1.03 becomes firm or falls within the threshold), while a loose op
    whose steps are all far beyond or well within the threshold would say the same.
    Why only the step's two series: an extra round is then a few processes, not one per
    series, so the budget buys the unsure steps several rounds where it bought two. With
    10 rounds one wild round of 1.5x (a process whose op ran slow throughout, with no
    context switch) takes the significance of an 18% step (its signed-rank interval
    reaches 1.10); with 12 rounds it takes two such rounds, with 18 three."""
    wanted: dict[str, set | None] = {}
    for op, older, newer in borderline_steps(run, plans):
        wanted.setdefault(op, set()).update((older, newer))
    if not wanted:
        wanted = dict.fromkeys(loosest(loose_ops(run, plans, target)))
    suites = sorted({suite for plan in plans.values() for suite, _ in plan.ops})
    rng.shuffle(suites)
    tasks = []
    for suite in suites:
        order = sampled_series(plans)
        rng.shuffle(order)
        for plan in order:
            ops = sorted(op for s, op in plan.ops if s == suite and op in wanted
                         and (wanted[op] is None or plan.series in wanted[op])
                         and op not in plan.failed_ops)
            if ops and allocator in planning.ONE_OP_ALLOCATORS:  # one op per worker
                tasks += [Task(plan.series, plan.io_stack, suite, round_index, [op], True)
                          for op in ops]
            elif ops:
                tasks.append(Task(plan.series, plan.io_stack, suite, round_index, ops))
    return tasks


def extra_rounds_deadline(budget_deadline: float, planned_end: float,
                          extra_seconds: float) -> float:
    """When the last extra round may start (time.monotonic()): the run's budget, or
    ``extra_seconds`` after the planned rounds ended, whichever is later. The planned rounds
    of many interpreters on a slow host can use up the whole budget; the steps they leave
    borderline still get extra rounds (profiles.Profile.extra_seconds)."""
    return max(budget_deadline, planned_end + extra_seconds)


def sample_until_tight(run: store.Run, plans: dict, profile, *, target: float, deadline: float,
                       seed: int, execute, log, planned_round_seconds: float = 0.0,
                       allocator: str = "steady") -> dict:
    """Run extra rounds (``execute(tasks)``) until every op is within ``target``, the profile's
    max_rounds are reached or the next round would pass ``deadline`` (time.monotonic()).
    The first extra round's length is guessed from a planned round's
    (``planned_round_seconds``) and its share of the (series, op) pairs, each later one's
    from the one before. Returns what the manifest records."""
    rng = random.Random(f"{seed}-sampling")
    round_index = next_round(run, plans, profile.rounds)
    planned_pairs = sum(len(plan.ops) for plan in sampled_series(plans))
    extra_rounds, last_round_seconds, stopped = 0, None, "every op within the target"
    while True:
        if round_index >= profile.max_rounds:
            stopped = f"the profile's {profile.max_rounds} rounds"
            break
        tasks = extra_round(run, plans, round_index, target, rng, allocator)
        if not tasks:
            break
        if last_round_seconds is None:
            share = sum(len(task.ops) for task in tasks) / max(1, planned_pairs)
            last_round_seconds = planned_round_seconds * share
        if time.monotonic() + last_round_seconds > deadline:
            stopped = "the time budget"
            break
        log(f"iomatrix: sampling round {round_index + 1}: {len(tasks)} worker processes for "
            f"{sum(len(t.ops) for t in tasks)} loose (series, op) pairs")
        started = time.monotonic()
        execute(tasks)
        last_round_seconds = time.monotonic() - started
        round_index += 1
        extra_rounds += 1
    loose = {op: (round(w, 4) if math.isfinite(w) else None)
             for op, w in sorted(loose_ops(run, plans, target).items())}
    borderline = [f"{op}: {older} → {newer}" for op, older, newer in borderline_steps(run, plans)]
    return {"target": target, "confidence": CONFIDENCE, "criterion": CRITERION,
            "extra_rounds": extra_rounds, "stopped_by": stopped, "loose_ops": loose,
            "borderline_steps": borderline}
