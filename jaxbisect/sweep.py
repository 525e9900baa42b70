"""``python -m jaxbisect.sweep``: a case's metric in every release asked, one result each.

``nox -s repro``, ``repro_release`` and ``repro_range`` run it. With no ``--case`` the question
is the scan report's case (repro/cases/scan_growth.py: v0's memory over n_outer, v1 and v2
beside it), as ``python -m bisect`` takes no case. What bisection cannot see (a change made and
undone inside a range) a sweep shows. Every release is measured as a bisection measures a
probe, in the same lab and store (a sweep after a bisection reuses every run it made): the
same runs (a noisy metric: five at a time, more while the classifier cannot place it, up to
the cap), the same time limits, the case's COMPARE programs beside it, and the label of the
classifier learned from the ends (old, new, ambiguous, third behaviour; ends alike: "like the
ends"). A deterministic metric's releases are measured ``--jobs`` at a time.

Each release is written whole to ``REPORTS/jax-<release>-<where>.json`` and
``REPORTS/README.md`` is rebuilt from every result in that folder (``--render REPORTS``: only
that, from the results already there, measuring nothing). A release that cannot be
installed, a run that fails, Ctrl-C: one line each; a result already written is never
replaced by a failure (measured runs are in the store: a rerun reads them back).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from jaxbisect.errors import UnknownRelease, UserError
from jaxbisect.files import (
    RUN_DEPENDENT_KEYS,
    check_reports_folder,
    write_json_if_changed,
)
from jaxbisect.lab import backends
from jaxbisect.lab.catalogue import (
    Catalogue,
    Release,
    catalogue_for,
    needs_another_python,
    offline_line,
)
from jaxbisect.lab.environments import is_installed, resolve_backend
from jaxbisect.lab.executors import LOCAL, Executor, add_executor_options, executor_from
from jaxbisect.lab.harness import ignored_environment_note, target_label, target_option
from jaxbisect.lab.known_flags import FlagCheckedLab, lister
from jaxbisect.lab.lab import Lab, RealLab
from jaxbisect.lab.machine import parallel_runs
from jaxbisect.lab.runs import store_key
from jaxbisect.report.commands import question_argv
from jaxbisect.report.figures import figure, figure_text, seen
from jaxbisect.report.sweep_summary import (
    SUMMARY,
    load_results,
    read_result,
    render_summary,
    results_table,
    where_words,
    write_summary,
)
from jaxbisect.search.budgets import EndsTimer
from jaxbisect.search.classify import Label, Paired, Placement
from jaxbisect.search.comparing import (
    MAX_RUNS_NOISY,
    batch_size,
    classifier_for,
    paired_test,
    reduce_for,
)
from jaxbisect.search.metric_search import search_metric, visit_every
from jaxbisect.search.placing import (
    MakeClassifier,
    Placed,
    Reduce,
    Shown,
    place_against_ends,
    values_of,
)
from jaxbisect.search.question import (
    Question,
    Run,
    compared_runs,
    question_from,
    series_of,
    with_compare,
    with_params,
)
from jaxbisect.search.rounds import Status
from repro.case import SCAN_CASE, UNITS
from repro.options import (
    BISECT,
    REPRO,
    SIZES,
    OneLineParser,
    options_of,
    positive_int,
    read_sizes,
    seconds,
)
from repro.target import built_in

PROG = "python -m jaxbisect.sweep"
SCHEMA = 2
# The question's options, from python -m bisect's table (repro/options.py).
QUESTION = {"case", "param", "over", "metric", "xla_flags", "devices", "samples", "metric_kind",
            "threshold", "runs", "max_runs", "n_outer", "n_inner", "n_res", "dtype"}
AS_BISECT = {"backend", "remeasure", "refresh_catalogue"}  # the table's other options it takes
Say = Callable[[str], None]


@dataclass(frozen=True)
class Planned:
    """A release to measure, or to list as skipped with the reason it cannot be installed."""

    release: Release
    skip: str | None = None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    which = p.add_argument_group("releases (one of)")
    which.add_argument("--release", "--releases", dest="releases", action="extend", nargs="+",
                       default=[], metavar="VERSION", help="one or more jax releases, e.g. 0.5.0")
    which.add_argument("--from", dest="first", metavar="VERSION",
                       help="first release of a range (default: the oldest installable here)")
    which.add_argument("--to", dest="last", metavar="VERSION",
                       help="last release of a range (default: the newest installable here)")
    p.add_argument("--target", metavar="NAME|FILE",
                   help=f"XLA's plan for this accelerator, compiled without one "
                        f"({', '.join(built_in())} or a GPU spec file); releases that cannot "
                        f"are listed as such")
    p.add_argument("--also-target", metavar="NAME|FILE",
                   help="measure the same releases for this target too (compiled without "
                        "it), in the same pool of --jobs (nox -s repro: a6000)")
    p.add_argument("--reports", type=Path, default=None, metavar="DIR",
                   help=f"where the JSON results and {SUMMARY} go (default: reports/repro for "
                        "the scan case, else reports/<case>-<metric>)")
    p.add_argument("--allow-yanked", action="store_true", help="measure a yanked release named")
    p.add_argument("--if-installable", action="store_true",
                   help="a named release that needs a Python this machine lacks is listed as "
                        "skipped, with the reason, instead of an error (nox -s repro's default "
                        "set)")
    p.add_argument("--timeout", type=seconds, default=None, metavar="SECONDS",
                   help="a run's time limit (default: from the ends' own times, as a "
                        "bisection's)")
    p.add_argument("--command", default=None, help=argparse.SUPPRESS)  # how nox invoked us
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="measure up to N releases at once (default here: "
                        f"{parallel_runs()}, from the cores and memory)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("--render", type=Path, default=None, metavar="DIR",
                   help=f"measure nothing: rewrite DIR/{SUMMARY} from the JSON results in DIR "
                        f"(its recorded command, date and machine kept)")
    add_executor_options(p)
    c = p.add_argument_group("the question (as python -m bisect takes it; docs/cases.md)")
    for option in options_of(BISECT):
        if option.dest in QUESTION | AS_BISECT:
            (c if option.dest in QUESTION else p).add_argument(
                option.flag, help=option.help_for(REPRO, backends=backends.help_text())
                or option.help_for(BISECT, backends=backends.help_text()),
                **option.settings)
    args = p.parse_args(argv)
    if args.render is not None:
        if args.releases or args.first or args.last or args.target or args.also_target:
            p.error("--render rewrites a folder's summary from its results: it takes no "
                    "releases or targets")
        return args
    if not args.releases and args.first is None and args.last is None:
        p.error("name the releases: --release 0.5.0 [0.10.2 …] or --from 0.4.30 --to 0.5.0")
    if args.releases and (args.first or args.last):
        p.error("use either --release or --from/--to, not both")
    if args.target and args.also_target:
        p.error("--also-target adds a target to the backend's run: not with --target")
    if args.case is not None and (args.n_outer or any(getattr(args, n) for n in SIZES)):
        p.error("--n-outer, --n-inner, --n-res and --dtype size the scan case; a --case "
                "takes --param and --over")
    read_sizes(p, args)
    return args


# -- which releases -------------------------------------------------------------------------


def select(catalogue: Catalogue, args: argparse.Namespace, backend: str) -> list[Planned]:
    """The releases asked for, checked before anything is installed; where no package index
    answers, only those installed already (the others one line, or skipped with the reason
    under ``--if-installable`` or inside a range).

    A release named on its own that cannot be installed here is an error (exit 2, one line),
    unless ``--if-installable``; inside a range it is listed as skipped, with the reason.
    """
    if args.releases:
        planned, seen_ = [], set()
        for text in args.releases:
            try:
                release = catalogue.get(text, allow_yanked=args.allow_yanked)
            except UnknownRelease as exc:
                hint = " (--allow-yanked measures it anyway)" if "yanked" in str(exc) else ""
                raise UnknownRelease(f"{exc}{hint}") from None
            if release.version in seen_:
                continue
            seen_.add(release.version)
            why = catalogue.unusable_reason(release, backend, allow_yanked=args.allow_yanked)
            if why and not (args.if_installable and (needs_another_python(why)
                                                     or backend.needs_device(why))):
                raise UserError(f"jax {release.version} cannot be installed here "
                                f"({backend.words(args.target or '')}): {why}")
            planned.append(Planned(release, why))
        return planned
    backend.prepare(catalogue.releases)
    installable = [r for r in catalogue.releases
                   if catalogue.unusable_reason(r, backend) is None]
    if not installable:
        raise UserError(f"no jax release can be installed here for {backend}")
    first = args.first or str(installable[0].version)
    last = args.last or str(installable[-1].version)
    usable, unusable = catalogue.between(first, last, backend)
    planned = [Planned(r) for r in usable] + [Planned(r, why) for r, why in unusable]
    return sorted(planned, key=lambda p: p.release.version)


def offline(planned: list[Planned], catalogue: Catalogue, args: argparse.Namespace,
            backend: str) -> list[Planned]:
    """``planned`` where no package index answers (an accelerator VM, say): a release not installed
    already is skipped, saying why; one named on its own (not ``--if-installable``), or all
    of them, is the one line that says which cannot be installed and why."""
    if not catalogue.unreachable:
        return planned
    missing = [p for p in planned if not p.skip and not is_installed(p.release, backend)]
    if missing and (len(missing) == sum(not p.skip for p in planned)
                    or (args.releases and not args.if_installable)):
        raise UserError(offline_line("jax " + ", ".join(str(p.release.version) for p in missing),
                                     catalogue.unreachable))
    why = f"not installed here, and no package index is reachable ({catalogue.unreachable})"
    return [replace(p, skip=why) if p in missing else p for p in planned]


# -- placing every release as a bisection places a probe ------------------------------------


def place_every(n: int, run_at: Callable[[int, int], Run], make_classifier: MakeClassifier, *,
                noisy_metric: bool, batch: int | None, max_runs: int, reduce: Reduce,
                measured: Sequence[int] | None = None,
                paired: Paired | None = None) -> tuple[list[Placed | None], object]:
    """Every one of ``n`` releases (those in ``measured``, default all) measured and placed as
    a bisection places a probe. A noisy metric: the bisection's own paired search
    (search_metric), visiting every release instead of searching; ends alike or undecided
    leave nothing to place against, so each release between is measured and not labelled. A
    deterministic metric: the ends, then each release ``batch`` runs at a time while the
    classifier cannot place it, up to ``max_runs``; against ends that agree, as a bisection
    places a release inside (placing.place_against_ends: like them, a third behaviour or a
    skip). The placements, and the ends (None where an end gave no figure)."""
    measured = list(range(n)) if measured is None else list(measured)
    placed: list[Placed | None] = [None] * n
    if noisy_metric and len(measured) > 1:
        return _place_paired(n, run_at, measured, batch=batch, max_runs=max_runs,
                             reduce=reduce, paired=paired)
    batch = batch or 1
    runs: dict[int, list[Run]] = {}

    def measure(indices, count: int) -> None:
        for _ in range(count):  # interleaved, as the bisection's ends are
            for i in indices:
                made = runs.setdefault(i, [])
                made.append(run_at(i, len(made) + 1))

    def values(i: int) -> tuple:
        return values_of(runs.get(i, []), reduce)

    first, last = measured[0], measured[-1]
    measure(tuple(dict.fromkeys((first, last))), batch)
    # One release, or an end without a figure: measured, with nothing to place against.
    if first == last or not values(first) or not values(last):
        for i in (first, last):
            placed[i] = Placed(i, tuple(runs[i]), None, values(i))
        return placed, None
    classifier = make_classifier(values(first), values(last))
    ends = classifier.ends()

    def place(i: int) -> Placement | None:
        if not values(i):
            return None
        if ends.distinct:
            return classifier(values(i))
        return place_against_ends(runs[i], values(i), classifier)

    for i, label in ((first, Label.OLD), (last, Label.NEW)):
        placed[i] = Placed(i, tuple(runs[i]), Placement(label, None, reason="an end"),
                           values(i))
    for i in measured[1:-1]:
        measure((i,), batch)
        while True:
            placement = place(i)
            if placement is None or placement.label is not Label.AMBIGUOUS \
                    or len(runs[i]) + batch > max_runs:
                break
            measure((i,), batch)
        placed[i] = Placed(i, tuple(runs[i]), placement, values(i))
    return placed, ends


def _place_paired(n: int, run_at: Callable[[int, int], Run], measured: list[int], *,
                  batch: int | None, max_runs: int, reduce: Reduce,
                  paired: Paired | None) -> tuple[list[Placed | None], object]:
    m = len(measured)
    s = search_metric(m, lambda j, number: run_at(measured[j], number), None,
                      noisy_metric=True, batch=batch, max_runs=max_runs, reduce=reduce,
                      paired=paired, visit=visit_every)
    placed: list[Placed | None] = [None] * n
    for j, p in s.placed.items():
        placed[measured[j]] = replace(p, index=measured[j])
    if s.status == Status.UNMEASURABLE:  # nothing to measure the others against
        return [replace(p, placement=None) if p else None for p in placed], None
    if s.status in (Status.ALIKE, Status.UNDECIDED):  # each release measured as often as an end
        for j in range(1, m - 1):
            got = tuple(run_at(measured[j], number)
                        for number in range(1, len(s.placed[0].runs) + 1))
            placed[measured[j]] = Placed(measured[j], got, None, values_of(got, reduce))
    if s.status == Status.UNDECIDED:  # no change told apart: neither end is "old" nor "new"
        for j in (0, m - 1):
            p = placed[measured[j]]
            placed[measured[j]] = replace(p, placement=Placement(
                Label.AMBIGUOUS, None, reason="the ends are undecided at this machine's noise"))
    return placed, s.ends


def label_of(placed: Placed, ends) -> Label | Shown:
    """Label.OLD, NEW, AMBIGUOUS, or Shown's: a third behaviour, like the ends (ends that
    agree), measured (nothing to place it against), no figure."""
    p = placed.placement
    if p is None:
        return Shown.MEASURED if placed.values else Shown.NO_FIGURE
    if p.third:
        return Shown.THIRD
    if p.label is Label.SKIP:  # measured, but not placed within the cap
        return Label.AMBIGUOUS if placed.values else Shown.NO_FIGURE
    if ends is not None and not ends.distinct and p.label in (Label.OLD, Label.NEW):
        return Shown.LIKE_THE_ENDS
    return p.label


# -- one question over its releases ---------------------------------------------------------


@dataclass
class Sweep:
    """One question asked of its releases (the backend's, or ``--also-target``'s), with the
    runs made so far (``made``: (COMPARE label or "", index, run number) -> run).

    The case's COMPARE programs are measured in the same process as the case (the harness's
    ``--compare``: one jax start a release); a case with no series, each in its own."""

    question: Question
    backend: str
    planned: list[Planned]
    timeout: float | None
    lab: Lab
    made: dict = field(default_factory=dict)
    results: list[dict] = field(default_factory=list)  # each release's, once placed

    def __post_init__(self) -> None:
        q = self.question
        programs = q.case.compare if q.case else {}
        self.measured = with_compare(q)
        self.beside: dict[str, Question] = {  # COMPARE programs measured on their own
            label: with_params(q, params) for label, params in programs.items()
            if not self.measured.compare}
        usable = self.usable
        self.timer = EndsTimer(self._measure, (usable[0], usable[-1]) if usable else (0, 0),
                               self.timeout, hang_is_value=q.metric == "error",
                               first=self.backend.first_run_limit)

    @property
    def usable(self) -> list[int]:
        return [k for k, p in enumerate(self.planned) if not p.skip]

    @property
    def where(self) -> str:
        return target_label(self.question.target) or self.backend

    def _measure(self, k: int, number: int, seconds: float) -> Run:
        return self.lab.run(self.planned[k].release, self.backend, self.measured, number,
                            timeout=seconds)

    def run_at(self, k: int, number: int, label: str = "") -> Run:
        """Run ``number`` of release ``k`` (of a COMPARE program: ``label``), made once."""
        key = (label, k, number)
        if key not in self.made:
            self.made[key] = self.timer(k, number) if not label else self.lab.run(
                self.planned[k].release, self.backend, self.beside[label], number,
                timeout=self.timer.limit.seconds)
        return self.made[key]

    def compared(self, placed: Placed) -> dict:
        """Each COMPARE program's series at the release ``placed``."""
        if not self.beside:
            run = next((r for r in placed.runs if r.document), None)
            return {label: series_of(made) for label, made in compared_runs(run).items()}
        return {label: series_of(self.run_at(placed.index, 1, label)) for label in self.beside}

    def ahead(self) -> list[tuple[int, int, str]]:
        """The runs a deterministic metric will make of every release, measurable side by
        side ((index, run number, COMPARE label)); none for a noisy one, whose runs pair with
        the ends' in the order they are made."""
        if self.question.noisy:
            return []
        batch = batch_size(self.question)
        return ([(k, n, "") for k in self.usable for n in range(1, batch + 1)]
                + [(k, 1, label) for k in self.usable for label in self.beside])

    def stored(self, k: int) -> bool:
        release = self.planned[k].release
        return not self.lab.remeasure and all(
            self.lab.store.path(store_key(q, release, self.backend, "metric", run=1)).is_file()
            for q in (self.measured, *self.beside.values()))

    def place(self, runs: int | None, max_runs: int | None, threshold: float | None):
        q = self.question
        batch = batch_size(q, runs)
        most = max(batch, max_runs or (MAX_RUNS_NOISY if q.noisy else 1))
        return place_every(len(self.planned), self.run_at, classifier_for(q, threshold),
                           noisy_metric=q.noisy, batch=runs if q.noisy else batch,
                           max_runs=most, reduce=reduce_for(q), measured=self.usable,
                           paired=paired_test(threshold))


def result_document(s: Sweep, planned: Planned, placed: Placed | None, ends) -> dict:
    """A release's result as its file holds it (docs/schema.md, "A sweep's result")."""
    q = s.question
    version = str(planned.release.version)
    case = {k: v for k, v in q.case.as_json(q.params).items()
            if k != "path"}  # a clone's own path: the same result from any clone
    doc = {"schema": SCHEMA, "kind": "sweep-result", "release": version, "backend": s.backend,
           "target": q.target or None, "metric": q.metric, "unit": UNITS.get(q.metric, ""),
           "case": case, "over": list(q.over) if q.over else None,
           "asked": question_argv(q, s.backend)}
    if placed is None:
        return {**doc, "label": "skipped", "skipped": planned.skip, "seconds": 0.0}
    first = next((r for r in placed.runs if r.document), None)
    made = (first.document if first else {}) or {}
    label = label_of(placed, ends)
    failure = placed.failure if not placed.values else None
    return {**doc, "jaxlib": made.get("jaxlib") or next(
                (r.installed["jaxlib"] for r in placed.runs if r.installed.get("jaxlib")), None),
            "device": made.get("device"), "deviceless": bool(made.get("deviceless")),
            "label": label, "reason": placed.placement.reason if placed.placement else None,
            "error": failure.error if failure else None,
            "figure": figure(q.metric, seen(q, placed)), "series": series_of(first),
            "compare": s.compared(placed), "environment": made.get("environment"),
            "seconds": round(sum(r.seconds for r in placed.runs) + sum(
                s.run_at(placed.index, 1, label).seconds for label in s.beside), 2),
            "runs": [{k: v for k, v in r.as_json().items() if k != "document"}
                     for r in placed.runs]}


def result_file(reports: Path, version: str, where: str) -> Path:
    return reports / f"jax-{version}-{where.replace('/', '_')}.json"


def write_result(reports: Path, document: dict, where: str, say: Say) -> Path | None:
    """Write a release's result whole; one without a figure (a failure, a release skipped
    here) never replaces one with a figure."""
    path = result_file(reports, document["release"], where)
    if not has_figure(document) and has_figure(read_result(path) or {}):
        say(f"jax {document['release']} ({where}): kept the earlier result in {path}")
        return None
    # Measured again with the same outcome (other timings, another machine's kernel or code
    # sizes only; one release swept alone, with nothing to label it against): the file stays
    # as it was, so that a clone's rerun (or nox -s repro_release) leaves it clean.
    alone = (frozenset({"label", "reason"}) if document.get("label") == Shown.MEASURED
             else frozenset())
    write_json_if_changed(path, document, also_ignore=RUN_DEPENDENT_KEYS | alone)
    return path


def has_figure(document: dict) -> bool:
    return bool((document.get("figure") or {}).get("n"))


# -- the summary ----------------------------------------------------------------------------


# -- main -----------------------------------------------------------------------------------


def _releases(n: int) -> str:
    return f"{n} release{'' if n == 1 else 's'}"


def plan_line(s: Sweep) -> str:
    """What this run will do: how many releases it measures, and how many it need not."""
    skipped = [p for p in s.planned if p.skip]
    stored = [k for k in s.usable if s.stored(k)]
    to_measure = len(s.usable) - len(stored)
    chosen = s.backend
    on = s.backend.words(s.question.target)
    parts = [f"{_releases(to_measure)} to measure on {on}" if to_measure
             else f"nothing to measure on {on}"]
    if stored:
        parts.append(f"{_releases(len(stored))} stored from earlier runs"
                     + (" (--remeasure measures again)" if not to_measure else ""))
    gpu_only = [p for p in skipped if chosen.needs_device(p.skip)]
    if gpu_only:
        parts.append(f"{_releases(len(gpu_only))} only {chosen.real_device} can compile for")
    if len(skipped) > len(gpu_only):
        parts.append(f"{_releases(len(skipped) - len(gpu_only))} not installable here")
    return ", ".join(parts)


def run(args: argparse.Namespace, say: Say, lab: Lab | None = None) -> int:
    note = ignored_environment_note()
    if note:
        say(note)
    executor = executor_from(args.executor, args.slurm_args, say)  # checked before anything
    with executor.interruptible():  # Ctrl-C cancels every job first
        return _run(args, say, executor, lab)


def _run(args: argparse.Namespace, say: Say, executor: Executor, lab: Lab | None) -> int:
    target = target_option(args.target)
    question = question_from(args.metric, args.case or str(SCAN_CASE), args.param, (),
                             target=target, xla_flags=args.xla_flags.strip(),
                             samples=args.samples, kind=args.metric_kind, over=args.over,
                             devices=args.devices)
    backend = resolve_backend(args.backend, target, gpu_elsewhere=executor is not LOCAL)
    reports: Path = args.reports or (Path("reports") / (
        "repro" if args.case is None else f"{question.case.name}-{question.metric}"))
    asked = (" ".join(f"jax {r}" for r in args.releases) if args.releases
             else f"jax {args.first or 'the oldest'} … {args.last or 'the newest'}")
    catalogue = catalogue_for(asked, args.refresh_catalogue)
    real = lab or RealLab(say, remeasure=args.remeasure, executor=executor)
    # As a bisection: a flag no end of the range knows is refused before anything is measured;
    # a release whose XLA does not know one is a failed run that says so, never a crash.
    lab = FlagCheckedLab(real, lister(real, say))
    planned = offline(select(catalogue, args, backend), catalogue, args, backend)
    measured = [p.release for p in planned if not p.skip]
    if measured:
        lab.check_at_ends([("--xla-flags", question.xla_flags)], [measured[0], measured[-1]],
                          backend)
    check_reports_folder(reports)
    sweeps = [Sweep(question, backend, planned, args.timeout, lab)]
    if args.also_target:  # one pool for both: neither waits for the other's slowest release
        also = replace(question, target=target_option(args.also_target))
        compile_only = backends.resolve("auto", also.target)
        sweeps.append(Sweep(also, compile_only, offline(select(catalogue, args, compile_only),
                                                        catalogue, args, compile_only),
                            args.timeout, lab))
    say(f"{question.metric} of {question.label}; results in {reports}/")
    for s in sweeps:
        say(plan_line(s))
    command = args.command or shlex.join([*PROG.split(), *args.argv])
    written = 0
    try:
        measure_ahead(sweeps, reports, args.jobs or parallel_runs())
        for s in sweeps:
            written += write_sweep(s, reports, args, say)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; the runs made are stored (a rerun reads them back), "
              f"and {reports}/ holds no half-written result", file=sys.stderr, flush=True)
        return 130
    except OSError as exc:  # a full or read-only disk under reports/ or the cache
        print(f"{PROG}: error: cannot write ({exc.strerror or exc}"
              f"{': ' + str(exc.filename) if exc.filename else ''}); "
              f"{_releases(written)} written are kept in {reports}/", file=sys.stderr,
              flush=True)
        return 2
    summary = write_summary(reports, command)
    results, _ = load_results(reports)
    if not args.quiet:
        print(results_table(results))
    say(f"summary: {summary}")
    problems = [f"jax {d['release']} ({where_words(d)}): {d['error']}" for s in sweeps
                for d in s.results if d.get("error")]
    for problem in problems:
        print(f"{PROG}: error: {problem}", file=sys.stderr)
    return 2 if problems else 0


def measure_ahead(sweeps: list[Sweep], reports: Path, jobs: int) -> None:
    """Every run a deterministic metric will make, ``jobs`` at a time (a compile keeps one
    core busy), the longest first by what each release took when its result in REPORTS was
    measured (a clone carries them): no long release starts last with the other cores idle."""
    work = [(s, *a) for s in sweeps for a in s.ahead()]

    def expected(item) -> float:
        s, k, _, _ = item
        previous = read_result(result_file(reports, str(s.planned[k].release.version),
                                           s.where))
        return float("inf") if previous is None else previous.get("seconds", 0.0)

    work.sort(key=lambda item: -expected(item))
    pool = ThreadPoolExecutor(max(1, min(jobs, len(work))), thread_name_prefix="release")
    try:
        for future in [pool.submit(s.run_at, k, n, label) for s, k, n, label in work]:
            future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def write_sweep(s: Sweep, reports: Path, args: argparse.Namespace, say: Say) -> int:
    """Place every release of ``s`` and write each one's result; how many were written."""
    placed, ends = s.place(args.runs, args.max_runs, args.threshold) if s.usable \
        else ([None] * len(s.planned), None)
    batch, reduce = batch_size(s.question, args.runs), reduce_for(s.question)
    written = 0
    for k, (planned, p) in enumerate(zip(s.planned, placed)):
        if p is None and not planned.skip:  # an end gave no figure: measured, not labelled
            runs = tuple(s.run_at(k, n) for n in range(1, batch + 1))
            p = Placed(k, runs, None, values_of(runs, reduce))
        document = result_document(s, planned, p, ends)
        s.results.append(document)
        where = f"jax {document['release']} ({s.backend.words(s.question.target)})"
        if p is None:
            say(f"{where}: skipped, {planned.skip}")
        else:
            say(f"{where}: {document['label']}, "
                + ((document["series"] or {}).get("shape") or document["error"]
                   or figure_text(s.question.metric, document["unit"], document["figure"])))
        written += write_result(reports, document, s.where, say) is not None
    return written


def main(argv: list[str] | None = None, lab: Lab | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    args.argv = argv

    def say(message: str) -> None:
        if not args.quiet:  # one write a line: releases measured at once share stderr
            print(message + "\n", end="", file=sys.stderr, flush=True)

    try:
        if args.render is not None:
            say(f"summary: {render_summary(args.render)}")
            return 0
        return run(args, say, lab)
    except UserError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
