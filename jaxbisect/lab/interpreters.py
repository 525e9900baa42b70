"""The Python interpreters on this machine that a release's environment can be built on.

The driver's own interpreter comes first; others are found on PATH (``python3.N``) and under
pyenv (``$PYENV_ROOT/versions``). ``JAX_SCAN_REPRO_PYTHONS`` (paths, ``os.pathsep``
separated), when set, replaces that search: set it empty to use the driver's own only. Each
is asked for its version, so a broken shim is never used.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ASK_VERSION = "import sys; print(*sys.version_info[:2], 't' in getattr(sys, 'abiflags', ''))"
OLDEST = (3, 11)  # the harness is tested from here on; older jax releases all serve 3.11


@dataclass(frozen=True)
class Interpreter:
    version: tuple[int, int]
    path: Path

    def __str__(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def own() -> Interpreter:
    return Interpreter(tuple(sys.version_info[:2]), Path(sys.executable))


def _candidates() -> list[Path]:
    if "JAX_SCAN_REPRO_PYTHONS" in os.environ:
        return [Path(p) for p in os.environ["JAX_SCAN_REPRO_PYTHONS"].split(os.pathsep) if p]
    found = [Path(p) for minor in range(OLDEST[1], 16)
             if (p := shutil.which(f"python3.{minor}"))]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    return found + sorted(pyenv.glob("3.*/bin/python3"))  # _version_of skips the old ones


def _version_of(path: Path) -> tuple[int, int] | None:
    try:
        done = subprocess.run([str(path), "-I", "-c", ASK_VERSION], capture_output=True,
                              text=True, timeout=15)
        major, minor, free_threaded = done.stdout.split()
        version = (int(major), int(minor))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0 or free_threaded == "True" or version < OLDEST:
        return None
    return version


@cache
def find_interpreters() -> tuple[Interpreter, ...]:
    """One interpreter per Python version: the driver's own first, then the others by version."""
    mine = own()
    by_version = {mine.version: mine}
    for path in _candidates():
        if (version := _version_of(path)) and version not in by_version:
            by_version[version] = Interpreter(version, path)
    return (mine, *sorted((i for v, i in by_version.items() if v != mine.version),
                          key=lambda i: i.version))
