"""The harness core: measure the report's program case by case into one JSON document.

``python -m repro`` (repro/cli.py) parses the command line, sets the process up
(repro/process.py) and prints what :func:`measure` returns. jax and the standard library only.
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

from . import SCHEMA
from . import target as targets
from .measure import MB, Compiler, Params, compiled_case, left_out_case, runtime_case
from .verdict import stacked_buffer_bytes, verdict

RUNTIME_HEADROOM = 0.8  # refuse runtime cases expected to need more than this share of free memory


class Refused(Exception):
    """A request this machine cannot serve (e.g. a runtime case bigger than its memory)."""


def describe_environment(compiler: Compiler | None = None,
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


def _available_bytes() -> int | None:
    """Memory a runtime case may use: the device's limit on a GPU, MemAvailable on the CPU."""
    import jax

    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:
        stats = None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def runtime_need_bytes(variant: int, n_outer: int, params: Params, itemsize: int) -> int:
    """What a runtime case may need at most: every stacked buffer alive at once, plus arrays."""
    array = params.n_res**3 * itemsize
    stacked = stacked_buffer_bytes(params.n_inner, params.n_res, itemsize)
    return (n_outer + 1) * stacked + 4 * array if variant == 0 else 4 * array


def check_runtime_fits(params: Params, itemsize: int) -> str | None:
    """Refuse runtime cases that cannot fit: the compiled plan's estimate where the release
    gives one (arguments + output + temp), the worst case of the formula otherwise."""
    available = _available_bytes()
    if available is None:
        return None
    top = max(params.n_outer)
    need = 0
    for variant in params.variants:
        plan = compiled_case(variant, top, params)
        estimate = (plan["total_bytes"] + (plan.get("argument_bytes") or 0)
                    if plan["status"] == "ok" else None)
        need = max(need, estimate or runtime_need_bytes(variant, top, params, itemsize))
    if need <= RUNTIME_HEADROOM * available:
        return None
    return (f"runtime mode could need {need / 1024**3:.1f} GiB but only "
            f"{available / 1024**3:.1f} GiB is available; use a smaller --n-res "
            f"(e.g. --n-res 32) or fewer --n-outer values")


def measure(args: argparse.Namespace, log, dump_dir: Path | None = None) -> dict:
    import jax.numpy as jnp

    params = Params(n_outer=tuple(args.n_outer), n_inner=args.n_inner, n_res=args.n_res,
                    dtype=args.dtype, variants=tuple(args.variants))
    itemsize = jnp.dtype(args.dtype).itemsize
    compiler = Compiler(args.target, dump_dir, from_dump=args.sizes_from == "dump")
    asked = getattr(args, "xla_flags_asked", os.environ.get("XLA_FLAGS", ""))
    document = {"schema": SCHEMA, **describe_environment(compiler, asked), "xla_flags": asked,
                "mode": args.mode,
                "params": {**params.as_json(), "v2_up_to": args.v2_up_to},
                "sizes_from": args.sizes_from, "cases": []}
    if args.mode == "runtime":
        refusal = check_runtime_fits(params, itemsize)
        if refusal:
            raise Refused(refusal)
    zero = None  # the first case's "0 bytes": this release measures nothing on this backend
    for variant in params.variants:
        for n_outer in params.n_outer:
            if zero is not None:  # every other case would compile (v2: seconds) to say 0 too
                case = {**zero, "variant": f"v{variant}", "n_outer": n_outer,
                        "compile_seconds": None, "error": f"{zero['error']}; not compiled "
                        f"again (v{params.variants[0]} n_outer={params.n_outer[0]} says so)"}
            elif variant == 2 and args.v2_up_to is not None and n_outer > args.v2_up_to:
                case = left_out_case(variant, n_outer, (
                    f"v2 left out at n_outer > {args.v2_up_to}: it unrolls n_inner x n_outer "
                    f"ops, minutes to compile a case{' for a GPU target' if args.target else ''}"
                    f"; --v2-up-to N measures more"))
            elif args.mode == "compiled":
                case = compiled_case(variant, n_outer, params, compiler)
                if case["status"] == "unavailable" and case["total_bytes"] == 0 \
                        and not document["cases"]:
                    zero = case
            else:
                case = runtime_case(variant, n_outer, params)
            document["cases"].append(case)
            shown = (f"{case['total_bytes'] / MB:.2f} MB" if case["status"] == "ok"
                     else f"{case['status']}: {case['error']}")
            log(f"v{variant} n_outer={n_outer}: {shown}")
    unit = stacked_buffer_bytes(params.n_inner, params.n_res, itemsize)
    v0 = [c for c in document["cases"] if c["variant"] == "v0"]
    document["verdict"] = verdict(
        [(c["n_outer"], c["total_bytes"] if c["status"] == "ok" else None) for c in v0], unit)
    document["verdict"]["mode"] = args.mode
    failed = [c for c in v0 if c["status"] != "ok"]
    if failed and document["verdict"]["status"] == "unavailable":
        document["verdict"]["reason"] = failed[0]["error"] or document["verdict"]["reason"]
    return document


def device_line(document: dict) -> str:
    """Where the figures come from, in the words every report uses."""
    target = document.get("target")
    if target:
        return (f"compiled for {target['description']}, without the GPU (target "
                f"{target['name']}, {target['source']})")
    return f"{document['backend']} ({document['device']})"
