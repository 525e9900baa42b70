"""``python -m bisect --case FILE`` / ``--metric NAME -- CMD``: the metric bisection's command
line, from the parsed arguments to the report and the exit status."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

from .cases import question_from
from .catalogue import load_catalogue
from .environments import resolve_backend
from .errors import UserError
from .files import check_reports_folder
from .harness import target_option
from .metric_bisect import MetricRequest, bisect_metric

Say = Callable[[str], None]


def question_of(args: argparse.Namespace, command: tuple[str, ...]):
    """The question the command line asks (a UserError for a bad case, parameter or metric)."""
    return question_from(args.metric, args.case, args.param, command,
                         target=target_option(args.target), xla_flags=args.xla_flags,
                         samples=args.samples, kind=args.metric_kind)


def request_from(args: argparse.Namespace, question, catalogue) -> MetricRequest:
    start, end = (str(catalogue.get(v).version) for v in (args.start, args.end))
    return MetricRequest(start=start, end=end,
                         backend=resolve_backend(args.backend, question.target),
                         question=question, threshold=args.threshold, timeout=args.timeout,
                         remeasure=args.remeasure, runs=args.runs,
                         max_runs=args.max_runs)


# The exit status of each answer (cli.EXIT_CODES): "cannot tell" is never "no change".
METRIC_EXIT = {"found": 0, "alike": 1, "undecided": 3, "unmeasurable": 125}


def run_metric(args: argparse.Namespace, command: tuple[str, ...], say: Say) -> int:
    """Exit 0 when a change is found, 1 when the ends are alike, 3 when this machine's noise
    leaves it undecided, 125 when an end cannot be measured."""
    from .metric_report import answer_line, thirds_line, write_report

    # Bad input (the case file, its parameters) is refused before anything is fetched.
    question = question_of(args, command)
    check_reports_folder(args.reports)
    catalogue = load_catalogue(refresh=args.refresh_catalogue)
    request = request_from(args, question, catalogue)
    bisection = bisect_metric(catalogue, request, say)
    extra = {}
    if bisection.search.status == "found" and not args.no_evidence:
        from .metric_explain import attribution

        extra["attribution"] = attribution(bisection, say, jax_repo=args.jax_repo,
                                          xla_repo=args.xla_repo)
        if extra["attribution"]["culprit"] in ("xla", "below-hlo"):
            from .metric_explain import explain_flags, explain_passes

            culprit = explain_flags(bisection, say)
            if culprit["kind"] == "none" and extra["attribution"]["culprit"] == "xla" \
                    and bisection.request.question.case is not None:
                culprit = {**explain_passes(bisection, say), "flags": culprit}
            extra["explanation"] = {"culprit": culprit}
    if args.minimize and bisection.search.status == "found" \
            and bisection.request.question.case is not None:
        from .metric_report import display_path, unit_of
        from .minimize import minimal_document, minimize

        q = bisection.request.question
        old, new = bisection.pair
        shrunk, first, names = minimize(old, new, request.backend, q, say,
                                        threshold=request.threshold, timeout=request.timeout,
                                        remeasure=request.remeasure, runs=request.runs,
                                        budget=args.minimize_budget)
        extra["minimal"] = minimal_document(shrunk, first, names, q, old, new, unit_of(bisection))
        extra["minimal"]["case_path"] = display_path(q.case.path)
    path, doc = write_report(bisection, args.reports, extra)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(answer_line(bisection).replace("**", ""))
        third = thirds_line(bisection)
        if third:
            print(third.replace("**", ""))
        if "sweep" in doc:
            print(f"a change made and undone inside the range cannot be seen by bisection; "
                  f"every release: {doc['sweep']}")
        s = bisection.search
        print(f"probes: {len(s.placed)} ({s.remeasures} re-measured; "
              f"{sum(p.cached for p in s.placed.values())} stored)")
    say(f"report: {path}")
    return METRIC_EXIT[bisection.search.status]


def run_explain_case(args: argparse.Namespace, say: Say) -> int:
    """``--explain RELEASE --case FILE``: which HLO passes change the case's metric under one
    release; a report and (``--json``) one JSON document. Exit 0 where a pass was named."""
    from .metric_explain import explain_release
    from .metric_report import write_explain_report

    question = question_of(args, ())
    check_reports_folder(args.reports)
    catalogue = load_catalogue(refresh=args.refresh_catalogue)
    release = catalogue.get(args.explain)
    backend = resolve_backend(args.backend, question.target)
    why = catalogue.unusable_reason(release, backend)
    if why:
        raise UserError(f"jax {release.version} cannot be installed here: {why}")
    explanation = explain_release(release, backend, question, say, threshold=args.threshold,
                                  timeout=args.timeout, remeasure=args.remeasure,
                                  runs=args.runs)
    path, doc = write_explain_report(args.reports, release, backend, question, explanation,
                                     threshold=args.threshold, runs=args.runs)
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print(explanation["culprit"]["text"] + ".")
    say(f"report: {path}")
    return 0 if explanation["culprit"]["kind"] != "none" else 1
