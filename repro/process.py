"""How a JAX process is set up: the one place for its backend, XLA_FLAGS and XLA's dumps.

XLA reads ``XLA_FLAGS`` once, when its first client starts, so anything that varies flags
(listing them, dumping passes, turning passes off) runs JAX in a child process whose
environment comes from here, and every ``python -m repro…`` sets its own up here before the
first ``import jax``. Standard library only (no jax).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


def child_environ(backend: str = "cpu", xla_flags: str = "",
                  base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) with JAX_PLATFORMS for ``backend`` and
    ``xla_flags`` after any XLA_FLAGS already set."""
    from .target import PLATFORMS

    env = dict(os.environ if base is None else base)
    if PLATFORMS.get(backend):
        env["JAX_PLATFORMS"] = PLATFORMS[backend]
    if flags := join_flags(env.get("XLA_FLAGS", ""), xla_flags):
        env["XLA_FLAGS"] = flags
    else:
        env.pop("XLA_FLAGS", None)
    return env


def configure_this_process(backend: str = "cpu", xla_flags: str = "", *, target=None,
                           params: Mapping = {}) -> None:
    """The same set-up for this process, before the first ``import jax``: for a compile-only
    ``target`` (repro/target.py's protocol), whatever it sets (its platforms, its variables);
    JAX's 64-bit types where a case's parameter asks for float64."""
    wanted = child_environ("auto" if target else backend, xla_flags, base=dict(os.environ))
    if "float64" in params.values():
        wanted["JAX_ENABLE_X64"] = "1"
    wanted.pop("REPRO_TPU_SLICE", None)  # repro.tpu_target.SLICE_VARIABLE: a target's alone
    if target:
        target.configure(wanted)
        # A TPU target's slice: what a multi-device case's devices(n) returns (repro/devices.py).
        wanted.update(getattr(target, "slice_environ", dict)())
    os.environ.clear()
    os.environ.update(wanted)


def host_devices(count: int | None) -> str:
    """XLA_FLAGS for ``count`` CPU host devices (jax starts one), or "" for none asked."""
    return f"--xla_force_host_platform_device_count={count}" if count else ""


def join_flags(*flags: str) -> str:
    """The one XLA_FLAGS join: ``flags`` in order, blank ones left out."""
    return " ".join(f.strip() for f in flags if f and f.strip())


# -- XLA's dumps --------------------------------------------------------------------------
# Every path is quoted: a temporary folder may hold spaces.


# What XLA dumps: every module (for measure.Compiler), as text (python -m repro.dumps), the
# module after every HLO pass that changes it (python -m repro.xla_passes, --pass-dumps).
MODULES, TEXT, PASSES = ("--xla_dump_hlo_module_re=.*", "--xla_dump_hlo_as_text",
                         "--xla_dump_hlo_pass_re=.*")
# The name XLA gives the module after one pass: module_N.<module>.SSSS.<pipeline>.after_<pass>…
PASS_DUMP = re.compile(r"^module_\d+\.(?P<module>[\w.\-]+?)\.\d{4}\..+\.txt$")


def dump_flags(dump_dir: Path, what: str = MODULES) -> str:
    """XLA_FLAGS that dump ``what`` into ``dump_dir``."""
    return f'--xla_dump_to="{dump_dir}" {what}'


DUMP_FOLDERS: list[Path] = []  # open ones: what an interruption (repro/cli.py) removes


@contextmanager
def dump_folder(prefix: str, wanted: bool = True) -> Iterator[Path | None]:
    """A temporary folder for XLA's dumps (None where not ``wanted``), removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix=prefix)) if wanted else None
    if folder is not None:
        DUMP_FOLDERS.append(folder)
    try:
        yield folder
    finally:
        if folder is not None:
            DUMP_FOLDERS.remove(folder)
            shutil.rmtree(folder, ignore_errors=True)


# -- python -m repro ----------------------------------------------------------------------


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
