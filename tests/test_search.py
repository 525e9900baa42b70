"""Property tests of the bisection against brute-force oracles (linear scans)."""

from __future__ import annotations

import math
from collections import Counter
from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.search.rounds import (
    Outcome,
    SearchResult,
    certain_in_pair,
    find_change,
    full_table,
    next_round,
    opening,
    prefetch_order,
    probe_limit,
    window,
)

OLD, NEW, SKIP = Outcome.OLD, Outcome.NEW, Outcome.SKIP


class Recorder:
    """A probe that answers from a list and fails the test if asked twice about an index."""

    def __init__(self, outcomes: list[Outcome]):
        self.outcomes = outcomes
        self.calls: Counter[int] = Counter()

    def __call__(self, i: int) -> Outcome:
        assert 0 <= i < len(self.outcomes), f"probed {i} outside 0..{len(self.outcomes) - 1}"
        self.calls[i] += 1
        assert self.calls[i] == 1, f"probed {i} twice"
        return self.outcomes[i]


def run(outcomes: list[Outcome], **kwargs) -> SearchResult:
    recorder = Recorder(outcomes)
    result = find_change(len(outcomes), recorder, **kwargs)
    assert list(result.probes) == list(recorder.calls)  # same indices, in call order
    assert result.skipped == tuple(i for i in result.probes if outcomes[i] is SKIP)
    return result


def oracle(outcomes: list[Outcome]) -> tuple[int, int]:
    """Last index that behaves like index 0 and first that does not, ignoring skips."""
    last_old = 0
    for i, outcome in enumerate(outcomes):
        if outcome is outcomes[0]:
            last_old = i
        elif outcome is not SKIP:
            return last_old, i
    raise AssertionError("no change in the sequence")


@cache
def needed(k: int) -> int:
    """Fewest probes that pin a change among k candidates at worst (brute force)."""
    return 0 if k == 1 else 1 + min(max(needed(a), needed(k - a)) for a in range(1, k))


def bound(n: int) -> int:
    return 2 + math.ceil(math.log2(n))


@st.composite
def monotone(draw, max_n: int = 40, skips: bool = True) -> list[Outcome]:
    """One change, from either side (index 0 may look NEW: a fix), interior skips allowed."""
    n = draw(st.integers(2, max_n))
    first_new = draw(st.integers(1, n - 1))
    before, after = draw(st.sampled_from([(OLD, NEW), (NEW, OLD)]))
    mask = draw(st.lists(st.booleans(), min_size=n - 2, max_size=n - 2)) if skips else []
    skipped = {i + 1 for i, skip in enumerate(mask) if skip}
    return [SKIP if i in skipped else before if i < first_new else after for i in range(n)]


ANY = st.sampled_from(list(Outcome))
MEASURED = st.sampled_from([OLD, NEW])


@given(monotone())
def test_agrees_with_the_oracle(outcomes):
    result = run(outcomes)
    last_old, first_new = oracle(outcomes)
    assert result.status == "found"
    assert (result.last_old, result.first_new) == (last_old, first_new)
    assert result.exact == (first_new == last_old + 1)
    assert set(range(last_old + 1, first_new)) <= set(result.skipped)
    assert result.probes[:2] == (0, len(outcomes) - 1)


@given(monotone(max_n=300, skips=False))
def test_probe_count_is_logarithmic_without_skips(outcomes):
    result = run(outcomes)
    assert len(result.probes) <= bound(len(outcomes))
    assert len(result.probes) <= 2 + needed(len(outcomes) - 1)  # the optimum, in fact
    assert result.exact and not result.skipped


@given(MEASURED, st.lists(ANY, max_size=20))
def test_alike_ends_stop_after_two_probes(end, interior):
    result = run([end, *interior, end])
    n = len(interior) + 2
    assert result == SearchResult("alike", None, None, False, (0, n - 1), (), ((0,), (n - 1,)))


@given(ANY, ANY, st.lists(ANY, max_size=20))
def test_a_skipped_end_is_unmeasurable(first, last, interior):
    if SKIP not in (first, last):
        first = SKIP
    result = run([first, *interior, last])
    assert result.status == "unmeasurable"
    assert result.probes == (0, len(interior) + 1)
    assert result.last_old is result.first_new is None and not result.exact


@given(st.data())
def test_non_monotone_ends_with_a_consistent_pair(data):
    first = data.draw(MEASURED)
    last = NEW if first is OLD else OLD
    outcomes = [first, *data.draw(st.lists(ANY, max_size=40)), last]
    result = run(outcomes)
    lo, hi = result.last_old, result.first_new
    assert result.status == "found"
    assert 0 <= lo < hi < len(outcomes)
    assert outcomes[lo] is first and outcomes[hi] is last
    assert {lo, hi} <= set(result.probes)
    assert set(range(lo + 1, hi)) <= set(result.skipped)
    assert result.exact == (hi == lo + 1)


@given(monotone(max_n=100, skips=False), st.data())
def test_prefers_a_cached_midpoint_that_costs_nothing(outcomes, data):
    free = data.draw(st.sets(st.integers(0, len(outcomes) - 1)))
    result = run(outcomes, cheap=free.__contains__)
    assert len(result.probes) <= bound(len(outcomes))
    # Replay: every probe keeps the worst case, and is a cached one whenever that was possible.
    lo, hi = 0, len(outcomes) - 1
    for i in result.probes[2:]:
        balanced = [
            j for j in range(lo + 1, hi) if needed(max(j - lo, hi - j)) == needed(hi - lo) - 1
        ]
        assert i in balanced
        if free.intersection(balanced):
            assert i in free
        lo, hi = (lo, i) if outcomes[i] is outcomes[-1] else (i, hi)


@given(monotone(skips=False), st.data())
def test_prefers_the_cheapest_midpoint_a_stored_one_first(outcomes, data):
    """Costs in ranks (the lab's: 2 stored, 1 installed, 0 a real probe): every probe keeps the
    worst case and, where a balanced candidate is cheaper than none, is one of the cheapest."""
    n = len(outcomes)
    cost = data.draw(st.lists(st.sampled_from([0, 1, 2]), min_size=n, max_size=n))
    result = run(outcomes, cheap=cost.__getitem__)
    assert len(result.probes) <= bound(n)
    lo, hi = 0, n - 1
    for i in result.probes[2:]:
        balanced = [
            j for j in range(lo + 1, hi) if needed(max(j - lo, hi - j)) == needed(hi - lo) - 1
        ]
        assert i in balanced
        assert cost[i] == max(cost[j] for j in balanced)
        lo, hi = (lo, i) if outcomes[i] is outcomes[-1] else (i, hi)


def test_a_rerun_probes_what_it_stored_whatever_was_installed_since():
    """The first search took the one release whose environment was there (1) over the tree's
    midpoint (3); everything else installed since is cheap too, but the rerun takes what it
    stored and measures nothing (any cheap one first, as before, probed 3 again)."""
    outcomes = [OLD] + [NEW] * 5
    first = run(outcomes, cheap=lambda i: i == 1)
    assert first.probes == (0, 5, 1)
    stored = set(first.probes)
    rerun = run(outcomes, cheap=lambda i: 2 if i in stored else 1)
    assert rerun.probes == first.probes


@given(monotone())
def test_on_step_reports_each_narrowing(outcomes):
    steps = []
    result = run(outcomes, on_step=lambda *step: steps.append(step))
    measured_inside = [i for i in result.probes[2:] if outcomes[i] is not SKIP]
    assert len(steps) == len(measured_inside)
    window = (0, len(outcomes) - 1)
    for lo, hi, left in steps:
        assert window[0] <= lo < hi <= window[1] and (lo, hi) != window
        assert left == math.ceil(math.log2(hi - lo))
        window = (lo, hi)
    assert window == (result.last_old, result.first_new)


def test_examples():
    def found(outcomes):
        r = run(outcomes)
        return r.last_old, r.first_new, r.exact

    assert found([OLD, SKIP, SKIP, OLD, NEW]) == (3, 4, True)
    assert found([OLD, SKIP, NEW, SKIP, NEW]) == (0, 2, False)
    assert found([OLD, SKIP, NEW]) == (0, 2, False)
    assert found([OLD, SKIP, SKIP, NEW]) == (0, 3, False)
    assert found([OLD, NEW, SKIP, SKIP, NEW, SKIP, NEW]) == (0, 1, True)
    assert found([NEW, NEW, NEW, OLD, OLD]) == (2, 3, True)  # a fix
    assert found([OLD, NEW]) == (0, 1, True)


def test_midpoints_are_stable_across_overlapping_ranges():
    # Global index 7 (1-based position 8) is the shallowest node in both windows.
    assert run([OLD] * 5 + [NEW] * 5).probes[2] == 7
    assert run([OLD] * 5 + [NEW] * 5, offset=3).probes[2] == 4  # global 7
    assert run([OLD] * 5 + [NEW] * 5, cheap={2}.__contains__).probes[2] == 2
    # Only index 8 keeps 16 candidates to 4 more probes: a cached 5 is not worth a step.
    assert run([OLD] * 5 + [NEW] * 12, cheap={5}.__contains__).probes[2] == 8


def test_a_skipped_midpoint_steps_to_its_neighbours():
    # 4 is skipped, then 3 (a tie goes to the lower); in 3..8 the pick is 7, then 6 and 5.
    result = run([OLD, OLD, OLD, OLD, SKIP, SKIP, SKIP, SKIP, NEW])
    assert result.probes == (0, 8, 4, 3, 7, 6, 5)
    assert (result.last_old, result.first_new, result.exact) == (3, 8, False)


@pytest.mark.parametrize("n", [-1, 0, 1])
def test_fewer_than_two_candidates_is_a_bug(n):
    with pytest.raises(ValueError):
        find_change(n, lambda i: OLD)


def test_a_probe_must_answer_an_outcome():
    with pytest.raises(TypeError):
        find_change(3, lambda i: "old")


# -- rounds of several probes at once (--jobs) ------------------------------------------------


class RoundRecorder(Recorder):
    """Answers whole rounds, checking each asks only for untried candidates inside the window."""

    def __init__(self, outcomes: list[Outcome], jobs: int):
        super().__init__(outcomes)
        self.jobs, self.seen, self.rounds = jobs, {}, []

    def round(self, indices: tuple[int, ...]) -> list[Outcome]:
        n = len(self.outcomes)
        assert 1 <= len(indices) <= self.jobs and list(indices) == sorted(set(indices))
        if {0, n - 1} <= set(self.seen):
            lo, hi = window(n, self.seen)
            assert all(lo < i < hi for i in indices), (indices, lo, hi)
        else:
            assert set(indices) <= {0, n - 1}
        self.rounds.append(indices)
        answers = [self(i) for i in indices]
        self.seen.update(zip(indices, answers))
        return answers


def run_rounds(outcomes: list[Outcome], jobs: int, **kwargs) -> SearchResult:
    recorder = RoundRecorder(outcomes, jobs)
    result = find_change(len(outcomes), probe_round=recorder.round, jobs=jobs, **kwargs)
    assert list(result.probes) == list(recorder.calls)
    assert result.rounds == tuple(recorder.rounds)
    assert [i for r in result.rounds for i in r] == list(result.probes)
    return result


@cache
def rounds_needed(width: int, jobs: int) -> int:
    """Fewest rounds of ``jobs`` probes that pin a change among ``width`` gaps at worst (brute
    force over the widest part a round can leave)."""
    if width <= 1:
        return 0
    return 1 + min(rounds_needed(part, jobs) for part in range(1, width)
                   if part * (jobs + 1) >= width)


JOBS = st.integers(1, 4)


@given(monotone(), JOBS)
def test_rounds_agree_with_the_oracle(outcomes, jobs):
    result = run_rounds(outcomes, jobs)
    assert (result.last_old, result.first_new) == oracle(outcomes)
    assert result.status == "found"
    assert set(range(result.last_old + 1, result.first_new)) <= set(result.skipped)


@given(monotone(max_n=300, skips=False), JOBS)
def test_rounds_are_as_few_as_the_jobs_allow(outcomes, jobs):
    result = run_rounds(outcomes, jobs)
    n = len(outcomes)
    probes, rounds = probe_limit(n, jobs)
    ends = 1 if jobs >= 2 else 2
    assert len(result.rounds) <= ends + rounds_needed(n - 1, jobs) == rounds
    assert len(result.probes) <= probes
    assert result.rounds[:ends] == (((0, n - 1),) if jobs >= 2 else ((0,), (n - 1,)))
    assert result.exact and not result.skipped


@given(monotone(max_n=100, skips=False), JOBS, st.data())
def test_cached_candidates_never_cost_a_round(outcomes, jobs, data):
    free = data.draw(st.sets(st.integers(0, len(outcomes) - 1)))
    result = run_rounds(outcomes, jobs, cheap=free.__contains__)
    assert len(result.rounds) <= probe_limit(len(outcomes), jobs)[1]


@given(st.data(), JOBS)
def test_rounds_on_any_sequence_end_with_a_consistent_pair(data, jobs):
    first = data.draw(MEASURED)
    last = NEW if first is OLD else OLD
    outcomes = [first, *data.draw(st.lists(ANY, max_size=40)), last]
    result = run_rounds(outcomes, jobs)
    lo, hi = result.last_old, result.first_new
    assert outcomes[lo] is first and outcomes[hi] is last
    assert set(range(lo + 1, hi)) <= set(result.skipped)


def test_one_job_is_the_one_probe_search():
    outcomes = [OLD] * 9 + [NEW] * 12
    assert run_rounds(outcomes, 1).probes == run(outcomes).probes
    assert all(len(r) == 1 for r in run_rounds(outcomes, 1).rounds)


def test_rounds_split_the_window_into_jobs_plus_one_parts():
    # 27 gaps, two jobs: 3 rounds of 9, 3 and 1 gaps; the ends together in the first round.
    result = run_rounds([OLD] * 14 + [NEW] * 14, 2)
    assert result.rounds[0] == (0, 27)
    assert [len(r) for r in result.rounds] == [2, 2, 2, 2]
    assert result.rounds[1] == (9, 18)
    assert (result.last_old, result.first_new) == (13, 14)


# -- what to install ahead ---------------------------------------------------------------------


@given(monotone(max_n=80, skips=False), JOBS)
def test_prefetch_holds_whatever_the_next_round_asks_for(outcomes, jobs):
    """Replaying a search: while each round runs, the prefetch names every candidate the next
    round then asks for, never one already probed or in the round itself."""
    n = len(outcomes)
    result = run_rounds(outcomes, jobs)
    seen: dict[int, Outcome] = {}
    for k, round_ in enumerate(result.rounds):
        ahead = prefetch_order(n, seen, round_, jobs=jobs)
        assert len(set(ahead)) == len(ahead)
        assert not set(ahead) & (set(seen) | set(round_))
        assert len(ahead) <= jobs * (jobs + 1)
        seen.update((i, outcomes[i]) for i in round_)
        if k + 1 < len(result.rounds):
            assert set(result.rounds[k + 1]) <= set(ahead)
        else:
            assert isinstance(next_round(n, seen, jobs=jobs), str)


def test_prefetch_examples():
    # 21 candidates (0.5.0 … 0.10.2): while 0 runs, the other end; while it runs, the first
    # midpoint (15: position 16, the shallowest node); while 15 runs, 7 (if 15 is new) or 19.
    assert prefetch_order(21, {}, (0,)) == (20,)
    assert prefetch_order(21, {0: OLD}, (20,)) == (15,)
    assert next_round(21, {0: OLD, 20: NEW}) == (15,)
    assert prefetch_order(21, {0: OLD, 20: NEW}, (15,)) == (7, 19)
    # Two jobs: while the ends run, the first round; while it runs, the next rounds, the
    # change's possible places from left to right.
    assert prefetch_order(21, {}, (0, 20), jobs=2) == next_round(21, {0: OLD, 20: NEW}, jobs=2)
    assert len(prefetch_order(28, {0: OLD, 27: NEW}, (9, 18), jobs=2)) == 6


@given(monotone(max_n=80, skips=False), JOBS)
def test_the_opening_holds_the_rounds_after_the_ends(outcomes, jobs):
    """While the ends run: the round after them, then every candidate the round after that
    asks for, whichever way the ends go (the old end may be either)."""
    n = len(outcomes)
    result = run_rounds(outcomes, jobs)
    ahead = opening(n, jobs=jobs)
    assert len(set(ahead)) == len(ahead) and not {0, n - 1} & set(ahead)
    later = [r for r in result.rounds if not set(r) <= {0, n - 1}]
    assert set(later[0] if later else ()) <= set(ahead[:len(later[0])] if later else ())
    if len(later) > 1:
        assert set(later[1]) <= set(ahead)


def test_opening_examples():
    # 29 CPU releases (0.4.30 … 0.10.2): the first midpoint, then both it could lead to.
    first = next_round(29, {0: OLD, 28: NEW})
    assert opening(29) == first + prefetch_order(29, {0: OLD, 28: NEW}, first)
    assert len(opening(29)) == 3
    assert opening(2) == ()  # nothing between the ends
    assert opening(3) == (1,)


def pairs_found(n: int, seen: dict, round_: tuple[int, ...]) -> set[tuple[int, int]]:
    """Oracle: every (last_old, first_new) a search that saw ``seen`` can still end with,
    over every sequence with one change and no skip that agrees with ``seen``."""
    found = set()
    for change in range(1, n):
        outcomes = [seen[0] if i < change else seen[n - 1] for i in range(n)]
        if any(outcomes[i] is not o for i, o in seen.items()):
            continue
        done = dict(seen)
        while isinstance(step := next_round(n, done), tuple):
            done.update((i, outcomes[i]) for i in step)
        found.add(window(n, done))
    return found


@given(monotone(max_n=60, skips=False), st.data())
def test_a_certain_candidate_is_in_every_pair_the_round_can_lead_to(outcomes, data):
    """Checked against the oracle at every round of a search: a candidate named certain is
    in the pair found whatever the round answers; the last round's one candidate always is."""
    n = len(outcomes)
    result = run(outcomes)
    seen: dict[int, Outcome] = {}
    for round_ in result.rounds:
        certain = certain_in_pair(n, seen, round_)
        if {0, n - 1} <= set(seen):
            pairs = pairs_found(n, seen, round_)
            assert all(i in pair for i in certain for pair in pairs)
            lo, hi = window(n, seen)
            if hi - lo == 2:
                assert certain == round_
        else:
            assert certain == ()
        seen.update((i, outcomes[i]) for i in round_)


def test_nothing_is_certain_while_the_window_is_wide_or_the_ends_alike():
    assert certain_in_pair(9, {0: OLD, 8: NEW}, (4,)) == ()
    assert certain_in_pair(9, {0: OLD, 8: NEW, 4: NEW, 2: OLD}, (3,)) == (3,)
    assert certain_in_pair(9, {0: OLD, 8: OLD}, (4,)) == ()
    assert certain_in_pair(9, {0: OLD, 8: NEW, 4: NEW, 2: OLD}, (1, 3)) == ()
    # a skipped neighbour widens the window: the one left between is still certain
    assert certain_in_pair(9, {0: OLD, 8: NEW, 4: NEW, 2: SKIP, 1: OLD}, (3,)) == (3,)


# -- which candidates the report measures in full ---------------------------------------------


@given(monotone())
def test_the_full_table_holds_the_ends_and_both_sides_of_the_change(outcomes):
    result = run(outcomes)
    n = len(outcomes)
    assert full_table(n, result) == tuple(sorted({0, n - 1, result.last_old,
                                                   result.first_new}))
    assert set(full_table(n, result)) <= set(result.probes)


def test_without_a_change_the_full_table_holds_the_ends():
    assert full_table(9, run([OLD] * 9)) == (0, 8)
    assert full_table(2, run([OLD, NEW])) == (0, 1)
    assert full_table(5, run([SKIP, OLD, OLD, OLD, NEW])) == (0, 4)
