"""After a bisection finds a change: why (the XLA flag behind it), where (JAX or XLA), what
(the buffers), what helps.

Runs the evidence package's collectors in the environments of the two releases around the
change and keeps the answer, so that a rerun of a finished bisection measures nothing.
"""

from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from .catalogue import Release
from .driver import Bisection, Say
from .environments import ensure_environment
from .errors import InstallFailed
from .evidence import (
    DumpOptions,
    explain_change,
    gather_evidence,
    render_culprit_commits,
    render_evidence_markdown,
    render_explanation_markdown,
    write_png,
)
from .evidence.commits import commits_touching, github, most_likely, range_of
from .evidence.explain import explain_release, small_options
from .evidence.handoff import check_command, triage_handoff
from .harness import (
    HarnessFailed,
    HarnessOptions,
    harness_args,
    harness_id,
    source_digest,
    target_key,
)
from .pins import load_table
from .store import STORE, Key, Store

EVIDENCE_SOURCE = Path(__file__).parent / "evidence"

MB = 1024**2


def probed_series(b: Bisection) -> dict[str, list[tuple[int, float]]]:
    """v0 MB against n_outer for every release probed in compiled mode, oldest first."""
    series = {}
    for probe in sorted(b.probes, key=lambda p: p.release.version):
        doc = probe.measurement.document if probe.measurement else None
        if not doc or doc["mode"] != "compiled":
            continue
        points = [(c["n_outer"], c["total_bytes"] / MB) for c in doc["cases"]
                  if c["variant"] == "v0" and c["status"] == "ok"]
        if len(points) >= 2:
            series[f"jax {doc['jax']}"] = points
    return series


def analysis_id() -> str:
    """A digest of the evidence package's source: a stored explanation is made again, from the
    stored measurements, when the analysis behind it may have changed."""
    return source_digest(EVIDENCE_SOURCE, "*.py")


def gather(b: Bisection, say: Say, *, try_xla_flags: tuple[str, ...] = (),
           png_path: Path | None = None, jax_repo: Path | None = None,
           xla_repo: Path | None = None, early: Future | None = None) -> tuple[str, dict]:
    """Markdown for the report and ``{"attribution", "evidence"}`` for its JSON. ``early``:
    ``collect`` of this bisection's pair, started as soon as the search found it (see
    ``bisect_releases``'s ``on_change``).

    Never loses the bisection's answer: evidence that cannot be gathered (an environment
    that no longer installs, say) is reported as unavailable, with the reason."""
    try:
        return _gather(b, say, try_xla_flags, png_path, jax_repo, xla_repo, early)
    except Exception as exc:  # even a bug here must not cost the bisection's answer
        if not isinstance(exc, (InstallFailed, OSError)):
            exc = RuntimeError(f"internal error: {type(exc).__name__}: {exc}")
        say(f"evidence unavailable: {exc}")
        return (f"## Evidence\n\nUnavailable: {exc}\n",
                {"explanation": None, "attribution": {"lowering": "unknown",
                                                      "culprit": "unknown", "reason": str(exc)},
                 "evidence": None})


def collect(b: Bisection, say: Say, try_xla_flags: tuple[str, ...] = (),
            jax_repo: Path | None = None, *, store: Store = STORE) -> dict:
    """What the evidence measures of the pair ``b`` found (dumps, attribution, explanation),
    stored; it needs the pair and the request only, not the full tables."""
    old, new = b.last_old.release, b.first_new.release
    o = b.request.options
    options = DumpOptions(n_inner=o.n_inner, dtype=o.dtype, xla_flags=o.xla_flags,
                          platform={"cuda12": "cuda", "cpu": "cpu"}.get(b.request.backend, ""),
                          target=o.target)
    grows = "old" if b.direction == "fix" else "new"
    key = Key(str(new.version), b.request.backend, "evidence",
              {"old": str(old.version), "options": asdict(options), "grows": grows,
               "flags": list(try_xla_flags),
               "jax_repo": str(jax_repo) if jax_repo else None,
               "explain": asdict(small_options(o)), "target": target_key(o.target)},
              harness_id())

    def dumps() -> dict:
        say(f"gathering evidence: lowering, XLA dumps and workarounds under jax {old.version} "
            f"and {new.version} …")
        pythons = [ensure_environment(r, b.request.backend, progress=say).python
                   for r in (old, new)]
        return gather_evidence(*pythons, options, grows=grows,
                               workaround_xla_flags=try_xla_flags, jax_repo=jax_repo,
                               timeout=b.request.timeout,
                               fetch=None if jax_repo else github, table=load_table())

    def complete(found: dict) -> bool:  # a failure may be transient
        return all(side.get("error") is None for side in found["evidence"]["releases"].values())

    def explained(found: dict | None) -> bool:
        return bool(found) and found.get("explanation") is not None \
            and found.get("analysis") == analysis_id()

    # The explanation's probes run beside the dumps: each is one process, and they share
    # nothing but the two environments.
    stored = None if b.request.remeasure else store.get(key)
    with ThreadPoolExecutor(1, thread_name_prefix="explain") as pool:
        explaining = None if explained(stored) else pool.submit(_explain, b, say)
        if stored is not None:
            say(f"evidence for jax {old.version} → {new.version}: stored")
            found = stored
        else:
            found = dumps()
            if complete(found):
                store.put(key, found)
        if explaining is not None:
            found["explanation"], found["analysis"] = explaining.result(), analysis_id()
            if found["explanation"] is not None and store.path(key).exists():
                store.put(key, found)
    return found


def _gather(b: Bisection, say: Say, try_xla_flags: tuple[str, ...], png_path: Path | None,
            jax_repo: Path | None, xla_repo: Path | None = None,
            early: Future | None = None) -> tuple[str, dict]:
    series = probed_series(b)  # drawn while the evidence may still be measured
    drawn = png_path is not None and bool(series) and write_png(series, png_path)
    found = early.result() if early is not None else collect(b, say, try_xla_flags, jax_repo)
    if "commits" in found["attribution"]:  # stored before the pins table, or newer than it
        xla_range(b, found["attribution"], jax_repo, xla_repo)
    # Stored evidence comes back with its keys sorted: render the fresh one the same way, so
    # that a rerun writes the same report byte for byte.
    found = json.loads(json.dumps(found, sort_keys=True))
    markdown = "## Evidence\n\n"
    if found["explanation"] is not None:
        markdown += render_explanation_markdown(found["explanation"]) + "\n"
        if xla_repo is not None:
            found["attribution"]["xla_culprit_commits"] = culprit_commits(
                found["explanation"], found["attribution"], xla_repo)
            markdown += render_culprit_commits(found["attribution"]["xla_culprit_commits"])
    markdown += render_evidence_markdown(found["attribution"], found["evidence"], series)
    if drawn:
        markdown += f"\n![v0 memory against n_outer]({png_path.name})\n"
    return markdown, {"explanation": found["explanation"], "attribution": found["attribution"],
                      "evidence": found["evidence"]}


def xla_range(b: Bisection, attribution: dict, jax_repo: Path | None,
              xla_repo: Path | None) -> None:
    """Fill in the XLA pins a stored attribution lacks (from the clone or the pins table; the
    number of commits between them from an XLA clone) and the hand-off to commit-level
    triage, with the probes' own check (or the bisection's command) as its test."""
    attribution.update(range_of(attribution["commits"], jax_repo, None, load_table(), xla_repo,
                                known=attribution))
    req = b.request
    test = (list(req.command) if req.command else
            check_command(harness_args(req.backend,
                                       req.options.for_search(req.small_search))[1:]))
    attribution["triage"] = triage_handoff(attribution, test,
                                           inverted=b.direction == "fix")


def culprit_commits(explanation: dict, attribution: dict, xla_repo: Path) -> dict:
    """The commits between the two XLA pins, in a local openxla/xla clone, that touch the
    culprit flag or pass, and the most likely one."""
    culprit, pins = explanation["culprit"], attribution.get("xla_commits") or {}
    out = {"name": None, "range": None, "commits": [], "most_likely": None, "note": None}
    if culprit["kind"] == "none" or not culprit["name"]:
        out["note"] = "no culprit to look for"
        return out
    if not (pins.get("old") and pins.get("new")):
        out["note"] = "the XLA pins of the two releases are not known (see --jax-repo)"
        return out
    name = culprit["name"].split()[0].removeprefix("--")
    change = next((c for c in explanation["flag_defaults_changed"] if c["name"] == name), None)
    commits = commits_touching(xla_repo, pins["old"], pins["new"], name,
                               change["new"] if change else None)
    likely = most_likely(commits, name)
    out.update(name=name, range=f"{pins['old']}..{pins['new']}",
               commits=[asdict(c) for c in commits],
               most_likely=asdict(likely) if likely else None,
               note=None if commits else f"no commit in {xla_repo} between the pins names {name}")
    return out


def _explain(b: Bisection, say: Say) -> dict | None:
    """The why (``explanation``); None, with the reason said, where it cannot be had: the
    rest of the evidence stands without it, and a rerun tries again."""
    old, new = b.last_old.release, b.first_new.release
    try:
        return explain_change(old, new, b.request.backend, b.request.options, say,
                              timeout=b.request.timeout, remeasure=b.request.remeasure)
    except (HarnessFailed, InstallFailed, OSError) as exc:
        say(f"explanation unavailable: {exc}")
        return None


def explain_one(release: Release, backend: str, options: HarnessOptions, say: Say, *,
                timeout: float, remeasure: bool = False,
                store: Store = STORE) -> tuple[str, dict]:
    """``--explain RELEASE``: the why for one release (markdown, explanation), stored whole
    once every measurement behind it is."""
    key = Key(str(release.version), backend, "explanation",
              {"analysis": analysis_id(), "explain": asdict(small_options(options)),
               "xla_flags": options.xla_flags, "target": target_key(options.target)},
              harness_id())
    ran = []

    def explain() -> dict:
        ran.append(True)
        return explain_release(release, backend, options, say, timeout=timeout,
                               remeasure=remeasure)

    explanation = store.get_or_run(
        key, explain, remeasure=remeasure,
        keep=lambda found: all(t["verdict"] != "unavailable" for t in found["tests"][:1]))
    if not ran:
        say(f"explanation for jax {release.version}: stored")
    return render_explanation_markdown(explanation), explanation
