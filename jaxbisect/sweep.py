"""``python -m jaxbisect.sweep``: run the repro harness in JAX releases and write ``reports/``.

One release, a list, or a range. Each release is measured as the scan case
(repro/cases/scan_growth.py) through the lab, as a case bisection measures a probe: the same
environments, harness runs (v0's series over n_outer, v1's and v2's beside it) and store, so a
rerun, or a bisection after it, measures nothing twice. Each result is written whole to ``REPORTS/jax-<release>-<backend>.json`` (the Measurement's JSON) as
soon as it lands, and ``REPORTS/README.md`` is rebuilt from every JSON in that folder.

A release that cannot be installed, a harness that fails, Ctrl-C: each gets one line, and a
result already written is never replaced by a failure.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from packaging.version import InvalidVersion, Version

from repro.cli import SCAN_CASE
from repro.options import (
    FLAG_VALUED,
    OneLineParser,
    add_size_options,
    glue_flag_values,
    n_outer_list,
    positive_int,
    variant_number,
)

from .catalogue import (
    DEVICELESS,
    Catalogue,
    Release,
    backend_words,
    load_catalogue,
    needs_a_gpu,
    needs_another_python,
)
from .environments import resolve_backend
from .errors import InstallFailed, UnknownRelease, UserError
from .executors import LOCAL, Executor, add_executor_options, executor_from
from .files import (
    RUN_DEPENDENT_KEYS,
    VOLATILE_LINES,
    check_reports_folder,
    write_atomic,
    write_json_if_changed,
)
from .harness import (
    DEFAULT_TIMEOUT,
    HarnessOptions,
    harness_args,
    ignored_environment_note,
    target_label,
    target_option,
)
from .lab import Lab, RealLab
from .machine import machine_description, parallel_runs
from .measurements import Measurement, report_document
from .question import Question, question_from, with_params
from .tables import results_table

DEFAULT_REPORTS = Path("reports") / "repro"
SUMMARY = "README.md"
PROG = "python -m jaxbisect.sweep"
UPDATED = "- Updated: "  # the one summary line that changes on every run
MACHINE_SUMMARY = "<details><summary>Machine</summary>"


@dataclass(frozen=True)
class Planned:
    """A release to measure, or to list as skipped with the reason it cannot be installed."""

    release: Release
    skip: str | None = None


@dataclass(frozen=True)
class SweepResult:
    """What sweeping one release produced."""

    release: str
    measurement: Measurement | None  # None when nothing could be measured (install failed)
    problem: str | None  # one line, for the end-of-run summary; None when all went well
    written: Path | None


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    which = p.add_argument_group("releases (one of)")
    which.add_argument("--release", "--releases", dest="releases", action="extend", nargs="+",
                       default=[], metavar="VERSION", help="one or more jax releases, e.g. 0.5.0")
    which.add_argument("--from", dest="first", metavar="VERSION",
                       help="first release of a range (default: the oldest installable here)")
    which.add_argument("--to", dest="last", metavar="VERSION",
                       help="last release of a range (default: the newest installable here)")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda12"), default="auto",
                   help="auto (default): cuda12 where an NVIDIA GPU is visible, else cpu")
    p.add_argument("--target", metavar="NAME|FILE",
                   help="XLA's plan for this NVIDIA GPU, compiled without one (a6000, a100, "
                        "h100, h200 or a spec file); releases that cannot are listed as such")
    p.add_argument("--also-target", metavar="NAME|FILE",
                   help="measure the same releases for this GPU target too (compiled without "
                        "it), in the same pool of --jobs (nox -s repro: a6000)")
    p.add_argument("--reports", type=Path, default=DEFAULT_REPORTS, metavar="DIR",
                   help=f"where the JSON results and {SUMMARY} go (default: {DEFAULT_REPORTS})")
    p.add_argument("--remeasure", action="store_true",
                   help="run the harness again even where a stored result exists")
    p.add_argument("--allow-yanked", action="store_true", help="measure a yanked release named")
    p.add_argument("--if-installable", action="store_true",
                   help="a named release that needs a Python this machine lacks is listed as "
                        "skipped, with the reason, instead of an error (nox -s repro's default "
                        "set)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help=f"harness time limit per run (default {DEFAULT_TIMEOUT:.0f}; with "
                        f"--case: from the ends' own times, as a bisection's)")
    p.add_argument("--refresh-catalogue", action="store_true",
                   help="fetch the release catalogue from PyPI now, however fresh the cached one")
    p.add_argument("--command", default=None, help=argparse.SUPPRESS)  # how nox invoked us
    p.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                   help="measure up to N releases at once (default here: "
                        f"{parallel_runs()}, from the cores and memory)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_executor_options(p)
    h = p.add_argument_group("harness options (as python -m repro takes them)")
    add_size_options(h, n_outer_type=n_outer_list, many=True, n_inner=HarnessOptions.n_inner,
                     n_res=HarnessOptions.n_res, dtype=HarnessOptions.dtype)
    h.add_argument("--variants", type=variant_number, nargs="+", default=None, metavar="V")
    h.add_argument("--mode", choices=("compiled", "runtime"), default=HarnessOptions.mode)
    h.add_argument("--xla-flags", default="", metavar="FLAGS")
    c = p.add_argument_group("your own program (docs/cases.md): one figure per release")
    c.add_argument("--case", metavar="FILE", help="a case file: case(**params) -> (fn, args)")
    c.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    c.add_argument("--over", metavar="NAME=V1,V2,...",
                   help="as python -m bisect takes it: the metric's shape over a parameter")
    c.add_argument("--metric", metavar="NAME", help="memory, compile_time, run_time, "
                   "peak_memory, output or error (default: the case's METRIC, else memory)")
    c.add_argument("--samples", type=positive_int, default=None, metavar="N")
    c.add_argument("--metric-kind", choices=("auto", "deterministic", "noisy"),
                   default="auto", help="as python -m bisect takes it")
    c.add_argument("--threshold", type=float, default=None, metavar="FRACTION",
                   help="as python -m bisect takes it: the classifier's")
    c.add_argument("--runs", type=positive_int, default=None, metavar="N",
                   help="runs a release is measured with at a time (default: a bisection's)")
    c.add_argument("--max-runs", type=positive_int, default=None, metavar="N",
                   help="runs of one release at most (default: a bisection's)")
    args = p.parse_args(glue_flag_values(list(argv or []), (*FLAG_VALUED, "--slurm-args"))
                        if argv is not None else None)
    if args.case is None and (args.param or args.metric or args.samples or args.runs
                              or args.max_runs or args.threshold is not None
                              or args.metric_kind != "auto"):
        p.error("--param, --metric, --samples, --runs, --max-runs, --threshold and "
                "--metric-kind measure a --case FILE: give one")
    if not args.releases and args.first is None and args.last is None:
        p.error("name the releases: --release 0.5.0 [0.10.2 …] or --from 0.4.30 --to 0.5.0")
    if args.releases and (args.first or args.last):
        p.error("use either --release or --from/--to, not both")
    if args.timeout is not None and args.timeout <= 0:
        p.error("--timeout must be positive")
    variants = sorted(set(args.variants)) if args.variants else list(HarnessOptions.variants)
    if 0 not in variants:
        p.error("--variants must include v0 (the verdict is about v0)")
    args.options = HarnessOptions(
        n_outer=tuple(sorted({n for group in args.n_outer for n in group}))
        if args.n_outer else HarnessOptions.n_outer,
        n_inner=args.n_inner, n_res=args.n_res, dtype=args.dtype, variants=tuple(variants),
        mode=args.mode, xla_flags=args.xla_flags.strip())
    if (args.target or args.also_target) and args.mode != "compiled":
        p.error("--target compiles without the GPU: it has no --mode runtime")
    if args.target and args.also_target:
        p.error("--also-target adds a target to the backend's run: not with --target")
    return args


# -- which releases -------------------------------------------------------------------------


def select(catalogue: Catalogue, args: argparse.Namespace, backend: str) -> list[Planned]:
    """The releases asked for, checked before anything is installed.

    A release named on its own that cannot be installed here is an error (exit 2, one line),
    unless ``--if-installable``; inside a range it is listed as skipped, with the reason.
    """
    if args.releases:
        planned, seen = [], set()
        for text in args.releases:
            try:
                release = catalogue.get(text, allow_yanked=args.allow_yanked)
            except UnknownRelease as exc:
                hint = " (--allow-yanked measures it anyway)" if "yanked" in str(exc) else ""
                raise UnknownRelease(f"{exc}{hint}") from None
            if release.version in seen:
                continue
            seen.add(release.version)
            why = catalogue.unusable_reason(release, backend, allow_yanked=args.allow_yanked)
            if why and not (args.if_installable
                            and (needs_another_python(why) or needs_a_gpu(why))):
                raise UserError(f"jax {release.version} cannot be installed here "
                                f"({backend_words(backend, args.target or '')}): "
                                f"{why}")
            planned.append(Planned(release, why))
        return planned
    installable = [r for r in catalogue.releases
                   if catalogue.unusable_reason(r, backend) is None]
    if not installable:
        raise UserError(f"no jax release can be installed here for {backend}")
    first = args.first or str(installable[0].version)
    last = args.last or str(installable[-1].version)
    usable, unusable = catalogue.between(first, last, backend)
    planned = [Planned(r) for r in usable] + [Planned(r, why) for r, why in unusable]
    return sorted(planned, key=lambda p: p.release.version)


# -- one release ----------------------------------------------------------------------------


def result_file(reports: Path, release: str, backend: str, mode: str = "compiled",
                target: str = "") -> Path:
    suffix = "" if mode == "compiled" else f"-{mode}"
    where = target_label(target) if target else backend
    return reports / f"jax-{release}-{where}{suffix}.json"


def scan_questions(options: HarnessOptions) -> tuple[Question, dict[str, Question]]:
    """The built-in report's question as the scan case's (repro/cases/scan_growth.py): the
    first variant's memory (compiled) or real peak (runtime) over n_outer, and each other
    variant's series beside it (v2 only to ``v2_up_to``; 1 for a target, as the harness)."""
    first, *others = options.variants
    question = question_from(
        "memory" if options.mode == "compiled" else "peak_memory", str(SCAN_CASE),
        [f"n_inner={options.n_inner}", f"n_res={options.n_res}", f"dtype={options.dtype}",
         f"variant={first}"], (), target=options.target, xla_flags=options.xla_flags,
        over=f"n_outer={','.join(map(str, options.n_outer))}")
    up_to = options.v2_up_to if options.v2_up_to is not None else 1 if options.target else None
    beside = {}
    for variant in others:
        n_outer = tuple(n for n in options.n_outer
                        if variant != 2 or up_to is None or n <= up_to)
        if len(n_outer) == 1:  # one figure, no shape: the harness measures it on its own
            beside[f"v{variant}"] = replace(question, over=(), params={
                **question.params, "variant": variant, "n_outer": n_outer[0]})
        elif n_outer:
            beside[f"v{variant}"] = with_params(question, {"variant": variant,
                                                           "n_outer": n_outer})
    return question, beside


def stored_result(lab: Lab, release: Release, backend: str, options: HarnessOptions) -> bool:
    """Every run of the scan question under ``release`` is in the lab's store."""
    question, beside = scan_questions(options)
    return not lab.remeasure and all(
        lab.store.path(q.store_key(release, backend, "metric", run=1)).is_file()
        for q in (question, *beside.values()))


def measure_scan(lab: Lab, release: Release, backend: str, options: HarnessOptions,
                 timeout: float) -> list[Measurement]:
    """The release's Measurement for ``options``, from the scan case's runs in the lab (the
    runs a case bisection makes, kept in the same store); where the compiled statistics are
    empty, the real run's peaks the harness measured instead follow it, as their own."""
    question, beside = scan_questions(options)
    main = lab.run(release, backend, question, 1, timeout=timeout)
    runs = [main] + ([lab.run(release, backend, q, 1, timeout=timeout)
                      for q in beside.values()] if main.document else [])
    version = str(release.version)

    def made(options: HarnessOptions, document: dict | None, error: str | None) -> Measurement:
        return Measurement(release=version, backend=backend, options=options,
                           document=document, error=error,
                           seconds=round(sum(r.seconds for r in runs), 2),
                           cached=all(r.cached for r in runs), installed=main.installed)

    if main.document is None:
        return [made(options, None, main.error)]
    doc = {**main.document, "compare": {label: as_series(r.document, q) for (label, q), r in
                                        zip(beside.items(), runs[1:]) if r.document}}
    up_to = options.v2_up_to if options.v2_up_to is not None else 1 if options.target else None
    found = [made(options, report_document(doc, v2_up_to=up_to), None)]
    fallback = main.document["metric"].get("fallback")
    if fallback:
        real = replace(options, mode="runtime", variants=options.variants[:1],
                       n_res=fallback["params"]["n_res"],
                       n_outer=tuple(fallback["values"]))
        found.append(made(real, report_document(doc, fallback=True), None))
    return found


def as_series(document: dict, question: Question) -> dict:
    """A run's metric as a series over n_outer; a one-figure run as its one point."""
    metric = document["metric"]
    if "over" in metric:
        return metric
    n = question.params["n_outer"]
    return {**metric, "over": {"name": "n_outer", "values": [n]},
            "points": [{"at": n, **metric}]}


def sweep_one(planned: Planned, backend: str, options: HarnessOptions, reports: Path, *,
              timeout: float, say: Callable[[str], None], lab: Lab) -> SweepResult:
    release = planned.release
    name = f"jax {release.version} ({backend_words(backend, options.target)})"
    if planned.skip:
        say(f"{name}: skipped, {planned.skip}")
        skipped = Measurement(release=str(release.version), backend=backend, options=options,
                              document=None, error=(planned.skip if needs_a_gpu(planned.skip)
                                                    else f"not installable here: {planned.skip}"),
                              seconds=0.0)
        return SweepResult(str(release.version), skipped, None,
                           _write_result(reports, skipped, say))
    started = time.perf_counter()
    try:  # an install that fails may be transient (network, disk): no result of the release
        env = lab.environment(release, backend)
    except InstallFailed as exc:
        say(f"{name}: {exc}")
        return SweepResult(str(release.version), None, str(exc), None)
    if env.reused:
        say(f"{name}: environment ready in {env.seconds:.2f} s (reused)")
    measurement, *real = measure_scan(lab, release, backend, options, timeout)
    if measurement.cached:
        say(f"{name}: stored result from an earlier run (measured in "
            f"{measurement.seconds:.1f} s; --remeasure runs it again)")
    written = _write_result(reports, measurement, say)
    problem = None
    if measurement.document is None:
        problem = f"{name}: {measurement.error}"
    else:
        ran_on = measurement.document.get("backend")
        if backend == "cuda12" and ran_on != "gpu":
            say(f"{name}: warning: a CUDA environment, but JAX ran on {ran_on!r} "
                f"(is the GPU usable? see the JSON's environment)")
    for more in real:  # as the bisect driver does: a real run answers instead
        say(f"{name}: compiled statistics are empty; a real run at n_res "
            f"{more.options.n_res} answers too")
        _write_result(reports, more, say)
    say(f"{name}: {measurement.verdict}"
        + (f" ({measurement.reason})" if measurement.reason else "")
        + ("" if measurement.cached else
           f"; done in {time.perf_counter() - started:.1f} s (harness "
           f"{measurement.seconds:.1f} s)"))
    return SweepResult(str(release.version), measurement, problem, written)


def _write_result(reports: Path, measurement: Measurement, say) -> Path | None:
    """Write the result whole; a failure never replaces a result that has a document."""
    path = result_file(reports, measurement.release, measurement.backend,
                       measurement.options.mode, measurement.options.target)
    if measurement.document is None:
        previous = _read_measurement(path)
        if previous is not None and previous.document is not None:
            say(f"jax {measurement.release} ({measurement.backend}): kept the earlier result "
                f"in {path}")
            return None
    # ``cached`` says whether this call measured anything: not part of the result itself.
    # Measured again with the same outcome (other timings, another machine's kernel or code
    # sizes only): the file stays as it was, so that a clone's rerun leaves it clean.
    write_json_if_changed(path, replace(measurement, cached=False).as_json(),
                          also_ignore=RUN_DEPENDENT_KEYS)
    return path


def _read_measurement(path: Path) -> Measurement | None:
    try:
        return Measurement.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


# -- the summary ----------------------------------------------------------------------------


def load_results(folder: Path) -> tuple[list[Measurement], list[str]]:
    """Every result JSON directly in ``folder``, by backend then release; and unreadable ones."""
    found, unreadable = [], []
    for path in sorted(folder.glob("*.json")):
        m = _read_measurement(path)
        if m is None:
            unreadable.append(path.name)
        else:
            found.append(m)
    return sorted(found, key=lambda m: (m.backend, _version_key(m.release))), unreadable


def _version_key(text: str):
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def harness_command(backend: str, options: HarnessOptions) -> str:
    return shlex.join(["python", "-m", "repro", *harness_args(backend, options)])


def summary_text(measurements: list[Measurement], unreadable: list[str], command: str,
                 now: datetime, machine: Callable[[], str] = machine_description) -> str:
    by_options: dict[tuple[str, HarnessOptions], list[str]] = {}
    for m in measurements:
        if m.document is not None or len(measurements) == 1:  # what ran, not what was skipped
            by_options.setdefault((m.backend, m.options), []).append(
                f"{m.release} ({backend_words(m.backend, m.options.target)})")
    lines = [
        "# jax.lax.scan memory growth, one row per JAX release",
        "",
        ("Written by `jaxbisect.sweep` from the JSON results beside this file; do not edit "
         "by hand, rerun the command instead."),
        "",
        f"- Command: `{command}`",
        f"{UPDATED}{now:%Y-%m-%d %H:%M} UTC",
    ]
    for (backend, options), releases in by_options.items():
        which = "" if len(by_options) == 1 else f" (for {', '.join(releases)})"
        lines.append(f"- Harness{which}: `{harness_command(backend, options)}`")
    lines += [
        ("- Memory: `output_size_in_bytes + temp_size_in_bytes` of `memory_analysis()` in "
         "compiled mode (the report's figure), or of XLA's buffer-assignment dump where a "
         "release's `memory_analysis()` gives none (a GPU target before jax 0.6.1); the real "
         "peak in runtime mode. A GPU target's rows are XLA's plan for that GPU, compiled "
         "on this machine without it."),
        ("- Verdict: v0 *grows* when it gains at least 0.5 stacked buffers (n_inner × n_res³ "
         "values) per extra outer iteration (the report's bug: +1.00), *constant* when it "
         "does not; *unavailable* when the release reports no sizes (0 bytes: not measured, "
         "never constant)."),
        "",
        results_table(measurements) if measurements else "_No results yet._",
        "",
    ]
    if unreadable:
        lines += [f"Unreadable result files (ignored): {', '.join(unreadable)}", ""]
    lines += [MACHINE_SUMMARY, "", "```text", machine(),
              "```", "", "</details>", ""]
    infos = [(m, m.document.get("environment")) for m in measurements if m.document]
    if infos:
        lines += [("<details><summary><code>jax.print_environment_info()</code> of each "
                   "release</summary>"), ""]
        for m, info in infos:
            lines += [f"jax {m.release} ({backend_words(m.backend, m.options.target)}):", "",
                      "```text",
                      str(info or "").rstrip(), "```", ""]
        lines += ["</details>", ""]
    return "\n".join(lines)


def write_summary(reports: Path, command: str,
                  machine: Callable[[], str] = machine_description) -> Path:
    """Rebuild ``REPORTS/README.md``; left untouched when only its date or the machine that
    reran it would change (the results it tabulates were kept as they were)."""
    measurements, unreadable = load_results(reports)
    path = reports / SUMMARY
    text = summary_text(measurements, unreadable, command, datetime.now(UTC), machine)
    try:
        old = path.read_text(encoding="utf-8")
    except OSError:
        old = None
    if old is None or _undated(old) != _undated(text):
        write_atomic(path, text)
    return path


def _undated(text: str) -> list[str]:
    """The summary less its date and its Machine block (that block describes the machine of
    the last run that changed a result)."""
    lines, in_machine = [], False
    for line in text.splitlines():
        if line == MACHINE_SUMMARY:
            in_machine = True
        elif in_machine and line == "</details>":
            in_machine = False
        elif not in_machine and not line.startswith((UPDATED, *VOLATILE_LINES)):
            lines.append(line)
    return lines


# -- main -----------------------------------------------------------------------------------


def _releases(n: int) -> str:
    return f"{n} release{'' if n == 1 else 's'}"


def plan_line(planned: list[Planned], backend: str, options: HarnessOptions,
              lab: Lab) -> str:
    """What this run will do: how many releases it measures, and how many it need not."""
    skipped = [p for p in planned if p.skip]
    stored = [p for p in planned if not p.skip and stored_result(lab, p.release, backend, options)]
    to_measure = len(planned) - len(skipped) - len(stored)
    on = backend_words(backend, options.target)
    parts = [f"{_releases(to_measure)} to measure on {on}" if to_measure
             else f"nothing to measure on {on}"]
    if stored:
        parts.append(f"{_releases(len(stored))} stored from earlier runs"
                     + (" (--remeasure measures again)" if not to_measure else ""))
    gpu_only = [p for p in skipped if needs_a_gpu(p.skip)]
    if gpu_only:
        parts.append(f"{_releases(len(gpu_only))} only a real GPU can compile for")
    if len(skipped) > len(gpu_only):
        parts.append(f"{_releases(len(skipped) - len(gpu_only))} not installable here")
    return ", ".join(parts)


def run(args: argparse.Namespace, say: Callable[[str], None], lab: Lab | None = None) -> int:
    note = ignored_environment_note()
    if note:
        say(note)
    if args.case is not None:
        from .case_sweep import sweep_case

        if args.executor != "local":
            raise UserError("--executor slurm sweeps the built-in harness; a --case sweep "
                            "runs here (python -m bisect --case … --executor slurm bisects one)")
        return sweep_case(args, say, select)
    executor = executor_from(args.executor, args.slurm_args, say)  # checked before anything
    with executor.interruptible():  # Ctrl-C cancels every job first
        return _run(args, say, executor, lab)


def _run(args: argparse.Namespace, say: Callable[[str], None], executor: Executor,
         lab: Lab | None = None) -> int:
    """``lab``: where releases are measured (default: real ones, each job's progress lines
    marked with its place in the run)."""
    args.options = replace(args.options, target=target_option(args.target))
    backend = resolve_backend(args.backend, args.options.target,
                              gpu_elsewhere=executor is not LOCAL)
    check_reports_folder(args.reports)
    catalogue = load_catalogue(refresh=args.refresh_catalogue)
    work = [(planned, backend, args.options) for planned in select(catalogue, args, backend)]
    command = args.command or shlex.join([*PROG.split(), *args.argv])
    reports: Path = args.reports
    planning = lab or RealLab(say, remeasure=args.remeasure, executor=executor)
    say(plan_line([p for p, _, _ in work], backend, args.options, planning)
        + f"; results in {reports}/")
    if args.also_target:  # one pool for both: neither waits for the other's slowest release
        also = replace(args.options, target=target_option(args.also_target))
        also_planned = select(catalogue, args, DEVICELESS)
        say(plan_line(also_planned, DEVICELESS, also, planning))
        work += [(planned, DEVICELESS, also) for planned in also_planned]
    releases = [planned.release for planned, _, _ in work]
    jobs = min(args.jobs or parallel_runs(), max(1, len(work)))
    done: dict[int, SweepResult] = {}
    running: set[int] = set()
    lock = threading.Lock()

    def measure(i: int, planned: Planned) -> None:
        with lock:
            running.add(i)
        step = say if len(work) == 1 else (lambda m: say(f"[{i + 1}/{len(work)}] {m}"))
        _, on, options = work[i]
        result = sweep_one(planned, on, options, reports,
                           timeout=args.timeout or DEFAULT_TIMEOUT, say=step,
                           lab=lab or RealLab(step, remeasure=args.remeasure, executor=executor))
        with lock:  # one summary at a time, rebuilt from every result written so far
            done[i] = result
            running.discard(i)
            if result.written:
                write_summary(reports, command)

    # Releases measured at once, each on its own core: a compile keeps one core busy.
    pool = ThreadPoolExecutor(jobs, thread_name_prefix="release")
    # Longest first, by what each took when its result in REPORTS was measured (a clone
    # carries them): no release that takes long starts last, with the other cores idle.
    order = sorted(range(len(work)), key=lambda i: -_expected_seconds(reports, *work[i]))
    submitted = {i: pool.submit(measure, i, work[i][0]) for i in order}
    futures = [submitted[i] for i in range(len(work))]
    failed = None
    try:
        for i, future in enumerate(futures):
            failed = i
            future.result()
    except KeyboardInterrupt:
        pool.shutdown(wait=True, cancel_futures=True)
        during = sorted(running)
        where = (f" during jax {', '.join(str(releases[i].version) for i in during)}"
                 if during else "")
        print(f"{PROG}: interrupted{where}; {_releases(len(done))} done and kept in "
              f"{reports}/ (an environment interrupted while installing is removed)",
              file=sys.stderr, flush=True)
        return 130
    except OSError as exc:  # a full or read-only disk under reports/ or the cache
        pool.shutdown(wait=True, cancel_futures=True)
        where = f"jax {releases[failed].version}: " if failed is not None else ""
        print(f"{PROG}: error: {where}cannot write ({exc.strerror or exc}"
              f"{': ' + str(exc.filename) if exc.filename else ''}); "
              f"{_releases(len(done))} done are kept in {reports}/", file=sys.stderr,
              flush=True)
        return 2
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    results = [done[i] for i in sorted(done)]
    summary = write_summary(reports, command)
    measured = [r.measurement for r in results if r.measurement is not None]
    if measured and not args.quiet:
        print(results_table(measured))
    say(f"summary: {summary}")
    problems = [r.problem for r in results if r.problem]
    if problems:
        for problem in problems:
            print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 2
    return 0


def _expected_seconds(reports: Path, planned: Planned, backend: str,
                      options: HarnessOptions) -> float:
    """Seconds the last measurement of this release in REPORTS took; unknown ones first."""
    if planned.skip:
        return 0.0
    previous = _read_measurement(result_file(reports, str(planned.release.version), backend,
                                             options.mode, options.target))
    if previous is None or previous.document is None:
        return float("inf")
    return previous.seconds


def main(argv: list[str] | None = None, lab: Lab | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    args.argv = argv

    def say(message: str) -> None:
        if not args.quiet:  # one write a line: releases measured at once share stderr
            print(message + "\n", end="", file=sys.stderr, flush=True)

    try:
        return run(args, say, lab)
    except UserError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
