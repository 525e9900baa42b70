"""TPUs: a real chip (``python -m repro --backend tpu`` in the release's environment) and a TPU
target (compiled for without one). One environment serves both: ``jax==V jaxlib==V
libtpu==PIN``, PIN being the libtpu jax V's own wheel pins for its ``tpu`` extra.

Measured (docs/environments.md, "TPU"): jax's wheel metadata pins ``libtpu==X`` (or ``X.*``)
from 0.4.35 on, beside a ``libtpu-nightly`` pin that PyPI lacks (so ``jax[tpu]==V`` does not
resolve for 0.4.35 … 0.5.0, and the three pins do); before it only ``libtpu-nightly``, from
Google's own index: such a release is unavailable here, in one line. The libtpu wheels of
0.0.1 … 0.0.8 were uploaded in February 2025, after the releases that pin them, so libtpu is
pinned exactly and exempt from the date cut-off. The pins are read once a release (a wheel's
metadata never changes) and kept beside the release catalogue.
"""

from __future__ import annotations

import json
import platform
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from jaxbisect.files import cache_dir, write_json
from jaxbisect.lab.backends import Backend, InstallPlan, pinned_deps
from jaxbisect.lab.wheel_metadata import (
    RangedFetch,
    http_get,
    metadata_text,
    requirements,
    wheel_files,
)
from repro.tpu_target import accelerator_files, chips

LIBTPU = "libtpu"
NIGHTLY = "libtpu-nightly"
PINS_FORMAT = 1
LIST_AGE = timedelta(hours=6)  # libtpu's own release list, refreshed as the catalogue is


class Pins:
    """jax's libtpu pin per release and libtpu's releases, read from the index once and kept in
    ``catalogue/libtpu.json`` (``fetch``: injected by tests)."""

    def __init__(self, fetch: RangedFetch = http_get, path: Path | None = None):
        self.fetch, self._path = fetch, path
        self._pins: dict[str, dict] | None = None
        self._libtpu: dict[str, dict] | None = None
        self.failure: str | None = None  # why the index could not be read, this process

    @property
    def path(self) -> Path:
        return self._path or cache_dir() / "catalogue" / "libtpu.json"

    def _load(self) -> None:
        if self._pins is not None:
            return
        try:
            stored = json.loads(self.path.read_text(encoding="utf-8"))
            if stored.get("format") != PINS_FORMAT:
                raise ValueError
            self._pins, self._libtpu = dict(stored["pins"]), stored.get("libtpu")
            self._listed = datetime.fromisoformat(stored["listed_at"]) if stored.get(
                "listed_at") else None
        except (OSError, ValueError, KeyError, TypeError):
            self._pins, self._libtpu, self._listed = {}, None, None

    def _save(self) -> None:
        write_json(self.path, {"format": PINS_FORMAT, "pins": self._pins,
                               "libtpu": self._libtpu,
                               "listed_at": self._listed and self._listed.isoformat()})

    def read(self, versions: list[str]) -> None:
        """The pins of ``versions`` not read yet, from their wheels' metadata (at once)."""
        self._load()
        missing = [v for v in versions if v not in self._pins]
        if not missing or self.failure:
            return
        try:
            files = wheel_files("jax", self.fetch)

            def pin_of(version: str) -> dict:
                wheel = files.get(f"jax-{version}-py3-none-any.whl")
                if wheel is None:
                    return {"libtpu": None, "nightly": None, "wheel": False}
                found = {r.name: str(r.specifier) for r in
                         requirements(metadata_text(wheel, self.fetch), "tpu")}
                return {"libtpu": found.get(LIBTPU), "nightly": found.get(NIGHTLY),
                        "wheel": True}

            with ThreadPoolExecutor(8) as pool:
                self._pins.update(zip(missing, pool.map(pin_of, missing)))
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.failure = _describe(error)
            return
        self._save()

    def pin(self, version: str) -> dict | None:
        self._load()
        if version not in self._pins:
            self.read([version])
        return self._pins.get(version)

    def releases(self) -> dict[str, dict] | None:
        """libtpu's releases on PyPI (version -> uploaded, pythons, yanked), fresh within
        LIST_AGE; the kept list when the index cannot be reached; None without either."""
        self._load()
        now = datetime.now(UTC)
        if self._libtpu is not None and self._listed and now - self._listed <= LIST_AGE:
            return self._libtpu
        if self.failure:
            return self._libtpu
        try:
            self._libtpu = _summarise(wheel_files(LIBTPU, self.fetch))
            self._listed = now
        except (OSError, ValueError, KeyError, TypeError) as error:
            self.failure = _describe(error)
            return self._libtpu
        self._save()
        return self._libtpu


def _describe(error: BaseException) -> str:
    return str(getattr(error, "reason", None) or error) or type(error).__name__


def _summarise(files: dict[str, dict]) -> dict[str, dict]:
    """libtpu's versions with wheels for this machine: when each landed, its cpXY tags ("py3":
    any), whether it was yanked."""
    machine = platform.machine().lower()
    out: dict[str, dict] = {}
    for name, f in files.items():
        try:
            _, version, _, tags = parse_wheel_filename(name)
        except (InvalidWheelFilename, InvalidVersion):
            continue
        usable = [t for t in tags if t.platform.endswith("_" + machine)
                  and "linux" in t.platform and not t.abi.endswith("t")]
        if not usable:
            continue
        entry = out.setdefault(str(version), {"uploaded": f["upload-time"], "pythons": [],
                                              "yanked": bool(f.get("yanked"))})
        entry["uploaded"] = max(entry["uploaded"], f["upload-time"])
        entry["pythons"] = sorted({*entry["pythons"], *(t.interpreter for t in usable)})
    return out


PINS = Pins()


# Releases whose ``import jax.experimental.pallas`` needs absl-py, which neither jax nor its tpu
# extra installs there (measured in TPU environments: ModuleNotFoundError: No module named
# 'absl' at 0.5.3, 0.6.0 and 0.6.1; 0.6.2 needs none): an environment's gap, never the
# program's behaviour.
ABSL_NEEDED = SpecifierSet(">=0.5.3,<=0.6.1")


def needs_absl(release) -> tuple[str, ...]:
    """``("absl-py",)`` where ``release``'s TPU environment needs it installed beside jax."""
    return ("absl-py",) if Version(str(release.version)) in ABSL_NEEDED else ()


class Tpu(Backend):
    name = "tpu"
    platform = "tpu"
    target_kind = "tpu"
    auto_rank = 3
    device = "a TPU"
    recorded = (LIBTPU,)
    pip_extras = (LIBTPU,)
    # libtpu compiles the scan case's unrolled loop (v2) for minutes: its whole table at jax
    # 0.10.2 took 250 s on the 2-core machine (docs/targets.md), so an end's first run is
    # bounded only by the harness's own limit; every later run by the ends' measured times.
    first_run_limit = 1800.0

    def __init__(self, pins: Pins = PINS, root: str = "/"):
        self.pins, self.root = pins, root

    def words(self, target: str = "") -> str:
        if not target:
            return self.name
        from repro.target import load as load_target

        return f"{load_target(target).description} (compile-only)"

    def visible(self) -> bool:
        return bool(chips(self.root) or accelerator_files(self.root))

    def not_visible(self) -> str:
        return ("--backend tpu, but no TPU is visible here (no TPU chip on the PCI bus, no "
                "/dev/accel* or /dev/vfio/N); to compile for one without it: --target "
                "v5e (or v4, v5p, v6e)")

    def prepare(self, releases) -> None:
        self.pins.read([str(r.version) for r in releases if r.level == "release"])

    def libtpu(self, release) -> tuple[str | None, str | None]:
        """The libtpu version ``release``'s environment installs, or None and why not."""
        version = str(release.version)
        pin = self.pins.pin(version)
        if pin is None:
            return None, (f"cannot read jax {version}'s libtpu pin: no package index is "
                          f"reachable ({self.pins.failure})")
        if not pin["wheel"]:
            return None, f"jax {version} has no wheel on PyPI to read its libtpu pin from"
        if not pin["libtpu"]:
            nightly = f" (it pins {NIGHTLY}{pin['nightly']}, not on PyPI)" if pin["nightly"] \
                else ""
            return None, (f"its libtpu comes only from Google's own index{nightly}: no "
                          f"libtpu on PyPI pairs with it")
        listed = self.pins.releases()
        if listed is None:
            return None, (f"cannot list libtpu's releases: no package index is reachable "
                          f"({self.pins.failure})")
        wanted = SpecifierSet(pin["libtpu"])
        matching = sorted((Version(v), e) for v, e in listed.items()
                          if Version(v) in wanted and not e["yanked"])
        if not matching:
            return None, f"no libtpu{pin['libtpu']} (jax {version}'s pin) on PyPI"
        # As of the release's day where one had landed by then, else the first that did.
        by_then = [m for m in matching
                   if datetime.fromisoformat(m[1]["uploaded"].replace("Z", "+00:00"))
                   <= release.cutoff(self)]
        return str((by_then or matching[:1])[-1][0]), None

    def unavailable(self, release):
        return self.libtpu(release)[1]

    def unusable(self, release, python):
        version, why = self.libtpu(release)
        if why:
            return why
        tag = f"cp{python[0]}{python[1]}"
        pythons = self.pins.releases()[version]["pythons"]
        if tag not in pythons and "py3" not in pythons:
            return f"no libtpu {version} wheel for {tag} on linux {platform.machine()}"
        return None

    def install_plan(self, release) -> InstallPlan:
        version, why = self.libtpu(release)
        if why:
            from jaxbisect.errors import InstallFailed

            raise InstallFailed(f"cannot install jax {release.version} for a TPU: {why}")
        return InstallPlan((f"jax=={release.version}", f"jaxlib=={release.jaxlib}",
                            f"{LIBTPU}=={version}", *needs_absl(release)),
                           release.cutoff(self), date_exempt=(LIBTPU,))

    def machine_words(self, doc):
        if doc.get("target"):
            from repro.target import TargetError
            from repro.target import load as load_target

            try:
                return f" on a machine with a {load_target(doc['target']).description}"
            except TargetError:
                pass
        return " on a machine with a TPU"

    def pip_words(self, version, jaxlib, installed):
        libtpu = (installed or {}).get(LIBTPU)
        return " ".join([f"jax=={version}", f"jaxlib=={jaxlib}",
                         *([f"{LIBTPU}=={libtpu}"] if libtpu else []), *pinned_deps(installed)])


BACKENDS = (Tpu(),)
