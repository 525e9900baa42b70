"""Why: the XLA flag (or pass) behind a change, proven by measurement in both releases.

Lists each release's XLA flags (``python -m repro.xla_flags``), keeps the defaults that changed
and can matter on the backend, and measures v0 at a small size with each set back (see
``flags.search_flags``). Where no flag explains it, or where both ends grow, the HLO passes
that changed v0's module are turned off one at a time (``passes``). Every measurement goes
through the probes' store, so a rerun measures nothing again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..catalogue import Release
from ..environments import ensure_environment
from ..harness import (
    MODULE_ANSWERS,
    HarnessFailed,
    HarnessOptions,
    harness_id,
    run_module,
    target_key,
)
from ..measurements import Measurement, measure_release
from ..store import STORE, Key, Store
from .common import MB, pass_names
from .flags import FlagChange, FlagSearch, changed_defaults, relevant_to, search_flags
from .passes import first_difference, is_safe, passes_that_changed

Say = Callable[[str], None]
WORDS = {"constant": "constant", "grows": "grow", "unavailable": "unmeasurable"}


def small_options(options: HarnessOptions) -> HarnessOptions:
    """v0 only, compiled, at a size that takes seconds and still shows the change: a
    bisection's search probes, so that the explanation finds both ends' measured already."""
    return replace(options.for_search(True), mode="compiled")


def _platform(backend: str) -> str:
    # A target (cuda12-deviceless) lists its flags from a CPU process: XLA's flag list is one
    # for every backend, and a compile-only process has no GPU client to start.
    return "cuda" if backend == "cuda12" else "cpu"


def xla_flag_list(release: Release, backend: str, python: Path, *, timeout: float,
                  remeasure: bool = False, store: Store = STORE) -> dict:
    """``python -m repro.xla_flags`` in the release's environment, stored like a probe."""
    platform = _platform(backend)
    key = Key(str(release.version), backend, "xla-flags", {"platform": platform}, harness_id())
    return _stored_run(store, key, remeasure, f"jax {release.version}", lambda: run_module(
        python, "repro.xla_flags", ["--json", "--backend", platform], timeout,
        answers=MODULE_ANSWERS, platform=platform))


def _stored_run(store: Store, key: Key, remeasure: bool, what: str, run) -> dict:
    """The stored document of ``key``, or ``run()``'s, stored when it is a good one (one that
    is not raises HarnessFailed and is measured again next time)."""
    def checked() -> dict:
        document = run()
        if document.get("status") != "ok":
            raise HarnessFailed(f"{what}: {document.get('error')}")
        return document

    return store.get_or_run(key, checked, remeasure=remeasure)


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
    n_outer = " / ".join(map(str, in_new.options.n_outer))
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
    explanation = explain_flags(*sides, backend, options, say, timeout=timeout,
                                remeasure=remeasure)
    verdicts = {t["release"]: t["verdict"] for t in explanation["tests"][:2]}
    if explanation["culprit"]["kind"] == "flag" or "grows" not in verdicts.values():
        return explanation
    grows, other = sides[::-1] if verdicts[sides[1].version] == "grows" else sides
    return explain_passes(grows, other, backend, options, say, explanation, timeout=timeout,
                          remeasure=remeasure)


LONG_TEXT = "xla_dump_hlo_as_long_text"  # its default flipped in 0.5.1: set it on both sides


def xla_pass_dumps(side: Side, backend: str, small: HarnessOptions, xla_flags: str, *,
                   timeout: float, remeasure: bool = False, store: Store = STORE) -> dict:
    """``python -m repro.xla_passes`` in the release's environment, stored like a probe."""
    args = small.pass_dumps_argv(_platform(backend), xla_flags)
    key = Key(side.version, backend, "xla-passes",
              {"argv": args, "target": target_key(small.target)}, harness_id())
    return _stored_run(store, key, remeasure, f"jax {side.version}: per-pass dumps",
                       lambda: run_module(side.python, "repro.xla_passes", args, timeout,
                                          answers=MODULE_ANSWERS,
                                          platform="" if small.target else _platform(backend)))


def explain_passes(grows: Side, other: Side | None, backend: str, options: HarnessOptions,
                   say: Say, explanation: dict, *, timeout: float,
                   remeasure: bool = False) -> dict:
    """The pass step: each HLO pass that changed v0's module under ``grows``, turned off one at
    a time at the small size; where ``other`` is given, the first pass after which the two
    releases' modules differ. Adds to ``explanation`` (tests, workarounds, culprit)."""
    small = small_options(options)
    sides = [s for s in (other, grows) if s is not None]
    lists = [xla_flag_list(s.release, backend, s.python, timeout=timeout, remeasure=remeasure)
             for s in sides]
    long_text = (f"--{LONG_TEXT}=true" if all(any(f["name"] == LONG_TEXT for f in doc["flags"])
                                              for doc in lists) else "")
    dump_flags = " ".join(f for f in (options.xla_flags, long_text) if f)
    say(f"jax {grows.version}: which HLO passes ran (--xla_dump_hlo_pass_re=.*) …")
    dumps = {s.version: xla_pass_dumps(s, backend, small, dump_flags, timeout=timeout,
                                       remeasure=remeasure)["dumps"] for s in sides}
    candidates = passes_that_changed([d["file"] for d in dumps[grows.version]])
    say(f"jax {grows.version}: {len(candidates)} passes changed v0's module; turning each off")
    restoring = []
    for name in candidates:
        extra = f"--xla_disable_hlo_passes={name}"
        flags = " ".join(f for f in (options.xla_flags, extra) if f)
        m = measure_release(grows.release, backend, replace(small, xla_flags=flags),
                            progress=say, timeout=timeout, use_cache=not remeasure)
        explanation["tests"].append({"release": grows.version, "xla_flags": flags,
                                     "verdict": m.verdict})
        if m.verdict == "constant":
            restoring.append((name, m))
            explanation["workarounds"].append({"release": grows.version, "xla_flags": extra,
                                               "verdict": "constant", "safe": is_safe(name)})
    first = None
    if other is not None:
        old_side, new_side = (other, grows) if other.release.version < grows.release.version \
            else (grows, other)
        first = first_difference(dumps[old_side.version], dumps[new_side.version])
        first.update(old=old_side.version, new=new_side.version)
        explanation["first_difference"] = first
        where = _where_they_part(first)
    else:
        where = ""
    size = f"v0 compiled at n_res {small.n_res}, n_inner {small.n_inner}"
    safe = [(n, m) for n, m in restoring if is_safe(n)]
    if restoring:
        # A pass of the growing release where the modules part, else the first safe one
        at_the_difference = []
        if first and first["status"] == "differ":
            own_passes = first["old_passes" if grows.version == first["old"] else "new_passes"]
            at_the_difference = [name for _, name in own_passes] + [first["pass"]]
        found = {n for n, _ in restoring}
        chosen = next((n for n in at_the_difference if n in found),
                      (safe or restoring)[0][0])
        shown = "; ".join(f"`{n}` ({_mb_points(m)} at n_outer "
                          f"{' / '.join(map(str, small.n_outer))})"
                          + ("" if is_safe(n) else ", diagnostic only: correctness depends "
                                                    "on it")
                          for n, m in restoring)
        text = (f"Turning off HLO passes one at a time keeps v0 constant under jax "
                f"{grows.version} for {len(restoring)} of the {len(candidates)} passes that "
                f"changed its module: {shown}; {size}.")
        explanation["culprit"] = {"kind": "pass", "name": chosen,
                                  "text": " ".join(t for t in (text, where) if t)}
    else:
        text = (f"No single HLO pass, turned off, keeps v0 constant under jax {grows.version} "
                f"({len(candidates)} passes changed its module: "
                f"{', '.join(candidates) or 'none'}; {size}).")
        prior = explanation.get("culprit")
        lead = prior["text"] + " " if prior and prior.get("kind") == "none" else ""
        explanation["culprit"] = {"kind": "none", "name": None,
                                  "text": lead + " ".join(t for t in (text, where) if t)}
    return explanation


def _where_they_part(first: dict) -> str:
    """One sentence: where the two releases' modules first differ, pass by pass."""
    old, new = first["old"], first["new"]
    if first["status"] == "same":
        return (f"The modules of jax {old} and {new} are the same after every HLO pass "
                f"that changed them (compared with numbering and printer differences "
                f"removed), so the change comes after the pass pipeline (scheduling, buffer "
                f"assignment).")
    if first["old_passes"] or first["new_passes"]:
        if first["old_passes"] and first["new_passes"]:
            runs = (f"jax {old}'s module is changed by {pass_names(first['old_passes'])} and jax "
                    f"{new}'s by {pass_names(first['new_passes'])}")
        else:
            version = old if first["old_passes"] else new
            runs = (f"only jax {version}'s module is changed, by "
                    f"{pass_names(first['old_passes'] or first['new_passes'])}")
        return (f"The modules of jax {old} and {new} first differ in the pipeline "
                f"`{first['pipeline']}`, where {runs}; they differ after that (the diff is "
                f"below).")
    return (f"The modules of jax {old} and {new} first differ after the pass "
            f"`{first['pass']}` (pipeline `{first['pipeline']}`: {first['how']}; the diff is "
            f"below).")


def explain_release(release: Release, backend: str, options: HarnessOptions, say: Say, *,
                    timeout: float, remeasure: bool = False) -> dict:
    """One release on its own (``--explain``): no second release to diff flags against, so
    the pass step only, where v0 grows at the small size."""
    side = Side(release, ensure_environment(release, backend, progress=say).python)
    small = small_options(options)
    base = measure_release(release, backend, small, progress=say, timeout=timeout,
                           use_cache=not remeasure)
    explanation = {"releases": [side.version], "flag_defaults_changed": [],
                   "tests": [{"release": side.version, "xla_flags": options.xla_flags,
                              "verdict": base.verdict}], "culprit": None, "workarounds": []}
    if base.verdict != "grows":
        explanation["culprit"] = {
            "kind": "none", "name": None,
            "text": (f"v0 is {base.verdict} under jax {side.version} at a small size (v0 "
                     f"compiled at n_res {small.n_res}, n_inner {small.n_inner}; "
                     f"{_mb_points(base)}): there is no growth to explain.")}
        return explanation
    return explain_passes(side, None, backend, options, say, explanation, timeout=timeout,
                          remeasure=remeasure)
