"""Why: the XLA flag (or pass) behind a change, proven by measurement in both releases.

Lists each release's XLA flags (``python -m repro.xla_flags``), keeps the defaults that changed
and can matter on the backend, and measures v0 at a small size with each set back (see
``flags.search_flags``). Every measurement goes through the probes' store, so a rerun
measures nothing again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..catalogue import Release
from ..environments import ensure_environment
from ..files import cache_dir, write_json
from ..probe import HarnessOptions, Measurement, harness_id, measure_release
from .common import MB
from .flags import FlagChange, FlagSearch, changed_defaults, relevant_to, search_flags
from .runner import EvidenceFailed, run_in_environment

SMALL_N_OUTER = (2, 3, 4)
SMALL_N_RES = 32
Say = Callable[[str], None]
WORDS = {"constant": "constant", "grows": "grow", "unavailable": "unmeasurable"}


def small_options(options: HarnessOptions) -> HarnessOptions:
    """v0 only, compiled, at a size that takes seconds and still shows the change."""
    return replace(options, n_outer=SMALL_N_OUTER, n_res=min(options.n_res, SMALL_N_RES),
                   variants=(0,), mode="compiled")


def _platform(backend: str) -> str:
    return "cuda" if backend == "cuda12" else "cpu"


def xla_flag_list(release: Release, backend: str, python: Path, *, timeout: float,
                  remeasure: bool = False) -> dict:
    """``python -m repro.xla_flags`` in the release's environment, stored like a probe."""
    path = (cache_dir() / "results" / backend / f"jax-{release.version}"
            / f"xla-flags-{harness_id()}.json")
    if not remeasure:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            pass
    document = run_in_environment(python, "repro.xla_flags",
                                  ["--json", "--backend", _platform(backend)], timeout,
                                  _platform(backend))
    if document.get("status") != "ok":
        raise EvidenceFailed(f"jax {release.version}: {document.get('error')}")
    write_json(path, document)
    return document


@dataclass(frozen=True)
class Side:
    """One end of the change as the explanation measures it."""

    release: Release
    python: Path

    @property
    def version(self) -> str:
        return str(self.release.version)


def _mb_points(m: Measurement | None) -> str:
    cases = (m.document or {}).get("cases", []) if m else []
    shown = [f"{c['total_bytes'] / MB:.2f}" for c in cases if c.get("total_bytes")]
    return " / ".join(shown) + " MB" if shown else "no figures"


def _setting_text(flags: tuple[FlagChange, ...], release: str) -> str:
    return " ".join(f"`{f.setting(release)}`" for f in flags)


def _jaxlib(m: Measurement | None, side: Side) -> str:
    return ((m.document or {}).get("jaxlib") if m and m.document else None) \
        or str(side.release.jaxlib or side.version)


def explain_flags(old: Side, new: Side, backend: str, options: HarnessOptions, say: Say, *,
                  timeout: float, remeasure: bool = False) -> dict:
    """The flag step of the explanation, in the JSON shape of ``explanation``."""
    small = small_options(options)
    measured: dict[tuple[str, str], Measurement] = {}
    sides = {"old": old, "new": new}

    def measure(release: str, extra: str) -> Measurement:
        key = (release, extra)
        if key not in measured:
            flags = " ".join(f for f in (options.xla_flags, extra) if f)
            measured[key] = measure_release(sides[release].release, backend,
                                            replace(small, xla_flags=flags), progress=say,
                                            timeout=timeout, use_cache=not remeasure)
        return measured[key]

    def test(release: str, flags: tuple[FlagChange, ...]) -> str:
        return measure(release, " ".join(f.setting(release) for f in flags)).verdict

    say(f"explaining jax {old.version} → {new.version}: the XLA flags whose defaults changed")
    lists = {side: xla_flag_list(s.release, backend, s.python, timeout=timeout,
                                 remeasure=remeasure)["flags"] for side, s in sides.items()}
    every = changed_defaults(lists["old"], lists["new"])
    changes = [c for c in every if relevant_to(backend, c.name)]
    say(f"{len(every)} flag defaults changed, {len(changes)} can matter on {backend}: "
        + ", ".join(c.name for c in changes))
    base = {side: measure(side, "") for side in sides}
    old_verdict, new_verdict = base["old"].verdict, base["new"].verdict
    tests = [{"release": sides[side].version, "xla_flags": options.xla_flags,
              "verdict": base[side].verdict} for side in sides]
    explanation = {"releases": [old.version, new.version],
                   "flag_defaults_changed": [{"name": c.name, "old": c.old, "new": c.new}
                                             for c in changes],
                   "tests": tests, "culprit": None, "workarounds": []}
    size = f"v0 compiled at n_res {small.n_res}, n_inner {small.n_inner}"
    if "unavailable" in (old_verdict, new_verdict) or old_verdict == new_verdict:
        explanation["culprit"] = {
            "kind": "none", "name": None,
            "text": (f"At a small size ({size}) v0 is {old_verdict} under jax {old.version} "
                     f"and {new_verdict} under jax {new.version}: the change does not show "
                     f"there, so no flag was measured.")}
        return explanation
    search = search_flags(changes, test, old_verdict, new_verdict)
    tests += [{"release": sides[t.release].version,
               "xla_flags": " ".join(f for f in (options.xla_flags, t.xla_flags) if f),
               "verdict": t.verdict} for t in search.tests]
    if old_verdict == "constant":
        explanation["workarounds"] = [
            {"release": new.version, "xla_flags": " ".join(f.setting("new") for f in flags),
             "verdict": old_verdict, "safe": True} for flags in search.restoring]
    explanation["culprit"] = _flag_culprit(search, old, new, measure, size, changes)
    return explanation


def _flag_culprit(search: FlagSearch, old: Side, new: Side, measure, size: str,
                  changes: list[FlagChange]) -> dict:
    if not search.culprit:
        tried = (f"none of the {len(changes)} changed flag defaults that can matter here, set "
                 f"back one at a time" + ("" if search.pairs_skipped else " or in pairs"))
        skipped = (f" ({search.pairs_skipped} pairs were too many to try)"
                   if search.pairs_skipped else "")
        return {"kind": "none", "name": None,
                "text": f"No XLA flag explains the change: {tried}, brings jax {old.version}'s "
                        f"verdict to jax {new.version}{skipped} ({size})."}
    flags = search.culprit
    in_new, in_old = (measure("new", " ".join(f.setting("new") for f in flags)),
                      measure("old", " ".join(f.setting("old") for f in flags)))
    base_old, base_new = measure("old", ""), measure("new", "")
    names = " and ".join(f"`--{f.name}`" for f in flags)
    jaxlibs = f"jaxlib {_jaxlib(base_old, old)}", f"jaxlib {_jaxlib(base_new, new)}"
    defaults = "; ".join(f"`{f.old}` in {jaxlibs[0]}, `{f.new}` in {jaxlibs[1]}" for f in flags)
    what = "XLA flag" if len(flags) == 1 else "pair of XLA flags"
    n_outer = " / ".join(map(str, SMALL_N_OUTER))
    text = (f"The change follows the {what} {names}, whose default changed ({defaults}): "
            f"{_setting_text(flags, 'new')} under jax {new.version} makes v0 "
            f"{WORDS[in_new.verdict]} ({_mb_points(in_new)} at n_outer {n_outer}, against "
            f"{_mb_points(base_new)} without it) and {_setting_text(flags, 'old')} under jax "
            f"{old.version} makes it {WORDS[in_old.verdict]} ({_mb_points(in_old)}, against "
            f"{_mb_points(base_old)}); {size}.")
    return {"kind": "flag", "name": " ".join(f"--{f.name}" for f in flags), "text": text}


def explain_change(old: Release, new: Release, backend: str, options: HarnessOptions,
                   say: Say, *, timeout: float, remeasure: bool = False) -> dict:
    """The explanation of a change between two releases (``explanation`` in the JSON)."""
    sides = [Side(r, ensure_environment(r, backend, progress=say).python) for r in (old, new)]
    return explain_flags(*sides, backend, options, say, timeout=timeout, remeasure=remeasure)
