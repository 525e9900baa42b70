"""A TPU target: XLA's plan for a TPU, compiled on a machine without one (docs/targets.md;
the protocol every target keeps: repro/target.py).

With libtpu installed, JAX describes a TPU topology without the chips
(``jax.experimental.topologies.get_topology_desc(TOPOLOGY, "tpu")``) and compiles for one of
its devices: libtpu's own compiler, passes and buffer assignment, nothing run or allocated.
Measured on this project's CPU machine with jax 0.4.35 (libtpu 0.0.2), 0.5.0 (0.0.8) and 0.10.2
(0.0.42.1): every topology below compiles, and for the v5e the plan agrees with the chip's
own count (docs/targets.md). jax and the standard library only, like the rest of ``repro``.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

KIND = "tpu"
PLATFORM = "tpu"
PLATFORMS = {"tpu": "tpu"}  # python -m repro --backend tpu: the chip itself
COMPILE_ONLY = "tpu (compile-only)"  # the backend of a compile-only result, never "tpu"


GOOGLE_VENDOR = "0x1ae0"  # PCI vendor of a TPU chip (JAX's own test: jax/_src/hardware_utils.py)
CHIPS = {"0x0027": "v3", "0x0056": "plc", "0x005e": "v4", "0x0062": "v5p", "0x0063": "v5e",
         "0x006f": "v6e", "0x0076": "tpu7x"}


def chips(root: str = "/") -> list[str]:
    """The TPU chips on this machine's PCI bus, by generation (as JAX itself finds them),
    seen without opening one (a chip is opened by one process at a time)."""
    found = []
    for vendor in sorted(glob.glob(os.path.join(root, "sys/bus/pci/devices/*/vendor"))):
        try:
            if Path(vendor).read_text().strip() != GOOGLE_VENDOR:
                continue
            device = (Path(vendor).parent / "device").read_text().strip()
        except OSError:
            continue
        if device in CHIPS:
            found.append(CHIPS[device])
    return found


def accelerator_files(root: str = "/") -> list[str]:
    """A TPU VM's device files: /dev/accel* (v4, v5p) or /dev/vfio/N (v5e, v6e)."""
    return sorted(glob.glob(os.path.join(root, "dev/accel*"))
                  + [p for p in glob.glob(os.path.join(root, "dev/vfio/*"))
                     if os.path.basename(p).isdigit()])


@dataclass(frozen=True)
class Target:
    name: str           # "v5e"
    description: str    # "TPU v5e"
    topology: str       # what get_topology_desc takes: "v5e:2x2"
    accelerator: str    # TPU_ACCELERATOR_TYPE, as a TPU VM of that topology sets it
    kind = KIND
    platform = PLATFORM
    backend_label = COMPILE_ONLY
    built_in = True

    @property
    def source(self) -> str:
        return f"built in: topology {self.topology}"

    @property
    def sha256(self) -> str:
        """What a stored result depends on: the topology and the accelerator type."""
        text = json.dumps({"topology": self.topology, "accelerator": self.accelerator},
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def as_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "description": self.description,
                "source": self.source}

    @property
    def device_label(self) -> str:
        return f"{self.description}, XLA's plan, not a measurement on one"

    @property
    def plan_words(self) -> str:
        return plan_words(self.as_json())

    def configure(self, environ: MutableMapping[str, str]) -> None:
        """What libtpu reads at start-up to describe the topology without the chips (without
        them it asks a TPU VM's metadata server, which a machine elsewhere does not have):
        the CPU is JAX's platform, so that no chip is opened, here or on a TPU VM. libtpu
        takes a lock file (/tmp/libtpu_lockfile) in every process that loads it, chip or not:
        a second compile-only process at once failed "Internal error when accessing libtpu
        multi-process lockfile" (two releases measured at once); this process opens no chip,
        so it loads libtpu beside others (ALLOW_MULTIPLE_LIBTPU_LOAD, as jax's own
        multi-process tests set it)."""
        environ.update(TPU_SKIP_MDS_QUERY="true", TPU_ACCELERATOR_TYPE=self.accelerator,
                       TPU_WORKER_HOSTNAMES="localhost", TPU_WORKER_ID="0",
                       JAX_PLATFORMS="cpu", ALLOW_MULTIPLE_LIBTPU_LOAD="1")

    def compile_only(self) -> CompileOnly:
        return CompileOnly(self)

    def here(self, root: str = "/") -> bool:
        """A chip of this generation is on this machine: its own figures go beside the plan."""
        return self.name in chips(root)

    def explain_error(self, text: str) -> str | None:
        """One line where the error is libtpu's absence or its not knowing this topology."""
        if "TPU support not installed" in text or "libtpu" in text and "not found" in text:
            return (f"libtpu is not installed in this environment: compiling for "
                    f"{self.description} needs the libtpu that jax pins (pip install "
                    f"'jax[tpu]==VERSION', or libtpu==PIN beside jax and jaxlib)")
        if self.topology in text and ("nvalid" in text or "nknown" in text):
            return (f"this release's libtpu does not know the topology {self.topology} "
                    f"({self.description}): {text}")
        return None


# Which topologies (measured, docs/targets.md): a 2x2 slice, the smallest whose host bounds
# libtpu accepts ("v5e:1x1" fails: chips_per_host_bounds is 2x2x1); one of its devices is
# the target. The v4's devices are single TensorCores (15.25 GiB of HBM each in the plan),
# where JAX on a v4 chip uses both as one device (megacore): its plan is a core's.
TARGETS = {t.name: t for t in (
    Target("v5e", "TPU v5e", "v5e:2x2", "v5litepod-4"),
    Target("v4", "TPU v4 (one TensorCore)", "v4:2x2x1", "v4-8"),
    Target("v5p", "TPU v5p", "v5p:2x2x1", "v5p-8"),
    Target("v6e", "TPU v6e", "v6e:2x2", "v6e-4"),
)}


def built_in() -> list[str]:
    return sorted(TARGETS)


def load(name: str) -> Target:
    from .target import TargetError  # here: target.py imports this module

    try:
        return TARGETS[name.strip().lower()]
    except KeyError:
        raise TargetError(f"unknown TPU target {name!r}: choose one of "
                          f"{', '.join(built_in())}") from None


def plan_words(described: dict) -> str:
    return f"XLA's plan for a {described['description']}, not a measurement on one"


def libtpu_version() -> str | None:
    try:
        return metadata.version("libtpu")
    except metadata.PackageNotFoundError:
        return None


class CompileOnly:
    """The compile-only device of one TPU target (the topology's first), and arguments placed
    on it."""

    def __init__(self, target: Target):
        import jax
        from jax.experimental import topologies

        self.target = target
        try:
            topology = topologies.get_topology_desc(target.topology, "tpu")
        except Exception as exc:  # no libtpu, or one that does not know the topology
            said = f"{type(exc).__name__}: {exc}"
            if (why := target.explain_error(said)) is None:
                raise
            raise RuntimeError(why) from exc
        self.device = topology.devices[0]
        self._sharding = jax.sharding.SingleDeviceSharding(self.device)

    def struct(self, shape, dtype):
        import jax

        return jax.ShapeDtypeStruct(shape, dtype, sharding=self._sharding)

    def describe(self) -> dict:
        """What the harness document says about a compile-only result."""
        return {**self.target.as_json(), "topology": self.target.topology,
                "accelerator_type": self.target.accelerator,
                "device_kind": getattr(self.device, "device_kind", None),
                "libtpu": libtpu_version()}
