"""NVIDIA GPUs through CUDA 12: a real GPU (``cuda12``), and a GPU target's compile-only
environments (``cuda12-deviceless``: the plugin, compiled for a GPU that is not here).

CUDA 12 wheels come from three channels over JAX's history (see docs/jax-facts.md):

- <= 0.4.21: only JAX's find-links page, as ``jaxlib==X+cuda12.cudnn89``. The page has no upload
  times, so jaxlib (pinned exactly) is exempted from the date cut-off while everything else from
  PyPI still honours it. The page is ``JAX_CUDA_FIND_LINKS``; set ``JAX_SCAN_REPRO_FIND_LINKS``
  to use a mirror or a local directory of wheels instead.
- 0.4.22 - 0.4.29: JAX's page or PyPI's ``jax-cuda12-plugin``; we use PyPI, which date-filters.
- >= 0.4.30: only PyPI, as ``jax[cuda12]``.

Which releases compile for a GPU without one (docs/targets.md, measured here): jax 0.4.34 on,
less 0.4.36 and 0.4.37.
"""

from __future__ import annotations

import os
import platform
import shlex
from pathlib import Path

from packaging.version import Version

from jaxbisect.lab.backends import Backend, InstallPlan, pinned_deps
from jaxbisect.lab.machine import nvidia_gpus

JAX_CUDA_FIND_LINKS = "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html"
FIRST_CUDA12_FIND_LINKS = Version("0.4.13")  # first jaxlib built as +cuda12.cudnn89
FIRST_CUDA12_PLUGIN = Version("0.4.22")  # first jax-cuda12-plugin on PyPI
LAST_CUDA12_FIND_LINKS = Version("0.4.21")  # last release with no plugin at all
FIRST_CUDA12_PJRT = Version("0.4.23")
FIRST_CUDA12_EXTRA = Version("0.4.30")  # jax[cuda12] installs the PyPI plugin from here on

FIRST_DEVICELESS = Version("0.4.34")  # before it the topology comes from a real client
NO_DEVICELESS = {Version("0.4.36"), Version("0.4.37")}  # "could not find registered platform"
NEEDS_A_GPU = "needs a real GPU"


class Cuda12(Backend):
    name = "cuda12"
    platform = "cuda"
    auto_rank = 2
    device = "an NVIDIA GPU"
    recorded = ("jax-cuda", "nvidia-")
    jax_extra = "[cuda12]"

    def visible(self) -> bool:
        return Path("/dev/nvidia0").exists() or bool(nvidia_gpus())

    def not_visible(self) -> str:
        return ("--backend cuda12, but no NVIDIA GPU is visible here (no /dev/nvidia0, "
                "nvidia-smi -L lists none); use --backend cpu or auto")

    def cutoff_times(self, release):
        return [release.cuda_plugin_uploaded]  # its wheels can land after jaxlib's

    def unusable(self, release, python):
        tag = f"cp{python[0]}{python[1]}"
        here = f"linux {platform.machine()}"
        if release.version < FIRST_CUDA12_FIND_LINKS:
            return f"no CUDA 12 wheels before {FIRST_CUDA12_FIND_LINKS} are supported"
        if release.version >= FIRST_CUDA12_PLUGIN:
            if release.cuda_plugin is None:
                return f"no jax-cuda12-plugin {release.jaxlib} on PyPI"
            if tag not in release.cuda_plugin_pythons:
                return f"no jax-cuda12-plugin {release.cuda_plugin} wheel for {tag} on {here}"
        return None

    def install_plan(self, release) -> InstallPlan:
        jax, jaxlib, cutoff = release.version, release.jaxlib, release.cutoff(self)
        if jax <= LAST_CUDA12_FIND_LINKS:
            return InstallPlan((f"jax[cuda12_pip]=={jax}", f"jaxlib=={jaxlib}+cuda12.cudnn89"),
                               cutoff,
                               os.environ.get("JAX_SCAN_REPRO_FIND_LINKS") or JAX_CUDA_FIND_LINKS,
                               date_exempt=("jaxlib",))
        if jax >= FIRST_CUDA12_EXTRA:
            return InstallPlan((f"jax[cuda12]=={jax}", f"jaxlib=={jaxlib}"), cutoff)
        pins = [f"jax=={jax}", f"jaxlib=={jaxlib}", f"jax-cuda12-plugin[with_cuda]=={jaxlib}"]
        if jaxlib >= FIRST_CUDA12_PJRT:  # before it, the plugin carried the PJRT library itself
            pins.append(f"jax-cuda12-pjrt=={jaxlib}")
        return InstallPlan(tuple(pins), cutoff)

    def harness_args(self, target: str = "") -> list[str]:
        return [] if target else ["--backend", "gpu"]

    def flags_platform(self) -> str:
        return "cuda"

    def pip_words(self, version, jaxlib, installed):
        held = installed or {}
        own = [f"{n}=={held[n]}" for n in ("jax-cuda12-plugin", "jax-cuda12-pjrt") if n in held]
        return " ".join([shlex.quote(f"jax[cuda12]=={version}"), f"jaxlib=={jaxlib}", *own,
                         *pinned_deps(installed)])

    def machine_words(self, doc):
        if doc.get("target"):
            gpu = doc["measured"].removeprefix("compiled for ").removesuffix(", without the GPU")
            return f" on a machine with the GPU ({gpu})"
        return " on a machine with an NVIDIA GPU"


class Cuda12CompileOnly(Cuda12):
    """A GPU target's environments: the small install (~350 MB), the plugin and PJRT wheels
    without the CUDA libraries (nothing runs), and the nvcc wheel, whose ptxas XLA runs while
    compiling."""

    name = "cuda12-deviceless"  # an internal key (cache folders): never shown as it stands
    chosen = False
    platform = ""
    target_kind = "gpu"
    auto_rank = 0
    pip_extras = ("jax-cuda12-plugin", "jax-cuda12-pjrt", "nvidia-cuda-nvcc-cu12")
    real_device = "a real GPU"
    jax_extra = ""

    def words(self, target: str = "") -> str:
        if target:
            name = Path(target).name if "/" in target else target.upper()
            return f"{name}, compiled without the GPU"
        return "CUDA 12, compiled without a GPU"

    def visible(self) -> bool:  # nothing runs: no GPU needed
        return True

    def unavailable(self, release):
        return compile_only_reason(release.version)  # what a real GPU would cure

    def needs_device(self, why):
        return bool(why) and why.startswith(NEEDS_A_GPU)

    def device_backend(self) -> Backend:
        return CUDA12

    def install_plan(self, release) -> InstallPlan:
        plugin = release.cuda_plugin or release.jaxlib
        return InstallPlan((f"jax=={release.version}", f"jaxlib=={release.jaxlib}",
                            f"jax-cuda12-plugin=={plugin}", f"jax-cuda12-pjrt=={plugin}",
                            "nvidia-cuda-nvcc-cu12"), release.cutoff(self))

    def harness_args(self, target: str = "") -> list[str]:
        return []  # the target names the GPU it compiles for

    def flags_platform(self) -> str:
        # XLA's flag list is one for every backend, and a compile-only process has no GPU
        # client to start: listed from a CPU process.
        return "cpu"

    def range_refusal(self, start, end, target):
        return (f"no two releases in jax {start} … {end} can compile for --target {target} "
                f"without a GPU (jax {FIRST_DEVICELESS} on, less 0.4.36 and 0.4.37); on a "
                f"machine with an NVIDIA GPU: python -m bisect --from {start} --to {end} "
                f"--backend cuda12")


def compile_only_reason(version: Version) -> str | None:
    """None when this jax release can compile for a GPU target without the GPU; else why not."""
    if version < FIRST_DEVICELESS:
        return (f"{NEEDS_A_GPU}: before jax {FIRST_DEVICELESS} a GPU topology comes from a real "
                f"client (\"No visible GPU devices\")")
    if version in NO_DEVICELESS:
        return (f"{NEEDS_A_GPU}: jax 0.4.36 and 0.4.37 cannot compile without one (\"could not "
                f"find registered platform with id\"; no workaround known)")
    return None


CUDA12 = Cuda12()
CUDA12_COMPILE_ONLY = Cuda12CompileOnly()
BACKENDS = (CUDA12, CUDA12_COMPILE_ONLY)
