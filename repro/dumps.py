"""``python -m repro.dumps --json``: what a maintainer asks for after a bisection.

Runs inside one release's JAX environment (jax and the standard library only) and prints one
JSON document: the lowered v0 module, XLA's own account of the compiled v0 (memory-usage
report, buffer assignment, the scheduled entry computation, from ``--xla_dump_to``), and v0
against the known ways around the growth (v1, v2, the inner scan with ``unroll``).

XLA reads ``XLA_FLAGS`` once, when the backend starts, so the dump is configured before the
first ``import jax``: this module must be its own process. Nothing here raises for what a
release lacks; the section says "unavailable" and why.
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import sys
from pathlib import Path

from . import SCHEMA
from . import target as targets
from .measure import Compiler, Unmeasured, error_line
from .options import OneLineParser, add_size_options, positive_int
from .process import (
    add_flags,
    configure_for_target,
    dump_folder,
    enable_x64,
    stdout_to_stderr,
    text_dump_flags,
)
from .verdict import stacked_buffer_bytes, verdict

MAX_FILE_CHARS = 600_000  # per dump file kept; far above what n_outer 15 produces
_METADATA = re.compile(r',? metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineParser(prog="python -m repro.dumps",
                                description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true",
                   help="print the JSON document (always printed; kept for the harness's CLI)")
    add_size_options(p, n_outer=3, n_res=32, helps={
        "n_outer": "outer loop count of the dumped v0 (default 3: growth shows from 3 on)"})
    p.add_argument("--xla-flags", default="", metavar="FLAGS",
                   help="extra XLA_FLAGS for everything this process compiles")
    p.add_argument("--workaround-n-outer", type=positive_int, nargs="+", default=[1, 2, 4, 6],
                   metavar="N", help="n_outer values of the workaround measurements")
    p.add_argument("--unroll", type=positive_int, nargs="+", default=None, metavar="K",
                   help="scan unroll factors to try (default: 2 and n_inner, i.e. full)")
    p.add_argument("--no-workarounds", action="store_true", help="skip the workaround section")
    p.add_argument("--target", metavar="NAME|FILE",
                   help="compile for this NVIDIA GPU without one (as python -m repro --target)")
    args = p.parse_args(argv)
    if args.target:
        try:
            args.target = targets.load(args.target)
        except targets.TargetError as exc:
            p.error(str(exc))
    return args


def configure_process(args: argparse.Namespace, dump_dir: Path) -> None:
    """XLA_FLAGS and JAX_ENABLE_X64 for this process; must run before ``import jax``."""
    if args.target:
        configure_for_target(None)
    add_flags(args.xla_flags.strip(), text_dump_flags(dump_dir))
    enable_x64(args.dtype)


def describe_release() -> dict:
    import jax
    import jaxlib

    info = {"jax": jax.__version__, "jaxlib": getattr(jaxlib, "__version__", None),
            "jaxlib_git_hash": None, "python": platform.python_version(),
            "backend": None, "device": None}
    try:
        from jaxlib import version as jaxlib_version

        info["jaxlib"] = info["jaxlib"] or jaxlib_version.__version__
        info["jaxlib_git_hash"] = getattr(jaxlib_version, "_git_hash", None)  # from 0.4.24
    except ImportError:
        pass
    try:
        info["backend"] = jax.default_backend()
        info["device"] = jax.devices()[0].device_kind
    except Exception as exc:
        info["backend"] = f"unavailable: {error_line(exc)}"
    return info


# -- v0 with an ``unroll`` for the inner scan: a local copy, repro/variants.py stays verbatim --

def make_unrolled_v0():
    from functools import partial

    import jax
    import jax.numpy as jnp

    @partial(jax.jit, static_argnums=(1, 2, 3))
    def outer_loop_unrolled(x, n_outer, n_inner, unroll):
        def inner_loop_v0(x, N):
            def body_fun(x1, _):
                x1 = 1 + jnp.cos(x1**2)
                return x1, x1

            _, x_out = jax.lax.scan(body_fun, x, None, N, unroll=unroll)
            return x_out[-1]

        for _ in range(n_outer):
            x = inner_loop_v0(x, n_inner)
        return x

    return outer_loop_unrolled


def plan_bytes(compiled) -> tuple[int | None, str | None]:
    """output + temp of ``memory_analysis()`` (the report's figure), or None and why not."""
    try:
        stats = compiled.memory_analysis()
    except NotImplementedError as exc:
        return None, f"memory_analysis() not implemented: {exc}"
    except Exception as exc:
        return None, error_line(exc)
    if isinstance(stats, (list, tuple)):  # some releases answer one entry per device
        stats = stats[0] if stats else None
    if stats is None:
        return None, "memory_analysis() returned None"
    try:
        total = int(stats.output_size_in_bytes) + int(stats.temp_size_in_bytes)
    except Exception as exc:
        return None, error_line(exc)
    if total == 0:  # jaxlib < 0.4.29 on CPU: nothing measured, never "constant"
        return None, "memory_analysis() reports 0 bytes (not measured by this release)"
    return total, None


# -- XLA's dump ---------------------------------------------------------------------------

DUMP_FILES = {  # key in the document -> how XLA names the file (CPU: cpu_…, GPU: …gpu_…)
    "memory_usage_report": "after_optimizations-memory-usage-report.txt",
    "buffer_assignment": "after_optimizations-buffer-assignment.txt",
    "after_optimizations": "after_optimizations.txt",
}


def find_dump(dump_dir: Path, module: str = "jit_outer_loop") -> dict:
    """The files of the last dumped module whose name contains ``module``."""
    scheduled = sorted(p.name for p in dump_dir.glob(f"module_*{module}*")
                       if p.name.endswith(DUMP_FILES["after_optimizations"]))
    if not scheduled:
        listed = sorted(p.name for p in dump_dir.iterdir())[:20]
        return {"status": "unavailable", "error": "XLA wrote no *after_optimizations.txt for "
                f"{module} (files: {', '.join(listed) or 'none'})", "module": None,
                "files": {}, "missing": list(DUMP_FILES)}
    prefix = scheduled[-1].split(".", 1)[0]  # module_0001: XLA numbers modules as it dumps
    files, missing = {}, []
    for key, suffix in DUMP_FILES.items():
        matches = sorted(p for p in dump_dir.glob(f"{prefix}.*") if p.name.endswith(suffix))
        if not matches:
            missing.append(key)
            continue
        text = matches[0].read_text(errors="replace")
        files[key] = TRIMMERS[key](text)[:MAX_FILE_CHARS]
    return {"status": "ok", "error": None, "module": prefix, "files": files, "missing": missing}


def trim_buffer_assignment(text: str) -> str:
    """The allocations and their values, up to "Total bytes used"; the per-value use lists and
    live ranges after it grow with the program and the parser does not read them."""
    kept = []
    for line in text.splitlines():
        kept.append(line)
        if line.startswith("Total bytes used"):
            break
        if line.startswith("Used values:"):  # releases without the total line
            kept.pop()
            break
    return "\n".join(kept) + "\n"


def trim_after_optimizations(text: str) -> str:
    """The HloModule line and the ENTRY computation, without metadata (source locations)."""
    lines = text.splitlines()
    header = [line for line in lines[:1] if line.startswith("HloModule")]
    entry: list[str] = []
    for line in lines:
        if line.startswith("ENTRY"):
            entry = [line]
        elif entry:
            entry.append(line)
            if line.startswith("}"):
                break
    return "\n".join(header + [""] + [_METADATA.sub("", line) for line in entry]) + "\n"


TRIMMERS = {"memory_usage_report": lambda text: text,
            "buffer_assignment": trim_buffer_assignment,
            "after_optimizations": trim_after_optimizations}


# -- the measurements -----------------------------------------------------------------------

def lower_and_dump(args: argparse.Namespace, dump_dir: Path) -> tuple[dict, dict, dict]:
    """Lower v0 (its text), compile it (the dump lands in ``dump_dir``), read the dump."""
    import jax.numpy as jnp

    from .variants import outer_loop

    lowered_doc = {"status": "ok", "error": None, "text": None}
    compiled_doc = {"status": "ok", "error": None, "total_bytes": None}
    arg = args.compiler.struct((args.n_res,) * 3, jnp.dtype(args.dtype))
    try:
        lowered = outer_loop.lower(arg, args.n_outer, args.n_inner, 0)
    except Exception as exc:
        error = error_line(exc)
        lowered_doc.update(status="error", error=error)
        compiled_doc.update(status="error", error=f"not lowered: {error}")
        return lowered_doc, compiled_doc, {"status": "unavailable", "error": "not lowered",
                                           "module": None, "files": {}, "missing": list(DUMP_FILES)}
    try:
        lowered_doc["text"] = lowered.as_text()
    except Exception as exc:
        lowered_doc.update(status="unavailable", error=error_line(exc))
    try:
        compiled = lowered.compile()
        try:  # the whole optimized module, for telling XLA's passes from what lies below
            compiled_doc["hlo"] = (compiled.as_text() or "")[:MAX_FILE_CHARS] or None
        except Exception:
            compiled_doc["hlo"] = None
        total, error = plan_bytes(compiled)
        if total is None and args.target:  # memory_analysis() is None before jax 0.6.1
            total, error = _dumped_total(dump_dir), None
        compiled_doc.update(total_bytes=total, error=error,
                            status="ok" if total is not None else "unavailable")
    except Exception as exc:
        compiled_doc.update(status="error", error=error_line(exc))
    try:
        dump = find_dump(dump_dir)
    except Exception as exc:
        dump = {"status": "error", "error": error_line(exc), "module": None, "files": {},
                "missing": list(DUMP_FILES)}
    return lowered_doc, compiled_doc, dump


def _dumped_total(dump_dir: Path) -> int | None:
    from .measure import sizes_from_buffer_assignment

    found = sorted(dump_dir.glob("*jit_outer_loop*after_optimizations-buffer-assignment.txt"))
    if not found:
        return None
    sizes = sizes_from_buffer_assignment(found[-1].read_text(encoding="utf-8"))
    return sizes["output_bytes"] + sizes["temp_bytes"]


def workarounds(args: argparse.Namespace) -> dict:
    """v0, v1, v2 and v0 with ``scan(unroll=k)``, each at every workaround n_outer, with a
    verdict: which of them keep the plan constant under this release."""
    import jax.numpy as jnp

    from .variants import outer_loop

    arg = args.compiler.struct((args.n_res,) * 3, jnp.dtype(args.dtype))
    unit = stacked_buffer_bytes(args.n_inner, args.n_res, jnp.dtype(args.dtype).itemsize)
    unrolled = make_unrolled_v0()
    unrolls = args.unroll or sorted({min(2, args.n_inner), args.n_inner})
    cases = [("v0", "scan stacking outputs (the report's v0)", lambda n: outer_loop.lower(
                 arg, n, args.n_inner, 0)),
             ("v1", "scan carrying only", lambda n: outer_loop.lower(arg, n, args.n_inner, 1)),
             ("v2", "unrolled Python loop", lambda n: outer_loop.lower(arg, n, args.n_inner, 2))]
    for k in unrolls:
        label = "full" if k >= args.n_inner else str(k)
        cases.append((f"v0 unroll={k}", f"v0 with jax.lax.scan(..., unroll={k}) ({label})",
                      lambda n, k=k: unrolled.lower(arg, n, args.n_inner, k)))
    out = []
    for name, description, lower in cases:
        points, errors = [], []
        for n in args.workaround_n_outer:
            try:
                compiled, assignment = args.compiler.compile(lambda lower=lower, n=n: lower(n))
                fields, _ = args.compiler.sizes(compiled, assignment)
                total, error = fields["output_bytes"] + fields["temp_bytes"], None
            except Unmeasured as exc:
                total, error = None, str(exc)
            except Exception as exc:
                total, error = None, error_line(exc)
            points.append([n, total])
            if error:
                errors.append(f"n_outer {n}: {error}")
        out.append({"name": name, "description": description, "points": points,
                    "errors": errors[:3], "verdict": verdict([tuple(p) for p in points], unit)})
    return {"status": "ok", "error": None, "n_outer": list(args.workaround_n_outer),
            "unit_bytes": unit, "cases": out}


def gather(args: argparse.Namespace, dump_dir: Path) -> dict:
    document: dict = {"schema": SCHEMA, "kind": "evidence", "status": "ok", "error": None,
                      "xla_flags": args.xla_flags.strip(),
                      "params": {"n_outer": args.n_outer, "n_inner": args.n_inner,
                                 "n_res": args.n_res, "dtype": args.dtype,
                                 "array_shape": [args.n_res] * 3,
                                 "stacked_shape": [args.n_inner] + [args.n_res] * 3}}
    try:
        document.update(describe_release())
        args.compiler = Compiler(args.target or None, dump_dir)
        document["target"] = args.compiler.describe()
        document["deviceless"] = bool(args.target)
        if document["deviceless"]:  # XLA's plan for that GPU, compiled on this machine
            document["host_backend"] = document["backend"]
            document["backend"] = targets.COMPILE_ONLY
            document["device"] = targets.device_label(document["target"]["description"])
    except Exception as exc:  # no usable jax here: say so, in the same JSON shape
        document.update(status="error", error=f"cannot use JAX here: {error_line(exc)}")
        return document
    document["lowered"], document["compiled"], document["dump"] = lower_and_dump(args, dump_dir)
    if args.no_workarounds:
        document["workarounds"] = {"status": "skipped", "error": None, "cases": []}
    else:
        try:
            document["workarounds"] = workarounds(args)
        except Exception as exc:
            document["workarounds"] = {"status": "error", "error": error_line(exc), "cases": []}
    return document


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    with dump_folder("repro-evidence-") as dump_dir:
        configure_process(args, dump_dir)
        with stdout_to_stderr():  # stdout: the JSON document only
            document = gather(args, dump_dir)
    print(json.dumps(document, indent=1))
    return 0 if document["status"] == "ok" else 2


if __name__ == "__main__":
    sys.exit(main())
