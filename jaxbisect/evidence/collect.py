"""The evidence for two releases: attribution (JAX or XLA, the commits) and each side's dump.

``buffers_at_peak`` is a case bisection's (pipeline.explain): both releases' XLA dumps of
the case, reduced to the plan's bytes and the buffers at its peak.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from jaxbisect.errors import InstallFailed
from jaxbisect.evidence.common import array_dims
from jaxbisect.evidence.release import case_reading, new_at_peak
from jaxbisect.lab.harness import MODULE_ANSWERS, HarnessFailed, run_module
from jaxbisect.lab.runs import store_key
from repro.options import REPRO, command_line

MEMORY_METRICS = ("memory", "peak_memory")


def dump_params(b) -> dict:
    """The parameters the dumps are made at: the search's (its smaller size), the parameter
    a shape is over at its first value where the ends' figures differ (the last where none
    does). The case's own ``evidence(params)`` may still set them (repro/dumps.py)."""
    q, s = b.searched, b.search
    params = dict(q.params)
    if q.over:
        name, values = q.over
        figures = []
        for i in (s.result.last_old, s.result.first_new):
            doc = next((r.document for r in s.placed[i].runs if r.document), None) or {}
            figures.append({p["at"]: p.get("value") for p in
                            (doc.get("metric") or {}).get("points", [])})
        params[name] = next((v for v in values if figures[0].get(v) != figures[1].get(v)),
                            values[-1])
    return params


def dumps_argv(q, params: dict, backend: str) -> list[str]:
    """``python -m repro.dumps``'s arguments for the case at ``params``: the options of the
    harness's table it takes."""
    values = {"case": q.case.path, "param": [f"{k}={v}" for k, v in params.items()],
              "target": q.target, "xla_flags": q.xla_flags,
              "backend": "cpu" if backend == "cpu" and not q.target else None}
    return ["--json", *command_line(REPRO, values, lambda option: option.dest in values)]


def modules_point(q) -> dict:
    """The parameters the harness writes a case's modules at (``--hlo-out``): for a shape,
    its value of the case's own over the values asked, else the last of them."""
    params = q.case.resolve(q.params)
    if not q.over:
        return params
    name, values = q.over
    here = q.params.get(name, q.case.defaults[name])
    return {**params, name: here if here in values else values[-1]}


def with_modules(q) -> dict | None:
    """Where a memory case's dumps also write its modules for the attribution (one process
    an end for both): the point the harness writes them at; None where they cannot (a
    compile-only target, host devices the dumps do not set up)."""
    if q.metric not in MEMORY_METRICS or q.case is None or q.target \
            or q.devices or q.case.devices:
        return None
    return modules_point(q)


def case_dumps(lab, release, backend: str, q, params: dict, *, timeout: float, say) -> dict:
    """``python -m repro.dumps --case …`` in ``release``'s environment, stored in the lab's
    store (a document that says why it has no dump is the release's answer, and kept); for a
    memory case, the modules the attribution compares too (``with_modules``)."""
    modules = with_modules(q)

    def make() -> dict:
        env = lab.environment(release, backend)
        say(f"jax {release.version}: dumping XLA's plan of {q.label} (buffers at the peak)")
        more = ([] if modules is None else
                ["--modules", json.dumps([f"{k}={v}" for k, v in modules.items()])])
        return run_module(env.python, "repro.dumps", [*dumps_argv(q, params, backend), *more],
                          timeout, answers=MODULE_ANSWERS)

    return lab.store.get_or_run(dumps_key(q, release, backend, params), make,
                                remeasure=lab.remeasure)


def dumps_key(q, release, backend: str, params: dict):
    """Where a release's dumps of ``q`` at ``params`` are stored (with the modules' point,
    where the same process writes them)."""
    modules = with_modules(q)
    return store_key(q, release, backend, "dumps", dump_params=params,
                       **({} if modules is None else {"modules_at": modules}))


def buffers_at_peak(b, lab, say, extra: dict, rewrite) -> None:
    """For a memory case's found change: both releases' XLA dumps through ``lab``, reduced
    to the plan's bytes, the largest allocation and its values, the buffers at the peak (and
    those the new plan holds there that the old does not), how many of the case's named
    ``stacked`` buffer it holds and where the schedule makes them; into ``extra["evidence"]``."""
    q = b.request.question
    if getattr(q, "metric", None) not in MEMORY_METRICS or q.case is None:
        return
    q, params = b.searched, dump_params(b)

    def dumps(release) -> tuple[dict | None, str | None]:
        try:
            return case_dumps(lab, release, b.request.backend, q, params, timeout=b.timeout,
                              say=say), None
        except (InstallFailed, HarnessFailed) as exc:
            return None, str(exc)

    with ThreadPoolExecutor(2, thread_name_prefix="dumps") as pool:  # two processes at once
        (old, old_error), (new, new_error) = pool.map(dumps, b.pair)
    extra["evidence"] = peak_evidence(old, new, {"old": old_error, "new": new_error}, params)
    rewrite()


def peak_evidence(old: dict | None, new: dict | None, errors: dict, params: dict) -> dict:
    """Both releases' ``repro.dumps --case`` documents (None where a release gave none, the
    reason in ``errors``) reduced: each side's reading, the shapes the new plan holds at
    its peak in more places than the old (``new_at_peak``) and those it holds in fewer
    (``old_at_peak``, what a fix removed)."""
    stacked = next((d.get("stacked_shape") for d in (old, new) if d), None)
    peaks = [case_reading(doc, None)["at_peak"] for doc in (old, new)]
    grown, shrunk = new_at_peak(*peaks), new_at_peak(*reversed(peaks))  # shrunk: a fix's
    # The buffer followed through the schedule: the case's own "stacked", else the array
    # one plan holds most more of at its peak than the other.
    followed = stacked or next((dims for e in grown + shrunk
                                if (dims := array_dims(e["shape"]))), None)
    used = next((d.get("case", {}).get("params") for d in (old, new) if d), params)
    return {"schema": 1, "kind": "buffers", "params": used, "stacked_shape": stacked,
            "followed": list(followed) if followed else None, "new_at_peak": grown,
            "old_at_peak": [{"shape": e["shape"], "old_places": e["new_places"],
                             "new_places": e["old_places"], "bytes_removed": e["bytes_added"]}
                            for e in shrunk],
            "releases": {"old": case_reading(old, followed, errors.get("old")),
                         "new": case_reading(new, followed, errors.get("new"))}}
