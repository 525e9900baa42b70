"""One uv environment per (release, backend), resolved as of the release's date.

Environments live in ``cache_dir()/envs/jax-<version>-<backend>-py<major><minor>/``. One is
complete only once ``.complete.json`` has been written, last; anything else is deleted and
rebuilt, so an interrupted install never passes for a finished one. What an environment holds
is its backend's install plan (jaxbisect/lab/backends/).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from packaging.utils import canonicalize_name

from jaxbisect.errors import InstallFailed
from jaxbisect.files import cache_dir, shown_path, write_json
from jaxbisect.lab import backends
from jaxbisect.lab.backends import Backend, InstallPlan
from jaxbisect.lab.catalogue import Release, interpreter_for
from jaxbisect.lab.interpreters import Interpreter, own
from jaxbisect.lab.locks import held, holder_words, is_ours, part_of_run
from jaxbisect.lab.machine import uv_binary

MARKER = ".complete.json"
MARKER_SCHEMA = 1
RECORDED = {"jax", "jaxlib", "numpy", "scipy", "ml-dtypes", "opt-einsum"}
# Environments whose wait on another part of this run was said (once each): its own installs
# ahead and probes meet on one environment many times (every jax commit runs on one).
_SAID: set[Path] = set()
_SAID_LOCK = threading.Lock()

Progress = Callable[[str], None]


def resolve_backend(backend: str, target: str = "", gpu_elsewhere: bool = False) -> Backend:
    """The backend a run asked for ``backend`` uses (backends.resolve): ``auto`` the device
    visible here, else the CPU; one whose device is not here refused at once, unless the
    probes run elsewhere; a ``target``'s compile-only environments."""
    return backends.resolve(backend, target, elsewhere=gpu_elsewhere)


def install_plan(release: Release, backend: Backend) -> InstallPlan:
    chosen = backend
    release = release.environment_release
    if release.jaxlib is None:
        raise InstallFailed(f"cannot install jax {release.version}: "
                            "no jaxlib on PyPI pairs with it")
    return chosen.install_plan(release)


@dataclass(frozen=True)
class Environment:
    release: Release
    backend: str
    path: Path
    python: Path  # path/bin/python
    installed: dict  # canonical distribution name -> version, from the completion marker
    reused: bool  # True when nothing was installed by this call
    seconds: float


def interpreter(release: Release, backend: str) -> Interpreter:
    """The Python this release's environment is built on: the driver's own where the release
    supports it, else another found on the machine (jax 0.11+ needs 3.12)."""
    return interpreter_for(release, backend, allow_yanked=True)[0] or own()


def environment_path(release: Release, backend: str) -> Path:
    release = release.environment_release  # a commit runs in its older release's
    major, minor = interpreter(release, backend).version
    return cache_dir() / "envs" / f"jax-{release.version}-{backend}-py{major}{minor}"


def is_installed(release: Release, backend: str) -> bool:
    """``release``'s environment is complete: using it installs nothing."""
    try:
        plan = install_plan(release, backend)
    except InstallFailed:
        return False
    return _complete(environment_path(release, backend), plan) is not None


def ensure_environment(
    release: Release, backend: Backend, *, progress: Progress | None = None,
    rebuild: bool = False, verify: bool = False,
) -> Environment:
    """A ready environment for ``release``: reused when complete, otherwise built afresh.
    ``rebuild`` builds it afresh even when complete (jax was found not to import in it);
    ``verify`` imports jax in a complete one first and rebuilds it when that fails."""
    say = progress or (lambda message: print(message, file=sys.stderr, flush=True))
    started = time.monotonic()
    release = release.environment_release
    plan = install_plan(release, backend)
    path = environment_path(release, backend)
    path.parent.mkdir(parents=True, exist_ok=True)
    what = f"jax {release.version} ({backend.words()})"

    def waiting(who: dict | None) -> None:
        if is_ours(who):  # another part of this run: said once an environment
            with _SAID_LOCK:
                if path in _SAID:
                    return
                _SAID.add(path)
        say(f"{what}: this run's {part_of_run()} waits for {holder_words(who)} to finish "
            f"installing it …")

    # locks.py's lock holds across a cluster's nodes on NFS, where flock may not.
    # A wait of under a second (another thread finding it complete) is not worth a line.
    with held(path.with_name(path.name + ".lock-dir"), on_wait=waiting, patience=1.0):
        installed = None if rebuild else _complete(path, plan)
        if installed is not None and verify and (broken := import_error(path / "bin" / "python")):
            say(f"{what}: its environment no longer imports jax ({broken}); rebuilding it")
            installed = None
        if installed is not None:
            return Environment(release, backend, path, path / "bin" / "python", installed,
                               reused=True, seconds=time.monotonic() - started)
        say(f"installing {what} …")
        shutil.rmtree(path, ignore_errors=True)
        try:
            installed = _build(path, plan, release, backend, interpreter(release, backend))
        except BaseException:  # Ctrl-C included: leave nothing behind that looks reusable
            shutil.rmtree(path, ignore_errors=True)
            raise
    seconds = time.monotonic() - started
    say(f"ready in {seconds:.1f} s")
    return Environment(release, backend, path, path / "bin" / "python", installed,
                       reused=False, seconds=seconds)


def import_error(python: Path, jax_source: Path | None = None) -> str | None:
    """None when jax and jaxlib import under ``python`` (``jax_source``: a jax commit's
    checkout first on its path); otherwise the error's last line."""
    first = f"import sys; sys.path.insert(0, {str(jax_source)!r}); " if jax_source else ""
    try:
        done = subprocess.run([str(python), "-I", "-c", first + "import jaxlib, jax"],
                              capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1][:300] if lines else f"exit status {done.returncode}"


def _plan_record(plan: InstallPlan) -> dict:
    """The plan as the marker stores it: an environment built to another plan is rebuilt."""
    return {**asdict(plan), "requirements": list(plan.requirements),
            "exclude_newer": plan.exclude_newer and _iso(plan.exclude_newer),
            "date_exempt": list(plan.date_exempt)}


def _complete(path: Path, plan: InstallPlan) -> dict | None:
    """The recorded versions when ``path`` is a finished environment for ``plan``, else None.
    Cheap on purpose (no jax import, no uv): the marker, the interpreter, and jax's and
    jaxlib's dist-info must all agree."""
    try:
        marker = json.loads((path / MARKER).read_text(encoding="utf-8"))
        if marker.get("schema") != MARKER_SCHEMA or marker.get("plan") != _plan_record(plan):
            return None
        installed = dict(marker["installed"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (path / "bin" / "python").exists():
        return None
    present = _installed(path, {"jax", "jaxlib"})
    if any(present.get(name) != installed.get(name) for name in ("jax", "jaxlib")):
        return None
    return installed


def _installed(path: Path, names: set[str] | None = None) -> dict[str, str]:
    """Versions of the distributions in ``path``'s site-packages, read from their dist-info."""
    # A wheel's dist-info folder is named NAME-VERSION (neither holds a "-"): reading the
    # names, not each distribution's metadata, keeps checking an environment cheap.
    found = {canonicalize_name(name): version for name, _, version in (
        info.name.removesuffix(".dist-info").partition("-")
        for info in sorted(path.glob("lib/python*/site-packages/*.dist-info")))}
    return found if names is None else {k: v for k, v in found.items() if k in names}


def _build(path: Path, plan: InstallPlan, release: Release, backend: str,
           python: Interpreter) -> dict:
    what = f"jax {release.version} ({backend.words()})"
    _uv(what, "venv", "--quiet", "--python", str(python.path), str(path))
    args = ["pip", "install", "--python", str(path / "bin" / "python")]
    if plan.exclude_newer is not None:
        args += ["--exclude-newer", _iso(plan.exclude_newer)]
    for name in plan.date_exempt:
        args += ["--exclude-newer-package", f"{name}=false"]
    if plan.find_links:
        args += ["--find-links", plan.find_links]
    _uv(what, *args, *plan.requirements)
    installed = {name: version for name, version in sorted(_installed(path).items())
                 if name in RECORDED or name.startswith(backend.recorded or "\0")}
    if installed.get("jax") != str(release.version) or "jaxlib" not in installed:
        raise InstallFailed(f"installing {what} left jax {installed.get('jax')} and "
                            f"jaxlib {installed.get('jaxlib')} in {shown_path(path)}")
    try:
        write_json(path / MARKER, {
            "schema": MARKER_SCHEMA,
            "release": str(release.version),
            "backend": backend,
            "python": str(python),
            "plan": _plan_record(plan),
            "installed": installed,
            "created_at": _iso(datetime.now(UTC)),
        })
    except OSError as error:
        if error.errno == errno.ENOSPC:
            raise InstallFailed(_disk_full(what)) from None
        raise
    return installed


def _uv(what: str, *args: str) -> None:
    uv = uv_binary()
    if not uv:
        raise InstallFailed("uv is not installed; `pip install uv` (it builds every environment)")
    env = {**os.environ, "UV_NO_PROGRESS": "1"}
    env.pop("UV_EXCLUDE_NEWER", None)  # the plan's cut-off, not the caller's, decides
    try:
        done = subprocess.run([uv, *args], capture_output=True, text=True, env=env)
    except OSError as error:
        raise InstallFailed(f"installing {what}: cannot run uv ({error})") from None
    if done.returncode != 0:
        if "No space left" in done.stderr or "os error 28" in done.stderr:
            raise InstallFailed(_disk_full(what))
        raise InstallFailed(f"installing {what} failed: {_uv_error(done.stderr)}")


def _disk_full(what: str) -> str:
    return (f"installing {what}: no space left on the disk holding {shown_path(cache_dir())} "
            f"(free some, or point JAX_SCAN_REPRO_CACHE elsewhere)")


UV_TAGS = ("error:", "cause:", "hint:", "help:", "warning:", "Using Python")


def _uv_error(stderr: str) -> str:
    """uv's complaint in one line: its ``error:`` line and the root ``cause:`` under it.

    uv wraps a long cause to the terminal's width (COLUMNS, set under pytest-xdist and by
    some CI runners): a line that starts with neither a tag nor a tree mark continues the one
    before it."""
    lines: list[str] = []
    for raw in stderr.splitlines():
        line = raw.strip().lstrip("×╰─▶│├ ").strip()
        if not line:
            continue
        marked = raw.lstrip(" │").startswith(("×", "╰", "├"))
        if lines and not marked and not line.startswith(UV_TAGS):
            lines[-1] += " " + line
        else:
            lines.append(line)
    lines = [line for line in lines
             if not line.startswith(("hint:", "help:", "warning:", "Using Python"))]
    if not lines:
        return "uv failed without saying why"
    head = next((line[len("error:"):].strip() for line in lines if line.startswith("error:")), None)
    root = lines[-1].removeprefix("cause:").removeprefix("error:").strip()
    return root if head in (None, root) else f"{head}: {root}"


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def libtpu_folder(version: str) -> Path:
    """Where libtpu ``version`` is installed alone (``pip install --target``), for a run that
    loads it in place of its environment's own (catalogue.LibtpuCandidate)."""
    return cache_dir() / "libtpu" / version


def libtpu_library(version: str) -> Path:
    return libtpu_folder(version) / "libtpu" / "libtpu.so"


def ensure_libtpu(version: str) -> Path:
    """libtpu ``version``'s library, installed alone once (no dependencies, no date cap: an
    exact version)."""
    library = libtpu_library(version)
    if library.is_file():
        return library
    folder = libtpu_folder(version)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    _uv(f"libtpu {version}", "pip", "install", "--quiet", "--no-deps", "--target", str(partial),
        f"libtpu=={version}")
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    if not library.is_file():
        raise InstallFailed(f"libtpu {version} installed no libtpu/libtpu.so")
    return library
