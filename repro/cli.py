"""``python -m repro``: measure the report's three variants and say whether v0 grows.

The report's program is the shipped case repro/cases/scan_growth.py: these options are
spellings of the case harness's (repro/case_cli.py) --over, --param and --metric. Needs only
jax and the standard library (tabulate is used when present), so it runs unchanged in any
JAX environment from 0.4.20 on, without the driver.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
from pathlib import Path

from . import target as targets
from .options import OneLineParser, add_size_options, n_outer_list, positive_int, variant_number
from .process import DUMP_FOLDERS, PLATFORMS
from .verdict import EXIT_STATUS, ITEMSIZES, size_problem

EXIT_HELP = """exit status: (the case harness's, docs/cases.md)
  0    measured: the table (or --json's document) was printed
  125  v0's shape cannot be measured here ("unavailable": the document, still printed
       with --json, says why), or JAX fails to start; with --check every failure gives
       125 (git bisect run's "skip"), so that a release is never blamed for it
  0/1  with --check: v0 constant / v0 grows
  2    bad input, or no JAX in this Python (one line on stderr)
  130  interrupted (Ctrl-C)"""


def no_jax_line(exc: ImportError, how: str = "-m repro") -> str:
    """The one line for a process without JAX: where a JAX environment's python is."""
    example = os.path.join(toolkit_cache(), "envs", "jax-0.10.2-cpu-py311", "bin", "python")
    home = os.path.expanduser("~")
    if example.startswith(home + os.sep):  # never the user's home in full
        example = "~" + example[len(home):]
    return (f"python -m repro: error: cannot import JAX here ({exc}); run it with the python "
            f"of a JAX environment, e.g. {example} {how} (made by nox -s repro)")


CASE_HELP = """your own program (docs/cases.md):
  python -m repro --case FILE [--metric NAME] [--param NAME=VALUE] [--json | --check OLD NEW]
  measures one metric of case(**params) -> (fn, args) in FILE; its options:
  python -m repro --case FILE --help"""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineParser(prog="python -m repro", description=__doc__.splitlines()[0],
                      formatter_class=argparse.RawDescriptionHelpFormatter,
                      epilog=f"{CASE_HELP}\n\n{EXIT_HELP}")
    add_size_options(p, n_outer_type=n_outer_list, many=True, helps={
        "n_outer": "outer loop counts, e.g. 1 2 5 10 15 or 1,2,5 (default: the report's)",
        "n_inner": "scan length (default 100)",
        "n_res": "the array is n_res^3 (default 200, the report's)"})
    p.add_argument("--variants", type=variant_number, nargs="+", default=[0, 1, 2], metavar="V",
                   help="v0 v1 v2 (default: all three)")
    p.add_argument("--mode", choices=("compiled", "runtime"), default="compiled",
                   help="compiled: memory_analysis() of the plan (default); "
                        "runtime: real peak of each case in a fresh process")
    p.add_argument("--backend", choices=sorted(PLATFORMS), default="auto",
                   help="JAX platform to use (default: whatever JAX picks)")
    p.add_argument("--xla-flags", default="", metavar="FLAGS",
                   help="extra XLA_FLAGS for every case, e.g. '--xla_cpu_enable_fast_math=false'")
    p.add_argument("--target", metavar="NAME|FILE",
                   help="compile for this NVIDIA GPU without one: "
                        f"{', '.join(targets.built_in())} or a GpuTargetConfigProto spec file "
                        "(needs jax >= 0.4.34 with the CUDA 12 plugin; compiled mode)")
    p.add_argument("--v2-up-to", type=positive_int, default=None, metavar="N",
                   help="measure v2 only at n_outer <= N (v2 unrolls 100 x n_outer ops: minutes "
                        "a case for a GPU target; default 1 with --target, all otherwise)")
    p.add_argument("--sizes-from", choices=("auto", "dump"), default="auto",
                   help="auto: memory_analysis(), XLA's buffer-assignment dump where it answers "
                        "None; dump: always the dump (to check that both agree)")
    p.add_argument("--write-target-spec", metavar="FILE", type=Path,
                   help="on a machine with a GPU: write its target spec to FILE (for --target) "
                        "and exit")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print one JSON document")
    out.add_argument("--check", action="store_true",
                     help="exit 0 if v0 is constant, 1 if it grows, 125 if unmeasurable "
                          "(git bisect run's codes)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    args = p.parse_args(argv)
    args.n_outer = sorted({n for group in args.n_outer for n in group}) if args.n_outer \
        else [1, 2, 5, 10, 15]
    if len(args.n_outer) < 2:
        p.error("--n-outer: v0's shape needs two or more values; one figure is "
                "python -m repro --case repro/cases/scan_growth.py --param n_outer=N --over none")
    args.variants = sorted(set(args.variants))
    too_big = size_problem(max(args.n_outer), args.n_inner, args.n_res, args.dtype)
    if too_big:
        p.error(too_big)
    if args.target is not None:
        if args.mode != "compiled":
            p.error("--target compiles without the GPU: it has no --mode runtime")
    elif args.sizes_from == "dump" and args.mode != "compiled":
        p.error("--sizes-from dump reads the compiled plan: compiled mode only")
    if args.v2_up_to is None and args.target is not None:
        args.v2_up_to = 1
    if (args.json or args.check) and 0 not in args.variants:
        p.error("--json and --check need variant v0 (the verdict is about v0)")
    return args


def toolkit_cache() -> str:
    """Where the toolkit keeps its environments (as jaxbisect.files.cache_dir, stdlib only)."""
    explicit = os.environ.get("JAX_SCAN_REPRO_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "jax-scan-repro")


INTERRUPTED = 130  # the shell's status for a process ended by Ctrl-C (128 + SIGINT)


SCAN_CASE = Path(__file__).resolve().parent / "cases" / "scan_growth.py"


def case_argv(args: argparse.Namespace) -> tuple[list[str], dict]:
    """The scan case's harness command line for these options, and the programs measured
    beside the first variant (the others, labelled v1, v2): ``--n-outer`` is ``--over``,
    the sizes are ``--param``s, ``--mode runtime`` is ``--metric peak_memory``."""
    first, *others = args.variants
    argv = ["--case", str(SCAN_CASE), "--over", f"n_outer={','.join(map(str, args.n_outer))}",
            *(f"--param={name}={getattr(args, name)}" for name in ("n_inner", "n_res", "dtype")),
            f"--param=variant={first}", "--backend", args.backend,
            f"--xla-flags={args.xla_flags}", "--sizes-from", args.sizes_from]
    if args.mode == "runtime":  # a real run's peak, one fresh process a value
        argv += ["--metric", "peak_memory", "--samples", "1"]
    else:
        argv += ["--metric", "memory"]
    if args.target is not None:
        argv += ["--target", args.target]
    argv += ["--json"] if args.json else ["--check", "constant", "grows"] if args.check else []
    argv += ["-q"] if args.quiet else []
    compare = {}
    for variant in others:
        beside: dict = {"variant": variant}
        if variant == 2 and args.v2_up_to is not None:
            beside["n_outer"] = tuple(n for n in args.n_outer if n <= args.v2_up_to)
        compare[f"v{variant}"] = beside
    return argv, compare


def runtime_refusal(args: argparse.Namespace) -> str | None:
    """Runtime mode that cannot fit in this machine's free memory: every stacked buffer of
    v0 alive at once, plus the arrays (the worst case)."""
    try:
        with open("/proc/meminfo") as handle:
            available = next(int(line.split()[1]) * 1024 for line in handle
                             if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return None
    array = args.n_res**3 * ITEMSIZES[args.dtype]
    need = ((max(args.n_outer) + 1) * args.n_inner + 4) * array if 0 in args.variants \
        else 4 * array
    if need <= RUNTIME_HEADROOM * available:
        return None
    return (f"runtime mode could need {need / 1024**3:.1f} GiB but only "
            f"{available / 1024**3:.1f} GiB is available; use a smaller --n-res "
            f"(e.g. --n-res 32) or fewer --n-outer values")


RUNTIME_HEADROOM = 0.8  # refuse runtime runs expected to need more than this share


def main(argv: list[str] | None = None) -> int:
    from .case_cli import main as case_main

    argv = sys.argv[1:] if argv is None else list(argv)
    signal.signal(signal.SIGINT, _on_interrupt)
    if any(a == "--case" or a.startswith("--case=") for a in argv):  # a user's own program
        return case_main(argv)
    args = parse_args(argv)
    if args.write_target_spec is not None:
        return write_target_spec(args.write_target_spec)
    if args.mode == "runtime" and runtime_refusal(args):
        print(f"python -m repro: error: {runtime_refusal(args)}", file=sys.stderr)
        return EXIT_STATUS["unavailable"] if args.check else 2
    scan, compare = case_argv(args)
    return case_main(scan, compare=compare, label=f"v{args.variants[0]}")


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
        text = targets.capture_spec()
        tmp.write_text(text, encoding="utf-8")
        targets.load(str(tmp))  # what --target will need of it
        os.replace(tmp, path)
    except OSError as exc:
        print(f"python -m repro: error: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return 2
    except Exception as exc:  # no JAX, no GPU, a release without the call: one line
        tmp.unlink(missing_ok=True)
        print(f"python -m repro: error: cannot write a target spec here: {type(exc).__name__}: "
              f"{(str(exc).strip().splitlines() or [''])[0][:300]}", file=sys.stderr)
        return 2
    print(f"wrote {path}: use it with --target {path} (a jaxlib older than this one may need "
          f"it trimmed: see repro/targets/README.md)", file=sys.stderr)
    return 0
