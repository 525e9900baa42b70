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
  ready, the harness run again), with the share of its time spent outside the harness.

Prints a markdown table and writes it to ``reports/bench.md``. Nothing it makes outlives it.
"""

from __future__ import annotations

import argparse
import json
import os
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
from .machine import machine_description
from .probe import Measurement

PROG = "python -m jaxbisect.bench"
REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = Path("reports") / "bench.md"
READY_TARGET_S = 3.0  # a warm environment is ready in under 3 s
OUTSIDE_TARGET = 0.10  # a warm `nox -s repro` spends under 10 % of its time outside the harness


@dataclass(frozen=True)
class Row:
    what: str
    how: str
    seconds: float
    note: str = ""


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


def _harness_seconds(reports: Path) -> float:
    total = 0.0
    for path in reports.glob("*.json"):
        m = Measurement.from_json(json.loads(path.read_text(encoding="utf-8")))
        total += m.seconds
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
    rows, checks = [], []

    def nox(extra: list[str], label: str) -> float:
        say(f"bench: {what}, {label} …")
        seconds, _ = _timed(lambda: _run([*base, *extra], env=env, cwd=REPO, log=log))
        say(f"bench: {what}, {label}: {seconds:.1f} s")
        return seconds

    cold_label = ("cold: fresh cache, nox envdir and uv cache (a fresh machine)"
                  if args.fresh_machine else "cold: fresh JAX_SCAN_REPRO_CACHE and nox envdir")
    cold = nox([], "cold")
    harness = _harness_seconds(reports)
    rows.append(Row(what, "uv", cold, f"{cold_label}; harness {harness:.1f} s"))
    stored = nox([], "warm")
    rows.append(Row(what, "uv", stored, "warm: environments and results stored, nothing to run"))
    remeasured = nox(["--remeasure"], "warm, remeasured")
    harness = _harness_seconds(reports)
    outside = (remeasured - harness) / remeasured
    rows.append(Row(what, "uv", remeasured,
                    f"warm, --remeasure: environments ready, harness {harness:.1f} s, "
                    f"{outside:.1%} outside it"))
    checks.append(Check(f"warm nox -s repro: < {OUTSIDE_TARGET:.0%} of its time outside the "
                        f"harness", f"{outside:.1%} ({remeasured - harness:.1f} s of "
                        f"{remeasured:.1f} s)", outside < OUTSIDE_TARGET))
    checks.append(Check("nox -s repro cold < 10 min (fresh machine)" if args.fresh_machine
                        else "nox -s repro cold < 10 min (uv cache warm)",
                        f"{cold:.0f} s", cold < 600))
    checks.append(Check("nox -s repro warm < 2 min", f"{remeasured:.0f} s remeasured, "
                        f"{stored:.1f} s stored", remeasured < 120))
    return Results(rows, checks)


def _default_releases(noxfile: Path) -> list[str]:
    """DEFAULT_RELEASES as the noxfile lists them (read, not imported: it imports nox)."""
    listing = subprocess.run([sys.executable, "-m", "nox", "-f", str(noxfile), "-l", "--json",
                              "-s", "repro"], check=False, capture_output=True, text=True, cwd=REPO)
    try:
        return [s["call_spec"]["release"] for s in json.loads(listing.stdout)]
    except (ValueError, KeyError, TypeError):
        return []


# -- a bisection ------------------------------------------------------------------------------

BISECT_RANGE = ("0.5.0", "0.10.2")  # 21 CPU releases here; the CPU change is 0.5.0 -> 0.5.1


def bench_bisect(args: argparse.Namespace, scratch: Path, say: Say) -> Results:
    """One bisection over a fixed range: cold (no environments, no results), warm
    (environments ready, results dropped) and fully stored, with the probe count."""
    cache = scratch / "bisect-cache"
    env = {**os.environ, "JAX_SCAN_REPRO_CACHE": str(cache)}
    if args.fresh_machine:
        env["UV_CACHE_DIR"] = str(scratch / "bisect-uv-cache")
    start, end = BISECT_RANGE
    command = [sys.executable, "-m", "jaxbisect", "--from", start, "--to", end, "--backend",
               args.backend, "--no-evidence", "--json", "--reports", str(scratch / "bisect")]
    what = f"bisect {start} … {end} ({args.backend})"
    rows, checks = [], []

    def bisection(label: str) -> tuple[float, dict]:
        say(f"bench: {what}, {label} …")
        started = time.perf_counter()
        done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True,
                              check=False)
        seconds = time.perf_counter() - started
        if done.returncode not in (0, 1):
            raise UserError(f"the bisection failed: {done.stderr.strip().splitlines()[-1:]}")
        say(f"bench: {what}, {label}: {seconds:.1f} s")
        return seconds, json.loads(done.stdout)

    cold, doc = bisection("cold")
    answer = (f"{doc['last_old']['jax']} → {doc['first_new']['jax']}" if doc["first_new"]
              else doc["status"])
    probes = len(doc["probes"])
    rows.append(Row(what, "uv", cold, f"cold: no environments, no stored results; "
                                      f"{probes} probes; answer {answer}"))
    shutil.rmtree(cache / "results", ignore_errors=True)
    warm, _ = bisection("warm")
    rows.append(Row(what, "uv", warm, "warm: environments ready, results dropped"))
    stored, again = bisection("stored")
    rows.append(Row(what, "uv", stored, f"fully stored rerun: "
                                        f"{sum(p['cached'] for p in again['probes'])} of "
                                        f"{len(again['probes'])} probes stored"))
    checks.append(Check("fully stored bisection rerun takes seconds", f"{stored:.1f} s",
                        stored < 10))
    return Results(rows, checks)


# Each benchmark takes the parsed arguments, a scratch folder and a progress callback, and
# returns rows for the table and target checks; --only picks some.
BENCHMARKS: dict[str, Callable[[argparse.Namespace, Path, Say], Results]] = {
    "env": bench_environments,
    "repro": bench_repro,
    "bisect": bench_bisect,
}


# -- the report -------------------------------------------------------------------------------


def report_text(results: Results, args: argparse.Namespace, command: str, now: datetime) -> str:
    table = tabulate([[r.what, r.how, "–" if r.seconds != r.seconds else f"{r.seconds:.2f}",
                       r.note] for r in results.rows],
                     headers=["what", "tool", "seconds", "how"], tablefmt="github",
                     disable_numparse=True)
    checks = tabulate([[c.target, c.figure, "met" if c.met else "MISSED"]
                       for c in results.checks],
                      headers=["target", "measured", ""], tablefmt="github",
                      disable_numparse=True)
    return "\n".join([
        "# Benchmarks", "",
        "Written by `nox -s bench` (`jaxbisect.bench`); do not edit by hand.", "",
        f"- Command: `{command}`",
        f"- Run: {now:%Y-%m-%d %H:%M} UTC; backend {args.backend}",
        "", table, "", checks, "",
        "<details><summary>Machine</summary>", "", "```text", machine_description(), "```", "",
        "</details>", ""])


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
    try:
        args.backend = resolve_backend(args.backend)
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
    text = report_text(results, args, command, datetime.now(UTC))
    write_atomic(args.out, text)
    print(text)
    say(f"bench: written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
