"""The bisection that runs: a question bisected over candidates in a lab (docs/design.md).

``bisect_over`` is the one bisection at either level (releases, or a release's jax commits,
commit_bisection.py): the search (``search_over``, metric_search.py's search with the lab's
runs, their time limits and the installs ahead), then every step after it (``follow_up``).
``bisect_metric`` is it over the releases of a range, with what only releases have: the range
itself, a shape's search at a smaller size checked at the ends, the runs beside the search.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from jaxbisect.errors import UserError
from jaxbisect.lab import backends
from jaxbisect.lab.backends import Backend
from jaxbisect.lab.catalogue import Catalogue, Release, offline_line
from jaxbisect.lab.environments import is_installed
from jaxbisect.lab.executors import LOCAL, Executor
from jaxbisect.lab.lab import Lab
from jaxbisect.lab.machine import parallel_runs
from jaxbisect.search.budgets import INTERIOR_BUDGET, EndsTimer, TimeLimit, run_limit
from jaxbisect.search.classify import Classifier, Direction
from jaxbisect.search.comparing import (
    MAX_RUNS_NOISY,
    batch_size,
    classifier_for,
    paired_test,
    reduce_for,
)
from jaxbisect.search.failures import EverywhereError, everywhere_error
from jaxbisect.search.interior import look_inside, measure_asked
from jaxbisect.search.metric_search import crash_rated, search_metric
from jaxbisect.search.placing import MetricSearch, Placed, RunAt, Say, beyond_if_hung
from jaxbisect.search.question import (
    Question,
    Run,
    compared_runs,
    series_of,
    with_compare,
    with_params,
)
from jaxbisect.search.rounds import Status, full_table, opening, probe_limit


@dataclass(frozen=True)
class MetricRequest:
    start: str
    end: str
    backend: Backend
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

    def __post_init__(self):
        # The request is where a backend's name comes in: resolved here, once, to its object.
        if not isinstance(self.backend, Backend):
            object.__setattr__(self, "backend", backends.get(self.backend))


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
    def came_and_went(self) -> bool:
        """Whether the candidates inside alike ends hold a change (it came and went)."""
        return self.interior is not None and self.interior.came_and_went

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

    @property
    def answer_direction(self) -> str | None:
        """The direction the report's answer gives: an error that appears is a regression,
        one that goes a fix (report/markdown/words.py's direction_of, from the same
        figures)."""
        direction = self.direction
        if direction == Direction.CHANGED and self.request.question.metric == "error":
            r, placed = self.search.result, self.search.placed
            old, new = (next(iter(placed[i].samples), None) for i in (r.last_old, r.first_new))
            return (Direction.REGRESSION if old == "no error" else
                    Direction.FIX if new == "no error" else direction)
        return direction

    @property
    def pair_roles(self) -> tuple[str, str]:
        """What the pair's older and newer release are, in the answer's words: "last good" /
        "first bad", "last bad" / "first fixed" or "last old" / "first new"."""
        return PAIR_ROLES.get(self.answer_direction, PAIR_ROLES[Direction.CHANGED])

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
            kind = PairKind.FIX if self.direction == Direction.FIX else PairKind.CAME
            return [((r.last_old, r.first_new), kind)]
        changes = self.interior.changes if self.interior is not None else ()
        return [(at, kind) for c in changes
                for at, kind in ((c.came, PairKind.CAME), (c.went, PairKind.WENT))]

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
    shown: Question | None = None  # the tables' question where not the one asked (one_quantity)
    fallback: dict | None = None   # why (one_quantity): the end without a plan, its fallback


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
    if (peak := one_quantity(question, [*at_small, *full])) is not None:
        # The tables too: the run's peak at the full size's values (the ends measured again,
        # by full_size_tables).
        shown = one_quantity(question, full) or peak
        return SearchSize(peak[0], False, peak[1], shown=shown[0], fallback=shown[2])
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


def one_quantity(question: Question, runs: list[Run]) -> tuple[Question, str, dict] | None:
    """Where an end has no compiled statistics (0 bytes: jaxlib < 0.4.29 on the CPU), the
    harness measured a run's peak there instead: a plan at one end and a run at the other are
    two quantities, so every release is searched by the run's peak, at the size the harness
    measured it (the case's RUNTIME_PARAMS), and the search compares one quantity. ``None``
    where every end has its plan."""
    if question.metric != "memory" or not question.over:
        return None
    fell = [(r.release, f) for r in runs
            if (f := (series_of(r) or {}).get("fallback"))]
    if not fell:
        return None
    release, fallback = fell[0]
    values = tuple(fallback.get("values") or question.over[1])
    peak = replace(question, metric=fallback.get("metric") or "peak_memory",
                   params=dict(fallback.get("params") or question.params),
                   over=(question.over[0], values))
    sizes = ", ".join(f"{k} {v}" for k, v in peak.params.items())
    note = (f"search probes a run's peak at every release ({sizes}, {question.over[0]} "
            f"{','.join(map(str, values))}), one quantity throughout: jax {release} has no "
            f"compiled statistics, {fallback.get('reason') or 'memory_analysis() reports 0 bytes'}")
    return peak, note, {**fallback, "jax": release}


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
    compile-only device, for messages), yanked ones inside the range with ``include_yanked``;
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
    if catalogue.unreachable:  # no index answers: only what is installed already can run
        missing = [r for r in usable if not is_installed(r, backend)]
        if start in missing or end in missing:
            asked = "jax " + ", ".join(str(r.version) for r in missing)
            raise UserError(offline_line(asked, catalogue.unreachable))
        usable = [r for r in usable if r not in missing]
        unusable = sorted([*unusable, *((r, f"not installed here, and no package index is "
                                           f"reachable ({catalogue.unreachable})")
                                        for r in missing)], key=lambda u: u[0].version)
    chosen = backend
    for end_release in (start, end):
        why = dict((r.version, w) for r, w in unusable).get(end_release.version)
        # A target's end that only the real device can compile for narrows the range to the
        # part that can be measured here; the report names the rest and the command for it.
        if why and not chosen.needs_device(why):
            raise UserError(f"jax {end_release.version} cannot be installed here for "
                            f"{backend.words(target)}: {why}")
    if len(usable) < 2:
        raise UserError(chosen.range_refusal(str(start.version), str(end.version), target)
                        or f"no installable releases between {start.version} and "
                           f"{end.version}")
    return usable, unusable


class InstallsAhead:
    """The environments the next round could need (``search.prefetch_order``), built in the
    background while a round runs: a queued one no longer named is dropped, one installing
    finishes (the environment's lock holds a probe that needs it until it is ready). A fresh
    install then imports jax once at the lowest priority (a first import writes the bytecode:
    1.3 s of a first probe's 2.1 s here), never waited for: stopped once its release is no
    longer ahead (its probe began, or the search left its side) or the search is over.

    ``for_the_answer(i)``, for a candidate the round shows certain to be in the pair found
    (``search.certain_in_pair``), begins the runs the answer will show there (its tables, at
    the full size), one candidate at a time, beside the round: they go on after the search,
    into the steps after it, which find them made (the lab makes a run once; one that failed
    here is made again by the step that needs it, which says why). It is one process beyond
    the round's (and the full size's ends, where they still run): the last round's, when the
    other core would otherwise wait. A search whose size the full size then refutes wasted
    that run."""

    def __init__(self, install: Callable[[int], object], workers: int,
                 for_the_answer: Callable[[int], object] | None = None):
        self.install, self.queued, self.warming = install, {}, {}
        self.wanted: set[int] = set()
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix="install")
        self.lock = threading.Lock()
        self.closed = False
        self.for_the_answer = for_the_answer
        self.answers = ThreadPoolExecutor(1, thread_name_prefix="answer")
        self.begun: set[int] = set()

    def __call__(self, indices: list[int], certain: Sequence[int] = ()) -> None:
        with self.lock:
            for i in certain:
                if self.for_the_answer is not None and not self.closed and i not in self.begun:
                    self.begun.add(i)
                    self.answers.submit(self.for_the_answer, i)
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

    def __exit__(self, failed, *_) -> None:
        with self.lock:
            self.closed = True
            self._stop_warm_ups()
        self.pool.shutdown(wait=True, cancel_futures=True)
        # The answer's runs go on, unless the search failed (Ctrl-C: the lab stops them).
        self.answers.shutdown(wait=False, cancel_futures=failed is not None)


SHAPE_ORDER = {"shrinks": -1, "constant": 0, "grows": 1}
# What a found change's pair is called at source (reproducer ends, HLO figures), by the
# answer's direction: the words the page shows for it (report/markdown/words.py PAIR_WORDS).
PAIR_ROLES = {Direction.REGRESSION: ("last good", "first bad"),
              Direction.FIX: ("last bad", "first fixed"),
              Direction.CHANGED: ("last old", "first new")}


def naming(candidates: Sequence[Release], say: Say) -> Say:
    """``say`` with the search's "candidate 3: …" as "jax 0.4.30: …"."""
    def named(message: str) -> None:
        if message.startswith("candidate "):
            index, rest = message[len("candidate "):].split(":", 1)
            message = f"jax {candidates[int(index)].version}:{rest}"
        say(message)

    return named


def installs_ahead(candidates: Sequence[Release], request: MetricRequest, lab: Lab,
                   for_the_answer: Callable[[int], object] | None = None) -> InstallsAhead:
    """The environments of ``candidates`` built ahead of their probes (and, with
    ``for_the_answer``, the runs the answer shows at a candidate certain to be in it)."""
    def install(i: int):
        try:
            return lab.environment(candidates[i], request.backend)
        except UserError:
            return None  # the probe, if it comes, says why

    return InstallsAhead(install, max(2, request.jobs), for_the_answer)


def search_over(candidates: Sequence[Release], request: MetricRequest, question: Question,
                lab: Lab, say: Say, *, offset: int = 0, noun: str = "release",
                ahead: InstallsAhead | None = None) -> tuple[MetricSearch, RunAt, EndsTimer]:
    """The search for ``question``'s change over ``candidates`` (releases, or a release's
    jax commits), run in ``lab`` as ``request`` asks (jobs, runs, threshold, time limits):
    the search, its run (for runs after it) and its timer (the time limit it learned).
    ``ahead``: the installs ahead already under way (else the search's own)."""
    n, q = len(candidates), request.question
    names = [str(r.version) for r in candidates]

    def real_run(i: int, number: int, seconds: float) -> Run:
        if candidates[i].refused:  # jax's own version check: not run
            return Run(release=names[i], number=number, status="failed",
                       error=f"cannot run on jaxlib {candidates[i].jaxlib}: "
                             f"{candidates[i].refused}")
        return lab.run(candidates[i], request.backend, question, number, timeout=seconds)

    # A run's limit from the ends' own times; a release that hung once is not run again.
    timer = EndsTimer(real_run, (0, n - 1), request.timeout, hang_is_value=q.metric == "error",
                      say=say, first=request.backend.first_run_limit)
    run: RunAt = crash_rated(timer, n) if q.metric == "error" else timer
    with nullcontext(ahead) if ahead else installs_ahead(candidates, request, lab) as ahead:
        search = search_metric(
            n, run, classifier_for(q, request.threshold), paired=paired_test(request.threshold),
            noisy_metric=q.noisy, batch=request.runs or (None if q.noisy else batch_size(q)),
            noun=noun,
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
    # A noisy metric's ends run afresh beside each candidate placed: their run numbers go
    # on from the search's, across every candidate placed here (a number made is stored).
    numbers = {j: len(search.placed[j].runs) for j in (0, n - 1) if j in search.placed}
    placing = dict(noisy=q.noisy, test=paired_test(request.threshold),
                   batch=batch_size(q, request.runs), max_runs=request.max_runs or MAX_RUNS_NOISY,
                   reduce=reduce_for(q), say=naming(candidates, say), numbers=numbers,
                   hangs_beyond=q.metric in TIMING_METRICS)
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
                lab: Lab, say: Say, *, noun: str = "release", between: Sequence[int] = (),
                offset: int = 0, searched: tuple | None = None) -> MetricBisection:
    """``question`` bisected over ``candidates`` in ``lab``, at either level (releases, or a
    release's jax commits, each on that release's environment: a commit is a candidate like a
    release): the search, then every step after it (follow_up). ``searched``: the search
    already made (search_over's search, run and timer: a release range's at a smaller size)."""
    n = len(candidates)
    search, run, timer = searched or search_over(candidates, request, question, lab, say,
                                                 offset=offset, noun=noun)
    search, interior = follow_up(search, run, candidates, request, question, say,
                                 between=between, noun=noun)
    return MetricBisection(request, tuple(candidates), (), search, probe_limit(n, request.jobs),
                           time_limit=timer.limit, interior=interior)


def bisect_metric(catalogue: Catalogue, request: MetricRequest, lab: Lab,
                  say: Say, *, tables: bool = True) -> MetricBisection:
    """The metric bisection over the releases of ``request``'s range, run in ``lab``: the
    search, at the case's smaller size where its shape allows, and the runs beside it
    (``tables``: the full size and COMPARE where the answer shows them; without, the caller
    asks ``full_size_tables`` for them: the pipeline runs them beside the evidence)."""
    candidates, unusable = releases_between(catalogue, request.start, request.end,
                                            request.backend, request.question.target,
                                            include_yanked=request.include_yanked)
    for release, why in unusable:
        say(f"leaving out jax {release.version}: {why}")
    n, q, names = len(candidates), request.question, [str(r.version) for r in candidates]
    limit = probe_limit(n, request.jobs)
    first_limit = request.backend.first_run_limit
    say(f"bisecting {n} releases, jax {names[0]} … {names[-1]} ({request.backend}) by "
        f"{q.metric} of {q.label}; at most {limit[0]} probes"
        + (f" in {limit[1]} rounds of up to {request.jobs} at once" if request.jobs > 1 else "")
        + (f"; the ends in interleaved pairs, each release in rounds beside both ends, "
           f"until decided (at most {request.max_runs or MAX_RUNS_NOISY} pairs or rounds)"
           if q.noisy else "")
        + (f"; a run may take {first_limit:.0f} s until the ends' "
           f"own times are known (--timeout sets it)" if request.timeout is None
           else f"; a run may take {request.timeout:.0f} s (--timeout)"))

    run_of = runs_beside(candidates, request, lab)

    def ends_at(question: Question, at_once: int) -> list[Run]:
        # The full size is asked with COMPARE beside it, as the runs beside the search ask it
        # afterwards: one process an end, found again. A shape is a deterministic figure:
        # both ends at once where the machine holds two runs (as the sweep's releases).
        asked = with_compare(q) if question == q else question
        with ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="end") as pool:
            return list(pool.map(lambda i: run_of(asked, i), (0, n - 1)))

    everything = [r.version for r in catalogue.releases
                  if not r.yanked or request.include_yanked]

    offset = everything.index(candidates[0].version)

    sized, small, searched = None, with_params(q, smaller_size(q)), None
    if small != q:
        slots = parallel_runs()
        # The first rounds' environments are built while the ends are measured; the last
        # round's candidate (in the pair, whatever it answers) measured at the full size
        # beside its probe, for the tables.
        def cheap(i: int) -> int:
            return lab.cheap(candidates[i], request.backend, small)

        with installs_ahead(candidates, request, lab,
                            for_the_answer=lambda i: run_of(with_compare(q), i)) as ahead:
            ahead([i for i in opening(n, jobs=request.jobs, offset=offset, cheap=cheap)
                   if not cheap(i)])
            at_small = ends_at(small, min(2, slots))
            # Where the machine holds a run more than the search's, the full size's ends run
            # one at a time beside a search at the small size: their shape confirms that
            # search or sends it back to the full size.
            attempt = None
            if (slots > request.jobs and all(r.status == "ok" for r in at_small)
                    and one_quantity(q, at_small) is None):
                with ThreadPoolExecutor(1, thread_name_prefix="end") as behind:
                    ends = [behind.submit(run_of, with_compare(q), i) for i in (0, n - 1)]
                    try:
                        attempt = search_over(candidates, request, small, lab, say,
                                              offset=offset, ahead=ahead)
                    except BaseException:  # Ctrl-C, a refusal: the end not yet begun is not run
                        for end in ends:
                            end.cancel()
                        raise
                    ahead([])  # the search is over: nothing more to install, nor to warm
                    full = [end.result() for end in ends]
            else:
                full = ends_at(q, min(2, slots))
            sized = search_size(q, full, at_small)
            searched = attempt if attempt and sized.question == small else None
            if searched and (found := searched[0]).status == Status.FOUND:
                # The pair's other release too (an end's run is made already), the longest
                # run the answer needs: begun now, the shorter steps after the search fill
                # in beside it.
                ahead([], tuple(i for i in (found.result.last_old, found.result.first_new)
                                if 0 < i < n - 1))
        say(sized.note)
    yanked = [i for i, r in enumerate(candidates) if r.yanked and 0 < i < n - 1]
    b = bisect_over(candidates, request, sized.question if sized else q, lab, say,
                    between=yanked, offset=offset, searched=searched)
    b = replace(b, unusable=tuple(unusable),
                yanked=tuple(catalogue.yanked_between(request.start, request.end)),
                sized=sized)
    return full_size_tables(b, lab) if tables else b


def runs_beside(candidates: Sequence[Release], request: MetricRequest,
                lab: Lab) -> Callable[[Question, int], Run]:
    """One run of a question at candidate ``i`` beside the search (the ends, the tables)."""
    n = len(candidates)

    first_limit = request.backend.first_run_limit

    def run_of(question: Question, i: int) -> Run:
        seconds = request.timeout or run_limit(None, [None, None], first_limit).seconds
        return lab.run(candidates[i % n], request.backend, question, 1, timeout=seconds)

    return run_of


def full_size_tables(b: MetricBisection, lab: Lab) -> MetricBisection:
    """``b`` with the runs its report's tables show beside the search's: the full size and
    the case's COMPARE programs at the ends and, where a change was found, at the pair."""
    search, n = b.search, len(b.candidates)
    q = (b.sized.shown if b.sized else None) or b.request.question
    if search.status not in (Status.FOUND, Status.ALIKE):
        return b
    shown = full_table(n, search.result) if search.status == Status.FOUND else (0, n - 1)
    sized = beside(q, shown, runs_beside(b.candidates, b.request, lab), b.sized,
                   b.request.jobs)
    if sized:
        sized = replace(sized, full={i % n: r for i, r in sized.full.items()})
    return replace(b, sized=sized)


TIMING_METRICS = ("run_time", "compile_time")


class PairKind(StrEnum):
    """What the answer names at a pair of releases: where a change came (or the fix that
    undid a regression), or where a change inside alike ends went."""

    CAME = "came"
    WENT = "went"
    FIX = "fix"


def hangs_beyond_both_ends(search: MetricSearch, ends: tuple[int, int]) -> MetricSearch:
    """Under a timing metric, a candidate between the ends that hung is slower than both: a
    third behaviour (placing.beyond_if_hung), not a missing figure."""
    placed = {i: p if i in ends else beyond_if_hung(p) for i, p in search.placed.items()}
    hung = {i for i, p in placed.items() if p is not search.placed[i]}
    if not hung:
        return search
    return replace(search, placed=placed, thirds=tuple(sorted({*search.thirds, *hung})))


def narrowed_line(lo: str, hi: str, between: int, left: int, noun: str = "release") -> str:
    """The progress line after a round that narrowed the window."""
    return (f"narrowed to jax {lo} … {hi} ({between} {noun}{'' if between == 1 else 's'} "
            f"between, ~{left} step{'' if left == 1 else 's'} left)")

