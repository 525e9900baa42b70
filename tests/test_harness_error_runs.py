"""The harness's metric status "harness_error" (repro/metrics.py: the harness's own set-up left
the program unable to run: its placement, too few devices) is "cannot measure" in the driver
(needs-c 2): a named skip with its one line, never the program's error nor a behaviour; both
ends so is "cannot measure here" with that line, never "fails everywhere". A fake lab of the
recorded documents of tests/data/lab/ (jit_kwarg_named_f, jax 0.4.35 … 0.4.38), some answered
as the harness answers such a run."""

from __future__ import annotations

import copy
import json

import pytest
from fake_lab import FakeLab, recorded, recorded_documents

from jaxbisect.lab.runs import run_of_document
from jaxbisect.report.document import document
from jaxbisect.search.question import question_from
from jaxbisect.stages.releases import MetricRequest, bisect_metric

CASE = "repro/cases/jit_kwarg_named_f.py"
LINE = ("the case asks for 4 devices and this run has 1: the harness cannot run it; "
        "declare DEVICES = 4 in the case (or pass --devices 4)")
DOCS = recorded_documents("jit_kwarg_named_f-jax-*.json")
# 0.4.36's recorded TypeError answered by 0.4.37 and 0.4.38 too: a change at 0.4.35 → 0.4.36.
RAISED = next(d["metric"] for d in DOCS if d["jax"] == "0.4.36")
CHANGED = [{**d, "metric": RAISED} if d["jax"] in ("0.4.37", "0.4.38") else d for d in DOCS]


def harness_error(doc: dict, kind: str = "devices") -> dict:
    """``doc`` as the harness writes a run its own set-up left unable to run (exit 125)."""
    out = copy.deepcopy(doc)
    out["metric"] = {**{k: v for k, v in doc["metric"].items() if k not in ("samples", "value")},
                     "status": "harness_error", "samples": [], "value": None, "error": LINE,
                     "harness_error": {"kind": kind, "said": "needs 4 devices, has 1"}}
    return out


def bisection(recorded_catalogue, broken: set[str], metric: str = "error"):
    docs = [harness_error(d) if d["jax"] in broken else d for d in CHANGED]
    if metric != "error":  # the same documents asked for another metric
        docs = [{**d, "metric": {**d["metric"], "name": metric}} for d in docs]
    from conftest import REPO

    question = question_from(metric, str(REPO / CASE), [], ())
    answer = recorded(docs)  # one recorded document a release: every run of it answers so
    lab = FakeLab(lambda version, q, number: answer(version, q, 1))
    b = bisect_metric(recorded_catalogue, MetricRequest("0.4.35", "0.4.38", "cpu", question),
                      lab, lambda m: None)
    return b, json.loads(json.dumps(document(b, None)))


def test_a_harness_error_run_is_a_skip_with_its_line_never_the_program_s_error():
    run = run_of_document(harness_error(DOCS[0]), "0.4.35", 1)
    assert run.status == "failed" and not run.samples  # a skip: no figure, nothing raised
    assert run.error == f"cannot measure here: {LINE}"


def test_a_release_inside_that_cannot_be_measured_is_a_named_skip(recorded_catalogue):
    b, doc = bisection(recorded_catalogue, {"0.4.36"})
    assert doc["status"] == "found"
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"], doc["exact"]) == (
        "0.4.35", "0.4.37", False)
    probes = {p["jax"]: p for p in doc["probes"]}
    assert probes["0.4.36"]["label"] == "skip"  # a skip with the harness's line
    assert f"cannot measure here: {LINE}" in json.dumps(probes["0.4.36"])


@pytest.mark.parametrize("metric", ["error", "memory"])
def test_both_ends_that_cannot_be_measured_are_cannot_measure_here(recorded_catalogue, metric):
    b, doc = bisection(recorded_catalogue, {"0.4.35", "0.4.38"}, metric)
    assert doc["status"] == "unmeasurable"  # never fails_everywhere: the program never ran
    assert doc.get("everywhere_error") is None
    assert doc["reason"].startswith("cannot measure here: ") and LINE in doc["reason"]
