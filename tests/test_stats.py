"""The ratio, its interval and its verdict (iomatrix.stats): properties that must hold for any data."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iomatrix import stats
from iomatrix.analysing import analysis, comparisons
from iomatrix.storing import store

# Per-process means in seconds: positive, over the range ops really take.
TIMES = st.floats(min_value=1e-6, max_value=10.0, allow_nan=False, allow_infinity=False)
SAMPLES = st.lists(TIMES, min_size=1, max_size=14)


def as_processes(values):
    return dict(enumerate(values))


@settings(max_examples=300, deadline=None)
@given(SAMPLES, SAMPLES)
def test_the_interval_contains_the_estimate(a, b):
    c = stats.compare(as_processes(a), as_processes(b))
    if c.low is not None:
        assert c.low <= c.ratio * (1 + 1e-12) and c.ratio <= c.high * (1 + 1e-12)


@settings(max_examples=300, deadline=None)
@given(SAMPLES, SAMPLES)
def test_significant_exactly_when_the_interval_excludes_1(a, b):
    c = stats.compare(as_processes(a), as_processes(b))
    if c.low is None:
        assert c.significant is None
    else:
        assert c.significant == (c.low > 1 or c.high < 1)


@settings(max_examples=200, deadline=None)
@given(SAMPLES, SAMPLES, st.floats(min_value=0.01, max_value=100.0))
def test_scaling_b_by_c_scales_estimate_and_bounds_by_c(a, b, factor):
    plain = stats.compare(as_processes(a), as_processes(b))
    scaled = stats.compare(as_processes(a), as_processes([v * factor for v in b]))
    assert scaled.ratio == pytest.approx(plain.ratio * factor, rel=1e-9)
    if plain.low is not None:
        assert scaled.low == pytest.approx(plain.low * factor, rel=1e-9)
        assert scaled.high == pytest.approx(plain.high * factor, rel=1e-9)
        assert (scaled.low is None) == (plain.low is None)


@settings(max_examples=200, deadline=None)
@given(st.lists(TIMES, min_size=4, max_size=12, unique=True),
       st.lists(TIMES, min_size=4, max_size=12, unique=True))
def test_without_ties_the_interval_agrees_with_the_mann_whitney_test(a, b):
    """The interval is the inverted test: excluding 1 is p < 5% (exact distribution, no ties)."""
    if set(a) & set(b):
        return
    c = stats.compare(as_processes(a), as_processes(b))
    assert c.significant == (stats.mann_whitney_p(a, b) < stats.ALPHA)


def test_hodges_lehmann_by_hand():
    """a = (1, 2), b = (2, 4): log differences are log 1, log 2, log 2, log 4; median log 2."""
    ratio, low, high = stats.hodges_lehmann([1.0, 2.0], [2.0, 4.0])
    assert ratio == pytest.approx(2.0) and low is None and high is None


def test_a_clear_shift_has_an_interval_that_excludes_1():
    a = as_processes([1.00, 1.01, 0.99, 1.02, 0.98, 1.00])
    b = as_processes([1.30, 1.32, 1.29, 1.33, 1.31, 1.30])
    c = stats.compare(a, b)
    assert c.significant is True and 1.25 < c.low <= c.ratio <= c.high < 1.40
    assert c.regression(0.05) and not c.regression(0.50)


def test_large_samples_use_the_normal_approximation():
    a = as_processes([1 + i / 1000 for i in range(40)])
    b = as_processes([1.1 + i / 1000 for i in range(40)])
    c = stats.compare(a, b)
    assert c.significant is True and c.low < c.ratio < c.high
    assert stats.critical_u(40, 40) > 0


def test_location_is_the_one_sample_form():
    assert stats.location([2.0, 2.0, 2.0]) == pytest.approx(2.0)
    assert stats.location([1.0, 4.0]) == pytest.approx(2.0)   # exp(median(0, log 2, log 4))
    assert math.isnan(stats.location([]))


# The paired (lockstep) form: per-round log ratios, Hodges-Lehmann and the signed-rank test.

def paired_diffs(a: dict, b: dict) -> list[float]:
    """The per-round log ratios compare(paired=True) works on."""
    return [math.log(b[r]) - math.log(a[r]) for r in a if r in b and a[r] > 0 and b[r] > 0]


def test_signed_rank_critical_values_match_the_tables():
    """Two-sided 5% critical values of T+ as printed in the usual tables (-1: none)."""
    table = {5: -1, 6: 0, 7: 2, 8: 3, 9: 5, 10: 8, 15: 25, 20: 52, 25: 89, 30: 137}
    assert {n: stats.critical_t(n) for n in table} == table


def test_the_exact_distributions_are_scipys():
    """critical_t and critical_u count the exact signed-rank and Mann-Whitney distributions
    themselves (no scipy.stats import in a report process): the same P(X <= k) as scipy's."""
    from scipy import stats as scipy_stats
    for n in (1, 6, 13, 25, stats.EXACT_LIMIT_PAIRS):
        below = stats._cumulative(stats._signed_rank_counts(n))
        for k in sorted({0, 1, n, n * (n + 1) // 4, n * (n + 1) // 2}):
            d, left = [], k           # ranks 1..n, positive for a set summing to k: T+ = k
            for rank in range(n, 0, -1):
                d.append(rank if rank <= left else -rank)
                left -= rank if rank <= left else 0
            assert below[k] == pytest.approx(
                scipy_stats.wilcoxon(d, alternative="less", method="exact").pvalue, rel=1e-9)
    for n, m in ((1, 1), (3, 7), (8, 8), (25, 4), (stats.EXACT_LIMIT, stats.EXACT_LIMIT)):
        below = stats._cumulative(stats._mann_whitney_counts(n, m))
        for k in sorted({0, 1, m, n * m // 2, n * m}):
            x, left = [], k           # x_i above c_i of the y's, sum c_i = k: U = k
            for i in range(n):
                c = min(m, left)
                left -= c
                x.append(c + 0.5 + i / (10 * n))
            assert below[k] == pytest.approx(scipy_stats.mannwhitneyu(
                x, list(range(1, m + 1)), alternative="less", method="exact").pvalue, rel=1e-9)


def test_the_critical_value_grows_with_n_across_the_exact_limit():
    ks = [stats.critical_t(n) for n in range(1, stats.EXACT_LIMIT_PAIRS + 30)]
    assert ks == sorted(ks)
    # The normal approximation just beyond the limit continues the exact values.
    n = stats.EXACT_LIMIT_PAIRS
    assert stats.critical_t(n) < stats.critical_t(n + 1) < stats.critical_t(n) + 2 * (n + 1)


def test_six_pairs_are_the_fewest_that_can_be_significant():
    assert stats.min_pairs_for_significance() == 6
    assert stats.critical_t(5) < 0 <= stats.critical_t(6)
    # All six rounds the same way: the best possible p, 2 / 2**6.
    assert stats.wilcoxon_signed_rank_p([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]) == pytest.approx(2 / 64)
    assert stats.wilcoxon_signed_rank_p([0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(2 / 32)


def test_the_signed_rank_p_by_hand():
    assert stats.wilcoxon_signed_rank_p([]) == 1.0
    assert stats.wilcoxon_signed_rank_p([0.0, 0.0]) == 1.0          # zeros are dropped
    # Ranks 1..4 with signs -, +, +, +: T+ = 9 of 10; P(T+ >= 9) = 2/16, two-sided 0.25.
    assert stats.wilcoxon_signed_rank_p([-0.1, 0.2, 0.3, 0.4]) == pytest.approx(0.25)
    assert stats.wilcoxon_signed_rank_p([0.0, -0.1, 0.2, 0.3, 0.4]) == pytest.approx(0.25)
    d = [0.3, -0.1, 0.25, 0.4, -0.05, 0.2, 0.15]
    assert stats.wilcoxon_signed_rank_p(d) == pytest.approx(stats.wilcoxon_signed_rank_p([-x for x in d]))


@pytest.mark.parametrize("n", [1, 3, 5])
def test_fewer_than_six_pairs_give_no_interval_and_no_verdict(n):
    a = {r: 1.0 + r / 100 for r in range(n)}
    b = {r: 2.0 * v for r, v in a.items()}          # twice as slow every round: still too few
    c = stats.compare(a, b, paired=True)
    assert c.ratio == pytest.approx(2.0)
    assert c.low is None and c.high is None and c.significant is None
    assert c.paired and c.n_a == c.n_b == n
    assert not c.regression(0.05)


def test_six_pairs_all_one_way_are_significant():
    a = {r: 1.0 + r / 100 for r in range(6)}
    b = {r: v * (1.10 + r / 1000) for r, v in a.items()}
    c = stats.compare(a, b, paired=True)
    assert c.significant is True and 1.0 < c.low <= c.ratio <= c.high
    assert c.n_a == c.n_b == 6


def test_the_paired_interval_is_tukeys_by_hand():
    """n = 6: k = 0, so the interval runs from the smallest to the largest Walsh average,
    which are the smallest and largest log ratio; the estimate is their Walsh median."""
    d = [0.02, -0.01, 0.05, 0.03, 0.01, 0.04]
    a = {r: 1.0 for r in range(6)}
    b = {r: math.exp(x) for r, x in enumerate(d)}
    c = stats.compare(a, b, paired=True)
    walsh = sorted((x + y) / 2 for i, x in enumerate(d) for y in d[i:])
    assert c.ratio == pytest.approx(math.exp(stats.median(walsh)))
    assert c.low == pytest.approx(math.exp(min(d))) and c.high == pytest.approx(math.exp(max(d)))
    assert c.significant is False                    # one round of six went the other way


def test_only_the_rounds_both_sides_have_are_paired():
    a = {r: 1.0 + (r % 3) / 10 for r in range(12)}            # rounds 0..11
    b = {r: 1.07 * (1.0 + (r % 3) / 10) for r in range(3, 15)}  # rounds 3..14
    a[5] = 0.0                                                 # a lost measurement: not a pair
    common = [r for r in range(3, 12) if r != 5]
    c = stats.compare(a, b, paired=True)
    alone = stats.compare({r: a[r] for r in common}, {r: b[r] for r in common}, paired=True)
    assert c == alone
    assert c.n_a == c.n_b == len(common) == 8
    assert c.ratio == pytest.approx(1.07)
    # The pairs are by key, not by position: the order of the dicts does not matter.
    assert stats.compare(dict(reversed(list(a.items()))), b, paired=True) == c


def test_paired_without_a_common_round_is_an_error():
    with pytest.raises(ValueError):
        stats.compare({0: 1.0, 1: 1.0}, {2: 1.0, 3: 1.0}, paired=True)
    with pytest.raises(ValueError):
        stats.compare({0: 0.0}, {0: 1.0}, paired=True)


def test_unpaired_is_the_default_and_unchanged():
    a = as_processes([1.00, 1.01, 0.99, 1.02, 0.98, 1.00])
    b = as_processes([1.30, 1.32, 1.29, 1.33, 1.31, 1.30])
    c = stats.compare(a, b)
    assert c == stats.compare(a, b, paired=False) and c.paired is False
    assert c == stats.Comparison(*stats.hodges_lehmann(list(a.values()), list(b.values())),
                                 True, 6, 6)


def test_drift_between_rounds_cancels_when_paired():
    """A lockstep run on a drifting machine: A's time doubles and halves from round to round,
    B is 5% slower than A in every round give or take 0.5%. Paired by round the drift cancels;
    unpaired it swamps the 5%."""
    rng = random.Random(20240611)
    a, b = {}, {}
    for r in range(20):
        phase = rng.uniform(1.0, 2.0)                          # the machine's state this round
        a[r] = 0.010 * phase * rng.uniform(0.997, 1.003)
        b[r] = 0.010 * phase * 1.05 * rng.uniform(0.997, 1.003)
    paired = stats.compare(a, b, paired=True)
    assert paired.paired and paired.significant is True and paired.regression(0.03)
    assert paired.ratio == pytest.approx(1.05, abs=0.005)
    assert 1.04 < paired.low <= paired.ratio <= paired.high < 1.06
    unpaired = stats.compare(a, b)
    assert unpaired.significant is False and unpaired.low < 1 < unpaired.high
    assert unpaired.high - unpaired.low > 10 * (paired.high - paired.low)


ROUNDS = st.lists(TIMES, min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(ROUNDS, ROUNDS)
def test_paired_interval_contains_the_estimate_and_decides_the_verdict(a, b):
    a, b = as_processes(a), as_processes(b)
    c = stats.compare(a, b, paired=True)
    assert c.paired and c.n_a == c.n_b == min(len(a), len(b))
    if c.n_a < stats.min_pairs_for_significance():
        assert c.low is None and c.high is None and c.significant is None
        return
    assert c.low <= c.ratio * (1 + 1e-12) and c.ratio <= c.high * (1 + 1e-12)
    # The verdict is read on the log scale; exp of a bound can only round onto 1, not across it.
    if c.significant:
        assert c.low >= 1 or c.high <= 1
    else:
        assert c.low <= 1 <= c.high


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=-0.5, max_value=0.5, allow_nan=False), min_size=6, max_size=40),
       st.floats(min_value=1e-4, max_value=1.0))
def test_without_ties_the_paired_verdict_is_the_signed_rank_test(log_ratios, base):
    """The interval is the inverted test: excluding 1 is p < 5% (exact distribution)."""
    a = {r: base * (1 + r / 7) for r in range(len(log_ratios))}
    b = {r: a[r] * math.exp(x) for r, x in enumerate(log_ratios)}
    d = paired_diffs(a, b)
    if 0.0 in d or len({abs(x) for x in d}) < len(d):
        return                                      # zeros or tied magnitudes: not this property
    c = stats.compare(a, b, paired=True)
    assert c.significant == (stats.wilcoxon_signed_rank_p(d) < stats.ALPHA)


@pytest.mark.parametrize("seed", range(40))
def test_the_paired_verdict_is_the_signed_rank_test_at_any_size(seed):
    """Seeded data around the 5% boundary, exact (up to 60 pairs) and normal (beyond)."""
    rng = random.Random(seed)
    n = rng.choice([6, 9, 14, 25, 40, 60, 61, 75, 120])
    shift = rng.uniform(-1.0, 1.0) * 2.5 / math.sqrt(n)     # |z| up to ~2.5: both verdicts occur
    a = {r: rng.uniform(0.005, 0.010) for r in range(n)}
    b = {r: v * math.exp(shift + rng.gauss(0, 1.0)) for r, v in a.items()}
    d = paired_diffs(a, b)
    assert 0.0 not in d and len({abs(x) for x in d}) == n
    c = stats.compare(a, b, paired=True)
    assert c.significant == (stats.wilcoxon_signed_rank_p(d) < stats.ALPHA)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(TIMES, TIMES), min_size=1, max_size=20),
       st.floats(min_value=0.01, max_value=100.0))
def test_paired_scaling_b_by_c_scales_estimate_and_bounds_by_c(pairs, factor):
    a = {r: x for r, (x, _) in enumerate(pairs)}
    b = {r: y for r, (_, y) in enumerate(pairs)}
    plain = stats.compare(a, b, paired=True)
    scaled = stats.compare(a, {r: v * factor for r, v in b.items()}, paired=True)
    assert scaled.ratio == pytest.approx(plain.ratio * factor, rel=1e-9)
    assert (scaled.low is None) == (plain.low is None)
    if plain.low is not None:
        assert scaled.low == pytest.approx(plain.low * factor, rel=1e-9)
        assert scaled.high == pytest.approx(plain.high * factor, rel=1e-9)


def test_the_method_sentence_names_the_method_in_use():
    assert stats.method_sentence(False) == stats.METHOD and "Mann-Whitney" in stats.METHOD
    assert stats.method_sentence(True) == stats.METHOD_PAIRED
    assert "per-round log ratios" in stats.METHOD_PAIRED and "signed-rank" in stats.METHOD_PAIRED


# scipy carries the distributions (issue 26 item 6): the published figures do not move.

PUBLISHED = Path(__file__).parent / "data" / "published_step_ratios.json"
RESULTS = Path(__file__).resolve().parent.parent / "results"


def published():
    """Figures computed by the hand-written distributions this module had before scipy
    (tests/data/published_step_ratios.json): the report's step ratios and intervals of the
    published run, critical values, and p-values of seeded samples with and without ties."""
    return json.loads(PUBLISHED.read_text())


def test_the_published_runs_step_ratios_and_intervals_do_not_change():
    fixture = published()
    run = store.Run(RESULTS, fixture["run"])
    if not run.path.is_dir():
        pytest.skip(f"the published run {fixture['run']} is not in results/")
    an = comparisons.analyse(analysis.load_run(run), None, fixture["threshold"])
    assert len(an.step_cmp) == len(fixture["paired_steps"])
    for old in fixture["paired_steps"]:
        new = an.step_cmp[(old["op"], old["a"], old["b"])]
        assert (new.significant, new.n_a) == (old["significant"], old["n"]), old
        for name in ("ratio", "low", "high"):
            assert getattr(new, name) == pytest.approx(old[name], rel=1e-9, abs=1e-12), old
    for old in fixture["unpaired_steps"]:
        new = stats.compare(an.means[(old["a"], old["op"])], an.means[(old["b"], old["op"])])
        assert (new.significant, new.n_a, new.n_b) == (old["significant"], old["n_a"], old["n_b"])
        for name in ("ratio", "low", "high"):
            assert getattr(new, name) == pytest.approx(old[name], rel=1e-9, abs=1e-12), old


def test_critical_values_from_scipy_are_the_hand_counted_ones():
    fixture = published()
    assert {int(n): stats.critical_t(int(n)) for n in fixture["critical_t"]} == \
        {int(n): k for n, k in fixture["critical_t"].items()}
    sizes = [key for key in fixture["critical_u"]
             if all(int(v) in (1, 2, 3, 4, 5, 8, 13, 24, 25, 26, 40) for v in key.split(","))]
    assert {key: stats.critical_u(*map(int, key.split(","))) for key in sizes} == \
        {key: fixture["critical_u"][key] for key in sizes}


def test_p_values_from_scipy_are_the_hand_counted_ones():
    for case in published()["p_values"]:
        assert stats.mann_whitney_p(case["a"], case["b"]) == \
            pytest.approx(case["mann_whitney_p"], rel=1e-9, abs=1e-12)
        assert stats.wilcoxon_signed_rank_p(case["d"]) == \
            pytest.approx(case["wilcoxon_p"], rel=1e-9, abs=1e-12)


def test_the_normal_approximation_needs_no_scipy_and_is_close_to_exact():
    """The bench side's stopping rule (exact=False) uses the standard library only: its
    critical values are within one of the exact ones from 6 pairs on."""
    assert stats.critical_t(5, exact=False) == -1
    for n in range(6, stats.EXACT_LIMIT_PAIRS + 1):
        assert abs(stats.critical_t(n, exact=False) - stats.critical_t(n)) <= 1
