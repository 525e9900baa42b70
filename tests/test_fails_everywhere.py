"""An error at every release measured: its own status (never "no change"), the error, its
cause where recognised and how to fix the case; asserted on the JSON document, from a fake
lab of the errors jax's releases raise."""

from __future__ import annotations

import pytest
from fake_lab import FakeLab

from jaxbisect.cli import METRIC_EXIT
from jaxbisect.report.document import document
from jaxbisect.report.markdown.answer import answer_line
from jaxbisect.search.failures import cause_of, everywhere_error
from jaxbisect.search.question import Question, Run
from jaxbisect.stages.releases import MetricRequest, bisect_metric

# jax's own words, as releases 0.4.3x … 0.10 raise them (the devices' first one: the issue's).
TOO_FEW = "ValueError: Number of devices 1 must be >= the number of mesh axes' product 4"
MISSING = "AttributeError: module 'jax' has no attribute 'shard_map'"
IMPORTS = "ModuleNotFoundError: No module named 'flax'"


@pytest.mark.parametrize("error, cause", [
    (TOO_FEW, "too_few_devices"),
    ("ValueError: compiling computation that requires 4 logical devices, but only 1 XLA "
     "devices are available (num_replicas=4)", "too_few_devices"),
    ("ValueError: cannot reshape array of size 1 into shape (4,)", "too_few_devices"),
    (MISSING, "missing_attribute"),
    ("ImportError: cannot import name 'shard_map' from 'jax' (/x/jax/__init__.py)",
     "import_error"),
    (IMPORTS, "import_error"),
    ("TypeError: unsupported operand type(s) for +: 'int' and 'str'", None),
])
def test_a_recognised_cause_says_how_to_fix_the_case(error, cause):
    found, fix = cause_of(error)
    assert found == cause and (fix is None) == (cause is None)


def test_one_error_everywhere_and_nothing_else():
    assert everywhere_error([TOO_FEW, TOO_FEW]).cause == "too_few_devices"
    worded = "ValueError: compiling computation that requires 4 logical devices, but only 1 XLA"
    assert everywhere_error([TOO_FEW, worded]).error == worded  # one cause, two wordings
    assert everywhere_error([TOO_FEW, "no error"]) is None
    assert everywhere_error([TOO_FEW, None]) is None
    assert everywhere_error([TOO_FEW]) is None
    assert everywhere_error(["TypeError: a", "TypeError: b"]) is None  # two unknown errors


def bisect(catalogue, metric: str, answer):
    question = Question(metric=metric, command=("python", "case.py"), kind="deterministic")
    lab = FakeLab(lambda version, q, number: answer(version, number))
    request = MetricRequest("0.4.36", "0.4.38", "cpu", question)
    return bisect_metric(catalogue, request, lab, lambda m: None)


def test_the_same_error_at_every_release_is_not_no_change(recorded_catalogue):
    b = bisect(recorded_catalogue, "error", lambda v, k: Run(release=v, number=k, status="ok",
                                                             samples=(TOO_FEW,)))
    doc = document(b, None)
    assert b.search.status == "alike"  # what the search alone would have said
    assert doc["status"] == "fails_everywhere" and METRIC_EXIT[doc["status"]] != 0
    assert METRIC_EXIT[doc["status"]] not in (METRIC_EXIT["alike"], METRIC_EXIT["found"])
    assert doc["everywhere_error"]["error"] == TOO_FEW
    assert doc["everywhere_error"]["cause"] == "too_few_devices"
    assert "DEVICES" in doc["everywhere_error"]["fix"]
    line = answer_line(doc)
    assert "No change" not in line and TOO_FEW in line


def test_a_figure_metric_raising_everywhere_is_said_too(recorded_catalogue):
    b = bisect(recorded_catalogue, "memory", lambda v, k: Run(release=v, number=k,
                                                              status="raised", error=MISSING))
    doc = document(b, None)
    assert b.search.status == "unmeasurable"
    assert doc["status"] == "fails_everywhere"
    assert doc["everywhere_error"]["cause"] == "missing_attribute"


def test_an_error_that_changes_is_a_change_not_everywhere(recorded_catalogue):
    b = bisect(recorded_catalogue, "error", lambda v, k: Run(
        release=v, number=k, status="ok", samples=("no error" if v == "0.4.36" else TOO_FEW,)))
    doc = document(b, None)
    assert doc["status"] == "found" and doc["everywhere_error"] is None
