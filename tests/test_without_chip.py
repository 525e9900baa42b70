"""A compile without a chip that a chip would not fail (jaxbisect/search/without_chip.py): jax
0.7.1 writes a Pallas kernel's Mosaic module in a version its own libtpu cannot read when it is
not on a Cloud TPU VM. Such a run is a named skip ("cannot tell here: …"), never a behaviour:
the search places around it as around a release that cannot be measured."""

from __future__ import annotations

from fake_lab import recorded_documents
from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.lab.runs import run_of_document
from jaxbisect.search.comparing import classifier_for
from jaxbisect.search.metric_search import search_metric
from jaxbisect.search.question import Question
from jaxbisect.search.without_chip import cannot_tell_here, tpu_without_chip

DOCUMENTS = {d["jax"]: d for d in recorded_documents("pallas_vmem_limit-jax-*.json")}
SKEW = ("XlaRuntimeError: INTERNAL: Failed to deserialize the Mosaic module: INTERNAL: "
        "Unsupported version: expected <= {} but got {}")


def test_the_release_whose_jax_writes_a_version_its_libtpu_cannot_read_is_a_named_skip():
    run = run_of_document(DOCUMENTS["0.7.1"], "0.7.1", 1)
    assert run.status == "failed" and run.samples == ()
    assert run.error.startswith("cannot tell here: compiled without a chip")
    assert "version 8" in run.error and "up to 7" in run.error
    assert run_of_document(DOCUMENTS["0.7.2"], "0.7.2", 1).samples == ("no error",)


def test_the_search_places_around_it():
    """Between 0.7.0 and 0.8.1 the one release inside is 0.7.1: skipped with its reason, the
    pair left as wide as the skip makes it (never "0.7.1 is the change")."""
    versions = ["0.7.0", "0.7.1", "0.8.1"]
    runs = {v: run_of_document(DOCUMENTS[v], v, 1) for v in versions}
    search = search_metric(len(versions), lambda i, k: runs[versions[i]],
                           classifier_for(Question(metric="error"), None), noisy_metric=False)
    assert search.status == "found" and not search.result.exact
    assert (search.result.last_old, search.result.first_new) == (0, 2)
    assert search.result.skipped == (1,)
    assert search.placed[1].placement.reason.startswith("cannot tell here: compiled without")


@given(readable=st.integers(1, 20), written=st.integers(1, 20),
       status=st.sampled_from(["INTERNAL", "INVALID_ARGUMENT"]))
def test_only_a_compile_for_a_tpu_without_a_chip_is_skipped(readable, written, status):
    figure = SKEW.format(readable, written).replace("INTERNAL: Unsupported",
                                                    f"{status}: Unsupported")
    assert cannot_tell_here(figure, True).startswith("cannot tell here")
    assert cannot_tell_here(figure, False) is None  # on the chip: the release's own answer
    assert cannot_tell_here("no error", True) is None
    assert cannot_tell_here("MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: "
                            "unsupported shape cast", True) is None


def test_which_documents_are_compiles_for_a_tpu_without_a_chip():
    assert tpu_without_chip(DOCUMENTS["0.7.1"])
    assert not tpu_without_chip({**DOCUMENTS["0.7.1"], "deviceless": False})
    assert not tpu_without_chip({"deviceless": True, "target": {"kind": "gpu", "name": "a6000"}})
