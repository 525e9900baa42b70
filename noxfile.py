"""`nox` runs the main job, `nox -s repro`: the default JAX releases measured into reports/repro/.

Any releases: `nox -s repro_range -- --from 0.4.30 --to 0.5.0` (or `-- --release 0.6.0 0.7.0`).
Results of many machines: `nox -s merge -- artifacts/`. The bisect driver:
`nox -s bisect -- --from 0.5.0 --to 0.10.2`. Also `reports_check`, `bench`, `tests` (CI's),
`tests_full`, `tests_fast`, `tests_tpu`, `lint`.
"""

# uv is nox's backend here; JAX releases themselves live in environments made by
# jaxbisect.lab.environments (one per release and backend, shared with the bisect driver), so a
# session's own virtualenv only holds this project (packaging, tabulate, uv). This file imports
# nothing but nox and the standard library: `nox -l` must work wherever nox does.

from __future__ import annotations

import hashlib
import json
import os
import shlex
import time
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.sessions = ["repro"]

# The default set, chosen by measuring on CPU (see reports/repro/README.md):
#   0.4.20  the oldest release docs/jax-facts.md covers; CPU (and GPU) memory_analysis() gives zeros
#   0.4.29  the first jaxlib that reports sizes on CPU; v0 constant
#   0.5.0   the report's release; v0 constant on CPU (the report saw it grow on GPU)
#   0.5.1   the first release where v0 grows on CPU (0.5.0 -> 0.5.1 is the CPU change)
#   0.10.2  the newest release installable for Python 3.11; grows, the report's figures
#   0.12.0.1 the newest release; needs Python 3.12, used where one is found on the machine
#           (pyenv, PATH), listed as "not installable here" (and skipped) elsewhere
# Six harness runs at the report's sizes, measured two at a time on two cores.
DEFAULT_RELEASES = ["0.4.20", "0.4.29", "0.5.0", "0.5.1", "0.10.2", "0.12.0.1"]

# The report's own GPU, compiled without one (jaxbisect measures it on any machine): every
# default release is also measured for it, beside the CPU (or the GPU at hand).
# REPRO_REPORT_TARGET names another (empty: none; the CI workflow's GPU jobs leave it to its
# CPU target jobs).
REPORT_TARGET = os.environ.get("REPRO_REPORT_TARGET", "a6000")

SWEEP = ("python", "-m", "jaxbisect.sweep")
RELEASE_FLAGS = {"--release", "--releases", "--from", "--to"}
INSTALLED_STAMP = ".jaxbisect-installed"


def _install_project(session: nox.Session, *extra: str, project: str = ".") -> None:
    """Install this project (editable) once per nox virtualenv, not on every run.

    Reinstalls when pyproject.toml (or ``extra``, or ``project``: ``.[test]`` for the extras)
    changes. Editable, so edits to the code need no reinstall; skipping uv here keeps a warm
    run's overhead down and works offline.
    """
    stamp = Path(session.virtualenv.location) / INSTALLED_STAMP
    asked = extra if project == "." else (project, *extra)
    key = hashlib.sha256(Path("pyproject.toml").read_bytes() + repr(asked).encode()).hexdigest()
    try:
        if stamp.read_text() == key:
            return
    except OSError:
        pass
    session.install("-e", project, *extra)
    stamp.write_text(key)


def _invocation(session: nox.Session, name: str) -> str:
    """The command line a user would type to rerun this, for the report's header."""
    command = ["nox", "-s", name]
    if session.posargs:
        command += ["--", *session.posargs]
    return shlex.join(command)


@nox.session
def repro(session: nox.Session) -> None:
    """Measure the default set, several releases at once, on this machine's backend and for the
    report's GPU (an RTX A6000, compiled without one); writes reports/repro/ (JSON + README).

    Arguments after ``--`` go to ``python -m jaxbisect.sweep``: ``--backend cpu``, the scan
    case's sizes (``--n-outer 1 2 5``, ``--n-res 64``, ``--metric peak_memory`` …),
    ``--remeasure``, ``--jobs N`` (releases at once; default from the cores and memory).
    """
    _sweep_default_set(session, DEFAULT_RELEASES, "nox -s repro measures its default set; for "
                       "one of it use nox -s \"repro_release(release='0.5.0')\"")


@nox.session
@nox.parametrize("release", DEFAULT_RELEASES)
def repro_release(session: nox.Session, release: str) -> None:
    """One release of the default set into reports/repro/ (the CI workflow runs each as a job
    of its own, on every runner named)."""
    _sweep_default_set(session, [release], "repro_release measures the release it names")


def _sweep_default_set(session: nox.Session, releases: list[str], refusal: str) -> None:
    """``releases`` of the default set into reports/repro/, for the report's GPU too (unless
    the run names its own target or runs for real: a compile-only target has no real peak)."""
    if RELEASE_FLAGS.intersection(session.posargs):
        session.error(f"{refusal}; for other releases use nox -s repro_range -- --release "
                      "0.4.25 0.6.0 (or --from A --to B)")
    runtime = "--metric=peak_memory" in session.posargs or any(
        a == "--metric" and b == "peak_memory"
        for a, b in zip(session.posargs, session.posargs[1:]))
    own = any(arg.startswith(("--target", "--also-target")) for arg in session.posargs)
    target = ["--also-target", REPORT_TARGET] if REPORT_TARGET and not (runtime or own) else []
    _install_project(session)
    session.run(*SWEEP, "--release", *releases, "--if-installable",
                "--command", _invocation(session, "repro"), *target, *session.posargs)


@nox.session
def repro_range(session: nox.Session) -> None:
    """Measure any releases: ``-- --release 0.4.25 0.6.0`` or ``-- --from 0.4.30 --to 0.5.0``."""
    if not RELEASE_FLAGS.intersection(session.posargs):
        session.error("name the releases: nox -s repro_range -- --release 0.5.0 [0.6.0 …] "
                      "or -- --from 0.4.30 --to 0.5.0")
    _install_project(session)
    session.run(*SWEEP, "--command", _invocation(session, "repro_range"), *session.posargs)


@nox.session
def merge(session: nox.Session) -> None:
    """Merge result JSONs from many machines into reports/merged.md.

    ``nox -s merge -- artifacts/`` (a folder of downloaded CI artifacts, searched
    recursively); with no arguments it merges reports/repro/.
    """
    _install_project(session)
    session.run("python", "-m", "jaxbisect.merge", *(session.posargs or ["reports/repro"]))


@nox.session
def bisect(session: nox.Session) -> None:
    """The bisect driver by a name nothing shadows: ``nox -s bisect -- --from A --to B``."""
    if not session.posargs:
        session.error("give the range: nox -s bisect -- --from 0.5.0 --to 0.10.2 [options]")
    _install_project(session)
    session.run("python", "-m", "jaxbisect", *session.posargs)


@nox.session
def reports_check(session: nox.Session) -> None:
    """Every line a shipped report prints, run as pasted: each install line in a fresh uv
    environment of only that line (it must give the jax and jaxlib it pins), each program
    printed with an output in the environment of its install line (its output compared with
    the report's recorded one), each HLO bundle's compile line; and each pair's outputs must
    differ as the report says (a timing: nearer the headline's ratio than no change). Prints
    the lines run, the mismatches (any fails the session) and the lines that need an
    accelerator (named, not run). ``-- --json`` prints one document; ``-- reports/cases`` one
    folder; ``-- --pairs-only`` the pairs alone."""
    _install_project(session)
    session.run("python", "-m", "jaxbisect.tools.reports_check", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Environments cold/warm with uv vs pip, a whole ``nox -s repro`` cold vs warm, a
    bisection over 21 releases cold, warm and stored, the 29-release bisection with its
    evidence and ``--minimize``, and a timing case's bisection.

    Writes reports/bench.md. ``-- --only env`` (or ``repro``, ``bisect``, ``long``, ``case``)
    runs one part.
    """
    _install_project(session, "nox")
    session.run("python", "-m", "jaxbisect.tools.bench", *session.posargs)


# Workers for `nox -s tests`: one a core, at most four (docs/benchmarks.md has the figures):
# a worker waits on uv and on its subprocesses a good part of its time.
TEST_WORKERS = str(min(os.cpu_count() or 2, 4))

# What each tier may take, pytest's wall time on a two-core machine (the CI's; `.ci/run` on a
# fresh clone has to stay within 300 s, installs included). A run over it says so; the
# figures and what each tier holds: docs/benchmarks.md. Speed is watched here, never in a
# timed unit test.
BUDGETS = {"tests": 240, "tests_full": 900, "tests_fast": 60}
# Where each run's time is kept: the tests' own cache, never a tracked file.
SUITE_TIMES = Path(".cache", "tests", "suite-times.json")


def _pytest(session: nox.Session, *args: str) -> None:
    """pytest over ``args`` and the session's arguments, its wall time kept in SUITE_TIMES
    and held against the session's budget (when nothing after ``--`` narrows the run)."""
    session.env["JAX_SCAN_REPRO_CACHE"] = str(Path(".cache", "tests").resolve())
    # This machine's caller may forbid bytecode (PYTHONDONTWRITEBYTECODE): every CLI run of
    # the driver would then compile it and matplotlib again (0.3 s and 0.8 s a process).
    session.env["PYTHONDONTWRITEBYTECODE"] = None
    name, budget = session.name, BUDGETS[session.name]
    load = os.getloadavg()[0]
    started = time.monotonic()
    passed = False
    try:
        session.run("pytest", *args, *(session.posargs or ["-q", "--durations=10"]))
        passed = True
    finally:
        seconds = time.monotonic() - started
        whole = not session.posargs
        _record_time({"session": name, "seconds": round(seconds, 1), "budget": budget,
                      "whole": whole, "passed": passed, "cores": os.cpu_count(),
                      "load_average": [round(load, 2), round(os.getloadavg()[0], 2)],
                      "arguments": session.posargs,
                      "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        said = (f"nox -s {name}: pytest took {seconds:.0f} s, its budget {budget} s on two "
                f"cores (here {os.cpu_count()}, load average {load:.1f} at its start; kept in "
                f"{SUITE_TIMES})")
        if whole and passed and seconds > budget:
            busy = (" — the machine was busy with other work, which may be why"
                    if load >= (os.cpu_count() or 2) / 2 else "")
            session.warn(f"{said}: over its budget{busy}. The slowest tests: the durations "
                         f"above; move a heavy one to tests_full (@pytest.mark.full) or make "
                         f"it smaller (docs/benchmarks.md)")
        else:
            session.log(said)


def _record_time(run: dict) -> None:
    """The last 50 runs, newest last, written whole (a temp file, then os.replace)."""
    try:
        runs = json.loads(SUITE_TIMES.read_text())["runs"]
    except (OSError, ValueError, KeyError, TypeError):
        runs = []
    SUITE_TIMES.parent.mkdir(parents=True, exist_ok=True)
    temp = SUITE_TIMES.with_name(f".{SUITE_TIMES.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps({"runs": [*runs, run][-50:]}, indent=1) + "\n")
    os.replace(temp, SUITE_TIMES)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite CI runs (the README's test command): every pure test, the CLI, and the
    real runs that show each behaviour once, cheapest: a real end-to-end bisection per metric
    kind (memory, run_time, output, error), --commits on a real jax history, SLURM, Ctrl-C and
    resume, real JAX CPU releases installed with uv. ``@pytest.mark.full`` tests (heavier
    real runs: the report's own sizes, every shipped case, compile-only GPU targets, …) are
    tests_full's. One worker a core (``-- -n 0`` runs in one process); a SLURM cluster for
    the session, its tests on one worker (xdist_group).

    Its environments and results live in .cache/tests/ inside the clone (kept between runs,
    shared by the workers), never in the user's cache; its time in .cache/tests/
    suite-times.json, against its budget (BUDGETS)."""
    session.install("-e", ".[test]", "pytest-xdist>=3")
    _pytest(session, "-m", "not full", "-n", TEST_WORKERS, "--dist", "loadgroup")


@nox.session
def tests_full(session: nox.Session) -> None:
    """Every test: nox -s tests and the ``full`` ones (heavier real runs, each also shown
    more cheaply in nox -s tests). Its time: README, docs/benchmarks.md."""
    session.install("-e", ".[test]", "pytest-xdist>=3")
    _pytest(session, "-n", TEST_WORKERS, "--dist", "loadgroup")


# No proxy answers here: a test that reaches for the network fails in tests_fast, so a test
# that needs it is found and marked (or given recorded data) rather than passing by luck.
OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
           "NO_PROXY": "", "no_proxy": "", "UV_OFFLINE": "1"}


@nox.session
def tests_fast(session: nox.Session) -> None:
    """The tests that need no network and no JAX release (pure logic, recorded data, the CLI
    on bad input), with the network cut off: ``pytest -m "not jax and not slurm"``, one
    worker a core.

    Installs once (like the other sessions; later runs work offline); ``-- -n 0`` runs in one
    process. Its time: docs/benchmarks.md."""
    _install_project(session, "pytest-xdist>=3", project=".[test]")
    session.env.update(OFFLINE)
    # The SLURM tests start one cluster for the session: not one a worker (nox -s tests).
    _pytest(session, "-m", "not jax and not slurm", "-n", "auto")


@nox.session
def tests_tpu(session: nox.Session) -> None:
    """The test that compiles for a TPU v5e with a real libtpu, on any machine (no TPU needed):
    it installs jax 0.5.0's TPU environment (jax, jaxlib, libtpu: about 0.7 GB), so it stays
    out of ``nox -s tests`` and CI, where it is skipped."""
    _install_project(session, project=".[test]")
    session.env["JAX_SCAN_REPRO_CACHE"] = str(Path(".cache", "tests").resolve())
    session.env["JAX_SCAN_REPRO_TPU_TESTS"] = "1"
    session.run("pytest", "-m", "tpu", "-p", "no:xdist", *(session.posargs or ["-q"]))


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff==0.17.5", "import-linter>=2.1")
    session.run("ruff", "check", ".")
    # The pipeline's layers (pyproject.toml; docs/design.md draws them).
    session.run("lint-imports", env={"PYTHONPATH": str(Path.cwd())})
