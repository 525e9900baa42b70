"""Run the harness of ``repro/`` inside one release's environment and keep what it said.

The boundary between the driver and JAX: a subprocess (``python -m repro --json``) and the
versioned JSON document it prints. Results are stored as they land, keyed by release, backend,
harness options and the harness's own source, so the nox sessions and the bisect driver share
them and a rerun measures nothing twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import repro
from repro import SCHEMA
from repro.target import TargetError
from repro.target import load as load_target

from .catalogue import DEVICELESS, Release, backend_words
from .environments import Environment, ensure_environment, import_error
from .errors import InstallFailed, UserError
from .files import cache_dir, shown_path, write_json

DEFAULT_TIMEOUT = 1800.0
ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
RUNTIME_STACKED_BYTES = 12 * 1024**2
SEARCH_N_RES = 32  # a search probe's array side: seconds, not minutes (see for_search)
REPRO_SOURCE = Path(repro.__file__).resolve().parent


@dataclass(frozen=True)
class HarnessOptions:
    """The harness parameters, as ``python -m repro`` takes them."""

    n_outer: tuple[int, ...] = (1, 2, 5, 10, 15)
    n_inner: int = 100
    n_res: int = 200
    dtype: str = "float32"
    variants: tuple[int, ...] = (0, 1, 2)
    mode: str = "compiled"
    xla_flags: str = ""
    target: str = ""              # a built-in target's name or a spec file's absolute path
    v2_up_to: int | None = None   # v2 only at n_outer <= this (the harness: 1 for a target)

    def argv(self) -> list[str]:
        args = ["--n-outer", *map(str, self.n_outer), "--n-inner", str(self.n_inner),
                "--n-res", str(self.n_res), "--dtype", self.dtype,
                "--variants", *(f"v{v}" for v in self.variants), "--mode", self.mode]
        if self.xla_flags:
            args += [f"--xla-flags={self.xla_flags}"]
        if self.target:
            args += ["--target", self.target]
        if self.v2_up_to is not None:
            args += ["--v2-up-to", str(self.v2_up_to)]
        return args

    def for_search(self, small: bool = True) -> HarnessOptions:
        """What a search probe measures: only what v0's verdict needs. v0 alone, at the two
        smallest n_outer values of 2 or more (the verdict fits those only, and needs two);
        compiles grow with n_outer, and v2's unrolled loop costs most of a full run. ``small``:
        at n_res SEARCH_N_RES at most, since the verdict is scale-free (growth in stacked
        buffers); the driver checks that at both ends of each range against the full size."""
        fitted = tuple(sorted(n for n in self.n_outer if n >= 2)[:2])
        n_res = min(self.n_res, SEARCH_N_RES) if small else self.n_res
        return replace(self, variants=(0,), n_outer=fitted, n_res=n_res)

    def runtime_fallback(self) -> HarnessOptions:
        """Options for releases whose compiled stats are empty: a real run, sized so that one
        stacked buffer is big enough to stand out of the process's RSS (≥ 12 MiB) while
        every case still fits this machine easily (n_outer ≤ 10: under ~150 MiB)."""
        itemsize = ITEMSIZE[self.dtype]
        n_res = 1
        while self.n_inner * n_res**3 * itemsize < RUNTIME_STACKED_BYTES:
            n_res += 1
        n_outer = tuple(n for n in self.n_outer if n <= 10)
        if len([n for n in n_outer if n >= 2]) < 2:
            n_outer = (1, 2, 5)
        return replace(self, mode="runtime", n_res=n_res, variants=(0,), n_outer=n_outer)


@dataclass(frozen=True)
class Measurement:
    release: str
    backend: str
    options: HarnessOptions
    document: dict | None       # what ``python -m repro --json`` printed; None when it failed
    error: str | None           # one line: why there is no document (install, crash, timeout)
    seconds: float              # time spent measuring it when it was measured
    cached: bool = False        # True when this call measured nothing
    installed: dict = field(default_factory=dict)

    @property
    def verdict(self) -> str:
        return self.document["verdict"]["status"] if self.document else "unavailable"

    @property
    def reason(self) -> str | None:
        if self.document is None:
            return self.error
        return self.document["verdict"].get("reason")

    @property
    def stats_empty(self) -> bool:
        """The compiled plan was read but holds nothing (zeros, None): not a crash, and a real
        run can still answer (jaxlib < 0.4.29 on the CPU)."""
        doc = self.document
        if doc is None or doc["verdict"]["status"] != "unavailable" or doc["mode"] != "compiled":
            return False
        v0 = [c for c in doc["cases"] if c["variant"] == "v0"]
        return bool(v0) and all(c["status"] == "unavailable" for c in v0)

    def as_json(self) -> dict:
        d = asdict(self)
        d["options"]["n_outer"] = list(self.options.n_outer)
        d["options"]["variants"] = list(self.options.variants)
        return d

    @classmethod
    def from_json(cls, d: dict) -> Measurement:
        o = dict(d["options"])
        o["n_outer"], o["variants"] = tuple(o["n_outer"]), tuple(o["variants"])
        return cls(**{**d, "options": HarnessOptions(**o), "cached": True})


def target_option(text: str | None) -> str:
    """``--target`` as the harness takes it: a built-in's name, or a spec file's absolute
    path (the harness runs in another folder); a bad one is a UserError."""
    if text is None:
        return ""
    if not text.strip():
        raise UserError("--target needs a name (a6000, a100, h100, h200) or a spec file")
    try:
        target = load_target(text)
    except TargetError as exc:
        raise UserError(str(exc)) from None
    return target.name if target.source.startswith("built in") else target.source


def target_label(target: str) -> str:
    """How files name a target: a built-in's name; a spec file's stem and content digest
    (``mine-1a2b3c4d``), so that it never takes a built-in's (or another file's) place."""
    if not target:
        return ""
    if "/" not in target:
        return target
    return f"{Path(target).stem}-{load_target(target).sha256[:8]}"


def target_key(target: str) -> str:
    """What a stored result depends on of its target: the spec's content (edited in place,
    it is another target)."""
    return load_target(target).sha256 if target else ""


def source_digest(root: Path, *patterns: str) -> str:
    """A digest of the files under ``root`` matching ``patterns``, names and contents."""
    digest = hashlib.sha256()
    for path in sorted(p for pattern in patterns for p in root.glob(pattern)):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def harness_id() -> str:
    """A digest of the harness's source and its target specs: changing either invalidates
    stored results."""
    return source_digest(REPRO_SOURCE, "*.py", "targets/*.txtpb")


def staged_harness() -> Path:
    """A folder holding only a copy of ``repro/``: put first on a JAX environment's path,
    it cannot shadow anything of that environment (our ``bisect/`` package least of all)."""
    stage = cache_dir() / "harness" / harness_id()
    if not (stage / "repro" / "__init__.py").exists():
        # Threads of one process (probes run at once) stage apart too.
        tmp = stage.with_name(f"{stage.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(REPRO_SOURCE, tmp / "repro",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        try:
            os.replace(tmp, stage)
        except OSError:  # another process staged it first
            shutil.rmtree(tmp, ignore_errors=True)
    return stage


def harness_args(backend: str, options: HarnessOptions) -> list[str]:
    """``python -m repro``'s arguments for one release's run on ``backend``."""
    if backend == DEVICELESS:  # --target in the options says what to compile for
        return ["--json", *options.argv()]
    # A cuda12 environment must run on the GPU: JAX falling back to the CPU is a failure.
    platform = "gpu" if backend == "cuda12" else "cpu"
    return ["--json", "--backend", platform, *options.argv()]


def ignored_environment_note() -> str | None:
    """One line when the caller's XLA_FLAGS is set: the probes never see it (a measurement
    must not depend on the shell it was started from)."""
    flags = os.environ.get("XLA_FLAGS", "").strip()
    if not flags:
        return None
    return (f"note: XLA_FLAGS from your environment ({flags}) is not passed to the probes; "
            f"use --xla-flags to set XLA flags for every probe")


def harness_environ() -> dict[str, str]:
    """The environment a harness process gets: ours, less what would change a measurement
    behind the options' back (the caller's XLA_FLAGS, JAX_*, XLA_PYTHON_*, PYTHON* settings:
    warnings as errors, another allocator …), with only the staged harness on its path."""
    child_env = {k: v for k, v in os.environ.items()
                 if k != "XLA_FLAGS" and not k.startswith(("JAX_", "XLA_PYTHON_", "PYTHON"))}
    child_env["PYTHONPATH"] = str(staged_harness())
    return child_env


def _options_key(options: HarnessOptions) -> str:
    fields = asdict(options)
    if options.target:  # a spec file edited in place is another target
        fields["target_sha256"] = target_key(options.target)
    text = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def result_path(release: Release, backend: str, options: HarnessOptions) -> Path:
    return (cache_dir() / "results" / backend / f"jax-{release.version}"
            / f"{harness_id()}-{_options_key(options)}.json")


def cached_measurement(release: Release, backend: str, options: HarnessOptions):
    path = result_path(release, backend, options)
    try:
        stored = Measurement.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if stored.error and CANNOT_IMPORT in stored.error:  # a broken environment, not a verdict
        return None
    return stored


HARNESS_INTERRUPTED = 130  # what ``python -m repro`` exits with when Ctrl-C reached it
CANNOT_IMPORT = "cannot import JAX here"   # what ``python -m repro`` says when jax won't import
# An abseil/TSL log line of severity F (fatal), with or without the date in front:
# "2026-11-30 13:35:40.341465: F external/xla/xla/parse_flags_from_env.cc:226] Unknown flags …"
# "F1130 13:35:40.341465    6172 parse_flags_from_env.cc:226] Unknown flags …"
_FATAL_LOG = re.compile(r"(?:^|\s)F(?:\d{4} [\d:.]+ +\d+)? *[\w./-]+:\d+\] (.+)$")


def fatal_log_line(stderr: str) -> str | None:
    """XLA's own words when it aborted the process (a bad flag, a failed check), else None."""
    for line in reversed(stderr.splitlines()):
        match = _FATAL_LOG.search(line.strip())
        if match:
            return match.group(1).strip()[:300]
    return None


def run_harness(env: Environment, options: HarnessOptions, timeout: float) -> dict:
    """Run ``python -m repro --json`` in ``env``; the document, or HarnessFailed with one line."""
    return run_repro(env, harness_args(env.backend, options), timeout)


def run_repro(env: Environment, argv: list[str], timeout: float,
              answers: tuple[int, ...] = (0,)) -> dict:
    """``python -m repro --quiet ARGV`` in ``env``, the staged harness first on its path; the
    JSON document it printed (exiting with one of ``answers``), or HarnessFailed."""
    stage, child_env = staged_harness(), harness_environ()
    command = [str(env.python), "-m", "repro", "--quiet", *argv]
    try:
        done = subprocess.run(command, cwd=stage, env=child_env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise HarnessFailed(f"the harness timed out after {timeout:.0f} s",
                            lasting=False) from None
    if done.returncode in (HARNESS_INTERRUPTED, -signal.SIGINT):
        # Ctrl-C reached the harness too: nothing to say of the release, nothing to store.
        raise KeyboardInterrupt
    if done.returncode not in answers:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        fatal = fatal_log_line(done.stderr)
        if fatal:  # XLA aborted it and said why (an unknown flag, say): the same every time
            raise HarnessFailed(f"XLA aborted the harness: {fatal}")
        if done.returncode < 0:  # killed (out of memory, Ctrl-C): not the release's answer
            raise HarnessFailed(f"the harness was killed by signal {-done.returncode}",
                                lasting=False)
        broken = import_error(env.python)  # the environment's fault, or the release's?
        if broken:
            raise EnvironmentBroken(f"jax does not import in {shown_path(env.path)}: {broken}")
        raise HarnessFailed(f"the harness failed: {lines[-1][:300]}")
    try:
        document = json.loads(done.stdout)
    except ValueError:
        raise HarnessFailed("the harness printed no JSON document") from None
    if document.get("schema") != SCHEMA:
        raise HarnessFailed(f"the harness spoke schema {document.get('schema')}, not {SCHEMA}")
    return document


class HarnessFailed(Exception):
    """The harness ran but gave no usable document (a crash, a timeout, a foreign schema).

    ``lasting`` failures are the release's own and are stored; others (a timeout, a kill)
    may go away and are measured again next time.
    """

    def __init__(self, message: str, *, lasting: bool = True):
        super().__init__(message)
        self.lasting = lasting


class EnvironmentBroken(HarnessFailed):
    """jax does not import in an environment that was complete (a library deleted, a disk
    error): the environment's fault, not the release's answer. Rebuilt once, never stored."""

    def __init__(self, message: str):
        super().__init__(message, lasting=False)


def measure_release(release: Release, backend: str, options: HarnessOptions, *,
                    progress: Callable[[str], None] | None = None,
                    timeout: float = DEFAULT_TIMEOUT, use_cache: bool = True) -> Measurement:
    """The harness's answer for one release, from the store or measured now and stored.

    Failures that are the release's (no wheels, a crash, a timeout) come back as a
    Measurement with ``error`` set and are stored too, so that a rerun skips them at once.
    """
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    if use_cache:
        stored = cached_measurement(release, backend, options)
        if stored is not None:
            return stored
    started = time.perf_counter()
    installed: dict = {}
    rebuild = False
    where = backend_words(backend, options.target)
    while True:
        try:
            env = ensure_environment(release, backend, progress=say, rebuild=rebuild)
            installed = dict(env.installed)
            say(f"jax {release.version} ({where}): measuring, {options.mode} mode, "
                f"n_res {options.n_res}, n_outer {', '.join(map(str, options.n_outer))} …")
            document, error = run_harness(env, options, timeout), None
            keep = True
        except InstallFailed as exc:  # may be transient (network, disk): never stored
            document, error, keep = None, str(exc), False
        except EnvironmentBroken as exc:
            if not rebuild:
                say(f"jax {release.version} ({where}): its environment no longer imports "
                    f"jax ({exc}); rebuilding it")
                rebuild = True
                continue
            document, error, keep = None, str(exc), False
        except HarnessFailed as exc:
            document, error, keep = None, str(exc), exc.lasting
        break
    measurement = Measurement(release=str(release.version), backend=backend, options=options,
                              document=document, error=error,
                              seconds=round(time.perf_counter() - started, 2),
                              installed=installed)
    if keep:
        write_json(result_path(release, backend, options), measurement.as_json())
    say(f"jax {release.version} ({where}): {measurement.verdict}"
        + (f" ({measurement.reason})" if measurement.reason else "")
        + f" in {measurement.seconds:.1f} s")
    return measurement
