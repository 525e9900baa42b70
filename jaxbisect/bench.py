"""``python -m jaxbisect.bench``: how long environments and the main job take, cold and warm.

Side by side, in one run (``nox -s bench``):

- one release's environment (jax 0.5.0 unless ``--release``), made with uv (as
  ``environments.ensure_environment`` does) and with pip (``python -m venv`` + ``pip install``
  of the exact versions uv resolved, so both install the same set): cold, with an empty package
  cache in a temporary folder; warm, a new environment from the cache the cold run filled; and
  ready, asking again for the finished environment (what every later run does);
- the whole ``nox -s repro``: cold (a fresh ``JAX_SCAN_REPRO_CACHE`` and nox envdir: catalogue,
  nox virtualenvs and JAX environments made from scratch; uv's cache as it is, or empty too with
  ``--fresh-machine``), warm (every result stored), and warm with ``--remeasure`` (environments
  ready, the harness run again), with the share of its time spent outside the harness, and
  the same with ``--jobs 1`` (one release at a time, as before releases ran side by side);
- a bisection over 21 releases: cold, warm and fully stored, with its probes and rounds against
  the limit of the search, and warm with ``--jobs 2`` (does probing two at once help here?).

Every time is also given in *harness runs*: one ``python -m repro`` under jax 0.10.2 at the
report's sizes, timed in the same run (the median of three), so that figures from a busy or a
shared machine still compare. The report says how much CPU other processes used meanwhile.

Prints a markdown table and writes it to ``reports/bench.md``. Nothing it makes outlives it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name
from tabulate import tabulate

from .catalogue import Release, load_catalogue
from .environments import ensure_environment, resolve_backend
from .errors import UserError
from .files import write_atomic
from .machine import default_jobs, machine_description
from .question import Run

PROG = "python -m jaxbisect.bench"
REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path("reports") / "bench.md"
READY_TARGET_S = 3.0  # a warm environment is ready in under 3 s
OUTSIDE_TARGET = 0.10  # a warm `nox -s repro` spends under 10 % of its time outside the harness
HARNESS_RELEASE = "0.10.2"  # the unit: one harness run of this release at the report's sizes
BISECT_COLD_RUNS = 4.0  # a cold bisection costs at most 4 harness runs
BISECT_STORED_RUNS = 0.1  # a fully stored rerun at most a tenth of one
REPRO_BEFORE_S = 170.0  # a cold `nox -s repro` on two cores before releases ran side by side


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


@contextmanager
def _environ(**values: str) -> Iterator[None]:
    """Set environment variables for the duration (this process and what it starts)."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


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
         log: Path | None = None) -> None:
    done = subprocess.run(command, env=env, cwd=cwd, check=False, capture_output=True, text=True)
    if log is not None:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(f"$ {shlex.join(command)}\n{done.stdout}{done.stderr}\n")
    if done.returncode != 0:
        tail = (done.stderr.strip() or done.stdout.strip()).splitlines()[-5:]
        raise UserError(f"{shlex.join(command[:4])} … failed (exit {done.returncode}): "
                        + " | ".join(tail))


# -- one release's environment: uv against pip ------------------------------------------------


def bench_environments(args: argparse.Namespace, scratch: Path, say: Say) -> Results:
    release: Release = load_catalogue().get(args.release)
    what = f"environment, jax {release.version} (cpu)"
    rows, checks = [], []
    uv_cache = scratch / "uv-cache"

    def uv_env(name: str):
        with _environ(JAX_SCAN_REPRO_CACHE=str(scratch / name), UV_CACHE_DIR=str(uv_cache)):
            return _timed(lambda: ensure_environment(release, "cpu", progress=lambda _: None))

    say(f"bench: {what} with uv, cold …")
    cold, env = uv_env("uv-cold")
    rows.append(Row(what, "uv", cold, "cold: empty uv cache, new environment"))
    say(f"bench: {what} with uv, warm …")
    warm, env = uv_env("uv-warm")
    rows.append(Row(what, "uv", warm, "warm: uv cache filled, new environment"))
    ready, again = uv_env("uv-warm")
    assert again.reused, "the finished environment was not reused"
    rows.append(Row(what, "uv", ready, "ready: the finished environment, asked for again"))
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

    say(f"bench: {what} with pip, cold …")
    pip_cold = pip_install(scratch / "pip-cold", create=True)
    rows.append(Row(what, "pip", pip_cold, "cold: empty pip cache, python -m venv + pip install"))
    say(f"bench: {what} with pip, warm …")
    pip_warm = pip_install(scratch / "pip-warm", create=True)
    rows.append(Row(what, "pip", pip_warm, "warm: pip cache filled, new environment"))
    pip_ready = pip_install(scratch / "pip-warm", create=False)
    rows.append(Row(what, "pip", pip_ready, "ready: pip install again, all already satisfied"))
    same = _distributions(scratch / "pip-warm")
    same = {k: v for k, v in same.items() if k not in {"pip", "setuptools", "wheel"}}
    if same != _distributions(env.path):
        rows.append(Row(what, "pip", float("nan"), "warning: pip installed a different set"))
    say(f"bench: pins used for both: {' '.join(pins)}")
    return Results(rows, checks)


# -- the whole main job -----------------------------------------------------------------------


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


def bench_repro(args: argparse.Namespace, scratch: Path, say: Say) -> Results:
    noxfile = REPO / "noxfile.py"
    if not noxfile.is_file():
        raise UserError(f"no noxfile at {noxfile}: run the bench from a clone of the project")
    reports, envdir = scratch / "repro-reports", scratch / "nox-envs"
    env = {**os.environ, "JAX_SCAN_REPRO_CACHE": str(scratch / "repro-cache")}
    if args.fresh_machine:
        env["UV_CACHE_DIR"] = str(scratch / "repro-uv-cache")
    log = scratch / "nox.log"
    base = [sys.executable, "-m", "nox", "-f", str(noxfile), "-s", "repro", "--envdir",
            str(envdir), "--", "--reports", str(reports), "--backend", args.backend]
    what = f"nox -s repro ({len(_default_releases(noxfile))} releases)"
    unit = args.harness_seconds
    rows, checks = [], []

    cache = scratch / "repro-cache"
    started: list[float] = []

    def nox(extra: list[str], label: str) -> float:
        say(f"bench: {what}, {label} …")
        started.append(time.time())
        seconds, _ = _timed(lambda: _run([*base, *extra], env=env, cwd=REPO, log=log))
        say(f"bench: {what}, {label}: {seconds:.1f} s")
        return seconds

    def harness_seconds() -> float:  # of the last nox run
        return _harness_seconds(cache, started[-1])

    cold_label = ("cold: fresh cache, nox envdir and uv cache (a fresh machine)"
                  if args.fresh_machine else "cold: fresh JAX_SCAN_REPRO_CACHE and nox envdir")
    # As in a fresh clone: reports/repro/ as committed (the sweep reads how long each release
    # took from it, to start the longest first), nothing measured in the cache.
    shutil.rmtree(reports, ignore_errors=True)
    shutil.copytree(REPO / "reports" / "repro", reports)
    cold = nox([], "cold")
    harness = harness_seconds()
    rows.append(Row(what, "uv", cold, f"{cold_label}; harness {harness:.1f} s, releases "
                                      f"side by side", cold / unit))
    stored = nox([], "warm")
    rows.append(Row(what, "uv", stored, "warm: environments and results stored, nothing to run",
                    stored / unit))
    remeasured = nox(["--remeasure"], "warm, remeasured")
    harness = harness_seconds()
    rows.append(Row(what, "uv", remeasured,
                    f"warm, --remeasure: environments ready, harness {harness:.1f} s of work",
                    remeasured / unit))
    one_at_a_time = nox(["--remeasure", "--jobs", "1"], "warm, remeasured, one at a time")
    harness_one = harness_seconds()
    outside_one = (one_at_a_time - harness_one) / one_at_a_time
    rows.append(Row(what, "uv", one_at_a_time,
                    f"warm, --remeasure --jobs 1 (one release at a time): harness "
                    f"{harness_one:.1f} s, {outside_one:.1%} outside it", one_at_a_time / unit))
    checks.append(Check(f"warm nox -s repro --jobs 1: < {OUTSIDE_TARGET:.0%} of its time "
                        f"outside the harness", f"{outside_one:.1%} "
                        f"({one_at_a_time - harness_one:.1f} s of {one_at_a_time:.1f} s)",
                        outside_one < OUTSIDE_TARGET))
    checks.append(Check(f"nox -s repro cold ≤ half of {REPRO_BEFORE_S:.0f} s "
                        + ("(fresh machine)" if args.fresh_machine else "(uv cache warm)"),
                        f"{cold:.0f} s ({cold / unit:.1f} harness runs; releases side by side "
                        f"{one_at_a_time / remeasured:.2f}× as fast as one at a time, warm)",
                        cold <= REPRO_BEFORE_S / 2))
    checks.append(Check("nox -s repro warm < 2 min", f"{remeasured:.0f} s remeasured, "
                        f"{stored:.1f} s stored", remeasured < 120))
    return Results(rows, checks)


def _default_releases(noxfile: Path) -> list[str]:
    """DEFAULT_RELEASES as the noxfile lists them (read, not imported: it imports nox)."""
    listing = subprocess.run([sys.executable, "-m", "nox", "-f", str(noxfile), "-l", "--json",
                              "-s", "repro_release"], check=False, capture_output=True, text=True,
                             cwd=REPO)
    try:
        return [s["call_spec"]["release"] for s in json.loads(listing.stdout)]
    except (ValueError, KeyError, TypeError):
        return []


# -- a bisection ------------------------------------------------------------------------------

BISECT_RANGE = ("0.5.0", "0.10.2")  # 21 CPU releases here; the CPU change is 0.5.0 -> 0.5.1


def bench_bisect(args: argparse.Namespace, scratch: Path, say: Say) -> Results:
    """One bisection over a fixed range: cold (no environments, no results), warm
    (environments ready, results dropped), fully stored, and warm with two probes a round;
    with the probes and rounds each took against the search's limit."""
    cache = scratch / "bisect-cache"
    env = {**os.environ, "JAX_SCAN_REPRO_CACHE": str(cache)}
    if args.fresh_machine:
        env["UV_CACHE_DIR"] = str(scratch / "bisect-uv-cache")
    start, end = BISECT_RANGE
    argv = ["--from", start, "--to", end, "--backend", args.backend, "--no-evidence",
            "--reports", str(scratch / "bisect")]
    what = f"bisect {start} … {end} ({args.backend})"
    unit = args.harness_seconds
    rows, checks = [], []

    def bisection(label: str, *extra: str) -> tuple[float, dict]:
        return _timed_bisection([*argv, *extra], env, f"{what}, {label}", say)

    def search(doc: dict) -> str:
        s = doc["search"]
        return (f"{s['probes']} probes in {len(s['rounds'])} rounds (limit {s['limit']['probes']} "
                f"in {s['limit']['rounds']}, --jobs {s['jobs']})")

    cold, doc = bisection("cold", "--jobs", "1")
    answer = _answer(doc)
    full = [p["jax"] for p in doc["probes"] if p.get("compare")]  # measured at full size
    rows.append(Row(what, "uv", cold, f"cold: no environments, no stored results; "
                                      f"{search(doc)}; answer {answer}; full table for "
                                      f"{', '.join(full)}", cold / unit))
    shutil.rmtree(cache / "results", ignore_errors=True)
    warm, _ = bisection("warm", "--jobs", "1")
    rows.append(Row(what, "uv", warm, "warm: environments ready, results dropped", warm / unit))
    stored, again = bisection("stored", "--jobs", "1")
    rows.append(Row(what, "uv", stored, _stored_note(again), stored / unit))
    shutil.rmtree(cache / "results", ignore_errors=True)
    two, doc_two = bisection("warm, two probes a round", "--jobs", "2")
    rows.append(Row(what, "uv", two, f"warm, --jobs 2: {search(doc_two)}", two / unit))
    checks.append(Check(f"cold bisection ≤ {BISECT_COLD_RUNS:.0f} harness runs",
                        f"{cold / unit:.2f} ({cold:.1f} s; one harness run {unit:.1f} s)",
                        cold <= BISECT_COLD_RUNS * unit))
    checks.append(Check(f"fully stored rerun ≤ {BISECT_STORED_RUNS} harness runs",
                        f"{stored / unit:.3f} ({stored:.2f} s)",
                        stored <= BISECT_STORED_RUNS * unit))
    s = doc["search"]
    checks.append(Check("probes and rounds within ⌈log2 n⌉ + 2",
                        f"{s['probes']} probes, {len(s['rounds'])} rounds; limit "
                        f"{s['limit']['probes']}",
                        max(s["probes"], len(s["rounds"])) <= s["limit"]["probes"]))
    checks.append(Check(f"--jobs 2 against 1 on {os.cpu_count()} cores (default here: "
                        f"{default_jobs()})",
                        f"{two:.1f} s against {warm:.1f} s warm: "
                        + ("helps" if two < warm * 0.95 else "does not help"),
                        (default_jobs() == 1) == (two >= warm * 0.95)))
    return Results(rows, checks)


def _search_size(doc: dict) -> str:
    """The size the search probed at, where smaller than asked (the ends at the full size)."""
    params = (doc.get("search_size") or {}).get("params") or {}
    return ", ".join(f"{k} {v}" for k, v in params.items()) or "the size asked"


def _answer(doc: dict) -> str:
    """A bisection document's answer in a bench row: the pair found, else its status."""
    return (f"{doc['last_old']['jax']} → {doc['first_new']['jax']}" if doc["first_new"]
            else doc["status"])


def _stored_note(doc: dict) -> str:
    return (f"fully stored rerun: {sum(p['cached'] for p in doc['probes'])} of "
            f"{len(doc['probes'])} probes stored")


def _timed_bisection(argv: list[str], env: dict, label: str, say: Say) -> tuple[float, dict]:
    """``python -m jaxbisect ARGV --json`` in a subprocess: its seconds and its document."""
    say(f"bench: {label} …")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "jaxbisect", *argv, "--json"], env=env,
                          cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise UserError(f"{label} failed: {done.stderr.strip().splitlines()[-1:]}")
    say(f"bench: {label}: {seconds:.1f} s")
    return seconds, json.loads(done.stdout)


def bench_long_bisection(args: argparse.Namespace, scratch: Path, say: Say) -> Results:
    """The 29 CPU releases 0.4.30 … 0.10.2 with default options, evidence included: cold
    (no environments, no results; uv's cache as it is) and fully stored; then --minimize on
    the pair it found."""
    cache = scratch / "long-cache"
    env = {**os.environ, "JAX_SCAN_REPRO_CACHE": str(cache)}
    start, end = LONG_RANGE
    argv = ["--from", start, "--to", end, "--backend", "cpu", "--jobs", "1",
            "--reports", str(scratch / "long")]
    what = f"bisect {start} … {end} (cpu), evidence included"
    unit = args.harness_seconds
    cold, doc = _timed_bisection(argv, env, f"{what}, cold", say)
    answer = _answer(doc)
    s = doc["search"]
    rows = [Row(what, "uv", cold, f"cold: {s['probes']} probes (limit {s['limit']['probes']}), "
                                  f"search probes at {_search_size(doc)}; answer {answer}",
                cold / unit)]
    stored, again = _timed_bisection(argv, env, f"{what}, stored", say)
    rows.append(Row(what, "uv", stored, _stored_note(again), stored / unit))
    minimize, small = _timed_bisection(
        ["--from", doc["last_old"]["jax"], "--to", doc["first_new"]["jax"], "--backend", "cpu",
         "--no-evidence", "--minimize", "--reports", str(scratch / "long")], env,
        "--minimize on the pair", say)
    m = small.get("minimal") or {}
    rows.append(Row(f"--minimize {doc['last_old']['jax']} → {doc['first_new']['jax']}", "uv",
                    minimize, f"{m.get('trials')} trials: {m.get('params')}",
                    minimize / unit))
    checks = [Check(f"29-release bisection, evidence included, cold ≤ {BISECT_COLD_RUNS:.0f} "
                    f"harness runs", f"{cold / unit:.2f} ({cold:.1f} s); answer {answer}",
                    cold <= BISECT_COLD_RUNS * unit and answer == "0.5.0 → 0.5.1")]
    return Results(rows, checks)


def bench_case(args: argparse.Namespace, scratch: Path, say: Say) -> Results:
    """A timing case bisected by run_time (repro/cases/while_loop_cpu_slowdown.py over its
    recorded range): cold, warm (environments ready, results dropped) and fully stored."""
    cache = scratch / "case-cache"
    env = {**os.environ, "JAX_SCAN_REPRO_CACHE": str(cache)}
    case = REPO / "repro" / "cases" / "while_loop_cpu_slowdown.py"
    start, end = CASE_RANGE
    argv = ["--from", start, "--to", end, "--backend", "cpu", "--case", str(case),
            "--no-evidence", "--reports", str(scratch / "case")]
    what = f"bisect {start} … {end} by run_time of {case.stem}"
    unit = args.harness_seconds
    cold, doc = _timed_bisection(argv, env, f"{what}, cold", say)
    shutil.rmtree(cache / "results", ignore_errors=True)
    warm, warm_doc = _timed_bisection(argv, env, f"{what}, warm", say)
    stored, again = _timed_bisection(argv, env, f"{what}, stored", say)
    s = warm_doc["search"]
    runs = sum(len(p["runs"]) for p in warm_doc["probes"])
    answer = _answer(doc)
    rows = [Row(what, "uv", cold, f"cold; answer {answer}", cold / unit),
            Row(what, "uv", warm, f"warm: {s['probes']} probes, {s['remeasures']} "
                                  f"re-measured, {runs} runs (processes) in all: "
                                  f"{warm / runs:.2f} s a run", warm / unit),
            Row(what, "uv", stored, "fully stored rerun", stored / unit)]
    checks = [Check("timing bisection within ⌈log2 n⌉ + 2 probes and ≤ 2 re-measures",
                    f"{s['probes']} probes (limit {s['limit']['probes']}), {s['remeasures']} "
                    f"re-measured", s["probes"] <= s["limit"]["probes"]
                    and s["remeasures"] <= 2),
              Check("a timing probe (five runs of a call ≤ 0.2 s) ≤ 3 s beyond its "
                    "environment", f"{5 * warm / runs:.2f} s a probe ({warm / runs:.2f} s a "
                                   f"run, warm)", 5 * warm / runs <= 3.0)]
    return Results(rows, checks)


def bench_harness(args: argparse.Namespace, scratch: Path, say: Say) -> float:
    """Seconds of one harness run (the bench's unit): ``python -m repro`` under jax 0.10.2 at
    the report's sizes, from the repo root as a maintainer runs it; the median of three."""
    release = load_catalogue().get(HARNESS_RELEASE)
    with _environ(JAX_SCAN_REPRO_CACHE=str(scratch / "harness-cache")):
        python = ensure_environment(release, args.backend, progress=lambda _: None).python
    # As the toolkit runs its harness (harness_environ): no PYTHON* setting of the caller's, so
    # a run writes its bytecode as on any machine and the median is a warm run.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "JAX_"))}
    platform = "gpu" if args.backend == "cuda12" else "cpu"
    times = []
    for attempt in range(3):
        say(f"bench: one harness run, jax {HARNESS_RELEASE} ({attempt + 1} of 3) …")
        seconds, _ = _timed(lambda: _run([str(python), "-m", "repro", "--quiet", "--backend",
                                          platform], env=env, cwd=REPO))
        times.append(seconds)
    unit = sorted(times)[1]
    say(f"bench: one harness run: {unit:.2f} s (runs: "
        f"{', '.join(f'{t:.2f}' for t in times)})")
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
    "repro": bench_repro,
    "bisect": bench_bisect,
    "long": bench_long_bisection,
    "case": bench_case,
}
LONG_RANGE = ("0.4.30", "0.10.2")   # 29 CPU releases installable for Python 3.11
CASE_RANGE = ("0.4.30", "0.4.33")


# -- the report -------------------------------------------------------------------------------


def report_text(results: Results, args: argparse.Namespace, command: str, now: datetime,
                sharing: str = "") -> str:
    table = tabulate([[r.what, r.how, "–" if r.seconds != r.seconds else f"{r.seconds:.2f}",
                       "" if r.runs is None else f"{r.runs:.2f}", r.note]
                      for r in results.rows],
                     headers=["what", "tool", "seconds", "harness runs", "how"],
                     tablefmt="github", disable_numparse=True)
    checks = tabulate([[c.target, c.figure, "met" if c.met else "MISSED"]
                       for c in results.checks],
                      headers=["target", "measured", ""], tablefmt="github",
                      disable_numparse=True)
    return "\n".join([
        "# Benchmarks", "",
        "Written by `nox -s bench` (`jaxbisect.bench`); do not edit by hand.", "",
        f"- Command: `{command}`",
        f"- Run: {now:%Y-%m-%d %H:%M} UTC; backend {args.backend}; {os.cpu_count()} cores",
        f"- One harness run (`python -m repro` under jax {HARNESS_RELEASE} at the report's "
        f"sizes, median of three in this run): {getattr(args, 'harness_seconds', 0):.2f} s",
        *([f"- {sharing}"] if sharing else []),
        "", table, "", checks, "",
        "<details><summary>Machine</summary>", "", "```text", machine_description(), "```", "",
        "</details>", ""])


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
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=sorted(BENCHMARKS), action="append",
                   help="run only this benchmark (repeatable; default: all)")
    p.add_argument("--release", default="0.5.0", help="the release whose environment is timed")
    p.add_argument("--backend", choices=("auto", "cpu", "cuda12"), default="cpu",
                   help="backend of the nox -s repro runs (default cpu)")
    p.add_argument("--fresh-machine", action="store_true",
                   help="cold nox -s repro with an empty uv cache too (downloads every wheel)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}")
    p.add_argument("--scratch", type=Path, default=None,
                   help="where the temporary caches and environments go (default: a temp dir)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

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
    command = shlex.join(["nox", "-s", "bench", *(["--", *argv] if argv else [])])
    text = report_text(results, args, command, datetime.now(UTC),
                       _sharing(busy, own, time.perf_counter() - started))
    write_atomic(args.out, text)
    print(text)
    say(f"bench: written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
