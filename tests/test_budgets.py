"""Time limits from what was measured (jaxbisect/search/budgets.py): the pure policy against its
rules over random times, and the bisection's run_at wrapper with injected runs."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.search.budgets import (
    FIRST_RUN_LIMIT,
    HANGS,
    RUN_FACTOR,
    RUN_FLOOR,
    TEST_FACTOR,
    TEST_FLOOR,
    Deadline,
    EndsTimer,
    explain_limit,
    run_limit,
)
from jaxbisect.search.classify import deterministic, matching
from jaxbisect.search.metric_search import search_metric
from jaxbisect.search.question import Run

seconds = st.floats(0.01, 5000, allow_nan=False)
first_run = st.one_of(st.none(), st.just(math.inf), seconds)


@given(first_run, first_run, st.one_of(st.none(), seconds))
def test_run_limit_follows_its_rules(old, new, explicit):
    limit = run_limit(explicit, [old, new])
    finished = [s for s in (old, new) if s is not None and math.isfinite(s)]
    if explicit is not None:
        assert limit.seconds == explicit and limit.why == "--timeout"
    elif not finished:
        assert limit.seconds == FIRST_RUN_LIMIT
    elif None in (old, new):  # an end still to run once: never less than a first run's
        assert limit.seconds == max(FIRST_RUN_LIMIT, RUN_FACTOR * max(finished))
    else:
        assert limit.seconds == max(RUN_FLOOR, RUN_FACTOR * max(finished))
    assert limit.seconds > 0 and limit.why


@given(st.lists(seconds, max_size=10), st.one_of(st.none(), seconds))
def test_test_limit_is_a_multiple_of_the_release_own_runs(baseline, explicit):
    limit = explain_limit(explicit, baseline)
    if explicit is not None:
        assert limit.seconds == explicit
    elif baseline:
        ordered = sorted(baseline)
        assert limit.seconds >= TEST_FLOOR
        assert limit.seconds >= TEST_FACTOR * ordered[0]
        assert limit.seconds <= max(TEST_FLOOR, TEST_FACTOR * ordered[-1])


def fake(truth: dict[int, str], calls: list, seconds: float = 2.0):
    """measure(i, number, limit): "hang" runs past any limit; else a figure in ``seconds``."""
    def measure(i: int, number: int, limit: float) -> Run:
        calls.append((i, number, limit))
        if truth[i] == "hang":
            return Run(release=str(i), number=number, status="hung",
                       error=f"timed out after {limit:.0f} s", seconds=limit)
        value = {"old": 1.0, "new": 3.0}[truth[i]]
        return Run(release=str(i), number=number, status="ok", samples=(value,),
                   seconds=seconds)
    return measure


def test_a_hung_end_is_run_once_and_its_batch_stops():
    calls: list = []
    timer = EndsTimer(fake({0: "hang", 1: "new"}, calls), (0, 1), None)
    s = search_metric(2, timer, deterministic, noisy_metric=True, batch=5)
    assert s.status == "unmeasurable" and "hangs past 120 s" in s.reason
    assert [c[0] for c in calls].count(0) == 1          # not retried four more times
    assert calls[0][2] == FIRST_RUN_LIMIT
    # the other end's first run came after a hang: the first-run limit, then its own
    assert calls[1][2] == FIRST_RUN_LIMIT
    assert calls[2][2] == max(RUN_FLOOR, RUN_FACTOR * 2.0)


def test_later_runs_get_twenty_times_the_slower_end():
    calls: list = []
    truth = {0: "old", 1: "old", 2: "new", 3: "new"}
    timer = EndsTimer(fake(truth, calls, seconds=7.0), (0, 3), None)
    s = search_metric(4, timer, deterministic, noisy_metric=False)
    assert s.status == "found"
    assert [c[2] for c in calls[:2]] == [FIRST_RUN_LIMIT, max(FIRST_RUN_LIMIT, 140.0)]
    assert all(c[2] == 140.0 for c in calls[2:])
    assert timer.limit.seconds == 140.0


def test_an_explicit_timeout_wins():
    calls: list = []
    timer = EndsTimer(fake({0: "old", 1: "new"}, calls), (0, 1), 15.0)
    search_metric(2, timer, deterministic, noisy_metric=False)
    assert {c[2] for c in calls} == {15.0}


def test_under_the_error_metric_a_hang_is_a_value_the_search_places():
    calls: list = []
    truth = {0: "old", 1: "old", 2: "hang", 3: "hang", 4: "hang"}

    def measure(i, number, limit):
        if truth[i] == "old":
            calls.append(i)
            return Run(release=str(i), number=number, status="ok", samples=("no error",),
                       seconds=1.0)
        return fake(truth, calls)(i, number, limit)

    timer = EndsTimer(measure, (0, 4), None, hang_is_value=True)
    s = search_metric(5, timer, lambda o, n: matching(list(o), list(n), lambda a, b: a == b),
                      noisy_metric=False)
    assert s.status == "found" and (s.result.last_old, s.result.first_new) == (1, 2)
    assert s.placed[4].values == (HANGS,)
    assert "hangs past" in s.placed[4].runs[0].error


def test_a_deadline_is_spent_by_its_clock():
    now = [100.0]
    deadline = Deadline(10, clock=lambda: now[0])
    assert not deadline.spent and deadline.left == 10
    now[0] = 110.5
    assert deadline.spent and deadline.left < 0


def test_under_a_timing_metric_a_release_that_hung_is_beyond_both_ends():
    from jaxbisect.stages.releases import hangs_beyond_both_ends

    calls: list = []
    truth = {0: "old", 1: "old", 2: "hang", 3: "new", 4: "new"}
    timer = EndsTimer(fake(truth, calls), (0, 4), None)
    s = hangs_beyond_both_ends(search_metric(5, timer, deterministic, noisy_metric=False),
                               (0, 4))
    assert s.status == "found"
    assert 2 in s.placed  # the middle, probed first: a third behaviour, still a skip
    assert s.thirds == (2,) and s.placed[2].placement.third
    assert s.placed[2].placement.reason.startswith("hangs past 60 s")
    assert s.placed[2].outcome.value == "skip"
    assert [c[0] for c in calls].count(2) <= 1
