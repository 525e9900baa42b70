"""Which part of a TPU release a change came with: jax and jaxlib, or libtpu, or both.

A TPU release is three parts pinned separately (tpu-facts.md): jax's Python, jaxlib (C++, from
the jax repository's ``jaxlib/``) and libtpu (the TPU compiler and runtime, closed source).
Once a change is placed between two releases, the swaps say which part it came with: the old
jax and jaxlib with the new release's libtpu, and the new jax and jaxlib with the old libtpu,
each placed against the pair's ends by the bisection's own classifier.

| old jax+jaxlib, new libtpu | new jax+jaxlib, old libtpu | the change |
|---|---|---|
| new | old | came with libtpu |
| old | new | came with jax/jaxlib |
| old | old | needs both (only the two new parts together show it) |
| new | new | cannot tell (either new part alone shows it) |
| anything else (no figure, a third behaviour) | | cannot tell |
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Part(enum.StrEnum):
    LIBTPU = "came with libtpu"
    JAX = "came with jax/jaxlib"
    BOTH = "needs both"
    CANNOT_TELL = "cannot tell"


class Seen(enum.StrEnum):
    """A swap placed against the pair's ends."""

    OLD = "old"
    NEW = "new"
    THIRD = "third behaviour"     # like neither end
    NO_FIGURE = "no figure"       # it could not be measured (its reason beside it)


@dataclass(frozen=True)
class Parts:
    part: Part
    reason: str


def part_of(old_with_new_libtpu: Seen, new_with_old_libtpu: Seen) -> Parts:
    """What the two swaps say (the table above)."""
    a, b = old_with_new_libtpu, new_with_old_libtpu
    if a is Seen.NEW and b is Seen.OLD:
        return Parts(Part.LIBTPU, "the old jax and jaxlib show it with the new libtpu, and the "
                                  "new ones do not with the old libtpu")
    if a is Seen.OLD and b is Seen.NEW:
        return Parts(Part.JAX, "the new jax and jaxlib show it with the old libtpu, and the "
                               "old ones do not with the new libtpu")
    if a is Seen.OLD and b is Seen.OLD:
        return Parts(Part.BOTH, "neither release's jax and jaxlib with the other's libtpu "
                                "shows it: only the new jax and jaxlib with the new libtpu do")
    if a is Seen.NEW and b is Seen.NEW:
        return Parts(Part.CANNOT_TELL, "each release's jax and jaxlib with the other's libtpu "
                                       "shows it: either new part alone brings it")
    unlike = [f"{words}: {seen}" for words, seen in (("old jax+jaxlib with the new libtpu", a),
                                                     ("new jax+jaxlib with the old libtpu", b))
              if seen in (Seen.THIRD, Seen.NO_FIGURE)]
    return Parts(Part.CANNOT_TELL, "; ".join(unlike))
