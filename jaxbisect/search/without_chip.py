"""A compile without a chip that a chip would not fail: not the program's behaviour.

jax chooses the serialisation version of a Pallas kernel's Mosaic module from whether it
believes it runs on a Cloud TPU VM, and a compile without a chip never is on one: at jax 0.7.1
(libtpu 0.0.20) it writes version 8, which its own libtpu reads only up to 7, so every Pallas
kernel fails to compile there ("Failed to deserialize the Mosaic module: INTERNAL: Unsupported
version: expected <= 7 but got 8"); on a TPU VM the same release writes 7
(docs/targets.md). Such a run is a skip that says so, as a release
that cannot be measured is, never a behaviour.
"""

from __future__ import annotations

import re

_VERSION_SKEW = re.compile(r"Failed to deserialize the Mosaic module: (?:\w+: )?Unsupported "
                           r"version: expected <= (\d+) but got (\d+)")


def cannot_tell_here(figure: object, tpu_without_chip: bool) -> str | None:
    """Why a run of a compile for a TPU without a chip tells nothing of the program (its
    ``figure``: the error it raised), or None where it may."""
    if not tpu_without_chip or not isinstance(figure, str):
        return None
    found = _VERSION_SKEW.search(figure)
    if found is None:
        return None
    readable, written = found.groups()
    return (f"cannot tell here: compiled without a chip, this release's jax wrote its Pallas "
            f"kernel as Mosaic version {written} (it chooses by whether it runs on a Cloud TPU "
            f"VM), which the libtpu it ran with reads only up to {readable}; on a Cloud TPU VM "
            f"jax would write one that libtpu reads")


def tpu_without_chip(document: dict) -> bool:
    """Whether a harness document is a compile for a TPU target without its chip."""
    target = document.get("target") or {}
    return bool(document.get("deviceless")) and isinstance(target, dict) and (
        target.get("kind") == "tpu" or target.get("platform") == "tpu" or "topology" in target)
