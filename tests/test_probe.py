"""Running the harness in a release's environment: what a failure says, and what heals itself.

Real releases in real uv environments; a broken environment is made by deleting a library
of jaxlib's, as a disk error or a careless cleanup would."""

from __future__ import annotations

import json

import pytest

from jaxbisect.lab import backends, harness
from jaxbisect.lab.catalogue import load_catalogue
from jaxbisect.lab.environments import ensure_environment
from jaxbisect.lab.lab import RealLab
from jaxbisect.lab.runs import store_key
from jaxbisect.lab.store import STORE
from jaxbisect.search.question import question_from
from repro.case import SCAN_CASE

CPU = backends.get("cpu")


def tiny_scan(xla_flags: str = ""):
    """The scan case at a tiny size, as a sweep or a bisection asks it of the lab."""
    return question_from(None, str(SCAN_CASE), ["n_inner=10", "n_res=8"], (),
                         xla_flags=xla_flags, over="n_outer=1,2,3")


def quiet(message: str) -> None:
    pass


@pytest.mark.parametrize("stderr, said", [
    ("2026-11-30 13:35:40.341465: F external/xla/xla/parse_flags_from_env.cc:226] Unknown "
     "flags in XLA_FLAGS: --bogus_flag=1 \n", "Unknown flags in XLA_FLAGS: --bogus_flag=1"),
    ("W0000 00:00:1 warning.cc:1] nothing\nF1130 13:35:40.341465    6172 "
     "parse_flags_from_env.cc:226] Unknown flags in XLA_FLAGS: --x=1\n*** Check failure ***\n",
     "Unknown flags in XLA_FLAGS: --x=1"),
    ("Traceback (most recent call last):\nValueError: F is for fail\n", None),
    ("", None),
])
def test_xlas_own_fatal_line_is_found(stderr, said):
    assert harness.fatal_log_line(stderr) == said


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A cache of this test's own: it breaks environments on purpose."""
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.jax
def test_a_bad_xla_flag_shows_xlas_own_line():
    release = load_catalogue().get("0.5.0")
    run = RealLab(quiet, remeasure=True).run(release, CPU, tiny_scan("--bogus_flag=1"), 1,
                                             timeout=300)
    assert run.status == "crashed"  # XLA aborts the process: no figure, said in its words
    assert "Unknown flags in XLA_FLAGS: --bogus_flag=1" in run.error
    assert "signal" not in run.error


def break_jaxlib(path) -> None:
    libraries = list(path.glob("lib/python*/site-packages/jaxlib/xla_extension*.so"))
    assert libraries
    for library in libraries:
        library.unlink()


@pytest.mark.jax
def test_a_broken_environment_is_rebuilt_once_and_its_failure_never_stored(private_cache):
    """The lab (a sweep's, a bisection's) repairs an environment that lost jaxlib's shared
    library and answers; what it stores is the answer, never the import failure."""
    release = load_catalogue().get("0.5.0")
    env = ensure_environment(release, CPU, progress=quiet)
    break_jaxlib(env.path)
    said = []
    question = tiny_scan()
    run = RealLab(said.append).run(release, CPU, question, 1, timeout=300)
    assert run.status == "ok" and run.samples[0][0] == "constant", run.error
    assert any("rebuilding it" in line for line in said), said
    stored = json.loads(STORE.path(store_key(question, release, "cpu", "metric",
                                                      run=1)).read_text())
    assert stored["error"] is None and stored["status"] == "ok"


@pytest.mark.jax
def test_verify_rebuilds_an_environment_that_no_longer_imports(private_cache):
    release = load_catalogue().get("0.5.0")
    env = ensure_environment(release, CPU, progress=quiet)
    break_jaxlib(env.path)
    assert ensure_environment(release, CPU, progress=quiet).reused  # looks complete
    said = []
    healed = ensure_environment(release, CPU, progress=said.append, verify=True)
    assert not healed.reused and any("rebuilding it" in line for line in said)
    assert ensure_environment(release, CPU, progress=quiet, verify=True).reused


@pytest.mark.jax
@pytest.mark.parametrize("delay", [0.4, 1.0])
def test_ctrl_c_in_the_harness_says_interrupted_and_nothing_else(jax_python, delay):
    """Issue 17, item 9: Ctrl-C while jax imports (numpy's C modules fail half-loaded) or
    while it compiles ends the harness with 130 and one line, never "cannot import JAX"."""
    import os
    import signal
    import subprocess
    import time

    from conftest import REPO

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS")}
    child = subprocess.Popen([str(jax_python("0.5.0")), "-m", "repro", "--n-res", "64"],
                             cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True,  # Ctrl-C as a user's shell gives it (see test_bisect)
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(delay)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "python -m repro: interrupted"
    assert "cannot import" not in stderr and "Traceback" not in stderr


@pytest.mark.parametrize("status", [130, -2])
def test_an_interrupted_harness_is_an_interruption_not_a_result(recorded_catalogue, tmp_path,
                                                                 status):
    """Issue 17, item 9: the driver never reads a harness that Ctrl-C ended as the release's
    answer (nothing is said of it, nothing stored): it is interrupted too."""
    from jaxbisect.lab.environments import Environment

    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nkill -INT $$\nexit 130\n" if status == -2 else
                    "#!/bin/sh\necho 'python -m repro: interrupted' >&2\nexit 130\n")
    fake.chmod(0o755)
    env = Environment(release=recorded_catalogue.get("0.5.0"), backend="cpu", path=tmp_path,
                      python=fake, installed={}, reused=True, seconds=0.0)
    with pytest.raises(KeyboardInterrupt):
        harness.run_repro(env, tiny_scan().harness_argv(), 60)
