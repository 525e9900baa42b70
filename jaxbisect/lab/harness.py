"""The boundary between the driver and JAX: what runs inside one release's environment.

The driver never imports jax. Everything it asks of a release (``python -m repro``'s
measurement, a case's metric, ``repro.xla_flags``, ``repro.xla_passes``, ``repro.dumps``'s
dumps) is one subprocess of that environment's Python, run from a staged copy of ``repro/``,
which prints one versioned JSON document. This module holds the one runner and JSON reader
(``run_module``) with its error mapping, the staged harness and the child's environment, and
the options types with their one argument builder each.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path

import repro
from jaxbisect.errors import UserError
from jaxbisect.files import cache_dir, shown_path
from jaxbisect.lab.environments import Environment, import_error
from jaxbisect.lab.executors import LOCAL, Executor, ProbeLost
from jaxbisect.search.crashes import FATAL_LOG, crash_of
from repro import SCHEMA
from repro.target import TargetError, built_in
from repro.target import load as load_target

DEFAULT_TIMEOUT = 1800.0
REPRO_SOURCE = Path(repro.__file__).resolve().parent


def target_option(text: str | None) -> str:
    """``--target`` as the harness takes it: a built-in's name, or a spec file's absolute
    path (the harness runs in another folder); a bad one is a UserError."""
    if text is None:
        return ""
    if not text.strip():
        raise UserError(f"--target needs a name ({', '.join(built_in())}) or a spec file")
    try:
        target = load_target(text)
    except TargetError as exc:
        raise UserError(str(exc)) from None
    return target.name if target.source.startswith("built in") else target.source


def target_label(target: str) -> str:
    """How files name a target: a built-in's name; a spec file's stem and content digest
    (``mine-1a2b3c4d``), so that it never takes a built-in's (or another file's) place."""
    if "/" not in target:  # a built-in's name, or none
        return target
    return f"{Path(target).stem}-{load_target(target).sha256[:8]}"


def target_key(target: str) -> str:
    """What a stored result depends on of its target: the spec's content (edited in place,
    it is another target)."""
    return load_target(target).sha256 if target else ""


@functools.cache  # the toolkit's own source, read once a process (every store key asks)
def harness_id() -> str:
    """A digest of the harness's source and its target specs (names and contents): changing
    either invalidates stored results."""
    digest = hashlib.sha256()
    for path in sorted([*REPRO_SOURCE.glob("*.py"), *REPRO_SOURCE.glob("targets/*.txtpb")]):
        digest.update(str(path.relative_to(REPRO_SOURCE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


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


def platform_args(backend: str, target: str = "") -> list[str]:
    """The harness's ``--backend`` for an environment of ``backend``: a device's environment
    must run on it (JAX falling back to the CPU is a failure), a CPU one on the CPU; a
    ``target``'s compiles for the device it names (none)."""
    return backend.harness_args(target)


def ignored_environment_note() -> str | None:
    """One line when the caller's XLA_FLAGS is set: the probes never see it (a measurement
    must not depend on the shell it was started from)."""
    if flags := os.environ.get("XLA_FLAGS", "").strip():
        return (f"note: XLA_FLAGS from your environment ({flags}) is not passed to the probes; "
                f"use --xla-flags to set XLA flags for every probe")
    return None


def harness_environ(jax_source: Path | None = None) -> dict[str, str]:
    """The environment a harness process gets: ours, less what would change a measurement
    behind the options' back (the caller's XLA_FLAGS, JAX_*, XLA_PYTHON_*, PYTHON* settings:
    warnings as errors, another allocator …), with only the staged harness on its path (and
    ``jax_source``, a commit's checkout, whose ``jax/`` then shadows the release's)."""
    path = [str(staged_harness()), *([str(jax_source)] if jax_source else [])]
    return {**{k: v for k, v in os.environ.items()
               if k != "XLA_FLAGS" and not k.startswith(("JAX_", "XLA_PYTHON_", "PYTHON"))},
            "PYTHONPATH": os.pathsep.join(path)}


HARNESS_INTERRUPTED = 130  # what ``python -m repro`` exits with when Ctrl-C reached it


def fatal_log_line(stderr: str) -> str | None:
    """XLA's own words when it aborted the process (a bad flag, a failed check), else None."""
    return next((match.group(1).strip()[:300] for line in reversed(stderr.splitlines())
                 if (match := FATAL_LOG.search(line.strip()))), None)


def interrupted(stderr: str | None) -> bool:
    """Whether Python's own KeyboardInterrupt ended the process: Ctrl-C that came before the
    harness set its handler (while Python started) exits 1 with that traceback."""
    lines = (stderr or "").strip().splitlines()
    return bool(lines) and lines[-1].strip() == "KeyboardInterrupt"


class HarnessFailed(Exception):
    """A module of the harness ran but gave no usable document (a crash, a timeout, a
    foreign schema). ``lasting`` failures are the release's own and are stored; others (a
    timeout, a kill) may go away and are measured again next time."""

    lasting = True

    def __init__(self, message: str, *, lasting: bool | None = None):
        super().__init__(message)
        if lasting is not None:
            self.lasting = lasting


class Crashed(HarnessFailed):
    """The process crashed (a signal, out of memory, an uncaught C++ error): the release's
    behaviour. ``crash`` is what the ``error`` metric compares (crashes.crash_of). Stored,
    but for a SIGKILL, which may be the machine's memory rather than the release's."""

    def __init__(self, what: str, crash: str):
        super().__init__(f"{what} {crash}", lasting=not crash.startswith("crashed: SIGKILL"))
        self.crash = crash


class RunTimedOut(HarnessFailed):
    """The process ran past its time limit: the program hangs (or is far slower) there."""

    lasting = False


class EnvironmentBroken(HarnessFailed):
    """jax does not import in an environment that was complete (a library deleted, a disk
    error): the environment's fault, not the release's answer. Rebuilt once, never stored."""

    lasting = False


def finished(executor: Executor, argv: list[str], what: str, *, cwd, env: dict,
             timeout: float):
    """``argv`` run by ``executor`` to its end (executors.Finished); a lost probe, a run
    past ``timeout`` or a program that cannot start as one line (HarnessFailed,
    RunTimedOut)."""
    try:
        return executor.run(argv, cwd=cwd, env=env, timeout=timeout)
    except ProbeLost as exc:
        raise HarnessFailed(f"{what}: {exc}", lasting=False) from None
    except subprocess.TimeoutExpired:
        raise RunTimedOut(f"{what} timed out after {timeout:.0f} s") from None
    except OSError as exc:
        raise HarnessFailed(f"cannot run {argv[0]}: {exc}", lasting=False) from None


def run_module(python: Path, module: str, argv: Sequence[str], timeout: float, *,
               answers: tuple[int, ...] = (0,), platform: str = "",
               executor: Executor = LOCAL, jax_source: Path | None = None,
               environ: dict | None = None) -> dict:
    """``python -m MODULE ARGV`` under a release's ``python``, the staged harness first on its
    path (``platform``: JAX_PLATFORMS for it); the JSON document it printed, exiting with one
    of ``answers``, or HarnessFailed (EnvironmentBroken where jax no longer imports there).
    ``jax_source``: a jax commit's checkout, first on the path after the harness.
    Ctrl-C that reached the child is a KeyboardInterrupt here too. ``executor``: where the
    process runs; a document from elsewhere names the place under ``ran_on``."""
    stage, child_env = staged_harness(), {**harness_environ(jax_source), **(environ or {})}
    if platform:
        child_env["JAX_PLATFORMS"] = platform
    what = "the harness" if module == "repro" else module
    done = finished(executor, [str(python), "-m", module, *argv], what, cwd=stage,
                    env=child_env, timeout=timeout)
    if done.returncode in (HARNESS_INTERRUPTED, -signal.SIGINT) or interrupted(done.stderr):
        # Ctrl-C reached the harness too: nothing to say of the release, nothing to store.
        raise KeyboardInterrupt
    if done.returncode not in answers:
        lines = done.stderr.strip().splitlines() or [f"exit status {done.returncode}"]
        if crash := crash_of(done.returncode, done.stderr):
            raise Crashed(what, crash)
        # XLA aborted it and said why (an unknown flag, say): the same every time
        if fatal := fatal_log_line(done.stderr):
            raise HarnessFailed(f"XLA aborted {what}: {fatal}")
        if done.returncode < 0:  # killed (out of memory, Ctrl-C): not the release's answer
            raise HarnessFailed(f"{what} was killed by signal {-done.returncode}",
                                lasting=False)
        raise_if_broken(python, jax_source)  # the environment's fault, or the release's?
        raise HarnessFailed(f"{what} failed: {lines[-1][:300]}")
    try:
        document = json.loads(done.stdout)
    except ValueError:
        raise_if_broken(python, jax_source)  # a case's harness exits 125 without jax
        said = done.stderr.strip().splitlines()
        raise HarnessFailed(f"{what} printed no JSON document"
                            + (f": {said[-1][:300]}" if said else "")) from None
    if document.get("schema") != SCHEMA:
        raise HarnessFailed(f"{what} spoke schema {document.get('schema')}, not {SCHEMA}")
    return {**document, "ran_on": done.where} if done.where else document


def raise_if_broken(python: Path, jax_source: Path | None = None) -> None:
    """EnvironmentBroken where jax no longer imports in ``python``'s environment; where it
    does but not with ``jax_source`` (a commit's), the commit cannot run there: a lasting
    failure, the commit's skip."""
    if broken := import_error(python):
        raise EnvironmentBroken(f"jax does not import in "
                                f"{shown_path(Path(python).parent.parent)}: {broken}")
    if jax_source is not None and (broken := import_error(python, jax_source)):
        raise HarnessFailed(f"jax's Python at this commit does not import on this jaxlib: "
                            f"{broken}")


# The modules other than the harness print a document with status "error" and exit 2 when
# they ran but could not answer; that document is theirs to read.
MODULE_ANSWERS = (0, 2)


def run_repro(env: Environment, argv: list[str], timeout: float,
              answers: tuple[int, ...] = (0,), executor: Executor = LOCAL,
              jax_source: Path | None = None, environ: dict | None = None) -> dict:
    """``python -m repro --quiet ARGV`` in ``env``: the document, or HarnessFailed.
    ``environ``: what the candidate adds to the process's environment (another libtpu)."""
    return run_module(env.python, "repro", ["--quiet", *argv], timeout, answers=answers,
                      executor=executor, jax_source=jax_source, environ=environ)


def command_environ(env: Environment, xla_flags: str = "",
                    jax_source: Path | None = None) -> dict[str, str]:
    """The environment a user's command gets in ``env`` (``--command``, ``--metric … --``):
    ours, with the release's environment activated and JAX_BISECT_RELEASE naming it, and
    XLA_FLAGS as ``--xla-flags`` says: never the caller's (the report says which were set).
    ``jax_source``: a jax commit's checkout, first on PYTHONPATH."""
    child_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "XLA_FLAGS")}
    child_env.update(VIRTUAL_ENV=str(env.path),
                     PATH=os.pathsep.join([str(env.python.parent), os.environ.get("PATH", "")]),
                     JAX_BISECT_RELEASE=str(env.release.version))
    if jax_source is not None:
        child_env["PYTHONPATH"] = os.pathsep.join(
            [str(jax_source), *filter(None, [os.environ.get("PYTHONPATH")])])
    if xla_flags.strip():
        child_env["XLA_FLAGS"] = xla_flags.strip()
    return child_env


def plain_environ(xla_flags: str = "") -> dict[str, str]:
    """The environment a plain program gets, as in a fresh shell: ours less whatever would
    change what it does (PYTHON*, JAX_*, XLA_*: nothing of the toolkit on its path), with
    ``xla_flags`` as XLA_FLAGS where the question set them (the command line shows them)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("JAX_", "XLA_", "PYTHON", "VIRTUAL_ENV"))}
    if xla_flags.strip():
        env["XLA_FLAGS"] = xla_flags.strip()
    return env


def run_script(python: Path, name: str, text: str, timeout: float, *, xla_flags: str = "",
               executor: Executor = LOCAL):
    """``python NAME`` under a release's ``python``, ``text`` written to NAME in a folder of
    its own (nothing else importable beside it), as a maintainer runs a pasted program: the
    finished process (executors.Finished). Ctrl-C that reached it is a KeyboardInterrupt;
    a run past ``timeout`` is RunTimedOut."""
    import tempfile

    where = cache_dir() / "programs"  # on the cache's disk: a cluster's nodes see it too
    where.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="run-", dir=where) as folder:
        script = Path(folder) / name
        script.write_text(text, encoding="utf-8")
        done = finished(executor, [str(python), name], name, cwd=folder,
                        env=plain_environ(xla_flags), timeout=timeout)
    if done.returncode == -signal.SIGINT:
        raise KeyboardInterrupt
    return done
