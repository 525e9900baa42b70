"""The verdict arithmetic: scale-free, zero never reads as constant."""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro.verdict import (
    GROWS_AT,
    ITEMSIZES,
    size_problem,
    slope,
    stacked_buffer_bytes,
    verdict,
)

n_outers = st.lists(st.integers(2, 40), min_size=2, max_size=8, unique=True).map(
    lambda xs: [1, *xs])  # the report's own sets start at 1, which the fit leaves out


def exact_slope(points):
    """Brute-force oracle: the least-squares slope in exact rational arithmetic."""
    n = len(points)
    xs = [Fraction(x) for x, _ in points]
    ys = [Fraction(y) for _, y in points]
    mx, my = sum(xs) / n, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


@given(st.lists(st.integers(1, 40), min_size=2, max_size=8, unique=True),
       st.lists(st.integers(0, 10**12), min_size=8, max_size=8))
def test_slope_matches_exact_arithmetic(xs, ys):
    points = list(zip(xs, ys))
    assert slope(points) == pytest.approx(float(exact_slope(points)), rel=1e-9, abs=1e-3)


@given(n_outers, st.integers(1, 400), st.integers(1, 300), st.sampled_from([2, 4, 8]),
       st.integers(0, 50), st.booleans())
def test_verdict_is_scale_free(xs, n_inner, n_res, itemsize, fixed, bug):
    """A plan that keeps one stacked buffer per outer iteration grows; a fixed plan does
    not; whatever the array size (the same release at n_res 32 and 200 agrees)."""
    unit = stacked_buffer_bytes(n_inner, n_res, itemsize)
    array = n_res**3 * itemsize
    points = [(n, (n if bug else 2) * unit + fixed * array + 1) for n in xs]
    result = verdict(points, unit)
    assert result["status"] == ("grows" if bug else "constant")
    assert result["growth_per_outer"] == pytest.approx(1.0 if bug else 0.0, abs=1e-3)
    assert result["unit_bytes"] == unit


@given(n_outers, st.floats(0, 3), st.integers(10**5, 10**10))
def test_threshold(xs, growth, unit):
    points = [(n, round(growth * n * unit) + unit) for n in xs]
    result = verdict(points, unit)
    expected = "grows" if result["growth_per_outer"] >= GROWS_AT else "constant"
    assert result["status"] == expected
    assert result["growth_per_outer"] == pytest.approx(growth, abs=1e-3)


@given(n_outers, st.data())
def test_zero_or_missing_is_never_constant(xs, data):
    sizes = data.draw(st.lists(st.integers(1, 10**9), min_size=len(xs), max_size=len(xs)))
    holes = data.draw(st.lists(st.integers(0, len(xs) - 1), min_size=1, unique=True))
    for hole in holes:
        sizes[hole] = data.draw(st.sampled_from([0, None]))
    result = verdict(list(zip(xs, sizes)), 10**6)
    assert result["status"] == "unavailable"
    assert result["growth_per_outer"] is None
    assert result["reason"]


def test_all_zero_stats_are_unavailable():
    assert verdict([(1, 0), (2, 0), (5, 0)], 1000)["status"] == "unavailable"


def test_one_point_is_not_enough():
    assert verdict([(5, 123)], 1000)["status"] == "unavailable"
    assert verdict([(5, 123), (5, 456)], 1000)["status"] == "unavailable"
    # 1 and 2 alone cannot tell the bug (1, 2, 3 … buffers) from a fixed plan (1, 2, 2 …)
    assert verdict([(1, 1000), (2, 2000)], 1000)["status"] == "unavailable"


def test_report_figures_grow_by_one_buffer():
    """The upstream report's own GPU numbers (MB) at n_outer 5, 10, 15."""
    mb = 1024**2
    points = [(5, 15289.31 * mb), (10, 30548.10 * mb), (15, 45806.89 * mb)]
    result = verdict(points, stacked_buffer_bytes(100, 200, 4))
    assert result["status"] == "grows"
    assert result["growth_per_outer"] == pytest.approx(1.0, abs=0.01)


def test_one_outer_iteration_is_left_out_of_the_fit():
    """A constant plan holds one stacked buffer at n_outer 1 and two from 2 on (jax 0.5.0 on
    the CPU): with n_outer 1 and 3 only, a naive fit would call that a growth of 0.5."""
    unit = stacked_buffer_bytes(10, 16, 4)
    assert verdict([(1, unit), (3, 2 * unit), (6, 2 * unit)], unit)["status"] == "constant"
    assert verdict([(1, unit), (3, 3 * unit), (6, 6 * unit)], unit)["status"] == "grows"
    assert verdict([(1, unit), (3, 3 * unit)], unit)["status"] == "unavailable"


@given(n_outer=st.integers(1, 50), n_inner=st.integers(1, 10_000),
       n_res=st.integers(1, 10**8), dtype=st.sampled_from(sorted(ITEMSIZES)))
def test_sizes_xla_cannot_count_are_refused_with_the_largest_that_fits(n_outer, n_inner, n_res,
                                                                       dtype):
    """Issue 17, item 7: the oracle is the byte count itself."""
    need = n_outer * n_inner * n_res**3 * ITEMSIZES[dtype]
    problem = size_problem(n_outer, n_inner, n_res, dtype)
    assert (problem is None) == (need <= 2**63 - 1)
    if problem:
        largest = int(problem.split("use --n-res ")[1].split()[0])
        assert n_outer * n_inner * largest**3 * ITEMSIZES[dtype] <= 2**63 - 1
        assert n_outer * n_inner * (largest + 1)**3 * ITEMSIZES[dtype] > 2**63 - 1
