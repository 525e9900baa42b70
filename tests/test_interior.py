"""Ends alike, the interior checked (jaxbisect/search/interior.py): the releases inside a range
whose ends agree, measured where cheap and placed as the search places a probe, on the fake lab.

The recorded case is jax#25329 (repro/cases/jit_kwarg_named_f.py): a jit called with a
keyword argument named ``f`` raises under jax 0.4.36 only, so 0.4.35 and 0.4.38 agree; the
harness documents of tests/data/lab/ are what each release's real run printed.
"""

from __future__ import annotations

import math
import random
import shlex

from conftest import REPO
from fake_lab import FakeLab, recorded, recorded_documents, scripted
from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.cli import METRIC_EXIT, parse
from jaxbisect.report.document import document, report_stem
from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.answer import answer_line
from jaxbisect.search.interior import changes_of
from jaxbisect.search.placing import AgainstEnds
from jaxbisect.search.question import Question, question_from
from jaxbisect.stages.releases import MetricRequest, bisect_metric

CASE = REPO / "repro" / "cases" / "jit_kwarg_named_f.py"


def recorded_once():
    """The recorded harness documents, each release's one document for every run of it (an
    error message is deterministic: the error metric measures an end three times)."""
    held = recorded(recorded_documents("jit_kwarg_named_f-jax-*.json"))
    return lambda version, question, number: held(version, question, 1)


def test_a_change_that_came_and_went_is_answered_with_both_pairs(recorded_catalogue):
    question = question_from(None, str(CASE), [], ())
    request = MetricRequest(start="0.4.35", end="0.4.38", backend="cpu", question=question)
    lab = FakeLab(recorded_once())
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    doc = document(b, None)
    # The exit status stays the ends' own: alike.
    assert doc["status"] == "alike" and METRIC_EXIT[doc["status"]] == 1
    assert [(r["jax"], r["label"]) for r in doc["interior"]] == [("0.4.36", AgainstEnds.DIFFERS),
                                                                ("0.4.37", AgainstEnds.OLD)]
    assert doc["interior"][0]["figure"]["value"].startswith("TypeError: result_paths()")
    assert doc["interior"][1]["figure"]["value"] == "no error"
    check = doc["interior_check"]
    assert check["measured"] and check["releases"] == ["0.4.36", "0.4.37"]
    assert check["changes"] == [{"came": ["0.4.35", "0.4.36"], "went": ["0.4.36", "0.4.37"],
                                 "releases": ["0.4.36"], "exact": True}]
    assert "sweep" not in doc  # what the sweep would answer is answered
    line = answer_line(doc)
    assert line.startswith("**Came and went")
    assert "came at jax 0.4.35 → 0.4.36, went at jax 0.4.36 → 0.4.37" in line
    assert "<summary>The releases inside</summary>" in render(doc)
    # Each release inside was run once (the error metric's ends three times each).
    assert sorted(v for v, _, _ in lab.asked if v in ("0.4.36", "0.4.37")) == ["0.4.36",
                                                                               "0.4.37"]


def deterministic_bisection(catalogue, figures, *, seconds: float, budget: float | None = None,
                            start: str = "0.4.20", end: str = "0.4.30"):
    question = Question(metric="bytes", command=("python", "measure.py"), kind="deterministic")
    more = {} if budget is None else {"interior_budget": budget}
    request = MetricRequest(start=start, end=end, backend="cpu", question=question, **more)
    lab = FakeLab(scripted(lambda version, number: figures(version), seconds=seconds))
    return bisect_metric(catalogue, request, lab, lambda m: None), lab


def test_over_the_budget_nothing_inside_is_measured_and_the_sweep_is_given(
        recorded_catalogue):
    """Ten-second runs, ten releases inside: about 100 s, over a 60 s budget."""
    b, lab = deterministic_bisection(recorded_catalogue, lambda v: 5.0, seconds=10.0,
                                     budget=60.0)
    doc = document(b, None)
    assert doc["status"] == "alike" and METRIC_EXIT[doc["status"]] == 1
    assert lab.versions_asked == ["0.4.20", "0.4.30"]  # the ends only
    check = doc["interior_check"]
    inside = len(b.candidates) - 2
    assert not check["measured"] and doc["interior"] == [] and check["changes"] == []
    assert check["budget"] == 60.0 and check["per_release"] == 10.0
    assert check["estimate"] == 10.0 * inside > 60.0 and len(check["releases"]) == inside
    assert "--interior-budget" in answer_line(doc) and "not measured" in answer_line(doc)
    # The sweep's command runs as nox's (no --interior-budget there); the Reproduce line
    # keeps the budget that shaped this answer, and so does the report's name.
    assert doc["sweep"].startswith("nox -s repro_range -- --from 0.4.20 --to 0.4.30")
    assert "--interior-budget" not in doc["sweep"]
    reproduce = shlex.split(doc["reproduce"])
    assert reproduce[reproduce.index("--interior-budget") + 1] == "60.0"
    again, _ = parse(reproduce[3:])
    assert again.interior_budget == 60.0
    default, _ = deterministic_bisection(recorded_catalogue, lambda v: 5.0, seconds=10.0)
    assert "--interior-budget" not in document(default, None)["reproduce"]
    assert report_stem(b) != report_stem(default)


def test_within_the_budget_every_release_inside_is_measured_once(recorded_catalogue):
    wrong = {"0.4.23", "0.4.24", "0.4.28"}  # two changes: one of two releases, one of one
    b, lab = deterministic_bisection(recorded_catalogue,
                                     lambda v: 9.0 if v in wrong else 5.0, seconds=10.0)
    doc = document(b, None)
    names = [str(c.version) for c in b.candidates]
    assert doc["status"] == "alike" and doc["interior_check"]["measured"]
    assert lab.versions_asked == [names[0], names[-1], *names[1:-1]]
    assert all(count == 1 for count in (lab.versions_asked.count(v) for v in names))
    labels = {r["jax"]: r["label"] for r in doc["interior"]}
    assert {v for v, label in labels.items() if label == AgainstEnds.DIFFERS} == wrong
    changes = doc["interior_check"]["changes"]
    assert [(c["came"], c["went"]) for c in changes] == [
        (["0.4.22", "0.4.23"], ["0.4.24", "0.4.25"]), (["0.4.27", "0.4.28"], ["0.4.28",
                                                                              "0.4.29"])]
    assert all(c["exact"] for c in changes)


def test_a_release_inside_without_a_figure_is_cannot_tell_never_old(recorded_catalogue):
    """0.4.25 raises (no bytes to compare): it cannot be told, and the change beside it
    spans it, inexact."""
    def figure(version):
        return {"0.4.24": 9.0, "0.4.25": "ValueError: boom"}.get(version, 5.0)

    b, _ = deterministic_bisection(recorded_catalogue, figure, seconds=1.0)
    doc = document(b, None)
    labels = {r["jax"]: r["label"] for r in doc["interior"]}
    assert labels["0.4.25"] == AgainstEnds.CANNOT_TELL and labels["0.4.24"] == AgainstEnds.DIFFERS
    assert doc["interior_check"]["changes"] == [{"came": ["0.4.23", "0.4.24"],
                                                 "went": ["0.4.24", "0.4.26"],
                                                 "releases": ["0.4.24"], "exact": False}]


def test_a_release_whose_own_runs_disagree_is_cannot_tell(recorded_catalogue):
    """Two runs a release (--runs 2): 0.4.25 gives 5.0 then 9.0, no one figure of its own."""
    question = Question(metric="bytes", command=("python", "measure.py"), kind="deterministic")
    request = MetricRequest(start="0.4.20", end="0.4.30", backend="cpu", question=question,
                            runs=2)
    lab = FakeLab(scripted(lambda version, number: 9.0 if (version, number) == ("0.4.25", 2)
                           else 5.0))
    doc = document(bisect_metric(recorded_catalogue, request, lab, lambda m: None), None)
    labels = {r["jax"]: r["label"] for r in doc["interior"]}
    assert labels["0.4.25"] == AgainstEnds.CANNOT_TELL
    assert "disagree" in doc["interior"][4]["reason"]
    assert {label for v, label in labels.items() if v != "0.4.25"} == {AgainstEnds.OLD}
    assert doc["interior_check"]["changes"] == []


def noisy_bisection(catalogue, level, include_yanked: bool = False):
    """A noisy metric (seconds of a command) on simulated load: each run × exp(N(0, 2 %)).
    Every run of a release is a fresh one: no (release, run number) is asked twice, the yanked
    release asked for and the releases inside included (their rounds share the ends)."""
    rng = random.Random(11)
    question = Question(metric="seconds", command=("python", "time.py"), kind="noisy")
    request = MetricRequest(start="0.4.30", end="0.4.35", backend="cpu", question=question,
                            include_yanked=include_yanked)
    lab = FakeLab(scripted(lambda version, number: level(version) * 0.02
                           * math.exp(rng.gauss(0, 0.02)), seconds=0.05))
    b = bisect_metric(catalogue, request, lab, lambda m: None)
    asked = [(version, number) for version, number, _ in lab.asked]
    assert len(asked) == len(set(asked))
    return b


def test_a_noisy_metric_places_the_releases_inside_by_the_paired_test(recorded_catalogue):
    b = noisy_bisection(recorded_catalogue, lambda v: 2.0 if v == "0.4.33" else 1.0)
    doc = document(b, None)
    assert doc["status"] == "alike" and "equivalence" in doc["ends"]["reason"]
    labels = {r["jax"]: r["label"] for r in doc["interior"]}
    assert labels == {"0.4.31": AgainstEnds.OLD, "0.4.33": AgainstEnds.DIFFERS,
                      "0.4.34": AgainstEnds.OLD}  # (0.4.32: yanked)
    rounds = {r["jax"]: r["rounds"] for r in doc["interior"]}
    assert all(len(r) >= 4 and all(len(one) == 3 for one in r) for r in rounds.values())
    assert doc["interior_check"]["changes"] == [{"came": ["0.4.31", "0.4.33"],
                                                 "went": ["0.4.33", "0.4.34"],
                                                 "releases": ["0.4.33"], "exact": True}]


def test_a_yanked_release_asked_for_and_the_look_inside_share_fresh_end_runs(
        recorded_catalogue):
    b = noisy_bisection(recorded_catalogue, lambda v: 2.0 if v == "0.4.33" else 1.0,
                        include_yanked=True)
    doc = document(b, None)
    labels = {r["jax"]: r["label"] for r in doc["interior"]}
    assert labels == {"0.4.31": AgainstEnds.OLD, "0.4.32": AgainstEnds.OLD,
                      "0.4.33": AgainstEnds.DIFFERS, "0.4.34": AgainstEnds.OLD}


def test_a_noisy_release_the_test_cannot_decide_is_cannot_tell(recorded_catalogue):
    """1.09x the ends: neither a 10 % change nor within it at 2 % noise in 10 rounds (the
    cap): not "old", not "differs"."""
    b = noisy_bisection(recorded_catalogue, lambda v: 1.09 if v == "0.4.33" else 1.0)
    labels = {r["jax"]: r["label"] for r in document(b, None)["interior"]}
    assert labels["0.4.33"] == AgainstEnds.CANNOT_TELL
    assert labels["0.4.31"] == labels["0.4.34"] == AgainstEnds.OLD


def changes_oracle(row: list[str]) -> list[tuple]:
    """Each maximal run of releases not ``old`` that holds a ``differs``: it came after the
    release before the run, went before the one after it; exact where the run is all
    ``differs``."""
    out, k = [], 0
    while k < len(row):
        if row[k] == AgainstEnds.OLD:
            k += 1
            continue
        j = k
        while j < len(row) and row[j] != AgainstEnds.OLD:
            j += 1
        block = range(k, j)
        unlike = [m for m in block if row[m] == AgainstEnds.DIFFERS]
        if unlike:
            out.append(((k - 1, unlike[0]), (unlike[-1], j), tuple(unlike),
                        all(row[m] == AgainstEnds.DIFFERS for m in block)))
        k = j
    return out


@given(st.lists(st.sampled_from(list(AgainstEnds)), min_size=1, max_size=12))
def test_the_changes_are_read_off_in_release_order(inside):
    row = [AgainstEnds.OLD, *inside, AgainstEnds.OLD]
    labels = {i: row[i] for i in range(1, len(row) - 1)}
    got = [(c.came, c.went, c.releases, c.exact) for c in changes_of(labels, len(row))]
    assert got == changes_oracle(row)
