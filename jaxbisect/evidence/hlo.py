"""Below jaxlib: the HLO module that reproduces an XLA-side change without jax (docs/hlo.md).

For a change on jaxlib's side (the lowered modules alike, or the commits say it came with
jaxlib): the module XLA was handed, dumped before its optimisations under the last good
release at the answer's sizes (one module per value of the parameter a shape is over, all by
one process), compiled with no jax tracing under both ends' jaxlibs (one process a release,
the two at once; other releases of the range where ``--hlo-releases`` asks, or where their
figure is stored already), and placed by the bisection's classifier. A
bundle beside the report holds the modules, the plain script that compiled them and a README
with each end's install line, the ``run_hlo_module`` line and the XLA range. Where the culprit
pass consumes fuel, the fuel step names its first rewrite that changes the figure.
The JSON part ``hlo_module`` (docs/schema.md).
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from jaxbisect.errors import InstallFailed, UserError
from jaxbisect.evidence.hlo_bundle import pip_line, readme_text, side_of, write_atomic_if_changed
from jaxbisect.evidence.hlo_fuel import FUEL_PASSES, first_rewrite
from jaxbisect.files import write_atomic
from jaxbisect.lab.environments import is_installed
from jaxbisect.lab.harness import (
    MODULE_ANSWERS,
    REPRO_SOURCE,
    HarnessFailed,
    RunTimedOut,
    run_module,
)
from jaxbisect.lab.runs import store_key
from jaxbisect.lab.store import COMPLETE
from jaxbisect.search.placing import Behaviour
from jaxbisect.search.rounds import Status
from jaxbisect.stages.commits import CameWith
from repro.hlo import target_spec
from repro.target import load as load_target

SCRIPT = "compile_hlo.py"  # the bundle's copy of repro/hlo_compile.py
MIB = 2 ** 20
XLA_COMPARE = "https://github.com/openxla/xla/compare/{old}...{new}"


def bundle_name(report_md: Path) -> str:
    """The bundle's folder, beside the report and named after it."""
    return f"{Path(report_md).stem}-hlo"


def nothing(why: str) -> dict:
    return {"bundle": None, "files": [], "reproduces": None, "figures": [], "why_not": why,
            "fuel": None}


def why_no_bundle(b, extra: dict, came_with: str | None = None) -> str | None:
    """Why this answer gets no module (None: it does); ``came_with``: what the commits below
    the pair say (commit_bisection.CommitBisection.came_with), where they were searched."""
    q = b.request.question
    if b.search.status != Status.FOUND or b.pair is None:
        return "no change was found: there is nothing for a module to reproduce"
    culprit = (extra.get("attribution") or {}).get("culprit")
    if came_with == CameWith.JAX:
        return ("the commits say the change came with jax's Python (a jax commit): a module "
                "dumped from one release carries no part of it")
    if culprit == "jax":
        return ("the lowered modules differ: the change is in jax (its lowering), and a "
                "module dumped at the last good release does not carry it")
    if came_with != CameWith.JAXLIB and culprit not in ("xla", "below-hlo", "jaxlib"):
        return "the change was not placed in XLA, so no module is claimed to reproduce it"
    if q.case is None:
        return "a command, not a case: there is no jitted function to dump"
    if q.metric != "memory":
        return (f"a bundle reproduces a compiled memory plan; this report's figure is the "
                f"program's {q.metric}")
    if (b.request.backend != "cpu" and not q.target) or (
            q.target and load_target(q.target).kind != "gpu"):
        return (f"the bundle's script compiles for the CPU or a compile-only GPU target; this "
                f"answer is for {b.request.backend.words(q.target)}")
    return None


def answer_sizes(b, extra: dict):
    """The question at the answer's sizes (the minimizer's where it shrank them, else the
    search's) and the points to dump: (the over value or None, the case's parameters)."""
    from jaxbisect.search.question import with_params

    minimal = extra.get("minimal") or {}
    # The minimizer shrinks the question as asked (its over values), the search measured its
    # own smaller size: the modules are dumped where the answer was last shown.
    q = (with_params(b.request.question, dict(minimal["params"]))
         if minimal.get("kept_at_start") and minimal.get("params") else b.searched)
    if not q.over:
        return q, [(None, dict(q.params))]
    name, values = q.over
    return q, [(v, {**q.params, name: v}) for v in values]


def module_stem(q, at) -> str:
    return "module" if at is None else f"module-{q.over[0]}-{at}"


def dump_key(q, release, backend: str, params: dict):
    return store_key(q, release, backend, "hlo-module", dump_params=params)


def dump_modules(lab, release, backend: str, q, points: list[tuple], *, timeout: float,
                 say) -> list[tuple]:
    """``python -m repro.hlo dump`` under ``release``: for each point (the over value or
    None, the case's parameters) the stored folder holding module.pb, module.txt and hlo.json
    (its document); those not stored yet dumped by one process."""
    folders = [(at, lab.store.folder(dump_key(q, release, backend, params)))
               for at, params in points]
    missing = [(at, params, folder) for (at, params), (_, folder) in zip(points, folders)
               if lab.remeasure or not (folder / COMPLETE).exists()]
    if not missing:
        return folders

    def make(_: Path) -> None:
        env = lab.environment(release, backend)
        shown = "; ".join(", ".join(f"{k}={v}" for k, v in params.items())
                          for _, params, _ in missing)
        say(f"jax {release.version}: dumping the HLO module of {q.label} ({shown})")
        doc = run_module(env.python, "repro.hlo", [
            "dump", "--json", "--case", q.case.path,
            *[f"--point={json.dumps([f'{k}={v}' for k, v in params.items()])}={folder}"
              for _, params, folder in missing],
            *(["--target", q.target] if q.target else []),
            *(["--xla-flags", q.xla_flags] if q.xla_flags else [])], timeout,
            answers=MODULE_ANSWERS)
        for (_, _, folder), part in zip(missing, doc.get("points") or [doc] * len(missing)):
            folder.mkdir(parents=True, exist_ok=True)
            write_atomic(folder / "hlo.json", json.dumps(part, indent=1))
        for _, _, folder in missing[1:]:  # the first is marked by the store
            (folder / COMPLETE).write_text("")

    # One process for every point missing; the store marks the first point's folder.
    lab.store.get_or_make_folder(dump_key(q, release, backend, missing[0][1]), make,
                                 remeasure=True)
    return folders


def measure_modules(lab, release, backend: str, q, modules: list[tuple], *, timeout: float,
                    say, xla_flags: str = "") -> dict:
    """``python -m repro.hlo measure`` under ``release``: the modules compiled by the plain
    script's code, in one process where it may (``xla_flags`` its XLA_FLAGS), read as the
    question's metric. Where XLA aborts that process, each module again in its own: which
    one, and XLA's words."""
    def make() -> dict:
        env = lab.environment(release, backend)
        say(f"jax {release.version}: compiling the HLO module alone"
            + (f" with {xla_flags}" if xla_flags else ""))
        over = (["--over", f"{q.over[0]}={','.join(str(at) for at, _ in modules)}"]
                if q.over else [])
        argv = ["measure", "--json", "--case", q.case.path, *over,
                *[f"--param={k}={v}" for k, v in q.params.items()],
                *[f"--module={'' if at is None else at}={path}" for at, path in modules],
                *(["--target", q.target] if q.target else []),
                *(["--xla-flags", flags] if (flags := " ".join(
                    filter(None, [q.xla_flags, xla_flags]))) else [])]
        try:
            return run_module(env.python, "repro.hlo", argv, timeout, answers=MODULE_ANSWERS)
        except HarnessFailed as exc:
            if isinstance(exc, RunTimedOut) or len(modules) < 2:
                raise
            return run_module(env.python, "repro.hlo", [*argv, "--apart"], timeout,
                              answers=MODULE_ANSWERS)

    return lab.store.get_or_run(measure_key(release, backend, q, modules, xla_flags), make,
                                remeasure=lab.remeasure)


def measure_key(release, backend: str, q, modules: list[tuple], xla_flags: str = ""):
    digests = [hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
               for _, path in modules]
    return store_key(q, release, backend, "hlo-measure", modules=digests, hlo_flags=xla_flags)


def label_of(classify, doc: dict) -> Behaviour:
    """OLD, NEW, THIRD or SKIP: the bisection's classifier on the module's figure."""
    metric = doc.get("metric") or {}
    if doc.get("status") != "ok" or metric.get("status") != "ok":
        return Behaviour.SKIP
    samples = tuple(tuple(s) if isinstance(s, list) else s for s in metric["samples"])
    return Behaviour.of(classify(samples))


def figure_of(doc: dict):
    """The figure in MiB: {over value: MiB} for a series, else one number (None: none)."""
    metric = doc.get("metric") or {}
    if metric.get("status") != "ok":
        return None
    if "points" in metric:
        return {str(p["at"]): mib(p["value"]) for p in metric["points"]}
    return mib(metric["value"])


def mib(value: int) -> float:
    """Bytes in MiB to four decimals (a minimized module's few KiB stay apart); shown to two,
    as every MiB figure of a report (hlo_bundle.shown_mib)."""
    return round(value / MIB, 4)


# --hlo-releases: the releases whose jaxlib compiles the module alone, besides the pair's.
PAIR, INSTALLED = "pair", "installed"


def releases_to_compile(b, asked: str = PAIR, lab=None, q=None, modules=()) -> list:
    """The pair, and (``asked``) the releases of the range whose environment exists
    (``installed``) or those named (``0.5.2,0.6.0``); with ``pair``, also those whose module
    is already compiled alone in the store (``lab``, ``q``, ``modules``: no cost, and the
    report keeps the rows an earlier run measured). In release order."""
    old, new = b.pair
    backend = b.request.backend
    if asked == INSTALLED:
        more = [r for r in b.candidates if is_installed(r, backend)]
    elif asked != PAIR:
        named = set(asked.split(","))
        more = [r for r in b.candidates if str(r.version) in named]
    elif lab is not None and modules:
        more = [r for r in b.candidates if r not in (old, new)
                and lab.store.path(measure_key(r, backend, q, modules)).is_file()]
    else:
        more = []
    return sorted({*more, old, new}, key=lambda r: r.version)


def check_releases(asked: str, candidates) -> None:
    """``--hlo-releases``: pair, installed, or releases of the range (a UserError names one
    that is not)."""
    if asked in (PAIR, INSTALLED):
        return
    known = {str(r.version) for r in candidates}
    unknown = [v for v in asked.split(",") if v not in known]
    if unknown:
        raise UserError(f"--hlo-releases: {', '.join(unknown)} is not a release of the range "
                        f"measured here (pair, installed, or releases like "
                        f"{','.join(sorted(known)[:2])})")


def culprit_setting(extra: dict) -> tuple[str | None, str | None]:
    """(the pass XLA can turn off, or None; the XLA flag that brings the old figure back)."""
    culprit = (extra.get("explanation") or {}).get("culprit") or {}
    if culprit.get("kind") == "pass" and culprit.get("name"):
        return culprit["name"], f"--xla_disable_hlo_passes={culprit['name']}"
    restoring = next((t["xla_flags"] for t in culprit.get("tests", ())
                      if t.get("behaviour") == Behaviour.OLD and t.get("xla_flags")), None)
    return None, restoring


@dataclass(frozen=True)
class Dumped:
    """The module dumped at the last good release and compiled alone at the pair (and the
    releases asked for): what the culprit's step needs to finish the part."""

    q: object                 # the question at the answer's sizes
    folders: tuple            # (over value or None, the stored folder of its module)
    figures: tuple            # the rows: each release's figure, placed
    reproduces: bool | None

    @property
    def modules(self) -> list[tuple]:
        return [(at, str(f / "module.pb")) for at, f in self.folders]


def dump_and_compile(b, lab, extra: dict, say, *, came_with: str | None = None,
                     releases: str = PAIR, jobs: int = 1) -> Dumped | dict:
    """The module dumped under the last good release and compiled alone under the pair's
    jaxlibs (and those ``releases`` asks for), ``jobs`` at once: a ``Dumped``, or the part
    that says why there is none (``nothing``)."""
    why = why_no_bundle(b, extra, came_with)
    if why is not None:
        return nothing(why)
    backend, (old, new) = b.request.backend, b.pair
    q, points = answer_sizes(b, extra)
    try:
        folders = dump_modules(lab, old, backend, q, points, timeout=b.timeout, say=say)
    except (InstallFailed, HarnessFailed) as exc:
        return nothing(f"the module could not be dumped under jax {old.version}: {exc}")
    dumped = [json.loads((f / "hlo.json").read_text()) for _, f in folders]
    failed = next((d for d in dumped if d.get("status") != "ok"), None)
    if failed is not None:
        return nothing(f"the module could not be dumped under jax {old.version}: "
                       f"{failed.get('error')}")
    modules = [(at, str(f / "module.pb")) for at, f in folders]
    classify = b.classifier()

    def figure(release) -> dict:
        try:
            doc = measure_modules(lab, release, backend, q, modules, timeout=b.timeout,
                                  say=say)
        except (InstallFailed, HarnessFailed) as exc:
            doc = {"status": "error", "error": str(exc)}
        role = (b.pair_roles[0] if release == old else b.pair_roles[1] if release == new
                else "older" if release.version < old.version
                else "newer" if release.version > new.version else "between")
        return {"jax": str(release.version), "jaxlib": doc.get("jaxlib"),
                "role": role, "figure": figure_of(doc), "unit": "MiB",
                "label": label_of(classify, doc), "error": doc.get("error")}

    compiled = releases_to_compile(b, releases, lab, q, modules)
    # The pair first (the answer's rows), then the others; each release its own process.
    first = sorted(compiled, key=lambda r: r not in (old, new))
    with ThreadPoolExecutor(max(1, min(jobs, len(first))), thread_name_prefix="hlo") as pool:
        made = dict(zip(first, pool.map(figure, first)))
    figures = [made[r] for r in compiled]
    ends = {side_of(f["role"]): f["label"] for f in figures if side_of(f["role"]) is not None}
    reproduces = (None if Behaviour.SKIP in ends.values() or len(ends) < 2 else
                  ends == {0: Behaviour.OLD, 1: Behaviour.NEW})
    return Dumped(q, tuple(folders), tuple(figures), reproduces)


def with_culprit(b, lab, extra: dict, say, report_md: Path, dumped: Dumped | dict) -> dict:
    """The ``hlo_module`` part: the culprit's setting measured on the module under the
    first bad release, the fuel step, and the bundle written beside ``report_md``."""
    if isinstance(dumped, dict):
        return dumped
    backend, new, q = b.request.backend, b.pair[1], dumped.q
    modules, classify = dumped.modules, b.classifier()
    pass_name, setting = culprit_setting(extra)
    check = None
    if setting:  # the culprit's setting on the module under the first bad release
        try:
            check = label_of(classify, measure_modules(lab, new, backend, q, modules,
                                                       timeout=b.timeout, say=say,
                                                       xla_flags=setting))
        except (InstallFailed, HarnessFailed) as exc:
            check = f"skip: {exc}"
    part = {"bundle": bundle_name(report_md), "files": [], "reproduces": dumped.reproduces,
            "figures": [dict(f) for f in dumped.figures], "why_not": None,
            "params": dict(q.params),
            "over": {"name": q.over[0], "values": [at for at, _ in modules]} if q.over else None,
            "culprit": {"pass": pass_name, "setting": setting, "under_first_bad": check},
            "xla_compare": xla_compare(extra), "fuel": None,
            "target": Path(target_spec(q.target)).name if q.target else None}
    part["fuel"] = fuel_step(b, lab, q, modules, pass_name, classify, say)
    part["files"] = write_bundle(Path(report_md).parent / part["bundle"], part,
                                 list(dumped.folders), q, b)
    return part


def hlo_module(b, lab, extra: dict, say, report_md: Path, *, came_with: str | None = None,
               releases: str = PAIR, jobs: int = 1) -> dict:
    """The ``hlo_module`` part, the bundle written beside ``report_md`` where there is one:
    the module dumped and compiled alone, then the culprit's setting on it (the pipeline
    runs the two apart: the second once the explanation has landed)."""
    dumped = dump_and_compile(b, lab, extra, say, came_with=came_with, releases=releases,
                              jobs=jobs)
    return with_culprit(b, lab, extra, say, report_md, dumped)


def xla_compare(extra: dict) -> str | None:
    pins = (extra.get("attribution") or {}).get("xla_commits") or {}
    if pins.get("old") and pins.get("new"):
        return XLA_COMPARE.format(old=pins["old"], new=pins["new"])
    return None


def fuel_step(b, lab, q, modules, pass_name: str | None, classify, say) -> dict:
    """The first rewrite of the culprit pass that changes the figure, where fuel can say it:
    the pass consumes fuel and fuel 0 measures like the pass turned off (both measured under
    the first bad release)."""
    if pass_name is None:
        return {"pass": None, "tried": False, "first_rewrite": None,
                "why": "the culprit is an XLA flag, not one pass: fuel counts one pass's "
                       "rewrites"}
    if pass_name not in FUEL_PASSES:
        return {"pass": pass_name, "tried": False, "first_rewrite": None,
                "why": f"{pass_name} consumes no fuel (it ignores --xla_fuel)"}
    new = b.pair[1]

    def under(flags: str) -> tuple[str, dict]:
        try:
            doc = measure_modules(lab, new, b.request.backend, q, modules,
                                  timeout=b.timeout, say=say, xla_flags=flags)
        except (InstallFailed, HarnessFailed) as exc:
            doc = {"status": "error", "error": str(exc)}
        return label_of(classify, doc), doc

    off, off_doc = under(f"--xla_disable_hlo_passes={pass_name}")
    zero, zero_doc = under(f"--xla_fuel={pass_name}=0")
    part = {"pass": pass_name, "tried": True, "release": str(new.version),
            "pass_off": {"label": off, "figure": figure_of(off_doc),
                         "error": off_doc.get("error")},
            "fuel_0": {"label": zero, "figure": figure_of(zero_doc),
                       "error": zero_doc.get("error"),
                       "out_of_fuel": (zero_doc.get("out_of_fuel") or [None])[0]},
            "first_rewrite": None, "tried_fuel": [], "why": None}
    if off != Behaviour.OLD:
        part["why"] = (f"{pass_name} turned off does not bring the old figure back ({off}): "
                       f"its rewrites are not what changed it")
        return part
    if zero != Behaviour.OLD:
        said = f"{zero}: {zero_doc.get('error')}" if zero_doc.get("error") else zero
        part["why"] = (f"fuel 0 does not measure like {pass_name} turned off ({said}): some "
                       f"of its work is not fuel-guarded, so fuel cannot narrow it")
        return part
    lines: dict[int, list[str]] = {}

    def behaviour(n: int) -> str:
        label, doc = under(f"--xla_fuel={pass_name}={n}")
        lines[n] = doc.get("out_of_fuel") or []
        return label

    found = first_rewrite(behaviour)
    part["tried_fuel"] = [list(t) for t in found.tried]
    if found.first_new is None:
        part["why"] = found.why
        return part
    part["first_rewrite"] = {"fuel": found.first_new,
                             "out_of_fuel": (lines.get(found.last_old) or [None])[0]}
    return part


def end_installed(b, release) -> dict:
    index = b.candidates.index(release)
    placed = b.search.placed.get(index)
    run = placed.runs[0] if placed and placed.runs else None
    return dict(run.installed) if run else {}


def write_bundle(folder: Path, part: dict, folders, q, b) -> list[str]:
    """The bundle: each module (.pb, .txt), the script, a README; each file written whole."""
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for at, source in folders:
        stem = module_stem(q, at)
        for suffix in ("pb", "txt"):
            target = folder / f"{stem}.{suffix}"
            data = (source / f"module.{suffix}").read_bytes()
            if not target.is_file() or target.read_bytes() != data:
                tmp = target.with_name(f".{target.name}.tmp")
                tmp.write_bytes(data)
                tmp.replace(target)
            files.append(target.name)
    if q.target:  # the compile-only GPU's spec, for the script's --target
        write_atomic_if_changed(folder / target_spec(q.target).name,
                                target_spec(q.target).read_text())
        files.append(target_spec(q.target).name)
    script = (REPRO_SOURCE / "hlo_compile.py").read_text()
    write_atomic_if_changed(folder / SCRIPT, script)
    files.append(SCRIPT)
    files = sorted([*files, "README.md"])
    write_atomic_if_changed(folder / "README.md", readme({**part, "files": files}, files, q, b))
    return files


def readme(part: dict, files: list[str], q, b) -> str:
    old, new = b.pair
    return readme_text(part, files, q.label, {
        "last good": pip_line(end_installed(b, old), old),
        "first bad": pip_line(end_installed(b, new), new)})
