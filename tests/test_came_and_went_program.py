"""A change that came and went inside alike ends gets the standalone program where it came and
where it went (jaxbisect/stages/program_runs.py, issue 49), on the fake lab's recorded
jit_kwarg_named_f runs (jax#25329: raises under jax 0.4.36 only). The fake lab installs nothing,
so each end's program run says so and shows_change is null: what is checked is which releases it
is run at."""

from __future__ import annotations

from conftest import REPO
from fake_lab import FakeLab, recorded, recorded_documents

from jaxbisect.search.question import question_from
from jaxbisect.stages.program_runs import LIKE, UNLIKE, reproducer_of
from jaxbisect.stages.releases import MetricRequest, bisect_metric

CASE = REPO / "repro" / "cases" / "jit_kwarg_named_f.py"


def test_the_program_runs_where_it_came_and_where_it_went(recorded_catalogue):
    held = recorded(recorded_documents("jit_kwarg_named_f-jax-*.json"))
    lab = FakeLab(lambda version, question, number: held(version, question, 1))
    question = question_from(None, str(CASE), [], ())
    request = MetricRequest(start="0.4.35", end="0.4.38", backend="cpu", question=question)
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    assert b.search.status == "alike" and b.came_and_went
    part = reproducer_of(b, lab, lambda m: None)
    assert [(e["jax"], e["role"]) for e in part["ends"]] == [("0.4.35", LIKE),
                                                            ("0.4.36", UNLIKE)]
    assert [(e["jax"], e["role"]) for e in part["went"]["ends"]] == [("0.4.36", UNLIKE),
                                                                    ("0.4.37", LIKE)]
    assert part["lines"] <= 40 and "jaxbisect" not in part["program"]
    assert part["shows_change"] is None  # nothing ran: never a claim it shows the change
    assert all(e["output"].startswith("not installed") for e in part["ends"])
