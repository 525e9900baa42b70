"""``python -m jaxbisect.tools.bench``: how long environments and the main job take, cold and warm.

Side by side, in one run (``nox -s bench``): one release's environment (jax 0.5.0 unless
``--release``) made with uv (as ``environments.ensure_environment`` does) and with pip (the
exact versions uv resolved), cold, warm and ready; then each of SCENARIOS (the whole ``nox -s
repro``, bisections), a command timed in steps from a fresh cache to every result stored.

Every time is also given in *harness runs*: one ``python -m repro`` under jax 0.10.2 at the
report's sizes, timed in the same run (the median of three), so that figures from a busy or a
shared machine still compare. The report says how much CPU other processes used meanwhile.

Writes its records to ``reports/bench.json`` and the markdown rendered from them to
``reports/bench.md`` beside it (``--render reports/bench.json`` remakes the markdown, running
nothing), and prints the markdown. Nothing else it makes outlives it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from importlib import metadata
from pathlib import Path
from unittest.mock import patch  # os.environ set for a while, as patch.dict does it

from packaging.utils import canonicalize_name
from tabulate import tabulate

from jaxbisect.errors import UserError
from jaxbisect.files import write_atomic
from jaxbisect.lab import backends
from jaxbisect.lab.catalogue import Release, load_catalogue
from jaxbisect.lab.environments import ensure_environment, resolve_backend
from jaxbisect.lab.machine import default_jobs, machine_description
from jaxbisect.report.sweep_summary import load_results
from jaxbisect.search.question import Run
from repro.options import OneLineParser

PROG = "python -m jaxbisect.tools.bench"
REPO = Path(__file__).resolve().parents[2]
NOXFILE = REPO / "noxfile.py"
DEFAULT_OUT = Path("reports") / "bench.md"
READY_TARGET_S = 3.0  # a warm environment is ready in under 3 s
OUTSIDE_TARGET = 0.10  # a warm `nox -s repro` spends under 10 % of its time outside the harness
HARNESS_RELEASE = "0.10.2"  # the unit: one harness run of this release at the report's sizes
BISECT_COLD_RUNS = 4.0  # a cold bisection costs at most 4 harness runs
BISECT_STORED_RUNS = 0.1  # a fully stored rerun at most a tenth of one
# The 29-release bisection with its evidence, as typed (issue 51): the whole command cold in
# at most 2.5 harness runs (the search alone: 1.8), a fully stored rerun in 0.05.
EVIDENCE_COLD_RUNS = 2.5
EVIDENCE_STORED_RUNS = 0.05
REPRO_BEFORE_S = 170.0  # a cold `nox -s repro` on two cores before releases ran side by side
BEFORE_WORDS = "its time before releases ran side by side"
WITH_EVIDENCE = "with the evidence the report adds after the search"
SEARCH_SIZES = "at the sizes the bisection searches at (n_res 32, n_outer 2, 5)"
# A record's older words, said as the rows say them now (the figures are the record's).
# (words only: a figure the record does not hold is never added to it)
BENCH_WORDS_NOW = {"scan case at its search size": "scan case at the sizes the bisection "
                                                   "searches at",
                   ", evidence included": f", {WITH_EVIDENCE}"}


JOBS_WORDS = "--jobs 2 measures two releases a round, and may measure more in all"
JOBS_NOW = re.compile(r"^the default --jobs \(here (\d+)\) the faster on (\d+) cores: "
                      r"--jobs 2 against 1$")


def words_now(text: str) -> str:
    for old, new in BENCH_WORDS_NOW.items():
        text = text.replace(old, new)
    return JOBS_NOW.sub(rf"the default --jobs (here \1) is the faster on \2 cores: --jobs 2 "
                        rf"against --jobs 1, warm ({JOBS_WORDS})", text)

CPU = backends.get("cpu")  # the lab takes a backend, never its name


@dataclass(frozen=True)
class Row:
    what: str
    how: str
    seconds: float
    note: str = ""
    runs: float | None = None  # seconds in harness runs, where that unit means something


@dataclass(frozen=True)
class Check:
    target: str
    figure: str
    met: bool


@dataclass
class Results:
    rows: list[Row]
    checks: list[Check]


Say = Callable[[str], None]


def _timed(action: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def _distributions(env_dir: Path) -> dict[str, str]:
    """Every distribution installed in a virtual environment, name -> version."""
    found = {}
    for site in env_dir.glob("lib/python*/site-packages"):
        for dist in metadata.distributions(path=[str(site)]):
            found[canonicalize_name(dist.metadata["Name"] or "")] = dist.version
    return found


def _run(command: list[str], *, env: dict | None = None, cwd: Path | None = None,
         log: Path | None = None, ok: tuple[int, ...] = (0,)) -> str:
    """``command``'s output; an exit status not in ``ok`` is a UserError with its last lines."""
    done = subprocess.run(command, env=env, cwd=cwd, check=False, capture_output=True, text=True)
    if log is not None:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"$ {shlex.join(command)}\n{done.stdout}{done.stderr}\n")
    if done.returncode not in ok:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-5:]
        raise UserError(f"{shlex.join(command[:4])} … failed (exit {done.returncode}): "
                        + " | ".join(tail))
    return done.stdout


# -- one release's environment: uv against pip ------------------------------------------------


def bench_environments(args: argparse.Namespace, scratch: Path, say: Say) -> Results:
    release: Release = load_catalogue().get(args.release)
    what = f"environment, jax {release.version} (cpu)"
    rows, checks = [], []
    uv_cache = scratch / "uv-cache"

    def uv_env(name: str):
        with patch.dict(os.environ, JAX_SCAN_REPRO_CACHE=str(scratch / name),
                        UV_CACHE_DIR=str(uv_cache)):
            return _timed(lambda: ensure_environment(release, CPU, progress=lambda _: None))

    for name, how in (("uv-cold", "cold: empty uv cache, new environment"),
                      ("uv-warm", "warm: uv cache filled, new environment"),
                      ("uv-warm", "ready: the finished environment, asked for again")):
        say(f"bench: {what} with uv, {how.split(':')[0]} …")
        seconds, env = uv_env(name)
        rows.append(Row(what, "uv", seconds, how))
    assert env.reused, "the finished environment was not reused"
    warm, ready = rows[1].seconds, rows[2].seconds
    checks.append(Check(f"warm environment ready < {READY_TARGET_S:.0f} s",
                        f"{ready:.2f} s (ready), {warm:.1f} s (new, from uv's cache)",
                        max(ready, warm) < READY_TARGET_S))

    pins = [f"{name}=={version}" for name, version in sorted(_distributions(env.path).items())]
    pip_env = {**os.environ, "PIP_CACHE_DIR": str(scratch / "pip-cache"),
               "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    pip_env.pop("PIP_NO_CACHE_DIR", None)
    log = scratch / "pip.log"

    def pip_install(venv: Path, create: bool) -> float:
        def work():
            if create:
                _run([sys.executable, "-m", "venv", str(venv)], log=log)
            _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *pins],
                 env=pip_env, log=log)
        return _timed(work)[0]

    for venv, create, how in (
            ("pip-cold", True, "cold: empty pip cache, python -m venv + pip install"),
            ("pip-warm", True, "warm: pip cache filled, new environment"),
            ("pip-warm", False, "ready: pip install again, all already satisfied")):
        say(f"bench: {what} with pip, {how.split(':')[0]} …")
        rows.append(Row(what, "pip", pip_install(scratch / venv, create), how))
    same = _distributions(scratch / "pip-warm")
    same = {k: v for k, v in same.items() if k not in {"pip", "setuptools", "wheel"}}
    if same != _distributions(env.path):
        rows.append(Row(what, "pip", float("nan"), "warning: pip installed a different set"))
    say(f"bench: pins used for both: {' '.join(pins)}")
    return Results(rows, checks)


# -- the main job and bisections: scenarios, each a command timed in steps ---------------------


@dataclass(frozen=True)
class Step:
    """One timed run of a scenario's command: its name, its words in the table, what it adds
    to the command, and whether the stored results are dropped first (environments kept)."""

    name: str
    how: str
    extra: tuple[str, ...] = ()
    drop_results: bool = False
    on_pair: bool = False  # --from/--to: the pair the first step found


Timed = dict[str, tuple[float, dict]]  # a step's name -> its seconds and what it gave


@dataclass(frozen=True)
class Scenario:
    """A command timed in steps that share one fresh ``JAX_SCAN_REPRO_CACHE`` (with
    ``--fresh-machine``, one empty uv cache too); ``checks`` holds its figures to targets.

    A bisection (``python -m jaxbisect … --json``) gives its document; ``nox -s repro`` the
    harness seconds of the runs it made (``{"harness": s}``)."""

    what: str
    argv: tuple[str, ...]  # python -m ARGV; {backend}, {reports}, {envdir} filled in
    steps: tuple[Step, ...]
    checks: Callable[[Timed, float, argparse.Namespace], list[Check]]

    @property
    def nox(self) -> bool:
        return self.argv[0] == "nox"


COLD = Step("cold", "cold: no environments, no stored results", ("--jobs", "1"))
WARM = Step("warm", "warm: environments ready, results dropped", ("--jobs", "1"),
            drop_results=True)
STORED = Step("stored", "a rerun, every result stored", ("--jobs", "1"))
# As typed: --jobs unasked (the search's default probes, the evidence's processes one a core).
TYPED_COLD = Step("cold", "cold: no environments, no stored results, as typed (no --jobs)")
TYPED_STORED = Step("stored", "a rerun, every result stored, as typed")
CASE = REPO / "repro" / "cases" / "while_loop_cpu_slowdown.py"
BISECTION = ("--reports", "{reports}", "--json")  # a bisection's own options in a scenario


def _harness_seconds(cache: Path, since: float) -> float:
    """Harness seconds of every run stored in ``cache`` since ``since`` (the scan case's
    runs, as the lab stores them; the reports' copies keep their old timings when only
    timings changed: not those)."""
    total = 0.0
    for path in (cache / "results").rglob("*.json"):
        if path.stat().st_mtime < since:
            continue
        try:
            total += Run.from_json(json.loads(path.read_text(encoding="utf-8"))).seconds
        except (ValueError, KeyError, TypeError):
            continue  # a command's or an explanation's record, not a run
    return total


def _answer(doc: dict) -> str:
    """A bisection document's answer in a bench row: the pair found, else its status."""
    return (f"{doc['last_old']['jax']} → {doc['first_new']['jax']}" if doc["first_new"]
            else doc["status"])


def step_note(step: Step, got: dict) -> str:
    """A step's row: its words, then what its bisection did (or the harness's seconds)."""
    if "harness" in got:  # its releases' harness runs, side by side: more than the wall
        return f"{step.how}; its releases' `python -m repro` runs {got['harness']:.1f} s in all"
    if got.get("minimal"):
        params = ", ".join(f"{k}={v}" for k, v in (got["minimal"].get("params") or {}).items())
        return f"{step.how}: {got['minimal'].get('trials')} trials, smallest: {params}"
    s, probes = got["search"], got["probes"]
    sized = got.get("search_size") or {}
    timings = (got.get("timings") or {}).get("steps") or {}
    after = [f"{name} {t['seconds']:.1f} s" for name, t in timings.items()
             if name not in ("setup", "releases") and t["seconds"] >= 0.05]
    size = ", ".join([*(f"{k} {v}" for k, v in (sized.get("params") or {}).items()),
                      *([f"{got['over']['name']} {','.join(map(str, sized['over']))}"]
                        if sized.get("over") else [])])
    return "; ".join([
        step.how, f"{s['probes']} releases measured in {len(s['rounds'])} rounds (limit "
                  f"{s['limit']['probes']} in {s['limit']['rounds']}, --jobs {s['jobs']}), "
                  f"{s['remeasures']} re-measured, {s['runs']} runs",
        f"{sum(p['cached'] for p in probes)} of {len(probes)} from stored results",
        *([f"searched at {size}"] if size else []), f"answer {_answer(got)}",
        *([f"the search {timings['releases']['seconds']:.1f} s"
           + (f"; the steps after it, some side by side: {', '.join(after)}" if after else "")]
          if "releases" in timings else [])])


def run_scenario(name: str, scenario: Scenario, args: argparse.Namespace, scratch: Path,
                 say: Say) -> Results:
    cache, reports = scratch / f"{name}-cache", scratch / name
    # As a user's shell runs it: the toolkit's bytecode written (a caller's
    # PYTHONDONTWRITEBYTECODE would compile its ~60 modules on every command: 0.15 s of a
    # stored rerun's 0.26 s here).
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
           "JAX_SCAN_REPRO_CACHE": str(cache)}
    if args.fresh_machine:
        env["UV_CACHE_DIR"] = str(scratch / f"{name}-uv-cache")
    if scenario.nox:
        if not NOXFILE.is_file():
            raise UserError(f"no noxfile at {NOXFILE}: run the bench from a clone of the project")
        # As in a fresh clone: reports/repro/ as committed (the sweep reads how long each
        # release took from it, to start the longest first), nothing measured in the cache.
        shutil.copytree(REPO / "reports" / "repro", reports)
    fill = {"backend": args.backend, "reports": reports, "envdir": scratch / "nox-envs",
            "releases": len({d["release"] for d in load_results(REPO / "reports" / "repro")[0]})}
    what, argv = scenario.what.format(**fill), [arg.format(**fill) for arg in scenario.argv]
    timed: Timed = {}
    rows = []
    for step in scenario.steps:
        if step.drop_results:
            shutil.rmtree(cache / "results", ignore_errors=True)
        found = timed[scenario.steps[0].name][1] if step.on_pair else {}
        ends = ["--from", found["last_old"]["jax"], "--to", found["first_new"]["jax"]] \
            if found else []
        say(f"bench: {what}, {step.name} …")
        began = time.time()
        seconds, out = _timed(partial(
            _run, [sys.executable, "-m", *argv, *ends, *step.extra], env=env, cwd=REPO,
            log=scratch / "bench.log", ok=(0,) if scenario.nox else (0, 1)))
        say(f"bench: {what}, {step.name}: {seconds:.1f} s")
        got = {"harness": _harness_seconds(cache, began)} if scenario.nox else json.loads(out)
        timed[step.name] = seconds, got
        how = step.how + ("; empty uv cache too (a fresh machine)"
                          if args.fresh_machine and step is scenario.steps[0] else "")
        rows.append(Row(what, "uv", seconds, step_note(replace(step, how=how), got),
                        seconds / args.harness_seconds))
    return Results(rows, scenario.checks(timed, args.harness_seconds, args))


def repro_checks(t: Timed, unit: float, args: argparse.Namespace) -> list[Check]:
    cold, stored, remeasured = (t[name][0] for name in ("cold", "warm", "remeasured"))
    one, harness_one = t["one at a time"][0], t["one at a time"][1]["harness"]
    outside = (one - harness_one) / one
    return [
        Check(f"warm nox -s repro --jobs 1: < {OUTSIDE_TARGET:.0%} of its time outside the "
              f"harness", f"{outside:.1%} ({one - harness_one:.1f} s of {one:.1f} s)",
              outside < OUTSIDE_TARGET),
        Check(f"nox -s repro cold ≤ half of {REPRO_BEFORE_S:.0f} s, {BEFORE_WORDS} "
              + ("(fresh machine)" if args.fresh_machine else "(uv cache warm)"),
              f"{cold:.0f} s ({cold / unit:.1f} harness runs; releases side by side "
              f"{one / remeasured:.2f}× as fast as one at a time, warm)",
              cold <= REPRO_BEFORE_S / 2),
        Check("nox -s repro warm < 120 s", f"{remeasured:.0f} s remeasured, {stored:.1f} s "
              f"stored", remeasured < 120)]


def bisect_checks(t: Timed, unit: float, args: argparse.Namespace) -> list[Check]:
    (cold, doc), warm, stored, two = t["cold"], t["warm"][0], t["stored"][0], t["jobs 2"][0]
    s = doc["search"]
    return [
        Check(f"cold bisection ≤ {BISECT_COLD_RUNS:.0f} harness runs",
              f"{cold / unit:.2f} ({cold:.1f} s; one harness run {unit:.1f} s)",
              cold <= BISECT_COLD_RUNS * unit),
        Check(f"a rerun, every result stored, ≤ {BISECT_STORED_RUNS} harness runs",
              f"{stored / unit:.3f} ({stored:.2f} s)", stored <= BISECT_STORED_RUNS * unit),
        Check("releases measured and rounds within ⌈log2 n⌉ + 2", f"{s['probes']} releases, "
              f"{len(s['rounds'])} rounds; limit {s['limit']['probes']}",
              max(s["probes"], len(s["rounds"])) <= s["limit"]["probes"]),
        Check(f"the default --jobs (here {default_jobs()}) is the faster on {os.cpu_count()} "
              f"cores: --jobs 2 against --jobs 1, warm ({JOBS_WORDS})",
              f"{two:.1f} s against {warm:.1f} s warm: "
              + ("helps" if two < warm * 0.95 else "does not help"),
              (default_jobs() == 1) == (two >= warm * 0.95))]


def search_seconds(doc: dict) -> float | None:
    """The search's own seconds in a bisection's printed document (its ``releases`` step)."""
    step = ((doc.get("timings") or {}).get("steps") or {}).get("releases")
    return step["seconds"] if step else None


def long_checks(t: Timed, unit: float, args: argparse.Namespace) -> list[Check]:
    (cold, doc), stored = t["cold"], t["stored"][0]
    search = search_seconds(doc)
    searched = (f"; the search {search / unit:.2f} ({search:.1f} s), the evidence after it "
                f"{(cold - search) / unit:.2f}" if search is not None else "")
    return [Check(f"29-release bisection, {WITH_EVIDENCE}, cold ≤ {EVIDENCE_COLD_RUNS} "
                  f"harness runs", f"{cold / unit:.2f} ({cold:.1f} s){searched}; answer "
                  f"{_answer(doc)}",
                  cold <= EVIDENCE_COLD_RUNS * unit and _answer(doc) == "0.5.0 → 0.5.1"),
            Check(f"its rerun, every result stored, ≤ {EVIDENCE_STORED_RUNS} harness runs",
                  f"{stored / unit:.3f} ({stored:.2f} s)",
                  stored <= EVIDENCE_STORED_RUNS * unit)]


def case_checks(t: Timed, unit: float, args: argparse.Namespace) -> list[Check]:
    warm, doc = t["warm"]
    s = doc["search"]
    # the search's own time (not the tables or the standalone program after it), a run
    step = ((doc.get("timings") or {}).get("steps") or {}).get("releases") or {}
    searched = step.get("seconds", warm)
    a_run = searched / s["runs"]
    return [Check("timing bisection within ⌈log2 n⌉ + 2 releases measured and ≤ 2 re-measures",
                  f"{s['probes']} releases measured (limit {s['limit']['probes']}), "
                  f"{s['remeasures']} re-measured",
                  s["probes"] <= s["limit"]["probes"] and s["remeasures"] <= 2),
            Check("a release's timing measurement (five runs of a call ≤ 0.2 s) ≤ 3 s, "
                  "its environment ready",
                  f"{5 * a_run:.2f} s a release ({a_run:.2f} s a run: the search's "
                  f"{searched:.1f} s over its {s['runs']} runs, warm)", 5 * a_run <= 3.0)]


SCENARIOS = {
    # The whole `nox -s repro`: cold (a fresh cache and nox envdir: catalogue, nox virtualenvs
    # and JAX environments made from scratch), warm (every result stored), warm with
    # --remeasure (environments ready, the harness run again), and that one release at a time.
    "repro": Scenario("nox -s repro ({releases} releases)", (
        "nox", "-f", str(NOXFILE), "-s", "repro", "--envdir", "{envdir}", "--", "--reports",
        "{reports}", "--backend", "{backend}"), (
        Step("cold", "cold: a fresh toolkit cache (JAX_SCAN_REPRO_CACHE) and nox envdir, "
                     "uv's download cache kept, releases side by side"),
        Step("warm", "warm: environments and results stored, nothing to run"),
        Step("remeasured", "warm, --remeasure: environments ready", ("--remeasure",)),
        Step("one at a time", "warm, --remeasure --jobs 1 (one release at a time)",
             ("--remeasure", "--jobs", "1"))), repro_checks),
    # 21 CPU releases; the CPU change is 0.5.0 -> 0.5.1. Does probing two at once help here?
    "bisect": Scenario("bisect 0.5.0 … 0.10.2 ({backend})", (
        "jaxbisect", "--from", "0.5.0", "--to", "0.10.2", "--backend", "{backend}",
        "--no-evidence", *BISECTION), (
        COLD, WARM, STORED, Step("jobs 2", "warm, --jobs 2", ("--jobs", "2"), drop_results=True)),
        bisect_checks),
    # The 29 CPU releases installable for Python 3.11, default options (as typed: the
    # evidence beside the tables, one process a core), then --minimize.
    "long": Scenario(f"bisect 0.4.30 … 0.10.2 (cpu), {WITH_EVIDENCE}", (
        "jaxbisect", "--from", "0.4.30", "--to", "0.10.2", "--backend", "cpu", *BISECTION), (
        TYPED_COLD, TYPED_STORED, Step("minimize", "--minimize on the two releases found",
                                       ("--no-evidence", "--minimize"), on_pair=True)),
        long_checks),
    # A timing case bisected by run_time over its recorded range.
    "case": Scenario(f"bisect 0.4.30 … 0.4.33 by run_time of {CASE.stem}", (
        "jaxbisect", "--from", "0.4.30", "--to", "0.4.33", "--backend", "cpu", "--case",
        str(CASE), "--no-evidence", *BISECTION), (COLD, WARM, STORED), case_checks),
}


COMMIT_RATIO = 1.2  # a commit measured costs at most 1.2× a release of the same question


def bench_commit_probe(args: argparse.Namespace, scratch: Path, say: Say) -> Results:
    """A commit probe against a release probe of the same question (the scan case at its
    search size), alternated in one run: jax 0.5.0 and 0.5.1 as releases; as commits, 0.5.1's
    last commit on jaxlib 0.5.0 and the one halfway, each switched to in turn (a checkout
    switch, nothing installed)."""
    from jaxbisect.lab.jax_history import cached_clone, commit_range
    from jaxbisect.lab.lab import RealLab
    from jaxbisect.search.question import question_from, with_params
    from jaxbisect.stages.commits import commit_release
    from jaxbisect.stages.releases import smaller_size

    what = f"one {{kind}} measured, scan case {SEARCH_SIZES} (cpu)"
    repo = args.jax_repo or (cached_clone() if (cached_clone() / "HEAD").is_file() else None)
    if repo is None:
        return Results([Row(what, "commit", float("nan"), "not measured: no jax clone "
                                                           "(--jax-repo PATH)")], [])
    catalogue = load_catalogue()
    old, new = catalogue.get("0.5.0"), catalogue.get("0.5.1")
    span = commit_range(Path(repo), "0.5.0", "0.5.1", str(old.jaxlib))
    commits = [commit_release(old, span.candidates[i])
               for i in (len(span.candidates) // 2, -1)]
    asked = question_from(None, str(REPO / "repro" / "cases" / "scan_growth.py"), [], ())
    question = with_params(asked, smaller_size(asked))
    times: dict[str, list[float]] = {"release": [], "commit": [], "ahead": []}
    with patch.dict(os.environ, JAX_SCAN_REPRO_CACHE=str(scratch / "probe-cache")):
        lab = RealLab(lambda _: None, remeasure=True)
        for release in (old, new):  # environments first, and one run each to warm them
            lab.run(release, CPU, question, 0, timeout=600)
        for k in range(6):
            release, commit = (old, new)[k % 2], commits[k % 2]
            # As the search does: the next commit's checkout made ready ahead of its probe.
            times["ahead"].append(_timed(lambda c=commit: lab.environment(c, CPU))[0])
            for kind, candidate in (("release", release), ("commit", commit)):
                say(f"bench: a {kind} probe, jax {candidate.version} ({k + 1} of 6) …")
                seconds, run = _timed(lambda r=candidate, n=k + 1: lab.run(
                    r, CPU, question, n, timeout=600))
                if run.status != "ok":
                    raise UserError(f"the {kind} probe of jax {candidate.version} failed: "
                                    f"{run.error}")
                times[kind].append(seconds)
    median = {kind: statistics.median(t) for kind, t in times.items()}
    ratio = median["commit"] / median["release"]
    notes = {"release": "jax 0.5.0 and 0.5.1, their environments ready",
             "commit": "jax's Python of two of 0.5.1's commits (266 apart) on jaxlib 0.5.0, "
                       "each checkout made ready ahead as the search does",
             "ahead": "making a commit's checkout ready (switch, compile the changed modules "
                      "at low priority): done while the previous run runs"}
    rows = [Row(what.format(kind=kind) if kind != "ahead" else
                "a commit's checkout, made ready ahead of its run",
                kind if kind != "ahead" else "commit", median[kind],
                f"median of {len(t)}, alternated ({', '.join(f'{x:.2f}' for x in t)} s); "
                + notes[kind], median[kind] / args.harness_seconds)
            for kind, t in times.items()]
    return Results(rows, [Check(f"a commit measured ≤ {COMMIT_RATIO}× a release measured, the same "
                                f"question", f"{ratio:.2f}× ({median['commit']:.2f} s against "
                                f"{median['release']:.2f} s)", ratio <= COMMIT_RATIO)])


def bench_harness(args: argparse.Namespace, scratch: Path, say: Say) -> float:
    """Seconds of one harness run (the bench's unit): ``python -m repro`` under jax 0.10.2 at
    the report's sizes, from the repo root as a maintainer runs it; the median of three."""
    release = load_catalogue().get(HARNESS_RELEASE)
    with patch.dict(os.environ, JAX_SCAN_REPRO_CACHE=str(scratch / "harness-cache")):
        python = ensure_environment(release, args.backend, progress=lambda _: None).python
    # As the toolkit runs its harness (harness_environ): no PYTHON* setting of the caller's, so
    # a run writes its bytecode as on any machine and the median is a warm run.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JAX_"))}
    platform = args.backend.harness_args()
    times = []
    for attempt in range(3):
        say(f"bench: one harness run, jax {HARNESS_RELEASE} ({attempt + 1} of 3) …")
        seconds, _ = _timed(lambda: _run([str(python), "-m", "repro", "--quiet", *platform],
                                         env=env, cwd=REPO))
        times.append(seconds)
    unit = statistics.median(times)
    say(f"bench: one harness run: {unit:.2f} s (runs: "
        f"{', '.join(f'{t:.2f}' for t in times)})")
    args.harness_runs = [round(t, 3) for t in times]  # recorded beside their median
    return unit


def _busy_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy since boot (every process, every core)."""
    try:
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    own = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(r.ru_utime + r.ru_stime for r in own)


# Each benchmark takes the parsed arguments, a scratch folder and a progress callback, and
# returns rows for the table and target checks; --only picks some.
BENCHMARKS: dict[str, Callable[[argparse.Namespace, Path, Say], Results]] = {
    "env": bench_environments,
    "commit": bench_commit_probe,
    **{name: partial(run_scenario, name, scenario) for name, scenario in SCENARIOS.items()},
}


# -- the report -------------------------------------------------------------------------------


BENCH_KIND = "bench"


def record(results: Results, args: argparse.Namespace, command: str, now: datetime,
           sharing: str = "", machine: str | None = None) -> dict:
    """What a bench measured, as written beside its markdown (``reports/bench.json``): every
    row and check with its figures, the unit, the run's date, command and machine; the
    markdown is rendered from it (:func:`report_text`), never the other way."""
    return {"kind": BENCH_KIND, "schema": 1, "command": command,
            "run": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "backend": args.backend,
            "cores": os.cpu_count(),
            "harness": {"release": HARNESS_RELEASE,
                        "seconds": getattr(args, "harness_seconds", 0.0),
                        "runs": getattr(args, "harness_runs", [])},
            "sharing": sharing,
            "rows": [{"what": r.what, "tool": r.how,
                      "seconds": None if r.seconds != r.seconds else r.seconds,
                      "harness_runs": r.runs, "how": r.note} for r in results.rows],
            "checks": [{"target": c.target, "measured": c.figure, "met": c.met}
                       for c in results.checks],
            "machine": machine_description() if machine is None else machine}


def report_text(doc: dict) -> str:
    """The markdown of a bench's record (:func:`record`): it says nothing the record lacks."""
    table = tabulate([[words_now(r["what"]), r["tool"],
                       "–" if r["seconds"] is None else f"{r['seconds']:.2f}",
                       "" if r["harness_runs"] is None else f"{r['harness_runs']:.2f}", r["how"]]
                      for r in doc["rows"]],
                     headers=["what", "tool", "seconds", "harness runs", "how"],
                     tablefmt="github", disable_numparse=True)
    checks = tabulate([[words_now(c["target"]), c["measured"], "met" if c["met"] else "MISSED"]
                       for c in doc["checks"]],
                      headers=["target", "measured", ""], tablefmt="github",
                      disable_numparse=True)
    run = datetime.strptime(doc["run"], "%Y-%m-%dT%H:%M:%SZ")
    runs = doc["harness"].get("runs") or []
    return "\n".join([
        "# Benchmarks", "",
        "Written by `nox -s bench` (`jaxbisect.tools.bench`) from `bench.json` beside it (the "
        "records); do not edit by hand.", "",
        f"- Command: `{doc['command']}`",
        f"- Run: {run:%Y-%m-%d %H:%M} UTC; backend {doc['backend']}; {doc['cores']} cores",
        f"- One harness run (`python -m repro` under jax {doc['harness']['release']} at the "
        f"report's sizes" + (f", the median of {len(runs)} in this run: "
                             f"{', '.join(f'{t:.2f}' for t in runs)} s" if runs else "")
        + f"): {doc['harness']['seconds']:.2f} s; a row's *harness runs* are its seconds over "
        f"this one",
        *([f"- {doc['sharing']}"] if doc.get("sharing") else []),
        "- The *tool* column: the installer (uv, pip), or, for one release or commit "
        "measured, which of the two it ran (*release*, *commit*)",
        "- Bisect rows: a *round* is one step of the search, the releases it measures side by "
        "side (--jobs at a time); *limit P in R*: the most releases (P) and rounds (R) the search "
        "takes when no release is skipped (the two ends, then halving the range between)",
        "", table, "", checks, "",
        "<details><summary>Machine</summary>", "", "```text", doc["machine"], "```", "",
        "</details>", ""])


def render(path: Path) -> Path:
    """``--render bench.json``: the markdown beside a bench's record remade from it, measuring
    nothing."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a bench record ({exc})") from None
    if not isinstance(doc, dict) or doc.get("kind") != BENCH_KIND:
        raise UserError(f"{path}: not a bench record (kind {BENCH_KIND!r})")
    out = path.with_suffix(".md")
    write_atomic(out, report_text(doc))
    return out


def _sharing(busy: float | None, own: float, wall: float) -> str:
    """Whether other processes used the CPU while the bench ran, and how much."""
    now = _busy_seconds()
    if busy is None or now is None:
        return ""
    others = max(0.0, (now - busy) - (_own_seconds() - own))
    share = others / (wall * (os.cpu_count() or 1))
    if share < 0.05:
        return (f"Machine to itself: other processes used {others:.0f} CPU s "
                f"({share:.0%} of its cores) during the bench")
    return (f"**Shared machine**: other processes used {others:.0f} CPU s ({share:.0%} of its "
            f"{os.cpu_count()} cores over {wall:.0f} s) while the bench ran, so absolute "
            f"times are slower than on an idle machine; the ratios (harness runs, measured in "
            f"the same run) are what compare")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=sorted(BENCHMARKS), action="append",
                   help="run only this benchmark (repeatable; default: all)")
    p.add_argument("--release", default="0.5.0", help="the release whose environment is timed")
    p.add_argument("--backend", choices=backends.choices(), default="cpu",
                   help="backend of the nox -s repro runs (default cpu)")
    p.add_argument("--fresh-machine", action="store_true",
                   help="cold nox -s repro with an empty uv cache too (downloads every wheel)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    p.add_argument("--jax-repo", type=Path, default=None,
                   help="a jax clone for the commit probe (default: the toolkit's cached one)")
    p.add_argument("--render", type=Path, default=None, metavar="BENCH.json",
                   help="rewrite the markdown beside a bench's record from it; runs nothing")
    p.add_argument("--scratch", type=Path, default=None,
                   help="where the temporary caches and environments go (default: a temp dir)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.render is not None:
        try:
            say(f"bench: rendered {render(args.render)}")
        except UserError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return exc.exit_status
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="jaxbisect-bench-", dir=args.scratch))
    results = Results([], [])
    busy, own, started = _busy_seconds(), _own_seconds(), time.perf_counter()
    try:
        args.backend = resolve_backend(args.backend)
        args.harness_seconds = bench_harness(args, scratch, say)
        for name in args.only or list(BENCHMARKS):
            part = BENCHMARKS[name](args, scratch, say)
            results.rows += part.rows
            results.checks += part.checks
    except UserError as exc:
        print(f"{PROG}: error: {exc} (logs in {scratch})", file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        shutil.rmtree(scratch, ignore_errors=True)
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    shutil.rmtree(scratch, ignore_errors=True)
    command = shlex.join(["nox", "-s", "bench", *(["--", *shown_argv(argv)] if argv else [])])
    doc = record(results, args, command, datetime.now(UTC),
                 _sharing(busy, own, time.perf_counter() - started))
    write_atomic(args.out.with_suffix(".json"), json.dumps(doc, indent=1) + "\n")
    text = report_text(doc)
    write_atomic(args.out, text)
    print(text)
    say(f"bench: written to {args.out} and its record, {args.out.with_suffix('.json')}")
    return 0


def shown_argv(argv: list[str]) -> list[str]:
    """The bench's arguments as a page shows them: a jax clone's path (this machine's) as
    the placeholder a reader puts theirs in."""
    out, given = [], False
    for a in argv:
        if given:
            out.append("path/to/jax")
        elif a.startswith("--jax-repo="):
            out.append("--jax-repo=path/to/jax")
        else:
            out.append(a)
        given = a == "--jax-repo"
    return out


if __name__ == "__main__":
    sys.exit(main())
