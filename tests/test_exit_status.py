"""A command after `--` without --metric: bisected by its exit status, git bisect run's codes
(0 the old behaviour, 1-127 the new, 125 this release cannot be tested, 128 or more stops the
bisection), through the metric pipeline's search and a lab of scripted runs."""

from __future__ import annotations

import pytest
from fake_lab import FakeLab
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.lab.runs import CommandAborted, exit_status_run
from jaxbisect.lab.store import Store
from jaxbisect.report.document import document
from jaxbisect.search.comparing import classifier_for
from jaxbisect.search.metric_search import search_metric
from jaxbisect.search.question import Question
from jaxbisect.stages.releases import MetricRequest, bisect_metric

COMMAND = Question(metric="exit_code", command=("python", "check.py"))
NEW_CODES = st.integers(1, 127).filter(lambda c: c != 125)


def search(codes: list[int]):
    def run_at(i: int, number: int):
        return exit_status_run(codes[i], "", str(i), number)

    return search_metric(len(codes), run_at, classifier_for(COMMAND, None),
                         noisy_metric=COMMAND.noisy)


@st.composite
def histories(draw):
    """Exit codes of n releases: 0 up to a change, any new code from it on, and 125 (skip)
    anywhere between the ends."""
    n = draw(st.integers(2, 16))
    change = draw(st.integers(1, n - 1))
    codes = [0 if i < change else draw(NEW_CODES) for i in range(n)]
    for i in range(1, n - 1):
        if draw(st.booleans()) and draw(st.booleans()):
            codes[i] = 125
    return codes


@settings(max_examples=200, deadline=None)
@given(histories())
def test_the_pair_is_a_zero_then_a_new_code_with_only_skips_between(codes):
    s = search(codes)
    assert not COMMAND.noisy and s.status == "found"
    lo, hi = s.result.last_old, s.result.first_new
    assert codes[lo] == 0 and codes[hi] not in (0, 125)
    assert all(c == 125 for c in codes[lo + 1:hi])  # the oracle: nothing measured between
    change = next(i for i, c in enumerate(codes) if c not in (0, 125))
    assert lo < change <= hi and s.result.exact == (hi == lo + 1)
    for i, placed in s.placed.items():  # 125 is a skip with git bisect run's words
        assert (placed.outcome.value == "skip") == (codes[i] == 125)


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 12), st.sampled_from([0, 1, 3, 127]))
def test_ends_with_the_same_behaviour_are_alike(n, code):
    assert search([code] * n).status == "alike"


def test_an_end_that_exits_125_cannot_be_measured():
    s = search([125, 0, 1])
    assert s.status == "unmeasurable" and "125" in s.reason


@pytest.mark.parametrize("code", [128, 134, 255, -11])
def test_128_or_more_stops_the_bisection_with_one_line(code):
    with pytest.raises(CommandAborted) as raised:
        search([0, 0, code, 1, 1])
    line = str(raised.value)
    assert "\n" not in line and "stops the bisection" in line
    assert raised.value.exit_status == 2


def test_a_command_bisection_in_a_lab_reports_the_codes(recorded_catalogue, tmp_path):
    codes = {"0.4.30": 0, "0.4.31": 0, "0.4.33": 0, "0.4.34": 3, "0.4.35": 3}
    lab = FakeLab(lambda v, q, k: exit_status_run(codes[v], "", v, k), Store(tmp_path))
    request = MetricRequest(start="0.4.30", end="0.4.35", backend="cpu", question=COMMAND)
    doc = document(bisect_metric(recorded_catalogue, request, lab, lambda m: None), None)
    assert (doc["status"], doc["last_old"]["jax"], doc["first_new"]["jax"]) \
        == ("found", "0.4.33", "0.4.34")
    assert doc["metric"] == {"name": "exit_code", "unit": None, "kind": "deterministic",
                             "threshold": None}
    assert {p["jax"]: p["classified"] for p in doc["probes"]}["0.4.34"] == [3]
    assert doc["reproduce"].endswith("--metric exit_code -- python check.py")
