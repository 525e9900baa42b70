"""Other Pythons on the machine: jax 0.11+ needs 3.12, and a machine may have one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from jaxbisect.lab import backends
from jaxbisect.lab import catalogue as catalogue_module
from jaxbisect.lab.catalogue import interpreter_for, load_catalogue
from jaxbisect.lab.environments import ensure_environment, environment_path
from jaxbisect.lab.interpreters import Interpreter, find_interpreters, own

CPU = backends.get("cpu")


@pytest.fixture
def cat(recorded_catalogue):
    return recorded_catalogue


def fake_python(folder: Path, name: str, answer: str, status: int = 0) -> Path:
    script = folder / name
    script.write_text(f"#!/bin/sh\necho '{answer}'\nexit {status}\n")
    script.chmod(0o755)
    return script


def test_the_driver_s_own_python_comes_first_and_broken_ones_are_ignored(tmp_path,
                                                                          monkeypatch):
    good = fake_python(tmp_path, "python3.12", "3 12 False")
    broken = fake_python(tmp_path, "python3.13", "pyenv: python3.13: command not found", 127)
    same = fake_python(tmp_path, "python3.11-copy", f"{own().version[0]} {own().version[1]} False")
    free = fake_python(tmp_path, "python3.14t", "3 14 True")
    old = fake_python(tmp_path, "python3.8", "3 8 False")
    monkeypatch.setenv("JAX_SCAN_REPRO_PYTHONS",
                       os.pathsep.join(map(str, [good, broken, same, free, old])))
    find_interpreters.cache_clear()
    found = find_interpreters()
    assert found[0] == own()
    assert Interpreter((3, 12), good) in found
    assert [i.version for i in found].count(own().version) == 1
    assert {i.version for i in found} == {own().version, (3, 12)}  # no broken, t, or old ones


def test_a_release_that_needs_a_newer_python_uses_one_when_found(cat, monkeypatch):
    if own().version >= (3, 12):
        pytest.skip("the driver itself runs on 3.12 or newer")
    release = cat.get("0.12.0.1")
    monkeypatch.setattr(catalogue_module, "find_interpreters", lambda: (own(),))
    python, why = interpreter_for(release, CPU)
    assert python is None
    assert why.startswith("requires Python >=3.12") and "Pythons found here: 3.11" in why
    assert cat.unusable_reason(release, CPU) == why
    newer = Interpreter((3, 12), Path("/opt/python3.12/bin/python3"))
    monkeypatch.setattr(catalogue_module, "find_interpreters", lambda: (own(), newer))
    assert interpreter_for(release, CPU) == (newer, None)
    assert cat.unusable_reason(release, CPU) is None
    assert environment_path(release, CPU).name == "jax-0.12.0.1-cpu-py312"
    # A release the driver's own Python serves keeps it, and reasons that no Python cures
    # (a yanked release) are not retried on others.
    assert interpreter_for(cat.get("0.5.0"), CPU)[0] == own()
    assert interpreter_for(cat.get("0.4.32"), CPU) == (None, "yanked")


@pytest.mark.jax
def test_newest_release_runs_the_harness_on_a_python_found_here(monkeypatch):
    """jax 0.12.0.1 needs Python 3.12; where this machine has one, it is measured for real."""
    monkeypatch.delenv("JAX_SCAN_REPRO_PYTHONS")
    find_interpreters.cache_clear()
    catalogue = load_catalogue()
    release = catalogue.get("0.12.0.1")
    python, why = interpreter_for(release, CPU)
    if python is None:
        pytest.skip(f"no interpreter for jax 0.12.0.1 here: {why}")
    env = ensure_environment(release, CPU, progress=lambda message: None)
    assert env.path.name.endswith(f"py{python.version[0]}{python.version[1]}")
    done = subprocess.run([str(env.python), "-m", "repro", "--check", "-q", "--n-res", "16",
                           "--n-inner", "10", "--n-outer", "1", "3", "6"],
                          cwd=Path(__file__).resolve().parent.parent, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 1, done.stderr  # the newest release still grows on the CPU
