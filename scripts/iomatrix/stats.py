"""The arithmetic of comparisons: ratios with their intervals, geometric means, noise.

The unit of evidence is one worker process (pyperf's "run"): its mean over its
values. Values inside one process are not independent samples of the machine
(they share its state of the moment), so every estimate and test counts
processes, not values.

Measured here: the per-process means of one op are often bimodal (the same
interpreter reads a file in 7 ms in one process and 14 ms in the next, and a
whole-file read in 0.5 ms or 5 ms), independently from process to process.
Means and t-tests are at the mercy of how many slow processes each side drew,
so the method is rank-based. There are two forms of it, one per design.

Paired (``compare(a, b, paired=True)``, a lockstep run): in each round every
interpreter's worker runs the same op one right after the other, so round r
of A and round r of B are measured in the same phase of the machine. A shared
machine drifts over seconds (other tenants, frequency, caches, the disk), by
as much as the differences sought; within one round that drift is common to
both sides and cancels in the ratio b_r / a_r, while across rounds it is
noise an unpaired method has to count against the difference. In one sentence:

    The ratio B/A is exp of the one-sample Hodges-Lehmann estimate of the
    per-round log ratios d_r = log b_r - log a_r (the median of the Walsh
    averages (d_i + d_j)/2, i <= j), its 95% interval is Tukey's interval
    from the Wilcoxon signed-rank distribution (exact up to 60 pairs by
    counting the subsets of ranks by sum, normal approximation beyond), and a
    change is significant when that interval excludes 1.

Only the rounds both sides have are used (a round one side lost pairs with
nothing). Fewer than 6 pairs can never reach 5% (the best p is 2 / 2**n).

Unpaired (the default: comparisons between runs, or runs made before lockstep,
whose rounds were not measured side by side and so have nothing to pair):

    The ratio B/A is exp of the Hodges-Lehmann shift of the log per-process
    means (the median of all pairwise log b_j - log a_i), its 95% interval is
    the distribution-free Moses interval built from the Mann-Whitney U
    distribution (exact up to 25 processes a side, normal approximation
    beyond), and a change is significant when that interval excludes 1.

In both, interval and test are one method: the interval is the set of ratios
r for which the two-sided test (signed-rank of the d_r - log r; Mann-Whitney
of A against B/r) does not reject at 5%, so "significant" and "the interval
excludes 1" cannot disagree. With too few processes or pairs no outcome could
reach 5% (fewer than 4 a side when equal; fewer than 6 pairs); then there is
no interval and no verdict, never a made-up one. METHOD and METHOD_PAIRED say
each method in one sentence for the pages (``method_sentence(paired)``).
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
METHOD_PAIRED = ("Ratio: exp of the Hodges-Lehmann estimate of the per-round log ratios (each "
                 "round measures both interpreters one right after the other); [low, high]: its 95% "
                 "interval from the Wilcoxon signed-rank test inverted; ▲/▼: significantly "
                 "slower/faster, i.e. the interval excludes 1.")
ALPHA = 1 - CONFIDENCE
EXACT_LIMIT = 25
EXACT_LIMIT_PAIRS = 60


def method_sentence(paired: bool) -> str:
    return METHOD_PAIRED if paired else METHOD


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
    paired: bool = False       # round by round (a lockstep run); n_a == n_b == pairs

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


def _lower_critical(counts, total: int, alpha: float) -> int:
    """The largest statistic k with P(S <= k) < alpha/2, from the exact null counts of S
    (-1: none, too few observations for any outcome to reach alpha)."""
    k, cumulative = -1, 0
    for statistic, count in enumerate(counts):
        cumulative += count
        if cumulative / total >= alpha / 2:
            break
        k = statistic
    return k


def critical_u(n: int, m: int, alpha: float = ALPHA) -> int:
    """The largest k with P(U <= k) < alpha/2 under the null (-1: none, too few processes).

    The two-sided test rejects when U <= k or U >= n*m - k.
    """
    if n <= EXACT_LIMIT and m <= EXACT_LIMIT:
        return _lower_critical(_u_counts(n, m), math.comb(n + m, n), alpha)
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


@functools.lru_cache(maxsize=None)
def _signed_rank_counts(n: int) -> tuple:
    """How many of the 2**n sign patterns give each signed-rank sum T+ = 0 .. n(n+1)/2."""
    counts = [1]
    for rank in range(1, n + 1):  # rank is positive (adds rank to T+) or negative
        grown = counts + [0] * rank
        for t, c in enumerate(counts):
            grown[t + rank] += c
        counts = grown
    return tuple(counts)


def critical_t(n: int, alpha: float = ALPHA) -> int:
    """The largest k with P(T+ <= k) < alpha/2 under the null (-1: too few pairs).

    The two-sided signed-rank test rejects when T+ <= k or T+ >= n(n+1)/2 - k. (Exact
    probabilities are multiples of 2**-n and 1/40 is none, so "<" and "<=" give the same
    k; "<" matches the strict p < ALPHA of wilcoxon_signed_rank_p.)
    """
    if n <= EXACT_LIMIT_PAIRS:
        return _lower_critical(_signed_rank_counts(n), 2 ** n, alpha)
    sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    z = _normal_quantile(1 - alpha / 2)
    return max(math.ceil(n * (n + 1) / 4 - 0.5 - z * sigma) - 1, -1)


def wilcoxon_signed_rank_p(diffs: list[float]) -> float:
    """Two-sided p-value of the signed-rank test that ``diffs`` are centred on 0 (zeros
    dropped; tied magnitudes get their average rank and the normal approximation)."""
    d = [x for x in diffs if x != 0]
    n = len(d)
    if n == 0:
        return 1.0
    order = sorted(range(n), key=lambda i: abs(d[i]))
    ranks, i = [0.0] * n, 0
    while i < n:
        j = i
        while j + 1 < n and abs(d[order[j + 1]]) == abs(d[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    t_plus = sum(r for r, x in zip(ranks, d) if x > 0)
    ties = len({abs(x) for x in d}) < n
    if not ties and n <= EXACT_LIMIT_PAIRS:
        counts, total = _signed_rank_counts(n), 2 ** n
        t = int(round(t_plus))
        lower, upper = sum(counts[: t + 1]) / total, sum(counts[t:]) / total
        return min(1.0, 2 * min(lower, upper))
    mu = n * (n + 1) / 4
    groups = {}
    for x in d:
        groups[abs(x)] = groups.get(abs(x), 0) + 1
    tie_term = sum(c ** 3 - c for c in groups.values()) / 48
    sigma = math.sqrt(n * (n + 1) * (2 * n + 1) / 24 - tie_term)
    if sigma == 0:
        return 1.0
    z = (abs(t_plus - mu) - 0.5) / sigma
    return min(1.0, math.erfc(max(z, 0) / math.sqrt(2)))


def paired_hodges_lehmann(diffs: list[float]) -> tuple[float, float | None, float | None]:
    """(estimate, low, high) of the centre of ``diffs``: the median of the Walsh averages
    (d_i + d_j)/2, i <= j, and the (k+1)-th smallest and largest of them, k = critical_t(n)
    (Tukey's interval: the signed-rank test inverted); (estimate, None, None) when k < 0."""
    walsh = sorted((x + y) / 2 for i, x in enumerate(diffs) for y in diffs[i:])
    centre = median(walsh)
    k = critical_t(len(diffs))
    if k < 0:
        return centre, None, None
    return centre, walsh[k], walsh[len(walsh) - 1 - k]


def min_pairs_for_significance() -> int:
    """The fewest pairs whose best possible signed-rank p is below ALPHA (6 at 95%)."""
    n = 1
    while 2 / 2 ** n >= ALPHA:
        n += 1
    return n


def compare(a: dict, b: dict, paired: bool = False) -> Comparison:
    """Compare the per-process means of A and B (dicts keyed by round or any process id).

    ``paired``: A's and B's processes of one round were measured side by side (a lockstep
    run); the comparison uses the rounds both have, round by round.
    """
    if paired:
        # A round that one side lost (a failed worker, a skipped op) has nothing to cancel its
        # phase against, so it is left out rather than used unpaired.
        rounds = [r for r in a if r in b and a[r] > 0 and b[r] > 0]
        if not rounds:
            raise ValueError("a paired comparison needs a round with a positive mean a side")
        diffs = [math.log(b[r]) - math.log(a[r]) for r in rounds]
        centre, low, high = paired_hodges_lehmann(diffs)
        n = len(rounds)
        if low is None:
            return Comparison(math.exp(centre), None, None, None, n, n, True)
        # The verdict is read on the log scale, where the signed-rank test lives: exp can round
        # a log bound of 1e-17 to exactly 1.0, which would split test and interval.
        return Comparison(math.exp(centre), math.exp(low), math.exp(high), low > 0 or high < 0,
                          n, n, True)
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
