"""The arithmetic of comparisons: ratios with their intervals, geometric means, noise.

The unit of evidence is one worker process (pyperf's "run"): its mean over its
values. Values inside one process are not independent samples of the machine
(they share its state of the moment), so every estimate and test counts
processes, not values.

Measured here: the per-process means of one op are often bimodal (the same
interpreter reads a file in 7 ms in one process and 14 ms in the next, and a
whole-file read in 0.5 ms or 5 ms), independently from process to process.
Means and t-tests are at the mercy of how many slow processes each side drew,
so the method is rank-based. In one sentence:

    The ratio B/A is exp of the Hodges-Lehmann shift of the log per-process
    means (the median of all pairwise log b_j - log a_i), its 95% interval is
    the distribution-free Moses interval built from the Mann-Whitney U
    distribution (exact up to 25 processes a side, normal approximation
    beyond), and a change is significant when that interval excludes 1.

Interval and test are one method: the interval is the set of ratios r for
which the two-sided Mann-Whitney test of A against B/r does not reject at 5%,
so "significant" and "the interval excludes 1" cannot disagree. With too few
processes no outcome could reach 5% (fewer than 4 a side when equal); then
there is no interval and no verdict, never a made-up one.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

CONFIDENCE = 0.95
# The method in one sentence, for every page that shows a ratio.
METHOD = ("Ratio: exp of the Hodges-Lehmann shift of the log per-process means; [low, high]: "
          "its 95% Moses interval (the Mann-Whitney U test inverted); ▲/▼: significantly slower/faster, i.e. the "
          "interval excludes 1.")
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
    ratio: float               # B/A; > 1: B is slower than A
    low: float | None          # the 95% interval of the ratio; None: too few processes
    high: float | None
    significant: bool | None   # the interval excludes 1; None: too few processes to tell
    n_a: int
    n_b: int

    @property
    def slower(self) -> bool:
        return self.ratio > 1

    def beyond(self, threshold: float) -> bool:
        """The estimate is slower than 1 + threshold (0.05: 5% slower)."""
        return self.ratio > 1 + threshold

    def regression(self, threshold: float) -> bool:
        """A regression verdict: significant AND the estimate beyond the threshold."""
        return bool(self.significant) and self.beyond(threshold)


def min_processes_for_significance() -> int:
    """The smallest equal sample size whose best possible p is below ALPHA."""
    n = 1
    while 2 / math.comb(2 * n, n) >= ALPHA:
        n += 1
    return n


def critical_u(n: int, m: int, alpha: float = ALPHA) -> int:
    """The largest k with P(U <= k) < alpha/2 under the null (-1: none, too few processes).

    The two-sided test rejects when U <= k or U >= n*m - k.
    """
    if n <= EXACT_LIMIT and m <= EXACT_LIMIT:
        counts, total = _u_counts(n, m), math.comb(n + m, n)
        k, cumulative = -1, 0
        for u, c in enumerate(counts):
            cumulative += c
            if cumulative / total >= alpha / 2:
                break
            k = u
        return k
    # Normal approximation with the continuity correction of mann_whitney_p.
    sigma = math.sqrt(n * m * (n + m + 1) / 12)
    z = _normal_quantile(1 - alpha / 2)
    return max(math.ceil(n * m / 2 - 0.5 - z * sigma) - 1, -1)


def _normal_quantile(p: float) -> float:
    """The standard normal quantile by bisection on erfc (no scipy in the host venv)."""
    low, high = -10.0, 10.0
    for _ in range(100):
        mid = (low + high) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def hodges_lehmann(a: list[float], b: list[float]) -> tuple[float, float | None, float | None]:
    """(ratio, low, high): exp of the HL shift of log b over log a and its Moses interval.

    The interval is the (k+1)-th smallest and (k+1)-th largest of the n*m pairwise
    log differences, k = critical_u(n, m); (ratio, None, None) when k < 0.
    """
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    diffs = sorted(y - x for x in la for y in lb)
    shift = median(diffs)
    k = critical_u(len(a), len(b))
    if k < 0:
        return math.exp(shift), None, None
    return math.exp(shift), math.exp(diffs[k]), math.exp(diffs[len(diffs) - 1 - k])


def compare(a: dict, b: dict) -> Comparison:
    """Compare the per-process means of A and B (dicts keyed by round or any process id)."""
    va = [v for v in a.values() if v > 0]
    vb = [v for v in b.values() if v > 0]
    if not va or not vb:
        raise ValueError("a comparison needs at least one positive process mean a side")
    ratio, low, high = hodges_lehmann(va, vb)
    if low is None:
        return Comparison(ratio, None, None, None, len(va), len(vb))
    return Comparison(ratio, low, high, low > 1 or high < 1, len(va), len(vb))


def location(values) -> float:
    """One series' time, by the ratios' estimator in its one-sample form: exp of the
    Hodges-Lehmann location of the log per-process means (median of pairwise averages)."""
    logs = [math.log(v) for v in values if v > 0]
    if not logs:
        return math.nan
    return math.exp(median([(x + y) / 2 for i, x in enumerate(logs) for y in logs[i:]]))


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
