"""Sample where the noise is: more rounds for the ops whose ratios are still loose.

After a run's planned rounds, each (series, op) has one mean per round (one
worker process per round). In a lockstep run the series of one round are
measured side by side, so what decides how sure a ratio is, is the spread of
the per-round ratios, not of either side alone (that also holds the machine's
drift, which the pairing cancels). So an op is loose while any series' ratio
to the reference series (the oldest plain CPython, as the report's default
base) has a 95% interval (stats.compare, paired) wider than ``target`` on
either side of its estimate (an op that only one series has: its median's
distribution-free interval, ``median_interval``).

Which loose ratios get the next round: first the *undecided* ones, whose
interval still overlaps the band of +-target around 1, so whether the two
interpreters differ by more than the target is not yet known (an interval of
[0.99, 1.07] could still come out "no difference" or "7% slower" in the next
run). A ratio whose interval lies wholly beyond the band (3x [2.6, 3.5]) is
loose too, but its verdict is already the same in any run; it gets rounds once
no ratio is undecided. Measured over three runs (docs/methodology.md,
"Sampling the undecided ratios first"): the verdicts that flipped between runs
were ratios of 4-15% with p near the edge, while most extra rounds had gone to
whole-file reads several times slower or faster than 2.7's.

An extra round runs the looser half of the chosen ops (``loosest``), and of
each op only the series whose ratio was chosen plus the op's reference series
(the other half of each pair), so an undecided ratio is not paying for the
settled ones beside it. Sampling stops when every op is within the target,
when the profile's ``max_rounds`` are reached, or when the run's time budget
would be overrun; the manifest names the ops that did not reach the target and
the ratios still undecided, and the report shows them.
"""
from __future__ import annotations

import dataclasses
import math
import random
import time

from iomatrix import planning, stats, store
from iomatrix.planning import Task

CONFIDENCE = stats.CONFIDENCE
DEFAULT_TARGET = 0.03   # a ratio's 95% interval within +-3% of its estimate
CRITERION = ("the 95% interval of every series' ratio to the op's reference series, paired "
             "by round, within the target on either side; extra rounds go first to the ratios "
             "whose interval still overlaps the band of the target around 1 (undecided), "
             "each with its op's reference series")


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
        try:
            document = store.read_json(part)
            for bench in document["benchmarks"]:
                for process in bench["runs"]:
                    values = [float(v) for v in process.get("values") or []]
                    if values:
                        means.setdefault(bench["metadata"]["name"], {})[key[1]] = \
                            sum(values) / len(values)
        except (store.ResultFileError, KeyError, TypeError, ValueError):
            continue  # an unreadable part adds no evidence; the merge will report it
    return means


def ratio_half_width(comparison: stats.Comparison) -> float:
    """How far the wider side of a ratio's interval lies from its estimate (0.03: 3%);
    inf when there is no interval yet."""
    if comparison.low is None or comparison.high is None:
        return math.inf
    return max(comparison.high / comparison.ratio, comparison.ratio / comparison.low) - 1


def sampled_series(plans: dict) -> list:
    """The series that take extra rounds: interpreters that ran this session, not the C
    reference (it enters no ratio's significance)."""
    return [p for p in plans.values() if p.interp is not None and p.error is None and p.ops
            and not p.kept]


def reference_order(plan: planning.SeriesPlan):
    """The report's order of series (store.series_order_key): the first series that has an
    op is the reference of that op's ratios."""
    interp = plan.interp
    return store.series_order_key(plan.series, interp.implementation, interp.version_info,
                                  interp.free_threaded)


@dataclasses.dataclass
class OpState:
    """How sure the ratios of one op are: per series, the half-width of its ratio to the
    op's reference series and whether that ratio is still undecided."""
    reference: str
    widths: dict = dataclasses.field(default_factory=dict)     # series -> half-width
    undecided: set = dataclasses.field(default_factory=set)    # series


def undecided(comparison: stats.Comparison, target: float) -> bool:
    """The ratio's interval overlaps the band of +-target around 1 (or there is no interval
    yet): whether the two sides differ by more than the target is not known."""
    if comparison.low is None or comparison.high is None:
        return True
    return comparison.low <= 1 + target and comparison.high >= 1 / (1 + target)


def op_states(run: store.Run, plans: dict, target: float) -> dict:
    """{op: OpState} over the sampled series that have the op. An op that only one series
    has is judged by its median's own interval and counts as undecided while loose (it
    has no verdict to settle, only a width)."""
    series = sorted(sampled_series(plans), key=reference_order)
    means = {plan.series: process_means(run, plan.series) for plan in series}
    ops = {op for plan in series for _, op in plan.ops if op not in plan.failed_ops}
    states = {}
    for op in sorted(ops):
        having = [p.series for p in series if op not in p.failed_ops
                  and any(o == op for _, o in p.ops)]
        measured = [s for s in having if op in means[s]]
        if not measured:
            state = OpState(having[0])
            state.widths = {s: math.inf for s in having}
            state.undecided = set(having)
        elif len(having) == 1:
            state = OpState(having[0])
            width = own_half_width(list(means[having[0]][op].values()))
            state.widths[having[0]] = width
            if width > target:
                state.undecided.add(having[0])
        else:
            reference = measured[0]
            state = OpState(reference)
            for s in having:
                if s == reference:
                    continue
                if s not in measured:
                    state.widths[s] = math.inf
                    state.undecided.add(s)
                    continue
                comparison = stats.compare(means[reference][op], means[s][op], paired=True)
                state.widths[s] = ratio_half_width(comparison)
                if undecided(comparison, target):
                    state.undecided.add(s)
        states[op] = state
    return states


def loose_ops(run: store.Run, plans: dict, target: float) -> dict:
    """{op: relative half-width of its loosest ratio} of the ops wider than ``target``."""
    loose = {}
    for op, state in op_states(run, plans, target).items():
        width = max(state.widths.values(), default=math.inf)
        if width > target:
            loose[op] = width
    return loose


def undecided_ratios(run: store.Run, plans: dict, target: float) -> dict:
    """{op: [series]} of the ratios that are loose and still undecided."""
    return {op: sorted(s for s in state.undecided if state.widths[s] > target)
            for op, state in op_states(run, plans, target).items()
            if any(state.widths[s] > target for s in state.undecided)}


def round_choice(states: dict, target: float) -> dict:
    """{op: {series}} that the next extra round runs: the looser half (``loosest``) of the
    ops with an undecided loose ratio, each with those series and its reference series;
    when no ratio is undecided, the same over the loose ratios whatever their verdict."""
    def loose_pairs(only_undecided: bool) -> dict:
        pairs = {}
        for op, state in states.items():
            chosen = {s: w for s, w in state.widths.items() if w > target
                      and (s in state.undecided or not only_undecided)}
            if chosen:
                pairs[op] = chosen
        return pairs

    pairs = loose_pairs(only_undecided=True) or loose_pairs(only_undecided=False)
    ops = loosest({op: max(widths.values()) for op, widths in pairs.items()})
    return {op: set(pairs[op]) | {states[op].reference} for op in ops}


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


def extra_round(run: store.Run, plans: dict, round_index: int, target: float,
                rng: random.Random) -> list[Task]:
    """One more lockstep round of the ops and series ``round_choice`` picks; suites and
    series shuffled like the planned rounds."""
    choice = round_choice(op_states(run, plans, target), target)
    suites = sorted({suite for plan in plans.values() for suite, _ in plan.ops})
    rng.shuffle(suites)
    tasks = []
    for suite in suites:
        order = sampled_series(plans)
        rng.shuffle(order)
        for plan in order:
            ops = sorted(op for s, op in plan.ops if s == suite and plan.series in
                         choice.get(op, ()) and op not in plan.failed_ops)
            if ops:
                tasks.append(Task(plan.series, plan.io_stack, suite, round_index, ops))
    return tasks


def sample_until_tight(run: store.Run, plans: dict, profile, *, target: float, deadline: float,
                       seed: int, execute, log) -> dict:
    """Run extra rounds (``execute(tasks)``) until every op is within ``target``, the profile's
    max_rounds are reached or the next round would pass ``deadline`` (time.monotonic()).
    Returns what the manifest records."""
    rng = random.Random(f"{seed}-sampling")
    round_index = next_round(run, plans, profile.rounds)
    extra_rounds, last_round_seconds, stopped = 0, 0.0, "every op within the target"
    while True:
        if round_index >= profile.max_rounds:
            stopped = f"the profile's {profile.max_rounds} rounds"
            break
        tasks = extra_round(run, plans, round_index, target, rng)
        if not tasks:
            break
        if time.monotonic() + last_round_seconds > deadline:
            stopped = "the time budget"
            break
        log(f"iomatrix: sampling round {round_index + 1}: {len(tasks)} worker processes for "
            f"{sum(len(t.ops) for t in tasks)} (series, op) pairs")
        started = time.monotonic()
        execute(tasks)
        last_round_seconds = time.monotonic() - started
        round_index += 1
        extra_rounds += 1
    loose = {op: (round(w, 4) if math.isfinite(w) else None)
             for op, w in sorted(loose_ops(run, plans, target).items())}
    return {"target": target, "confidence": CONFIDENCE, "criterion": CRITERION,
            "extra_rounds": extra_rounds, "stopped_by": stopped, "loose_ops": loose,
            "undecided": undecided_ratios(run, plans, target)}
