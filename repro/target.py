"""Compiling for an accelerator that is not here: what every target is, and which there are
(docs/targets.md).

A target is XLA's plan for a device this machine lacks, never a run on one. Each kind lives in
a module of its own that keeps this protocol: ``gpu_target.py`` (an NVIDIA GPU described by a
spec file) and ``tpu_target.py`` (a topology of Google's accelerator). What a
target is, to the rest of the harness:

- ``name``, ``kind`` ("gpu", …), ``description`` (the device's name), ``source`` (where it
  was read from), ``built_in``, ``sha256`` (what a stored result depends on), ``platform``
  (the JAX platform of the real device), ``backend_label`` ("gpu (compile-only)", …),
  ``device_label`` and ``plan_words`` (what the figures are, in every report's words),
  ``as_json()``;
- ``configure(environ)``: what must be set before ``import jax``;
- ``compile_only()``, after ``import jax``: the compile-only device, with
  ``struct(shape, dtype)`` (an argument placed on it) and ``describe()`` (the harness
  document's ``target``: ``as_json()`` and what this environment compiled with);
- ``explain_error(text)``: one line for an error the target's own values cause (or None);
- ``here()``: whether the device itself is on this machine, seen without opening it: then
  the harness measures it too, in fresh processes, beside the plan.

jax and the standard library only, like the rest of ``repro``; nothing here imports jax.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# The modules of the kinds of target, each with KIND, PLATFORMS, built_in(), load(name) and
# plan_words(described); the first whose built-in names hold a name loads it; a path is a
# spec file (SPEC_FILES' kind).
KINDS = ("gpu_target", "tpu_target")
SPEC_FILES = "gpu_target"


class TargetError(ValueError):
    """A target name or spec file that cannot be used (one line for the user)."""


def _kinds() -> list[ModuleType]:
    return [importlib.import_module(f"{__package__}.{name}") for name in KINDS]


def _kind(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.{name}")


def built_in(kind: str | None = None) -> list[str]:
    """Every built-in target's name (of one ``kind`` where given), sorted."""
    return sorted(name for module in _kinds() if kind in (None, module.KIND)
                  for name in module.built_in())


def load(name_or_path: str):
    """A built-in target by name (``a6000``, ``v5e``), or a GPU spec file by path."""
    key = name_or_path.strip()
    for module in _kinds():
        if key.lower() in module.built_in():
            return module.load(key)
    specs = _kind(SPEC_FILES)
    if specs.is_spec_path(key):
        return specs.load(key)
    raise TargetError(f"unknown target {key!r}: choose one of {', '.join(built_in())} "
                      f"or give the path of a GpuTargetConfigProto spec file")


def kind_of(described: dict) -> ModuleType:
    """The module of a described target (a harness document's ``target``): its ``kind``
    (documents from before there were kinds describe a GPU)."""
    kind = described.get("kind") or "gpu"
    return next((m for m in _kinds() if m.KIND == kind), _kind(SPEC_FILES))


def plan_words(described: dict) -> str:
    """What a described target's figures are, in its kind's words ("compiled for NVIDIA RTX
    A6000, without the GPU")."""
    return kind_of(described).plan_words(described)


def CompileOnly(target):  # noqa: N802 (the name repro/measure.py has always called)
    """The compile-only device of ``target`` (call after ``import jax``)."""
    return target.compile_only()


def capture_spec() -> str:
    """The spec of the GPU at hand, to reuse as a target file (``--write-target-spec``)."""
    return _kind(SPEC_FILES).capture_spec()


def _platforms() -> dict[str, str | None]:
    """``python -m repro --backend``'s words and the JAX platform each names."""
    words: dict[str, str | None] = {"auto": None, "cpu": "cpu"}
    for module in _kinds():
        words.update(module.PLATFORMS)
    return words


PLATFORMS = _platforms()
