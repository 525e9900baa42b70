"""``nox -s repro_range -- --from A --to B --case FILE``: a case's metric in every release.

What bisection cannot see (a change made and undone inside a range) a sweep shows: one run of
the case per release, each stored like a bisection's (the two share them), written whole to
``REPORTS/<case>-<metric>/jax-<release>-<where>.json`` and summed up in that folder's
``README.md``.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path

from tabulate import tabulate

from .cases import Run, measure_run, question_from
from .catalogue import load_catalogue
from .environments import resolve_backend
from .files import check_reports_folder, write_json_if_changed, write_text_if_changed
from .harness import target_option
from .machine import machine_description
from .metric_report import figure, figure_text

Say = Callable[[str], None]


def sweep_case(args: argparse.Namespace, say: Say, select) -> int:
    target = target_option(args.target)
    question = question_from(args.metric, args.case, args.param, (), target=target,
                             xla_flags=args.xla_flags, samples=args.samples)
    backend = resolve_backend(args.backend, target)
    folder: Path = args.reports / f"{question.case.name}-{question.metric}"
    check_reports_folder(folder)
    catalogue = load_catalogue(refresh=args.refresh_catalogue)
    releases = select(catalogue, args, backend)
    where = target or backend
    say(f"measuring {question.metric} of {question.label} in {len(releases)} releases "
        f"({where}); results in {folder}/")
    rows, problems = [], []
    for item in releases:
        version = str(item.release.version)
        if item.skip:
            rows.append([version, "", "not installable here", "", "", item.skip])
            continue
        run = measure_run(item.release, backend, question, 1, timeout=args.timeout,
                          remeasure=args.remeasure, say=say)
        write_json_if_changed(folder / f"jax-{version}-{where.replace('/', '_')}.json",
                              {"schema": 1, "case": question.case.as_json(question.params),
                               "metric": question.metric, "backend": backend,
                               "target": target or None, **run.as_json()})
        rows.append(row(question.metric, question.case, run))
        if run.status == "failed":
            problems.append(f"jax {version}: {run.error}")
        say(f"jax {version}: {rows[-1][3] or run.error}")
    command = args.command or shlex.join(["python", "-m", "jaxbisect.sweep", *args.argv])
    table = tabulate(rows, headers=["jax", "jaxlib", "status", question.metric, "spread",
                                    "note"], tablefmt="github", disable_numparse=True)
    params = ", ".join(f"{k}={v!r}" for k, v in question.case.resolve(question.params).items())
    write_text_if_changed(folder / "README.md", "\n".join([
        f"# {question.case.name}: {question.metric} by jax release ({where})", "",
        f"The case `{question.case.name}` ({params}), one run per release; made by `{command}`.",
        "", table, "", "<details><summary>Machine</summary>", "", "```text",
        machine_description(dated=True), "```", "", "</details>", ""]))
    print(table)
    for problem in problems:
        say(f"error: {problem}")
    return 2 if problems else 0


def row(metric: str, case, run: Run) -> list:
    from repro.case import UNITS

    fig = figure(metric, run.samples)
    jaxlib = (run.document or {}).get("jaxlib") or run.installed.get("jaxlib", "")
    spread = (f"{figure_text(metric, UNITS[metric], {'median': fig['min']})} … "
              f"{figure_text(metric, UNITS[metric], {'median': fig['max']})}"
              if "median" in fig and fig["n"] > 1 else "")
    value = figure_text(metric, UNITS[metric], fig) if fig["n"] else ""
    return [run.release, jaxlib, run.status, value, spread, run.error or ""]
