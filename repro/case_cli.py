"""``python -m repro --case FILE --metric NAME``: measure one metric of a user's own program.

The case protocol and the metrics: docs/cases.md. Needs only jax and the standard library, like
the rest of ``repro``; the bisect driver runs it in each release's environment and reads the
JSON document it prints with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

from . import SCHEMA
from . import target as targets
from .case import COMPILE_ONLY_METRICS, METRICS, CaseError, parse_over, parse_params, read_case
from .options import OneLineParser, positive_int, target_argument
from .process import (
    PLATFORMS,
    add_flags,
    configure_for_target,
    configure_this_process,
    dump_flags,
    dump_folder,
    enable_x64,
    join_flags,
    pass_dump_flags,
    stdout_to_stderr,
)

EXIT_MEASURED, EXIT_BAD_INPUT, EXIT_UNMEASURABLE = 0, 2, 125


def describe_environment(compiler=None,
                         xla_flags_asked: str | None = None) -> dict:
    import jax
    import jaxlib
    import numpy

    info = {"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", None),
            "numpy": numpy.__version__, "python": platform.python_version(),
            "backend": None, "device": None, "device_count": None, "environment": None,
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "jax_platforms": os.environ.get("JAX_PLATFORMS", "")}
    if info["jaxlib"] is None:
        from jaxlib import version as jaxlib_version
        info["jaxlib"] = jaxlib_version.__version__
    try:
        from jaxlib import version as jaxlib_version
        info["jaxlib_git_hash"] = getattr(jaxlib_version, "_git_hash", None)
    except ImportError:
        info["jaxlib_git_hash"] = None
    info["backend"] = jax.default_backend()
    devices = jax.devices()
    info["device"] = devices[0].device_kind
    info["device_count"] = len(devices)
    # A target's plan is compiled for a GPU that is not here: say so in every document, and
    # never let it pass for a measurement on that GPU (or a real one pass for this).
    info["target"] = compiler.describe() if compiler is not None else None
    info["deviceless"] = info["target"] is not None
    if info["deviceless"]:
        info["host_backend"], info["backend"] = info["backend"], targets.COMPILE_ONLY
        info["device"] = targets.device_label(info["target"]["description"])
        info["device_count"] = 1
    # Newer releases print XLA_FLAGS too: show the flags asked for, not the harness's own
    # additions (a temporary dump folder, this machine's paths), so that a result reads the
    # same wherever and whenever it was measured. XLA parsed its flags when the backend
    # started, above, so this changes nothing it does.
    ours = os.environ.get("XLA_FLAGS")
    if xla_flags_asked is not None:
        os.environ["XLA_FLAGS"] = xla_flags_asked
        if not xla_flags_asked:
            del os.environ["XLA_FLAGS"]
    try:
        info["environment"] = jax.print_environment_info(return_string=True)
    except Exception as exc:  # missing in a release, or a tool it shells out to fails
        info["environment"] = f"unavailable: {type(exc).__name__}: {exc}"
    finally:
        if ours is not None:
            os.environ["XLA_FLAGS"] = ours
    return info


def device_line(document: dict) -> str:
    """Where the figures come from, in the words every report uses."""
    target = document.get("target")
    if target:
        return (f"compiled for {target['description']}, without the GPU (target "
                f"{target['name']}, {target['source']})")
    return f"{document['backend']} ({document['device']})"


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m repro --case", description=__doc__.splitlines()[0])
    p.add_argument("--case", required=True, metavar="FILE",
                   help="a Python file defining case(**params) -> (fn, args)")
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="override one of case()'s parameters (repeatable)")
    p.add_argument("--over", metavar="NAME=V1,V2,...",
                   help="measure the metric at each of these values of a parameter and "
                        "classify the series' shape (default: the case's OVER; none: one "
                        "figure)")
    p.add_argument("--metric", choices=METRICS, default=None,
                   help="what to measure (default: the case's METRIC, else memory)")
    p.add_argument("--samples", type=positive_int, default=None, metavar="N",
                   help="samples of a noisy metric (run_time: calls, at least; compile_time: "
                        "compiles; peak_memory: fresh processes)")
    p.add_argument("--backend", choices=sorted(PLATFORMS), default="auto")
    p.add_argument("--xla-flags", default="", metavar="FLAGS")
    p.add_argument("--target", metavar="NAME|FILE",
                   help="compile for this NVIDIA GPU without one (memory, compile_time, error)")
    p.add_argument("--hlo-out", type=Path, metavar="DIR",
                   help="also write the lowered module and XLA's optimized HLO there")
    p.add_argument("--compare", action="store_true",
                   help="also measure the case's COMPARE programs beside it, over the same "
                        "values (a table: a row a program)")
    p.add_argument("--sizes-from", choices=("auto", "dump"), default="auto",
                   help="memory: auto: memory_analysis(), XLA's buffer-assignment dump where "
                        "it answers None; dump: always the dump (to check that both agree)")
    p.add_argument("--pass-dumps", type=Path, metavar="DIR",
                   help="also have XLA dump the module after every HLO pass that changes it "
                        "there (not with --target)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON document")
    out.add_argument("--check", nargs=2, metavar=("OLD", "NEW"),
                     help="git bisect run's codes: exit 0 when the figure is nearer OLD, 1 "
                          "when nearer NEW (a ratio for positive figures), 125 when it cannot "
                          "be measured; for --metric error, OLD and NEW are messages")
    p.add_argument("-q", "--quiet", action="store_true")
    return p


def parse_args(argv: list[str], compare: dict | None = None) -> argparse.Namespace:
    """``compare``: the programs measured beside the case (label -> parameters) where the
    caller names them (``python -m repro``'s --variants); else the case's COMPARE with
    --compare."""
    p = parser()
    args = p.parse_args(argv)
    try:
        args.case = read_case(args.case)
        args.compare = (compare if compare is not None else
                        args.case.compare if args.compare else {})
        args.params = parse_params(args.case, args.param)
        args.over = args.case.over if args.over is None else parse_over(args.case, args.over)
    except CaseError as exc:
        p.error(str(exc))
    args.metric = args.metric or args.case.metric or "memory"
    if args.over and args.metric in ("output", "error"):
        p.error(f"--over: the shape of a series of numbers; --metric {args.metric} is not one "
                f"(use --over none)")
    if args.compare and not args.over:
        p.error("--compare measures the case's COMPARE programs over --over's values: "
                "give --over (or the case's OVER)")
    if args.sizes_from == "dump" and args.metric != "memory":
        p.error("--sizes-from dump reads the compiled plan: --metric memory only")
    if args.pass_dumps is not None and args.target is not None:
        p.error("--pass-dumps: a compile-only target keeps its own dump; leave out one")
    if args.check is not None and args.metric != "error" and not args.over:
        try:
            args.check = [float(v) for v in args.check]
        except ValueError:
            p.error(f"--check {' '.join(args.check)}: two numbers for --metric {args.metric}")
        if args.metric == "output":
            p.error("--check compares numbers or error messages, not outputs")
    if args.target is not None:
        if args.metric not in COMPILE_ONLY_METRICS:
            p.error(f"--target compiles without the GPU: it measures "
                    f"{', '.join(COMPILE_ONLY_METRICS)}, not {args.metric}")
        args.target = target_argument(p, args.target, args.backend)
    return args


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
        return (f"{head}\n{m['name']}{f' ({mode})' if mode else ''}\n\n"
                f"{series_table(document, label)}\n\n"
                f"shape: {shape}")
    if m["status"] != "ok":
        return f"{head}\n{m['name']}: {m['status']} ({m['error']})"
    if m["name"] in ("run_time", "compile_time"):
        shown = (f"median {m['value']:.6g} s (min {m['min']:.6g}, max {m['max']:.6g}; "
                 f"{len(m['samples'])} samples)")
    elif m["name"] == "peak_memory":
        shown = (f"median {m['value'] / 1024**2:.2f} MB (min {m['min'] / 1024**2:.2f}, "
                 f"max {m['max'] / 1024**2:.2f}; {len(m['samples'])} processes)")
    elif m["name"] == "memory":
        shown = f"{m['value'] / 1024**2:.2f} MB (output + temp, {m['source']})"
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
    unit = 1024**2 if m["unit"] == "bytes" else 1

    def cells(metric: dict) -> list[str]:
        by = {p["at"]: p for p in metric.get("points", [])}
        return [f"{by[v]['value'] / unit:.2f}" if v in by and by[v]["status"] == "ok"
                else "–" if v not in by else "n/a" for v in values]

    rows = [[label, *cells(m)]] + [[other, *cells(got)]
                                   for other, got in document.get("compare", {}).items()]
    scale = " (MB)" if unit > 1 else f" ({m['unit']})" if m["unit"] else ""
    headers = ["program", *(f"{name}={v}{scale}" for v in values)]
    try:
        from tabulate import tabulate
    except ImportError:  # a JAX environment holds only jax: the same columns, plain
        widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
        return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(line, widths))
                         for line in [headers, *rows])
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def main(argv: list[str], *, compare: dict | None = None, label: str = "case") -> int:
    """``compare`` and ``label``: see :func:`parse_args` and :func:`series_table`."""
    args = parse_args(argv, compare)
    args.label = label
    flags = args.xla_flags
    if args.pass_dumps is not None:
        args.pass_dumps.mkdir(parents=True, exist_ok=True)
        flags = join_flags(flags, pass_dump_flags(args.pass_dumps))
    configure_this_process(args.backend if args.target is None else "auto", flags)
    asked = args.xla_flags.strip()
    # Before jax 0.6.1 a compile-only device has no memory_analysis(): the dump answers.
    if "float64" in args.params.values():  # a case's dtype parameter, as jax needs it
        enable_x64("float64")
    with dump_folder("repro-case-dump-", args.target is not None or args.sizes_from == "dump"
                     ) as dump_dir:
        if args.target is not None:
            configure_for_target(dump_dir, module=".*")
        elif dump_dir is not None:
            add_flags(dump_flags(dump_dir, module=".*"))
        return _run(args, asked, dump_dir)


def _run(args: argparse.Namespace, asked: str, dump_dir: Path | None) -> int:
    from .measure import Compiler
    from .metrics import Sampling, measure, measure_series

    sampling = Sampling() if args.samples is None else Sampling(samples=args.samples)
    try:
        with stdout_to_stderr():
            compiler = Compiler(args.target, dump_dir, from_dump=args.sizes_from == "dump")
            document = {"schema": SCHEMA, **describe_environment(compiler, asked),
                        "xla_flags": asked, "mode": "case",
                        "case": args.case.as_json(args.params)}
            document["metric"] = (
                measure_series(args.case, args.params, args.over, args.metric, compiler,
                               sampling, hlo_out=args.hlo_out) if args.over else
                measure(args.case, args.params, args.metric, compiler, sampling,
                        hlo_out=args.hlo_out))
            if args.compare:
                document["compare"] = {
                    other: measure_series(args.case, *series_beside(args, params), args.metric,
                                          compiler, sampling)
                    for other, params in args.compare.items()}
    except CaseError as exc:
        print(f"python -m repro: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ImportError as exc:  # not a JAX environment: the user's to fix, as the plain
        from .cli import no_jax_line  # harness says; under --check git bisect's skip

        print(no_jax_line(exc, f"-m repro --case {args.case.path}"), file=sys.stderr)
        return EXIT_UNMEASURABLE if args.check is not None else EXIT_BAD_INPUT
    except Exception as exc:  # JAX failing to start (no such backend, a target it rejects)
        line = (str(exc).strip().splitlines() or [""])[0][:300]
        print(f"python -m repro: error: {type(exc).__name__}: {line}", file=sys.stderr)
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


def series_beside(args: argparse.Namespace, params: dict) -> tuple[dict, tuple]:
    """A COMPARE program's parameters and over values: the case's, with its own values of
    the over parameter (where it gives them) among those asked."""
    name, values = args.over
    rest = {**args.params, **params}
    own = params.get(name)
    if isinstance(own, tuple):
        rest.pop(name)
        values = tuple(v for v in values if v in own)
    return rest, (name, values)


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
