"""``python -m repro --case FILE --metric NAME``: measure one metric of a user's own program.

The case protocol and the metrics: docs/cases.md. Needs only jax and the standard library, like
the rest of ``repro``; the bisect driver runs it in each release's environment and reads the
JSON document it prints with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import SCHEMA
from .case import COMPILE_ONLY_METRICS, METRICS, CaseError, parse_over, parse_params, read_case
from .core import describe_environment, device_line
from .options import OneLineParser, positive_int, target_argument
from .process import (
    PLATFORMS,
    configure_for_target,
    configure_this_process,
    dump_folder,
    pass_dump_flags,
    stdout_to_stderr,
)

EXIT_MEASURED, EXIT_BAD_INPUT, EXIT_UNMEASURABLE = 0, 2, 125


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


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = parser()
    args = p.parse_args(argv)
    try:
        args.case = read_case(args.case)
        args.params = parse_params(args.case, args.param)
        args.over = args.case.over if args.over is None else parse_over(args.case, args.over)
    except CaseError as exc:
        p.error(str(exc))
    args.metric = args.metric or args.case.metric or "memory"
    if args.over and args.metric in ("output", "error"):
        p.error(f"--over: the shape of a series of numbers; --metric {args.metric} is not one "
                f"(use --over none)")
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


def summary(document: dict) -> str:
    m, case = document["metric"], document["case"]
    params = ", ".join(f"{k}={v!r}" for k, v in case["params"].items()) or "no parameters"
    head = (f"jax {document['jax']}, jaxlib {document['jaxlib']}, {device_line(document)}; "
            f"case {case['name']} ({params})")
    if "over" in m:
        unit = 1024**2 if m["unit"] == "bytes" else 1
        mode = f" (a real run's peak: {m['fallback']['reason']})" if m.get("fallback") else ""
        points = ", ".join(f"{m['over']['name']}={p['at']}: "
                           + (f"{p['value'] / unit:.6g}" if p["status"] == "ok" else p["status"])
                           for p in m["points"])
        return (f"{head}\n{m['name']}{' (MB)' if unit > 1 else ''}{mode}: {points}\n"
                f"shape: {m['value'] if m['status'] == 'ok' else m['error']}")
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


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    flags = args.xla_flags
    if args.pass_dumps is not None:
        args.pass_dumps.mkdir(parents=True, exist_ok=True)
        flags = f"{flags} {pass_dump_flags(args.pass_dumps)}".strip()
    configure_this_process(args.backend if args.target is None else "auto", flags)
    asked = args.xla_flags.strip()
    # Before jax 0.6.1 a compile-only device has no memory_analysis(): the dump answers.
    with dump_folder("repro-case-dump-", args.target is not None) as dump_dir:
        if dump_dir is not None:
            configure_for_target(dump_dir, module=".*")
        return _run(args, asked, dump_dir)


def _run(args: argparse.Namespace, asked: str, dump_dir: Path | None) -> int:
    from .measure import Compiler
    from .metrics import Sampling, measure, measure_series

    sampling = Sampling() if args.samples is None else Sampling(samples=args.samples)
    try:
        with stdout_to_stderr():
            compiler = Compiler(args.target, dump_dir)
            document = {"schema": SCHEMA, **describe_environment(compiler, asked),
                        "xla_flags": asked, "mode": "case",
                        "case": args.case.as_json(args.params)}
            document["metric"] = (
                measure_series(args.case, args.params, args.over, args.metric, compiler,
                               sampling, hlo_out=args.hlo_out) if args.over else
                measure(args.case, args.params, args.metric, compiler, sampling,
                        hlo_out=args.hlo_out))
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
            print(f"{summary(document)}\ncheck: {CHECK_WORDS[status]}", file=sys.stderr)
        return status
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        print(summary(document))
    return EXIT_MEASURED if document["metric"]["status"] == "ok" else EXIT_UNMEASURABLE


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
