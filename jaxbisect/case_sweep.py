"""``nox -s repro_range -- --from A --to B --case FILE``: a case's metric in every release.

What bisection cannot see (a change made and undone inside a range) a sweep shows. Every
release is measured as a bisection measures a probe: the same runs (a noisy metric: five at a
time, more while the classifier cannot place it, up to the cap), the same time limits, and the
same classifier learned from the range's ends, whose label each release gets (old, new,
ambiguous, third behaviour; the ends alike: "like the ends"). The runs are stored like a
bisection's (the two share them: a sweep after a bisection reuses every run it made). Each
release is written whole to ``REPORTS/<case>-<metric>/jax-<release>-<where>.json`` and the
whole summed up in that folder's ``README.md``.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from tabulate import tabulate

from .bisection import (
    MAX_RUNS_NOISY,
    MakeClassifier,
    Placed,
    Reduce,
    batch_size,
    classifier_for,
    paired_test,
    reduce_for,
    search_metric,
    values_of,
    visit_every,
)
from .budgets import EndsTimer
from .catalogue import load_catalogue
from .classify import Label, Paired, Placement
from .environments import resolve_backend
from .files import check_reports_folder, write_json_if_changed, write_text_if_changed
from .harness import target_option
from .lab import Lab, RealLab
from .machine import machine_description
from .question import Run, question_from
from .report import figure, figure_text, seen

Say = Callable[[str], None]
ALIKE = "like the ends"


def place_every(n: int, run_at: Callable[[int, int], Run], make_classifier: MakeClassifier, *,
                noisy_metric: bool, batch: int | None, max_runs: int, reduce: Reduce,
                measured: Sequence[int] | None = None,
                paired: Paired | None = None) -> tuple[list[Placed | None], object]:
    """Every one of ``n`` releases (those in ``measured``, default all) measured and placed as
    a bisection places a probe. A noisy metric: the bisection's own paired search
    (search_metric), visiting every release instead of searching; ends alike or undecided
    leave nothing to place against, so each release between is measured and not labelled. A
    deterministic metric: the ends, then each release ``batch`` runs at a time while the
    classifier cannot place it, up to ``max_runs``. The placements, and the ends (None where
    an end gave no figure)."""
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
    if first == last:  # one release: its figure, nothing to place it against
        measure((first,), batch)
        placed[first] = Placed(first, tuple(runs[first]), None, values(first))
        return placed, None
    measure((first, last), batch)
    if not values(first) or not values(last):
        for i in (first, last):
            placed[i] = Placed(i, tuple(runs[i]), None, values(i))
        return placed, None
    classifier = make_classifier(values(first), values(last))
    ends = classifier.ends()
    if not ends.distinct and noisy_metric and len(runs[first]) + batch <= max_runs:
        measure((first, last), batch)
        classifier = make_classifier(values(first), values(last))
        ends = classifier.ends()
    for i, label in ((first, Label.OLD), (last, Label.NEW)):
        placed[i] = Placed(i, tuple(runs[i]), Placement(label, None, reason="an end"),
                           values(i))
    for i in measured[1:-1]:
        measure((i,), batch)
        while True:
            placement = classifier(values(i)) if values(i) else None
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
    if s.status == "unmeasurable":  # nothing to measure the others against
        return [replace(p, placement=None) if p else None for p in placed], None
    if s.status in ("alike", "undecided"):  # each release measured as often as an end
        for j in range(1, m - 1):
            got = tuple(run_at(measured[j], number)
                        for number in range(1, len(s.placed[0].runs) + 1))
            placed[measured[j]] = Placed(measured[j], got, None, values_of(got, reduce))
    if s.status == "undecided":  # no change told apart: neither end is "old" nor "new"
        for j in (0, m - 1):
            p = placed[measured[j]]
            placed[measured[j]] = replace(p, placement=Placement(
                Label.AMBIGUOUS, None, reason="the ends are undecided at this machine's noise"))
    return placed, s.ends


def label_of(placed: Placed, ends) -> str:
    """old | new | ambiguous | third behaviour | like the ends | no figure."""
    p = placed.placement
    if p is None:
        return "measured" if placed.values else "no figure"
    if p.third:
        return "third behaviour"
    if p.label is Label.SKIP:  # measured, but not placed within the cap
        return "ambiguous" if placed.values else "no figure"
    if ends is not None and not ends.distinct and p.label in (Label.OLD, Label.NEW):
        return ALIKE
    return p.label.value


def sweep_case(args: argparse.Namespace, say: Say, select, lab: Lab | None = None) -> int:
    target = target_option(args.target)
    question = question_from(args.metric, args.case, args.param, (), target=target,
                             xla_flags=args.xla_flags, samples=args.samples,
                             kind=args.metric_kind, over=args.over)
    backend = resolve_backend(args.backend, target)
    folder: Path = args.reports / f"{question.case.name}-{question.metric}"
    check_reports_folder(folder)
    catalogue = load_catalogue(refresh=args.refresh_catalogue)
    releases = select(catalogue, args, backend)
    where = target or backend
    usable = [k for k, item in enumerate(releases) if not item.skip]
    batch = batch_size(question, args.runs)
    most = max(batch, args.max_runs or (MAX_RUNS_NOISY if question.noisy else 1))
    say(f"measuring {question.metric} of {question.label} in {len(releases)} releases "
        f"({where}), {batch} run(s) each, up to {most} while the classifier cannot place "
        f"one; results in {folder}/")
    if not usable:
        say("error: no release of the range can be installed here")
        return 2

    lab = lab or RealLab(say, remeasure=args.remeasure)

    def measure(k: int, number: int, seconds: float) -> Run:
        return lab.run(releases[k].release, backend, question, number, timeout=seconds)

    timer = EndsTimer(measure, (usable[0], usable[-1]), args.timeout,
                      hang_is_value=question.metric == "error")
    placed, ends = place_every(len(releases), timer, classifier_for(question, args.threshold),
                               noisy_metric=question.noisy,
                               batch=args.runs if question.noisy else batch, max_runs=most,
                               reduce=reduce_for(question), measured=usable,
                               paired=paired_test(args.threshold))
    rows, problems = [], []
    for item, p in zip(releases, placed):
        version = str(item.release.version)
        if p is None:
            rows.append([version, "", "not installable here", "", "", 0, item.skip])
            continue
        label = label_of(p, ends)
        rows.append(row(question, p, label))
        write_json_if_changed(folder / f"jax-{version}-{where.replace('/', '_')}.json",
                              {"schema": 2, "case": question.case.as_json(question.params),
                               "metric": question.metric, "backend": backend,
                               "target": target or None, "release": version, "label": label,
                               "reason": p.placement.reason if p.placement else None,
                               "figure": figure(question.metric, seen(question, p)),
                               "runs": [r.as_json() for r in p.runs]})
        if p.failure and not p.values:
            problems.append(f"jax {version}: {p.failure.error}")
        say(f"jax {version}: {label}, {rows[-1][3] or (p.failure.error if p.failure else '')}")
    command = args.command or shlex.join(["python", "-m", "jaxbisect.sweep", *args.argv])
    table = tabulate(rows, headers=["jax", "jaxlib", "label", question.metric, "spread",
                                    "runs", "note"], tablefmt="github", disable_numparse=True)
    params = ", ".join(f"{k}={v!r}" for k, v in question.case.resolve(question.params).items())
    how = ("one figure a run (its calls' 25th percentile), the median of the runs"
           if question.noisy else "one run per release")
    write_text_if_changed(folder / "README.md", "\n".join([
        f"# {question.case.name}: {question.metric} by jax release ({where})", "",
        f"The case `{question.case.name}` ({params}), {how}, each release labelled by the "
        f"classifier learned from the ends"
        + (f" ({ends.reason})" if ends is not None else " (one release: nothing to label it "
           "against)" if len(usable) == 1 else " (an end gave no figure)")
        + f"; made by `{command}`.",
        "", table, "", "<details><summary>Machine</summary>", "", "```text",
        machine_description(dated=True), "```", "", "</details>", ""]))
    print(table)
    for problem in problems:
        say(f"error: {problem}")
    return 2 if problems else 0


def row(question, placed: Placed, label: str) -> list:
    from repro.case import UNITS

    metric = question.metric
    fig = figure(metric, seen(question, placed))
    run = placed.runs[0]
    jaxlib = next(((r.document or {}).get("jaxlib") or r.installed.get("jaxlib", "")
                   for r in placed.runs if r.document or r.installed), "")
    spread = (f"{figure_text(metric, UNITS[metric], {'median': fig['min']})} … "
              f"{figure_text(metric, UNITS[metric], {'median': fig['max']})}"
              if "median" in fig and fig["n"] > 1 else "")
    value = figure_text(metric, UNITS[metric], fig) if fig["n"] else ""
    note = ((placed.placement.reason or "") if placed.placement and label not in
            ("old", "new", ALIKE) else "")
    if placed.failure and not placed.values:
        note = placed.failure.error or ""
    return [run.release, jaxlib, label, value, spread, len(placed.runs), note[:160]]
