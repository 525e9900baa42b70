"""Ends alike, the interior checked: what a sweep would answer, where it is cheap.

Bisection sees only the ends when they agree: a change made and undone inside the range is
invisible to it. Where measuring the releases inside costs little (an estimate from the ends'
own run times, within ``--interior-budget``), each one is measured and placed against the
ends the way the search places a probe: a deterministic figure by the classifier the search
begins with (learned from the two ends), a noisy one by the paired test on rounds (old end,
it, new end). A release is ``old`` (it behaves as the ends), ``differs``,
or ``cannot tell`` (no figure, or not placed within the runs allowed): never guessed. The
changes are read off in release order: each one came between the last release like the ends
and the first unlike them, and went between the last unlike and the next like them again.
Over the budget nothing is measured and the report keeps the sweep's command.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from jaxbisect.search.classify import Label, Paired
from jaxbisect.search.placing import (
    AgainstEnds,
    MakeClassifier,
    MetricSearch,
    Placed,
    Reduce,
    RunAt,
    Say,
    beyond_if_hung,
    place_against_ends,
    run_figure,
    values_of,
)


@dataclass(frozen=True)
class Change:
    """One change inside the range: it came at ``came`` (the last release like the ends, the
    first unlike them) and went at ``went`` (the last unlike, the first like them again);
    ``exact`` where no release between either pair could not be told."""

    came: tuple[int, int]
    went: tuple[int, int]
    releases: tuple[int, ...]     # the releases unlike the ends
    exact: bool


@dataclass(frozen=True)
class Interior:
    """The releases inside a range whose ends agree: measured (within the budget) or not."""

    indices: tuple[int, ...]      # the candidates inside, in release order
    budget: float
    estimate: float               # seconds measuring those not yet measured would take
    per_release: float            # one release's share of it, from the ends' own runs
    measured: bool
    placed: dict = field(default_factory=dict)   # index -> Placed (the runs, the placement)
    labels: dict = field(default_factory=dict)   # index -> AgainstEnds
    changes: tuple[Change, ...] = ()

    @property
    def came_and_went(self) -> bool:
        return bool(self.changes)


def per_release_seconds(search: MetricSearch, noisy: bool, test: Paired) -> float:
    """What measuring one release inside costs, from the ends' own runs: as much as an end
    took (a deterministic metric's batch); a noisy metric's rounds (old end, it, new end)
    three runs each, ``first_place`` rounds at least."""
    n = max(search.placed) + 1
    runs = [r for i in (0, n - 1) for r in search.placed[i].runs]
    if not runs:
        return 0.0
    mean = sum(r.seconds for r in runs) / len(runs)
    if noisy:
        return 3 * mean * test.first_place
    return mean * len(runs) / 2


def look_inside(search: MetricSearch, run_at: RunAt, make_classifier: MakeClassifier, *,
                noisy: bool, test: Paired, batch: int, max_runs: int, reduce: Reduce,
                budget: float, say: Say, noun: str = "release", numbers: dict | None = None,
                hangs_beyond: bool = False) -> Interior | None:
    """``search`` (ends alike) with every candidate inside measured and placed, where the
    estimate from the ends' own run times is within ``budget`` seconds; None where there is
    no candidate inside. Candidates already measured (a yanked release asked for) are not run
    again. ``noun``: what the candidates are (release, commit), for the messages; ``numbers``
    and ``hangs_beyond``: see place_each."""
    n = max(search.placed) + 1
    inside = tuple(range(1, n - 1))
    if not inside:
        return None
    per = per_release_seconds(search, noisy, test)
    todo = [i for i in inside if i not in search.placed]
    estimate = per * len(todo)
    these = f"the {len(todo)} {noun}{'' if len(todo) == 1 else 's'} inside"
    if budget <= 0:  # --interior-budget 0: off
        say(f"the ends agree; {these} {'is' if len(todo) == 1 else 'are'} not measured "
            f"(--interior-budget 0)")
        return Interior(inside, budget, estimate, per, measured=False)
    if estimate > budget:
        say(f"the ends agree; {these} would take about "
            f"{estimate:.0f} s (the ends' own run times), over the interior budget of "
            f"{budget:.0f} s (--interior-budget): not measured")
        return Interior(inside, budget, estimate, per, measured=False)
    say(f"the ends agree; measuring {these} (about {estimate:.0f} s "
        f"from the ends' own run times, within --interior-budget {budget:.0f} s)")
    placed = {i: search.placed[i] for i in inside if i in search.placed}
    placed.update(place_each(search, todo, run_at, make_classifier, noisy=noisy, test=test,
                             batch=batch, max_runs=max_runs, reduce=reduce, say=say,
                             why="measuring it against both ends", numbers=numbers,
                             hangs_beyond=hangs_beyond))
    labels = {i: AgainstEnds.of(placed[i].placement) for i in inside}
    return Interior(inside, budget, estimate, per, measured=True, placed=placed, labels=labels,
                    changes=changes_of(labels, n))


def measure_asked(search: MetricSearch, indices: Sequence[int], run_at: RunAt,
                  make_classifier: MakeClassifier, *, noisy: bool, test: Paired, batch: int,
                  max_runs: int, reduce: Reduce, say: Say, numbers: dict | None = None,
                  hangs_beyond: bool = False) -> MetricSearch:
    """``search`` (ends alike) with the candidates at ``indices`` measured too, whatever the
    budget (a yanked release asked for: the one people reported from), placed against both
    ends as the look inside places a candidate: like them, a third behaviour, or a skip."""
    placed = place_each(search, indices, run_at, make_classifier, noisy=noisy, test=test,
                        batch=batch, max_runs=max_runs, reduce=reduce, say=say,
                        why="measuring it as asked (--include-yanked)", numbers=numbers,
                        hangs_beyond=hangs_beyond)
    thirds = {*search.thirds, *(i for i, p in placed.items() if p.placement.third)}
    return replace(search, placed={**search.placed, **placed}, thirds=tuple(sorted(thirds)))


def place_each(search: MetricSearch, indices: Sequence[int], run_at: RunAt,
               make_classifier: MakeClassifier, *, noisy: bool, test: Paired, batch: int,
               max_runs: int, reduce: Reduce, say: Say, why: str, numbers: dict | None = None,
               hangs_beyond: bool = False) -> dict[int, Placed]:
    """Each candidate of ``indices`` measured and placed against the alike ends: a noisy
    metric in rounds beside both ends, anything else by the classifier learned from them.
    ``numbers``: the ends' last run numbers, carried on from call to call (a noisy metric's
    ends run afresh in each round: a number already made is a stored run, never a new one);
    ``hangs_beyond``: a timing metric's, where a candidate that hung is beyond both ends."""
    n = max(search.placed) + 1
    if numbers is None:
        numbers = {j: len(search.placed[j].runs) for j in (0, n - 1)}
    placed = {}
    for i in indices:
        say(f"candidate {i}: the ends agree; {why}")
        placed[i] = (place_paired(search, i, run_at, test, max_runs=max_runs, reduce=reduce,
                                  numbers=numbers)
                     if noisy else
                     place_deterministic(search, i, run_at, make_classifier, batch=batch,
                                         reduce=reduce))
        if hangs_beyond:
            placed[i] = beyond_if_hung(placed[i])
    return placed


def place_deterministic(search: MetricSearch, i: int, run_at: RunAt,
                        make_classifier: MakeClassifier, *, batch: int,
                        reduce: Reduce) -> Placed:
    """Candidate ``i`` in ``batch`` runs, placed against the ends by the classifier the search
    begins with (learned from the two ends)."""
    n = max(search.placed) + 1
    runs = tuple(run_at(i, number) for number in range(1, batch + 1))
    seen = values_of(runs, reduce)
    against = make_classifier(search.placed[0].values, search.placed[n - 1].values)
    return Placed(i, runs, place_against_ends(runs, seen, against), seen)


def place_paired(search: MetricSearch, i: int, run_at: RunAt, test: Paired, *, max_runs: int,
                 reduce: Reduce, numbers: dict) -> Placed:
    """Candidate ``i`` in rounds (old end, it, new end), one after the other, until the
    search's paired test decides whether it is the ends' behaviour, or ``max_runs`` rounds are
    spent (a skip with its figures). ``numbers``: the ends' last run numbers, carried on."""
    n = max(search.placed) + 1
    numbers[i] = 0
    runs: list = []
    rounds: list[tuple[float, float, float]] = []
    while len(runs) < max(max_runs, test.first_look):
        got = {}
        order = (0, i, n - 1) if len(runs) % 2 == 0 else (n - 1, i, 0)
        for j in order:
            numbers[j] += 1
            run = run_at(j, numbers[j])
            if j == i:
                runs.append(run)
            got[j] = run_figure(run, reduce)
        if None not in got.values():
            rounds.append((got[0], got[i], got[n - 1]))
        seen = tuple(f for f in (run_figure(r, reduce) for r in runs) if f is not None)
        placement = place_against_ends(runs, seen, test, rounds)
        if not seen or placement.label is Label.OLD or placement.third:
            break
    return Placed(i, tuple(runs), placement, seen, tuple(rounds))


def changes_of(labels: dict, n: int) -> tuple[Change, ...]:
    """The changes inside, in release order, from each release's label (the ends: old). A
    change came after the last ``old`` release before its first ``differs`` and went before
    the first ``old`` one after its last; a ``cannot tell`` between makes its pair inexact.
    Consecutive releases unlike the ends, ``cannot tell`` ones between them included, are
    one change."""
    like, unlike = AgainstEnds.OLD, AgainstEnds.DIFFERS
    row = [like, *(labels[i] for i in range(1, n - 1)), like]
    changes: list[Change] = []
    i = 1
    while i < n - 1:
        if row[i] != unlike:
            i += 1
            continue
        first = last = i
        j = i + 1
        while j < n - 1 and row[j] != like:
            if row[j] == unlike:
                last = j
            j += 1
        before = max(k for k in range(first) if row[k] == like)
        after = min(k for k in range(last + 1, n) if row[k] == like)
        changes.append(Change(came=(before, first), went=(last, after),
                              releases=tuple(k for k in range(first, last + 1)
                                             if row[k] == unlike),
                              exact=before == first - 1 and after == last + 1
                              and all(row[k] == unlike for k in range(first, last + 1))))
        i = j
    return tuple(changes)


def pair_text(names: Sequence[str], pair: tuple[int, int]) -> str:
    return f"jax {names[pair[0]]} → {names[pair[1]]}"


def changes_text(names: Sequence[str], changes: Sequence[Change],
                 said: Callable[[int], str]) -> str:
    """Each change in words: ``came at jax X → Y, went at jax Y' → Z`` and what the releases
    unlike the ends gave (``said``: a release's figure)."""
    parts = []
    for c in changes:
        unlike = ", ".join(f"jax {names[k]}: {said(k)}" for k in c.releases)
        parts.append(f"came at {pair_text(names, c.came)}, went at {pair_text(names, c.went)} "
                     f"({unlike})" + ("" if c.exact else
                                      "; a release between could not be told, so each pair "
                                      "spans it"))
    return "; ".join(parts)
