"""Measure one metric of a case's ``(fn, args)`` in this JAX process (docs/cases.md).

``measure`` and ``measure_series`` answer with a plain dict (the document's ``metric`` object)
and never raise for what the program or the release does: a case that raises is measured as
such (its ``status`` is "error" with the exception's type and first line; for the ``error``
metric that line *is* the value).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .case import NOISY_METRICS, UNITS, CaseError, CaseFile, build, load_module, series_at
from .devices import NotEnoughDevices
from .measure import (
    NOT_MEASURED,
    Compiler,
    Unmeasured,
    error_message,
    error_text,
    peak_of_run,
    plan_bytes,
    run_child,
)
from .verdict import relative_shape

OUTPUT_POINTS = 256   # values of each output kept for comparison (evenly spaced, plus sums)
NO_ERROR = "no error"


@dataclass(frozen=True)
class Sampling:
    """How many samples a noisy metric takes (docs/timing.md says why these)."""

    samples: int = 5          # at least this many (run_time: calls; others: compiles/processes)
    min_seconds: float = 0.3  # run_time: keep calling until this much time is spent ...
    max_seconds: float = 1.0  # ... but stop adding samples after this much
    max_samples: int = 100


def _result(name: str, **fields) -> dict:
    """A metric's result: ``fields`` (its samples, what it says of them) over the defaults;
    a noisy metric's value is the median of its samples, a deterministic one's the first."""
    result = {"name": name, "unit": UNITS[name],
              "kind": "noisy" if name in NOISY_METRICS else "deterministic",
              "status": "ok", "error": None, "samples": [], "value": None, **fields}
    samples = result["samples"]
    if result["status"] != "ok" or not samples:
        return result
    if result["kind"] == "noisy":
        result["value"] = statistics.median(samples)
        result["min"], result["max"] = min(samples), max(samples)
    else:
        result["value"] = samples[0]
    return result


def concrete(args):
    """Arrays for a run: a struct becomes fixed pseudo-random data (seed 0), so every release
    runs on the same numbers."""
    import jax
    import numpy

    rng = numpy.random.RandomState(0)

    def data(a):
        dtype = numpy.dtype(a.dtype)
        if dtype == numpy.bool_:
            return rng.rand(*a.shape) < 0.5
        if numpy.issubdtype(dtype, numpy.integer):
            return rng.randint(0, 10, size=a.shape)
        if numpy.issubdtype(dtype, numpy.complexfloating):
            return rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)
        return rng.standard_normal(a.shape)

    return tuple(jax.device_put(numpy.asarray(data(a)).astype(numpy.dtype(a.dtype)))
                 if isinstance(a, jax.ShapeDtypeStruct) else a for a in args)


def arrays(args):
    """:func:`concrete`'s arrays where each struct's sharding is kept: a case's NamedSharding
    over its mesh (repro/devices.py) places its data there, as the case asks."""
    import jax

    return tuple(jax.device_put(made, a.sharding)
                 if isinstance(a, jax.ShapeDtypeStruct) and getattr(a, "sharding", None)
                 is not None else made for made, a in zip(concrete(args), args))


# -- where the arguments go, and errors the harness itself causes ---------------------------
# A compile-only target places each argument: one the case gave a sharding over the target's
# devices keeps it, any other goes to the target's first device (repro/tpu_target.py). A
# program that then fails because its devices and those arguments' disagree (jax: "Received
# incompatible devices for jitted computation …") fails by the harness's placement, never by
# its own behaviour: such a run is a "harness_error", as is a case that asks for more devices
# than the run has (repro/devices.py).

HARNESS_ERROR = "harness_error"  # a metric's status: the harness could not measure the program


class HarnessError(Exception):
    """What the harness's own set-up caused; ``reason``: one line, ``said``: jax's words."""

    def __init__(self, reason: str, said: str = ""):
        super().__init__(reason)
        self.reason, self.said = reason, said


def structs(compiler: Compiler, args) -> tuple[tuple, list[int]]:
    """The arguments as structs for ``compiler`` and the positions the harness placed itself
    (a target's: repro/tpu_target.py's ``place``); without a target, a struct or array the
    case gave a sharding over several devices keeps it."""
    import jax

    if _places(compiler):
        return compiler.target.compile_only().place(args)
    if compiler.target is not None:
        return compiler.structs(args), [i for i, a in enumerate(args) if hasattr(a, "shape")]
    kept = []
    for a in args:
        sharding = getattr(a, "sharding", None)
        try:
            several = sharding is not None and len(sharding.device_set) > 1
        except Exception:
            several = False
        kept.append(jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=sharding) if several
                    else compiler.structs((a,))[0])
    return tuple(kept), []


def _places(compiler: Compiler) -> bool:
    """A target whose compile-only devices place arguments themselves (a TPU slice's)."""
    return getattr(compiler.target, "kind", None) == "tpu"


def on_target(compiler: Compiler):
    """The target's lowering context (its first device as jax's default), or none."""
    if not _places(compiler):
        return contextlib.nullcontext()
    return compiler.target.compile_only().context()


def lowered_for(compiler: Compiler, fn, args, compile: bool = True):
    """``compiler.compile(fn, *structs)`` on the target; a failure of the harness's own
    placement raised as HarnessError."""
    placed, moved = structs(compiler, args)
    try:
        with on_target(compiler):
            return compiler.compile(fn, *placed) if compile else fn.lower(*placed)
    except Exception as exc:
        if moved and PLACEMENT_WORDS in str(exc):
            raise HarnessError(placement_line(compiler, moved), error_text(exc)) from exc
        raise


PLACEMENT_WORDS = "incompatible devices"


def placement_line(compiler: Compiler, moved: list[int]) -> str:
    """One line: which arguments the harness placed, where, and how the case reaches the
    target's devices instead."""
    target = compiler.target
    where = (f"the first device of {target.description} slice {target.topology}"
             if getattr(target, "topology", None) else "the target's device")
    which = ", ".join(str(i) for i in moved)
    return (f"the harness placed argument{'s' if len(moved) > 1 else ''} {which} on {where}, "
            f"and the program's devices are others: build its mesh over "
            f"repro.devices.devices(N) and give the arguments shardings over it "
            f"(docs/cases.md, \"Several devices\")")


# Paths of the machine that ran it never leave an error the harness reports: a file inside a
# Python environment is named from its package (jax/_src/…), one of this checkout from it
# (repro/cases/…), one of the toolkit's cache or the home folder by its name alone.
_PATH = re.compile(r"(?<![\w.])/(?:[\w.+@~-]+/)*[\w.+@~-]+")
_PACKAGES = re.compile(r"/(?:site|dist)-packages/")
_CHECKOUT = str(Path(__file__).resolve().parent.parent)


def _local_roots() -> list[tuple[str, int]]:
    """Folders whose files are this machine's, each with how deep below it a path must be to
    be one (a file right in the temporary folder, such as libtpu's /tmp/libtpu_lockfile, is
    the same on every machine: kept)."""
    import tempfile

    home = os.path.expanduser("~")
    cache = os.environ.get("JAX_SCAN_REPRO_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "jax-scan-repro")
    return [(r.rstrip("/"), depth) for r, depth in ((cache, 1), (home, 1),
                                                    (tempfile.gettempdir(), 2))
            if r and r.rstrip("/")]


def without_local_paths(text: str) -> str:
    """``text`` with this machine's paths cut to their package-relative form."""
    if not text or "/" not in text:
        return text
    roots = _local_roots()

    def cut(match: re.Match) -> str:
        path = match.group(0)
        packaged = _PACKAGES.split(path)
        if len(packaged) > 1:
            return packaged[-1]
        if path.startswith(_CHECKOUT + "/"):
            return path[len(_CHECKOUT) + 1:]
        for root, depth in roots:
            if path.startswith(root + "/") and path[len(root) + 1:].count("/") + 1 >= depth:
                return os.path.basename(path)
        return path

    return _PATH.sub(cut, text)


def output_digest(out) -> dict:
    """What the ``output`` metric compares: each leaf's shape and dtype, and up to
    OUTPUT_POINTS evenly spaced values plus its sum and sum of magnitudes (as floats)."""
    import jax
    import numpy

    shapes, values, digest = [], [], hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(out):
        array = numpy.asarray(leaf)
        shapes.append([list(array.shape), str(array.dtype)])
        digest.update(array.tobytes())
        flat = array.ravel()
        if numpy.iscomplexobj(flat):
            flat = numpy.concatenate([flat.real, flat.imag])
        flat = flat.astype(numpy.float64)
        kept = flat if flat.size <= OUTPUT_POINTS else \
            flat[numpy.linspace(0, flat.size - 1, OUTPUT_POINTS).astype(numpy.int64)]
        values += kept.tolist()
        with numpy.errstate(all="ignore"):
            values += [float(flat.sum()), float(numpy.abs(flat).sum())]
    return {"shapes": shapes, "values": [v if math.isfinite(v) else repr(v) for v in values],
            "sha256": digest.hexdigest()}


# Each metric's samples of a built program (and what else it says of them): the fields of
# its result. One raising is the release's answer (see measure).


def memory(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    compiled, assignment = lowered_for(compiler, fn, args)
    fields, source = compiler.sizes(compiled, assignment)
    if plan_bytes(fields) == 0:  # jaxlib < 0.4.29 on the CPU
        return {"source": source, "fields": fields, "status": "unavailable",
                "error": NOT_MEASURED}
    return {"source": source, "fields": fields, "samples": [plan_bytes(fields)]}


def compile_time(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    import jax

    lowered_for(compiler, fn, args, compile=False)  # a placement the program cannot use
    placed, _ = structs(compiler, args)

    def once() -> float:
        jax.clear_caches()
        started = time.perf_counter()
        with on_target(compiler):
            fn.lower(*placed).compile()
        return round(time.perf_counter() - started, 6)

    warmup = [once()]  # the backend's own start-up lands here
    return {"warmup": warmup, "samples": [once() for _ in range(sampling.samples)]}


def run_time(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    import jax

    placed = arrays(args)
    started = time.perf_counter()
    jax.block_until_ready(fn(*placed))  # compiles, then runs once
    warmup = [round(time.perf_counter() - started, 6)]
    samples, spent = [], 0.0
    while len(samples) < sampling.max_samples and (
            len(samples) < sampling.samples or spent < sampling.min_seconds):
        started = time.perf_counter()
        jax.block_until_ready(fn(*placed))
        seconds = time.perf_counter() - started
        samples.append(round(seconds, 7))
        spent += seconds
        if spent >= sampling.max_seconds and len(samples) >= sampling.samples:
            break
    return {"warmup": warmup, "samples": samples}


def output(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    import jax

    return {"samples": [output_digest(jax.block_until_ready(fn(*arrays(args))))]}


def error(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    import jax

    if compiler.target is not None:  # nothing runs on a compile-only device
        lowered_for(compiler, fn, args)
    else:
        jax.block_until_ready(fn(*arrays(args)))
    return {"samples": [NO_ERROR]}


def peak_memory(case: CaseFile, params: dict, sampling: Sampling, timeout: float = 900,
                environ: dict | None = None) -> dict:
    """Each sample from a fresh process (``environ``: its environment, else this one's), so
    that other samples' peaks do not mix in."""
    fields: dict = {"samples": []}
    request = json.dumps({"case": case.path, "params": params})
    for _ in range(sampling.samples):
        answer, error = run_child("repro.metrics", request, timeout, environ)
        if answer is not None and answer.get(HARNESS_ERROR):
            return {**fields, "status": HARNESS_ERROR, "error": answer["error"]}
        if answer is None or "error" in answer:
            text = without_local_paths(error or answer["error"])[:300]
            if "lockfile" in text:  # libtpu: the chip is this process's parent's, or another's
                text = (f"{HELD_DEVICE} ({text})")[:300]
            return {**fields, "status": "error", "error": text}
        fields["source"] = answer["source"]
        fields["samples"].append(answer["bytes"])
        # What XLA planned for the same program, beside what the run held: on an accelerator
        # they should agree, and how far apart they are is the first thing to ask of either.
        fields.setdefault("plan", answer.get("plan"))
        fields.setdefault("device_stats", answer.get("device_stats"))
        fields.setdefault("device", answer.get("device"))
    return {k: v for k, v in fields.items() if v is not None}


HELD_DEVICE = ("the device is held by another process (a TPU is opened by one process at a "
               "time: nothing else may touch it while the harness measures)")


def peak_child(case: CaseFile, params: dict) -> dict:
    """In a fresh process: compile, then run once, and the peak above what was resident;
    with it the compiled plan's own sizes (output + temp), where the release reports them."""
    import jax

    fn, args = build(case, params)
    data = arrays(args)
    compiled = fn.lower(*data).compile()
    jax.block_until_ready(data)
    peak = peak_of_run(lambda: compiled(*data))
    answer = {"source": peak["source"] + " above baseline",
              "bytes": max(0, peak["peak_bytes"] - peak["baseline_bytes"]),
              "device": jax.devices()[0].device_kind}
    if "device_stats" in peak:
        answer["device_stats"] = {**peak["device_stats"], "baseline_bytes": peak["baseline_bytes"]}
    try:
        fields = Compiler().sizes(compiled, None)[0]
    except Exception:  # a release without memory_analysis(): the peak stands alone
        fields = {}
    if plan_bytes(fields):
        answer["plan"] = run_plan(fields)
    return answer


def run_plan(fields: dict) -> dict:
    """XLA's plan for what a run holds beyond its arguments, from memory_analysis()'s
    ``fields``: a device holds the program's code beside its buffers (a TPU loads it into HBM
    and counts it in use), so output + temp + generated code."""
    code = fields.get("generated_code_bytes") or 0
    return {"bytes": plan_bytes(fields) + code, "fields": fields,
            "source": "memory_analysis() output + temp" + (" + generated code" if code else "")}


def on_the_device(case: CaseFile, params: dict, environ: dict, timeout: float = 900) -> dict:
    """Beside a target's plan where its device is here: one run's peak on the device, in a
    fresh process whose environment (``environ``) opens it, with that compile's own plan."""
    got = peak_memory(case, params, Sampling(samples=1), timeout, environ)
    if got.get("status") == "error":
        return {"error": got["error"]}
    return {"bytes": got["samples"][0],
            **{k: got[k] for k in ("source", "device", "plan", "device_stats") if k in got}}


SAMPLES = {"memory": memory, "compile_time": compile_time, "run_time": run_time,
           "output": output, "error": error}


def measure(case: CaseFile, params: dict, metric: str, compiler: Compiler,
            sampling: Sampling = Sampling(), hlo_out: Path | None = None) -> dict:
    """The metric's result for ``case`` at ``params``; an exception from the program (its
    build, lowering, compile or run) is this release's answer, never a harness failure.
    ``peak_memory`` builds the program in fresh processes only (``hlo_out`` aside)."""
    try:
        if metric != "peak_memory" or hlo_out is not None:
            fn, args = build(case, params)
            if hlo_out is not None:
                write_hlo(fn, args, compiler, hlo_out)
        fields = (peak_memory(case, params, sampling) if metric == "peak_memory" else
                  SAMPLES[metric](fn, args, compiler, sampling))
    except CaseError:
        raise
    except Unmeasured as exc:
        return _result(metric, status="unavailable", error=str(exc))
    except HarnessError as exc:
        return _result(metric, status=HARNESS_ERROR, error=without_local_paths(exc.reason),
                       harness_error={"kind": "placement", "said": without_local_paths(exc.said)})
    except NotEnoughDevices as exc:
        return _result(metric, status=HARNESS_ERROR, error=without_local_paths(str(exc)),
                       harness_error={"kind": "devices", "said": without_local_paths(str(exc))})
    except Exception as exc:
        if metric == "error":  # the figure is the whole message: the driver compares its
            # signature and shows its core (a first line cut short can end inside a quoted
            # instruction, before the message's own figures)
            whole = error_message(exc)
            explained = compiler.target.explain_error(whole) if compiler.target else None
            return _result("error", samples=[without_local_paths(explained or whole)],
                           raised=True)
        text = error_text(exc)
        if compiler.target is not None:  # one the target spec's values cause, in its words
            text = compiler.target.explain_error(text) or text
        return _result(metric, status="error", error=without_local_paths(text))
    return _result(metric, **fields)


# A shape's words for figures of 0 bytes, said of a compiled plan (repro/verdict.py).
PEAK_ZERO = re.compile(r"memory reported as 0 bytes at ([^()]+?) \(this release does not "
                       r"measure it\)")


def measure_series(case: CaseFile, params: dict, over: tuple, metric: str, compiler: Compiler,
                   sampling: Sampling = Sampling(), hlo_out: Path | None = None) -> dict:
    """The metric at each value of ``over = (name, values)``, in this process, and the
    series' shape: the case's own ``shape(name, points, params)`` where it has one, else
    :func:`repro.verdict.relative_shape`. Its one sample is ``[status, rate]`` ("constant",
    "grows", ...; the rate, if any, a scale-free growth), what the bisection compares
    (:func:`repro.verdict.shapes_alike`); its value the shape's label.

    The memory metric of a release whose compiled statistics are empty (0 bytes: jaxlib <
    0.4.29 on the CPU) falls back to a real run's peak (``peak_memory``, one fresh process a
    value) at the case's ``RUNTIME_PARAMS``: the shape is scale-free, the figures are not."""
    name, values = over
    rest, values = series_at(over, params)
    here = rest.get(name, case.defaults[name])
    at = here if here in values else values[-1]  # where the modules are written, if asked
    points, empty = [], []
    for v in values:
        if empty:  # the release measures nothing here: no compile (v2's: minutes) says more
            points.append({"at": v, **empty[0], "error": f"{empty[0]['error']}; not compiled "
                           f"again ({name} {points[0]['at']} says so)"})
            continue
        points.append({"at": v, **measure(case, {**rest, name: v}, metric, compiler, sampling,
                                          hlo_out=hlo_out if v == at else None)})
        if points[-1]["status"] == "unavailable" and "0 bytes" in (points[-1]["error"] or ""):
            empty.append({k: x for k, x in points[-1].items() if k != "at"})
    fallback, asked = None, values  # asked: the columns of a table, whatever a fallback measures
    if metric == "memory" and empty and compiler.target is None:
        rest, fitting = series_at(over, {**rest, **case.runtime_params})
        values = tuple(v for v in values if v in fitting) or fitting
        fallback = {"metric": "peak_memory", "reason": empty[0]["error"], "params": rest,
                    "values": list(values)}
        points = [{"at": v, **measure(case, {**rest, name: v}, "peak_memory", compiler,
                                      Sampling(samples=1))} for v in values]
    result = _result(metric, kind="deterministic", over={"name": name, "values": list(asked)},
                     points=points, fallback=fallback,
                     params={k: v for k, v in case.resolve(rest).items() if k != name})
    raised = next((p for p in points if p["status"] == HARNESS_ERROR), None) or \
        next((p for p in points if p["status"] == "error"), None)
    if raised is not None:
        result.update(status=raised["status"],
                      error=f"at {name} {raised['at']}: {raised['error']}")
        return result
    figures = [(p["at"], p["value"] if p["status"] == "ok" else None) for p in points]
    hook = getattr(load_module(case), "shape", None)
    shape = (hook(name, figures, case.resolve(rest)) if hook is not None
             else relative_shape(name, figures))
    if (fallback or metric == "peak_memory") and shape.get("reason"):  # a run's peak of 0
        # is a peak that did not rise, not a release that measures nothing
        shape = {**shape, "reason": PEAK_ZERO.sub(
            r"a run's peak did not rise at \1 (it held no more than was resident before it)",
            shape["reason"])}
    result["shape"] = shape
    if shape["status"] == "unavailable":
        result.update(status="unavailable", error=shape.get("reason") or "no shape")
        return result
    result.update(samples=[[shape["status"], shape.get("rate")]],
                  value=shape.get("label") or shape["status"])
    return result


def write_hlo(fn, args, compiler: Compiler, folder: Path) -> None:
    """The lowered module and XLA's optimized HLO of the case, for telling JAX from XLA from
    what lies below HLO. Written before measuring: a case whose run fails still has them."""
    folder.mkdir(parents=True, exist_ok=True)
    with on_target(compiler):
        lowered = lowered_for(compiler, fn, args, compile=False)
        (folder / "lowered.txt").write_text(lowered.as_text(), encoding="utf-8")
    try:
        with on_target(compiler):
            compiled = lowered.compile()
        (folder / "optimized.txt").write_text(compiled.as_text() or "", encoding="utf-8")
    except Exception as exc:
        (folder / "optimized.error").write_text(error_text(exc), encoding="utf-8")


def _child_main(request: str) -> None:
    spec = json.loads(request)
    from .case import read_case

    try:
        answer = peak_child(read_case(spec["case"]), spec["params"])
    except NotEnoughDevices as exc:
        answer = {"error": without_local_paths(str(exc)), HARNESS_ERROR: True}
    except Exception as exc:
        answer = {"error": without_local_paths(error_text(exc))}
    print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    _child_main(sys.argv[1])
