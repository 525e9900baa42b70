"""Measure one metric of a case's ``(fn, args)`` in this JAX process (docs/cases.md).

``measure`` and ``measure_series`` answer with a plain dict (the document's ``metric`` object)
and never raise for what the program or the release does: a case that raises is measured as
such (its ``status`` is "error" with the exception's type and first line; for the ``error``
metric that line *is* the value).
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .case import NOISY_METRICS, UNITS, CaseError, CaseFile, build, load_module, series_at
from .measure import (
    NOT_MEASURED,
    Compiler,
    Unmeasured,
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
    compiled, assignment = compiler.compile(fn, *compiler.structs(args))
    fields, source = compiler.sizes(compiled, assignment)
    if plan_bytes(fields) == 0:  # jaxlib < 0.4.29 on the CPU
        return {"source": source, "fields": fields, "status": "unavailable",
                "error": NOT_MEASURED}
    return {"source": source, "fields": fields, "samples": [plan_bytes(fields)]}


def compile_time(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    import jax

    structs = compiler.structs(args)

    def once() -> float:
        jax.clear_caches()
        started = time.perf_counter()
        fn.lower(*structs).compile()
        return round(time.perf_counter() - started, 6)

    warmup = [once()]  # the backend's own start-up lands here
    return {"warmup": warmup, "samples": [once() for _ in range(sampling.samples)]}


def run_time(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    import jax

    arrays = concrete(args)
    started = time.perf_counter()
    jax.block_until_ready(fn(*arrays))  # compiles, then runs once
    warmup = [round(time.perf_counter() - started, 6)]
    samples, spent = [], 0.0
    while len(samples) < sampling.max_samples and (
            len(samples) < sampling.samples or spent < sampling.min_seconds):
        started = time.perf_counter()
        jax.block_until_ready(fn(*arrays))
        seconds = time.perf_counter() - started
        samples.append(round(seconds, 7))
        spent += seconds
        if spent >= sampling.max_seconds and len(samples) >= sampling.samples:
            break
    return {"warmup": warmup, "samples": samples}


def output(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    import jax

    return {"samples": [output_digest(jax.block_until_ready(fn(*concrete(args))))]}


def error(fn, args, compiler: Compiler, sampling: Sampling) -> dict:
    import jax

    if compiler.target is not None:  # nothing runs on a compile-only device
        compiler.compile(fn, *compiler.structs(args))
    else:
        jax.block_until_ready(fn(*concrete(args)))
    return {"samples": [NO_ERROR]}


def peak_memory(case: CaseFile, params: dict, sampling: Sampling, timeout: float = 900,
                environ: dict | None = None) -> dict:
    """Each sample from a fresh process (``environ``: its environment, else this one's), so
    that other samples' peaks do not mix in."""
    fields: dict = {"samples": []}
    request = json.dumps({"case": case.path, "params": params})
    for _ in range(sampling.samples):
        answer, error = run_child("repro.metrics", request, timeout, environ)
        if answer is None or "error" in answer:
            text = (error or answer["error"])[:300]
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
    arrays = concrete(args)
    compiled = fn.lower(*arrays).compile()
    jax.block_until_ready(arrays)
    peak = peak_of_run(lambda: compiled(*arrays))
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
    except Exception as exc:
        text = error_text(exc)
        if compiler.target is not None:  # one the target spec's values cause, in its words
            text = compiler.target.explain_error(text) or text
        if metric == "error":
            return _result("error", samples=[text], raised=True)
        return _result(metric, status="error", error=text)
    return _result(metric, **fields)


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
    raised = next((p for p in points if p["status"] == "error"), None)
    if raised is not None:
        result.update(status="error", error=f"at {name} {raised['at']}: {raised['error']}")
        return result
    figures = [(p["at"], p["value"] if p["status"] == "ok" else None) for p in points]
    hook = getattr(load_module(case), "shape", None)
    result["shape"] = shape = (hook(name, figures, case.resolve(rest)) if hook is not None
                               else relative_shape(name, figures))
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
    lowered = fn.lower(*compiler.structs(args))
    (folder / "lowered.txt").write_text(lowered.as_text(), encoding="utf-8")
    try:
        compiled = lowered.compile()
        (folder / "optimized.txt").write_text(compiled.as_text() or "", encoding="utf-8")
    except Exception as exc:
        (folder / "optimized.error").write_text(error_text(exc), encoding="utf-8")


def _child_main(request: str) -> None:
    spec = json.loads(request)
    from .case import read_case

    try:
        answer = peak_child(read_case(spec["case"]), spec["params"])
    except Exception as exc:
        answer = {"error": error_text(exc)}
    print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    _child_main(sys.argv[1])
