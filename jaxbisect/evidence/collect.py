"""The evidence for two releases: attribution (JAX or XLA, the commits) and each side's dump."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from ..harness import DumpOptions, HarnessFailed, collect_dumps, run_module
from ..pins import PinTable
from .commits import Fetch, commit_range
from .lowering import compare_lowering
from .release import release_evidence


def attribution_of(old: dict | None, new: dict | None, jax_repo: Path | None = None,
                   fetch: Fetch | None = None, table: PinTable | None = None) -> dict:
    old_lowered = (old or {}).get("lowered", {}).get("text")
    new_lowered = (new or {}).get("lowered", {}).get("text")
    comparison = compare_lowering(old_lowered, new_lowered)
    culprit = {"identical": "xla", "changed": "jax"}.get(comparison["lowering"], "unknown")
    commits = commit_range(old, new, jax_repo, fetch, table)
    return {"lowering": comparison["lowering"], "culprit": culprit,
            "reason": comparison["reason"], "diff": comparison["diff"],
            "diff_truncated": comparison["diff_truncated"], "added": comparison["added"],
            "removed": comparison["removed"], **commits}


def gather_evidence(old_python: Path, new_python: Path,
                    options: DumpOptions = DumpOptions(), *,
                    workaround_xla_flags: Sequence[str] = (), jax_repo: Path | None = None,
                    timeout: float = 900, fetch: Fetch | None = None,
                    table: PinTable | None = None) -> dict:
    """Run the evidence module in both environments; ``{"attribution": …, "evidence": …}``.

    A release that gives no document leaves its side empty with the reason and the
    attribution "unknown"; nothing here raises for a release's failure.
    """
    documents: dict[str, dict | None] = {}
    errors: dict[str, str | None] = {}
    for side, python in (("old", old_python), ("new", new_python)):
        try:
            documents[side], errors[side] = collect_dumps(Path(python), options, timeout), None
        except HarnessFailed as exc:
            documents[side], errors[side] = None, str(exc)
    flag_cases = []
    for flags in workaround_xla_flags:  # XLA reads flags at start-up: one harness run each
        try:
            doc = run_module(Path(new_python), "repro",
                             ["--quiet", *options.workaround_argv(flags)], timeout,
                             platform=options.platform)
            points = [[c["n_outer"], c["total_bytes"]] for c in doc["cases"]]
            flag_cases.append({"name": f"v0 with XLA_FLAGS={flags}", "xla_flags": flags,
                               "points": points, "verdict": doc["verdict"]["status"],
                               "growth": doc["verdict"]["growth_per_outer"], "errors": []})
        except HarnessFailed as exc:
            flag_cases.append({"name": f"v0 with XLA_FLAGS={flags}", "xla_flags": flags,
                               "points": [], "verdict": "unavailable", "growth": None,
                               "errors": [str(exc)]})
    attribution = attribution_of(documents["old"], documents["new"], jax_repo, fetch, table)
    releases = {side: release_evidence(documents[side], options, errors[side])
                for side in ("old", "new")}
    releases["new"]["workarounds"] += flag_cases
    restoring = [w["name"] for w in releases["new"]["workarounds"] if w["verdict"] == "constant"]
    evidence = {"schema": 1, "options": {**asdict(options),
                                         "workaround_n_outer": list(options.workaround_n_outer),
                                         "unroll": list(options.unroll)},
                "releases": releases, "restores_constant": restoring}
    return {"attribution": attribution, "evidence": evidence}

