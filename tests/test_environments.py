"""Environments: install plans (pure), the reuse and rebuild rules (with a fake uv), and real
uv environments for jax 0.4.20 (marked ``jax``: they need PyPI or a warm uv cache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from packaging.version import Version

from jaxbisect.errors import InstallFailed, UserError
from jaxbisect.lab import backends, environments
from jaxbisect.lab.backends import InstallPlan
from jaxbisect.lab.backends.cuda12 import JAX_CUDA_FIND_LINKS
from jaxbisect.lab.catalogue import Catalogue, load_catalogue
from jaxbisect.lab.environments import ensure_environment, install_plan, resolve_backend

CPU = backends.get("cpu")
CUDA12 = backends.get("cuda12")

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).parent.parent
NUMPY_2 = datetime(2024, 6, 16, tzinfo=UTC)


def recorded(url: str) -> bytes:
    return (DATA / f"pypi-{url.rstrip('/').split('/')[-2]}.json").read_bytes()


@pytest.fixture(scope="module")
def cat(tmp_path_factory) -> Catalogue:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path_factory.mktemp("catalogue")))
        return load_catalogue(fetch=recorded)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def quiet(message: str) -> None:
    pass


# --- backends --------------------------------------------------------------------------------

def test_resolve_backend():
    def only(*names):
        return lambda backend: backend.name in names

    assert backends.resolve("cpu", visible=only("cpu")) == "cpu"
    with pytest.raises(UserError, match="unknown backend 'metal'"):
        backends.resolve("metal")
    with pytest.raises(UserError, match="unknown backend 'cuda12-deviceless'"):
        backends.resolve("cuda12-deviceless")  # a target's own, never asked by name
    gpu = only("cpu", "cuda12")
    assert backends.resolve("auto", visible=gpu) == "cuda12"
    assert backends.resolve("cuda12", visible=gpu) == "cuda12"
    assert backends.resolve("auto", visible=only("cpu")) == "cpu"
    with pytest.raises(UserError, match="no NVIDIA GPU is visible"):
        backends.resolve("cuda12", visible=only("cpu"))
    assert backends.resolve("cuda12", visible=only("cpu"), elsewhere=True) == "cuda12"
    # a target needs no device: its kind's compile-only backend
    assert backends.resolve("auto", "a6000", visible=only("cpu")) == "cuda12-deviceless"
    assert backends.resolve("cuda12", "a6000", visible=only("cpu")) == "cuda12-deviceless"
    with pytest.raises(UserError, match="contradicts it"):
        backends.resolve("cpu", "a6000")


@pytest.mark.skipif(Path("/dev/nvidia0").exists(), reason="a real GPU is visible here")
@pytest.mark.parametrize("listing, status, seen", [
    ("GPU 0: NVIDIA H200 (UUID: GPU-1234)", 0, True),
    ("No devices were found", 6, False),
])
def test_gpu_detection_asks_nvidia_smi(tmp_path, monkeypatch, listing, status, seen):
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\necho '{listing}'\nexit {status}\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert resolve_backend("auto") == ("cuda12" if seen else "cpu")


# --- install plans (pure) --------------------------------------------------------------------

def test_cpu_plans_pin_jax_and_its_jaxlib(cat):
    assert install_plan(cat.get("0.5.0"), CPU).requirements == ("jax==0.5.0", "jaxlib==0.5.0")
    assert install_plan(cat.get("0.4.37"), CPU).requirements == ("jax==0.4.37", "jaxlib==0.4.36")
    assert install_plan(cat.get("0.5.2"), CPU).requirements == ("jax==0.5.2", "jaxlib==0.5.1")
    plan = install_plan(cat.get("0.5.0"), CPU)
    assert plan.find_links is None and plan.date_exempt == ()


def test_cutoff_of_0_4_20_dates_its_dependencies(cat):
    release = cat.get("0.4.20")
    plan = install_plan(release, CPU)
    assert plan.exclude_newer == release.cutoff()
    assert release.uploaded < plan.exclude_newer and release.jaxlib_uploaded < plan.exclude_newer
    assert plan.exclude_newer < NUMPY_2


def test_cuda12_plan_0_4_20_uses_find_links(cat, monkeypatch):
    monkeypatch.delenv("JAX_SCAN_REPRO_FIND_LINKS", raising=False)
    plan = install_plan(cat.get("0.4.20"), CUDA12)
    assert plan == InstallPlan(
        requirements=("jax[cuda12_pip]==0.4.20", "jaxlib==0.4.20+cuda12.cudnn89"),
        exclude_newer=cat.get("0.4.20").cutoff(),
        find_links=JAX_CUDA_FIND_LINKS,
        date_exempt=("jaxlib",),
    )
    assert plan.exclude_newer < NUMPY_2  # the nvidia-* wheels still come from PyPI, dated
    monkeypatch.setenv("JAX_SCAN_REPRO_FIND_LINKS", "/srv/wheels")
    assert install_plan(cat.get("0.4.20"), CUDA12).find_links == "/srv/wheels"


def test_cuda12_plan_0_4_25_pins_the_pypi_plugin(cat):
    release = cat.get("0.4.25")
    plan = install_plan(release, CUDA12)
    assert plan.requirements == ("jax==0.4.25", "jaxlib==0.4.25",
                                 "jax-cuda12-plugin[with_cuda]==0.4.25", "jax-cuda12-pjrt==0.4.25")
    assert plan.find_links is None and plan.date_exempt == ()
    assert plan.exclude_newer > release.cuda_plugin_uploaded
    assert install_plan(cat.get("0.4.22"), CUDA12).requirements[-1] == (
        "jax-cuda12-plugin[with_cuda]==0.4.22")  # no separate PJRT package yet


@pytest.mark.parametrize("version", ["0.5.0", "0.6.0"])
def test_cuda12_plan_from_0_4_30_uses_the_extra(cat, version):
    release = cat.get(version)
    plan = install_plan(release, CUDA12)
    assert plan.requirements == (f"jax[cuda12]=={version}", f"jaxlib=={version}")
    assert plan.find_links is None
    # jax-cuda12-plugin 0.5.0's aarch64 wheels came six days late; only x86_64's count here.
    assert plan.exclude_newer >= install_plan(release, CPU).exclude_newer
    assert plan.exclude_newer > release.cuda_plugin_uploaded


def test_plans_refuse_what_cannot_be_installed(cat):
    with pytest.raises(InstallFailed, match="no jaxlib on PyPI"):
        install_plan(cat.get("0.4.10"), CPU)
    with pytest.raises(UserError, match="unknown backend"):
        install_plan(cat.get("0.5.0"), backends.get("metal"))


def test_uv_errors_become_one_line():
    stderr = textwrap.dedent("""\
        Using Python 3.11.7 environment at: /x
        error: Failed to read `--find-links` URL: https://example.invalid/x.html
          cause: Request failed after 3 retries in 10.3s
          cause: Connection refused (os error 111)
        hint: check your network
        """)
    assert environments._uv_error(stderr) == (
        "Failed to read `--find-links` URL: https://example.invalid/x.html: "
        "Connection refused (os error 111)")
    assert environments._uv_error("") == "uv failed without saying why"
    assert environments._uv_error("error: boom\n") == "boom"
    # Wrapped to the terminal's width (COLUMNS=80): the cause is whole, as unwrapped.
    wrapped = textwrap.dedent("""\
        Using Python 3.11.7 environment at: /x
        error: No solution found when resolving dependencies
          cause: Because there is no version of jax==0.4.99 and you require jax==0.4.99,
                 we can conclude that your requirements are unsatisfiable.
        """)
    assert environments._uv_error(wrapped) == environments._uv_error(wrapped.replace(
        ",\n                 we", ", we")) == (
        "No solution found when resolving dependencies: Because there is no version of "
        "jax==0.4.99 and you require jax==0.4.99, we can conclude that your requirements are "
        "unsatisfiable.")
    tree = "  × No solution found\n  ╰─▶ Because there is no version of jax==0.4.99, we\n" \
           "      can conclude that your requirements are unsatisfiable.\n"
    assert environments._uv_error(tree) == ("Because there is no version of jax==0.4.99, we "
                                            "can conclude that your requirements are "
                                            "unsatisfiable.")


# --- the reuse and rebuild rules, with a fake uv ---------------------------------------------

FAKE_UV = """\
#!{python}
# Stands in for uv: `venv` makes bin/python and site-packages; `pip install` writes dist-info
# for each pinned requirement. It logs its arguments and can be told to fail or to dawdle.
import json, os, re, sys, time
from pathlib import Path
with open(os.environ["FAKE_UV_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if os.environ.get("FAKE_UV_STDERR") and sys.argv[1] == "pip":
    sys.stderr.write(os.environ["FAKE_UV_STDERR"])
    sys.exit(2)
time.sleep(float(os.environ.get("FAKE_UV_SLEEP", "0")))
if sys.argv[1] == "venv":
    env = Path(sys.argv[-1])
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").symlink_to(sys.executable)
    (env / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
else:
    env = Path(sys.argv[sys.argv.index("--python") + 1]).parent.parent
    site = env / "lib" / "python3.11" / "site-packages"
    for requirement in sys.argv[1:] + ["numpy==1.26.1"]:
        match = re.fullmatch(r"([\\w.-]+)(\\[.*\\])?==(.+)", requirement)
        if match:
            name, version = match.group(1), match.group(3)
            info = site / f"{{name.replace('-', '_')}}-{{version}}.dist-info"
            info.mkdir(exist_ok=True)
            (info / "METADATA").write_text(f"Name: {{name}}\\nVersion: {{version}}\\n")
"""


@pytest.fixture
def fake_uv(tmp_path, monkeypatch, cache):
    script = tmp_path / "fake-uv"
    script.write_text(FAKE_UV.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "uv.log"
    log.touch()
    monkeypatch.setenv("FAKE_UV_LOG", str(log))
    monkeypatch.setattr(environments, "uv_binary", lambda: str(script))

    def calls() -> list[list[str]]:
        return [json.loads(line) for line in log.read_text().splitlines()]

    return calls


def env_dir(cache: Path, version="0.4.20", backend="cpu") -> Path:
    return cache / "envs" / f"jax-{version}-{backend}-py{sys.version_info[0]}{sys.version_info[1]}"


def test_build_then_reuse_without_uv(cat, cache, fake_uv, monkeypatch):
    messages = []
    env = ensure_environment(cat.get("0.4.20"), backends.get("cpu"), progress=messages.append)
    assert not env.reused and env.path == env_dir(cache)
    assert env.python == env.path / "bin" / "python"
    assert env.installed == {"jax": "0.4.20", "jaxlib": "0.4.20", "numpy": "1.26.1"}
    assert messages[0] == "installing jax 0.4.20 (cpu) …" and messages[1].startswith("ready in ")
    venv, install = fake_uv()
    assert venv[:3] == ["venv", "--quiet", "--python"]
    assert install[install.index("--exclude-newer") + 1] == "2023-11-03T23:25:24Z"
    assert install[-2:] == ["jax==0.4.20", "jaxlib==0.4.20"]
    marker = json.loads((env.path / ".complete.json").read_text())
    assert marker["installed"] == env.installed and marker["release"] == "0.4.20"

    monkeypatch.setattr(environments, "uv_binary", lambda: "/nonexistent/uv")
    messages.clear()
    again = ensure_environment(cat.get("0.4.20"), CPU, progress=messages.append)
    assert again.reused and again.installed == env.installed and again.seconds < 0.5
    assert messages == [] and len(fake_uv()) == 2


@pytest.mark.parametrize("damage", [
    lambda path: (path / ".complete.json").unlink(),
    lambda path: (path / ".complete.json").write_text("{half a marker"),
    lambda path: (path / "bin" / "python").unlink(),
    lambda path: next(path.glob("lib/*/site-packages/jax-*.dist-info")).rename(path / "gone"),
    lambda path: (path / ".complete.json").write_text((path / ".complete.json").read_text()
                                                      .replace("2023-11-03T23:25:24Z", "2024")),
], ids=["no marker", "corrupt marker", "no python", "no jax dist-info", "other plan"])
def test_anything_less_than_complete_is_rebuilt(cat, cache, fake_uv, damage):
    first = ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)
    stray = first.path / "stray-file"
    stray.touch()
    damage(first.path)
    second = ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)
    assert not second.reused and len(fake_uv()) == 4
    assert not stray.exists()  # rebuilt from an empty directory
    assert (second.path / ".complete.json").exists()


def test_cuda12_find_links_install_arguments(cat, cache, fake_uv, monkeypatch):
    monkeypatch.setenv("JAX_SCAN_REPRO_FIND_LINKS", "/srv/wheels")
    env = ensure_environment(cat.get("0.4.20"), CUDA12, progress=quiet)
    install = fake_uv()[1]
    assert install[install.index("--exclude-newer-package") + 1] == "jaxlib=false"
    assert install[install.index("--find-links") + 1] == "/srv/wheels"
    assert env.installed["jaxlib"] == "0.4.20+cuda12.cudnn89"
    assert env.path.name.startswith("jax-0.4.20-cuda12-py")


def test_caller_uv_exclude_newer_does_not_leak_in(cat, cache, fake_uv, monkeypatch):
    monkeypatch.setenv("UV_EXCLUDE_NEWER", "2030-01-01T00:00:00Z")
    seen = []
    real_run = subprocess.run

    def spy(command, **kwargs):
        seen.append(kwargs["env"])
        return real_run(command, **kwargs)

    monkeypatch.setattr(environments.subprocess, "run", spy)
    ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)
    assert seen and all("UV_EXCLUDE_NEWER" not in env for env in seen)


def test_failed_install_is_one_line_and_leaves_nothing(cat, cache, fake_uv, monkeypatch):
    monkeypatch.setenv("FAKE_UV_STDERR", "error: No solution found when resolving dependencies\n"
                       "  cause: Because there is no version of jax==0.4.20 ...\n")
    with pytest.raises(InstallFailed) as caught:
        ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)
    assert str(caught.value) == (
        "installing jax 0.4.20 (cpu) failed: No solution found when resolving dependencies: "
        "Because there is no version of jax==0.4.20 ...")
    assert not env_dir(cache).exists()


def test_a_full_disk_says_so(cat, cache, fake_uv, monkeypatch):
    monkeypatch.setenv("FAKE_UV_STDERR", "error: Failed to install: jaxlib-0.4.20.whl\n"
                       "  cause: No space left on device (os error 28)\n")
    full = "no space left on the disk holding .* point JAX_SCAN_REPRO_CACHE elsewhere"
    with pytest.raises(InstallFailed, match=full):
        ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)


def test_an_interrupted_install_leaves_nothing_that_looks_done(cat, cache, fake_uv, monkeypatch):
    real_uv = environments._uv

    def interrupted(what, *args):
        real_uv(what, *args)
        if args[0] == "pip":
            raise KeyboardInterrupt

    monkeypatch.setattr(environments, "_uv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)
    assert not env_dir(cache).exists()
    monkeypatch.setattr(environments, "_uv", real_uv)
    assert not ensure_environment(cat.get("0.4.20"), CPU, progress=quiet).reused


def test_missing_uv(cat, cache, monkeypatch):
    monkeypatch.setattr(environments, "uv_binary", lambda: "/nonexistent/uv")
    with pytest.raises(InstallFailed, match="cannot run uv"):
        ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)
    monkeypatch.setattr(environments, "uv_binary", lambda: None)
    with pytest.raises(InstallFailed, match="uv is not installed"):
        ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)


def test_racing_threads_build_once(cat, cache, fake_uv, monkeypatch):
    """Three of this run's installs ahead of one environment: one builds it, the others wait
    and reuse it; the wait is said once, naming this run's part, never "another run"."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("FAKE_UV_SLEEP", "0.8")  # a build of over a second: a wait worth a line
    messages = []

    def run(_):
        return ensure_environment(cat.get("0.4.20"), CPU, progress=messages.append)

    with ThreadPoolExecutor(3, thread_name_prefix="install") as pool:
        results = list(pool.map(run, range(3)))
    assert sorted(env.reused for env in results) == [False, True, True]
    assert len(fake_uv()) == 2
    waits = [m for m in messages if " waits for " in m]
    assert len(waits) == 1, messages
    assert "this run's install ahead waits for this run's install ahead" in waits[0]
    assert not any("another run" in m for m in messages)


# --- real environments -----------------------------------------------------------------------

@pytest.fixture(scope="session")
def real_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("real-cache")


@pytest.fixture
def real(real_cache, monkeypatch) -> Path:
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(real_cache))
    return real_cache


def run_in(env, code: str) -> str:
    done = subprocess.run([str(env.python), "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.jax
def test_real_0_4_20_cpu_environment(cat, real, monkeypatch):
    env = ensure_environment(cat.get("0.4.20"), backends.get("cpu"), progress=quiet)
    assert env.installed["jax"] == env.installed["jaxlib"] == "0.4.20"
    assert Version(env.installed["numpy"]) < Version("2")
    out = run_in(env, "import jax, jax.numpy as jnp, numpy; "
                      "print(jax.__version__, numpy.__version__, int(jnp.arange(4).sum()))")
    jax_version, numpy_version, total = out.split()
    assert jax_version == "0.4.20" and Version(numpy_version) < Version("2") and total == "6"
    assert numpy_version == env.installed["numpy"]

    monkeypatch.setattr(environments, "uv_binary", lambda: "/nonexistent/uv")  # uv never runs
    again = ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)
    assert again.reused
    assert again.installed == env.installed


@pytest.mark.jax
@pytest.mark.parametrize("damage", [  # the fake-uv tests above cover the other kinds of damage
    lambda path: (path / ".complete.json").unlink(),
    lambda path: next(path.glob("lib/*/site-packages/jax-*.dist-info")).rename(path / "gone"),
], ids=["no marker", "no jax dist-info"])
def test_real_damaged_environment_is_rebuilt(cat, real, damage):
    env = ensure_environment(cat.get("0.4.20"), backends.get("cpu"), progress=quiet)
    damage(env.path)
    rebuilt = ensure_environment(cat.get("0.4.20"), CPU, progress=quiet)
    assert not rebuilt.reused
    assert run_in(rebuilt, "import jax; print(jax.__version__)") == "0.4.20"


@pytest.mark.jax
def test_real_failed_install(cat, real):
    ghost = replace(cat.get("0.4.20"), version=Version("0.4.99"), jaxlib=Version("0.4.99"))
    with pytest.raises(InstallFailed) as caught:
        ensure_environment(ghost, CPU, progress=quiet)
    message = str(caught.value)
    assert message.startswith("installing jax 0.4.99 (cpu) failed: ") and "\n" not in message
    assert "jax==0.4.99" in message
    assert not env_dir(real, "0.4.99").exists()


RACER = """\
import json, sys
from pathlib import Path
from jaxbisect.lab import backends
from jaxbisect.lab.catalogue import load_catalogue
from jaxbisect.lab.environments import ensure_environment
data = Path(sys.argv[1])
cat = load_catalogue(fetch=lambda url: (data / f"pypi-{url.split('/')[-2]}.json").read_bytes())
env = ensure_environment(cat.get("0.4.20"), backends.get("cpu"), progress=lambda message: None)
print(json.dumps({"reused": env.reused, "jax": env.installed["jax"]}))
"""


@pytest.mark.jax
def test_real_racing_processes_build_once(tmp_path):
    env = {**os.environ, "JAX_SCAN_REPRO_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": str(REPO)}
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(DATA)], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for _ in range(2)]
    results = []
    for racer in racers:
        out, err = racer.communicate(timeout=300)
        assert racer.returncode == 0, err
        results.append(json.loads(out))
    assert sorted(r["reused"] for r in results) == [False, True]
    assert all(r["jax"] == "0.4.20" for r in results)
