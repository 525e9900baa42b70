"""Running ``python -m repro.evidence`` (or the harness) in one release's environment.

The driver never imports jax: each release answers through a subprocess and one JSON document.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from repro import SCHEMA


class EvidenceFailed(Exception):
    """``python -m repro.evidence`` gave no usable document for a release."""


@dataclass(frozen=True)
class EvidenceOptions:
    """What ``python -m repro.evidence`` measures; the defaults finish in seconds per release."""

    n_outer: int = 3                  # the dumped v0: old and new differ from 3 on
    n_inner: int = 100
    n_res: int = 32
    dtype: str = "float32"
    xla_flags: str = ""
    workaround_n_outer: tuple[int, ...] = (1, 2, 4, 6)
    unroll: tuple[int, ...] = ()      # () -> 2 and n_inner (full)
    platform: str = ""                # JAX_PLATFORMS for every run ("cuda": no CPU fallback)
    target: str = ""                  # compile for this GPU without one (python -m repro --target)

    def argv(self) -> list[str]:
        args = ["--n-outer", str(self.n_outer), "--n-inner", str(self.n_inner),
                "--n-res", str(self.n_res), "--dtype", self.dtype,
                "--workaround-n-outer", *map(str, self.workaround_n_outer)]
        if self.unroll:
            args += ["--unroll", *map(str, self.unroll)]
        if self.target:
            args += ["--target", self.target]
        if self.xla_flags:
            args.append(f"--xla-flags={self.xla_flags}")
        return args

    @property
    def array_shape(self) -> tuple[int, ...]:
        return (self.n_res,) * 3


def run_in_environment(python: Path, module: str, args: Sequence[str], timeout: float,
                        platform: str = "") -> dict:
    """``python -m MODULE ARGS`` from the staged harness; its JSON document."""
    from ..probe import harness_environ, staged_harness  # the same staging as the probes

    stage, env = staged_harness(), harness_environ()
    if platform:
        env["JAX_PLATFORMS"] = platform
    try:
        done = subprocess.run([str(python), "-m", module, *args], cwd=stage, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise EvidenceFailed(f"{module} timed out after {timeout:.0f} s") from None
    except OSError as exc:
        raise EvidenceFailed(f"cannot run {python}: {exc}") from None
    try:
        document = json.loads(done.stdout)
    except ValueError:
        tail = (done.stderr.strip().splitlines() or [""])[-1][:300]
        how = (f"killed by signal {-done.returncode}" if done.returncode < 0
               else f"exit status {done.returncode}")
        raise EvidenceFailed(f"{module} printed no JSON document ({how}): {tail}") from None
    if document.get("schema") != SCHEMA:
        raise EvidenceFailed(f"{module} spoke schema {document.get('schema')}, not {SCHEMA}")
    return document


def run_evidence(python: Path, options: EvidenceOptions, timeout: float = 900) -> dict:
    """``python -m repro.evidence --json`` in one release's environment."""
    return run_in_environment(python, "repro.dumps", ["--json", *options.argv()], timeout,
                               options.platform)

