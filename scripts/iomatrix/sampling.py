"""Sample where the noise is: more worker processes for the ops whose estimate is still loose.

After a run's planned rounds, each (series, op) has one mean per worker process.
Its median (the estimate every ratio is built from) has a distribution-free 95%
interval between two order statistics of those means (the binomial sign-test
interval: no assumption about the shape of the distribution, which is often
bimodal here). While an op's interval is wider than ``target`` on either side of
its median, it gets another round: one more worker process per series that needs
it, interleaved and shuffled like the planned rounds, running only the ops that
need it. Sampling stops when every op is within the target, when the profile's
``max_rounds`` are reached, or when the run's time budget would be overrun; the
manifest names the ops that did not reach the target, and the report shows them.
"""
from __future__ import annotations

import math
import random
import time

from iomatrix import planning, store
from iomatrix.planning import Task

CONFIDENCE = 0.95
DEFAULT_TARGET = 0.02   # +-2% on each side's median: a ratio's interval then spans about +-3%


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


def relative_half_width(values: list[float]) -> float:
    """Half the median interval's width over the median; inf when there is no interval."""
    bounds = median_interval(values)
    positive = [v for v in values if v > 0]
    if bounds is None or not positive:
        return math.inf
    median = sorted(positive)[len(positive) // 2]
    return (bounds[1] - bounds[0]) / 2 / median


def process_means(run: store.Run, series: str) -> dict:
    """{op: [mean of each worker process's values]} from the series' parts on disk."""
    means: dict = {}
    directory = run.parts_dir(series)
    if not directory.is_dir() or directory.is_symlink():
        return means
    for part in sorted(directory.glob("r*--*.json")):
        try:
            document = store.read_json(part)
            for bench in document["benchmarks"]:
                for process in bench["runs"]:
                    values = [float(v) for v in process.get("values") or []]
                    if values:
                        means.setdefault(bench["metadata"]["name"], []).append(
                            sum(values) / len(values))
        except (store.ResultFileError, KeyError, TypeError, ValueError):
            continue  # an unreadable part adds no evidence; the merge will report it
    return means


def loose_ops(run: store.Run, plan: planning.SeriesPlan, target: float) -> dict:
    """{op: relative half-width} of the series' ops whose interval is wider than ``target``."""
    means = process_means(run, plan.series)
    wanted = {op for _, op in plan.ops if op not in plan.failed_ops}
    widths = {op: relative_half_width(means.get(op, [])) for op in wanted}
    return {op: width for op, width in widths.items() if width > target}


def sampled_series(plans: dict) -> list:
    """The series that take extra rounds: interpreters that ran this session, not the C
    reference (its interval does not enter any ratio's significance)."""
    return [p for p in plans.values() if p.interp is not None and p.error is None and p.ops
            and not p.kept]


def next_round(run: store.Run, plans: dict, planned_rounds: int) -> int:
    """The first round index that no part on disk uses (a resumed run continues after it)."""
    used = [key[1] for plan in plans.values()
            for key in planning.parts_on_disk(run, plan.series)]
    return max([planned_rounds - 1, *used]) + 1


def extra_round(run: store.Run, plans: dict, round_index: int, target: float,
                rng: random.Random) -> list[Task]:
    """One more round for every (series, suite) with loose ops, shuffled like the others."""
    loose = {plan.series: loose_ops(run, plan, target) for plan in sampled_series(plans)}
    suites = sorted({suite for plan in plans.values() for suite, _ in plan.ops})
    rng.shuffle(suites)
    tasks = []
    for suite in suites:
        order = [plans[s] for s in sorted(loose) if loose[s]]
        rng.shuffle(order)
        for plan in order:
            ops = sorted(op for s, op in plan.ops if s == suite and op in loose[plan.series])
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
            f"{sum(len(t.ops) for t in tasks)} loose (series, op) pairs")
        started = time.monotonic()
        execute(tasks)
        last_round_seconds = time.monotonic() - started
        round_index += 1
        extra_rounds += 1
    loose = {plan.series: {op: (round(w, 4) if math.isfinite(w) else None)
                           for op, w in sorted(loose_ops(run, plan, target).items())}
             for plan in sampled_series(plans)}
    return {"target": target, "confidence": CONFIDENCE, "extra_rounds": extra_rounds,
            "stopped_by": stopped, "loose": {s: ops for s, ops in loose.items() if ops}}
