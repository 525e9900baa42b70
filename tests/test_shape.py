"""The shape of a metric over a parameter (``--over``): the case constants that declare it,
the generic scale-free classifier against an oracle, and a bisection of recorded harness
documents (the scan case under jax 0.4.20, 0.5.0 and 0.5.1) asserted on its JSON document."""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from fake_lab import FakeLab, MissingRun
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from jaxbisect.errors import UserError
from jaxbisect.lab.machine import parallel_runs
from jaxbisect.lab.runs import question_key
from jaxbisect.report.commands import reproduce_argv
from jaxbisect.report.document import document, write_report
from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.reproduce import standalone_script
from jaxbisect.report.markdown.tables import probe_rows
from jaxbisect.report.markdown.words import SHAPE_LEGEND, shape_words
from jaxbisect.search.question import Run, question_from, with_params
from jaxbisect.stages.releases import MetricRequest, bisect_metric, search_size, smaller_size
from repro.case import CaseError, read_case
from repro.units import MIB
from repro.verdict import RATE_FACTOR, RELATIVE_AT, relative_shape, shapes_alike

REPO = Path(__file__).resolve().parent.parent
SCAN = str(REPO / "repro" / "cases" / "scan_growth.py")
DATA = Path(__file__).parent / "data" / "shape"
MB = MIB  # repro.units: sizes are shown in MiB


def recorded(name: str) -> dict:
    return json.loads((DATA / f"scan_growth-{name}.json").read_text())


def test_the_scan_case_declares_its_shape():
    case = read_case(SCAN)
    assert case.over == ("n_outer", (1, 2, 5, 10, 15))
    assert case.search_params == {"n_res": 32, "n_outer": (2, 5)}
    assert case.runtime_params == {"n_res": 32, "n_outer": (1, 2, 5, 10)}
    assert case.compare == {"v1": {"variant": 1}, "v2": {"variant": 2, "n_outer": (1, 2)}}


@pytest.mark.parametrize("constant, words", [
    ('OVER = {"colour": (1, 2)}', "no parameter 'colour'"),
    ('OVER = {"n": (1, 1)}', "two or more distinct"),
    ('OVER = {"n": (1, 2), "m": (1, 2)}', "one parameter"),
    ('SEARCH_PARAMS = {"n": "big"}', "n is int"),
    ('COMPARE = {"a": {"m": 1}}', "no parameter 'm'"),
])
def test_bad_shape_constants_are_one_line(tmp_path, constant, words):
    path = tmp_path / "mine.py"
    path.write_text(f"{constant}\n\ndef case(n=4):\n    pass\n")
    with pytest.raises(CaseError, match=words):
        read_case(path)


def test_the_question_takes_the_cases_shape_and_refuses_a_value_for_its_parameter():
    q = question_from(None, SCAN, [], ())
    assert q.over == ("n_outer", (1, 2, 5, 10, 15)) and not q.noisy
    argv = q.harness_argv()
    assert argv[argv.index("--over") + 1] == "n_outer=1,2,5,10,15"
    one = question_from(None, SCAN, ["n_outer=3"], (), over="none")
    argv = one.harness_argv()
    assert one.over == () and argv[argv.index("--over") + 1] == "none"
    assert question_key(one) != question_key(q)
    with pytest.raises(UserError, match="measured over n_outer"):
        question_from(None, SCAN, ["n_outer=3"], ())
    with pytest.raises(UserError, match="series of numbers"):
        question_from("output", SCAN, [], ())
    smaller = with_params(q, {"n_res": 32, "n_outer": (1, 2)})
    assert smaller.params == {"n_res": 32} and smaller.over == ("n_outer", (1, 2))


@given(base=st.floats(1e-3, 1e12), rate=st.floats(-0.05, 0.05),
       xs=st.lists(st.integers(0, 50), min_size=2, max_size=6, unique=True),
       scale=st.floats(1e-3, 1e3))
def test_relative_shape_is_the_fitted_change_and_scale_free(base, rate, xs, scale):
    xs = sorted(xs)
    points = [(x, base * (1 + rate * (x - xs[0]))) for x in xs]
    if any(y <= 0 for _, y in points):
        return
    shape = relative_shape("n", points)
    change = rate * (xs[-1] - xs[0])  # the oracle: a straight line relative to its start
    assert shape["change"] == pytest.approx(change, abs=1e-3)
    if abs(change) > RELATIVE_AT + 1e-3:
        assert shape["status"] == ("grows" if change > 0 else "shrinks")
    elif abs(change) < RELATIVE_AT - 1e-3:
        assert shape["status"] == "constant"
    scaled = relative_shape("n", [(x, y * scale) for x, y in points])
    assert scaled["status"] == shape["status"]


def test_a_missing_or_zero_figure_is_no_shape():
    assert relative_shape("n", [(1, 5.0), (2, 0)])["status"] == "unavailable"
    assert relative_shape("n", [(1, 5.0), (2, None)])["status"] == "unavailable"


def fake_measure(release, question, number):
    """The recorded documents of jax 0.5.0 and 0.5.1; the search's n_res 32; the COMPARE
    programs flat at 30.52 MiB."""
    small = question.params.get("n_res") == 32
    doc = copy.deepcopy(recorded(release + ("-n_res32" if small else "")))

    def flat(metric: dict, values) -> dict:
        return {**metric, "points": [{**metric["points"][0], "at": v, "value": 32000000}
                                     for v in values]}

    if question.params.get("variant"):
        doc["metric"] = flat(doc["metric"], question.over[1])
    if question.compare:  # the harness's --compare: each program's metric beside the case's
        doc["compare"] = {label: flat(doc["metric"], with_params(question, params).over[1])
                          for label, params in question.case.compare.items()}
    return Run(release, number, "ok", tuple(doc["metric"]["samples"]), document=doc)


def shape_run(release, status, rate):
    return Run(release, 1, "ok", ([status, rate],))


def test_a_shape_bisection_of_recorded_documents(recorded_catalogue):
    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.5.0", end="0.5.1", backend="cpu", question=q)
    b = bisect_metric(recorded_catalogue, request, FakeLab(fake_measure), lambda m: None)
    doc = document(b, None)
    assert (doc["status"], doc["direction"]) == ("found", "regression")
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.5.0", "0.5.1")
    assert doc["search_size"]["agreed"] and doc["search_size"]["params"] == {"n_res": 32}
    assert doc["search_size"]["over"] == [2, 5]
    old, new = (p["series"] for p in doc["probes"])
    assert old["status"] == "constant" and new["status"] == "grows"
    assert [round(f / MB, 2) for f in new["figures"].values()] == [
        3112.79, 6164.55, 15319.82, 30578.61, 45837.40]  # the full size, not the search's
    assert list(doc["probes"][0]["compare"]["v2"]["figures"]) == ["1", "2"]
    headers, rows = probe_rows(document(b, None))
    assert headers[4] == "n_outer=1 (MiB)" and rows[1][headers.index("shape")] == (
        "grows 3051.76 MiB per n_outer")  # one stacked output: 100 × 200³ float32
    assert rows[0][headers.index("v1 (MiB)")] == "30.52"
    assert "--over" not in reproduce_argv(b)  # the case's own shape: nothing to add
    assert "for value in [1, 2, 5, 10, 15]:" in standalone_script(document(b, None))


def test_a_release_beside_the_search_is_one_process(recorded_catalogue):
    """The full size and the COMPARE programs of a release are one question (the harness's
    --compare), asked at the ends first and found again beside the pair: a release costs
    its search-size run and one full-size run, not one a program."""
    asked = Counter()

    def measure(release, question, number):
        asked[(release, question_key(question))] += 1
        return fake_measure(release, question, number)

    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.5.0", end="0.5.1", backend="cpu", question=q)
    doc = document(bisect_metric(recorded_catalogue, request, FakeLab(measure),
                                 lambda m: None), None)
    assert sorted(release for release, _ in asked) == ["0.5.0", "0.5.0", "0.5.1", "0.5.1"]
    assert set(asked.values()) == {1}  # each made once
    assert [sorted(p["compare"]) for p in doc["probes"]] == [["v1", "v2"], ["v1", "v2"]]


def test_the_report_is_read_from_its_json_document(recorded_catalogue):
    """The markdown is rendered from the document, as a maintainer could from the JSON: the
    document read back gives the same report, and what it says is what the report shows."""
    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.5.0", end="0.5.1", backend="cpu", question=q)
    b = bisect_metric(recorded_catalogue, request, FakeLab(fake_measure), lambda m: None)
    stored = json.loads(json.dumps(document(b, None)))
    assert render(stored) == render(document(b, None))
    new = stored["probes"][1]
    new["series"]["shape"], new["series"]["figures"]["15"] = "grows (+9.99/outer)", 7 * MB
    shown = render(stored)
    # the stored label, in the report's words: its growth where the figures agree with it
    said = shape_words("grows (+9.99/outer)", new["series"]["figures"])
    assert said == "grows by 9.99 stacked outputs per n_outer"
    assert SHAPE_LEGEND in shown  # what "from n_outer 2" and a stacked output are
    row = next(line for line in shown.splitlines() if line.startswith("| 0.5.1"))
    assert said in row and "| 7.00 " in row  # the table's
    assert "+1.00" not in row


def test_the_small_size_is_used_only_where_both_ends_agree():
    q = question_from(None, SCAN, [], ())

    full = [shape_run("0.5.0", "constant", 0.0), shape_run("0.5.1", "grows", 1.0)]
    sized = search_size(q, full, [shape_run("0.5.0", "constant", 0.0),
                                  shape_run("0.5.1", "constant", 0.0)])
    assert not sized.agreed and sized.question == q and "full size" in sized.note
    agreed = search_size(q, full, [shape_run("0.5.0", "constant", 0.0),
                                   shape_run("0.5.1", "grows", 0.98)])
    assert agreed.agreed and agreed.question.params == {"n_res": 32}
    assert agreed.question.over == ("n_outer", (2, 5))


def test_ends_that_disagree_at_the_small_size_send_the_search_to_the_full_size(
        recorded_catalogue):
    """At n_res 32 jax 0.5.3 hides its growth (both ends constant there); at the full size
    the change is 0.5.1 → 0.5.2. A search begun small beside the full-size ends is dropped."""
    def answer(version, question, number):
        small = question.params.get("n_res") == 32
        grows = version in ("0.5.2", "0.5.3") and not (small and version == "0.5.3")
        return Run(version, number, "ok", (["grows", 1.0] if grows else ["constant", 0.0],))

    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.5.0", end="0.5.3", backend="cpu", question=q)
    doc = document(bisect_metric(recorded_catalogue, request, FakeLab(answer), lambda m: None),
                   None)
    assert (doc["status"], doc["last_old"]["jax"], doc["first_new"]["jax"]) == (
        "found", "0.5.1", "0.5.2")
    assert not doc["search_size"]["agreed"] and "full size" in doc["search_size"]["note"]


def test_a_search_that_stops_early_leaves_the_full_size_end_not_yet_begun(recorded_catalogue):
    """The search begun small beside the full size's ends raises (here: a run the lab does
    not hold); the full-size end still queued is not run, the one running finishes."""
    if parallel_runs() < 2:
        pytest.skip("this machine holds one run: no search begins beside the ends")

    full_size = []

    def answer(version, question, number):
        if question.params.get("n_res") != 32:
            full_size.append(version)
            time.sleep(2.0)  # long beside the search: it stops before this end is over
        elif version not in ("0.5.0", "0.5.3"):
            return None
        return Run(version, number, "ok", (["constant", 0.0],) if version == "0.5.0"
                   else (["grows", 1.0],))

    lab = FakeLab(answer)
    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.5.0", end="0.5.3", backend="cpu", question=q)
    with pytest.raises(MissingRun):
        bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    assert full_size == ["0.5.0"]


@pytest.mark.parametrize(("asked", "searched"), [
    ("1,2,5,10,15", (2, 5)),   # the case's default: its growth is a slope, two values fit it
    ("1,2,3,5", (2, 5)),
    ("1,2", None),             # one of SEARCH_PARAMS' values asked: no shape from it
    ("2,5", None),             # every value asked is already the search's
    ("2,3,4", None),
])
def test_the_search_measures_fewer_of_the_over_values_asked(asked, searched):
    q = question_from(None, SCAN, [], (), over=f"n_outer={asked}")
    smaller = smaller_size(q)
    assert smaller.get("n_outer") == searched and smaller["n_res"] == 32
    over = with_params(q, smaller).over
    assert over == ("n_outer", searched or q.over[1])


@pytest.mark.parametrize(("over", "searched"), [
    ("n_res=16,32,64", {}),            # a number in SEARCH_PARAMS for the over parameter: none
    ("n_inner=50,100,200", {"n_res": 32}),  # n_outer's tuple is for a shape over n_outer only
])
def test_search_params_for_another_over_parameter(over, searched):
    q = question_from(None, SCAN, [], (), over=over)
    assert smaller_size(q) == searched


def test_the_runtime_fallback_is_in_the_document():
    doc = recorded("0.4.20")["metric"]
    assert doc["fallback"]["metric"] == "peak_memory" and "0 bytes" in doc["fallback"]["reason"]
    assert doc["fallback"]["params"] == {"n_res": 32} and doc["over"]["values"] == [1, 2, 5, 10]
    assert doc["samples"] == [["constant", doc["shape"]["rate"]]]


@given(status=st.sampled_from(["grows", "shrinks"]), rate=st.floats(1e-3, 1e3),
       factor=st.floats(1.0, 10.0))
def test_shapes_alike_is_the_same_status_and_a_rate_within_the_factor(status, rate, factor):
    alike = shapes_alike([status, rate], [status, rate * factor])
    if factor < RATE_FACTOR * 0.999:
        assert alike
    elif factor > RATE_FACTOR * 1.001:
        assert not alike
    assert shapes_alike([status, rate], [status, rate * factor]) == \
        shapes_alike([status, rate * factor], [status, rate])  # symmetric
    assert not shapes_alike(["constant", 0.0], [status, rate])
    assert shapes_alike(["constant", 0.001], ["constant", -0.004])


def test_two_growths_far_apart_are_a_change_found_faster_is_a_regression(recorded_catalogue):
    """A generic case's relative shape: +9 % and +594 % over the same values (remat_scan_memory
    over num_blocks 2 … 20, jax 0.5.0 and 0.5.2 measured here) are two behaviours."""
    case = REPO / "repro" / "cases" / "remat_scan_memory.py"
    q = question_from(None, str(case), [], (), over="num_blocks=2,5,10,20")
    rates = {"0.5.0": 0.092, "0.5.1": 5.941}
    request = MetricRequest(start="0.5.0", end="0.5.1", backend="cpu", question=q)
    lab = FakeLab(lambda version, question, n: shape_run(version, "grows", rates[version]))
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    doc = document(b, None)
    assert (doc["status"], doc["direction"]) == ("found", "regression")
    assert doc["search_size"] is None and doc["over"]["name"] == "num_blocks"


def test_a_shape_report_draws_its_series(recorded_catalogue, tmp_path):
    """The ends' series as lines: mermaid always, the PNG beside it (matplotlib is a default
    dependency); the JSON names the picture."""
    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.5.0", end="0.5.1", backend="cpu", question=q)
    b = bisect_metric(recorded_catalogue, request, FakeLab(fake_measure), lambda m: None)
    path, doc = write_report(b, tmp_path)
    assert (tmp_path / doc["chart"]).is_file() and doc["chart"].endswith(".png")
    assert json.loads(path.with_suffix(".json").read_text())["chart"] == doc["chart"]
    assert '    line "jax 0.5.1" [3112.79, 6164.55, 15319.82, 30578.61, 45837.4]' in \
        path.read_text()


def test_the_answers_full_size_runs_begin_during_the_search_and_are_made_once(
        recorded_catalogue):
    """Over eleven releases: the last round's release (in the pair whatever it answers) and,
    once the search ends, the pair's other one are measured at the full size beside the
    search; the tables find them made. Every question is asked of a release once, the full
    size at the ends and the pair only."""
    change = "0.4.36"
    asked = Counter()
    order: list[tuple[str, bool]] = []
    made_by: dict[tuple[str, bool], str] = {}

    def measure(release, question, number):
        asked[(release, question_key(question))] += 1
        full = question.params.get("n_res") != 32
        order.append((release, full))
        made_by[(release, full)] = threading.current_thread().name
        grows = Version(release) >= Version(change)
        return shape_run(release, "grows" if grows else "constant", 1.0 if grows else 0.0)

    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.4.30", end="0.5.1", backend="cpu", question=q)
    b = bisect_metric(recorded_catalogue, request, FakeLab(measure), lambda m: None)
    doc = document(b, None)
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.4.35", change)
    assert set(asked.values()) == {1}
    full = [release for release, is_full in order if is_full]
    assert sorted(full) == sorted({"0.4.30", "0.5.1", "0.4.35", change})
    assert set(doc["search"]["rounds"][-1]) < {"0.4.35", change}  # the certain one
    # The ends' full size beside the search, by its own thread. The pair's is begun ahead by
    # the answer's thread and asked again by the tables: which of the two makes it is a race
    # (under load the tables can come first), and either way it is made once (above).
    assert {made_by[(r, True)].split("_")[0] for r in ("0.4.30", "0.5.1")} == {"end"}
    assert {made_by[(r, True)].split("_")[0] for r in ("0.4.35", change)} <= {"answer",
                                                                             "beside"}


def test_an_end_without_compiled_statistics_sends_every_release_to_a_runs_peak(
        recorded_catalogue):
    """jaxlib < 0.4.29 on the CPU plans 0 bytes, and the harness measures a run's peak there
    instead: the search compares that one quantity at every release, never one release's plan
    with another's run (the old end's plan is empty; its run's peak is constant, the new
    end's run's peak grows)."""
    asked = []
    fallback = {"metric": "peak_memory", "reason": "memory_analysis() reports 0 bytes",
                "params": {"n_res": 32}, "values": [2, 5]}

    def answer(version, question, number):
        asked.append((version, question.metric))
        grows = version != "0.5.0"
        series = {"name": question.metric, "over": {"name": "n_outer", "values": [2, 5]},
                  "points": [{"at": v, "status": "ok", "value": v * MB if grows else MB,
                              "error": None} for v in (2, 5)],
                  "shape": {"status": "grows" if grows else "constant"},
                  "value": "grows" if grows else "constant"}
        if question.metric == "memory" and version == "0.5.0":
            series["fallback"] = fallback
        return Run(version, number, "ok", (["grows", 1.0] if grows else ["constant", 0.0],),
                   document={"metric": series})

    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.5.0", end="0.5.3", backend="cpu", question=q)
    doc = document(bisect_metric(recorded_catalogue, request, FakeLab(answer), lambda m: None),
                   None)
    assert doc["search_size"]["metric"] == "peak_memory"
    assert doc["search_size"]["params"] == {"n_res": 32} and doc["search_size"]["over"] == [2, 5]
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.5.0", "0.5.1")
    probed = {v for v, metric in asked if metric == "peak_memory"}
    assert {"0.5.0", "0.5.1"} <= probed
    # Inside the range the search asks the run's peak only; the pair's plan at the full size
    # is its table row, asked after the search.
    first_asked = {v: m for v, m in reversed(asked)}
    assert first_asked["0.5.1"] == first_asked["0.5.2"] == "peak_memory"
    assert [m for v, m in asked if v == "0.5.2"] == ["peak_memory"]


def test_ends_with_their_plans_are_searched_by_the_plan(recorded_catalogue):
    """The oracle's other side: no fallback at either end, the search stays on memory."""
    q = question_from(None, SCAN, [], ())
    request = MetricRequest(start="0.5.0", end="0.5.1", backend="cpu", question=q)
    doc = document(bisect_metric(recorded_catalogue, request, FakeLab(fake_measure),
                                 lambda m: None), None)
    assert doc["search_size"]["metric"] == "memory"
