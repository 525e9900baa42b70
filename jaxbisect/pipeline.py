"""A bisection's pipeline, as a list of stages: what ``python -m bisect`` runs between parsing
its arguments and printing the answer (docs/design.md draws it).

Before anything runs, the checks (``setup``: the question, the clone ``--commits`` reads, the
range, the XLA flags against each end's own list, the reports folder); then ``STAGES`` in
order, each asked for or not by the answer so far and the options: the releases, the jax
commits below the pair (the same bisection one level down), the standalone program, the
explanation, the flags to try, the minimal program, the HLO module below jaxlib, the cluster.
The report is written once, after the last stage (``bisect``): a refusal or Ctrl-C at any
stage leaves an earlier report as it was.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jaxbisect.errors import UserError
from jaxbisect.evidence.where import following_the_swaps
from jaxbisect.files import check_reports_folder, keep_if_steady, texts_of
from jaxbisect.lab.catalogue import catalogue_for
from jaxbisect.lab.environments import resolve_backend
from jaxbisect.lab.executors import LOCAL, Executor, cluster_document
from jaxbisect.lab.harness import DEFAULT_TIMEOUT, target_option
from jaxbisect.lab.jax_history import locate_repo
from jaxbisect.lab.known_flags import FlagCheckedLab, flag_names, lister
from jaxbisect.lab.lab import Lab, RealLab
from jaxbisect.lab.machine import default_jobs, parallel_runs
from jaxbisect.lab.runs import store_key
from jaxbisect.report.commands import wider_range
from jaxbisect.search import budgets
from jaxbisect.search.placing import Behaviour
from jaxbisect.search.question import question_from
from jaxbisect.search.rounds import Status
from jaxbisect.stages.beside import STEP, Slots, SlottedLab, Step, Timings, run_stages
from jaxbisect.stages.commits import bisect_commits, commits_in, jaxlib_changes
from jaxbisect.stages.libtpu import libtpu_part, tpu_target
from jaxbisect.stages.releases import (
    MetricRequest,
    PairKind,
    bisect_metric,
    full_size_tables,
    releases_between,
)

Say = Callable[[str], None]


@dataclass
class Bisecting:
    """What the stages share: the command line, the question and the lab, the bisection as
    it stands, and the report's parts beside it (``extra``) as they land."""

    args: argparse.Namespace
    say: Say
    question: object
    catalogue: object
    request: MetricRequest
    lab: Lab
    asked: list                      # the XLA flags asked for: (option, flags)
    repo: Path | None = None         # --commits: the jax clone read
    executor: Executor = LOCAL
    bisection: object = None         # bisection.MetricBisection, once the releases ran
    commits: tuple = ()              # --commits: a CommitBisection a pair the answer names
    extra: dict = field(default_factory=dict)
    before: dict = field(default_factory=dict)   # an earlier report's texts (files.texts_of)
    path: Path | None = None         # the report, once written
    doc: dict | None = None
    jobs: int = 1                    # the evidence's processes at once (--jobs)
    tabled: bool = False             # the tables at the full size are in (or not asked)
    dumped: object = None            # the HLO module dumped and compiled, before its culprit
    timings: Timings = field(default_factory=Timings)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.slots = Slots(self.jobs) if self.jobs > 1 else None

    @property
    def evidence_lab(self) -> Lab:
        """The lab a step after the answer asks: beside other steps, its processes take
        slots (``--jobs``), at its step's place in the queue."""
        if self.slots is None:
            return self.lab
        return SlottedLab(self.lab, self.slots, getattr(STEP, "first", 0))

    @property
    def found(self) -> bool:
        return self.bisection.search.status == Status.FOUND

    @property
    def answered(self) -> bool:
        """Whether the searches are over (the releases', and the commits' where asked)."""
        return "releases" in self.timings.steps and (
            self.repo is None or "jax commits" in self.timings.steps)

    def landed(self) -> object:
        """A part of the evidence landed: with no earlier report, the report is written
        with what has landed (Ctrl-C, even a kill, keeps it), once the tables are in (its
        chart is drawn from them: drawn once, not again when they land); else nothing yet."""
        return None if self.before or not self.tabled else self.write()

    def flags_known(self) -> None:
        """Which releases' XLA know a flag asked for that some release's does not."""
        if known := self.lab.document(self.asked):
            self.extra["xla_flags_known"] = known

    def write(self) -> tuple[Path, dict]:
        from jaxbisect.report.document import write_report

        with self._lock:  # steps land beside each other: one writing at a time
            return write_report(self.bisection, self.args.reports, dict(self.extra),
                                self.commits)


def question_of(args: argparse.Namespace, command: tuple[str, ...]):
    """The question the command line asks (a UserError for a bad case, parameter or metric,
    or XLA flags XLA would not read as flags)."""
    for option, flags in (("--xla-flags", args.xla_flags),
                          *(("--try-xla-flags", f) for f in args.try_xla_flags)):
        try:
            flag_names(flags)
        except UserError as exc:
            raise UserError(f"{option}: {exc}") from None
    return question_from(args.metric, args.case, args.param, command,
                         target=target_option(args.target), xla_flags=args.xla_flags,
                         samples=args.samples, kind=args.metric_kind, over=args.over,
                         devices=args.devices, error_match=args.error_match)

def request_from(args: argparse.Namespace, question, catalogue,
                 executor: Executor = LOCAL) -> MetricRequest:
    start, end = (str(catalogue.get(v).version) for v in (args.start, args.end))
    return MetricRequest(start=start, end=end,
                         backend=resolve_backend(args.backend, question.target,
                                                 gpu_elsewhere=executor is not LOCAL),
                         question=question, threshold=args.threshold, timeout=args.timeout,
                         remeasure=args.remeasure, runs=args.runs,
                         max_runs=args.max_runs, include_yanked=args.include_yanked,
                         executor=executor, try_xla_flags=tuple(args.try_xla_flags),
                         commits=args.commits,
                         interior_budget=args.interior_budget,
                         jax_repo=args.jax_repo, xla_repo=args.xla_repo,
                         # Unasked, one for a timing (two runs at once on one machine load
                         # each other) and as many as the machine holds for anything else.
                         jobs=args.jobs or (1 if question.noisy else default_jobs()))

def add_reproducer(bisection, lab: Lab, extra: dict, say: Say, jobs: int = 1) -> None:
    """The standalone program of a found pair, run at both ends (jaxbisect/stages/program_runs.py),
    into ``extra``; ``jobs`` runs at once."""
    from jaxbisect.stages.program_runs import reproducer_of

    part = reproducer_of(bisection, lab, say, extra.get("minimal"), jobs=jobs)
    if part is not None:
        extra["reproducer"] = part

def with_commits(b, span_of, lab: Lab, say: Say) -> tuple:
    """The jax commits below every pair ``b``'s answer names, bisected (CommitBisection, one
    a pair): the change found, or where each change inside alike ends came and where it went;
    with no pair, one part saying why nothing was searched."""
    pairs = b.named_pairs()
    if len(pairs) <= 1:
        at, kind = pairs[0] if pairs else (None, PairKind.CAME)
        return (bisect_commits(b, span_of, lab, say, kind=kind, pair=None if b.pair else at),)
    parts = []
    for at, kind in pairs:
        old, new = (b.candidates[i].version for i in at)
        say(f"the jax commits where it {kind}, jax {old} → {new}")
        parts.append(bisect_commits(b, span_of, lab, say, pair=at, kind=kind))
    return tuple(parts)


def try_flags(b, lab: Lab, say: Say) -> list[dict]:
    """``--try-xla-flags``: the first new release measured with each set of flags added (at
    the search's size), placed by the bisection's classifier: ``restores`` where it gives the
    old behaviour back."""
    from jaxbisect.evidence.explain import TRIED_FLAGS, behaviour_under

    classify, first_new = b.classifier(), b.pair[1]
    out = []
    for i, flags in enumerate(b.request.try_xla_flags):
        tried = behaviour_under(b, lab, classify, first_new, flags, say, test="--try-xla-flags",
                                beside=TRIED_FLAGS + i)
        out.append({**tried, "restores": tried["behaviour"] == Behaviour.OLD})
    return out

def attribute(bisection, lab: Lab, args: argparse.Namespace, extra: dict, say: Say,
              rewrite: Callable[[], object], attribution: Callable | None = None) -> None:
    """Where the change lies (JAX's lowering, XLA's HLO passes, below HLO) and the commits
    between the pair's pins, into ``extra["attribution"]``."""
    if attribution is None:
        from jaxbisect.evidence.explain import attribution
    found = attribution(bisection, lab, say, jax_repo=args.jax_repo, xla_repo=args.xla_repo)
    if tpu_target(bisection.request.question):  # the swaps say where, not the modules
        found = following_the_swaps(found, extra.get("libtpu"))
    extra["attribution"] = found
    rewrite()


def explained(extra: dict) -> bool:
    """Whether the attribution asks for the flag or pass behind the change."""
    return (extra.get("attribution") or {}).get("culprit") in ("xla", "below-hlo", "jaxlib")


def explain_culprit(bisection, lab: Lab, args: argparse.Namespace, extra: dict, say: Say,
                    rewrite: Callable[[], object], *, searches: tuple | None = None) -> None:
    """Which XLA flag or HLO pass brings the old figure back, within ``--explain-budget``
    seconds, where the attribution puts the change on XLA's side; ``extra["explanation"]``
    set (and ``rewrite`` called) as each part lands. ``searches``: (explain_flags,
    explain_passes), for tests."""
    if not explained(extra):
        return
    if searches is None:
        from jaxbisect.evidence.explain import explain_flags, explain_passes
    else:
        explain_flags, explain_passes = searches
    deadline = budgets.Deadline(args.explain_budget)
    budget = {"seconds": args.explain_budget}
    say(f"explaining it: XLA flags, then HLO passes, within {args.explain_budget:.0f} s "
        f"(--explain-budget)")

    def landed(culprit: dict) -> None:
        # A part once in ``extra`` is never changed: the report may be written beside it.
        extra["explanation"] = {"culprit": culprit, "budget": dict(budget)}
        rewrite()

    culprit = explain_flags(bisection, lab, say, deadline=deadline, progress=landed)
    landed(culprit)
    if culprit["kind"] in ("none", "workaround") \
            and extra["attribution"]["culprit"] == "xla" \
            and bisection.request.question.case is not None and not deadline.spent:
        flags = culprit
        culprit = {**explain_passes(bisection, lab, say, deadline=deadline,
                                    progress=lambda doc: landed({**doc, "flags": flags})),
                   "flags": flags}
    budget.update(spent=round(args.explain_budget - deadline.left, 1),
                  exhausted=deadline.spent)
    if args.xla_repo is not None:  # the commits that touch what explains it
        from jaxbisect.evidence.pin_ranges import culprit_commits

        extra["attribution"] = {**extra["attribution"], "xla_culprit_commits": culprit_commits(
            culprit, extra["attribution"], args.xla_repo)}
    landed(culprit)


def explain(bisection, lab: Lab, args: argparse.Namespace, extra: dict, say: Say,
            rewrite: Callable[[], object], *, searches: tuple | None = None) -> None:
    """Where the change lies, XLA's dumps of a memory case, then which XLA flag or HLO pass
    brings the old figure back, one after the other (the pipeline runs them beside each
    other where it may); ``extra`` filled (and ``rewrite`` called) as each part lands.
    ``searches``: (attribution, explain_flags, explain_passes), for tests."""
    from jaxbisect.evidence.collect import buffers_at_peak

    attribute(bisection, lab, args, extra, say, rewrite,
              None if searches is None else searches[0])
    buffers_at_peak(bisection, lab, say, extra, rewrite)  # a memory case: XLA's dumps
    explain_culprit(bisection, lab, args, extra, say, rewrite,
                    searches=None if searches is None else searches[1:])


def releases(s: Bisecting) -> None:
    """The bisection over the releases of the range (its tables at the full size apart:
    ``tables``); where the ends agree and nothing came and went inside, the wider range to
    look in next."""
    from jaxbisect.report.document import report_path

    s.bisection = bisect_metric(s.catalogue, s.request, s.lab, s.say, tables=False)
    s.tabled = not _tables(s)
    s.flags_known()
    if s.bisection.status == Status.ALIKE and not s.bisection.came_and_went:
        s.extra.update(wider_range(s.catalogue, s.bisection))
    md = report_path(s.bisection, s.args.reports)
    s.before = texts_of([md, md.with_suffix(".json")])


def libtpu(s: Bisecting) -> None:
    """A TPU target's pair: which part of the release the change came with (the swaps), and
    for libtpu the first libtpu release that shows it (stages/libtpu.py)."""
    if (part := libtpu_part(s.bisection, s.lab, s.say)) is not None:
        s.extra["libtpu"] = part


def _tpu_pair(s: Bisecting) -> bool:
    return s.found and tpu_target(s.request.question)


def commits(s: Bisecting) -> None:
    """``--commits``: the jax commits below every pair the answer names."""
    s.commits = with_commits(s.bisection, commits_in(s.repo, s.say), s.lab, s.say)
    if s.extra.get("libtpu") and s.bisection.pair:  # a TPU pair: jaxlib's own C++ beside it
        old, new = (str(r.version) for r in s.bisection.pair)
        s.extra["libtpu"] = {**s.extra["libtpu"], "jaxlib_commits": jaxlib_changes(
            s.repo, old, new)}


def tables(s: Bisecting) -> None:
    """The report's tables: the full size and the case's COMPARE programs at the ends and
    the pair (bisection.full_size_tables)."""
    if s.slots is not None and s.request.question.over and _measures_tables(s):
        # The chart is drawn from these figures once they land, at the end: its library
        # (1.3 CPU-s to import) is imported now, beside the runs, not after the last.
        threading.Thread(target=_chart_library, name="chart", daemon=True).start()
    s.bisection = full_size_tables(s.bisection, s.evidence_lab)
    s.tabled = True


def reproducer(s: Bisecting) -> None:
    add_reproducer(s.bisection, s.evidence_lab, s.extra, s.say, s.jobs)


def where(s: Bisecting) -> None:
    """Where the change lies (explain.attribution)."""
    attribute(s.bisection, s.evidence_lab, s.args, s.extra, s.say, s.landed)


def buffers(s: Bisecting) -> None:
    """A memory case: both ends' XLA dumps, the buffers at the peak (evidence.collect)."""
    from jaxbisect.evidence.collect import buffers_at_peak

    buffers_at_peak(s.bisection, s.evidence_lab, s.say, s.extra, s.landed)


def explanation(s: Bisecting) -> None:
    """Which XLA flag or HLO pass explains it, where the change lies on XLA's side."""
    explain_culprit(s.bisection, s.evidence_lab, s.args, s.extra, s.say, s.landed)


def tried_flags(s: Bisecting) -> None:
    s.extra["try_xla_flags"] = try_flags(s.bisection, s.evidence_lab, s.say)
    s.flags_known()


def minimal(s: Bisecting) -> None:
    """``--minimize``: the smallest parameters that still show the change (the standalone
    program and the HLO module are made at them after it)."""
    from jaxbisect.files import display_path
    from jaxbisect.report.document import unit_of
    from jaxbisect.stages.minimize import minimal_document, minimize

    b, req = s.bisection, s.request
    q = b.request.question
    old, new = b.pair
    shrunk, first, names = minimize(old, new, req.backend, q, s.evidence_lab, s.say,
                                    threshold=req.threshold, timeout=b.timeout, runs=req.runs,
                                    max_runs=req.max_runs, budget=s.args.minimize_budget)
    s.extra["minimal"] = {**minimal_document(shrunk, first, names, q, old, new, unit_of(b)),
                          "case_path": display_path(q.case.path)}


def hlo_dumped(s: Bisecting) -> None:
    """Below jaxlib: the module dumped at the last good release, compiled alone at the pair
    (and the releases ``--hlo-releases`` asks for)."""
    from jaxbisect.evidence.hlo import dump_and_compile

    came_with = s.commits[0].came_with if len(s.commits) == 1 else None
    s.dumped = dump_and_compile(s.bisection, s.evidence_lab, s.extra, s.say,
                                came_with=came_with, releases=s.args.hlo_releases,
                                jobs=s.jobs)


def hlo_module(s: Bisecting) -> None:
    """The module with the explanation's culprit set, and the bundle beside the report."""
    from jaxbisect.evidence.hlo import with_culprit
    from jaxbisect.report.document import report_path

    s.extra["hlo_module"] = with_culprit(s.bisection, s.evidence_lab, s.extra, s.say,
                                         report_path(s.bisection, s.args.reports), s.dumped)


def cluster(s: Bisecting) -> None:
    if part := cluster_document(s.executor):
        s.extra["cluster"] = part


def _measures_tables(s: Bisecting) -> bool:
    """Whether the pair's tables are measured now (not all stored: a new chart follows)."""
    from jaxbisect.search.question import with_compare

    b = s.bisection
    full = with_compare(b.request.question)
    return b.pair is not None and any(
        not s.lab.store.path(store_key(full, r, b.request.backend, "metric", run=1)).is_file()
        for r in b.pair)


def _chart_library() -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except ImportError:  # no chart library here: the report says so as before
        pass


def _tables(s: Bisecting) -> bool:
    q = s.request.question
    return s.bisection.sized is not None or bool(q.case and q.case.compare)


def _evidence(s: Bisecting) -> bool:
    return s.found and not s.args.no_evidence


def _minimize(s: Bisecting) -> bool:
    return s.found and s.args.minimize and s.request.question.case is not None


SERIAL = None  # after every step before it, in the pipeline's own thread: the searches
# In the order one job runs them; beside each other, each after the steps it names, and
# where several wait for a process slot the lowest ``first`` goes first: the longest chain
# (where it lies, the explanation, the module with its culprit) before the rest.
STAGES = (
    Step("releases", lambda s: True, releases, SERIAL),
    Step("libtpu", _tpu_pair, libtpu, SERIAL),
    Step("jax commits", lambda s: s.repo is not None, commits, SERIAL),
    Step("tables", _tables, tables, ("where the change lies",), first=5),
    Step("minimal program", _minimize, minimal, (), first=4),
    Step("standalone program", lambda s: True, reproducer,
         ("minimal program", "where the change lies"), first=6),
    Step("where the change lies", _evidence, where, (), first=0),
    Step("buffers at the peak", _evidence, buffers, (), first=7),
    Step("explanation", _evidence, explanation, ("where the change lies",), first=1),
    Step("flags to try", lambda s: s.found and bool(s.request.try_xla_flags), tried_flags, (),
         first=8),
    Step("HLO module", _evidence, hlo_dumped, ("where the change lies", "minimal program"),
         first=2),
    Step("HLO module's culprit", lambda s: s.dumped is not None, hlo_module,
         ("HLO module", "explanation"), first=3),
    Step("cluster", lambda s: True, cluster, (), first=9),
)


def setup(args: argparse.Namespace, command: tuple[str, ...], say: Say,
          executor: Executor = LOCAL, lab: Lab | None = None) -> Bisecting:
    """Every check before anything is measured: bad input (the case, its parameters, the XLA
    flags against each end's own list), the clone ``--commits`` reads (found or made), the
    range, the reports folder; one line and exit 2 where one fails. ``lab``: the releases'
    (the real one, uv environments and processes, unless one is given: tests)."""
    from jaxbisect.evidence.hlo import check_releases

    question = question_of(args, command)
    repo = locate_repo(args.jax_repo, say) if args.commits else None
    catalogue = catalogue_for(f"jax {args.start} … {args.end}", args.refresh_catalogue)
    request = request_from(args, question, catalogue, executor)
    asked = [("--xla-flags", question.xla_flags),
             *(("--try-xla-flags", flags) for flags in request.try_xla_flags)]
    base = lab or RealLab(say, remeasure=request.remeasure, executor=executor)
    lab = FlagCheckedLab(base, lister(base, say))
    measured, _ = releases_between(catalogue, request.start, request.end, request.backend,
                                   question.target, include_yanked=request.include_yanked)
    check_releases(args.hlo_releases, measured)
    lab.check_at_ends(asked, [measured[0], measured[-1]], request.backend)
    check_reports_folder(args.reports)
    # Unasked, the evidence's processes one a core, as the machine holds them; a timing's
    # one at a time, as its search's (two runs at once on one machine load each other).
    jobs = args.jobs or (1 if question.noisy else parallel_runs())
    return Bisecting(args, say, question, catalogue, request, lab, asked, repo, executor,
                     jobs=jobs)


INTERRUPTED = "the evidence was interrupted (Ctrl-C): what it measured is kept"


def bisect(args: argparse.Namespace, command: tuple[str, ...], say: Say,
           executor: Executor = LOCAL, lab: Lab | None = None) -> Bisecting:
    """The checks, every stage asked for, then the report (written once, whole: an earlier
    report of the same question is replaced only by a finished answer, and a rerun with the
    same figures leaves it as it was). Every step's time: ``s.timings``."""
    timings = Timings()
    with timings.timed("setup"):
        s = setup(args, command, say, executor, lab)
    s.timings = timings
    try:
        run_stages(STAGES, s, jobs=s.jobs, timings=timings, slots=s.slots)
    except KeyboardInterrupt:
        # With no earlier report, the evidence after a finished answer is kept: the parts
        # that landed (their runs are stored either way).
        if s.answered and not s.before:
            s.extra["interrupted"] = INTERRUPTED
            s.say(f"report: {s.write()[0]} (interrupted)")
        raise
    with timings.timed("report"):
        s.path, s.doc = s.write()
        keep_if_steady(s.before)
    return s


def explain_one(args: argparse.Namespace, say: Say) -> tuple[Path, dict, dict]:
    """``--explain RELEASE --case FILE``: which HLO passes change the case's metric under one
    release. The report, its document and the explanation."""
    from jaxbisect.evidence.explain import explain_release
    from jaxbisect.report.document import write_explain_report
    from jaxbisect.search.question import with_params
    from jaxbisect.stages.releases import smaller_size

    asked = question_of(args, ())
    # A shape is scale-free: explained at the case's search size, as a bisection's is.
    question = with_params(asked, smaller_size(asked))
    catalogue = catalogue_for(f"jax {args.explain}", args.refresh_catalogue)
    release = catalogue.get(args.explain)
    backend = resolve_backend(args.backend, question.target)
    why = catalogue.unusable_reason(release, backend)
    if why:
        raise UserError(f"jax {release.version} cannot be installed here: {why}")
    real = RealLab(say, remeasure=args.remeasure)
    lab = FlagCheckedLab(real, lister(real, say))
    lab.check_at_ends([("--xla-flags", question.xla_flags)], [release], backend)
    check_reports_folder(args.reports)  # after the checks: a refusal writes nothing
    explanation = explain_release(lab, release, backend,
                                  question, say, threshold=args.threshold,
                                  timeout=args.timeout or DEFAULT_TIMEOUT, runs=args.runs)
    path, doc = write_explain_report(args.reports, release, backend, question, explanation,
                                     threshold=args.threshold, runs=args.runs)
    return path, doc, explanation
