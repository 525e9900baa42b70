"""The metric search with injected runs and classifiers, over random histories.

The oracle is the history itself: each candidate's true behaviour (old, new, a third value, or
no answer). The search may skip, but never labels a release confidently against its truth, and
its answer is always an adjacent-or-skipped pair consistent with what it measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.search.classify import Ends, EndsVerdict, Label, Paired, Placement, deterministic
from jaxbisect.search.metric_search import search_metric
from jaxbisect.search.question import Run
from jaxbisect.search.rounds import steps_left

OLD, NEW = 100.0, 300.0
VALUES = {"old": OLD, "new": NEW, "third": 9000.0}


def runner(history: list[str], calls: list[tuple[int, int]]):
    def run_at(i: int, number: int) -> Run:
        calls.append((i, number))
        truth = history[i]
        if truth == "fail":
            return Run(release=str(i), number=number, status="failed", error="no wheel")
        return Run(release=str(i), number=number, status="ok", samples=(VALUES[truth],))
    return run_at


@st.composite
def histories(draw):
    """A change from old to new somewhere, with failures and third values sprinkled in the
    middle (the ends are old and new)."""
    n = draw(st.integers(2, 40))
    change = draw(st.integers(1, n - 1))
    history = ["old" if i < change else "new" for i in range(n)]
    for i in range(1, n - 1):
        history[i] = draw(st.sampled_from([history[i]] * 4 + ["fail", "third"]))
    return history


@settings(max_examples=300, deadline=None)
@given(histories())
def test_answers_are_consistent_and_never_wrong(history):
    calls: list = []
    s = search_metric(len(history), runner(history, calls), deterministic, noisy_metric=False)
    assert s.status == "found" and s.ends.direction == "regression"
    r = s.result
    assert history[r.last_old] == "old" and history[r.first_new] == "new"
    for i, placed in s.placed.items():
        label = placed.placement.label
        if label in (Label.OLD, Label.NEW):          # a confident label is the truth
            assert history[i] == label.value
        else:
            assert history[i] in ("fail", "third")
        assert placed.placement.third == (history[i] == "third")
    between = range(r.last_old + 1, r.first_new)
    assert all(s.placed[i].placement.label is Label.SKIP for i in between if i in s.placed)
    assert set(s.thirds) == {i for i in s.placed if history[i] == "third"}
    assert len(calls) == len(set(calls)), "a run was made twice"


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 64), st.data())
def test_clean_history_takes_at_most_log2_n_plus_2_probes(n, data):
    change = data.draw(st.integers(1, n - 1))
    history = ["old" if i < change else "new" for i in range(n)]
    calls: list = []
    s = search_metric(n, runner(history, calls), deterministic, noisy_metric=False)
    assert (s.result.last_old, s.result.first_new) == (change - 1, change)
    assert len(s.placed) <= steps_left(0, n - 1) + 2
    assert s.remeasures == 0


def test_a_fix_is_found_like_a_regression():
    history = ["new"] * 3 + ["old"] * 4  # bigger first: smaller later
    s = search_metric(7, runner(history, []), deterministic, noisy_metric=False)
    assert (s.status, s.ends.direction, s.result.first_new) == ("found", "fix", 3)


def test_alike_ends_stop_before_any_search():
    calls: list = []
    s = search_metric(9, runner(["old"] * 9, calls), deterministic, noisy_metric=False)
    assert s.status == "alike" and not s.ends.distinct and s.result is None
    assert calls == [(0, 1), (8, 1)]


def test_an_end_without_a_figure_is_unmeasurable():
    s = search_metric(5, runner(["fail", "old", "new", "new", "new"], []), deterministic,
                      noisy_metric=False)
    assert s.status == "unmeasurable" and "first release" in s.reason


def test_noisy_ends_are_measured_in_pairs_and_a_release_beside_both_ends():
    calls: list = []
    history = ["old", "old", "new", "new", "new"]
    s = search_metric(5, runner(history, calls), deterministic, noisy_metric=True,
                      paired=Paired(first_look=2, first_place=2))
    # Pairs alternate their order (old, new), (new, old): a steady drift falls on both alike.
    assert calls[:4] == [(0, 1), (4, 1), (4, 2), (0, 2)]
    assert s.status == "found" and (s.result.last_old, s.result.first_new) == (1, 2)
    # Each round of a release between the ends: an end, it, the other end, one after the other.
    middles = [k for k, (i, _) in enumerate(calls) if i not in (0, 4)]
    assert middles
    assert all({calls[k - 1][0], calls[k + 1][0]} == {0, 4} for k in middles)
    assert s.calibration["pairs"] == 2 and s.calibration["max_runs"] == 10
    assert len(calls) == len(set(calls)), "a run was made twice"
    assert s.runs == len(calls)


def test_noisy_ends_that_cannot_be_told_apart_are_undecided_never_alike():
    calls: list = []
    # Old and new 1.2x apart with one end twice as slow every other run: neither a change
    # nor within 10 % at the cap.
    def run_at(i, number):
        calls.append((i, number))
        load = 2.0 if (number + i) % 2 else 1.0
        return Run(str(i), number, "ok", ((1.2 if i else 1.0) * load,))

    s = search_metric(2, run_at, deterministic, noisy_metric=True, max_runs=6)
    assert s.status == "undecided" and s.result is None and not s.ends.distinct
    assert len(calls) == 12 and s.max_runs == 6


def test_noisy_ends_within_the_threshold_are_alike_by_an_equivalence_test():
    s = search_metric(2, lambda i, k: Run(str(i), k, "ok", (1.0 + 0.001 * ((i + k) % 3),)),
                      deterministic, noisy_metric=True)
    assert s.status == "alike" and "equivalence" in s.ends.reason


@dataclass(frozen=True)
class Scripted:
    """A paired test that decides the ends at once and places release i after needs[i]
    rounds (its truth), AMBIGUOUS before."""

    needs: dict
    change: int
    first_look: int = 1
    first_place: int = 1
    confidence: float = 0.99
    threshold: float = 0.1

    def ends(self, pairs):
        return EndsVerdict(Ends(True, "regression", 3.0, "scripted"), True, len(pairs), 0.1)

    def resolvable(self, spread, rounds):
        return 1.5

    def place(self, rounds, direction, machine=None, change=None, *, cap=None):
        index = int(rounds[0][1]) // 1000
        if len(rounds) < self.needs.get(index, 1):
            return Placement(Label.AMBIGUOUS, None, reason="overlaps both")
        return Placement(Label.OLD if index < self.change else Label.NEW, 0.999)


@settings(max_examples=200, deadline=None)
@given(st.integers(3, 30), st.data())
def test_unplaced_releases_get_more_rounds_up_to_the_cap(n, data):
    change = data.draw(st.integers(1, n - 1))
    needs = {i: data.draw(st.integers(1, 5)) for i in range(n)}
    max_runs = data.draw(st.integers(1, 4))
    calls: list = []

    def run_at(i, number):
        calls.append((i, number))
        return Run(release=str(i), number=number, status="ok", samples=(i * 1000 + 1,))

    s = search_metric(n, run_at, deterministic, noisy_metric=True, max_runs=max_runs,
                      paired=Scripted(needs, change))
    for i, placed in s.placed.items():
        if i in (0, n - 1):
            continue
        assert len(placed.runs) <= max_runs and len(placed.rounds) == len(placed.runs)
        if needs[i] <= max_runs:
            assert placed.placement.label.value == ("old" if i < change else "new")
            assert len(placed.runs) == needs[i]
        else:  # still unplaced at the cap: a skip with its figures, never a guess
            assert placed.placement.label is Label.SKIP
            assert "cannot be placed" in placed.placement.reason and placed.samples
    r = s.result
    assert s.placed[r.last_old].placement.label is Label.OLD or r.last_old == 0
    assert s.placed[r.first_new].placement.label is Label.NEW or r.first_new == n - 1
    assert len(calls) == len(set(calls)), "a run was made twice"


@dataclass(frozen=True)
class Hesitant:
    """A classifier that places each release by its figure (x001 old, x002 new)."""

    needs: dict
    learned: tuple = ()

    def ends(self) -> Ends:
        return Ends(True, "regression", 3.0, "scripted")

    def __call__(self, samples) -> Placement:
        value = samples[0]
        return Placement(Label.OLD if value % 1000 == 1 else Label.NEW, 0.999)

    def learn(self, samples, label):
        return Hesitant(self.needs, self.learned + ((samples[0], label),))


def test_the_model_learns_from_each_label():
    seen = []

    class Recording(Hesitant):
        def learn(self, samples, label):
            seen.append(label)
            return self

    history_change = 4
    search_metric(9, lambda i, k: Run(str(i), k, "ok", (i * 1000 + (1 if i < history_change
                                                                     else 2),)),
                  lambda o, n: Recording({}), noisy_metric=False)
    assert seen and set(seen) <= {Label.OLD, Label.NEW}


def test_a_noisy_end_without_a_figure_in_its_first_look_is_unmeasurable():
    calls: list = []

    def run_at(i, number):
        calls.append((i, number))
        if i == 0:
            return Run(str(i), number, "failed", error="no wheel")
        return Run(str(i), number, "ok", (1.0,))

    s = search_metric(5, run_at, deterministic, noisy_metric=True)
    assert s.status == "unmeasurable" and "first release" in s.reason and "no wheel" in s.reason
    assert len(calls) == 8  # four pairs: one failed run is not yet "cannot measure"
