"""The lab seam (jaxbisect/lab.py): a bisection run in a fake lab of documents recorded from
real runs finds the recorded pair and asks only for what it holds; a run it does not hold is an
error naming the run; what is cheap orders the probes; the real lab's cheapness is the store's
and the environments' own."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_lab import FakeLab, MissingRun, recorded, recorded_documents

from jaxbisect.cases import question_from
from jaxbisect.lab import RealLab
from jaxbisect.metric_bisect import MetricRequest, bisect_metric
from jaxbisect.metric_report import document
from jaxbisect.store import Store

CASE = str(Path(__file__).resolve().parents[1] / "repro" / "cases" / "remat_scan_memory.py")


def remat_lab(tmp_path, **kw) -> FakeLab:
    return FakeLab(recorded(recorded_documents("remat_scan_memory-jax-*.json")),
                   Store(tmp_path / "store"), **kw)


def bisected(catalogue, lab, start="0.4.35", end="0.5.1"):
    question = question_from("memory", CASE, [], ())
    request = MetricRequest(start=start, end=end, backend="cpu", question=question)
    return bisect_metric(catalogue, request, lab, lambda m: None)


def test_a_bisection_over_recorded_documents_finds_the_recorded_pair(recorded_catalogue,
                                                                     tmp_path):
    lab = remat_lab(tmp_path)
    doc = document(bisected(recorded_catalogue, lab), None)
    assert doc["status"] == "found" and doc["direction"] == "regression"
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.5.0", "0.5.1")
    figures = {p["jax"]: p["runs"][0]["samples"] for p in doc["probes"]}
    assert figures["0.5.0"] == [84802880] and figures["0.5.1"] == [441208256]
    assert set(lab.versions_asked) == set(figures)  # every run asked for is in the report
    assert all(number == 1 for _, number, _ in lab.asked)  # a deterministic metric: one run


def test_a_run_the_lab_does_not_hold_is_an_error_naming_it(recorded_catalogue, tmp_path):
    with pytest.raises(MissingRun, match=r"no run 1 of memory of remat_scan_memory at "
                                         r"\{'rows': 1000.*under jax 0\.5\.2$"):
        bisected(recorded_catalogue, remat_lab(tmp_path), end="0.5.2")


def test_what_is_cheap_is_probed_first_at_no_extra_worst_case(recorded_catalogue, tmp_path):
    plain = remat_lab(tmp_path)
    bisected(recorded_catalogue, plain)
    assert plain.versions_asked == ["0.4.35", "0.5.1", "0.5.0"]
    # 0.4.37 "installed": within the window's cheapest-worst-case choices, it goes first
    cheap = remat_lab(tmp_path, installed=frozenset({"0.4.37"}))
    b = bisected(recorded_catalogue, cheap)
    doc = document(b, None)
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.5.0", "0.5.1")
    assert cheap.versions_asked == ["0.4.35", "0.5.1", "0.4.37", "0.5.0"]
    assert len(cheap.versions_asked) <= b.limit[0]


def test_the_real_lab_is_cheap_where_a_run_is_stored_and_never_under_remeasure(
        recorded_catalogue, tmp_path):
    question = question_from("memory", CASE, [], ())
    release = recorded_catalogue.get("0.5.0")
    store = Store(tmp_path / "store")
    lab = RealLab(lambda m: None, store=store)
    assert not lab.cheap(release, "cpu", question)  # no environment in this cache, no run
    store.put(question.store_key(release, "cpu", "metric", run=1), {"stored": True})
    assert lab.cheap(release, "cpu", question)
    assert not RealLab(lambda m: None, remeasure=True, store=store).cheap(release, "cpu",
                                                                          question)
    other = question_from("memory", CASE, ["rows=10"], ())  # another question: not stored
    assert not lab.cheap(release, "cpu", other)
