"""Where a release's probes run: the backends, one protocol (docs/environments.md).

A backend is what an environment is made for and a probe runs on: the CPU, a GPU (real, or
compiled for without one: a ``--target``'s), or another accelerator. Each is a module of this
package that keeps the protocol of :class:`Backend`; the rest of the driver asks the protocol
(its install plan, whether its device is here, why a release is unavailable for it, its
words, the harness's arguments, the targets it compiles for) and never names a backend.
Registering one is adding a module whose ``BACKENDS`` lists it.

``Backend.name`` is the key of its environments' folders, its stored results and the
documents' ``backend`` field: kept as it is for the backends that exist.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Protocol

from packaging.version import Version

from jaxbisect.errors import UserError
from jaxbisect.search.budgets import FIRST_RUN_LIMIT


class Release(Protocol):
    """What a backend reads of a release (a catalogue.Release: the catalogue asks the backends,
    so they do not import it)."""

    version: Version
    jaxlib: Version | None


@dataclass(frozen=True)
class InstallPlan:
    requirements: tuple[str, ...]
    exclude_newer: datetime | None  # resolve everything as of this moment
    find_links: str | None = None
    # Pinned exactly and served from find-links, which has no upload times to filter on.
    date_exempt: tuple[str, ...] = ()


class Backend(str):
    """The protocol, with what most backends share as its defaults.

    A backend is resolved from its name once, where a name comes in (the command line, a
    stored document: ``resolve``, ``get``); below that the object travels. It is its name as a
    string too (``str``): the key of environments, stored results and documents."""

    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, cls.name)

    name: str = ""            # the key: environments, stored results, documents
    chosen: bool = True       # --backend takes it by name (not a target's own)
    platform: str = ""        # JAX_PLATFORMS of a run on it ("": a target sets its own)
    target_kind: str | None = None  # the kind of --target it compiles for (repro/target.py)
    auto_rank: int = 0        # auto takes the visible backend of the highest rank
    device: str = ""          # what it runs on, in words ("an NVIDIA GPU")
    recorded: tuple[str, ...] = ()  # distributions (name prefixes) its environments record
    # The distributions of a plain install line beside jax and jaxlib (pip_line).
    pip_extras: tuple[str, ...] = ()
    real_device: str = "the real device"  # what measures what needs_device() names
    jax_extra: str = ""  # jax's extra that installs it, in a plain pip line
    first_run_limit: float = FIRST_RUN_LIMIT  # an end's first run, before its time is known

    def words(self, target: str = "") -> str:
        """The backend as people read it (a target by its name)."""
        return self.name

    def visible(self) -> bool:
        """Whether its device is on this machine."""
        return True

    def not_visible(self) -> str:
        """The one line refusing it where its device is not here."""
        return f"--backend {self.name}, but it is not available here"

    def prepare(self, releases: Iterable[Release]) -> None:
        """Ahead of asking unusable() of many releases: read what they need, all at once."""

    def unavailable(self, release: Release) -> str | None:
        """Why ``release`` cannot be had for this backend on any Python, asked before anything
        else (what only the real device cures comes first), or None."""
        return None

    def unusable(self, release: Release, python: tuple[int, int]) -> str | None:
        """Why ``release`` cannot be installed for this backend on that Python, beyond what
        every backend needs (jax and its jaxlib for this machine), or None."""
        return None

    def needs_device(self, why: str | None) -> bool:
        """Whether ``why`` (an unusable reason) is one only the real device cures: such a
        release is left out of a target's range, named with the command for the device."""
        return False

    def device_backend(self) -> Backend:
        """The backend that measures on the real device what this one cannot."""
        return self

    def cutoff_times(self, release: Release) -> list[datetime | None]:
        """Upload times beyond jax's and jaxlib's that its date cut-off must admit."""
        return []

    def install_plan(self, release: Release) -> InstallPlan:
        raise NotImplementedError

    def harness_args(self, target: str = "") -> list[str]:
        """``python -m repro``'s arguments that put a run on this backend (a target's set
        their own platform)."""
        return [] if target or not self.platform else ["--backend", self.platform]

    def flags_platform(self) -> str:
        """The platform whose XLA lists the flags (one list for every backend of a release;
        a backend without its device here lists them from a CPU process)."""
        return "cpu"

    def pip_words(self, version: str, jaxlib: str, installed: dict | None) -> str:
        """What a plain ``pip install`` of one release names, as the report shows it: jax,
        jaxlib and the packages its environment held (``installed``, its record) at the
        versions measured, so that a fresh machine gets what was measured and not today's
        numpy (jax 0.4.20 under numpy 2 does not import). Without a record: jax and jaxlib
        only (``pinned_fully`` says which)."""
        return " ".join([f"jax=={version}", f"jaxlib=={jaxlib}", *pinned_deps(installed)])

    def machine_words(self, doc: dict) -> str:
        """Where a report's plain lines reproduce it (" on a machine with …"; "": here)."""
        return ""

    def range_refusal(self, start: str, end: str, target: str) -> str | None:
        """The line refusing a range in which no two releases can be measured, where this
        backend has its own words for why (else the general one)."""
        return None


@cache
def _registry() -> dict[str, Backend]:
    found: dict[str, Backend] = {}
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        for backend in importlib.import_module(f"{__name__}.{module.name}").BACKENDS:
            found[backend.name] = backend
    return found


def names() -> tuple[str, ...]:
    """Every backend's key (the store's and the environments' folders)."""
    return tuple(_registry())


def choices() -> tuple[str, ...]:
    """What ``--backend`` takes: auto, then the backends chosen by name."""
    return ("auto", *(b.name for b in _registry().values() if b.chosen))


def get(name: str) -> Backend:
    """The backend of that name: where a name comes in (an option, a stored document)."""
    try:
        return _registry()[name]
    except KeyError:
        raise UserError(f"unknown backend {name!r}; choose one of "
                        f"{', '.join(choices()[1:])}") from None


def for_target(kind: str) -> Backend:
    """The backend whose environments compile for targets of ``kind`` (repro/target.py)."""
    return next(b for b in _registry().values() if b.target_kind == kind)


def help_text() -> str:
    """``--backend``'s help, from what each backend says of itself."""
    auto = sorted((b for b in _registry().values() if b.chosen and b.auto_rank),
                  key=lambda b: -b.auto_rank)
    return (f"{', '.join(choices())} (auto, the default: "
            + ", else ".join(f"{b.name} where {b.device} is here" for b in auto)
            + ", else cpu)")


def resolve(asked: str, target: str = "", *, elsewhere: bool = False,
            visible: Callable[[Backend], bool] = lambda backend: backend.visible()) -> Backend:
    """The backend a run asked for ``asked`` uses. ``auto``: the visible one of highest
    rank, else cpu. A backend whose device is not here is refused at once, before minutes of
    installs, unless the probes run ``elsewhere`` (a cluster's nodes). A ``target`` needs no
    device: its kind's backend, which ``asked`` may name (or auto); ``visible``: injected by
    tests."""
    if target:
        from repro.target import TargetError
        from repro.target import load as load_target

        try:
            loaded = load_target(target)
        except TargetError as exc:
            raise UserError(str(exc)) from None
        own = for_target(loaded.kind)
        if asked not in ("auto", own.name, own.device_backend().name):
            raise UserError(f"--target {target} compiles for {loaded.description}; "
                            f"--backend {asked} contradicts it")
        return own
    backend = None if asked == "auto" else get(asked)
    if backend is not None and not backend.chosen:
        raise UserError(f"unknown backend {asked!r}; choose one of {', '.join(choices()[1:])}")
    if backend is not None:
        if not elsewhere and not visible(backend):
            raise UserError(backend.not_visible())
        return backend
    ranked = sorted((b for b in _registry().values() if b.chosen and b.auto_rank),
                    key=lambda b: -b.auto_rank)
    return next((b for b in ranked if visible(b)), get("cpu"))


# What a plain install pins beside jax, jaxlib and a backend's own wheels: jax's own
# requirements, at the versions the environment measured held.
PINNED_DEPS = ("ml-dtypes", "numpy", "opt-einsum", "scipy")


def pinned_deps(installed: dict | None) -> list[str]:
    """``name==version`` of each of jax's requirements an environment's record holds."""
    return [f"{n}=={installed[n]}" for n in PINNED_DEPS if n in (installed or {})]


def pinned_fully(installed: dict | None) -> bool:
    """Whether an install line written from ``installed`` pins all of jax's requirements."""
    return bool(installed) and all(n in installed for n in PINNED_DEPS)


def pip_extras() -> set[str]:
    """The distributions any backend's plain install line names beside jax and jaxlib."""
    return {name for b in _registry().values() for name in b.pip_extras}


def words(name: str, target: str = "") -> str:
    """A backend (a target: in its kind's words) as people read it; never an internal key."""
    if target:
        from repro.target import load as load_target

        return for_target(load_target(target).kind).words(target)
    return get(name).words()
