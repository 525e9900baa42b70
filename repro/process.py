"""How a child JAX process is set up: the one place for its backend and XLA_FLAGS.

XLA reads ``XLA_FLAGS`` once, when its first client starts, so anything that varies flags
(listing them, dumping passes, turning passes off) runs JAX in a child process whose
environment comes from here.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

PLATFORMS = {"auto": None, "cpu": "cpu", "gpu": "cuda", "cuda": "cuda", "cuda12": "cuda"}


def child_environ(backend: str = "cpu", xla_flags: str = "",
                  base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with JAX_PLATFORMS for ``backend`` and
    ``xla_flags`` after any XLA_FLAGS already set."""
    env = dict(os.environ if base is None else base)
    if PLATFORMS.get(backend):
        env["JAX_PLATFORMS"] = PLATFORMS[backend]
    flags = " ".join(f for f in (env.get("XLA_FLAGS", "").strip(), xla_flags.strip()) if f)
    if flags:
        env["XLA_FLAGS"] = flags
    else:
        env.pop("XLA_FLAGS", None)
    return env


def start_backend_code() -> str:
    """Python source that imports jax and starts its backend (which parses XLA_FLAGS)."""
    return "import jax; jax.devices()"


def configure_this_process(backend: str = "cpu", xla_flags: str = "") -> None:
    """The same set-up for this process; must run before the first ``import jax``."""
    wanted = child_environ(backend, xla_flags, base=dict(os.environ))
    os.environ.clear()
    os.environ.update(wanted)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send whatever JAX and its plugins print while they work to stderr, at the descriptor
    level (C++ logging too): with ``--json``, stdout is one JSON document and nothing else
    (jax 0.6.1's CUDA plugin prints a line about its constraints check to stdout)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
