"""A case's ``EXPECT`` (repro/case.py): what the right answer is, read without running the case
and recorded in the case's JSON, so that the bisection's document (``doc["case"]["expect"]``)
lets a report say which end is wrong (needs-b 6). It never places a run."""

from __future__ import annotations

import json

import pytest
from fake_lab import FakeLab
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.report.document import document
from jaxbisect.search.question import Run, question_from
from jaxbisect.stages.releases import MetricRequest, bisect_metric
from repro.case import CONSTANTS, CaseError, expect_problem, read_case

CASE = '''
import jax
import jax.numpy as jnp

METRIC = "output"
{expect}


def case(n=4):
    return jax.jit(lambda x: x / x), (jnp.zeros((n,)),)
'''


def write(tmp_path, expect: str):
    path = tmp_path / "nan_case.py"
    path.write_text(CASE.format(expect=expect))
    return path


def test_expect_is_a_constant_of_the_case():
    assert "EXPECT" in CONSTANTS  # a standalone program leaves it out, as ANSWER


def test_a_case_states_what_is_right_and_its_json_keeps_it(tmp_path):
    case = read_case(write(tmp_path, 'EXPECT = ("nan", {"sum": 0.5})'))
    assert case.expect == ["nan", {"sum": 0.5}]
    assert case.as_json()["expect"] == ["nan", {"sum": 0.5}]
    assert "expect" not in read_case(write(tmp_path, "")).as_json()  # not stated: absent


@pytest.mark.parametrize("expect", ["1e999", "{1: 2}", "{'a': -1e999}"])
def test_an_expect_json_cannot_hold_is_a_case_error(tmp_path, expect):
    with pytest.raises(CaseError, match="EXPECT"):
        read_case(write(tmp_path, f"EXPECT = {expect}"))


json_leaves = (st.booleans() | st.integers() | st.text()
               | st.floats(allow_nan=False, allow_infinity=False))
json_like = st.recursive(json_leaves, lambda inner: st.lists(inner, max_size=4)
                         | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=12)


@settings(max_examples=100, deadline=None)
@given(json_like)
def test_every_json_value_is_an_expect_and_reads_back_as_written(value):
    assert expect_problem(value) is None
    assert json.loads(json.dumps(value)) == value


def test_the_bisection_document_records_what_the_case_expects(recorded_catalogue, tmp_path):
    question = question_from("output", str(write(tmp_path, 'EXPECT = "nan"')), [], ())

    def answer(version, q, number):
        values = ["nan"] * 4 if version == "0.4.36" else [1.0] * 4
        return Run(release=version, number=number, status="ok",
                   samples=({"shapes": [[[4], "float32"]], "values": values,
                             "sha256": version},))

    lab = FakeLab(answer)
    b = bisect_metric(recorded_catalogue, MetricRequest("0.4.36", "0.4.38", "cpu", question),
                      lab, lambda m: None)
    doc = json.loads(json.dumps(document(b, None)))
    assert doc["case"]["expect"] == "nan"
