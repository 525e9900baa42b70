"""The metric-bisection classifiers (jaxbisect/search/classify.py).

Noisy metrics: simulated populations, counted over many trials with fixed seeds, with the
driver's usage modelled (ends of 10 samples, 5 more each when not distinct; a release of 5
samples, 5 more when AMBIGUOUS). Deterministic and matching metrics: property tests against
a brute-force oracle written from the spec. docs/classification.md quotes the figures.
"""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.search.classify import (
    DEFAULT_THRESHOLD,
    Ends,
    Label,
    Placement,
    deterministic,
    matching,
    noisy,
    rank_sum_p,
    vectors_close,
)

# --------------------------------------------------------------------------------------------
# Noise models: a multiplicative factor per sample.


def normal(r: random.Random) -> float:  # 10 % spread
    return max(1e-3, 1 + 0.10 * r.gauss(0, 1))


def lognormal(r: random.Random) -> float:  # heavy right tail, 15 % in log space
    return math.exp(0.15 * r.gauss(0, 1))


def cauchy(r: random.Random) -> float:  # Cauchy in log space (ratio of normals), scale 5 %
    z = 0.05 * r.gauss(0, 1) / (abs(r.gauss(0, 1)) + 1e-12)
    return math.exp(max(-20.0, min(20.0, z)))


def outliers(r: random.Random) -> float:  # 5 % of samples 5-30x slower
    f = 1 + 0.05 * r.gauss(0, 1)
    return f * r.uniform(5, 30) if r.random() < 0.05 else f


def load(r: random.Random) -> float:  # half the samples slowed by another process (1 + Exp)
    f = math.exp(0.03 * r.gauss(0, 1))
    return f * (1 + r.expovariate(2.0)) if r.random() < 0.5 else f


def pareto_load(r: random.Random) -> float:  # 30 % of samples slowed by a Pareto(1.5) factor
    f = math.exp(0.03 * r.gauss(0, 1))
    return f * r.paretovariate(1.5) if r.random() < 0.3 else f


NOISES = {
    "normal": normal,
    "lognormal": lognormal,
    "cauchy": cauchy,
    "outliers": outliers,
    "load": load,
    "pareto_load": pareto_load,
}


def driver_trial(r: random.Random, noise, ratio: float) -> tuple[Ends, Label, Placement]:
    """The driver's loop: ends of 10 samples (+5 each if not distinct), a release drawn from
    either end's population with 5 samples (+5 if AMBIGUOUS)."""
    old_loc, new_loc = 0.1, 0.1 * ratio
    old = [old_loc * noise(r) for _ in range(10)]
    new = [new_loc * noise(r) for _ in range(10)]
    c = noisy(old, new)
    if not c.ends().distinct:
        old += [old_loc * noise(r) for _ in range(5)]
        new += [new_loc * noise(r) for _ in range(5)]
        c = noisy(old, new)
    truth = r.choice([Label.OLD, Label.NEW])
    loc = old_loc if truth is Label.OLD else new_loc
    samples = [loc * noise(r) for _ in range(5)]
    placed = c(samples)
    if placed.label is Label.AMBIGUOUS:
        samples += [loc * noise(r) for _ in range(5)]
        placed = c(samples)
    return c.ends(), truth, placed


def outcome(ends: Ends, truth: Label, placed: Placement) -> str:
    if not ends.distinct:
        return "ends not distinct"
    if placed.label is truth:
        return "right"
    if placed.label in (Label.OLD, Label.NEW):
        return "wrong"
    return "third" if placed.third else "ambiguous"


@pytest.mark.parametrize("name", NOISES)
def test_three_fold_apart_releases_get_the_right_label(name):
    r = random.Random(f"sep-{name}")
    trials = 2000
    counts = Counter()
    for k in range(trials):
        ratio = 3.0 if k % 2 else 1 / 3  # regressions and fixes alike
        counts[outcome(*driver_trial(r, NOISES[name], ratio))] += 1
    assert counts["right"] >= 0.99 * trials, counts
    assert counts["wrong"] <= 0.005 * trials, counts


@pytest.mark.parametrize("ratio", [1.0, 1.03])
@pytest.mark.parametrize("name", NOISES)
def test_overlapping_ends_are_not_distinct_and_releases_not_labelled(name, ratio):
    r = random.Random(f"overlap-{name}-{ratio}")
    trials = 1000
    distinct = confident = 0
    for _ in range(trials):
        ends, _, placed = driver_trial(r, NOISES[name], ratio)
        distinct += ends.distinct
        confident += placed.label in (Label.OLD, Label.NEW)
    assert distinct <= 0.01 * trials
    assert confident <= 0.01 * trials


def test_a_release_thirty_times_slower_is_a_third_behaviour():
    r = random.Random(7)
    c = noisy([0.1 * normal(r) for _ in range(10)], [0.3 * normal(r) for _ in range(10)])
    placed = c([9.0 * normal(r) for _ in range(5)])
    assert placed.label is Label.SKIP and placed.third
    fast = c([0.1 / 30 * normal(r) for _ in range(5)])
    assert fast.label is Label.SKIP and fast.third
    # but a release somewhat beyond the slow end is still the slow end's behaviour
    beyond = c([0.45 * normal(r) for _ in range(5)])
    assert beyond.label is Label.NEW and not beyond.third


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    ratio=st.floats(1.5, 20.0),
    spread=st.floats(0.0, 0.1),
    n_old=st.integers(5, 12),
    n_new=st.integers(5, 12),
)
def test_direction_is_neutral(seed, ratio, spread, n_old, n_new):
    """The same two sample sets, given as (old, new) and as (new, old): the same verdict on
    distinctness, opposite directions, inverse ratios, and mirrored placements."""
    r = random.Random(seed)
    fast = [math.exp(spread * r.gauss(0, 1)) for _ in range(n_old)]
    slow = [ratio * math.exp(spread * r.gauss(0, 1)) for _ in range(n_new)]
    reg, fix = noisy(fast, slow), noisy(slow, fast)
    a, b = reg.ends(), fix.ends()
    assert a.distinct == b.distinct
    if a.distinct:
        assert (a.direction, b.direction) == ("regression", "fix")
    else:
        assert a.direction is b.direction is None
    assert a.ratio == pytest.approx(1 / b.ratio)
    swap = {Label.OLD: Label.NEW, Label.NEW: Label.OLD}
    for loc in (1.0, ratio, math.sqrt(ratio), 30 * ratio):
        release = [loc * math.exp(spread * r.gauss(0, 1)) for _ in range(5)]
        pa, pb = reg(release), fix(release)
        assert swap.get(pa.label, pa.label) is pb.label
        assert pa.third == pb.third
        assert pa.confidence == pytest.approx(pb.confidence)


def p_old(placed: Placement) -> float:
    if placed.label is Label.OLD:
        return placed.confidence
    if placed.label is Label.NEW:
        return 1 - placed.confidence
    return float(placed.reason.split("P(old)=")[1].split()[0])


def test_learning_moves_a_borderline_release_the_expected_way():
    r = random.Random(11)

    def draw(loc, n=5):
        return [loc * math.exp(0.05 * r.gauss(0, 1)) for _ in range(n)]

    c = noisy(draw(1.0, 10), draw(3.0, 10))
    borderline = draw(1.55)
    before = c(borderline)
    assert before.label is Label.AMBIGUOUS
    # Eight releases labelled OLD that run 1.5x the old end: the old behaviour reaches
    # further than the ends alone showed, and the borderline release belongs with it ...
    taught = c
    for _ in range(8):
        taught = taught.learn(draw(1.5), Label.OLD)
    after = taught(borderline)
    assert after.label is Label.OLD and after.confidence >= 0.99
    # ... and taught that the new behaviour starts at 2x, it leans the other way.
    other = c
    for _ in range(8):
        other = other.learn(draw(2.0), Label.NEW)
    assert p_old(other(borderline)) < p_old(before)
    assert c(borderline) == before  # classifiers are frozen: learning made new ones
    assert taught.ends() == c.ends()  # the ends' verdict is the ends' own
    with pytest.raises(ValueError):
        c.learn(borderline, Label.SKIP)


def test_noisy_edge_cases():
    c = noisy([1.0, 1.1, 0.9, 1.05, 0.95], [3.0, 3.1, 2.9, 3.05, 2.95])
    assert c([]).label is Label.SKIP and not c([]).third
    assert c([0.0, -1.0, float("nan")]).label is Label.SKIP  # nothing usable
    assert c([1.0, 0.0, 1.02]).label is Label.OLD  # the unusable sample is dropped
    one = noisy([1.0], [3.0, 3.1])
    assert not one.ends().distinct and one([1.0]).label is Label.AMBIGUOUS


def test_rank_sum_p_exact_values():
    assert rank_sum_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert rank_sum_p([1, 2, 3, 4, 6], [5, 7, 8, 9, 10]) == pytest.approx(4 / 252)
    assert rank_sum_p([1, 2, 3], [1, 2, 3]) == 1.0
    assert rank_sum_p([], [1.0]) == 1.0


@settings(max_examples=60, deadline=None)
@given(
    xs=st.lists(st.integers(0, 6), min_size=1, max_size=5),
    ys=st.lists(st.integers(0, 6), min_size=1, max_size=5),
)
def test_rank_sum_p_matches_enumeration(xs, ys):
    """Oracle: every way of splitting the pooled values, mid-ranks for ties."""
    from itertools import combinations

    pooled = sorted(xs + ys)
    rank = {v: (pooled.index(v) + 1 + len(pooled) - pooled[::-1].index(v)) / 2 for v in pooled}
    ranks = [rank[v] for v in pooled]
    mean = len(xs) * (len(pooled) + 1) / 2
    obs = abs(sum(rank[v] for v in xs) - mean)
    splits = list(combinations(range(len(pooled)), len(xs)))
    extreme = sum(abs(sum(ranks[i] for i in c) - mean) >= obs - 1e-9 for c in splits)
    assert rank_sum_p(xs, ys) == pytest.approx(extreme / len(splits))


# --------------------------------------------------------------------------------------------
# Deterministic scalars against an oracle written from the spec


def _close(a, b, t):
    return abs(a - b) <= t * max(abs(a), abs(b))


def _oracle_value(vals, t):
    if not vals or any(math.isnan(v) for v in vals) or not _close(min(vals), max(vals), t):
        return None
    return sorted(vals)[len(vals) // 2] if len(vals) % 2 else None  # odd lists only below


def oracle_deterministic(old, new, release, t):
    o, n, v = (_oracle_value(x, t) for x in (old, new, release))
    distinct = o is not None and n is not None and not _close(o, n, t)
    direction = ("regression" if n > o else "fix") if distinct else None
    if v is None:
        return distinct, direction, Label.SKIP, False
    m_old = o is not None and _close(v, o, t)
    m_new = n is not None and _close(v, n, t)
    if m_old and m_new:
        return distinct, direction, Label.AMBIGUOUS, False
    if m_old or m_new:
        return distinct, direction, Label.OLD if m_old else Label.NEW, False
    return distinct, direction, Label.SKIP, o is not None and n is not None


magnitudes = st.one_of(
    st.floats(-1e12, 1e12, allow_nan=False), st.sampled_from([0.0, 1e6, 1.005e6, 1.02e6])
)
# odd-length lists so the oracle's median is an element; values near each other or not
value_lists = st.lists(magnitudes, min_size=1, max_size=3).filter(lambda xs: len(xs) % 2 == 1)


@settings(max_examples=300, deadline=None)
@given(
    old=value_lists,
    new=value_lists,
    release=st.one_of(value_lists, st.just([])),
    t=st.sampled_from([0.0, DEFAULT_THRESHOLD, 0.1]),
)
def test_deterministic_matches_oracle(old, new, release, t):
    c = deterministic(old, new, threshold=t)
    distinct, direction, label, third = oracle_deterministic(old, new, release, t)
    e = c.ends()
    assert (e.distinct, e.direction) == (distinct, direction)
    p = c(release)
    assert (p.label, p.third, p.confidence) == (label, third, None)
    assert c.learn(release or [1.0], Label.NEW) is c  # nothing to learn


@given(
    base=st.floats(1.0, 1e12),
    factor=st.one_of(st.floats(1.02, 1.97), st.floats(2.05, 100.0), st.floats(0.0, 0.98)),
)
def test_deterministic_between_or_outside_is_a_third_behaviour(base, factor):
    """Ends at 1x and 2x: a value matching neither, between them or not, is a third one."""
    p = deterministic([base], [2 * base])([base * factor])
    assert p.label is Label.SKIP and p.third


def test_deterministic_examples():
    c = deterministic([30.52e6], [15320e6])
    assert c.ends() == Ends(True, "regression", pytest.approx(15320 / 30.52), c.ends().reason)
    assert c([30.6e6]).label is Label.OLD
    assert c([15300e6, 15300e6]).label is Label.NEW
    assert c([7000e6]).third  # between the ends: a third behaviour
    assert c([]).label is Label.SKIP and not c([]).third
    assert not deterministic([100.0], [100.5]).ends().distinct
    assert deterministic([0.0], [5.0]).ends().ratio is None


# --------------------------------------------------------------------------------------------
# Matching (non-ordered) values


def close_oracle(a, b, rtol=1e-5, atol=1e-8):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
        elif math.isinf(x) or math.isinf(y):  # an infinity equals only itself
            if x != y:
                return False
        elif abs(x - y) > atol + rtol * max(abs(x), abs(y)):
            return False
    return True


floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1.0, 1.000001])
)
vectors = st.lists(floats, max_size=4)


@settings(max_examples=300, deadline=None)
@given(a=vectors, b=vectors)
def test_vectors_close_matches_oracle_and_is_symmetric(a, b):
    same = vectors_close()
    assert same(a, b) == close_oracle(a, b) == same(b, a)
    assert same(a, a)  # NaN equals NaN at the same position


def test_vectors_close_examples():
    same = vectors_close(rtol=1e-3)
    assert same([1.0, float("nan")], [1.0005, float("nan")])
    assert not same([1.0], [1.0, 1.0])
    assert not same([1.0], [1.01])
    assert not same([float("inf")], [1e308])


@settings(max_examples=200, deadline=None)
@given(
    old=st.lists(vectors, min_size=0, max_size=2),
    new=st.lists(vectors, min_size=0, max_size=2),
    release=st.lists(vectors, min_size=0, max_size=3),
)
def test_matching_matches_oracle(old, new, release):
    same = vectors_close()
    c = matching(old, new, same)
    distinct = bool(old) and bool(new) and not same(old[0], new[0])
    e = c.ends()
    assert (e.distinct, e.direction, e.ratio) == (distinct, "changed" if distinct else None, None)
    p = c(release)
    if not release or not all(same(release[0], s) for s in release):
        expected = (Label.SKIP, False)
    else:
        m_old = bool(old) and same(release[0], old[0])
        m_new = bool(new) and same(release[0], new[0])
        if m_old and m_new:
            expected = (Label.AMBIGUOUS, False)
        elif m_old or m_new:
            expected = (Label.OLD if m_old else Label.NEW, False)
        else:
            expected = (Label.SKIP, bool(old) and bool(new))
    assert (p.label, p.third) == expected
    assert p.confidence is None


def test_matching_error_strings_use_equality():
    c = matching(["ok"], ["RESOURCE_EXHAUSTED: out of memory"])
    assert c.ends().distinct and c.ends().direction == "changed"
    assert c(["ok"]).label is Label.OLD
    assert c(["RESOURCE_EXHAUSTED: out of memory"]).label is Label.NEW
    p = c(["INTERNAL: something else"])
    assert p.label is Label.SKIP and p.third
    assert not matching(["x"], ["x"]).ends().distinct
