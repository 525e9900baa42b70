"""``python -m bisect --from A --to B``: the first jax release whose behaviour differs from A's.

Also installed as ``jax-bisect`` and run by ``nox -s bisect -- …``: entry points that the
standard library's ``bisect`` module can never shadow.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from repro.options import (
    FLAG_VALUED,
    OneLineParser,
    add_size_options,
    glue_flag_values,
    positive_int,
)
from repro.target import built_in as built_in_targets
from repro.verdict import size_problem

from .budgets import (
    EXPLAIN_BUDGET,
    FIRST_RUN_LIMIT,
    HANGS,
    RUN_FACTOR,
    RUN_FLOOR,
    TEST_FACTOR,
    TEST_FLOOR,
)
from .catalogue import load_catalogue
from .driver import Request, bisect_releases
from .environments import resolve_backend
from .errors import UserError
from .executors import (
    LOCAL,
    Executor,
    add_executor_options,
    cluster_document,
    cluster_markdown,
    executor_from,
)
from .files import check_reports_folder
from .harness import (
    DEFAULT_TIMEOUT,
    HarnessOptions,
    ignored_environment_note,
    target_option,
)
from .machine import default_jobs

if TYPE_CHECKING:
    from .report import NextStep

PROG = "python -m bisect"
EXIT_CODES = """exit status:
  0    a change was found (--explain: a flag or pass explains the growth)
  1    no change in the range (a metric: the ends confidently alike), or no answer from
       the built-in check (an end could not be measured)
  2    bad input or an unusable situation (one line on stderr)
  3    a metric's ends differ but this machine's noise does not let it decide at 99 %
       (undecided, not "no change": more --max-runs or a quieter machine decide it)
  125  a metric bisection cannot measure an end (the release gives no figure)
  130  interrupted (Ctrl-C); every probe finished is stored: rerun to resume"""


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def _fraction(text: str) -> float:
    value = _seconds(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be below 1 (a share of the value), got {text}")
    return value


def parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = OneLineParser(prog=prog, description=__doc__.splitlines()[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter,
                      epilog="After `--`, a command to bisect with instead of the built-in "
                             "check, run inside each\nrelease's environment with git bisect "
                             "run's exit codes: 0 old behaviour, 1-127 new\n(125: skip).\n\n"
                             + EXIT_CODES)
    p.add_argument("--from", dest="start", metavar="RELEASE",
                   help="a jax release with the old behaviour, e.g. 0.4.20")
    p.add_argument("--to", dest="end", metavar="RELEASE",
                   help="a later jax release, e.g. 0.5.0")
    p.add_argument("--explain", metavar="RELEASE",
                   help="no bisection: explain v0's growth under this one release (which HLO "
                        "passes, turned off, keep it constant), instead of --from/--to")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda12"), default="auto",
                   help="auto: cuda12 where an NVIDIA GPU is visible, cpu otherwise")
    p.add_argument("--target", metavar="NAME|FILE",
                   help="bisect XLA's plan for this NVIDIA GPU, compiled without one: "
                        f"{', '.join(built_in_targets())} or a spec file (releases from jax "
                        "0.4.34 on, less 0.4.36 and 0.4.37)")
    add_size_options(p, n_outer=[1, 2, 5, 10, 15], many=True, helps={
        "n_outer": "outer loop counts the verdict is fitted over: two distinct values of 2 or "
                   "more at least (default: the report's 1 2 5 10 15)",
        "n_inner": "the inner scan's length (default 100, the report's)",
        "n_res": "the array is n_res³ values (default 200, the report's)",
        "dtype": "the array's element type (default float32)"})
    p.add_argument("--xla-flags", default="", metavar="FLAGS",
                   help="XLA_FLAGS for every probe; the report says which were in force")
    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help=f"per run; a release that takes longer is skipped (default "
                        f"{DEFAULT_TIMEOUT:.0f}; with --case or --metric: from the ends' own "
                        f"times, see --explain-budget's group)")
    p.add_argument("--reports", type=Path, default=Path("reports"), metavar="DIR",
                   help="where the markdown report and its JSON go (default: reports/)")
    p.add_argument("--try-xla-flags", action="append", default=[], metavar="FLAGS",
                   help="after a change is found, measure v0 under the first new release with "
                        "these XLA_FLAGS too and report whether they restore constant memory "
                        "(repeatable)")
    p.add_argument("--jax-repo", type=Path, metavar="PATH",
                   help="a local clone of jax: its pinned XLA commits give an XLA compare link")
    p.add_argument("--xla-repo", type=Path, metavar="PATH",
                   help="a local clone of openxla/xla: list the commits between the two "
                        "releases' XLA pins that touch the culprit flag or pass")
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="probe up to N releases at once, splitting the window into N+1 parts "
                        f"(default here: {default_jobs()}, from the cores and memory; 1 for a "
                        "timing metric, whose runs would load each other)")
    add_executor_options(p)
    p.add_argument("--remeasure", action="store_true",
                   help="measure every probe again instead of reusing stored results")
    p.add_argument("--no-evidence", action="store_true",
                   help="skip the JAX-or-XLA attribution and the buffer evidence")
    p.add_argument("--refresh-catalogue", action="store_true",
                   help="fetch the release catalogue from PyPI now, however fresh the cached one")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    case = p.add_argument_group(
        "your own program (docs/cases.md)",
        "bisect by a metric of a case file, or of a command that prints a JSON object as its "
        "last line (--metric NAME -- CMD)")
    case.add_argument("--case", metavar="FILE",
                      help="a Python file defining case(**params) -> (fn, args)")
    case.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                      help="override a parameter of case() (repeatable)")
    case.add_argument("--over", metavar="NAME=V1,V2,...",
                      help="bisect by the shape of the metric over these values of a parameter "
                           "(constant, grows, ...; default: the case's OVER; none: one figure)")
    case.add_argument("--metric", metavar="NAME",
                      help="for a case: memory, compile_time, run_time, peak_memory, output or "
                           "error (default: the case's METRIC, else memory); for a command: "
                           "the numeric field of its JSON to compare")
    case.add_argument("--threshold", type=_fraction, default=None, metavar="FRACTION",
                      help="ends closer than this share of their value mean no change "
                           "(default 0.01 for deterministic metrics, 0.10 for noisy ones; "
                           "output: the relative tolerance, default 1e-5)")
    case.add_argument("--samples", type=positive_int, default=None, metavar="N",
                      help="samples a harness run takes of a noisy metric (default 5)")
    case.add_argument("--metric-kind", choices=("auto", "deterministic", "noisy"),
                      default="auto",
                      help="auto: times and peaks are noisy, a command's field too")
    case.add_argument("--minimize", action="store_true",
                      help="once the change is found, shrink the case's integer parameters "
                           "(the built-in case's n_outer, n_inner and n_res) while the two "
                           "releases still behave apart: the minimal reproducer")
    case.add_argument("--minimize-budget", type=_seconds, default=600.0, metavar="SECONDS",
                      help="the most --minimize may spend measuring (default 600)")
    case.add_argument("--runs", type=positive_int, default=None, metavar="N",
                      help="a noisy metric: pairs of the ends (rounds of a release) before "
                           "the sequential test first looks (default 4 pairs, 3 rounds); each "
                           "run is one figure")
    case.add_argument("--max-runs", type=positive_int, default=None, metavar="N",
                      help="a noisy metric: pairs of the ends, and rounds of each release "
                           "beside both ends, at most before the answer is undecided or the "
                           "release a skip (default 10)")
    p.add_argument("--include-yanked", action="store_true",
                   help="measure the yanked releases inside the range as candidates too "
                        "(every report names them either way)")
    # The time limits of a metric bisection (jaxbisect/budgets.py).
    limits = p.add_argument_group(
        "time limits of --case / --metric (docs/cases.md)", textwrap.fill(
        f"Without --timeout, an end's first run may take {FIRST_RUN_LIMIT:.0f} s; every later "
        f"run {RUN_FACTOR:g}× the slower end's first run, {RUN_FLOOR:.0f} s at least. A run "
        f"past its limit hangs: a behaviour, not retried (the error metric's value "
        f"'{HANGS}'). An explanation's run may take {TEST_FACTOR:g}× the release's own run, "
        f"{TEST_FLOOR:.0f} s at least: past that, the setting 'makes the case much slower'.", 88))
    limits.add_argument("--explain-budget", type=_seconds, default=EXPLAIN_BUDGET,
                        metavar="SECONDS",
                        help=f"the most the explanation (XLA flags, then HLO passes) may spend "
                             f"measuring; what is left is reported as not tested (default "
                             f"{EXPLAIN_BUDGET:.0f})")
    return p


def parse(argv: list[str], prog: str = PROG) -> tuple[argparse.Namespace, tuple[str, ...]]:
    command: tuple[str, ...] = ()
    # A flag value of "--" is not the command's separator, and "--partition=…" is a value.
    argv = glue_flag_values(argv, (*FLAG_VALUED, "--slurm-args"))
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], tuple(argv[cut + 1:])
        if not command:
            parser(prog).error("nothing after `--`: give a command to bisect with")
    args = parser(prog).parse_args(argv)
    if args.explain is None and (args.start is None or args.end is None):
        parser(prog).error("give --from and --to (or --explain RELEASE)")
    if args.explain is not None and (args.start or args.end or command):
        parser(prog).error("--explain takes one release: leave out --from, --to and `--`")
    if args.metric is not None and args.case is None and not command:
        parser(prog).error("--metric measures a --case FILE or a command after `--`")
    if args.param and args.case is None:
        parser(prog).error("--param sets a parameter of a --case FILE; give one")
    if args.over is not None and args.case is None:
        parser(prog).error("--over measures a --case FILE over a parameter; give one")
    if args.case is not None and command:
        parser(prog).error("give --case FILE or a command after `--`, not both")
    if args.target is not None and command:
        parser(prog).error("--target compiles the report's program for a GPU without one; "
                           "a command after `--` cannot run there: drop one of them")
    if len({n for n in args.n_outer if n >= 2}) < 2 and not command:
        parser(prog).error("--n-outer needs two distinct values of 2 or more to tell growth "
                           "from constant (at n_outer 1 every plan holds one stacked buffer)")
    too_big = size_problem(max(args.n_outer), args.n_inner, args.n_res, args.dtype)
    if too_big:
        parser(prog).error(too_big)
    if args.target is not None:  # checked before the catalogue is loaded (or fetched)
        try:
            args.target = target_option(args.target)
        except UserError as exc:
            parser(prog).error(str(exc))
    return args, command


def wider_range_hint(catalogue, request: Request, verdict: str) -> NextStep | None:
    """Where to look next when the range holds no change: up to the newest usable release
    (None where the range already ends there)."""
    newest = max((r for r in catalogue.releases
                  if catalogue.unusable_reason(r, request.backend) is None),
                 key=lambda r: r.version, default=None)
    if newest is None or str(newest.version) == request.end:
        return None
    from .catalogue import backend_words
    from .report import NextStep, bisect_command  # the Reproduce line's builder

    return NextStep(verdict=verdict, on=backend_words(request.backend, request.options.target),
                    newest=str(newest.version),
                    command=bisect_command(request, request.end, str(newest.version)))


def options_from(args: argparse.Namespace) -> HarnessOptions:
    return HarnessOptions(n_outer=tuple(sorted(set(args.n_outer))), n_inner=args.n_inner,
                          n_res=args.n_res, dtype=args.dtype, xla_flags=args.xla_flags,
                          target=target_option(args.target))


def request_from(args: argparse.Namespace, command: tuple[str, ...], catalogue=None,
                 executor: Executor = LOCAL) -> Request:
    """The question the command line asks. With a catalogue, the ends take its spelling
    ("v0.5" and "0.5.0" are one release) and ``auto`` becomes the backend at hand."""
    options = options_from(args).for_bisection()
    start, end, backend = args.start, args.end, args.backend
    if catalogue is not None:
        start, end = (str(catalogue.get(v).version) for v in (args.start, args.end))
        backend = resolve_backend(args.backend, options.target,
                                  gpu_elsewhere=executor is not LOCAL)
    return Request(start=start, end=end, backend=backend, options=options, command=command,
                   try_xla_flags=tuple(args.try_xla_flags),
                   timeout=args.timeout or DEFAULT_TIMEOUT,
                   remeasure=args.remeasure, jobs=args.jobs or default_jobs(),
                   minimize=args.minimize, include_yanked=args.include_yanked,
                   executor=executor)


def is_metric_bisection(args: argparse.Namespace, command: tuple[str, ...]) -> bool:
    """A case file, or a command with a metric: bisected by a metric and a classifier."""
    return args.case is not None or (bool(command) and args.metric is not None)


def run(args: argparse.Namespace, command: tuple[str, ...]) -> int:
    def say(message: str) -> None:  # one write a line: probes in threads share stderr
        print(message + "\n", end="", file=sys.stderr, flush=True)

    note = ignored_environment_note()
    if note:
        say(note)
    executor = executor_from(args.executor, args.slurm_args, say)  # checked before anything
    with executor.interruptible():  # Ctrl-C cancels every job first
        return _run(args, command, say, executor)


def _run(args: argparse.Namespace, command: tuple[str, ...], say, executor: Executor) -> int:
    from .report import write_report  # tabulate and friends only once input is valid

    if args.explain is not None and args.case is not None:
        from .metric_cli import run_explain_case

        return run_explain_case(args, say)
    if is_metric_bisection(args, command):
        from .metric_cli import run_metric

        return run_metric(args, command, say, executor)
    check_reports_folder(args.reports)
    catalogue = load_catalogue(refresh=args.refresh_catalogue)
    if args.explain is not None:
        return run_explain(args, catalogue, options_from(args), say)
    request = request_from(args, command, catalogue, executor)
    evidence_md, extra, next_step = "", {}, None
    wanted = not command and not args.no_evidence
    with ThreadPoolExecutor(1, thread_name_prefix="evidence") as early:
        started: dict[tuple[str, str], Future] = {}

        def on_change(found) -> None:  # the evidence needs the pair only: start it now
            from .findings import collect

            pair = (str(found.last_old.release.version), str(found.first_new.release.version))
            started[pair] = early.submit(collect, found, say, request.try_xla_flags,
                                         args.jax_repo)

        bisection = bisect_releases(catalogue, request, say,
                                    on_change=on_change if wanted else None)
        if bisection.result.status == "alike" and not command:
            next_step = wider_range_hint(catalogue, request, bisection.probe_of(0).verdict)
        if bisection.result.status == "found" and wanted:
            from .findings import gather  # the why: JAX or XLA, buffers, chart, workarounds
            from .report import report_stem

            pair = (str(bisection.last_old.release.version),
                    str(bisection.first_new.release.version))
            evidence_md, extra = gather(bisection.fully_measured(), say,
                                        try_xla_flags=request.try_xla_flags,
                                        png_path=args.reports / f"{report_stem(bisection)}.png",
                                        jax_repo=args.jax_repo, xla_repo=args.xla_repo,
                                        early=started.get(pair))
    if args.minimize and bisection.result.status == "found" and not command:
        minimal, minimal_md = minimize_builtin(bisection, args, say)
        extra = {**extra, "minimal": minimal}
        evidence_md = "\n".join(part for part in (evidence_md.rstrip(), minimal_md) if part)
    cluster = cluster_document(executor)
    if cluster:  # where the probes ran, when not here
        extra = {**extra, "cluster": cluster}
        evidence_md = "\n".join(p for p in (evidence_md.rstrip(), cluster_markdown(cluster)) if p)
    path, doc, kept = write_report(bisection, args.reports, evidence_md, extra, next_step)
    from .report import answer_line, gpu_commands, yanked_line

    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(answer_line(bisection).replace("**", ""))
        if yanked_line(bisection):
            print(yanked_line(bisection).replace("**", ""))
        lo, hi = bisection.measured_part
        for command_line in gpu_commands(bisection):
            print(f"measured jax {lo} … {hi} only; the rest needs a real GPU: {command_line}")
        if next_step is not None:
            print(f"to look further: {next_step.command}")
        print(f"probes: {len(bisection.probes)} in {len(bisection.result.rounds)} rounds "
              f"({sum(p.cached for p in bisection.probes)} stored)")
    if kept:
        say(f"report: {path} kept: it holds an answer from an earlier run, this run found none")
    else:
        say(f"report: {path}")
    return 0 if bisection.result.status == "found" else 1


def minimize_builtin(bisection, args: argparse.Namespace, say) -> tuple[dict, str]:
    """The built-in check's change, shrunk: the scan report's case (repro/cases/) by its
    compiled memory, from the bisection's sizes."""
    from repro.case import read_case

    from .cases import Question
    from .lab import RealLab
    from .minimize import minimal_document, minimal_markdown, minimize

    o = bisection.request.options
    case = read_case(SCAN_CASE)
    params = {"n_outer": max(o.n_outer), "n_inner": o.n_inner, "n_res": o.n_res,
              "dtype": o.dtype}
    question = Question(metric="memory", case=case, params=params,
                        target=o.target, xla_flags=o.xla_flags)
    old, new = bisection.last_old.release, bisection.first_new.release
    shrunk, first, names = minimize(old, new, bisection.request.backend, question,
                                    RealLab(say, remeasure=args.remeasure), say,
                                    timeout=args.timeout or DEFAULT_TIMEOUT,
                                    budget=args.minimize_budget)
    minimal = minimal_document(shrunk, first, names, question, old, new, "bytes")
    return minimal, minimal_markdown(minimal, "repro/cases/scan_growth.py")


SCAN_CASE = Path(__file__).resolve().parent.parent / "repro" / "cases" / "scan_growth.py"


def run_explain(args: argparse.Namespace, catalogue, options: HarnessOptions, say) -> int:
    """``--explain RELEASE``: the why for one release, as a report and (``--json``) one JSON
    document; exit 0 where an explanation (a flag or pass) was found, 1 otherwise."""
    from .findings import explain_one
    from .report import write_explain_report

    release = catalogue.get(args.explain)
    backend = resolve_backend(args.backend, options.target)
    why = catalogue.unusable_reason(release, backend)
    if why:
        raise UserError(f"jax {release.version} cannot be installed here for {backend}: {why}")
    markdown, explanation = explain_one(release, backend, options, say,
                                        timeout=args.timeout or DEFAULT_TIMEOUT,
                                        remeasure=args.remeasure)
    path, doc = write_explain_report(args.reports, str(release.version), backend, options,
                                     explanation, markdown)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(explanation["culprit"]["text"])
    say(f"report: {path}")
    return 0 if explanation["culprit"]["kind"] != "none" else 1


def prog_name() -> str:
    """How the user ran us, for error lines: ``jax-bisect`` or ``python -m bisect``."""
    return "jax-bisect" if Path(sys.argv[0]).name == "jax-bisect" else PROG


def main(argv: list[str] | None = None) -> int:
    prog = prog_name()
    args, command = parse(list(sys.argv[1:] if argv is None else argv), prog)
    try:
        return run(args, command)
    except UserError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except OSError as exc:  # e.g. a reports folder that cannot be written
        where = f"cannot write {exc.filename}: " if exc.filename else ""
        print(f"{prog}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; every probe finished so far is stored, rerun to resume",
              file=sys.stderr)
        return 130
