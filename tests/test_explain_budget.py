"""The explanation's wiring (pipeline.explain) with injected searches: the report is
rewritten as each part lands, the budget is handed to both searches and reported, and the
pass search does not start once the budget is spent."""

from __future__ import annotations

import argparse
import copy
import time
from types import SimpleNamespace

from fake_lab import FakeLab, scripted

from jaxbisect.pipeline import explain


def run(flags_seconds: float, budget: float, xla_repo=None):
    written, deadlines, labs = [], [], []
    extra: dict = {}
    lab = FakeLab(scripted(lambda version, number: None))

    def attribution(b, lab, say, **kw):
        labs.append(lab)
        return {"culprit": "xla", "text": "the change is in XLA's HLO passes"}

    def flags(b, lab, say, *, deadline, progress):
        labs.append(lab)
        deadlines.append(deadline)
        progress({"kind": "none", "tests": [{"behaviour": "new"}], "text": "under way"})
        time.sleep(flags_seconds)
        return {"kind": "none", "tests": [{"behaviour": "new"}], "text": "no flag"}

    def passes(b, lab, say, *, deadline, progress):
        labs.append(lab)
        deadlines.append(deadline)
        progress({"kind": "none", "tests": [{"behaviour": "much slower"}], "text": "1 of 2"})
        return {"kind": "none", "tests": [{"behaviour": "much slower"}], "text": "no pass"}

    bisection = SimpleNamespace(request=SimpleNamespace(question=SimpleNamespace(case=object())))
    args = argparse.Namespace(explain_budget=budget, jax_repo=None, xla_repo=xla_repo)
    explain(bisection, lab, args, extra, lambda m: None,
            lambda: written.append(copy.deepcopy(extra)), searches=(attribution, flags, passes))
    assert labs and all(seen is lab for seen in labs)  # one lab for every part
    return extra, written, deadlines


def test_the_report_is_rewritten_as_each_part_lands():
    extra, written, deadlines = run(0.0, 600)
    assert len(written) >= 5  # attribution, flags' progress and end, passes' progress and end
    assert "attribution" in written[0] and "explanation" not in written[0]
    assert written[1]["explanation"]["culprit"]["text"] == "under way"
    assert extra["explanation"]["culprit"]["text"] == "no pass"
    assert extra["explanation"]["culprit"]["flags"]["text"] == "no flag"
    assert extra["explanation"]["budget"]["seconds"] == 600
    assert extra["explanation"]["budget"]["exhausted"] is False
    assert len(deadlines) == 2 and deadlines[0] is deadlines[1]  # one budget for both


def test_a_spent_budget_stops_before_the_pass_search_and_says_so():
    extra, _, deadlines = run(0.3, 0.2)
    assert len(deadlines) == 1  # the passes never started
    assert extra["explanation"]["culprit"]["text"] == "no flag"
    assert extra["explanation"]["budget"]["exhausted"] is True


def test_with_an_xla_clone_the_culprit_is_looked_for_once_the_explanation_lands(tmp_path):
    extra, written, _ = run(0.0, 600, xla_repo=tmp_path)
    assert extra["attribution"]["xla_culprit_commits"]["note"] == "no culprit to look for"
    assert written[-1]["attribution"]["xla_culprit_commits"]  # in the report's last writing
    assert "xla_culprit_commits" not in run(0.0, 600)[0]["attribution"]
