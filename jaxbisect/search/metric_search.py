"""A bisection by a metric of the user's program, honest under noise (docs/classification.md).

A deterministic metric: the ends are measured once, a classifier learned from them says
whether they differ; if they do, the pure search of ``search.py`` runs with a probe that
measures a release and places it with the classifier. A noisy metric (``search_paired``): the
ends in interleaved pairs until a sequential test decides (a change, alike, or undecided at the
cap), then each release in rounds (old end, it, new end) placed from the ratios within its
rounds. A release still unplaced, or far outside both ends (a third behaviour), is a skip with
its figures, never a guess.

``search_metric`` takes the run and the classifier as arguments (tests inject them);
bisection.py wires them to a lab's candidates (releases, or a release's jax commits).
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from jaxbisect.search.classify import Direction, Label, Paired, Placement
from jaxbisect.search.comparing import MAX_RUNS_NOISY, every_sample
from jaxbisect.search.crashes import CRASH_RUNS, is_crash, rate_of
from jaxbisect.search.placing import (
    CANNOT_MEASURE,
    MakeClassifier,
    MetricSearch,
    Placed,
    Reduce,
    RunAt,
    Say,
    no_figure,
    run_figure,
    values_of,
)
from jaxbisect.search.question import Run
from jaxbisect.search.rounds import (
    Cheap,
    Outcome,
    SearchResult,
    Status,
    certain_in_pair,
    find_change,
    prefetch_order,
)

# While a round runs: the candidates to install (the next round could ask for them), and those
# of the round certain to be in the pair found (their runs for the answer can begin).
Ahead = Callable[[list[int], tuple[int, ...]], None]


def probing(visit: Callable[..., SearchResult], n: int, measure: Callable[[int], Outcome], *,
            jobs: int = 1, ahead: Ahead | None = None,
            cheap: Cheap = lambda i: False, offset: int = 0,
            on_step: Callable[[int, int, int], None] | None = None) -> tuple[SearchResult, dict]:
    """``visit`` (find_change, or visit_every) over candidates 0 … n-1 with ``measure`` as its
    probe: one release at a time, or (``jobs`` > 1) each round's releases at once, in threads
    (the runs themselves are processes). With ``ahead``, each round first hands it the
    candidates the next round could ask for (search.prefetch_order) that are not cheap
    already: their environments are built while the round runs. The result, and each probe's
    time span (MetricSearch.spans)."""
    seen: dict[int, Outcome] = {}
    spans: dict = {}
    began = time.monotonic()

    def probe(i: int) -> Outcome:
        start = time.monotonic() - began
        try:
            return measure(i)
        finally:
            spans[i] = (round(start, 3), round(time.monotonic() - began, 3))

    def probe_round(indices: tuple[int, ...]) -> list[Outcome]:
        if ahead is not None:
            ahead([i for i in prefetch_order(n, seen, indices, jobs=jobs, cheap=cheap,
                                             offset=offset) if not cheap(i)],
                  certain_in_pair(n, seen, indices))
        if len(indices) == 1:
            outcomes = [probe(indices[0])]
        else:
            with ThreadPoolExecutor(max_workers=len(indices), thread_name_prefix="probe") as pool:
                outcomes = list(pool.map(probe, indices))
        seen.update(zip(indices, outcomes))
        return outcomes

    how = ({"probe": probe} if jobs <= 1 and ahead is None
           else {"probe_round": probe_round, "jobs": jobs})
    return visit(n, **how, cheap=cheap, on_step=on_step, offset=offset), spans


def unmeasurable(i: int, runs: dict, values: Callable[[int], tuple], noun: str = "release",
                 **more) -> MetricSearch:
    """The search without an answer: end ``i`` (0 or the last) gives no figure (``runs``: the
    ends'). An end that measured keeps its figures ("measured", not a skip); with no figure at
    the other end there is nothing to call it old or new against."""
    what = "the first" if i == 0 else "the last"
    why = {j: no_figure(made).reason for j, made in runs.items() if not values(j)}
    reason = f"{what} {noun} gives no figure: {why[i]}"
    if len(why) == 2 and all(w.startswith(CANNOT_MEASURE) for w in why.values()):
        # Both ends a harness error: the harness's own line, once where they agree.
        first, last = (why[j] for j in sorted(why))
        reason = first if first == last else f"{first}; the last {noun}: {last}"
    return MetricSearch(Status.UNMEASURABLE, None,
                        {j: Placed(j, tuple(made), values=values(j)) for j, made in runs.items()},
                        None, reason=reason, **more)


def placed_end(i: int, runs: Sequence[Run], values: tuple) -> Placed:
    """End ``i`` (0, else the last): old and new by definition."""
    label, side = (Label.OLD, "old") if i == 0 else (Label.NEW, "new")
    return Placed(i, tuple(runs), Placement(label, None, reason=f"the {side} end"), values)


def skip_if_unplaced(placement: Placement, spent: str) -> Placement:
    """A release still unplaced when its runs are spent: a skip with its figures."""
    if placement.label is not Label.AMBIGUOUS:
        return placement
    return Placement(Label.SKIP, placement.confidence,
                     reason=f"cannot be placed after {spent}"
                            + (f" ({placement.reason})" if placement.reason else ""))


def search_metric(n: int, run_at: RunAt, make_classifier: MakeClassifier, *, noisy_metric: bool,
                  batch: int | None = None, max_runs: int | None = None,
                  reduce: Reduce = every_sample,
                  cheap: Cheap = lambda i: False, offset: int = 0,
                  on_step: Callable[[int, int, int], None] | None = None,
                  say: Say = lambda m: None, paired: Paired | None = None,
                  visit: Callable[..., SearchResult] = find_change,
                  jobs: int = 1, ahead: Ahead | None = None,
                  noun: str = "release") -> MetricSearch:
    """The change between candidates 0 and n-1 by a metric, one probe at a time (``noun``:
    what they are, release or commit, for the words).

    A deterministic metric: a release is measured ``batch`` runs at a time (one) and placed by
    ``make_classifier``'s classifier. A noisy metric: :func:`search_paired` with ``paired``
    (the ends in pairs, each release in rounds beside both ends; ``batch`` rounds before the
    first look, ``max_runs`` rounds at most). ``reduce`` makes a run into its samples."""
    search = {"jobs": jobs, "ahead": ahead, "cheap": cheap, "offset": offset, "on_step": on_step}
    if noisy_metric:
        test = paired or Paired()
        if batch:
            test = replace(test, first_look=max(2, batch), first_place=max(2, batch))
        return search_paired(n, run_at, test, max_runs=max_runs or MAX_RUNS_NOISY,
                             reduce=reduce, say=say, visit=visit, noun=noun, **search)
    batch = batch or 1
    max_runs = max(batch, max_runs or 1)
    runs: dict[int, list[Run]] = {}

    def measure(indices: tuple[int, ...], count: int) -> None:
        for _ in range(count):  # interleaved: load on the machine falls on each alike
            for i in indices:
                made = runs.setdefault(i, [])
                made.append(run_at(i, len(made) + 1))

    def values(i: int) -> tuple:
        return values_of(runs.get(i, []), reduce)

    ends_at = (0, n - 1)
    measure(ends_at, batch)
    for i in ends_at:
        if not values(i):  # (a crash at the other end is named in the answer)
            return unmeasurable(i, runs, values, noun)
    classifier = make_classifier(values(0), values(n - 1))
    ends = classifier.ends()
    placed = {i: placed_end(i, runs[i], values(i)) for i in ends_at}
    if not ends.distinct:
        return MetricSearch(Status.ALIKE, None, placed, ends)
    state = {"classifier": classifier, "remeasures": 0}
    lock = threading.Lock()
    thirds: list[int] = []

    def probe(i: int) -> Outcome:
        if i in ends_at:
            return placed[i].outcome
        measure((i,), batch)
        while True:
            seen = values(i)
            if not seen:
                placement = no_figure(runs[i])
                break
            placement = state["classifier"](seen)
            if placement.label is not Label.AMBIGUOUS or len(runs[i]) + batch > max_runs:
                break
            say(f"candidate {i}: cannot place it yet ({placement.reason}); measuring again")
            with lock:
                state["remeasures"] += 1
            measure((i,), batch)
        placement = skip_if_unplaced(placement, f"{len(runs[i])} runs")
        if placement.third:
            thirds.append(i)
        if placement.label in (Label.OLD, Label.NEW):
            with lock:
                state["classifier"] = state["classifier"].learn(seen, placement.label)
        placed[i] = Placed(i, tuple(runs[i]), placement, seen)
        return placed[i].outcome

    result, spans = probing(find_change, n, probe, **search)
    return MetricSearch(result.status, result, {i: placed[i] for i in result.probes}, ends,
                        remeasures=state["remeasures"], thirds=tuple(sorted(thirds)),
                        spans=spans)


def crash_rated(run_at: RunAt, n: int, runs: int = CRASH_RUNS) -> RunAt:
    """The ``error`` metric's ``run_at``: a release whose figure may be a crash is measured in
    ``runs`` runs (the ends always; a probe once any release crashed, or where its first run
    did), and its figure is the crash with its rate (crashes.CrashRate), which the classifier
    compares by equality like any error line: a crash in 1 of 3 runs is neither "no error"
    nor a crash every time."""
    seen_crash = threading.Event()

    def rated(i: int, number: int) -> Run:
        base = (number - 1) * runs
        first = run_at(i, base + 1)
        if first.status != "ok" or not (i in (0, n - 1) or seen_crash.is_set() or first.crash):
            return first
        every = [first, *(run_at(i, base + k) for k in range(2, runs + 1))]
        figures = [r.samples[0] for r in every if r.status == "ok" and r.samples]
        rate = rate_of(figures)
        if rate is None:  # none crashed: the first's figure, and every run it took counted
            return replace(first, crash_rate={"crash": None, "crashed": 0, "runs": len(every),
                                              "rate": 0.0},
                           seconds=round(sum(r.seconds for r in every), 2),
                           cached=all(r.cached for r in every))
        seen_crash.set()
        return replace(first, samples=(rate.figure([f for f in figures if not is_crash(f)]),),
                       crash=rate.crash, crash_rate=rate.as_json(),
                       seconds=round(sum(r.seconds for r in every), 2),
                       cached=all(r.cached for r in every))

    return rated


def crashes_of(placed: Placed) -> dict | None:
    """How often ``placed``'s runs crashed (crashes.CrashRate's JSON), or None."""
    rated = next((r.crash_rate for r in placed.runs if r.crash_rate
                  and r.crash_rate["crashed"]), None)
    if rated:
        return rated
    rate = rate_of([r.crash if r.crash else "measured" for r in placed.runs])
    return rate.as_json() if rate else None


def paired_calibration(test: Paired, pairs: Sequence[tuple[float, float]],
                       max_runs: int) -> dict:
    """The machine's noise from the first pairs of the ends: the spread of one end's runs
    (each end about its own centre), of a pair's log ratio (what pairing leaves), and the
    smallest change ``max_runs`` pairs can tell from none at that spread."""
    logs = [(math.log(o), math.log(n)) for o, n in pairs]
    centred = [x - statistics.fmean(col) for col in zip(*logs) for x in col]
    run_spread = math.sqrt(sum(c * c for c in centred) / max(1, len(centred) - 2))
    ratios = [n - o for o, n in logs]
    pair_spread = statistics.stdev(ratios) if len(ratios) >= 2 else 0.0
    return {"pairs": len(pairs), "run_spread": math.expm1(run_spread),
            "pair_spread": math.expm1(pair_spread), "max_runs": max_runs,
            "resolvable_ratio": test.resolvable(pair_spread, max_runs),
            "confidence": test.confidence, "threshold": test.threshold}


def calibration_text(c: dict) -> str:
    return (f"this machine's noise from the first {c['pairs']} pairs of the ends: one run "
            f"±{c['run_spread']:.1%}, the ratio within a pair ±{c['pair_spread']:.1%}; with "
            f"up to {c['max_runs']} pairs (--max-runs) it can tell a change of "
            f"{c['resolvable_ratio']:.3g}× or more from none at {c['confidence']:.0%}")


def visit_every(n: int, probe: Callable[[int], Outcome], **_) -> SearchResult:
    """Not a search: every release between the ends probed in order (the sweep's way, so it
    measures and places each release exactly as a bisection places a probe)."""
    for i in range(1, n - 1):
        probe(i)
    return SearchResult(Status.SWEPT, None, None, False, (0, n - 1, *range(1, n - 1)), ())


def search_paired(n: int, run_at: RunAt, test: Paired, *, max_runs: int, reduce: Reduce,
                  say: Say, visit: Callable[..., SearchResult], noun: str = "release",
                  **search) -> MetricSearch:
    """A noisy metric's search: the ends in interleaved pairs until ``test`` decides or
    ``max_runs`` pairs are spent; then each probed release in rounds (old end, it, new end),
    one after the other, until ``test`` places it or ``max_runs`` rounds are spent (a skip with
    its figures). Rounds alternate their order so a steady drift falls on both sides alike.
    ``search``: how to probe (:func:`probing`)."""
    max_runs = max(max_runs, test.first_look)
    runs: dict[int, list[Run]] = {}
    figures: dict[int, list[float | None]] = {}
    state = {"round": 0, "remeasures": 0}
    lock = threading.Lock()
    numbers: dict[int, int] = {}

    def one_round(indices: tuple[int, ...]) -> list[float | None]:
        with lock:
            flip = state["round"] % 2 == 1
            state["round"] += 1
        got: dict[int, float | None] = {}
        for i in (tuple(reversed(indices)) if flip else indices):
            with lock:  # probes in flight at once (--jobs) share the ends: one number each
                number = numbers[i] = numbers.get(i, 0) + 1
            run = run_at(i, number)
            got[i] = run_figure(run, reduce)
            with lock:
                runs.setdefault(i, []).append(run)
                figures.setdefault(i, []).append(got[i])
        return [got[i] for i in indices]

    def values(i: int) -> tuple:
        return tuple(v for v in figures[i] if v is not None)

    def end_pairs() -> list[tuple[float, float]]:
        return [(o, w) for o, w in zip(figures[0], figures[n - 1])
                if o is not None and w is not None]

    ends_at = (0, n - 1)
    calibration = None
    while True:
        one_round(ends_at)
        if len(runs[0]) == test.first_look:  # an end with no figure in a first look's runs
            for i in ends_at:
                if all(v is None for v in figures[i]):
                    return unmeasurable(i, runs, values, noun, max_runs=max_runs)
        pairs = end_pairs()
        if calibration is None and len(pairs) >= test.first_look:
            calibration = paired_calibration(test, pairs, max_runs)
            say(calibration_text(calibration))
        verdict = test.ends(pairs)
        if verdict.decided or len(runs[0]) >= max_runs:
            break
    ends = verdict.ends
    placed = {i: placed_end(i, runs[i], values(i)) for i in ends_at}
    if not (verdict.decided and ends.distinct):
        return MetricSearch(Status.ALIKE if verdict.decided else Status.UNDECIDED, None, placed,
                            ends,
                            calibration=calibration, max_runs=max_runs)
    thirds: list[int] = []
    # The machine's spread of u so far, as (sum of squares, degrees of freedom): the ends'
    # pairs (var u = 3 var d for independent run noise) and every release placed.
    d = [math.log(w / o) for o, w in end_pairs()]
    pool = [3 * sum((x - statistics.fmean(d)) ** 2 for x in d), len(d) - 1]

    def probe(i: int) -> Outcome:
        if i in ends_at:
            return placed[i].outcome
        rounds: list[tuple[float, float, float]] = []
        while True:
            o, r, w = one_round((0, i, n - 1))
            if r is None and len(runs[i]) == 1:
                placement = no_figure(runs[i])
                break
            if None not in (o, r, w):
                rounds.append((o, r, w))
            placement = test.place(rounds, ends.direction, (pool[0], pool[1]), ends.ratio,
                                   cap=max_runs)
            if placement.label is not Label.AMBIGUOUS or len(runs[i]) >= max_runs:
                break
            if len(rounds) >= test.first_place:
                with lock:
                    state["remeasures"] += 1
                say(f"candidate {i}: cannot place it yet ({placement.reason}); measuring "
                    "another round")
        placement = skip_if_unplaced(placement, f"{len(runs[i])} rounds")
        if placement.third:
            thirds.append(i)
        if len(rounds) >= 2:
            s = 1 if ends.direction == Direction.REGRESSION else -1
            us = [s * math.log(r * r / (o * w)) for o, r, w in rounds]
            with lock:
                pool[0] += sum((x - statistics.fmean(us)) ** 2 for x in us)
                pool[1] += len(us) - 1
        placed[i] = Placed(i, tuple(runs[i]), placement, values(i), tuple(rounds))
        return placed[i].outcome

    result, spans = probing(visit, n, probe, **search)
    placed.update({i: placed_end(i, runs[i], values(i)) for i in ends_at})  # their rounds too
    return MetricSearch(result.status, result, {i: placed[i] for i in result.probes}, ends,
                        remeasures=state["remeasures"], thirds=tuple(sorted(thirds)),
                        calibration=calibration, max_runs=max_runs, spans=spans)


