"""Shared fixtures: real JAX releases in real uv environments (seconds each with uv)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# The tests' own cache, inside the clone (ignored by git) and kept between test runs: the
# environments and results they make never land in the user's cache. Set before anything
# reads it; every subprocess a test starts inherits it.
TEST_CACHE = REPO / ".cache" / "tests"
os.environ["JAX_SCAN_REPRO_CACHE"] = str(TEST_CACHE)
# matplotlib (the report's chart) keeps a font cache under HOME otherwise.
os.environ.setdefault("MPLCONFIGDIR", str(REPO / ".cache" / "matplotlib"))
# A caller that forbids bytecode (PYTHONDONTWRITEBYTECODE) would have every CLI run a test
# starts compile the driver and matplotlib again (0.3 s and 0.8 s a process, hundreds of
# processes); the harness's own runs write theirs anyway (harness_environ).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(scope="session")
def jax_python():
    """``jax_python("0.5.0")`` -> the interpreter of that release's period-correct CPU env.

    Environments go to the tests' cache inside the clone (TEST_CACHE, kept between test
    runs), so only the first run of a clone installs anything.
    """
    from jaxbisect.lab import backends
    from jaxbisect.lab.catalogue import load_catalogue
    from jaxbisect.lab.environments import ensure_environment

    catalogue = load_catalogue()
    made = {}

    def get(version: str) -> Path:
        if version not in made:
            made[version] = ensure_environment(catalogue.get(version), backends.get("cpu")).python
        return made[version]

    return get


@pytest.fixture(scope="session")
def target_python():
    """``target_python("0.5.0")`` -> the interpreter of that release's compile-only CUDA env
    (jax, jaxlib, the CUDA 12 plugin and PJRT wheels, nvcc's ptxas: ~350 MB, no GPU needed)."""
    from jaxbisect.lab.backends.cuda12 import CUDA12_COMPILE_ONLY
    from jaxbisect.lab.catalogue import load_catalogue
    from jaxbisect.lab.environments import ensure_environment

    catalogue = load_catalogue()
    made = {}

    def get(version: str) -> Path:
        if version not in made:
            made[version] = ensure_environment(catalogue.get(version),
                                               CUDA12_COMPILE_ONLY).python
        return made[version]

    return get


def run_repro(python: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """``python -m repro ARGS`` from the repo root, as a maintainer would run it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS")}
    return subprocess.run([str(python), "-m", "repro", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def repro_json(python: Path, *args: str) -> dict:
    done = run_repro(python, "--json", "--quiet", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


SYSTEM_PYTHON = Path(sys.executable)


def cache_sharing_environments(cache: Path) -> dict:
    """An environment for a subprocess whose results and catalogue are its own (``cache``)
    while its JAX environments are the tests' (installed once a clone): for a test that
    asserts on what the store holds, which other tests (other xdist workers) write at once."""
    shared = TEST_CACHE / "envs"
    shared.mkdir(parents=True, exist_ok=True)
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "envs").symlink_to(shared)
    return {**os.environ, "JAX_SCAN_REPRO_CACHE": str(cache)}


def recorded_pypi(url: str) -> bytes:
    """A ``fetch`` that answers PyPI's JSON URLs from the responses recorded in tests/data."""
    return (REPO / "tests" / "data" / f"pypi-{url.rstrip('/').split('/')[-2]}.json").read_bytes()


@pytest.fixture
def recorded_catalogue(tmp_path, monkeypatch):
    """The release catalogue as PyPI answered when the fixtures were recorded."""
    from jaxbisect.lab.catalogue import load_catalogue

    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    return load_catalogue(fetch=recorded_pypi)


@pytest.fixture(autouse=True)
def only_this_python(monkeypatch):
    """Every test sees the driver's own Python only, whatever else this machine has (so jax
    0.11+, which needs 3.12, is "not installable here" alike everywhere); tests of the
    interpreter search undo this."""
    from jaxbisect.lab.interpreters import find_interpreters

    monkeypatch.setenv("JAX_SCAN_REPRO_PYTHONS", "")
    find_interpreters.cache_clear()
    yield
    find_interpreters.cache_clear()


def pytest_collection_modifyitems(items):
    """Tests that install real JAX releases are marked ``jax`` (deselect: ``-m 'not jax'``);
    those marked ``tpu`` (a libtpu environment) run only under ``nox -s tests_tpu``.

    The real runs (``jax``, ``slurm``) go first, in their files' order, the quick tests after
    them: under xdist a worker that ends early then fills in with quick tests instead of
    waiting for the other one's last real run (the same order on every worker, as xdist
    needs)."""
    for item in items:
        if {"jax_python", "target_python"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.jax)
        if item.get_closest_marker("tpu") and os.environ.get("JAX_SCAN_REPRO_TPU_TESTS") != "1":
            item.add_marker(pytest.mark.skip(reason="compiles with a real libtpu: "
                                                    "nox -s tests_tpu"))
    items.sort(key=lambda item: not (item.get_closest_marker("jax")
                                     or item.get_closest_marker("slurm")))


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A real one-node SLURM cluster for the session (tests/slurm_cluster.py): its
    SLURM_CONF is set for this process and every subprocess. Skipped where it cannot start
    (not root, no packages) unless JAX_SCAN_REPRO_REQUIRE_SLURM=1 (CI), where that fails."""
    import tempfile

    from slurm_cluster import CannotStart, start, stop

    # A short path: munge's socket lives there (a Unix socket's path is at most 107 bytes).
    root = Path(tempfile.mkdtemp(prefix="jb-slurm-"))
    try:
        env = start(root)
    except CannotStart as exc:
        if os.environ.get("JAX_SCAN_REPRO_REQUIRE_SLURM") == "1":
            pytest.fail(f"JAX_SCAN_REPRO_REQUIRE_SLURM=1 but the SLURM cluster cannot start: "
                        f"{exc}")
        pytest.skip(f"no SLURM cluster here: {exc}")
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield root
    finally:
        stop(root)
        import shutil

        shutil.rmtree(root, ignore_errors=True)
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
