"""The arithmetic of comparisons: ratios, their significance, geometric means, noise.

The unit of evidence is one worker process (pyperf's "run"): its mean over its
values. Values inside one process are not independent samples of the machine
(they share its state of the moment), so tests count processes, not values.

Measured here: the per-process means of one op are often bimodal (the same
interpreter reads a file in 7 ms in one process and 14 ms in the next, and a
whole-file read in 0.5 ms or 5 ms), independently from process to process.
Means and t-tests are at the mercy of how many slow processes each side drew.
So:

- ratio(A -> B) = median(B's process means) / median(A's process means);
- significant = a two-sided Mann-Whitney U test on the process means at
  p < 0.01 (exact distribution for up to 25 processes a side, normal
  approximation with tie correction beyond): rank-based, so a few processes
  in a slow mode cannot make a difference out of nothing.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

CONFIDENCE = 0.99
ALPHA = 1 - CONFIDENCE
EXACT_LIMIT = 25


def mean(xs):
    return sum(xs) / len(xs)


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def variance(xs):
    m = mean(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


@functools.lru_cache(maxsize=None)
def _u_counts(n: int, m: int) -> tuple:
    """How many of the C(n+m, n) orderings give each U = 0 .. n*m (no ties)."""
    if n == 0 or m == 0:
        return (1,)
    # The largest value belongs to the first sample (adds m to U) or to the second.
    with_first, with_second = _u_counts(n - 1, m), _u_counts(n, m - 1)
    counts = [0] * (n * m + 1)
    for u, c in enumerate(with_first):
        counts[u + m] += c
    for u, c in enumerate(with_second):
        counts[u] += c
    return tuple(counts)


def mann_whitney_p(a: list[float], b: list[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test of samples a and b."""
    n, m = len(a), len(b)
    pooled = sorted((v, side) for side, sample in ((0, a), (1, b)) for v in sample)
    values = [v for v, _ in pooled]
    ranks, i = [0.0] * len(pooled), 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and values[j + 1] == values[i]:
            j += 1
        for k in range(i, j + 1):
            ranks[k] = (i + j) / 2 + 1
        i = j + 1
    rank_sum_a = sum(r for r, (_, side) in zip(ranks, pooled) if side == 0)
    u = rank_sum_a - n * (n + 1) / 2
    ties = len(set(values)) < len(values)
    if not ties and n <= EXACT_LIMIT and m <= EXACT_LIMIT:
        counts = _u_counts(n, m)
        total = sum(counts)
        lower = sum(counts[: int(u) + 1]) / total
        upper = sum(counts[int(u):]) / total
        return min(1.0, 2 * min(lower, upper))
    mu = n * m / 2
    tie_term = sum(t ** 3 - t for t in (values.count(v) for v in set(values)))
    sigma = math.sqrt(n * m / 12 * ((n + m + 1) - tie_term / ((n + m) * (n + m - 1))))
    if sigma == 0:
        return 1.0
    z = (abs(u - mu) - 0.5) / sigma
    return min(1.0, math.erfc(max(z, 0) / math.sqrt(2)))


@dataclass
class Comparison:
    ratio: float               # > 1: B is slower than A
    significant: bool | None   # None: too few processes to test at this confidence
    p: float | None
    n_a: int
    n_b: int

    @property
    def slower(self) -> bool:
        return self.ratio > 1


def min_processes_for_significance() -> int:
    """The smallest equal sample size whose best possible p is below ALPHA."""
    n = 1
    while 2 / math.comb(2 * n, n) >= ALPHA:
        n += 1
    return n


def compare(a: dict, b: dict) -> Comparison:
    """Compare the per-process means of A and B (dicts keyed by round or any process id)."""
    va = [v for v in a.values() if v > 0]
    vb = [v for v in b.values() if v > 0]
    ratio = median(vb) / median(va)
    if 2 / math.comb(len(va) + len(vb), len(va)) >= ALPHA:
        return Comparison(ratio, None, None, len(va), len(vb))  # no outcome could reach ALPHA
    p = mann_whitney_p(va, vb)
    return Comparison(ratio, p < ALPHA and ratio != 1.0, p, len(va), len(vb))


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
