"""A libtpu release as a candidate: a jax release's environment with another libtpu loaded
(TPU_LIBRARY_PATH), the third kind beside a release and a jax commit."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path

from packaging.version import Version

from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.environments import ensure_libtpu, libtpu_library


@dataclass(frozen=True)
class LibtpuCandidate(Release):
    """A libtpu release as a candidate: the environment of ``runs_on`` (its jax and jaxlib
    held) with libtpu ``libtpu`` loaded in place of its own (``TPU_LIBRARY_PATH`` at that
    release's ``libtpu/libtpu.so``, installed alone in the cache: tpu-facts.md). Its version is
    the jax release's with the libtpu as a local label (``0.8.0+libtpu.0.0.27``), so that every
    name, key and word tells the swaps apart. libtpu is closed source: its release is the
    finest level there is."""

    libtpu: str = ""
    runs_on: Version | None = None

    level = "libtpu"

    @classmethod
    def on(cls, release: Release, libtpu: str) -> LibtpuCandidate:
        """``release``'s jax and jaxlib with libtpu ``libtpu``."""
        fields = {f.name: getattr(release, f.name) for f in dataclass_fields(Release)}
        return cls(**{**fields, "version": Version(f"{release.version}+libtpu.{libtpu}"),
                      "yanked": False, "yanked_reason": None}, libtpu=libtpu,
                   runs_on=release.version)

    @property
    def environment_release(self) -> Release:
        fields = {f.name: getattr(self, f.name) for f in dataclass_fields(Release)}
        return Release(**{**fields, "version": self.runs_on})

    @property
    def key_fields(self) -> dict:
        return {"libtpu": self.libtpu, "runs_on": str(self.runs_on)}

    @property
    def environ(self) -> dict[str, str]:
        return {"TPU_LIBRARY_PATH": str(libtpu_library(self.libtpu))}

    def prepare(self, python: Path) -> None:
        """Its libtpu installed alone, ahead of its run."""
        ensure_libtpu(self.libtpu)

    @property
    def install_line(self) -> str:
        """The exact versions it ran, as pip takes them."""
        return f"jax=={self.runs_on} jaxlib=={self.jaxlib} libtpu=={self.libtpu}"
