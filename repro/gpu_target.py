"""A GPU target: XLA's plan for an NVIDIA GPU, compiled on a machine without one
(docs/targets.md; the protocol every target keeps: repro/target.py).

JAX compiles for a compile-only CUDA topology described by a target spec (a
``GpuTargetConfigProto`` in text format): XLA runs the same passes, scheduler and buffer
assignment as for the real GPU, but nothing is run or allocated. What comes out is XLA's plan
for that GPU, never a measurement on one.

Built-in specs live in ``repro/targets/`` (trimmed copies of XLA's own, Apache-2.0); a path to
any spec file works too. jax and the standard library only, like the rest of ``repro``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

from .process import join_flags

TARGETS_DIR = Path(__file__).resolve().parent / "targets"
SPEC_SUFFIX = ".txtpb"
_CAPABILITY = re.compile(r"cuda_compute_capability\s*\{\s*major:\s*(\d+)\s*minor:\s*(\d+)")
_DESCRIPTION = re.compile(r'^\s*device_description_str:\s*"((?:[^"\\]|\\.)*)"', re.MULTILINE)
# The packages a compile-only CUDA environment holds; their versions go into every result.
PLUGIN_PACKAGES = ("jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12")
KIND = "gpu"
PLATFORM = "cuda"  # the JAX platform of the device planned for
# The harness's --backend words for this platform (python -m repro --backend …).
PLATFORMS = {"gpu": "cuda", "cuda": "cuda", "cuda12": "cuda"}
COMPILE_ONLY = "gpu (compile-only)"  # the backend of a compile-only result, never "gpu"


@dataclass(frozen=True)
class Target:
    name: str          # "a6000", or the spec file's stem
    description: str   # the spec's device_description_str: "NVIDIA RTX A6000"
    source: str        # "built in: repro/targets/a6000.txtpb" or the file's absolute path
    text: str
    sha256: str
    kind = KIND
    platform = PLATFORM
    backend_label = COMPILE_ONLY

    def as_json(self) -> dict:
        # A spec file by its name only: documents travel in reports, the user's folders do not.
        source = self.source if self.built_in else f"spec file {Path(self.source).name}"
        return {"name": self.name, "description": self.description, "source": source,
                "sha256": self.sha256}

    @property
    def built_in(self) -> bool:
        return self.source.startswith("built in")

    @property
    def device_label(self) -> str:
        return device_label(self.description)

    @property
    def plan_words(self) -> str:
        return plan_words(self.as_json())

    def configure(self, environ: MutableMapping[str, str]) -> None:
        configure(environ)

    def here(self, root: str = "/") -> bool:
        """Whether the GPU itself is here (not asked: a GPU's plan is never set beside it)."""
        return False

    def compile_only(self) -> CompileOnly:
        return CompileOnly(self)

    @property
    def compute_capability(self) -> str | None:
        """``major.minor`` of the spec's ``cuda_compute_capability`` (None if it has none)."""
        found = _CAPABILITY.search(self.text)
        return f"{found[1]}.{found[2]}" if found else None

    def explain_error(self, text: str) -> str | None:
        """One line for an error XLA gives because of this spec's values (None otherwise): a
        compute capability the release's ptxas does not know ("ptxas too old", "ptxas does not
        support CC") is never a release's fault but the spec's."""
        if "ptxas too old" not in text and "does not support CC" not in text:
            return None
        return (f"this jaxlib's ptxas cannot compile for compute capability "
                f"{self.compute_capability} (cuda_compute_capability in the target spec "
                f"{self.name}{SPEC_SUFFIX}): no GPU it knows has it; check the spec's values")


def device_label(description: str) -> str:
    """The device of a compile-only result: the GPU's name, and that it was not there."""
    return f"{description}, compiled without the GPU"


def plan_words(described: dict) -> str:
    """What a result's figures are, in every report's words."""
    return f"compiled for {described['description']}, without the GPU"


def built_in() -> list[str]:
    return sorted(p.stem for p in TARGETS_DIR.glob(f"*{SPEC_SUFFIX}"))


def is_spec_path(key: str) -> bool:
    """``key`` names a spec file rather than a built-in target."""
    return os.sep in key or key.endswith(SPEC_SUFFIX) or Path(key).is_file()


def load(name_or_path: str) -> Target:
    """A built-in target by name (``a6000``), or a spec file by path (target.load's callers
    check the names first)."""
    from .target import TargetError  # here: target.py imports this module

    key = name_or_path.strip()
    path = TARGETS_DIR / f"{key.lower()}{SPEC_SUFFIX}"
    if key.lower() in built_in():
        source = f"built in: repro/targets/{path.name}"
    else:
        path = Path(key).expanduser().resolve()
        source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TargetError(f"cannot read the target spec {path}: "
                          f"{getattr(exc, 'strerror', None) or exc}") from None
    found = _DESCRIPTION.search(text)
    if "gpu_device_info" not in text or not found:
        raise TargetError(f"{path} is not a GPU target spec (a GpuTargetConfigProto in text "
                          f"format with gpu_device_info and device_description_str)")
    return Target(name=path.stem, description=found[1],
                  source=source, text=text, sha256=hashlib.sha256(text.encode()).hexdigest())


def _patch_gpu_platform_name() -> None:
    """jax 0.4.34 and 0.4.35 lower for platform 'gpu', which a compile-only client does not
    know ("Unknown backend: 'gpu' requested", jax-ml/jax#23971, fixed in 0.4.36): map it to
    'cuda', the one change that makes these two releases compile without a GPU."""
    import jax
    from jax._src import xla_bridge

    if jax.__version__ not in ("0.4.34", "0.4.35"):
        return
    original = xla_bridge.canonicalize_platform
    if getattr(original, "_jax_scan_repro", False):
        return

    def canonicalize_platform(platform: str) -> str:
        return original("cuda" if platform == "gpu" else platform)

    canonicalize_platform._jax_scan_repro = True
    xla_bridge.canonicalize_platform = canonicalize_platform


class CompileOnly:
    """The compile-only device of one GPU target, and arguments placed on it."""

    def __init__(self, target: Target):
        import jax
        from jax.experimental import topologies

        _patch_gpu_platform_name()
        self.target = target
        topology = topologies.get_topology_desc(platform="cuda", target_config=target.text,
                                                topology="1x1x1")
        self.device = topology.devices[0]
        mesh = topologies.make_mesh(topology, (1,), ("x",))
        self._sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())

    def struct(self, shape, dtype):
        import jax

        return jax.ShapeDtypeStruct(shape, dtype, sharding=self._sharding)

    def describe(self) -> dict:
        """What the harness document says about a compile-only result."""
        from importlib import metadata

        plugins = {}
        for name in PLUGIN_PACKAGES:
            try:
                plugins[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                plugins[name] = None
        return {**self.target.as_json(), "device_kind": getattr(self.device, "device_kind", None),
                "plugins": plugins, "ptxas": ptxas()}


def ptxas() -> dict:
    """The ptxas XLA compiles with: the nvcc wheel's (configure points XLA at it), else the
    first one XLA would find on the machine. ``$ENV`` stands for the environment."""
    wheel = nvcc_wheel_dir()
    candidates = ([wheel / "bin" / "ptxas"] if wheel else []) + [
        Path(p) for p in filter(None, [shutil.which("ptxas"), "/usr/local/cuda/bin/ptxas"])]
    path = next((p for p in candidates if p.exists()), None)
    if path is None:
        return {"path": None, "version": None, "from": None, "optimizations": None}
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30)
        version = (done.stdout.strip().splitlines() or [None])[-1]
    except (OSError, subprocess.TimeoutExpired):
        version = None
    # The same wheel reads the same everywhere.
    shown = f"$ENV/{path.relative_to(sys.prefix)}" if path.is_relative_to(sys.prefix) else str(path)
    return {"path": shown, "version": version, "optimizations": ptxas_optimizations(),
            "from": "nvidia-cuda-nvcc-cu12 wheel" if wheel and path.is_relative_to(wheel)
            else "the machine's CUDA toolkit"}


def capture_spec() -> str:
    """The spec of the GPU at hand (run on a machine with one), to reuse as a target file."""
    import jax
    from jax._src.lib import xla_client

    from .target import TargetError

    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        raise TargetError("no GPU is visible to JAX here: --write-target-spec needs one")
    config = xla_client.get_topology_for_devices(gpus[:1]).target_config
    text = config.decode() if isinstance(config, bytes) else str(config)
    header = (f"# Written by `python -m repro --write-target-spec` on a machine with a "
              f"{gpus[0].device_kind}, jax {jax.__version__}.\n"
              f"# proto-message: stream_executor.GpuTargetConfigProto\n\n")
    return header + text


# -- the process's set-up, before ``import jax`` --------------------------------------------

# Sizes come from buffer assignment, which XLA finishes before it generates machine code, so
# ptxas's optimizations change no figure; they cost most of a compile that makes many kernels
# such as v2's unrolled loop (how much: docs/benchmarks.md; tests/test_target.py checks the
# sizes agree).
PTXAS_OPTIMIZATIONS_FLAG = "--xla_gpu_disable_gpuasm_optimizations"
PTXAS_UNOPTIMIZED = f"{PTXAS_OPTIMIZATIONS_FLAG}=true"


def configure(environ: MutableMapping[str, str]) -> None:
    """Environment variables JAX and XLA read at start-up to compile for a compile-only GPU;
    every platform stays on (the CUDA plugin must load)."""
    # From jax 0.6.2 the CUDA plugin checks the driver's CUDA version at start-up; with no
    # driver that check fails (cuInit error 303), the plugin is not registered, and the
    # topology cannot be made ("topology not implemented for cuda").
    environ["JAX_SKIP_CUDA_CONSTRAINTS_CHECK"] = "1"
    asked = environ.get("XLA_FLAGS", "")
    nvcc = nvcc_wheel_dir()
    environ["XLA_FLAGS"] = join_flags(
        "" if PTXAS_OPTIMIZATIONS_FLAG in asked else PTXAS_UNOPTIMIZED,  # unless the caller says
        asked,
        # XLA runs ptxas while compiling: use the date-resolved wheel's, never whatever CUDA
        # toolkit the machine happens to have, so that a result says which one it used.
        f'--xla_gpu_cuda_data_dir="{nvcc}"' if nvcc is not None else "")


def nvcc_wheel_dir() -> Path | None:
    """``site-packages/nvidia/cuda_nvcc`` of this environment, found without importing it."""
    try:
        spec = importlib.util.find_spec("nvidia.cuda_nvcc")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "bin" / "ptxas").exists():
            return Path(location)
    return None


def ptxas_optimizations() -> str:
    """Whether ptxas optimized the machine code: what the last mention in XLA_FLAGS says."""
    setting = "false"
    flags = os.environ.get("XLA_FLAGS", "")
    try:
        flags = shlex.split(flags)
    except ValueError:  # an unbalanced quote: XLA splits on spaces then
        flags = flags.split()
    for name, _, value in (flag.partition("=") for flag in flags):
        if name == PTXAS_OPTIMIZATIONS_FLAG:
            setting = value.lower() or "true"
    if setting in ("true", "1"):
        return "off (-O0): machine code only, generated after buffer assignment"
    return "on (ptxas's default)"
