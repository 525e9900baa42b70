"""``python -m bisect --from A --to B``: the first jax release whose behaviour differs from A's.

The one parser, and what the terminal shows: the arguments parsed (a case, ``--case FILE``,
the scan case when none is given, or a command, ``-- CMD``, by ``--metric NAME`` or its exit
status), handed to the pipeline (pipeline.py), its answer printed, its exit status returned.

Also installed as ``jax-bisect`` and run by ``nox -s bisect -- …``: entry points that the
standard library's ``bisect`` module can never shadow.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

from jaxbisect import pipeline
from jaxbisect.errors import UserError
from jaxbisect.lab import backends
from jaxbisect.lab.executors import LOCAL, Executor, add_executor_options, executor_from
from jaxbisect.lab.harness import ignored_environment_note, target_option
from jaxbisect.lab.machine import default_jobs, parallel_runs
from jaxbisect.report.terminal import terminal_lines, timings_line
from jaxbisect.search import budgets
from jaxbisect.search.rounds import Status
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

EXIT_CODE_METRIC = "exit_code"  # a command's exit status, as git bisect run reads it

# The exit status of each answer: "cannot tell" is never "no change".
METRIC_EXIT = {Status.FOUND: 0, Status.ALIKE: 1, Status.UNDECIDED: 3,
               Status.FAILS_EVERYWHERE: 4, Status.UNMEASURABLE: 125}
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
LIMITS = ("Without --timeout, an end's first run may take {FIRST_RUN_LIMIT:.0f} s (a backend whose "
          "compiles take minutes allows more: docs/targets.md); every later "
          "run {RUN_FACTOR:g}× the slower end's first run, {RUN_FLOOR:.0f} s at least. A run "
          "past its limit hangs: a behaviour, not retried (the error metric's value "
          "'{HANGS}'; a timing's: beyond both ends), a release's or a commit's alike. An "
          "explanation's run may take {TEST_FACTOR:g}× the release's own run, "
          "{TEST_FLOOR:.0f} s at least: past that, the setting 'makes the case much slower'. "
          "Where the ends agree, the releases (with --commits, the commits) inside are "
          "measured too when the ends' own run times put them within --interior-budget "
          "({INTERIOR_BUDGET:.0f} s, each search).")
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
        # The time limits of a bisection (jaxbisect/search/budgets.py).
        "limits": ("time limits (docs/cases.md)", textwrap.fill(LIMITS.format_map(
            vars(budgets)), 88))}, jobs=default_jobs(), cores=parallel_runs(),
        budget=budgets.EXPLAIN_BUDGET,
        interior=budgets.INTERIOR_BUDGET, backends=backends.help_text())
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
        from jaxbisect.report.document import rerender

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


def run_metric(args: argparse.Namespace, command: tuple[str, ...], say: Say,
               executor: Executor = LOCAL) -> int:
    """The pipeline (pipeline.py), then its answer: exit 0 when a change is found, 1 when the
    ends are alike, 3 when this machine's noise leaves it undecided, 4 when every release
    fails alike, 125 when an end cannot be measured."""
    done = pipeline.bisect(args, command, say, executor)
    if args.json:  # this run's times beside the report's document, never in its file
        print(json.dumps({**done.doc, "timings": done.timings.as_json()}, indent=2))
    else:
        print("\n".join(terminal_lines(done.bisection, done.doc, done.catalogue, Path.cwd())))
    say(timings_line(done.timings.as_json()))
    say(f"report: {done.path}" + (" kept: it holds an answer from an earlier run, this run "
                                  "found none" if done.doc.get("report_kept") else ""))
    return METRIC_EXIT[done.bisection.status]


def run_explain_case(args: argparse.Namespace, say: Say) -> int:
    """``--explain RELEASE --case FILE``: a report and (``--json``) one JSON document; exit 0
    where a pass was named."""
    path, doc, explanation = pipeline.explain_one(args, say)
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
