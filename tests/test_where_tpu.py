"""For a TPU target the swaps of a release's parts say where a change is, not the lowered
modules (jaxbisect/evidence/where.py's following_the_swaps): a Pallas kernel's lowered module
differs between releases by its payload's bytes alone, so "the lowered modules differ" never
places a TPU change in jax by itself; a change that came with libtpu alone is offered no XLA
compare link as its cause."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.evidence.where import following_the_swaps

CULPRITS = ["jax", "xla", "below-hlo", "jaxlib", "unknown"]
PARTS = [None, "came with libtpu", "came with jax/jaxlib", "needs both", "cannot tell"]


def attribution(culprit: str) -> dict:
    return {"culprit": culprit, "text": "modules", "lowering": "changed",
            "links": {"jax_compare": "https://github.com/jax-ml/jax/compare/a...b",
                      "xla_compare": "https://github.com/openxla/xla/compare/c...d"},
            "xla_commits": {"count": 3}}


@given(culprit=st.sampled_from(CULPRITS), part=st.sampled_from(PARTS))
def test_a_tpu_change_is_placed_by_the_swaps_never_by_the_lowering_alone(culprit, part):
    parts = None if part is None else {"part": part, "new": {"libtpu": "0.0.34"}}
    out = following_the_swaps(attribution(culprit), parts)
    assert out["culprit"] != "jax"
    if part == "came with libtpu":
        assert out["culprit"] == "libtpu" and "libtpu 0.0.34" in out["text"]
        assert out["links"]["xla_compare"] is None and out["xla_commits"] is None
        assert out["links"]["jax_compare"]  # the releases' own compare stays
    elif part == "needs both":
        assert out["culprit"] == "jax+libtpu"
    elif culprit == "jax":
        assert out["culprit"] in ("jax/jaxlib", "tpu-unplaced", "tpu-unswapped")
    else:
        assert out["culprit"] in (culprit, "jax/jaxlib")
    if out["culprit"] != "libtpu":
        assert out["links"]["xla_compare"]


def test_a_libtpu_change_is_named_by_the_first_libtpu_that_shows_it():
    parts = {"part": "came with libtpu", "new": {"libtpu": "0.0.34"},
             "narrowed": {"first_new": "0.0.33", "exact": True}}
    assert "libtpu 0.0.33" in following_the_swaps(attribution("jax"), parts)["text"]
    parts["narrowed"]["exact"] = False  # a skip between: only the release's own is certain
    assert "libtpu 0.0.34" in following_the_swaps(attribution("jax"), parts)["text"]


def test_a_pair_without_swaps_never_says_the_swaps_did_not_place_it():
    """Where libtpu was not swapped (no ``libtpu`` part: the pair was not exact), the words
    say so, never "the swaps … did not place it" (a result that does not exist)."""
    from jaxbisect.evidence.where import following_the_swaps

    out = following_the_swaps({"culprit": "jax", "text": "lowered modules differ"}, None)
    assert out["culprit"] == "tpu-unswapped" and "was not swapped" in out["text"]
    swapped = following_the_swaps({"culprit": "jax", "text": "x"}, {"part": "cannot tell"})
    assert swapped["culprit"] == "tpu-unplaced" and "did not place it" in swapped["text"]
