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
    from the Wilcoxon signed-rank distribution (the exact distribution up
    to 60 pairs, normal approximation beyond), and a change is significant
    when that interval excludes 1.

Only the rounds both sides have are used (a round one side lost pairs with
nothing). Fewer than 6 pairs can never reach 5% (the best p is 2 / 2**n).

Unpaired (the default: comparisons between runs, or runs made before lockstep,
whose rounds were not measured side by side and so have nothing to pair):

    The ratio B/A is exp of the Hodges-Lehmann shift of the log per-process
    means (the median of all pairwise log b_j - log a_i), its 95% interval is
    the distribution-free Moses interval built from the Mann-Whitney U
    distribution (the exact distribution up to 25 processes a side,
    normal approximation beyond), and a change is significant when that
    interval excludes 1.

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
from statistics import NormalDist

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


def _scipy_stats():
    """scipy.stats, imported when an exact distribution is needed. Not at import time: the
    bench side (``sampling``, in nox's own interpreter) uses this module with the standard
    library only, asking for normal-approximation critical values (``exact=False``)."""
    from scipy import stats as scipy_stats
    return scipy_stats


def mann_whitney_p(a: list[float], b: list[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test of samples a and b (scipy): exact without
    ties up to EXACT_LIMIT a side, otherwise the normal approximation with the tie and
    continuity corrections."""
    pooled = list(a) + list(b)
    if len(set(pooled)) == 1:
        return 1.0          # nothing to rank: no evidence either way (scipy would give nan)
    exact = len(set(pooled)) == len(pooled) and len(a) <= EXACT_LIMIT and len(b) <= EXACT_LIMIT
    result = _scipy_stats().mannwhitneyu(a, b, alternative="two-sided", use_continuity=True,
                                         method="exact" if exact else "asymptotic")
    return min(1.0, float(result.pvalue))


# A finding's threshold unless the user gives another (report, agree, release): a step beyond
# 5% either way. Here, not in the report, because the bench side's sampling aims at it too.
FINDING_THRESHOLD = 0.05


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


def _signed_rank_counts(n: int) -> list[int]:
    """[c_0, c_1, ...]: how many of the 2**n sign patterns of ranks 1..n give T+ = k (the
    exact signed-rank distribution scipy's wilcoxon uses, counted in integers here: scipy.stats
    takes 2 s to import, which every report process paid for these few numbers)."""
    counts = [1]
    for rank in range(1, n + 1):
        counts = [(counts[k] if k < len(counts) else 0) + (counts[k - rank] if k >= rank else 0)
                  for k in range(len(counts) + rank)]
    return counts


def _mann_whitney_counts(n: int, m: int) -> list[int]:
    """[c_0, c_1, ...]: how many of the C(n+m, n) orderings of n x's and m y's have U (pairs
    x > y) = k, the exact Mann-Whitney distribution: the coefficients of the Gaussian
    binomial [n+m choose n]_q, built as prod over i of (1 - q**(m+i)) / (1 - q**i), each step
    a polynomial ([m+i choose i]_q)."""
    counts = [1] + [0] * (n * m)
    for i in range(1, n + 1):
        for k in range(n * m, m + i - 1, -1):      # times (1 - q**(m+i))
            counts[k] -= counts[k - m - i]
        for k in range(i, n * m + 1):              # divided by (1 - q**i)
            counts[k] += counts[k - i]
    return counts


def _cumulative(counts: list[int]) -> list[float]:
    """P(X <= k) for each k of a distribution given by its counts."""
    total, running, below = sum(counts), 0, []
    for count in counts:
        running += count
        below.append(running / total)
    return below


def _largest_below(p_at, top: int, alpha: float) -> int:
    """The largest k in 0..top with p_at(k) < alpha/2 (-1: none); p_at grows with k."""
    low, high = -1, top          # p_at(low) < alpha/2 (or low == -1); the answer is <= high
    while low < high:
        mid = (low + high + 1) // 2
        if p_at(mid) < alpha / 2:
            low = mid
        else:
            high = mid - 1
    return low


def _normal_critical(mu: float, sigma: float, alpha: float) -> int:
    """The normal approximation's critical value, with the tests' continuity correction."""
    z = NormalDist().inv_cdf(1 - alpha / 2)
    return max(math.ceil(mu - 0.5 - z * sigma) - 1, -1)


@functools.lru_cache(maxsize=None)
def critical_u(n: int, m: int, alpha: float = ALPHA, exact: bool = True) -> int:
    """The largest k with P(U <= k) < alpha/2 under the null (-1: none, too few processes).

    The two-sided test rejects when U <= k or U >= n*m - k. Exact (the Mann-Whitney
    distribution) up to EXACT_LIMIT processes a side unless ``exact`` is False; the normal
    approximation beyond.
    """
    if exact and n <= EXACT_LIMIT and m <= EXACT_LIMIT:
        below = _cumulative(_mann_whitney_counts(n, m))
        return _largest_below(lambda k: below[k], n * m // 2, alpha)
    return _normal_critical(n * m / 2, math.sqrt(n * m * (n + m + 1) / 12), alpha)


def hodges_lehmann(a: list[float], b: list[float], exact: bool = True) \
        -> tuple[float, float | None, float | None]:
    """(ratio, low, high): exp of the HL shift of log b over log a and its Moses interval.

    The interval is the (k+1)-th smallest and (k+1)-th largest of the n*m pairwise
    log differences, k = critical_u(n, m); (ratio, None, None) when k < 0.
    """
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    diffs = sorted(y - x for x in la for y in lb)
    shift = median(diffs)
    k = critical_u(len(a), len(b), exact=exact)
    if k < 0:
        return math.exp(shift), None, None
    return math.exp(shift), math.exp(diffs[k]), math.exp(diffs[len(diffs) - 1 - k])


@functools.lru_cache(maxsize=None)
def critical_t(n: int, alpha: float = ALPHA, exact: bool = True) -> int:
    """The largest k with P(T+ <= k) < alpha/2 under the null (-1: too few pairs).

    The two-sided signed-rank test rejects when T+ <= k or T+ >= n(n+1)/2 - k. Exact
    (the signed-rank distribution, counted as scipy does) up to EXACT_LIMIT_PAIRS pairs unless ``exact`` is
    False; the normal approximation beyond. (Exact probabilities are multiples of 2**-n and
    1/40 is none, so "<" and "<=" give the same k; "<" matches the strict p < ALPHA of
    wilcoxon_signed_rank_p.)
    """
    if exact and n <= EXACT_LIMIT_PAIRS:
        below = _cumulative(_signed_rank_counts(n))
        return _largest_below(lambda k: below[k], n * (n + 1) // 4, alpha)
    return _normal_critical(n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24), alpha)


def wilcoxon_signed_rank_p(diffs: list[float]) -> float:
    """Two-sided p-value of the signed-rank test that ``diffs`` are centred on 0 (scipy; zeros
    dropped): exact without tied magnitudes up to EXACT_LIMIT_PAIRS, otherwise the normal
    approximation with the tie and continuity corrections."""
    d = [x for x in diffs if x != 0]
    if not d:
        return 1.0
    exact = len({abs(x) for x in d}) == len(d) and len(d) <= EXACT_LIMIT_PAIRS
    result = _scipy_stats().wilcoxon(d, zero_method="wilcox", correction=True,
                                     alternative="two-sided",
                                     method="exact" if exact else "approx")
    return min(1.0, float(result.pvalue))


def paired_hodges_lehmann(diffs: list[float], exact: bool = True) \
        -> tuple[float, float | None, float | None]:
    """(estimate, low, high) of the centre of ``diffs``: the median of the Walsh averages
    (d_i + d_j)/2, i <= j, and the (k+1)-th smallest and largest of them, k = critical_t(n)
    (Tukey's interval: the signed-rank test inverted); (estimate, None, None) when k < 0."""
    walsh = sorted((x + y) / 2 for i, x in enumerate(diffs) for y in diffs[i:])
    centre = median(walsh)
    k = critical_t(len(diffs), exact=exact)
    if k < 0:
        return centre, None, None
    return centre, walsh[k], walsh[len(walsh) - 1 - k]


def min_pairs_for_significance() -> int:
    """The fewest pairs whose best possible signed-rank p is below ALPHA (6 at 95%)."""
    n = 1
    while 2 / 2 ** n >= ALPHA:
        n += 1
    return n


def compare(a: dict, b: dict, paired: bool = False, exact: bool = True) -> Comparison:
    """Compare the per-process means of A and B (dicts keyed by round or any process id).

    ``paired``: A's and B's processes of one round were measured side by side (a lockstep
    run); the comparison uses the rounds both have, round by round. ``exact=False``: the
    normal approximation's critical values at every size, without scipy (for the bench
    side's stopping rule; every published figure uses the exact ones).
    """
    if paired:
        # A round that one side lost (a failed worker, a skipped op) has nothing to cancel its
        # phase against, so it is left out rather than used unpaired.
        rounds = [r for r in a if r in b and a[r] > 0 and b[r] > 0]
        if not rounds:
            raise ValueError("a paired comparison needs a round with a positive mean a side")
        diffs = [math.log(b[r]) - math.log(a[r]) for r in rounds]
        centre, low, high = paired_hodges_lehmann(diffs, exact)
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
    ratio, low, high = hodges_lehmann(va, vb, exact)
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


# -- Will a finding hold in the next run? ----------------------------------------------------

# The stationary bootstrap's expected block length in rounds: about n**(1/3) for the 25 rounds
# of a main command, chosen before looking; blocks keep a drift of a few rounds together.
# (arch's optimal_block_length on the published trio's per-round log ratios: median 1.5
# rounds, quartiles 0.9 and 4.0, so most steps show little memory from round to round.)
NEXT_RUN_BLOCK = 3
NEXT_RUN_REPLICATES = 2000
NEXT_RUN_SEED = 26        # a fixed seed: the same run always gives the same page
# The next run's estimate carries sampling noise of its own, about as large as this run's: the
# two estimates differ by sqrt(2) times the spread of one.
NEXT_RUN_WIDEN = math.sqrt(2)


def next_run_interval(diffs: list[float], confidence: float = CONFIDENCE) \
        -> tuple[float, float] | None:
    """The step's rounds resampled: (low, high) on the ratio scale, or None with fewer than
    ``min_pairs_for_significance()`` pairs. The name is historical: it was meant as where
    the next run's paired ratio should land, and it is not that (below).

    ``diffs`` are the per-round log ratios of one lockstep comparison, in round order. Their
    Hodges-Lehmann estimate is recomputed on stationary block-bootstrap resamples (Politis and
    Romano; arch.bootstrap.StationaryBootstrap, expected block NEXT_RUN_BLOCK rounds): resampling
    blocks of consecutive rounds keeps the machine's drift within a run in the spread, where the
    signed-rank interval treats rounds as exchangeable. The percentile interval of the
    estimate is then widened by NEXT_RUN_WIDEN about the estimate, so it holds the next run's
    own sampling noise too. It was meant as a prediction interval for the next run's
    estimate; measured, it held another run's estimate in 64-75% of cells within one boot and
    35-68% across boots (2026-11-25, ``nox -s agree`` prints the figure), since what moves a
    step between runs (code and page placement, the host) is not in one run's rounds. So it
    serves as the firmness margin (``comparisons.firmness_of``) and the pages and data.csv
    call it "its rounds, resampled", never where the next run lands. Why a bootstrap and not a between-run variance
    component: one run has no second run to measure it from, and on the published trio the
    between-run spread of a step's log ratio (median 0.021) is below the within-run standard
    error (median 0.032), so blocks plus the next run's noise cover it. arch rather than
    scipy.stats.bootstrap: scipy resamples single values only, which would drop the blocks.
    """
    if len(diffs) < min_pairs_for_significance():
        return None
    import numpy as np                       # with arch: report side only (see _scipy_stats)
    from arch.bootstrap import StationaryBootstrap
    d = np.asarray(diffs, dtype=float)
    first, second = np.triu_indices(len(d))  # the Walsh pairs i <= j
    centre = float(np.median((d[first] + d[second]) / 2))
    bootstrap = StationaryBootstrap(NEXT_RUN_BLOCK, d, seed=NEXT_RUN_SEED)
    resamples = np.array([data[0][0] for data in bootstrap.bootstrap(NEXT_RUN_REPLICATES)])
    estimates = np.median((resamples[:, first] + resamples[:, second]) / 2, axis=1)
    low, high = np.quantile(estimates, [(1 - confidence) / 2, (1 + confidence) / 2])
    return (math.exp(centre - NEXT_RUN_WIDEN * max(centre - low, 0.0)),
            math.exp(centre + NEXT_RUN_WIDEN * max(high - centre, 0.0)))


# -- A series that splits into modes ---------------------------------------------------------

# The rule: sort a series' log per-process means; it splits into two modes where a gap between
# neighbours, with at least MODE_MIN_PROCESSES on each side, exceeds MODE_GAP times the pooled
# standard deviation within the two groups. Why a gap and not a dip test or a two-component
# fit: with 10-25 processes a dip test has little power, a mixture fit is unstable, and the gap
# names the two groups outright (which processes, how many, how far apart), which is what a
# finding's row has to say. Why 5: on simulated unimodal series (normal and Student t with 3
# degrees of freedom, 1000 each) the rule splits 0.3% of 10-process series and none of 25; the
# split of the issue (6 of 10 processes 1.3-2.1 ms against 0.2-0.3 ms) scores 8.5. Fewer
# processes need a wider gap: with 5 the rule split 3.5% of unimodal 6-process series (the
# quick profile planned 6 rounds then; it plans 8 now), so below 10 the gap is the score a
# unimodal series of that many processes exceeds in 0.5% of cases (the larger of normal and
# Student t3, 4000 simulated series each).
MODE_GAP = 5.0
MODE_GAP_FEW = {4: 26.0, 5: 12.6, 6: 9.1, 7: 7.7, 8: 6.4, 9: 5.2}
MODE_MIN_PROCESSES = 2


def mode_gap(processes: int) -> float:
    """The gap (in pooled standard deviations) a split of ``processes`` values must exceed."""
    return max(MODE_GAP, MODE_GAP_FEW.get(processes, MODE_GAP))


@dataclass(frozen=True)
class Modes:
    processes: int
    slow: int             # processes in the slower mode
    factor: float         # the slower mode's median over the faster mode's

    def describe(self) -> str:
        # Two decimals for modes close together: "1.0x slower" would read as no difference.
        factor = f"{self.factor:.2f}" if self.factor < 1.1 else f"{self.factor:.1f}"
        return f"{self.slow} of {self.processes} processes {factor}x slower"


def split_modes(values) -> Modes | None:
    """The two modes a series' per-process means split into (the rule above), or None."""
    logs = sorted(math.log(v) for v in values if v > 0)
    n, found = len(logs), None
    best = mode_gap(n)
    for cut in range(MODE_MIN_PROCESSES, n - MODE_MIN_PROCESSES + 1):
        fast, slow = logs[:cut], logs[cut:]
        gap = slow[0] - fast[-1]
        if gap <= 0:
            continue
        within = sum((x - mean(g)) ** 2 for g in (fast, slow) for x in g)
        spread = math.sqrt(within / (n - 2))
        score = gap / spread if spread > 0 else math.inf
        if score > best:
            best, found = score, Modes(n, n - cut, math.exp(median(slow) - median(fast)))
    return found
