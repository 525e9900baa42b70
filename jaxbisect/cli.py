"""``python -m bisect --from A --to B``: the first jax release whose behaviour differs from A's.

The one parser, and the one pipeline from the parsed arguments to the report and the exit
status: a case (``--case FILE``, the scan case when none is given) or a command (``-- CMD``,
by ``--metric NAME`` or its exit status), bisected, then explained.

Also installed as ``jax-bisect`` and run by ``nox -s bisect -- …``: entry points that the
standard library's ``bisect`` module can never shadow.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from repro.case import SCAN_CASE
from repro.options import (
    BISECT,
    FLAG_VALUED,
    SIZES,
    OneLineParser,
    add_options,
    glue_flag_values,
    read_sizes,
)

from . import budgets
from .bisection import MetricRequest, bisect_metric, releases_between
from .catalogue import load_catalogue
from .commit_bisection import bisect_commits, commits_in
from .environments import resolve_backend
from .errors import UserError
from .executors import LOCAL, Executor, add_executor_options, cluster_document, executor_from
from .files import check_reports_folder, keep_if_steady, texts_of
from .harness import DEFAULT_TIMEOUT, ignored_environment_note, target_option
from .jax_commits import locate_repo
from .known_flags import FlagCheckedLab, flag_names, known_line, lister
from .lab import Lab, RealLab
from .machine import default_jobs
from .question import question_from

EXIT_CODE_METRIC = "exit_code"  # a command's exit status, as git bisect run reads it

# The exit status of each answer: "cannot tell" is never "no change".
METRIC_EXIT = {"found": 0, "alike": 1, "undecided": 3, "fails_everywhere": 4,
               "unmeasurable": 125}
EXIT_CODES = """exit status:
  0    a change was found (--explain: a flag or pass explains the figure)
  1    no change in the range: the ends confidently alike, even where a release inside
       them differs (the answer then names it: came and went; --explain: nothing explains it)
  2    bad input or an unusable situation (one line on stderr), or a command that exited
       128 or more (git bisect run's abort)
  3    the ends differ but this machine's noise does not let it decide at 99 %
       (undecided, not "no change": more --max-runs or a quieter machine decide it)
  4    the program fails the same way at every release measured (the case never ran:
       the answer shows the error and, where it recognises the cause, how to fix the case)
  125  an end cannot be measured (the release gives no figure, or a command exits 125)
  130  interrupted (Ctrl-C); every probe finished is stored: rerun to resume"""


PROG = "python -m bisect"
LIMITS = ("Without --timeout, an end's first run may take {FIRST_RUN_LIMIT:.0f} s; every later "
          "run {RUN_FACTOR:g}× the slower end's first run, {RUN_FLOOR:.0f} s at least. A run "
          "past its limit hangs: a behaviour, not retried (the error metric's value "
          "'{HANGS}'). An explanation's run may take {TEST_FACTOR:g}× the release's own run, "
          "{TEST_FLOOR:.0f} s at least: past that, the setting 'makes the case much slower'. "
          "Where the ends agree, the releases inside are measured too when the ends' own run "
          "times put them within --interior-budget ({INTERIOR_BUDGET:.0f} s).")
Say = Callable[[str], None]


def parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = OneLineParser(prog=prog, description=__doc__.splitlines()[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter,
                      epilog="Without --case or a command: the scan report's case, "
                             "repro/cases/scan_growth.py.\nAfter `--`, a command run inside "
                             "each release's environment; without --metric,\nits exit status "
                             "is git bisect run's: 0 old behaviour, 1-127 new (125: skip\nthis "
                             "release), 128 or more: stop (exit 2).\n\n" + EXIT_CODES)
    add_options(p, BISECT, groups={
        "case": ("your own program (docs/cases.md)",
                 "bisect by a metric of a case file, or of a command that prints a JSON object "
                 "as its last line (--metric NAME -- CMD)"),
        # The time limits of a bisection (jaxbisect/budgets.py).
        "limits": ("time limits (docs/cases.md)", textwrap.fill(LIMITS.format_map(
            vars(budgets)), 88))}, jobs=default_jobs(), budget=budgets.EXPLAIN_BUDGET,
        interior=budgets.INTERIOR_BUDGET)
    p.set_defaults(explain_budget=budgets.EXPLAIN_BUDGET,
                   interior_budget=budgets.INTERIOR_BUDGET)
    add_executor_options(p)
    return p


def parse(argv: list[str], prog: str = PROG) -> tuple[argparse.Namespace, tuple[str, ...]]:
    """The arguments as the case path takes them: no --case and no command is the scan case;
    the size options are its --over and --param; a command without --metric is bisected by
    its exit status."""
    command: tuple[str, ...] = ()
    # A flag value of "--" is not the command's separator, and "--partition=…" is a value.
    argv = glue_flag_values(argv, (*FLAG_VALUED, "--slurm-args"))
    p = parser(prog)
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], tuple(argv[cut + 1:])
        if not command:
            p.error("nothing after `--`: give a command to bisect with")
    args = p.parse_args(argv)
    if args.render is not None:
        if args.start or args.end or args.explain or command:
            p.error("--render FILE remakes a report from its JSON alone: leave out --from, "
                    "--to, --explain and `--`")
        return args, command
    for refused, why in (
            (args.explain is None and (args.start is None or args.end is None),
             "give --from and --to (or --explain RELEASE)"),
            (args.explain is not None and (args.start or args.end or command),
             "--explain takes one release: leave out --from, --to and `--`"),
            (args.explain is not None and args.commits,
             "--commits searches the commits between the pair a bisection finds; --explain "
             "takes one release"),
            (args.case is not None and command,
             "give --case FILE or a command after `--`, not both"),
            (command and (args.n_outer or any(getattr(args, name) for name in SIZES)),
             "--n-outer, --n-inner, --n-res and --dtype size the scan case; a command after "
             "`--` has no sizes"),
            (args.metric == EXIT_CODE_METRIC and not command, f"--metric {EXIT_CODE_METRIC}: "
             f"a command's exit status; give the command after `--`")):
        if refused:
            p.error(why)
    if command:
        args.metric = args.metric or EXIT_CODE_METRIC
    elif args.case is None:
        args.case = str(SCAN_CASE)
    n_outer = read_sizes(p, args)
    if n_outer and len([n for n in n_outer if n >= 2]) < 2:
        p.error("--n-outer needs two distinct values of 2 or more to tell growth from "
                "constant (at n_outer 1 every plan holds one stacked buffer)")
    if args.target is not None:  # checked before the catalogue is loaded (or fetched)
        try:
            args.target = target_option(args.target)
        except UserError as exc:
            p.error(str(exc))
    return args, command


def run(args: argparse.Namespace, command: tuple[str, ...]) -> int:
    def say(message: str) -> None:  # one write a line: probes in threads share stderr
        print(message + "\n", end="", file=sys.stderr, flush=True)

    if args.render is not None:  # no run, no network: the document alone
        from .report import rerender

        print(f"report: {rerender(Path(args.render))}", file=sys.stderr)
        return 0
    note = ignored_environment_note()
    if note:
        say(note)
    executor = executor_from(args.executor, args.slurm_args, say)  # checked before anything
    with executor.interruptible():  # Ctrl-C cancels every job first
        if args.explain is not None:
            return run_explain_case(args, say)
        return run_metric(args, command, say, executor)


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
                         devices=args.devices)


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


def run_metric(args: argparse.Namespace, command: tuple[str, ...], say: Say,
               executor: Executor = LOCAL) -> int:
    """Exit 0 when a change is found, 1 when the ends are alike, 3 when this machine's noise
    leaves it undecided, 125 when an end cannot be measured."""
    from . import report

    # Bad input (the case file, its parameters) is refused before anything is fetched.
    question = question_of(args, command)
    # --commits reads a clone of jax: found (or made) before any run, or one line, exit 2.
    repo = locate_repo(args.jax_repo, say) if args.commits else None
    catalogue = load_catalogue(refresh=args.refresh_catalogue)
    request = request_from(args, question, catalogue, executor)
    # The XLA flags asked for, against each end's own flag list: before anything is measured.
    asked = [("--xla-flags", question.xla_flags),
             *(("--try-xla-flags", flags) for flags in request.try_xla_flags)]
    real = RealLab(say, remeasure=request.remeasure, executor=executor)
    lab = FlagCheckedLab(real, lister(real, say))
    measured, _ = releases_between(catalogue, request.start, request.end, request.backend,
                                   question.target, include_yanked=request.include_yanked)
    lab.check_at_ends(asked, [measured[0], measured[-1]], request.backend)
    check_reports_folder(args.reports)
    bisection = bisect_metric(catalogue, request, lab, say)
    extra: dict = {}

    def flags_known() -> None:  # a flag some release's XLA does not know: which know it
        if lab.document(asked):
            extra["xla_flags_known"] = lab.document(asked)

    flags_known()
    if bisection.status == "alike" and not came_and_went(bisection):
        extra.update(wider_range(catalogue, bisection))

    def write() -> tuple[Path, dict]:
        return report.write_report(bisection, args.reports, extra)

    # An earlier report of the same question is replaced only by a finished answer: written
    # once every stage asked for has ended, so that a refusal or Ctrl-C at any stage leaves
    # it as it was (what was measured is stored: a rerun resumes). With none, the
    # explanation's parts are written as they land: Ctrl-C keeps what it measured.
    md = report.report_path(bisection, args.reports)
    before = texts_of([md, md.with_suffix(".json")])

    def landed() -> object:
        return None if before else write()

    if repo is not None:
        bisection = with_commits(bisection, commits_in(repo, say), lab, say)
    add_reproducer(bisection, lab, extra, say)
    try:
        if bisection.search.status == "found" and not args.no_evidence:
            explain(bisection, lab, args, extra, say, landed)
    except KeyboardInterrupt:
        if not before:
            extra["interrupted"] = ("the explanation was interrupted (Ctrl-C): what it "
                                    "measured is kept")
            say(f"report: {write()[0]} (interrupted)")
        raise
    if request.try_xla_flags and bisection.search.status == "found":
        extra["try_xla_flags"] = try_flags(bisection, lab, say)
        flags_known()
    if args.minimize and bisection.search.status == "found" \
            and bisection.request.question.case is not None:
        from .commands import display_path
        from .minimize import minimal_document, minimize

        q = bisection.request.question
        old, new = bisection.pair
        shrunk, first, names = minimize(old, new, request.backend, q, lab, say,
                                        threshold=request.threshold, timeout=bisection.timeout,
                                        runs=request.runs, max_runs=request.max_runs,
                                        budget=args.minimize_budget)
        extra["minimal"] = minimal_document(shrunk, first, names, q, old, new,
                                            report.unit_of(bisection))
        extra["minimal"]["case_path"] = display_path(q.case.path)
        add_reproducer(bisection, lab, extra, say)  # at the minimizer's sizes
    if bisection.search.status == "found" and not args.no_evidence:  # below jaxlib
        from .evidence.hlo import hlo_module

        extra["hlo_module"] = hlo_module(bisection, lab, extra, say, md)
    cluster = cluster_document(executor)
    if cluster:
        extra["cluster"] = cluster
    path, doc = write()
    keep_if_steady(before)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print("\n".join(terminal_lines(bisection, doc, catalogue, Path.cwd())))
    say(f"report: {path}" + (" kept: it holds an answer from an earlier run, this run "
                             "found none" if doc.get("report_kept") else ""))
    return METRIC_EXIT[bisection.status]


def add_reproducer(bisection, lab: Lab, extra: dict, say: Say) -> None:
    """The standalone program of a found pair, run at both ends (jaxbisect/reproducer.py),
    into ``extra``."""
    from .reproducer import reproducer_of

    part = reproducer_of(bisection, lab, say, extra.get("minimal"))
    if part is not None:
        extra["reproducer"] = part


def reproducer_line(doc: dict) -> str | None:
    """The standalone program's outputs at the ends, on one line."""
    part = doc.get("reproducer")
    if not part:
        return None
    if part["why_not"]:
        return f"no standalone program: {part['why_not']}"
    said = "; ".join(f"jax {end['jax']}: {', '.join(end['output'].splitlines())}"
                     for end in part["ends"])
    shows = {True: "shows the change", False: "does not show the change",
             None: "could not be run at both ends"}[part["shows_change"]]
    return (f"standalone program ({part['lines']} lines, {part['file']}) {shows}: {said}"
            + ("; its output differs between runs of one release" if part["nondeterministic"]
               else ""))


def came_and_went(b) -> bool:
    """Whether the releases inside alike ends hold a change (it came and went)."""
    return b.interior is not None and b.interior.came_and_went


def with_commits(b, span_of, lab: Lab, say: Say):
    """``b`` with the jax commits below every pair its answer names: the change found, or
    where each change inside alike ends came and where it went (``commits_by_pair`` where
    there are several)."""
    pairs = b.named_pairs()
    if len(pairs) <= 1:
        at, kind = pairs[0] if pairs else (None, "came")
        return replace(b, commits=bisect_commits(b, span_of, lab, say, kind=kind,
                                                 pair=None if b.pair else at))
    parts = []
    for at, kind in pairs:
        old, new = (b.candidates[i].version for i in at)
        say(f"the jax commits where it {kind}, jax {old} → {new}")
        parts.append(bisect_commits(b, span_of, lab, say, pair=at, kind=kind))
    return replace(b, commits_by_pair=tuple(parts))


def plain(markdown: str) -> str:
    """A report's line for the terminal: no emphasis or code marks, a link as its text and
    its address."""
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", markdown)
    return text.replace("**", "").replace("`", "")


def commits_line(doc: dict) -> str | None:
    """How many commits were probed and run (the probes line is the releases')."""
    parts = [p for p in [doc.get("commits"), *doc.get("commits_by_pair", ())]
             if p and p.get("search")]
    if not parts:
        return None
    return "commits: " + "; ".join(
        (f"{p['kind']} {p['pair'][0]} → {p['pair'][1]}: " if "pair" in p else "")
        + f"{p['search']['probes']} probes of {p['candidates']} candidates; runs: "
          f"{p['search']['runs']}" for p in parts)


def terminal_lines(bisection, doc: dict, catalogue, here: Path) -> list[str]:
    """The answer on stdout, in plain text: every command in it as it runs typed in ``here``,
    the folder the user stands in (the report's keep a maintainer's form: the case by its
    name, from the clone)."""
    from . import report
    from .commands import sweep_argv
    from .markdown import answer
    from .markdown.commits import commits_first_lines

    typed = report.typed_at(bisection, doc, here)
    lines = [plain(text)
             for text in (answer.answer_line(typed), *commits_first_lines(typed),
                          answer.thirds_line(typed), answer.raised_line(typed),
                          answer.crash_line(typed), answer.yanked_line(typed)) if text]
    lines += [known_line(entry) for entry in doc.get("xla_flags_known", ())]
    if "sweep" in doc:
        lines.append(f"a change made and undone inside the range cannot be seen by "
                     f"bisection; every release: "
                     f"{shlex.join(sweep_argv(bisection, at=here))}")
    if "minimal" in doc:
        lines.append(minimal_line(doc["minimal"]))
    lines += [tried_line(tried) for tried in doc.get("try_xla_flags", ())]
    lines += [f"measured jax {doc['measured_part'][0]} … {doc['measured_part'][1]} only; "
              f"the rest needs a real GPU: {part['command']}"
              for part in typed["needs_a_gpu"]]
    if "next_step" in doc:
        lines.append(f"to look further: "
                     f"{wider_range(catalogue, bisection, at=here)['next_step']['command']}")
    return [*lines, *filter(None, [reproducer_line(doc)]), probes_line(bisection),
            *filter(None, [commits_line(doc)])]


def wider_range(catalogue, b, at: Path | None = None) -> dict:
    """Where to look next when the range holds no change: the same question up to the newest
    release installable here ({} where the range already ends there); ``at``: the command as
    typed in that folder (report.reproduce_argv)."""
    from .commands import reproduce_argv

    req = b.request
    newest = max((r for r in catalogue.releases
                  if catalogue.unusable_reason(r, req.backend) is None),
                 key=lambda r: r.version, default=None)
    if newest is None or newest.version <= catalogue.get(req.end).version:
        return {}
    return {"next_step": {"newest": str(newest.version),
                          "command": shlex.join(reproduce_argv(b, req.end,
                                                               str(newest.version), at=at))}}


def try_flags(b, lab: Lab, say: Say) -> list[dict]:
    """``--try-xla-flags``: the first new release measured with each set of flags added (at
    the search's size), placed by the bisection's classifier: ``restores`` where it gives the
    old behaviour back."""
    from .explain import TRIED_FLAGS, behaviour_under

    classify, first_new = b.classifier(), b.pair[1]
    out = []
    for i, flags in enumerate(b.request.try_xla_flags):
        tried = behaviour_under(b, lab, classify, first_new, flags, say, test="--try-xla-flags",
                                beside=TRIED_FLAGS + i)
        out.append({**tried, "restores": tried["behaviour"] == "old"})
    return out


def tried_line(tried: dict) -> str:
    said = {"old": "brings the old behaviour back", "new": "keeps the new behaviour"}.get(
        tried["behaviour"], f"gives no answer ({tried['behaviour']}: {tried['error']})")
    return f"--try-xla-flags {tried['xla_flags']} under jax {tried['release']}: {said}"


def probes_line(bisection) -> str:
    """How many releases were probed, and how many of their runs a rerun read back from the
    store instead of measuring (each run once, however often the search asked for it)."""
    s, inside = bisection.search, bisection.interior
    measured = {i: p for i, p in (inside.placed.items() if inside else ()) if i not in s.placed}
    runs = {(r.release, r.number): r for p in (*s.placed.values(), *measured.values())
            for r in p.runs}
    # An error metric's end is its crash rate's runs (the report's and the JSON's count).
    made = {key: (r.crash_rate or {}).get("runs", 1) for key, r in runs.items()}
    stored = sum(made[key] for key, r in runs.items() if r.cached)
    return (f"probes: {len(s.placed)} ({s.remeasures} re-measured)"
            + (f", and {len(measured)} releases inside the ends" if measured else "")
            + f"; runs: {sum(made.values())}, {stored} of them stored from an earlier run")


def minimal_line(minimal: dict) -> str:
    """``--minimize``'s answer on stdout: the minimal program's parameters."""
    if minimal.get("at_start") == "cannot tell":
        return ("minimal: nothing shrunk (cannot tell whether the change shows at the "
                "parameters asked for: the paired test left it undecided)")
    if not minimal.get("kept_at_start"):
        return "minimal: nothing shrunk (the change does not show at the parameters asked for)"
    params = " ".join(f"--param {k}={v}" for k, v in minimal["params"].items())
    return (f"minimal: {params} ({minimal['metric']} {minimal['old_value']} at jax "
            f"{minimal['old']}, {minimal['new_value']} at jax {minimal['new']}"
            + ("" if minimal.get("complete") else "; the budget ran out: smaller may exist")
            + ")")


def explain(bisection, lab: Lab, args: argparse.Namespace, extra: dict, say: Say,
            rewrite: Callable[[], object], *, searches: tuple | None = None) -> None:
    """Where the change lies, then which XLA flag or HLO pass brings the old figure back,
    within ``--explain-budget`` seconds; ``extra`` filled (and ``rewrite`` called) as each
    part lands. ``searches``: (attribution, explain_flags, explain_passes), for tests."""
    from .evidence.collect import buffers_at_peak

    if searches is None:
        from .explain import attribution, explain_flags, explain_passes
    else:
        attribution, explain_flags, explain_passes = searches

    extra["attribution"] = attribution(bisection, lab, say, jax_repo=args.jax_repo,
                                      xla_repo=args.xla_repo)
    rewrite()
    buffers_at_peak(bisection, lab, say, extra, rewrite)  # a memory case: XLA's dumps
    if extra["attribution"]["culprit"] not in ("xla", "below-hlo", "jaxlib"):
        return
    deadline = budgets.Deadline(args.explain_budget)
    budget = {"seconds": args.explain_budget}
    say(f"explaining it: XLA flags, then HLO passes, within {args.explain_budget:.0f} s "
        f"(--explain-budget)")

    def landed(culprit: dict) -> None:
        extra["explanation"] = {"culprit": culprit, "budget": budget}
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
        from .evidence.commits import culprit_commits

        extra["attribution"]["xla_culprit_commits"] = culprit_commits(
            culprit, extra["attribution"], args.xla_repo)
    landed(culprit)


def run_explain_case(args: argparse.Namespace, say: Say) -> int:
    """``--explain RELEASE --case FILE``: which HLO passes change the case's metric under one
    release; a report and (``--json``) one JSON document. Exit 0 where a pass was named."""
    from .bisection import smaller_size
    from .explain import explain_release
    from .question import with_params
    from .report import write_explain_report

    asked = question_of(args, ())
    # A shape is scale-free: explained at the case's search size, as a bisection's is.
    question = with_params(asked, smaller_size(asked))
    catalogue = load_catalogue(refresh=args.refresh_catalogue)
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
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(explanation["culprit"]["text"] + ".")
    say(f"report: {path}")
    return 0 if explanation["culprit"]["kind"] != "none" else 1


def main(argv: list[str] | None = None) -> int:
    # How the user ran us, for error lines: ``jax-bisect`` or ``python -m bisect``.
    prog = "jax-bisect" if Path(sys.argv[0]).name == "jax-bisect" else PROG
    try:
        args, command = parse(list(sys.argv[1:] if argv is None else argv), prog)
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
