"""The arithmetic of comparisons: ratios, their significance, geometric means, noise.

The unit of evidence is one worker process (pyperf's "run"): its mean over its
values. Values inside one process are not independent samples of the machine
(they share its state of the moment), so tests count processes, not values.

ratio(A -> B) = exp(mean(log B_i) - mean(log A_i)) over the processes of each:
the geometric mean of per-process ratios. When both sides ran in the same
interleaved rounds, the test is a paired t-test on per-round log ratios (drift
of the machine cancels within a round); otherwise Welch's t-test on log
process means. Significant means p < 0.01, two-sided.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

CONFIDENCE = 0.99
# Two-sided Student t critical values at 99% confidence, by degrees of freedom.
T_CRITICAL_99 = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499,
                 8: 3.355, 9: 3.250, 10: 3.169, 11: 3.106, 12: 3.055, 13: 3.012, 14: 2.977,
                 15: 2.947, 16: 2.921, 17: 2.898, 18: 2.878, 19: 2.861, 20: 2.845, 22: 2.819,
                 24: 2.797, 26: 2.779, 28: 2.763, 30: 2.750, 40: 2.704, 60: 2.660, 120: 2.617}
Z_99 = 2.576


def t_critical(df: float) -> float:
    """The critical value for ``df`` degrees of freedom, rounded down to a tabulated df (conservative)."""
    if df < 1:
        return math.inf
    usable = [d for d in T_CRITICAL_99 if d <= df]
    return T_CRITICAL_99[max(usable)] if df <= 120 else Z_99


def mean(xs):
    return sum(xs) / len(xs)


def variance(xs):
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


@dataclass
class Comparison:
    ratio: float            # > 1: B is slower than A
    significant: bool | None  # None: not enough processes to tell
    t: float | None
    n_a: int
    n_b: int
    paired: bool

    @property
    def slower(self) -> bool:
        return self.ratio > 1


def compare(a: dict[int, float], b: dict[int, float], pairable: bool = True) -> Comparison:
    """Compare per-process means of A and B, each keyed by round.

    ``pairable``: A and B ran interleaved in the same session, so round i of A
    and round i of B ran side by side and may be paired.
    """
    log_a = {r: math.log(v) for r, v in a.items() if v > 0}
    log_b = {r: math.log(v) for r, v in b.items() if v > 0}
    ratio = math.exp(mean(list(log_b.values())) - mean(list(log_a.values())))
    common = sorted(set(log_a) & set(log_b))
    paired = pairable and len(common) == len(log_a) == len(log_b)
    t = None
    if paired and len(common) >= 2:
        diffs = [log_b[r] - log_a[r] for r in common]
        sd = math.sqrt(variance(diffs))
        t = math.inf if sd == 0 else mean(diffs) / (sd / math.sqrt(len(diffs)))
        df = len(diffs) - 1
    elif not paired and len(log_a) >= 2 and len(log_b) >= 2:
        va, vb = variance(list(log_a.values())), variance(list(log_b.values()))
        na, nb = len(log_a), len(log_b)
        se2 = va / na + vb / nb
        diff = mean(list(log_b.values())) - mean(list(log_a.values()))
        t = math.inf if se2 == 0 else diff / math.sqrt(se2)
        df = (se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
              if se2 > 0 else na + nb - 2)
    if t is None:
        return Comparison(ratio, None, None, len(log_a), len(log_b), paired)
    significant = abs(t) > t_critical(df) and ratio != 1.0
    return Comparison(ratio, significant, t, len(log_a), len(log_b), paired)


def geometric_mean(values) -> float:
    values = [v for v in values if v and v > 0 and not math.isnan(v)]
    if not values:
        return math.nan
    return math.exp(sum(math.log(v) for v in values) / len(values))


def relative_stdev(values) -> float:
    """Standard deviation of per-process means over their mean (0.05 = 5%)."""
    values = list(values)
    if len(values) < 2:
        return math.nan
    return math.sqrt(variance(values)) / mean(values)
