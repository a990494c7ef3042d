"""The ratio, its interval and its verdict (iomatrix.stats): properties that must hold for any data."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iomatrix import stats

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
