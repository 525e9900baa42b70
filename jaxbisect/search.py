"""The bisection as a pure function over an ordered sequence of candidates.

It knows nothing about releases, environments or measurements: the caller maps an index to a
release, runs the probe and answers whether that candidate behaves the old way, the new way, or
could not be judged (skip). Modelled on cargo-bisect-rustc's ``least_satisfying``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass


class Outcome(enum.Enum):
    OLD = "old"
    NEW = "new"
    SKIP = "skip"


@dataclass(frozen=True)
class SearchResult:
    status: str  # "found" | "alike" (the ends behave the same) | "unmeasurable" (an end is SKIP)
    last_old: int | None  # the last candidate known to behave like index 0 ...
    first_new: int | None  # ... and the first after it known to behave like index n-1
    exact: bool  # first_new == last_old + 1; else everything strictly between was skipped
    probes: tuple[int, ...]  # in the order probed, each once
    skipped: tuple[int, ...]


def steps_left(lo: int, hi: int) -> int:
    """Probes that still pin the change within (lo, hi] at worst, if none is skipped."""
    return (hi - lo - 1).bit_length()  # ceil(log2(hi - lo))


def find_change(
    n: int,
    probe: Callable[[int], Outcome],
    *,
    cached: Callable[[int], bool] = lambda i: False,
    on_step: Callable[[int, int, int], None] | None = None,
    offset: int = 0,
) -> SearchResult:
    """Find where candidates ``0 .. n-1`` change from index 0's behaviour to index n-1's.

    Probes both ends first (both, even when the first is a skip, so a report can name every
    unmeasurable end), then bisects keeping ``lo`` on index 0's side and ``hi`` on index n-1's.
    Either direction works: if index 0 answers NEW, NEW is the old side. On a sequence that
    changes more than once it still ends with an adjacent pair consistent with its probes.

    ``cached(i)`` says a probe of ``i`` would be free; such an index is preferred whenever it costs
    no extra worst-case step. ``offset`` is index 0's position in the full list of candidates:
    the default midpoint choice depends on it only, so bisections over overlapping ranges of that
    list pick the same candidates and reuse each other's probes.
    ``on_step(lo, hi, steps_left)`` is called after every probe that narrows the window.
    """
    if n < 2:
        raise ValueError(f"find_change needs at least two candidates, got {n}")
    seen: dict[int, Outcome] = {}  # insertion order is probe order

    def look(i: int) -> Outcome:
        if i not in seen:
            outcome = probe(i)
            if not isinstance(outcome, Outcome):
                raise TypeError(f"probe({i}) returned {outcome!r}, not an Outcome")
            seen[i] = outcome
        return seen[i]

    def result(status: str, lo: int | None = None, hi: int | None = None) -> SearchResult:
        probes = tuple(seen)
        return SearchResult(
            status=status,
            last_old=lo,
            first_new=hi,
            exact=lo is not None and hi == lo + 1,
            probes=probes,
            skipped=tuple(i for i in probes if seen[i] is Outcome.SKIP),
        )

    old, new = look(0), look(n - 1)
    if Outcome.SKIP in (old, new):
        return result("unmeasurable")
    if old is new:
        return result("alike")

    lo, hi = 0, n - 1
    while hi - lo > 1:
        i = _next_probe(lo, hi, seen, cached, offset)
        if i is None:  # everything strictly between lo and hi was skipped
            break
        outcome = look(i)
        if outcome is Outcome.SKIP:
            continue
        if outcome is old:
            lo = i
        else:
            hi = i
        if on_step is not None:
            on_step(lo, hi, steps_left(lo, hi))
    return result("found", lo, hi)


def _next_probe(
    lo: int, hi: int, tried: dict[int, Outcome], cached: Callable[[int], bool], offset: int
) -> int | None:
    untried = [i for i in range(lo + 1, hi) if i not in tried]
    if not untried:
        return None
    # A probe at i leaves i - lo or hi - i candidates; it costs no extra worst-case step as long
    # as both fit in half the power of two that the current window needs.
    half = 1 << (steps_left(lo, hi) - 1)
    balanced = range(max(lo + 1, hi - half), min(hi - 1, lo + half) + 1)

    def stability(i: int) -> int:
        # Lowest set bit of the 1-based position in the full list: the shallowest node of the
        # implicit binary tree in the range, which other ranges would also pick.
        position = i + offset + 1
        return position & -position

    free = [i for i in balanced if i not in tried and cached(i)]
    if free:
        return max(free, key=stability)
    centre = max(balanced, key=stability)
    # If the centre was skipped, step to its nearest untried neighbours, alternately either side.
    return min(untried, key=lambda i: (abs(i - centre), abs(2 * i - lo - hi)))
