"""Which end is wrong where a case states what is right (EXPECT): judged from each named
release's recorded figure, against an oracle written here, over shipped documents too."""

import copy
import json
import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.expect import judged, matches, verdicts

CASES = Path(__file__).resolve().parent.parent / "reports" / "cases"


@given(st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e300,
                 max_value=1e300),
       st.floats(min_value=-1e-3, max_value=1e-3))
def test_a_number_is_expected_within_a_millionth(expect, moved):
    value = expect * (1 + moved)
    oracle = abs(value - expect) <= 1e-6 * max(abs(value), abs(expect))
    assert matches(expect, value) == oracle
    assert matches(expect, str(value)) == oracle  # an output's value as JSON keeps it


@given(st.one_of(st.floats(width=64), st.sampled_from(["nan", "inf", "-inf", "x"])))
def test_nan_is_expected_only_of_nan(value):
    number = None
    try:
        number = float(value)
    except ValueError:
        pass
    assert matches("nan", value) == (None if number is None else math.isnan(number))


def test_a_nondeterministic_output_is_right_only_where_every_run_is():
    runs = {"nondeterministic": True, "runs": [[float("nan")], [4.7e-322]]}
    assert judged("nan", runs, "output") is False
    assert judged("nan", {"nondeterministic": True, "runs": [["nan"], ["nan"]]}, "output")
    assert judged(1.0, {"values": [1.0, 2.0]}, "output") is None  # two leaves, one expected
    assert judged([1.0, 2.0], {"values": [1.0, 2.0]}, "output") is True
    assert judged("no error", {"value": "TypeError: x"}, "error") is False
    assert judged("no error", {"value": "no error"}, "error") is True


def doc_of(name: str, expect) -> dict:
    doc = json.loads((CASES / name).read_text())
    doc = copy.deepcopy(doc)
    doc["case"]["expect"] = expect
    return doc


def test_the_wrong_end_of_a_change_is_named_from_its_record():
    doc = doc_of("bisect-0.9.2-0.10.2-cpu-vmap_matvec_wrong_result-output.json", 268435456.0)
    assert verdicts(doc) == {"0.10.1": True, "0.10.2": False}
    wrong = next(p for p in doc["probes"] if p["jax"] == "0.10.2")["figure"]["values"][0]
    doc["case"]["expect"] = wrong  # had the author stated the other, the other is wrong
    assert verdicts(doc) == {"0.10.1": False, "0.10.2": True}


def test_a_change_that_came_and_went_names_the_releases_inside_that_are_wrong():
    doc = doc_of("bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json", "no error")
    assert {v for v, ok in verdicts(doc).items() if not ok} == {"0.4.36"}
    assert "0.4.36 is wrong" in render(doc)


def test_a_case_that_states_nothing_is_judged_nowhere():
    doc = doc_of("bisect-0.9.2-0.10.2-cpu-vmap_matvec_wrong_result-output.json", None)
    del doc["case"]["expect"]
    assert verdicts(doc) == {}
    assert "expects" not in render(doc).split("\n\n")[1]
