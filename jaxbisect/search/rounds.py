"""The bisection as a pure function over an ordered sequence of candidates.

It knows nothing about releases, environments or measurements: the caller maps an index to a
release, runs the probe and answers whether that candidate behaves the old way, the new way, or
could not be judged (skip). Modelled on cargo-bisect-rustc's ``least_satisfying``.

The search goes in rounds: ``next_round`` says, from the outcomes seen so far, which candidates
to probe next (up to ``jobs`` of them, probed at once, splitting the window into ``jobs + 1``
parts) or that the search is over. ``prefetch_order`` says whose environments are worth
building while a round runs (every candidate the next round could ask for), and
``full_table`` which candidates the report measures in full once the search has its answer.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


class Outcome(enum.Enum):
    OLD = "old"
    NEW = "new"
    SKIP = "skip"


class Status(enum.StrEnum):
    """A search's answer, as its report's JSON says it (the strings stay the JSON's)."""

    FOUND = "found"                        # the change is between two adjacent candidates
    ALIKE = "alike"                        # the ends behave the same
    UNMEASURABLE = "unmeasurable"          # an end gives no figure (a SKIP)
    # A noisy metric's ends neither told apart nor alike within the runs allowed.
    UNDECIDED = "undecided"
    # The ends alike or unmeasurable, every release failing the same way (the bisection's).
    FAILS_EVERYWHERE = "fails_everywhere"
    SWEPT = "swept"                        # not a search: every candidate visited (the sweep's)


@dataclass(frozen=True)
class SearchResult:
    status: Status  # FOUND, ALIKE or UNMEASURABLE from find_change; SWEPT from a visit of all
    last_old: int | None  # the last candidate known to behave like index 0 ...
    first_new: int | None  # ... and the first after it known to behave like index n-1
    exact: bool  # first_new == last_old + 1; else everything strictly between was skipped
    probes: tuple[int, ...]  # in the order probed, each once
    skipped: tuple[int, ...]
    rounds: tuple[tuple[int, ...], ...] = ()  # the probes, grouped as they were made together


# How little a probe of a candidate would cost: 0 (or False) a real probe, anything more a
# cheaper one, the higher the cheaper (the lab: 2 stored, 1 its environment installed).
Cheap = Callable[[int], int]


def steps_left(lo: int, hi: int) -> int:
    """Probes that still pin the change within (lo, hi] at worst, if none is skipped."""
    return (hi - lo - 1).bit_length()  # ceil(log2(hi - lo))


def rounds_left(lo: int, hi: int, jobs: int = 1) -> int:
    """Rounds of ``jobs`` probes that still pin the change within (lo, hi] at worst, if none is
    skipped: the smallest r with (jobs + 1) ** r >= hi - lo."""
    rounds, reach = 0, 1
    while reach < hi - lo:
        rounds, reach = rounds + 1, reach * (jobs + 1)
    return rounds


def end_rounds(jobs: int) -> int:
    """Rounds spent on the two ends: one when they can be probed together."""
    return 1 if jobs >= 2 else 2


def probe_limit(n: int, jobs: int = 1) -> tuple[int, int]:
    """At most (probes, rounds) a search over ``n`` candidates takes when nothing is skipped."""
    rounds = rounds_left(0, n - 1, jobs)
    return 2 + jobs * rounds, end_rounds(jobs) + rounds


def window(n: int, seen: Mapping[int, Outcome]) -> tuple[int, int]:
    """The current (lo, hi): the first candidate seen to behave like index n-1, and the last
    before it seen to behave like index 0. Everything probed strictly between was skipped."""
    new = seen[n - 1]
    hi = min(i for i, outcome in seen.items() if outcome is new)
    lo = max(i for i, outcome in seen.items() if outcome is seen[0] and i < hi)
    return lo, hi


def next_round(n: int, seen: Mapping[int, Outcome], *, jobs: int = 1,
               cheap: Cheap = lambda i: False, offset: int = 0) -> tuple[int, ...] | Status:
    """The candidates to probe next, in ascending order, or the search's status once it is over
    (FOUND, ALIKE or UNMEASURABLE).

    Probes both ends first (both, even when the first is a skip, so a report can name every
    unmeasurable end), then keeps ``lo`` on index 0's side and ``hi`` on index n-1's.
    ``cheap(i)`` says a probe of ``i`` would cost little (the higher, the less); such an
    index is preferred whenever it costs no extra worst-case round, the cheapest first (a
    stored answer before an installed environment: a rerun probes what it stored, whatever
    was installed since). ``offset`` is index 0's position in the full list of
    candidates: the default choice depends on it only, so searches over overlapping ranges of
    that list pick the same candidates and reuse each other's probes.
    """
    if n < 2:
        raise ValueError(f"find_change needs at least two candidates, got {n}")
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    ends = tuple(i for i in (0, n - 1) if i not in seen)
    if ends:
        return ends if jobs >= 2 else ends[:1]
    old, new = seen[0], seen[n - 1]
    if Outcome.SKIP in (old, new):
        return Status.UNMEASURABLE
    if old is new:
        return Status.ALIKE
    lo, hi = window(n, seen)
    return _split(lo, hi, seen, cheap, offset, jobs) or Status.FOUND


def _split(lo: int, hi: int, tried: Mapping[int, Outcome], cheap: Cheap, offset: int,
           jobs: int) -> tuple[int, ...]:
    untried = [i for i in range(lo + 1, hi) if i not in tried]
    if len(untried) <= jobs:
        return tuple(untried)
    # Each part a round leaves must still fit the rounds that the window needs, less one: at
    # most ``part`` candidates wide. Points are placed left to right, each leaving room for the
    # rest (with one job this is the range of midpoints that cost no extra worst-case step).
    part = (jobs + 1) ** (rounds_left(lo, hi, jobs) - 1)

    def stability(i: int) -> int:
        # Lowest set bit of the 1-based position in the full list: the shallowest node of the
        # implicit binary tree in the range, which other ranges would also pick.
        position = i + offset + 1
        return position & -position

    chosen: list[int] = []
    previous = lo
    for j in range(1, jobs + 1):
        if previous >= hi - 1:
            break
        allowed = range(max(previous + 1, hi - part * (jobs + 1 - j)),
                        min(hi - 1, previous + part) + 1)
        ideal = lo + j * (hi - lo) / (jobs + 1)
        costs = {i: cheap(i) for i in allowed if i not in tried}
        cheapest = max(costs.values(), default=0)
        if cheapest:
            pick = max((i for i, c in costs.items() if c == cheapest), key=stability)
        else:
            centre = max(allowed, key=stability) if allowed else round(ideal)
            # If the centre was skipped, step to its nearest untried neighbours, alternately
            # either side.
            left = [i for i in untried if i not in chosen and i > previous] or \
                [i for i in untried if i not in chosen]
            if not left:
                break
            pick = min(left, key=lambda i: (abs(i - centre), abs(i - ideal)))
        chosen.append(pick)
        previous = max(previous, pick)
    return tuple(sorted(chosen))


def prefetch_order(n: int, seen: Mapping[int, Outcome], round_: Sequence[int], *, jobs: int = 1,
                   cheap: Cheap = lambda i: False, offset: int = 0) -> tuple[int, ...]:
    """Every candidate the round after ``round_`` could ask for, one level ahead: for each way
    the round can come out with one change and no skip (the change before its first candidate,
    then after each in turn), the round that would follow, in that order, each index once."""
    reference = seen.get(0, Outcome.OLD)
    other = Outcome.NEW if reference is Outcome.OLD else Outcome.OLD
    points = sorted(round_)
    order: list[int] = []
    for leading in range(len(points) + 1):
        guess = dict(seen)
        guess.update((i, reference if k < leading else other) for k, i in enumerate(points))
        if 0 in guess and guess[0] is not reference:  # index 0 itself decides the reference
            continue
        after = next_round(n, guess, jobs=jobs, cheap=cheap, offset=offset)
        if isinstance(after, tuple):
            order += [i for i in after if i not in order and i not in seen and i not in points]
    return tuple(order)


def opening(n: int, *, jobs: int = 1, cheap: Cheap = lambda i: False,
            offset: int = 0) -> tuple[int, ...]:
    """The candidates worth installing while the two ends are measured: the round after them
    (were they to differ), then every candidate the round after that could ask for."""
    seen = {0: Outcome.OLD, n - 1: Outcome.NEW}
    first = next_round(n, seen, jobs=jobs, cheap=cheap, offset=offset)
    if not isinstance(first, tuple):
        return ()
    after = prefetch_order(n, seen, first, jobs=jobs, cheap=cheap, offset=offset)
    return first + tuple(i for i in after if i not in first)


def certain_in_pair(n: int, seen: Mapping[int, Outcome], round_: Sequence[int]) -> tuple[int, ...]:
    """The candidates of ``round_`` that the pair found will hold whatever the round answers
    (unless skipped): the last round's one candidate, the only one left between the two it
    lies between."""
    if len(round_) != 1 or 0 not in seen or n - 1 not in seen or seen[0] is seen[n - 1] \
            or Outcome.SKIP in (seen[0], seen[n - 1]):
        return ()
    lo, hi = window(n, seen)
    return tuple(round_) if [i for i in range(lo + 1, hi) if i not in seen] == list(round_) \
        else ()


def full_table(n: int, result: SearchResult) -> tuple[int, ...]:
    """The candidates the report measures in full (every variant at every n_outer): the two ends
    and the two candidates either side of the change."""
    return tuple(sorted({0, n - 1} | {i for i in (result.last_old, result.first_new)
                                      if i is not None}))


def find_change(
    n: int,
    probe: Callable[[int], Outcome] | None = None,
    *,
    probe_round: Callable[[tuple[int, ...]], Sequence[Outcome]] | None = None,
    jobs: int = 1,
    cheap: Cheap = lambda i: False,
    on_step: Callable[[int, int, int], None] | None = None,
    offset: int = 0,
) -> SearchResult:
    """Find where candidates ``0 .. n-1`` change from index 0's behaviour to index n-1's.

    Runs ``next_round`` until it says the search is over. ``probe(i)`` answers one candidate;
    ``probe_round(indices)`` (instead) answers a whole round, in that order, so a caller can
    probe them at once. Either direction works: if index 0 answers NEW, NEW is the old side.
    On a sequence that changes more than once it still ends with an adjacent pair consistent
    with its probes. ``on_step(lo, hi, steps_left)`` is called after every round that narrows
    the window (``steps_left`` counts single probes).
    """
    if (probe is None) == (probe_round is None):
        raise TypeError("give either probe or probe_round")
    if probe_round is None:
        def probe_round(indices: tuple[int, ...]) -> list[Outcome]:
            return [probe(i) for i in indices]

    seen: dict[int, Outcome] = {}  # insertion order is probe order
    rounds: list[tuple[int, ...]] = []
    while True:
        step = next_round(n, seen, jobs=jobs, cheap=cheap, offset=offset)
        if isinstance(step, Status):
            break
        before = window(n, seen) if len(rounds) >= end_rounds(jobs) else None
        outcomes = list(probe_round(step))
        if len(outcomes) != len(step):
            raise TypeError(f"probe_round({step}) answered {len(outcomes)} outcomes")
        for i, outcome in zip(step, outcomes):
            if not isinstance(outcome, Outcome):
                raise TypeError(f"probe({i}) returned {outcome!r}, not an Outcome")
            seen[i] = outcome
        rounds.append(step)
        if before is not None and on_step is not None:
            lo, hi = window(n, seen)
            if (lo, hi) != before:
                on_step(lo, hi, steps_left(lo, hi))

    lo, hi = window(n, seen) if step is Status.FOUND else (None, None)
    return SearchResult(step, lo, hi, step is Status.FOUND and hi == lo + 1, tuple(seen),
                        tuple(i for i in seen if seen[i] is Outcome.SKIP), tuple(rounds))
