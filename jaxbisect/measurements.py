"""The harness's answer for one release (``python -m repro --json``), measured once and kept.

A Measurement is the document one run of the harness printed (or why there is none), keyed in
the store by release, backend, harness options and the harness's own digest, so that the nox
sessions and the bisect driver share them and a rerun measures nothing twice.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from repro.verdict import ITEMSIZES, stacked_buffer_bytes

from .catalogue import Release, backend_words
from .environments import ensure_environment
from .errors import InstallFailed
from .executors import LOCAL, Executor
from .harness import (
    CANNOT_IMPORT,
    DEFAULT_TIMEOUT,
    EnvironmentBroken,
    HarnessFailed,
    HarnessOptions,
    harness_id,
    run_harness,
)
from .store import STORE, Key, Store


@dataclass(frozen=True)
class Measurement:
    release: str
    backend: str
    options: HarnessOptions
    document: dict | None       # what ``python -m repro --json`` printed; None when it failed
    error: str | None           # one line: why there is no document (install, crash, timeout)
    seconds: float              # time spent measuring it when it was measured
    cached: bool = False        # True when this call measured nothing (read from the store)
    installed: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return self.document["verdict"]["status"] if self.document else "unavailable"

    @property
    def reason(self) -> str | None:
        if self.document is None:
            return self.error
        return self.document["verdict"].get("reason")


    def as_json(self) -> dict:
        d = asdict(self)
        d["options"]["n_outer"] = list(self.options.n_outer)
        d["options"]["variants"] = list(self.options.variants)
        return d

    @classmethod
    def from_json(cls, d: dict) -> Measurement:
        o = dict(d["options"])
        o["n_outer"], o["variants"] = tuple(o["n_outer"]), tuple(o["variants"])
        return cls(**{**d, "options": HarnessOptions(**o), "cached": True})


def report_document(doc: dict, fallback: bool = False, v2_up_to: int | None = None) -> dict:
    """The scan case's document (``python -m repro --json``: one series of v0, its COMPARE
    programs beside) in the shape the built-in report reads: a ``cases`` entry per variant
    and n_outer, and v0's ``verdict``. A release whose compiled statistics are empty is
    "unavailable" there; ``fallback``: instead, the real run's peaks the harness measured
    for it (v0's, a runtime-mode document)."""
    if "cases" in doc:
        return doc
    m = doc["metric"]
    sizes = m["params"] if fallback else doc["case"]["params"]  # the fallback's own sizes
    programs = {f"v{sizes['variant']}": m, **({} if fallback else doc.get("compare", {}))}
    values = m["fallback"]["values"] if fallback else m["over"]["values"]
    mode = "runtime" if fallback or m["name"] == "peak_memory" else "compiled"
    left_out = (f"v2 left out at n_outer > {v2_up_to}: it unrolls n_inner x n_outer ops, "
                f"minutes to compile a case{' for a GPU target' if doc.get('target') else ''}; "
                f"--v2-up-to N measures more")
    cases = []
    for label, got in programs.items():
        by = {p["at"]: p for p in got.get("points", [])}
        for n in values:
            case = {"variant": label, "n_outer": n, "mode": mode, "status": "left out",
                    "error": left_out, "output_bytes": None, "temp_bytes": None,
                    "total_bytes": None}
            if got.get("fallback") and not fallback:
                case.update(status="unavailable", error=got["fallback"]["reason"])
            elif n in by:
                p = by[n]
                case.update(status=p["status"], error=p["error"], source=p.get("source"),
                            total_bytes=p["value"] or 0, **p.get("fields", {}))
            cases.append(case)
    shape = dict(m.get("shape") or {})
    if (m.get("fallback") and not fallback) or not shape:
        shape = {"status": "unavailable", "growth_per_outer": None, "points": len(values),
                 "unit_bytes": stacked_buffer_bytes(sizes["n_inner"], sizes["n_res"],
                                                    ITEMSIZES[sizes["dtype"]]),
                 "reason": (m.get("fallback") or {}).get("reason") or m["error"]}
    verdict = {k: shape.get(k) for k in ("status", "growth_per_outer", "unit_bytes", "points",
                                         "reason")}
    params = {"n_outer": values, **{k: sizes[k] for k in ("n_inner", "n_res", "dtype")},
              "variants": sorted(int(label[1:]) for label in programs), "v2_up_to": v2_up_to}
    return {**{k: v for k, v in doc.items() if k not in ("metric", "compare", "case")},
            "mode": mode, "params": params, "sizes_from": "auto", "cases": cases,
            "verdict": {**verdict, "mode": mode}}


def measurement_key(release: Release, backend: str, options: HarnessOptions) -> Key:
    return Key(str(release.version), backend, "probe", options.key_fields(), harness_id())


def _usable(document: dict) -> Measurement | None:
    stored = Measurement.from_json(document)
    if stored.error and CANNOT_IMPORT in stored.error:  # a broken environment, not a verdict
        return None
    return stored


def stored_measurement(release: Release, backend: str, options: HarnessOptions, *,
                       store: Store = STORE) -> Measurement | None:
    """The stored answer for these options, or None where a probe would measure."""
    return store.get(measurement_key(release, backend, options), _usable)


def measure_release(release: Release, backend: str, options: HarnessOptions, *,
                    progress: Callable[[str], None] | None = None,
                    timeout: float = DEFAULT_TIMEOUT, use_cache: bool = True,
                    store: Store = STORE, executor: Executor = LOCAL) -> Measurement:
    """The harness's answer for one release, from the store or measured now and stored.

    Failures that are the release's (no wheels, a crash, a timeout) come back as a
    Measurement with ``error`` set and are stored too, so that a rerun skips them at once.
    """
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    kept: list[bool] = []

    def measure() -> Measurement:
        started = time.perf_counter()
        installed: dict = {}
        rebuild = False
        where = backend_words(backend, options.target)
        while True:
            try:
                env = ensure_environment(release, backend, progress=say, rebuild=rebuild)
                installed = dict(env.installed)
                say(f"jax {release.version} ({where}): measuring, {options.mode} mode, "
                    f"n_res {options.n_res}, n_outer {', '.join(map(str, options.n_outer))} …")
                up_to = options.v2_up_to if options.v2_up_to is not None \
                    else 1 if options.target else None  # as the harness takes it
                document = report_document(run_harness(env, options, timeout, executor),
                                           v2_up_to=up_to)
                error = None
                keep = True
            except InstallFailed as exc:  # may be transient (network, disk): never stored
                document, error, keep = None, str(exc), False
            except EnvironmentBroken as exc:
                if not rebuild:
                    say(f"jax {release.version} ({where}): its environment no longer imports "
                        f"jax ({exc}); rebuilding it")
                    rebuild = True
                    continue
                document, error, keep = None, str(exc), False
            except HarnessFailed as exc:
                document, error, keep = None, str(exc), exc.lasting
            break
        kept.append(keep)
        measurement = Measurement(release=str(release.version), backend=backend,
                                  options=options, document=document, error=error,
                                  seconds=round(time.perf_counter() - started, 2),
                                  installed=installed)
        say(f"jax {release.version} ({where}): {measurement.verdict}"
            + (f" ({measurement.reason})" if measurement.reason else "")
            + f" in {measurement.seconds:.1f} s")
        return measurement

    return store.get_or_run(measurement_key(release, backend, options), measure,
                            remeasure=not use_cache, keep=lambda _: kept[-1],
                            encode=Measurement.as_json, decode=_usable)
