"""The CPU: every release's plain ``jax`` and ``jaxlib``, resolved as of its date."""

from __future__ import annotations

from jaxbisect.lab.backends import Backend, InstallPlan


class Cpu(Backend):
    name = "cpu"
    platform = "cpu"

    def not_visible(self) -> str:  # never: every machine has one
        return "--backend cpu is not available here"

    def install_plan(self, release) -> InstallPlan:
        return InstallPlan((f"jax=={release.version}", f"jaxlib=={release.jaxlib}"),
                           release.cutoff(self))


BACKENDS = (Cpu(),)
