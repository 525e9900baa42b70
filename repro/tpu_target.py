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

import dataclasses
import functools
import glob
import hashlib
import json
import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from repro.units import plan_lines

KIND = "tpu"
PLATFORM = "tpu"
PLATFORMS = {"tpu": "tpu"}  # python -m repro --backend tpu: the chip itself
COMPILE_ONLY = "tpu (compile-only)"  # the backend of a compile-only result, never "tpu"

SLICE_VARIABLE = "REPRO_TPU_SLICE"  # the TPU slice a compile-only process describes


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
    # The slices a case of DEVICES = N compiles for, smallest first, with their devices: the
    # first that has N (docs/targets.md, "Several devices: a slice").
    slices: tuple[tuple[str, int], ...] = ()
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

    def for_devices(self, n: int | None) -> Target:
        """This target for a program of ``n`` devices: the smallest slice that has them (the
        target itself up to its own topology's devices, or where none listed has them: the
        case then meets NotEnoughDevices in one line)."""
        if not n:
            return self
        topology = next((name for name, count in self.slices if count >= n), self.topology)
        return dataclasses.replace(self, topology=topology)

    def configure(self, environ: MutableMapping[str, str]) -> None:
        """What libtpu reads at start-up to describe the topology without the chips (without
        them it asks a TPU VM's metadata server, which a machine elsewhere does not have):
        the CPU is JAX's platform, so that no chip is opened, here or on a TPU VM. libtpu
        takes a lock file (/tmp/libtpu_lockfile) in every process that loads it, chip or not:
        a second compile-only process at once failed "Internal error when accessing libtpu
        multi-process lockfile" (two releases measured at once); this process opens no chip,
        so it loads libtpu beside others (ALLOW_MULTIPLE_LIBTPU_LOAD, as jax's own
        multi-process tests set it). The slice a case's ``repro.devices.devices(n)`` returns
        is set beside these by repro/process.py (``slice_environ``)."""
        environ.update(ENVIRONMENT, TPU_ACCELERATOR_TYPE=self.accelerator,
                       ALLOW_MULTIPLE_LIBTPU_LOAD="1")

    def slice_environ(self) -> dict[str, str]:
        """What tells ``repro.devices.devices(n)`` in this process that its devices are this
        target's slice (repro/devices.py)."""

        return {SLICE_VARIABLE: self.topology}

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
# The slices: v5e's measured (jax 0.4.36 and 0.10.2, TPU_ACCELERATOR_TYPE v5litepod-4 for
# each: 2x2 has 4 devices, 2x4 8, 4x4 16); the others' own topology only.
TARGETS = {t.name: t for t in (
    Target("v5e", "TPU v5e", "v5e:2x2", "v5litepod-4",
           (("v5e:2x2", 4), ("v5e:2x4", 8), ("v5e:4x4", 16))),
    Target("v4", "TPU v4 (one TensorCore)", "v4:2x2x1", "v4-8", (("v4:2x2x1", 8),)),
    Target("v5p", "TPU v5p", "v5p:2x2x1", "v5p-8", (("v5p:2x2x1", 4),)),
    Target("v6e", "TPU v6e", "v6e:2x2", "v6e-4", (("v6e:2x2", 4),)),
)}
# What libtpu reads to describe a topology without its chips (with TPU_ACCELERATOR_TYPE).
ENVIRONMENT = {"TPU_SKIP_MDS_QUERY": "true", "TPU_WORKER_HOSTNAMES": "localhost",
               "TPU_WORKER_ID": "0", "JAX_PLATFORMS": "cpu"}


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
    """The libtpu this process loads: with TPU_LIBRARY_PATH set (a swap), that file's own
    package, not the environment's (measured: the environment's metadata said 0.0.32.1 while
    /proc/self/maps showed libtpu 0.0.34 loaded)."""
    if path := os.environ.get("TPU_LIBRARY_PATH"):
        for info in Path(path).resolve().parent.parent.glob("libtpu-*.dist-info"):
            return info.name[len("libtpu-"):-len(".dist-info")]
    try:
        return metadata.version("libtpu")
    except metadata.PackageNotFoundError:
        return None


@functools.cache
def slice_devices(topology: str) -> tuple:
    """The compile-only devices of ``topology`` (``"v5e:2x2"``), described once a process:
    two descriptions of one topology give devices that are not equal, and a program whose
    arguments are on one and its mesh on the other cannot compile."""
    from jax.experimental import topologies

    target = next((t for t in TARGETS.values() if topology.startswith(t.name + ":")), None)
    try:
        return tuple(topologies.get_topology_desc(topology, "tpu").devices)
    except Exception as exc:  # no libtpu, or one that does not know the topology
        said = f"{type(exc).__name__}: {exc}"
        if target is None or (why := dataclasses.replace(target, topology=topology)
                              .explain_error(said)) is None:
            raise
        raise RuntimeError(why) from exc


class CompileOnly:
    """The compile-only devices of one TPU target (its topology's), and arguments placed on
    them."""

    def __init__(self, target: Target):
        import jax

        self.target = target
        self.devices = slice_devices(target.topology)
        self.device = self.devices[0]
        self._sharding = jax.sharding.SingleDeviceSharding(self.device)

    def struct(self, shape, dtype):
        import jax

        return jax.ShapeDtypeStruct(shape, dtype, sharding=self._sharding)

    def keeps(self, arg) -> bool:
        """An argument whose sharding the case gave over this target's devices (a
        NamedSharding over a mesh of ``repro.devices.devices(n)``): kept as it is."""
        sharding = getattr(arg, "sharding", None)
        try:
            placed = sharding.device_set if sharding is not None else ()
        except Exception:  # a sharding of a release that has no device_set
            return False
        return bool(placed) and all(d in self.devices for d in placed)

    def place(self, args) -> tuple[tuple, list[int]]:
        """The arguments as structs on this target: those the case placed on its devices keep
        their shardings; any other array goes to the first device. With them the positions of
        the arguments the harness placed (where a program that cannot use them fails, the
        failure is the harness's: repro/metrics.py)."""
        import jax

        out, moved = [], []
        for i, a in enumerate(args):
            if not (hasattr(a, "shape") and hasattr(a, "dtype")):
                out.append(a)
            elif self.keeps(a):
                out.append(jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=a.sharding))
            else:
                out.append(self.struct(a.shape, a.dtype))
                moved.append(i)
        return tuple(out), moved

    def context(self):
        """Where lowering runs: with this target's first device as jax's default device, as
        on the chip (Pallas from jax 0.9.2 asks the default device for its TPU generation; a
        CPU one fails "Unsupported TPU device kind: cpu")."""
        import jax

        return jax.default_device(self.device)

    def describe(self) -> dict:
        """What the harness document says about a compile-only result."""
        return {**self.target.as_json(), "topology": self.target.topology,
                "accelerator_type": self.target.accelerator,
                "device_kind": getattr(self.device, "device_kind", None),
                "slice_devices": len(self.devices),
                "libtpu": libtpu_version()}


# -- a program anyone can run (item 5 of issue 57) -----------------------------------------
# A report's standalone program for a TPU target compiles for the TPU without a chip, on any
# machine with the release's jax, jaxlib and libtpu (its install lines): these lines go at its
# top, before the case's own imports, and replace the case's ``from repro.devices import
# devices``; DEVICELESS_RUN compiles where a program for a CPU would run.

DEVICELESS_PRELUDE = '''\
import os

# Compile for a {description} slice ({topology}) without its chips (libtpu's compiler; nothing
# runs): libtpu describes the topology from these, and jax's platform stays the CPU.
os.environ.update(TPU_SKIP_MDS_QUERY="true", TPU_ACCELERATOR_TYPE="{accelerator}",
                  TPU_WORKER_HOSTNAMES="localhost", TPU_WORKER_ID="0", JAX_PLATFORMS="cpu",
                  ALLOW_MULTIPLE_LIBTPU_LOAD="1")

import jax  # noqa: E402
from jax.experimental import topologies  # noqa: E402

SLICE = []


def devices(n=None):
    if not SLICE:
        SLICE.extend(topologies.get_topology_desc("{topology}", "tpu").devices)
    return SLICE[:n]
'''

DEVICELESS_RUN = '''\
args = [a if not hasattr(a, "shape") or getattr(a, "sharding", None) is not None
        and set(a.sharding.device_set) <= set(devices()) else
        jax.ShapeDtypeStruct(a.shape, a.dtype,
                             sharding=jax.sharding.SingleDeviceSharding(devices(1)[0]))
        for a in args]
with jax.default_device(devices(1)[0]):
    compiled = fn.lower(*args).compile()
'''


def deviceless_prelude(target: Target, n: int | None = None) -> str:
    """DEVICELESS_PRELUDE for ``target`` (its slice for ``n`` devices)."""
    target = target.for_devices(n)
    return DEVICELESS_PRELUDE.format(description=target.description, topology=target.topology,
                                     accelerator=target.accelerator)


def deviceless_devices(topology: str, n: int | None = None) -> list:
    """What the prelude's ``devices(n)`` returns, here: the first ``n`` compile-only devices
    of ``topology`` (this process's description of it)."""
    return list(slice_devices(topology)[:n])


# The line a case reaches its devices by (repro/devices.py), which a program replaces with the
# prelude's own ``devices``.
DEVICES_IMPORT = "from repro.devices import devices"
DEVICELESS_PRINTS = {
    "error": 'print("no error")',
    "memory": "\n".join(plan_lines("compiled")),
}


def deviceless_program(target: Target, source: str, call: str = "case()", metric: str = "error",
                       n: int | None = None) -> str:
    """A standalone program compiling a case for ``target`` without its chips: the prelude,
    the case's ``source`` (cut to what ``case()`` needs; its ``DEVICES_IMPORT`` left out), then
    ``fn, args = CALL``, DEVICELESS_RUN and the line that prints ``metric`` ("error": "no
    error", else the exception's traceback; "memory": output + temp in MiB)."""
    kept = "\n".join(line for line in source.splitlines() if line.strip() != DEVICES_IMPORT)
    return (f"{deviceless_prelude(target, n)}\n\n{kept.strip()}\n\n\nfn, args = {call}\n"
            f"{DEVICELESS_RUN}{DEVICELESS_PRINTS[metric]}\n")


def recipe_lines(target: Target, n: int | None = None) -> int:
    """How many lines the deviceless recipe adds to a case's program (its prelude, the run
    and the line that prints): a TPU program's length is the case's plus these."""
    return (len(deviceless_prelude(target, n).splitlines()) + len(DEVICELESS_RUN.splitlines())
            + 1)
