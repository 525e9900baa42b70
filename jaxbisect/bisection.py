"""A bisection by a metric of the user's program, honest under noise (docs/classification.md).

A deterministic metric: the ends are measured once, a classifier learned from them says
whether they differ; if they do, the pure search of ``search.py`` runs with a probe that
measures a release and places it with the classifier. A noisy metric (``search_paired``): the
ends in interleaved pairs until a sequential test decides (a change, alike, or undecided at the
cap), then each release in rounds (old end, it, new end) placed from the ratios within its
rounds. A release still unplaced, or far outside both ends (a third behaviour), is a skip with
its figures, never a guess.

``search_metric`` takes the run and the classifier as arguments (tests inject them);
``bisect_metric`` wires them to a lab's releases (lab.py).
"""

from __future__ import annotations

import math
import operator
import os
import statistics
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from .budgets import INTERIOR_BUDGET, EndsTimer, TimeLimit, run_limit
from .catalogue import DEVICELESS, Catalogue, Release, backend_words, needs_a_gpu
from .classify import (
    RECOMMENDED_REMEASURES,
    Classifier,
    Direction,
    Ends,
    Label,
    Paired,
    Placement,
    matching,
    noisy,
    outputs,
    vectors_close,
)
from .classify import deterministic as deterministic_classifier
from .crashes import CRASH_RUNS, is_crash, rate_of
from .errors import UserError
from .executors import LOCAL, Executor
from .failures import EverywhereError, everywhere_error
from .interior import look_inside, measure_asked
from .lab import Lab
from .machine import parallel_runs
from .placing import (
    MakeClassifier,
    MetricSearch,
    Placed,
    Reduce,
    RunAt,
    Say,
    Verdict,
    _quantile,
    no_figure,
    run_figure,
    values_of,
)
from .question import Question, Run, compared_runs, with_compare, with_params
from .search import (
    Outcome,
    SearchResult,
    Status,
    find_change,
    full_table,
    prefetch_order,
    probe_limit,
)

OUTPUT_TOLERANCE = 1e-5  # an output's relative tolerance, unless --threshold sets one
RUNS_NOISY = 5           # runs (processes) a noisy metric measures a release with, at a time
RUNS_OUTPUT = 2          # an output's: two that differ say it is nondeterministic
# At most: the first batch and the re-measures the classifier's simulations were made with.
MAX_RUNS_NOISY = RUNS_NOISY * (1 + RECOMMENDED_REMEASURES)

Ahead = Callable[[list[int]], None]                # candidates to install while a round runs


def every_sample(run: Run) -> tuple:
    return run.samples


def low_quantile(run: Run, q: float = 0.25) -> tuple:
    """A noisy run as one sample: its 25th percentile. Calls within one process share its
    load, so they are one observation, not many (docs/timing.md)."""
    return _quantile([v for v in run.samples if isinstance(v, (int, float))], q)


def probing(visit: Callable[..., SearchResult], n: int, measure: Callable[[int], Outcome], *,
            jobs: int = 1, ahead: Ahead | None = None,
            cheap: Callable[[int], bool] = lambda i: False, offset: int = 0,
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
                                             offset=offset) if not cheap(i)])
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


def unmeasurable(i: int, runs: dict, values: Callable[[int], tuple], **more) -> MetricSearch:
    """The search without an answer: end ``i`` (0 or the last) gives no figure (``runs``: the
    ends'). An end that measured keeps its figures ("measured", not a skip); with no figure at
    the other end there is nothing to call it old or new against."""
    what = "the first" if i == 0 else "the last"
    return MetricSearch(Status.UNMEASURABLE, None,
                        {j: Placed(j, tuple(made), values=values(j)) for j, made in runs.items()},
                        None, reason=f"{what} release gives no figure: "
                                     f"{no_figure(runs[i]).reason}", **more)


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
                  cheap: Callable[[int], bool] = lambda i: False, offset: int = 0,
                  on_step: Callable[[int, int, int], None] | None = None,
                  say: Say = lambda m: None, paired: Paired | None = None,
                  visit: Callable[..., SearchResult] = find_change,
                  jobs: int = 1, ahead: Ahead | None = None) -> MetricSearch:
    """The change between candidates 0 and n-1 by a metric, one probe at a time.

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
                             reduce=reduce, say=say, visit=visit, **search)
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
            return unmeasurable(i, runs, values)
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


def paired_test(threshold: float | None) -> Paired:
    """The paired test a noisy metric's bisection (and its sweep) uses: ``--threshold``'s."""
    return Paired() if threshold is None else Paired(threshold=threshold)


@dataclass(frozen=True)
class Compared:
    """Two settings of one question (two releases, or one release with and without a flag)
    compared: ``verdict`` changed | same | cannot tell (a noisy metric the paired test left
    undecided: never "same") | no figure; ``ends`` what the test said; ``a``, ``b`` the
    figures either side; ``runs`` the runs made."""

    verdict: str
    ends: Ends | None
    a: tuple = ()
    b: tuple = ()
    runs: int = 0
    b_runs: tuple[Run, ...] = ()  # the second setting's runs (their documents: the series)


def compare_settings(run_a: Callable[[int], Run], run_b: Callable[[int], Run],
                     question: Question, threshold: float | None, *, batch: int,
                     max_runs: int | None, reduce: Reduce) -> Compared:
    """``run_a(k)`` against ``run_b(k)`` as the search tells its ends apart: a noisy metric
    by :func:`paired_test` on interleaved pairs (a, b; the order alternating), one pair at a
    time until it decides or ``max_runs`` pairs are spent; anything else by its classifier
    on a batch of each."""
    if not question.noisy:
        made = [[run(k) for k in range(1, batch + 1)] for run in (run_a, run_b)]
        a, b = (values_of(runs, reduce) for runs in made)
        if not a or not b:
            return Compared(Verdict.NO_FIGURE, None, a, b, 2 * batch, tuple(made[1]))
        ends = classifier_for(question, threshold)(a, b).ends()
        return Compared(Verdict.CHANGED if ends.distinct else Verdict.SAME, ends, a, b, 2 * batch,
                        tuple(made[1]))
    test = paired_test(threshold)
    runs: dict[int, list[Run]] = {0: [], 1: []}
    pairs: list[tuple[float, float]] = []
    verdict = test.ends(pairs)
    for k in range(1, max(max_runs or MAX_RUNS_NOISY, test.first_look) + 1):
        order = [(0, run_a), (1, run_b)]
        for side, run in (order if k % 2 else order[::-1]):  # a steady drift falls on both
            runs[side].append(run(k))
        a, b = (run_figure(runs[side][-1], reduce) for side in (0, 1))
        if a is not None and b is not None:
            pairs.append((a, b))
        if k >= test.first_look and not pairs:
            break
        verdict = test.ends(pairs)
        if verdict.decided:
            break
    a, b = (values_of(runs[side], reduce) for side in (0, 1))
    made = len(runs[0]) + len(runs[1])
    if not pairs:
        return Compared(Verdict.NO_FIGURE, None, a, b, made, tuple(runs[1]))
    word = ((Verdict.CHANGED if verdict.ends.distinct else Verdict.SAME) if verdict.decided
            else Verdict.CANNOT_TELL)
    return Compared(word, verdict.ends, a, b, made, tuple(runs[1]))


def visit_every(n: int, probe: Callable[[int], Outcome], **_) -> SearchResult:
    """Not a search: every release between the ends probed in order (the sweep's way, so it
    measures and places each release exactly as a bisection places a probe)."""
    for i in range(1, n - 1):
        probe(i)
    return SearchResult(Status.SWEPT, None, None, False, (0, n - 1, *range(1, n - 1)), ())


def search_paired(n: int, run_at: RunAt, test: Paired, *, max_runs: int, reduce: Reduce,
                  say: Say, visit: Callable[..., SearchResult], **search) -> MetricSearch:
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
                    return unmeasurable(i, runs, values, max_runs=max_runs)
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


def reduce_for(question: Question) -> Reduce:
    """What the classifier sees of a run: a noisy function case's run as one figure (its low
    quantile); an output digest made comparable; anything else as it is."""
    if question.metric == "output":
        return lambda run: tuple(comparable("output", s) for s in run.samples)
    if question.noisy and question.case is not None:
        return low_quantile
    return every_sample


def batch_size(question: Question, runs: int | None = None) -> int:
    """Runs a release is measured with at a time: ``runs``, else five for a noisy metric,
    two for an output (runs that differ: nondeterministic), one for anything else."""
    return runs or (RUNS_NOISY if question.noisy else
                    RUNS_OUTPUT if question.metric == "output" else 1)


def measure_batch(lab: Lab, release: Release, backend: str, question: Question, first: int,
                  count: int, *, timeout: float) -> list[Run]:
    """Runs ``first`` … ``first + count - 1`` of ``question`` under ``release``."""
    return [lab.run(release, backend, question, number, timeout=timeout)
            for number in range(first, first + count)]


def middle(values: Sequence):
    """The middle figure of ``values`` (a number's median, else the first value), or None."""
    numbers = sorted(v for v in values if isinstance(v, (int, float)))
    return numbers[len(numbers) // 2] if numbers else (values[0] if values else None)


def comparable(metric: str, sample):
    """A sample as the classifier compares it: an output digest as (shapes, values) with
    non-finite values back as floats."""
    if metric == "output" and isinstance(sample, dict):
        return (tuple(tuple((tuple(s[0]), s[1])) for s in sample["shapes"]),
                tuple(float(v) for v in sample["values"]))
    return sample


def outputs_close(rtol: float) -> Callable[[object, object], bool]:
    close = vectors_close(rtol=rtol, atol=rtol * 1e-3)
    return lambda a, b: a[0] == b[0] and close(list(a[1]), list(b[1]))


def classifier_for(question: Question, threshold: float | None) -> MakeClassifier:
    """The classifier a question's metric calls for."""
    metric, given = question.metric, {} if threshold is None else {"threshold": threshold}

    def make(old: Sequence, new: Sequence) -> Classifier:
        if metric == "exit_code":  # git bisect run's: 0 is one behaviour, 1-127 the other
            return matching(list(old), list(new), lambda a, b: (a == 0) == (b == 0))
        if question.over:  # the shape: [status, rate] ("constant", "grows")
            from repro.verdict import shapes_alike

            return matching(list(old), list(new), shapes_alike)
        if metric == "output":  # a release whose runs differ: nondeterministic
            return outputs(list(old), list(new),
                           outputs_close(given.get("threshold", OUTPUT_TOLERANCE)))
        if metric == "error":
            return matching(list(old), list(new), operator.eq)
        return (noisy if question.noisy else deterministic_classifier)(old, new, **given)

    return make


@dataclass(frozen=True)
class MetricRequest:
    start: str
    end: str
    backend: str
    question: Question
    threshold: float | None = None
    timeout: float | None = None     # None: derived from the ends' own times (budgets.py)
    remeasure: bool = False
    runs: int | None = None          # runs a release is measured with at a time
    max_runs: int | None = None      # runs of one release at most
    include_yanked: bool = False     # yanked releases inside the range are candidates too
    executor: Executor = field(default=LOCAL, compare=False)  # where runs run (executors.py)
    jobs: int = 1                    # releases probed at once (a round's, --jobs)
    try_xla_flags: tuple[str, ...] = ()  # measured under the first new release once found
    commits: bool = False            # then the jax commits between the pair (--commits)
    interior_budget: float = INTERIOR_BUDGET  # ends alike: seconds the releases inside may take
    # The clones the answer was read from (--jax-repo, --xla-repo): in the commands printed
    # on this machine, not in a report.
    jax_repo: Path | None = field(default=None, compare=False)
    xla_repo: Path | None = field(default=None, compare=False)


@dataclass(frozen=True)
class MetricBisection:
    request: MetricRequest
    candidates: tuple[Release, ...]
    unusable: tuple[tuple[Release, str], ...]
    search: MetricSearch
    limit: tuple[int, int] = field(default=(0, 0))
    yanked: tuple[Release, ...] = ()  # the yanked releases inside the range (measured or not)
    time_limit: TimeLimit | None = None   # a run's limit once the ends had run
    sized: SearchSize | None = None   # the search at a smaller size, and the full-size runs
    commits: object = None            # --commits: commit_bisection.CommitBisection
    commits_by_pair: tuple = ()       # --commits where the answer names several pairs
    interior: object = None           # ends alike: the releases inside (interior.Interior)

    @property
    def everywhere_error(self) -> EverywhereError | None:
        """The error every release measured raised, the same at each (the program never ran:
        a setup error, too few devices, an API these releases lack), or None."""
        placed = {i: p for i, p in self.search.placed.items()}
        if self.interior is not None and getattr(self.interior, "measured", False):
            placed.update(self.interior.placed)
        if self.request.question.metric == "error":  # the error is the figure
            errors = [next((str(v) for v in p.values), None) if p.values else None
                      for _, p in sorted(placed.items())]
        else:  # no figure: the run that raised
            errors = [p.failure.error if (not p.values and p.failure is not None
                                          and p.failure.status == "raised") else None
                      for _, p in sorted(placed.items())]
        return everywhere_error(errors)

    @property
    def status(self) -> str:
        """The answer's status: the search's, or ``fails_everywhere``."""
        if self.search.status in (Status.ALIKE, Status.UNMEASURABLE) and self.everywhere_error:
            return Status.FAILS_EVERYWHERE
        return self.search.status

    @property
    def searched(self) -> Question:
        """The question the search's probes measured (the case's SEARCH_PARAMS, or as asked)."""
        return self.sized.question if self.sized else self.request.question

    def full_run(self, index: int) -> Run | None:
        """Candidate ``index`` at the size asked: its full-size run where the search ran
        smaller, else its search run."""
        if self.sized and index in self.sized.full:
            return self.sized.full[index]
        placed = self.search.placed.get(index)
        return placed.runs[0] if placed and placed.runs else None

    @property
    def timeout(self) -> float:
        """The limit of a run after the search (the modules, the explanation's listing)."""
        if self.time_limit is not None:
            return self.time_limit.seconds
        return self.request.timeout if self.request.timeout is not None else 1800.0

    @property
    def probes(self) -> list[tuple[Release, Placed]]:
        return [(self.candidates[i], p) for i, p in self.search.placed.items()]

    @property
    def direction(self) -> str | None:
        if self.search.status != Status.FOUND:
            return None
        if self.request.question.over:  # "constant" then "grows" is a regression
            r, placed = self.search.result, self.search.placed
            (old, old_rate), (new, new_rate) = (next(iter(placed[i].values), (None, None))
                                                for i in (r.last_old, r.first_new))
            old, new = SHAPE_ORDER.get(old), SHAPE_ORDER.get(new)
            if old is not None and new is not None and old != new:
                return Direction.REGRESSION if new > old else Direction.FIX
            if old == new and old and old_rate and new_rate:  # both grow: faster is worse
                return (Direction.REGRESSION if abs(new_rate) * old > abs(old_rate) * old
                        else Direction.FIX)
        return self.search.ends.direction

    def classifier(self) -> Classifier:
        """A classifier learned from the two ends, as the search began with."""
        q, placed = self.request.question, self.search.placed
        return classifier_for(q, self.request.threshold)(placed[0].values,
                                                         placed[len(self.candidates) - 1].values)

    def placed_at(self, index: int) -> Placed | None:
        """Candidate ``index`` as the search or, inside alike ends, the interior placed it."""
        inside = self.interior.placed if self.interior is not None else {}
        return self.search.placed.get(index) or inside.get(index)

    def pair_classifier(self, old: int, new: int) -> Classifier:
        """A classifier learned from two measured candidates (a pair inside the range)."""
        return classifier_for(self.request.question, self.request.threshold)(
            self.placed_at(old).values, self.placed_at(new).values)

    def named_pairs(self) -> list[tuple[tuple[int, int], str]]:
        """Every pair of consecutive-as-measured releases the answer names, with what happened
        there: the change found (``came``, or ``fix`` where it undid a regression), or each
        change inside alike ends (where it ``came``, where it ``went``)."""
        if self.pair is not None:
            r = self.search.result
            kind = "fix" if self.direction == Direction.FIX else "came"
            return [((r.last_old, r.first_new), kind)]
        changes = self.interior.changes if self.interior is not None else ()
        return [(at, kind) for c in changes for at, kind in ((c.came, "came"), (c.went, "went"))]

    @property
    def pair(self) -> tuple[Release, Release] | None:
        r = self.search.result
        if self.search.status != Status.FOUND or r is None:
            return None
        return self.candidates[r.last_old], self.candidates[r.first_new]


@dataclass(frozen=True)
class SearchSize:
    """A shape's search at the case's SEARCH_PARAMS: used where at both ends it gives the
    shape the full size gives (the shape is scale-free; the small size is quick). ``full``:
    full-size runs (the ends, the pair beside the change); ``compare``: the case's COMPARE
    programs at the same releases, label -> run."""

    question: Question            # what the search measured
    agreed: bool
    note: str
    full: dict = field(default_factory=dict)      # candidate index -> Run
    compare: dict = field(default_factory=dict)   # candidate index -> {label: Run}


def smaller_size(question: Question) -> dict:
    """The case's SEARCH_PARAMS a shape may be measured at, less those not below the size
    asked ({} where there are none). A tuple for the over parameter is fewer of its values:
    those of them asked, where at least two (a shape's least) and not all are."""
    case = question.case
    if not (question.over and case and case.search_params):
        return {}
    asked, (name, values) = case.resolve(question.params), question.over
    given = case.search_params.get(name)
    fewer = tuple(v for v in values if v in given) if isinstance(given, tuple) else ()

    def below(k, v) -> bool:  # a size below the one asked (a tuple is for the over parameter)
        if isinstance(v, tuple):
            return False
        return (not isinstance(v, (int, float)) or not isinstance(asked.get(k), (int, float))
                or v < asked[k])

    smaller = {k: v for k, v in case.search_params.items() if k != name and below(k, v)}
    return {**smaller, name: fewer} if 2 <= len(fewer) < len(values) else smaller


def search_size(question: Question, full: list[Run], at_small: list[Run]) -> SearchSize:
    """The question a shape's search measures: the case's SEARCH_PARAMS where both ends give
    the same shape there (``at_small``: their runs) as at the full size (``full``)."""
    smaller = smaller_size(question)
    small = with_params(question, smaller)
    from repro.verdict import shapes_alike

    agreed = all(f.status == s.status == "ok" and shapes_alike(f.samples[0], s.samples[0])
                 for f, s in zip(full, at_small))
    sizes = ", ".join(f"{k} {','.join(map(str, v)) if isinstance(v, tuple) else v}"
                      for k, v in smaller.items())
    failed = next((f for f in full if f.status != "ok"), None)
    if failed is not None and all(s.status == "ok" for s in at_small):
        # The full size gives no figure at an end (its memory, its time): the search still
        # answers at the small size, and the report's row at the full size says why not.
        return SearchSize(small, False, f"search probes at {sizes} (the full size gives no "
                                        f"figure at jax {failed.release}: {failed.error})",
                          full={0: full[0], -1: full[1]})
    note = (f"search probes at {sizes} (the shape is scale-free; at both ends it agreed with "
            f"the full size)" if agreed else
            f"search probes at the full size ({sizes} gives another shape at an end)")
    return SearchSize(small if agreed else question, agreed, note,
                      full={0: full[0], -1: full[1]})


def beside(question: Question, indices: Sequence[int], run: Callable[[Question, int], Run],
           sized: SearchSize | None, jobs: int) -> SearchSize | None:
    """``sized`` with the full size and the case's COMPARE programs measured at ``indices``
    (the ends, the pair beside the change), for the report's columns: one process a release
    where the harness measures COMPARE beside the case (a series), else one a program."""
    compare = question.case.compare if question.case else {}
    if sized is None and not compare:
        return None
    sized = sized or SearchSize(question, True, "")
    full_size = with_compare(question)
    alone = {} if full_size.compare else compare
    asked = [(i, None) for i in indices if full_size.compare or sized.question != question] \
        + [(i, label) for i in indices for label in alone]
    # A deterministic figure's runs side by side, as the ends' (a noisy one's: --jobs).
    at_once = jobs if question.noisy else max(jobs, min(2, parallel_runs()))
    with ThreadPoolExecutor(max_workers=max(1, at_once), thread_name_prefix="beside") as pool:
        runs = list(pool.map(lambda a: run(full_size if a[1] is None
                                           else with_params(question, alone[a[1]]), a[0]),
                             asked))
    full, others = dict(sized.full), {}
    for (i, label), made in zip(asked, runs):
        if label is None:
            full[i] = made
            if full_size.compare:
                others[i] = compared_runs(made)
        else:
            others.setdefault(i, {})[label] = made
    return replace(sized, full=full, compare=others)


def releases_between(catalogue: Catalogue, first: str, last: str, backend: str, target: str,
                     *, include_yanked: bool = False
                     ) -> tuple[list[Release], list[tuple[Release, str]]]:
    """The installable releases from ``first`` to ``last`` on ``backend`` (``target``: the
    compile-only GPU, for messages), yanked ones inside the range with ``include_yanked``;
    bad or empty ranges are UserErrors."""
    start, end = catalogue.get(first), catalogue.get(last)
    if start.version == end.version:
        raise UserError(f"--from and --to are the same release ({start.version}): "
                        "nothing to bisect")
    if start.version > end.version:
        raise UserError(f"--from {start.version} is newer than --to {end.version}; "
                        "swap them (the search works in both directions of change)")
    for end_release in (start, end):
        if end_release.yanked:
            raise UserError(f"jax {end_release.version} was yanked; pick a neighbouring release "
                            f"as the end of the range")
    usable, unusable = catalogue.between(first, last, backend, include_yanked=include_yanked)
    for end_release in (start, end):
        why = dict((r.version, w) for r, w in unusable).get(end_release.version)
        # A target's end that only a real GPU can compile for narrows the range to the part
        # that can be measured here; the report names the rest and the command for it.
        if why and not (backend == DEVICELESS and needs_a_gpu(why)):
            raise UserError(f"jax {end_release.version} cannot be installed here for "
                            f"{backend_words(backend, target)}: {why}")
    if len(usable) < 2:
        if backend == DEVICELESS:
            raise UserError(f"no two releases in jax {start.version} … {end.version} can compile "
                            f"for --target {target} without a GPU (jax 0.4.34 "
                            f"on, less 0.4.36 and 0.4.37); on a machine with an NVIDIA GPU: "
                            f"python -m bisect --from {start.version} --to {end.version} "
                            f"--backend cuda12")
        raise UserError(f"no installable releases between {start.version} and {end.version}")
    return usable, unusable


class InstallsAhead:
    """The environments the next round could need (``search.prefetch_order``), built in the
    background while a round runs: a queued one no longer named is dropped, one installing
    finishes (the environment's lock holds a probe that needs it until it is ready). A fresh
    install then imports jax once at the lowest priority (a first import writes the bytecode:
    1.3 s of a first probe's 2.1 s here), never waited for: stopped once its release is no
    longer ahead (its probe began, or the search left its side) or the search is over."""

    def __init__(self, install: Callable[[int], object], workers: int):
        self.install, self.queued, self.warming = install, {}, {}
        self.wanted: set[int] = set()
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="install")
        self.lock = threading.Lock()
        self.closed = False

    def __call__(self, indices: list[int]) -> None:
        with self.lock:
            self.wanted = set(indices)
            self._stop_warm_ups()
            for i, future in list(self.queued.items()):
                if i not in indices and future.cancel():
                    del self.queued[i]
            for i in indices:
                if i not in self.queued:
                    self.queued[i] = self.pool.submit(self._install, i)

    def _install(self, i: int) -> None:
        env = self.install(i)
        if env is not None and not env.reused:
            self.warm(i, env.python)

    def warm(self, i: int, python) -> None:
        """``import jax`` under ``python`` for candidate ``i``, where it is still ahead."""
        with self.lock:
            if self.closed or i not in self.wanted or i in self.warming:
                return
            process = subprocess.Popen([str(python), "-I", "-c", "import jax"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.warming[i] = process
        try:
            os.setpriority(os.PRIO_PROCESS, process.pid, 19)
        except OSError:  # it has finished already
            pass

    def _stop_warm_ups(self) -> None:  # under the lock
        for i, process in list(self.warming.items()):
            if i not in self.wanted or self.closed:
                if process.poll() is None:
                    process.kill()
                process.wait()
                del self.warming[i]

    def __enter__(self) -> InstallsAhead:
        return self

    def __exit__(self, *_) -> None:
        with self.lock:
            self.closed = True
            self._stop_warm_ups()
        self.pool.shutdown(wait=True, cancel_futures=True)


SHAPE_ORDER = {"shrinks": -1, "constant": 0, "grows": 1}


def naming(candidates: Sequence[Release], say: Say) -> Say:
    """``say`` with the search's "candidate 3: …" as "jax 0.4.30: …"."""
    def named(message: str) -> None:
        if message.startswith("candidate "):
            index, rest = message[len("candidate "):].split(":", 1)
            message = f"jax {candidates[int(index)].version}:{rest}"
        say(message)

    return named


def search_over(candidates: Sequence[Release], request: MetricRequest, question: Question,
                lab: Lab, say: Say, *, offset: int = 0, noun: str = "release"
                ) -> tuple[MetricSearch, RunAt, EndsTimer]:
    """The search for ``question``'s change over ``candidates`` (releases, or a release's
    jax commits), run in ``lab`` as ``request`` asks (jobs, runs, threshold, time limits):
    the search, its run (for runs after it) and its timer (the time limit it learned)."""
    n, q = len(candidates), request.question
    names = [str(r.version) for r in candidates]

    def real_run(i: int, number: int, seconds: float) -> Run:
        if candidates[i].refused:  # jax's own version check: not run
            return Run(release=names[i], number=number, status="failed",
                       error=f"cannot run on jaxlib {candidates[i].jaxlib}: "
                             f"{candidates[i].refused}")
        return lab.run(candidates[i], request.backend, question, number, timeout=seconds)

    def install(i: int):
        try:
            return lab.environment(candidates[i], request.backend)
        except UserError:
            return None  # the probe, if it comes, says why

    # A run's limit from the ends' own times; a release that hung once is not run again.
    timer = EndsTimer(real_run, (0, n - 1), request.timeout, hang_is_value=q.metric == "error",
                      say=say)
    run: RunAt = crash_rated(timer, n) if q.metric == "error" else timer
    with InstallsAhead(install, max(2, request.jobs)) as ahead:
        search = search_metric(
            n, run, classifier_for(q, request.threshold), paired=paired_test(request.threshold),
            noisy_metric=q.noisy, batch=request.runs or (None if q.noisy else batch_size(q)),
            max_runs=request.max_runs,
            reduce=reduce_for(q), say=naming(candidates, say),
            cheap=lambda i: lab.cheap(candidates[i], request.backend, question), offset=offset,
            jobs=request.jobs, ahead=ahead, on_step=lambda lo, hi, left: say(
                narrowed_line(names[lo], names[hi], hi - lo - 1, left, noun)))
    return search, run, timer


def follow_up(search: MetricSearch, run: RunAt, candidates: Sequence[Release],
              request: MetricRequest, question: Question, say: Say, *,
              between: Sequence[int] = (), noun: str = "release"
              ) -> tuple[MetricSearch, object]:
    """The steps after a search, the same at either level (releases, or a release's jax
    commits): ends alike, the candidates ``between`` asked for measured against both (a
    yanked release people reported from) and the ones inside looked at within
    ``--interior-budget``; under a timing metric, a candidate that hung is beyond both ends
    (a third behaviour). The search, and the look inside (interior.Interior, or None)."""
    q, n = question, len(candidates)
    placing = dict(noisy=q.noisy, test=paired_test(request.threshold),
                   batch=batch_size(q, request.runs), max_runs=request.max_runs or MAX_RUNS_NOISY,
                   reduce=reduce_for(q), say=naming(candidates, say))
    if search.status == Status.ALIKE and between:
        # The ends agree, so the search probes nothing between them.
        search = measure_asked(search, between, run, classifier_for(q, request.threshold),
                               **placing)
    interior = None
    if search.status == Status.ALIKE:  # what a sweep would answer, where the interior is cheap
        interior = look_inside(search, run, classifier_for(q, request.threshold),
                               budget=request.interior_budget, noun=noun, **placing)
    if q.metric in TIMING_METRICS:
        search = hangs_beyond_both_ends(search, (0, n - 1))
    return search, interior


def bisect_over(candidates: Sequence[Release], request: MetricRequest, question: Question,
                lab: Lab, say: Say, *, noun: str = "release") -> MetricBisection:
    """``question`` bisected over ``candidates`` (a release's jax commits, each on that
    release's environment: a commit is a candidate like a release) in ``lab``: the search,
    then every step after it (follow_up) as a bisection over releases takes them."""
    n = len(candidates)
    search, run, timer = search_over(candidates, request, question, lab, say, noun=noun)
    search, interior = follow_up(search, run, candidates, request, question, say, noun=noun)
    return MetricBisection(request, tuple(candidates), (), search, probe_limit(n, request.jobs),
                           time_limit=timer.limit, interior=interior)


def bisect_metric(catalogue: Catalogue, request: MetricRequest, lab: Lab,
                  say: Say) -> MetricBisection:
    """The metric bisection over the releases of ``request``'s range, run in ``lab``: the
    search, at the case's smaller size where its shape allows, and the runs beside it."""
    candidates, unusable = releases_between(catalogue, request.start, request.end,
                                            request.backend, request.question.target,
                                            include_yanked=request.include_yanked)
    for release, why in unusable:
        say(f"leaving out jax {release.version}: {why}")
    n, q, names = len(candidates), request.question, [str(r.version) for r in candidates]
    limit = probe_limit(n, request.jobs)
    say(f"bisecting {n} releases, jax {names[0]} … {names[-1]} ({request.backend}) by "
        f"{q.metric} of {q.label}; at most {limit[0]} probes"
        + (f" in {limit[1]} rounds of up to {request.jobs} at once" if request.jobs > 1 else "")
        + (f"; the ends in interleaved pairs, each release in rounds beside both ends, "
           f"until decided (at most {request.max_runs or MAX_RUNS_NOISY} pairs or rounds)"
           if q.noisy else "")
        + (f"; a run may take {run_limit(None, [None, None]).seconds:.0f} s until the ends' "
           f"own times are known (--timeout sets it)" if request.timeout is None
           else f"; a run may take {request.timeout:.0f} s (--timeout)"))

    def run_of(question: Question, i: int) -> Run:  # one run beside the search
        seconds = request.timeout or run_limit(None, [None, None]).seconds
        return lab.run(candidates[i % n], request.backend, question, 1, timeout=seconds)

    def ends_at(question: Question, at_once: int) -> list[Run]:
        # The full size is asked with COMPARE beside it, as the runs beside the search ask it
        # afterwards: one process an end, found again. A shape is a deterministic figure:
        # both ends at once where the machine holds two runs (as the sweep's releases).
        asked = with_compare(q) if question == q else question
        with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="end") as pool:
            return list(pool.map(lambda i: run_of(asked, i), (0, n - 1)))

    everything = [r.version for r in catalogue.releases
                  if not r.yanked or request.include_yanked]

    def searching(question: Question) -> tuple[MetricSearch, RunAt, EndsTimer]:
        return search_over(candidates, request, question, lab, say,
                           offset=everything.index(candidates[0].version))

    sized, small = None, with_params(q, smaller_size(q))
    if small == q:
        search, run, timer = searching(q)
    else:
        slots = parallel_runs()
        at_small = ends_at(small, min(2, slots))
        # Where the machine holds a run more than the search's, the full size's ends run one
        # at a time beside a search at the small size: their shape confirms that search or
        # sends it back to the full size.
        attempt = None
        if slots > request.jobs and all(r.status == "ok" for r in at_small):
            with ThreadPoolExecutor(1, thread_name_prefix="end") as behind:
                ends = [behind.submit(run_of, with_compare(q), i) for i in (0, n - 1)]
                try:
                    attempt = searching(small)
                except BaseException:  # Ctrl-C, a refusal: the end not yet begun is not run
                    for end in ends:
                        end.cancel()
                    raise
                full = [end.result() for end in ends]
        else:
            full = ends_at(q, min(2, slots))
        sized = search_size(q, full, at_small)
        say(sized.note)
        search, run, timer = (attempt if attempt and sized.question == small
                              else searching(sized.question))
    yanked = [i for i, r in enumerate(candidates) if r.yanked and 0 < i < n - 1]
    search, interior = follow_up(search, run, candidates, request, q, say, between=yanked)
    if search.status in (Status.FOUND, Status.ALIKE):
        shown = full_table(n, search.result) if search.status == Status.FOUND else (0, n - 1)
        sized = beside(q, shown, run_of, sized, request.jobs)
        if sized:
            sized = replace(sized, full={i % n: r for i, r in sized.full.items()})
    return MetricBisection(request, tuple(candidates), tuple(unusable), search, limit,
                           tuple(catalogue.yanked_between(request.start, request.end)),
                           timer.limit, sized=sized, interior=interior)


TIMING_METRICS = ("run_time", "compile_time")


def hangs_beyond_both_ends(search: MetricSearch, ends: tuple[int, int]) -> MetricSearch:
    """Under a timing metric, a release between the ends that hung is slower than both: a
    third behaviour (left out of the search as the skip it already was), not a missing
    figure."""
    hung = {i: p for i, p in search.placed.items() if i not in ends and not p.values
            and p.failure is not None and p.failure.status == "hung"}
    if not hung:
        return search
    placed = {i: (replace(p, placement=Placement(Label.SKIP, None, third=True,
                                                 reason=p.failure.error))
                  if i in hung else p) for i, p in search.placed.items()}
    return replace(search, placed=placed, thirds=tuple(sorted({*search.thirds, *hung})))


def narrowed_line(lo: str, hi: str, between: int, left: int, noun: str = "release") -> str:
    """The progress line after a round that narrowed the window."""
    return (f"narrowed to jax {lo} … {hi} ({between} {noun}{'' if between == 1 else 's'} "
            f"between, ~{left} step{'' if left == 1 else 's'} left)")

