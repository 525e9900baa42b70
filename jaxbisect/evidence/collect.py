"""The evidence for two releases: attribution (JAX or XLA, the commits) and each side's dump."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

from ..harness import DumpOptions, HarnessFailed, collect_dumps, run_module
from ..pins import PinTable
from .commits import Fetch, commit_range
from .release import release_evidence
from .where import where_the_change_is


def attribution_of(old: dict | None, new: dict | None, jax_repo: Path | None = None,
                   fetch: Fetch | None = None, table: PinTable | None = None) -> dict:
    """Where the change is (where.where_the_change_is, the rule a case's bisection uses
    too), from both releases' dump documents, and the commits either side."""
    def text(doc: dict | None, part: str, key: str) -> str | None:
        return ((doc or {}).get(part) or {}).get(key)

    where = where_the_change_is(text(old, "lowered", "text"), text(new, "lowered", "text"),
                                text(old, "compiled", "hlo"), text(new, "compiled", "hlo"))
    return {**where, **commit_range(old, new, jax_repo, fetch, table)}


def gather_evidence(old_python: Path, new_python: Path,
                    options: DumpOptions = DumpOptions(), *, grows: str = "new",
                    workaround_xla_flags: Sequence[str] = (), jax_repo: Path | None = None,
                    timeout: float = 900, fetch: Fetch | None = None,
                    table: PinTable | None = None) -> dict:
    """Run the evidence module in both environments; ``{"attribution": …, "evidence": …}``.
    The ways around it (and ``workaround_xla_flags``) are measured under the release where v0
    grows, ``grows`` ("new" for a regression, "old" for a fix): under the other they have
    nothing to help.

    A release that gives no document leaves its side empty with the reason and the
    attribution "unknown"; nothing here raises for a release's failure.
    """
    pythons = {"old": Path(old_python), "new": Path(new_python)}

    def dumps(side: str) -> tuple[dict | None, str | None]:
        try:
            return collect_dumps(pythons[side], replace(options, workarounds=side == grows),
                                 timeout), None
        except HarnessFailed as exc:
            return None, str(exc)

    with ThreadPoolExecutor(2, thread_name_prefix="dumps") as pool:  # two processes at once
        answers = dict(zip(("old", "new"), pool.map(dumps, ("old", "new"))))
    documents = {side: doc for side, (doc, _) in answers.items()}
    errors = {side: error for side, (_, error) in answers.items()}
    flag_cases = []
    for flags in workaround_xla_flags:  # XLA reads flags at start-up: one harness run each
        try:
            doc = run_module(pythons[grows], "repro",
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
    releases[grows]["workarounds"] += flag_cases
    restoring = [w["name"] for w in releases[grows]["workarounds"] if w["verdict"] == "constant"]
    evidence = {"schema": 1, "options": {**asdict(options),
                                         "workaround_n_outer": list(options.workaround_n_outer),
                                         "unroll": list(options.unroll)},
                "releases": releases, "workarounds_under": grows,
                "restores_constant": restoring}
    return {"attribution": attribution, "evidence": evidence}
