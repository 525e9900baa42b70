"""The bench's logic on recorded documents: what a step's row says and how the targets are
checked (running it is `nox -s bench`, minutes: not a test's)."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from jaxbisect.tools import bench

REPO = Path(__file__).resolve().parent.parent
RECORDED = REPO / "reports" / "bisect-0.5.0-0.10.2-cpu-scan_growth-memory.json"


def recorded() -> dict:
    return json.loads(RECORDED.read_text(encoding="utf-8"))


def test_a_bisection_step_says_its_search_and_answer():
    note = bench.step_note(bench.STORED, recorded())
    assert note.startswith("a rerun, every result stored; 6 releases measured in 6 rounds "
                           "(limit 7 in 7, --jobs 1)")
    stored = sum(p["cached"] for p in recorded()["probes"])
    assert f"{stored} of 6 from stored results" in note
    assert "searched at n_res 32, n_outer 2,5" in note
    assert note.endswith("answer 0.5.0 → 0.5.1")
    assert bench.step_note(bench.COLD, {"harness": 12.34}).endswith(
        "its releases' `python -m repro` runs 12.3 s in all")
    steps = {"setup": {"began": 0.0, "seconds": 0.1}, "releases": {"began": 0.1, "seconds": 17.2},
             "tables": {"began": 17.3, "seconds": 4.0}}
    timed = bench.step_note(bench.TYPED_COLD, {**recorded(), "timings": {"steps": steps}})
    assert timed.endswith("the search 17.2 s; the steps after it, some side by side: tables 4.0 s")
    # a rerun whose steps after the search each took under 0.05 s names none, and no colon
    quick = {**steps, "tables": {"began": 17.3, "seconds": 0.01}}
    assert bench.step_note(bench.STORED, {**recorded(), "timings": {"steps": quick}}).endswith(
        "the search 17.2 s")


def test_the_bisect_targets_follow_the_figures():
    doc, unit = recorded(), 10.0
    fast = {"cold": (30.0, doc), "warm": (20.0, doc), "stored": (0.5, doc), "jobs 2": (15.0, doc)}
    met = [c.met for c in bench.bisect_checks(fast, unit, argparse.Namespace())]
    assert met[:3] == [True, True, True]
    slow = {**fast, "cold": (41.0, doc), "stored": (1.1, doc)}
    assert [c.met for c in bench.bisect_checks(slow, unit, argparse.Namespace())][:2] == \
        [False, False]
    timed = {**doc, "timings": {"steps": {"releases": {"began": 0.1, "seconds": 17.2}}}}
    typed = {"cold": (24.0, timed), "stored": (0.4, timed)}
    checks = bench.long_checks(typed, unit, argparse.Namespace())
    assert [c.met for c in checks] == [True, True]
    assert "the search 1.72 (17.2 s), the evidence after it 0.68" in checks[0].figure
    assert [c.met for c in bench.long_checks({"cold": (26.0, timed), "stored": (0.6, timed)},
                                             unit, argparse.Namespace())] == [False, False]
    wrong = {**doc, "first_new": {**doc["first_new"], "jax": "0.5.2"}}
    assert [c.met for c in bench.long_checks({"cold": (20.0, wrong), "stored": (0.4, wrong)},
                                             unit, argparse.Namespace())][0] is False


def test_the_repro_targets_use_the_harness_share():
    timed = {"cold": (80.0, {}), "warm": (2.0, {}), "remeasured": (60.0, {}),
             "one at a time": (100.0, {"harness": 95.0})}
    checks = bench.repro_checks(timed, 18.0, argparse.Namespace(fresh_machine=False))
    assert [c.met for c in checks] == [True, True, True]
    assert checks[0].figure.startswith("5.0%")
    timed["one at a time"] = (100.0, {"harness": 80.0})
    assert not bench.repro_checks(timed, 18.0, argparse.Namespace(fresh_machine=False))[0].met


def test_every_scenario_has_its_checks_steps():
    """Each scenario's checks read only the steps it runs (a misnamed step is a KeyError at
    the end of a 14-minute bench, found here instead)."""
    doc = recorded()
    for name, scenario in bench.SCENARIOS.items():
        timed = {step.name: (1.0, {**doc, "harness": 0.5}) for step in scenario.steps}
        assert scenario.checks(timed, 10.0, argparse.Namespace(fresh_machine=False)), name
    assert set(bench.BENCHMARKS) == {"env", "repro", "bisect", "long", "case", "commit"}


def test_a_commit_probe_without_a_jax_clone_is_not_measured(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path))  # no cached clone there
    got = bench.bench_commit_probe(argparse.Namespace(jax_repo=None), tmp_path, lambda m: None)
    assert [r.seconds != r.seconds for r in got.rows] == [True] and not got.checks
    assert "no jax clone" in got.rows[0].note


def test_the_report_is_a_table_of_rows_and_targets():
    results = bench.Results([bench.Row("what", "uv", 1.5, "cold", 0.25)],
                            [bench.Check("target", "figure", False)])
    text = bench.report_text(bench.record(
        results, argparse.Namespace(backend="cpu", harness_seconds=6.0), "nox -s bench",
        datetime(2026, 1, 1, tzinfo=UTC)))
    assert "| what   | uv     | 1.50      | 0.25           | cold  |" in text
    assert "MISSED" in text and "- Command: `nox -s bench`" in text


def test_bad_input_is_one_line(capsys):
    with pytest.raises(SystemExit) as exited:
        bench.main(["--only", "nope"])
    assert exited.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("python -m jaxbisect.tools.bench: error: argument --only")


def test_a_bench_writes_its_records_and_renders_its_markdown_from_them(tmp_path):
    results = bench.Results(
        [bench.Row("a jax 0.5.0 environment", "uv", 1.51, "cold", 0.23),
         bench.Row("a commit probe", "jaxbisect", float("nan"), "not measured")],
        [bench.Check("ready in under 3 s", "0.00 s", True),
         bench.Check("cold bisection ≤ 4 runs", "4.20", False)])
    args = argparse.Namespace(backend="cpu", harness_seconds=6.43)
    doc = bench.record(results, args, "nox -s bench", datetime(2026, 12, 5, 10, 30, tzinfo=UTC),
                       machine="platform: Test")
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))  # strict JSON: no NaN
    assert json.loads(path.read_text())["rows"][1]["seconds"] is None
    assert bench.main(["--render", str(path)]) == 0
    text = (tmp_path / "bench.md").read_text()
    assert text == bench.report_text(json.loads(path.read_text()))
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| a ")]
    assert rows == [["a jax 0.5.0 environment", "uv", "1.51", "0.23", "cold"],
                    ["a commit probe", "jaxbisect", "–", "", "not measured"]]
    assert "MISSED" in text and "6.43 s" in text and "platform: Test" in text
    assert "2026-12-05 10:30 UTC" in text


def test_render_refuses_a_file_that_is_not_a_bench_record(tmp_path):
    path = tmp_path / "bench.json"
    path.write_text('{"kind": "sweep-result"}')
    assert bench.main(["--render", str(path)]) != 0
    assert not (tmp_path / "bench.md").exists()


def test_the_page_shows_no_clone_path_of_this_machine():
    assert bench.shown_argv(["--jax-repo", "/work/x/jax", "--only", "case"]) == [
        "--jax-repo", "path/to/jax", "--only", "case"]
    assert bench.shown_argv(["--jax-repo=/home/me/jax"]) == ["--jax-repo=path/to/jax"]
