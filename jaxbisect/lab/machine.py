"""The machine a result came from, in the few lines a maintainer asks for."""

from __future__ import annotations

import contextlib
import functools
import os
import platform
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

from jaxbisect.lab import git


def _output(argv: list[str]) -> str | None:
    """What ``argv`` printed, where it ran and said something; else None."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=15,
                              cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def nvidia_gpus() -> list[str]:
    """The GPUs ``nvidia-smi -L`` lists ([] where it is missing, or lists none)."""
    listing = _output(["nvidia-smi", "-L"]) if shutil.which("nvidia-smi") else None
    return [line for line in (listing or "").splitlines() if line.startswith("GPU ")]


HARNESS_GIB = 1.0  # a harness run at the report's sizes peaks near 0.5 GiB (jax 0.10.2, CPU)


def memory_gib() -> float | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 1024**3
    except (ValueError, OSError):
        return None


def parallel_runs() -> int:
    """How many harness runs this machine holds at once: one a core, as far as memory allows.
    (A compile keeps one core busy, so runs on different cores add up: docs/benchmarks.md.)"""
    cores, memory = os.cpu_count() or 1, memory_gib()
    return max(1, cores if memory is None else min(cores, int(memory // HARNESS_GIB)))


def default_jobs() -> int:
    """Candidates a bisection round probes by default: half the harness runs the machine holds
    at once, since each search probe has a full table and installs running behind it (whether
    two at once pay on two cores is measured by ``nox -s bench``: reports/bench.md)."""
    return max(1, parallel_runs() // 2)


_UV_LOCK = threading.Lock()


@functools.cache
def _find_uv() -> str | None:
    try:
        import uv

        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def uv_binary() -> str | None:
    """uv's executable, found once, under a lock: find_uv_bin reads sysconfig, whose first
    use is not thread-safe (releases installed side by side saw get_config_var answer None)."""
    with _UV_LOCK:
        return _find_uv()


def machine_description(*, dated: bool = False) -> str:
    """OS, CPU, cores, memory, GPUs, the driver's Python, uv, and this toolkit's commit."""
    lines = [f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"] if dated else []
    lines += [f"platform: {platform.platform()}", f"machine: {platform.machine()}"]
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        model = next((line.split(":", 1)[1].strip() for line in handle
                      if line.startswith("model name")), None)
        if model:
            lines.append(f"cpu: {model}")
    lines.append(f"cores: {os.cpu_count()}")
    if (memory := memory_gib()) is not None:
        lines.append(f"memory: {memory:.1f} GiB")
    if shutil.which("nvidia-smi"):
        gpus = _output(["nvidia-smi", "-L"])  # MIG devices too, each on a line of its own
        lines += [f"gpu: {gpu}" for gpu in (gpus or "none visible").splitlines()]
    lines.append(f"python (driver): {sys.version.split()[0]}")
    for what, found in (("uv", _output([uv_binary() or "uv", "--version"])),
                        ("toolkit commit", git.short_head(Path(__file__).resolve().parent))):
        if found:
            lines.append(f"{what}: {found}")
    return "\n".join(lines)
