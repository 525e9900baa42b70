"""``python -m repro``: measure one metric of a program in this JAX environment.

Without ``--case``, the report's program, repro/cases/scan_growth.py: its three variants, and
whether v0's memory grows with n_outer; ``--n-outer/--n-inner/--n-res/--dtype/--variants/--mode``
are spellings of ``--over``, ``--param`` and ``--metric`` in the report's words. The case
protocol and the metrics: docs/cases.md. Needs only jax and the standard library, so it runs
unchanged in any JAX environment from 0.4.20 on; the bisect driver runs it in each release's
environment and reads the JSON document it prints with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import sys
from pathlib import Path

from . import SCHEMA
from . import target as targets
from .case import (
    COMPILE_ONLY_METRICS,
    SCAN_CASE,
    CaseError,
    import_before_backend,
    parse_over,
    parse_params,
    read_case,
    series_at,
)
from .measure import error_text
from .options import (
    REPRO,
    OneLineParser,
    add_options,
    read_sizes,
    target_argument,
)
from .process import (
    DUMP_FOLDERS,
    MODULES,
    PASSES,
    child_environ,
    configure_this_process,
    dump_flags,
    dump_folder,
    host_devices,
    join_flags,
    stdout_to_stderr,
)
from .units import UNIT, column, mib, mib_number
from .verdict import ITEMSIZES

EXIT_MEASURED, EXIT_BAD_INPUT, EXIT_UNMEASURABLE = 0, 2, 125
INTERRUPTED = 130  # the shell's status for a process ended by Ctrl-C (128 + SIGINT)
SCAN_N_OUTER = [1, 2, 5, 10, 15]  # the scan case's OVER, for the checks made before reading it

EXIT_HELP = """exit status:
  0    measured: the table (or --json's document) was printed
  125  the metric cannot be measured here (for the scan case: v0's shape "unavailable"; the
       document, still printed with --json, says why), or JAX fails to start; with --check
       every failure gives 125 (git bisect run's "skip"), so that a release is never blamed
  0/1  with --check: the old behaviour / the new (the scan case: v0 constant / v0 grows)
  2    bad input, or no JAX in this Python (one line on stderr)
  130  interrupted (Ctrl-C)"""


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m repro", description=__doc__.splitlines()[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXIT_HELP)
    add_options(p, REPRO, groups={
        "case": ("your own program (docs/cases.md)",
                 "measure one metric of case(**params) -> (fn, args) in FILE"),
        "scan": ("the report's program in its words (without --case)",
                 "spellings of the scan case's --over n_outer=..., --param and --metric")},
                exclusive=("output",))
    return p


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The question ``argv`` asks, the scan case's words read as ``--over``, ``--param`` and
    ``--metric``; ``args.compare``: the programs measured beside the case (label ->
    parameters), ``args.label``: the case's own row."""
    p = parser()
    args = p.parse_args(argv)
    scan_words(p, args)
    try:
        args.case = read_case(args.case)
        args.compare = (first_values_for_a_target(args.case.compare, args.target)
                        if args.compare is True else args.compare or {})
        args.params = parse_params(args.case, args.param)
        args.over = args.case.over if args.over is None else parse_over(args.case, args.over)
    except CaseError as exc:
        p.error(str(exc))
    args.metric = args.metric or args.case.metric or "memory"
    for refused, why in (
            (args.over and args.metric in ("output", "error"), f"--over: the shape of a series "
             f"of numbers; --metric {args.metric} is not one (use --over none)"),
            (args.compare and not args.over, "--compare measures the case's COMPARE programs "
             "over --over's values: give --over (or the case's OVER)"),
            (args.sizes_from == "dump" and args.metric != "memory",
             "--sizes-from dump reads the compiled plan: --metric memory only"),
            (args.target is not None and args.metric not in COMPILE_ONLY_METRICS,
             f"--target compiles without the GPU: it measures "
             f"{', '.join(COMPILE_ONLY_METRICS)}, not {args.metric}")):
        if refused:
            p.error(why)
    if args.check == []:  # a shape's old and new behaviour
        if not args.over:
            p.error("--check OLD NEW: give the old and the new figure (alone, --check is a "
                    "shape's 'constant grows')")
        args.check = ["constant", "grows"]
    if args.check is not None and len(args.check) != 2:
        p.error(f"--check {' '.join(args.check)}: give two values, OLD and NEW")
    if args.check is not None and args.metric != "error" and not args.over:
        try:
            args.check = [float(v) for v in args.check]
        except ValueError:
            p.error(f"--check {' '.join(args.check)}: two numbers for --metric {args.metric}")
        if args.metric == "output":
            p.error("--check compares numbers or error messages, not outputs")
    if args.target is not None:
        args.target = target_argument(p, args.target, args.backend)
    return args


def scan_words(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--n-outer`` as ``--over n_outer=…``, the sizes as ``--param``s, ``--mode runtime``
    as ``--metric peak_memory --samples 1``; the variants (all three without ``--case``):
    the first the case's ``--param variant``, the others measured beside it (v2 only up to
    ``--v2-up-to``: 1 with ``--target``)."""
    scan = args.case is None
    args.case = args.case or str(SCAN_CASE)
    n_outer = read_sizes(p, args)
    if len(n_outer) == 1:
        p.error("--n-outer: v0's shape needs two or more values; one figure is "
                "python -m repro --case repro/cases/scan_growth.py --param n_outer=N "
                "--over none")
    if args.mode == "runtime":  # a real run's peak, one fresh process a value
        if args.target is not None:
            p.error("--target compiles without the GPU: it has no --mode runtime")
        if args.metric not in (None, "peak_memory"):
            p.error(f"--mode runtime is --metric peak_memory, not {args.metric}")
        args.metric, args.samples = "peak_memory", args.samples or 1
    elif args.mode == "compiled":
        args.metric = args.metric or "memory"
    args.variants = sorted(set(args.variants or ([0, 1, 2] if scan else [])))
    args.label = "case"
    if not args.variants:
        return
    first, *others = args.variants
    if (args.json or args.check is not None) and first != 0:
        p.error("--json and --check need variant v0 (the verdict is about v0)")
    args.param.append(f"variant={first}")
    args.label = f"v{first}"
    up_to = args.v2_up_to or (1 if args.target is not None else None)
    args.compare = {f"v{v}": {"variant": v, **({"n_outer": tuple(
        n for n in n_outer or SCAN_N_OUTER if n <= up_to)} if v == 2 and up_to else {})}
        for v in others}


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGINT, _on_interrupt)
    args = parse_args(sys.argv[1:] if argv is None else list(argv))
    if args.write_target_spec is not None:
        return write_target_spec(args.write_target_spec)
    if args.mode == "runtime" and args.case.name == "scan_growth" and runtime_refusal(args):
        print(f"python -m repro: error: {runtime_refusal(args)}", file=sys.stderr)
        return EXIT_UNMEASURABLE if args.check is not None else EXIT_BAD_INPUT
    if args.pass_dumps is not None:
        args.pass_dumps.mkdir(parents=True, exist_ok=True)
    # Before jax 0.6.1 memory_analysis() answers None for a compile-only device: XLA's own
    # buffer-assignment dump has the same numbers (repro/measure.py reads it). XLA has one
    # dump folder: with it, the per-pass dumps go there too and the Compiler moves them out.
    with dump_folder("repro-case-dump-", args.target is not None or args.sizes_from == "dump"
                     ) as dump_dir:
        dumps = (dump_flags(dump_dir, join_flags(MODULES, PASSES if args.pass_dumps else ""))
                 if dump_dir else
                 dump_flags(args.pass_dumps, PASSES) if args.pass_dumps is not None else "")
        devices = args.devices or args.case.devices
        # A TPU target's program of N devices compiles for the smallest slice that has them
        # (repro/devices.py: the case reaches them by devices(N)).
        if args.target is not None and hasattr(args.target, "for_devices"):
            args.target = args.target.for_devices(devices)
        # Where a target's device is here, fresh processes measure it beside the plan: they
        # open the device, which this process (compiling without it) never does.
        args.on_device = None
        if args.target is not None and args.metric == "memory" and args.target.here():
            args.on_device = child_environ(args.target.platform, join_flags(
                host_devices(devices), args.xla_flags))
            if "float64" in args.params.values():
                args.on_device["JAX_ENABLE_X64"] = "1"
        configure_this_process(args.backend, join_flags(host_devices(devices), args.xla_flags,
                                                        dumps),
                               target=args.target, params=args.params)
        with stdout_to_stderr():  # what it prints at import: never in the JSON
            import_before_backend(args.case)
        return _run(args, dump_dir)


def _run(args: argparse.Namespace, dump_dir: Path | None) -> int:
    from .measure import Compiler
    from .metrics import Sampling, measure, measure_series, on_the_device, without_local_paths

    sampling = Sampling() if args.samples is None else Sampling(samples=args.samples)
    asked = args.xla_flags.strip()
    try:
        with stdout_to_stderr():
            compiler = Compiler(args.target, dump_dir, from_dump=args.sizes_from == "dump",
                                pass_dumps=args.pass_dumps if dump_dir else None)
            # A real run's peak is measured in fresh processes, and a chip may be opened by one
            # process at a time: this one touches no device until they are done.
            fresh = args.metric == "peak_memory"
            about = {} if fresh else describe_environment(compiler, asked)
            metric = (
                measure_series(args.case, args.params, args.over, args.metric, compiler,
                               sampling, hlo_out=args.hlo_out) if args.over else
                measure(args.case, args.params, args.metric, compiler, sampling,
                        hlo_out=args.hlo_out))
            compare = {}
            for other, params in args.compare.items():
                rest, values = series_at(args.over, {**args.params, **params})
                compare[other] = measure_series(
                    args.case, rest, (args.over[0], values), args.metric, compiler, sampling)
            if args.on_device is not None:
                beside_the_plan(args, metric, args.params, on_the_device)
                for other, params in args.compare.items():
                    beside_the_plan(args, compare[other],
                                    series_at(args.over, {**args.params, **params})[0],
                                    on_the_device)
            document = {"schema": SCHEMA,
                        **(describe_environment(compiler, asked) if fresh else about),
                        "xla_flags": asked, "mode": "case",
                        "case": args.case.as_json(args.params), "metric": metric,
                        **({"compare": compare} if compare else {})}
    except CaseError as exc:
        print(f"python -m repro: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ImportError as exc:  # not a JAX environment: the user's to fix; under --check
        print(no_jax_line(exc), file=sys.stderr)  # git bisect's skip
        return EXIT_UNMEASURABLE if args.check is not None else EXIT_BAD_INPUT
    except Exception as exc:  # JAX failing to start (no such backend, a target it rejects)
        print(f"python -m repro: error: {without_local_paths(error_text(exc))}",
              file=sys.stderr)
        return EXIT_UNMEASURABLE
    if args.check is not None:
        status = check_status(document["metric"], *args.check)
        if not args.quiet:
            print(f"{summary(document, args.label)}\ncheck: {CHECK_WORDS[status]}", file=sys.stderr)
        return status
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(summary(document, args.label))
    return EXIT_MEASURED if document["metric"]["status"] == "ok" else EXIT_UNMEASURABLE


def beside_the_plan(args: argparse.Namespace, metric: dict, params: dict, measure) -> None:
    """The device's own figure (``measure``: metrics.on_the_device) at each point of a
    target's plan, as ``device`` (the point's or the metric's)."""
    if "points" not in metric:
        metric["device"] = measure(args.case, params, args.on_device)
        return
    rest, _ = series_at(args.over, params)
    for point in metric["points"]:
        point["device"] = measure(args.case, {**rest, metric["over"]["name"]: point["at"]},
                                  args.on_device)


def first_values_for_a_target(programs: dict, target: str | None) -> dict:
    """The case's COMPARE programs; for a compile-only GPU target, one that gives its own
    values of a parameter at the first of them only (the scan case's v2, an unrolled loop:
    minutes a compile for a GPU from n_outer 2 on)."""
    if target is None:
        return programs
    return {label: {name: value[:1] if isinstance(value, tuple) else value
                    for name, value in params.items()} for label, params in programs.items()}


CHECK_WORDS = {0: "old behaviour", 1: "new behaviour", EXIT_UNMEASURABLE: "cannot tell"}


def check_status(metric: dict, old, new) -> int:
    """0 when the figure is nearer ``old``, 1 when nearer ``new``, 125 otherwise."""
    import math

    if metric["status"] != "ok":
        return EXIT_UNMEASURABLE
    value = metric["samples"][0][0] if "over" in metric else metric["value"]
    if isinstance(value, str):
        return 0 if value == old else 1 if value == new else EXIT_UNMEASURABLE
    if min(value, old, new) > 0:
        value, old, new = math.log(value), math.log(old), math.log(new)
    near_old, near_new = abs(value - old), abs(value - new)
    return EXIT_UNMEASURABLE if near_old == near_new else 0 if near_old < near_new else 1


def describe_environment(compiler, xla_flags_asked: str) -> dict:
    import jax
    import numpy
    from jaxlib import version as jaxlib

    devices = jax.devices()
    info = {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": numpy.__version__,
            "python": platform.python_version(), "backend": jax.default_backend(),
            "device": devices[0].device_kind, "device_count": len(devices),
            "environment": None, "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "jax_platforms": os.environ.get("JAX_PLATFORMS", ""),
            "jaxlib_git_hash": getattr(jaxlib, "_git_hash", None)}
    # A target's plan is compiled for a GPU that is not here: say so in every document, and
    # never let it pass for a measurement on that GPU (or a real one pass for this).
    info["target"] = compiler.describe()
    info["deviceless"] = info["target"] is not None
    if info["deviceless"]:
        info["host_backend"], info["backend"] = info["backend"], compiler.target.backend_label
        info["device"] = compiler.target.device_label
        info["device_count"] = 1
    # Newer releases print XLA_FLAGS too: show the flags asked for, not the harness's own
    # additions (a temporary dump folder, this machine's paths), so that a result reads the
    # same wherever and whenever it was measured. XLA parsed its flags when the backend
    # started, above, so this changes nothing it does.
    ours = dict(os.environ)
    os.environ.pop("XLA_FLAGS", None)
    if xla_flags_asked:
        os.environ["XLA_FLAGS"] = xla_flags_asked
    try:
        info["environment"] = jax.print_environment_info(return_string=True)
    except Exception as exc:  # missing in a release, or a tool it shells out to fails
        info["environment"] = f"unavailable: {type(exc).__name__}: {exc}"
    finally:
        os.environ.clear()
        os.environ.update(ours)
    return info


def device_line(document: dict) -> str:
    """Where the figures come from, in the words every report uses."""
    target = document.get("target")
    if target:
        return f"{targets.plan_words(target)} (target {target['name']}, {target['source']})"
    return f"{document['backend']} ({document['device']})"


def summary(document: dict, label: str = "case") -> str:
    m, case = document["metric"], document["case"]
    over = m["over"]["name"] if "over" in m else None
    params = ", ".join(f"{k}={v!r}" for k, v in case["params"].items()
                       if k != over) or "no parameters"
    head = (f"jax {document['jax']}, jaxlib {document['jaxlib']}, {device_line(document)}; "
            f"case {case['name']} ({params})")
    if "over" in m:
        source = next((p["source"] for p in m["points"] if p.get("source")), None)
        what = (f"output + temp, {source}" if m["name"] == "memory" else source) if source \
            else ""
        mode = f"a real run's peak: {m['fallback']['reason']}" if m.get("fallback") else what
        shape = m["value"] if m["status"] == "ok" else m["error"]
        beside = plan_beside(document, label) or device_beside(document, label)
        return (f"{head}\n{m['name']}{f' ({mode})' if mode else ''}\n\n"
                f"{series_table(document, label)}\n\n"
                f"shape: {shape}{beside and chr(10) * 2 + beside}")
    if m["status"] != "ok":
        return f"{head}\n{m['name']}: {m['status']} ({m['error']})"
    if m["kind"] == "noisy":  # times in seconds, peaks in MiB from fresh processes
        size = m["unit"] == "bytes"
        unit, each = (UNIT, "processes") if size else ("s", "samples")
        mid, low, high = (mib_number(m[key]) if size else format(m[key], ".6g")
                          for key in ("value", "min", "max"))
        shown = f"median {mid} {unit} (min {low}, max {high}; {len(m['samples'])} {each})"
        if size and m.get("plan"):
            planned = m["plan"]["bytes"]
            shown += (f"\nXLA's plan for the same program: {mib(planned)} "
                      f"({m['plan']['source']}); the run's peak {gap(m['value'], planned)}")
    elif m["name"] == "memory":
        shown = f"{mib(m['value'])} (output + temp, {m['source']})"
        if beside := device_beside(document, label):
            shown += f"\n{beside}"
    elif m["name"] == "output":
        shown = f"sha256 {m['value']['sha256'][:16]}, shapes {m['value']['shapes']}"
    else:
        shown = m["value"]
    return f"{head}\n{m['name']}: {shown}"


def series_table(document: dict, label: str = "case") -> str:
    """A row a program (the case, labelled ``label``, then its COMPARE programs), a column
    a value of the over parameter; "–" where a program is not measured at that value."""
    m = document["metric"]
    name, values = m["over"]["name"], m["over"]["values"]
    size = m["unit"] == "bytes"

    def cells(metric: dict) -> list[str]:
        by = {p["at"]: p for p in metric.get("points", [])}
        return [(mib_number if size else "{:.2f}".format)(by[v]["value"])
                if v in by and by[v]["status"] == "ok"
                else "–" if v not in by else "n/a" for v in values]

    rows = [[label, *cells(m)]] + [[other, *cells(got)]
                                   for other, got in document.get("compare", {}).items()]
    scale = column(m["unit"])
    lines = [["program", *(f"{name}={v}{scale}" for v in values)], *rows]
    # Plain columns: a JAX environment holds jax and its needs only (no tabulate).
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)) for line in lines)


def gap(measured: float, planned: float) -> str:
    """How far a run's figure is from the plan's, in words and percent."""
    if planned <= 0:
        return "has no plan to compare with"
    share = (measured - planned) / planned * 100
    if abs(share) < 0.005:
        return "agrees with it to under 0.01%"
    return f"is {abs(share):.2f}% {'above' if share > 0 else 'below'} it"


def plan_gaps(document: dict, label: str = "case") -> list[tuple[str, object, int, int]]:
    """(program, over value, the run's peak, XLA's plan) for every real peak of a series that
    has the plan of the same program beside it."""
    m = document["metric"]
    if m["name"] != "peak_memory":
        return []
    programs = [(label, m), *document.get("compare", {}).items()]
    return [(name, p["at"], p["value"], p["plan"]["bytes"]) for name, got in programs
            for p in got.get("points", []) if p.get("status") == "ok" and p.get("plan")]


def each_point(document: dict, read) -> dict:
    """``document`` with every point of its metric and its COMPARE programs read anew
    (``read(point)``); a metric without points is its own one point."""

    def series(metric: dict) -> dict:
        if "points" not in metric:
            return {**metric, **read(metric)}
        return {**metric, "points": [read(p) for p in metric["points"]]}

    return {**document, "metric": series(document["metric"]),
            "compare": {k: series(v) for k, v in document.get("compare", {}).items()}}


def farthest(gaps: list[tuple]) -> tuple:
    """Of (program, at, measured, planned) gaps, the one farthest from its plan."""
    return max(gaps, key=lambda g: abs(g[2] - g[3]) / g[3])


def plan_beside(document: dict, label: str = "case") -> str:
    """Beside a series of real peaks, XLA's plan for the same programs and how far apart the
    two are: "" where no point has a plan (a release without sizes)."""
    gaps = plan_gaps(document, label)
    if not gaps:
        return ""
    m = document["metric"]
    plans = each_point(document, lambda p: {**p, "value": p["plan"]["bytes"]} if p.get("plan")
                       else {**p, "status": "n/a"})
    source = next(p["plan"]["source"] for got in (m, *document.get("compare", {}).values())
                  for p in got.get("points", []) if p.get("plan"))
    program, at, measured, plan = farthest(gaps)
    return (f"XLA's plan for the same programs ({source})\n\n"
            f"{series_table(plans, label)}\n\n"
            f"the run's peak against the plan, farthest apart at {program} "
            f"{m['over']['name']}={at}: {gap(measured, plan)}")


def on_device(point: dict) -> dict:
    """A point's own figures from its device ({} where it has none: a real run's point names
    its device's kind there, a string)."""
    device = point.get("device")
    return device if isinstance(device, dict) else {}


def as_device_run(document: dict) -> dict:
    """A target's plan with its device's own figures beside it (``device``), read as a real
    run's peaks each with the plan of what a run holds (output + temp + generated code)."""
    from .metrics import run_plan

    def ran(p: dict) -> dict:
        if "bytes" in on_device(p) and p.get("fields"):
            return {**p, "status": "ok", "value": p["device"]["bytes"],
                    "plan": run_plan(p["fields"])}
        return {**p, "status": "n/a", "plan": None}

    read = each_point(document, ran)
    read["metric"]["name"] = "peak_memory"
    for got in read["compare"].values():
        got["name"] = "peak_memory"
    return read


def device_beside(document: dict, label: str = "case") -> str:
    """Beside a target's plan, where its device was here: the device's own peaks and how far
    they are from the plan ("" where it was not)."""
    m = document["metric"]
    every = [p for got in (m, *document.get("compare", {}).values())
             for p in (got.get("points") or [got])]
    measured = [on_device(p) for p in every if on_device(p)]
    if m["name"] != "memory" or not measured:
        return ""
    kind = next((d["device"] for d in measured if d.get("device")), "the device")
    failed = next((d["error"] for d in measured if d.get("error")), None)
    ran = as_device_run(document)
    gaps = [(label, None, ran["metric"]["value"], ran["metric"]["plan"]["bytes"])] \
        if "points" not in m and ran["metric"].get("plan") else plan_gaps(ran, label)
    lines = [f"on the device itself ({kind}, here): a run's peak in a fresh process, "
             f"in use + reserved above what was resident"]
    if "points" in m:
        lines += ["", series_table(ran, label)]
    elif gaps:
        lines[0] += f": {mib(gaps[0][2])}"
    if gaps:
        name, at, ran_bytes, planned = farthest(gaps)
        where = f" farthest apart at {name} {m['over']['name']}={at}" if "over" in m else ""
        lines += ["", f"the device against the plan (output + temp + generated code),{where}: "
                  f"{gap(ran_bytes, planned)}"]
    if failed:
        lines.append(f"on the device: {failed}")
    return "\n".join(lines)


def runtime_refusal(args: argparse.Namespace) -> str | None:
    """The scan case's runtime mode that cannot fit in this machine's free memory: every
    stacked buffer of v0 alive at once, plus the arrays (the worst case)."""
    try:
        with open("/proc/meminfo") as handle:
            available = next(int(line.split()[1]) * 1024 for line in handle
                             if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return None
    size = {**args.case.defaults, **args.params}
    array = size["n_res"]**3 * ITEMSIZES[size["dtype"]]
    n_outer = max(args.over[1]) if args.over else size["n_outer"]
    need = ((n_outer + 1) * size["n_inner"] + 4) * array if 0 in args.variants else 4 * array
    if need <= RUNTIME_HEADROOM * available:
        return None
    return (f"runtime mode could need {need / 1024**3:.1f} GiB but only "
            f"{available / 1024**3:.1f} GiB is available; use a smaller --n-res "
            f"(e.g. --n-res 32) or fewer --n-outer values")


RUNTIME_HEADROOM = 0.8  # refuse runtime runs expected to need more than this share


def _on_interrupt(signum, frame):
    """Ctrl-C: one line and exit 130, at once. Raising KeyboardInterrupt instead is not enough:
    raised during an import it breaks numpy half-loaded (which prints its own traceback), and
    raised in jax's gc callback it is ignored and the run goes on. Whatever it interrupts is
    the interruption, never the environment's or the release's fault."""
    for folder in list(DUMP_FOLDERS):
        shutil.rmtree(folder, ignore_errors=True)
    os.write(2, b"python -m repro: interrupted\n")
    os._exit(INTERRUPTED)


def write_target_spec(path: Path) -> int:
    """The GPU at hand's spec, written whole to ``path`` once it reads back as a target."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(targets.capture_spec(), encoding="utf-8")
        targets.load(str(tmp))  # what --target will need of it
        os.replace(tmp, path)
    except Exception as exc:  # no JAX, no GPU, a release without the call, an unwritable path
        tmp.unlink(missing_ok=True)
        print(f"python -m repro: error: cannot write a target spec to {path}: "
              f"{error_text(exc)}", file=sys.stderr)
        return 2
    print(f"wrote {path}: use it with --target {path} (a jaxlib older than this one may need "
          f"it trimmed: see repro/targets/README.md)", file=sys.stderr)
    return 0


def no_jax_line(exc: ImportError) -> str:
    """The one line for a process without JAX: where a JAX environment's python is (the
    toolkit's cache, as jaxbisect.files.cache_dir finds it; never the user's home in full)."""
    cache = os.environ.get("JAX_SCAN_REPRO_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "jax-scan-repro")
    example = os.path.join(cache, "envs", "jax-0.10.2-cpu-py311", "bin", "python")
    home = os.path.expanduser("~")
    if example.startswith(home + os.sep):
        example = "~" + example[len(home):]
    return (f"python -m repro: error: cannot import JAX here ({exc}); run it with the python "
            f"of a JAX environment, e.g. {example} -m repro (made by nox -s repro)")
