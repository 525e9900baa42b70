"""Yanked releases inside a range: named with PyPI's reason in every report's JSON, and
measured as candidates with --include-yanked, on the recorded PyPI catalogue (jax 0.4.32 is
yanked there, as on PyPI, with no reason given; 0.4.15 with one)."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace

from conftest import recorded_pypi
from fake_lab import FakeLab, scripted

from jaxbisect import cli
from jaxbisect.lab import backends
from jaxbisect.lab.catalogue import CACHE_FORMAT, load_catalogue
from jaxbisect.report.commands import sweep_argv
from jaxbisect.report.document import document as metric_document
from jaxbisect.search.question import Question
from jaxbisect.stages.releases import MetricRequest, bisect_metric

CPU = backends.get("cpu")


def versions(releases) -> list[str]:
    return [str(r.version) for r in releases]


def test_the_catalogue_keeps_pypi_s_yank_reason(recorded_catalogue):
    assert recorded_catalogue.get("0.4.15").yanked_reason == "accidentally required JAX_RELEASE=1"
    yanked = recorded_catalogue.get("0.4.32")
    assert yanked.yanked and yanked.yanked_reason is None and str(yanked.jaxlib) == "0.4.32"
    assert recorded_catalogue.get("0.4.31").yanked_reason is None
    assert versions(recorded_catalogue.yanked_between("0.4.20", "0.10.2")) == ["0.4.32"]
    assert versions(recorded_catalogue.yanked_between("0.4.32", "0.4.33")) == []  # an end


def test_include_yanked_makes_them_candidates(recorded_catalogue):
    left_out, _ = recorded_catalogue.between("0.4.31", "0.4.33", CPU)
    assert versions(left_out) == ["0.4.31", "0.4.33"]
    included, unusable = recorded_catalogue.between("0.4.31", "0.4.33", CPU,
                                                    include_yanked=True)
    assert versions(included) == ["0.4.31", "0.4.32", "0.4.33"] and not unusable


def test_a_cache_of_the_old_format_is_read_offline_and_refreshed_online(tmp_path,
                                                                       monkeypatch):
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    load_catalogue(fetch=recorded_pypi)
    folder = tmp_path / "cache" / "catalogue"
    for path in folder.iterdir():  # as the previous format wrote it: no format, no reasons
        entry = json.loads(path.read_text())
        del entry["format"]
        path.write_text(json.dumps(entry))

    def offline(url: str) -> bytes:
        raise OSError("no network")

    old = load_catalogue(fetch=offline)
    assert old.stale and old.get("0.4.32").yanked
    calls = []

    def online(url: str) -> bytes:
        calls.append(url)
        return recorded_pypi(url)

    fresh = load_catalogue(fetch=online)
    assert len(calls) == 3 and not fresh.from_cache
    assert all(json.loads(p.read_text())["format"] == CACHE_FORMAT for p in folder.iterdir())
    assert fresh.get("0.4.15").yanked_reason == "accidentally required JAX_RELEASE=1"


def metric_bisection(catalogue, include_yanked: bool, figures: dict[str, float]):
    question = Question(metric="bytes", command=("python", "measure.py"), kind="deterministic")
    request = MetricRequest(start="0.4.31", end="0.4.33", backend="cpu", question=question,
                            include_yanked=include_yanked)
    lab = FakeLab(scripted(lambda version, number: figures[version]))
    b = bisect_metric(catalogue, request, lab, lambda m: None)
    return b, [version for version, _, _ in lab.asked]


def test_a_metric_bisection_names_the_yanked_release_it_left_out(recorded_catalogue):
    # A wrong answer only in the yanked release: its neighbours agree.
    figures = {"0.4.31": 1.0, "0.4.32": 50.0, "0.4.33": 1.0}
    b, measured = metric_bisection(recorded_catalogue, False, figures)
    doc = metric_document(b, None)
    assert doc["status"] == "alike" and "0.4.32" not in measured
    assert doc["yanked"] == [{"jax": "0.4.32", "jaxlib": "0.4.32", "reason": None,
                              "candidate": False, "probed": False}]
    from jaxbisect.report.markdown.answer import yanked_line

    command = shlex.split(yanked_line(metric_document(b, None)).rsplit("`", 2)[-2])
    assert "--include-yanked" in command and command[command.index("--from") + 1] == "0.4.31"


def test_include_yanked_measures_it_as_a_candidate(recorded_catalogue):
    figures = {"0.4.31": 1.0, "0.4.32": 50.0, "0.4.33": 50.0}
    b, measured = metric_bisection(recorded_catalogue, True, figures)
    doc = metric_document(b, None)
    assert doc["status"] == "found" and "0.4.32" in measured
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.4.31", "0.4.32")
    assert doc["yanked"] == [{"jax": "0.4.32", "jaxlib": "0.4.32", "reason": None,
                              "candidate": True, "probed": True}]
    assert "--include-yanked" in shlex.split(doc["reproduce"])


def test_the_scan_report_names_the_yanked_release_and_its_hint_reruns_with_it(
        recorded_catalogue):
    """No --case: the scan case, whose yanked line's command parses back into a request that
    measures the yanked release too; its report has another name."""
    from jaxbisect.pipeline import question_of, request_from
    from jaxbisect.report.document import report_stem
    from jaxbisect.report.markdown.answer import yanked_line

    args, command = cli.parse(["--from", "0.4.31", "--to", "0.4.33", "--backend", "cpu"])
    request = request_from(args, question_of(args, command), recorded_catalogue)
    shape = lambda version, number: ["constant", 0.0]  # noqa: E731
    b = bisect_metric(recorded_catalogue, request, FakeLab(scripted(shape)), lambda m: None)
    doc = metric_document(b, None)
    assert doc["status"] == "alike" and doc["case"]["name"] == "scan_growth"
    assert doc["yanked"] == [{"jax": "0.4.32", "jaxlib": "0.4.32", "reason": None,
                              "candidate": False, "probed": False}]
    hint = shlex.split(yanked_line(metric_document(b, None)).rsplit("`", 2)[-2])
    again, parsed = cli.parse(hint[3:])
    included = request_from(again, question_of(again, parsed), recorded_catalogue)
    assert included.include_yanked and included.question == request.question
    assert "--include-yanked" not in shlex.split(doc["reproduce"])
    assert report_stem(b) != report_stem(replace(b, request=included))


def test_where_the_ends_agree_include_yanked_still_measures_the_yanked_release(
        recorded_catalogue):
    """The wrong-results report that lived only in a yanked release: its neighbours agree,
    so the search probes nothing; --include-yanked measures it anyway, a third behaviour."""
    figures = {"0.4.31": 1.0, "0.4.32": 50.0, "0.4.33": 1.0}
    b, measured = metric_bisection(recorded_catalogue, True, figures)
    doc = metric_document(b, None)
    assert doc["status"] == "alike" and measured.count("0.4.32") == 1
    assert doc["third_behaviour"] == ["0.4.32"]
    assert "--include-yanked" not in sweep_argv(b)  # the sweep takes no such option
    # The interior check reads the yanked release's placement: it is not measured again.
    assert [r["label"] for r in doc["interior"]] == ["differs"] and "sweep" not in doc
    assert doc["interior_check"]["changes"] == [{"came": ["0.4.31", "0.4.32"],
                                                 "went": ["0.4.32", "0.4.33"],
                                                 "releases": ["0.4.32"], "exact": True}]
    assert doc["yanked"] == [{"jax": "0.4.32", "jaxlib": "0.4.32", "reason": None,
                              "candidate": True, "probed": True}]
    probe = next(p for p in doc["probes"] if p["jax"] == "0.4.32")
    assert probe["third"] and probe["classified"] == [50.0]
    same = metric_document(metric_bisection(recorded_catalogue, True,
                                            {**figures, "0.4.32": 1.0})[0], None)
    assert [p["label"] for p in same["probes"] if p["jax"] == "0.4.32"] == ["old"]
    assert same["third_behaviour"] == []
