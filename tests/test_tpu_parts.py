"""Which part of a TPU release a change came with (jaxbisect/search/tpu_parts.py), against an
oracle: a program whose behaviour is a function of which parts are new (jax+jaxlib, libtpu),
old at (old, old) and new at (new, new). The swaps measure it at (old, new) and (new, old)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.search.tpu_parts import Part, Seen, part_of

# The four ways a change can need its parts: each a behaviour of (jax new, libtpu new).
MODELS = {
    "libtpu": lambda jax, libtpu: libtpu,
    "jax": lambda jax, libtpu: jax,
    "both": lambda jax, libtpu: jax and libtpu,
    "either": lambda jax, libtpu: jax or libtpu,
}
ORACLE = {"libtpu": Part.LIBTPU, "jax": Part.JAX, "both": Part.BOTH, "either": Part.CANNOT_TELL}


def seen(new: bool) -> Seen:
    return Seen.NEW if new else Seen.OLD


@given(model=st.sampled_from(sorted(MODELS)))
def test_the_swaps_name_the_part_the_change_needs(model):
    behaves = MODELS[model]
    assert not behaves(False, False) and behaves(True, True)
    decided = part_of(seen(behaves(False, True)), seen(behaves(True, False)))
    assert decided.part is ORACLE[model]
    assert decided.reason


@given(a=st.sampled_from(list(Seen)), b=st.sampled_from(list(Seen)))
def test_a_swap_without_a_figure_or_unlike_both_ends_cannot_tell(a, b):
    decided = part_of(a, b)
    if {a, b} & {Seen.THIRD, Seen.NO_FIGURE}:
        assert decided.part is Part.CANNOT_TELL
        assert all(str(s) in decided.reason for s in (a, b) if s in (Seen.THIRD, Seen.NO_FIGURE))
    else:
        assert decided.part is not Part.CANNOT_TELL or (a, b) == (Seen.NEW, Seen.NEW)
