"""A candidate placed against two ends that agree (placing.place_against_ends), against simple
oracles: a deterministic figure by plain arithmetic on the threshold, an output by equality, a
noisy one from exact rounds; and the interior and the sweep, which both place with it, placing
the same release the same way."""

from __future__ import annotations

import json
import math

from hypothesis import event, given, settings
from hypothesis import strategies as st

from jaxbisect.search import interior
from jaxbisect.search.classify import DEFAULT_THRESHOLD, Label, Paired, deterministic, matching
from jaxbisect.search.comparing import every_sample
from jaxbisect.search.placing import AgainstEnds, MetricSearch, Shown, place_against_ends, values_of
from jaxbisect.search.question import Run
from jaxbisect.search.rounds import Status
from jaxbisect.sweep import label_of, place_every

T = DEFAULT_THRESHOLD


def ok(*samples) -> Run:
    return Run(release="x", number=1, status="ok", samples=samples)


def failed(error: str) -> Run:
    return Run(release="x", number=1, status="failed", error=error)


def close(a: float, b: float) -> bool:
    return abs(a - b) <= T * max(abs(a), abs(b))


def oracle(old: float, new: float, seen: list[float]) -> AgainstEnds:
    """The ends agree; a candidate whose figures agree among themselves is the ends' behaviour
    when its middle figure is within the threshold of either end, else a third one."""
    if not seen or not close(min(seen), max(seen)):
        return AgainstEnds.CANNOT_TELL
    ordered = sorted(seen)
    middle = (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) / 2
    return AgainstEnds.OLD if close(middle, old) or close(middle, new) else AgainstEnds.DIFFERS


figures = st.floats(1.0, 1e9, allow_nan=False)
near = st.floats(-0.2, 0.2)  # a relative step: within the threshold or well past it


@st.composite
def alike_ends_and_candidate(draw):
    old = draw(figures)
    new = old * (1 + draw(st.floats(0, T / 2)))
    centre = draw(st.sampled_from([old, new, old * 3, old / 3])) * (1 + draw(near) * T * 5)
    # Figures that agree among themselves, or spread well past the threshold (cannot tell).
    spread = draw(st.sampled_from([1.0, 15.0]))
    seen = [centre * (1 + draw(near) * T * spread) for _ in range(draw(st.integers(0, 4)))]
    return old, new, seen


@settings(max_examples=400, deadline=None)
@given(alike_ends_and_candidate())
def test_a_deterministic_figure_is_placed_as_the_arithmetic_says(drawn):
    old, new, seen = drawn
    runs = [ok(v) for v in seen] or [failed("no wheel for this Python")]
    placement = place_against_ends(runs, tuple(seen), deterministic([old], [new]))
    assert AgainstEnds.of(placement) == oracle(old, new, seen)
    event(str(AgainstEnds.of(placement)))
    assert placement.label in (Label.OLD, Label.SKIP)  # never new, never ambiguous
    assert placement.third == (AgainstEnds.of(placement) is AgainstEnds.DIFFERS)
    if not seen:  # no figure: the failed run's error says why
        assert placement.reason == "no wheel for this Python"


@given(st.text(max_size=3), st.lists(st.text(max_size=3), max_size=4))
def test_an_error_is_the_ends_behaviour_only_when_it_is_theirs(theirs, seen):
    placement = place_against_ends([ok(v) for v in seen] or [failed("crashed")], tuple(seen),
                                   matching([theirs], [theirs]))
    expected = (AgainstEnds.CANNOT_TELL if not seen or len(set(seen)) > 1 else
                AgainstEnds.OLD if seen[0] == theirs else AgainstEnds.DIFFERS)
    assert AgainstEnds.of(placement) == expected


@settings(max_examples=200, deadline=None)
@given(st.floats(1e-3, 1e3), st.sampled_from([1.0, 1.01, 2.0, 5.0, 0.2]),
       st.integers(0, 12))
def test_noisy_rounds_without_noise_decide_after_the_first_look(end, factor, count):
    """Rounds (old end, it, new end) with the ends equal and the candidate ``factor`` times
    them: before the test's first look a skip; after it, the ends' behaviour within the
    threshold, a third one far beyond it."""
    test = Paired()
    rounds = [(end, end * factor, end)] * count
    placement = place_against_ends([ok(end * factor)] * count, (end * factor,), test, rounds)
    if count < test.first_look:
        assert AgainstEnds.of(placement) is AgainstEnds.CANNOT_TELL
        assert placement.reason == f"cannot be placed after {count} rounds"
    elif abs(math.log(factor)) < math.log1p(test.threshold) / 2:
        assert AgainstEnds.of(placement) is AgainstEnds.OLD
    else:
        assert AgainstEnds.of(placement) is AgainstEnds.DIFFERS


def test_noisy_rounds_that_cannot_tell_say_so_with_the_test_s_words():
    test = Paired()
    rounds = [(1.0, 1.09, 1.0), (1.0, 1.02, 1.0), (1.0, 1.16, 1.0), (1.0, 1.0, 1.0)]
    placement = place_against_ends([ok(1.0)] * 4, (1.0,), test, rounds)
    assert AgainstEnds.of(placement) is AgainstEnds.CANNOT_TELL
    assert placement.reason.startswith("cannot be placed after 4 rounds (it/the ends ")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([5.0, 5.02, 9.0, None, "disagree"]), min_size=1, max_size=6),
       st.sampled_from([5.0, 5.03]))
def test_the_sweep_and_the_interior_place_a_release_inside_alike_ends_alike(inside, last):
    """Ends 5.0 and ``last`` (alike), releases inside with a figure, none, or two figures that
    disagree: the interior's label and the sweep's say the same of each."""
    history = [5.0, *inside, last]
    n = len(history)

    def run_at(i: int, number: int) -> Run:
        v = history[i]
        if v is None:
            return failed("it raised")
        return ok(9.0 if v == "disagree" and number == 2 else 5.0 if v == "disagree" else v)

    placed, ends = place_every(n, run_at, deterministic, noisy_metric=False, batch=2,
                               max_runs=6, reduce=every_sample)
    assert ends is not None and not ends.distinct
    search = MetricSearch(Status.ALIKE, None, {i: placed[i] for i in (0, n - 1)}, ends)
    same = {Shown.LIKE_THE_ENDS: AgainstEnds.OLD, Shown.THIRD: AgainstEnds.DIFFERS,
            Label.AMBIGUOUS: AgainstEnds.CANNOT_TELL, Shown.NO_FIGURE: AgainstEnds.CANNOT_TELL}
    for i in range(1, n - 1):
        inside_ = interior.place_deterministic(search, i, run_at, deterministic, batch=2,
                                               reduce=every_sample)
        assert same[label_of(placed[i], ends)] is AgainstEnds.of(inside_.placement)
        assert len(placed[i].runs) == 2  # one batch: a release is never ambiguous here
        assert placed[i].values == inside_.values == values_of(inside_.runs, every_sample)


def test_the_words_are_the_json_s_strings():
    """Each vocabulary's members are the strings the reports hold (JSON and comparisons with
    documents read back)."""
    assert json.dumps([Status.FOUND, AgainstEnds.CANNOT_TELL, Shown.LIKE_THE_ENDS,
                       Label.OLD]) == '["found", "cannot tell", "like the ends", "old"]'
    assert {"found": 0}[Status.FOUND] == 0 and f"{Label.SKIP}" == "skip"
