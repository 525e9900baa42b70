"""A noisy metric bisection's answer, from a fake lab's runs on the recorded catalogue: the
status, the exit status, the calibration and the headline's figures, asserted on the JSON
document."""

from __future__ import annotations

import json
import math
import random

from fake_lab import FakeLab, scripted

from jaxbisect.cli import METRIC_EXIT
from jaxbisect.lab import backends
from jaxbisect.report.document import document, write_report
from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.answer import answer_line
from jaxbisect.report.markdown.tables import probe_rows
from jaxbisect.search.question import question_from
from jaxbisect.stages.releases import MetricRequest, bisect_metric

CPU = backends.get("cpu")

COMMAND = ("python", "measure.py")


def bisection(catalogue, figure, *, start="0.4.30", end="0.4.35", max_runs=None):
    """``figure(index, run number, made so far)`` is a run's one figure (seconds), ``index``
    the release's among the range's candidates."""
    question = question_from("seconds", None, [], COMMAND, kind="noisy")
    request = MetricRequest(start=start, end=end, backend="cpu", question=question,
                            max_runs=max_runs)
    index = {str(r.version): i for i, r in enumerate(catalogue.between(start, end, CPU)[0])}
    made = [0]

    def run(version, number):
        made[0] += 1
        return figure(index[version], number, made[0])

    lab = FakeLab(scripted(run))
    return bisect_metric(catalogue, request, lab, lambda m: None), made


def test_ends_apart_under_a_load_that_swamps_them_are_undecided_with_exit_3(
        recorded_catalogue):
    rng = random.Random(7)
    # 1.3x apart, each run x 1 … 3 by its own load: no test can say at 99 % in 4 pairs.
    b, made = bisection(recorded_catalogue,
                        lambda i, k, t: (1.3 if i else 1.0) * 0.02 * math.exp(rng.uniform(0, 1.1)),
                        max_runs=4)
    doc = document(b, None)
    assert doc["status"] == "undecided" and METRIC_EXIT[doc["status"]] == 3
    assert doc["last_old"] is None and doc["ends"]["distinct"] is False
    assert doc["search"]["runs"] == made[0] == 8 and doc["search"]["max_runs"] == 4
    cal = doc["calibration"]
    assert cal["pairs"] == 4 and cal["pair_spread"] > 0.1 and cal["resolvable_ratio"] > 1.3
    line = answer_line(document(b, None))
    assert "--max-runs 14" in line and "0.4.30" in line and "e+" not in line
    _, rows = probe_rows(document(b, None))  # the report's table: neither end is called old or new
    assert [row[2] for row in rows] == ["oldest release measured", "newest release measured"]


def test_ends_within_the_threshold_are_alike_only_by_an_equivalence_test(recorded_catalogue):
    b, _ = bisection(recorded_catalogue, lambda i, k, t: 0.02 * (1 + 0.002 * ((i + k) % 3)))
    doc = document(b, None)
    assert doc["status"] == "alike" and METRIC_EXIT["alike"] == 1
    assert "equivalence" in doc["ends"]["reason"]
    # The releases inside, cheap here, placed by the same paired test: like the ends.
    inside = doc["interior_check"]
    assert inside["measured"] and not inside["changes"] and "sweep" not in doc
    assert {r["label"] for r in doc["interior"]} == {"old"}
    assert all(len(r["rounds"]) >= 4 for r in doc["interior"])
    line = answer_line(document(b, None))
    assert line.startswith("**No change") and " old" not in line and " new" not in line


def test_a_drifting_machine_still_finds_a_2x_change_from_pairs_and_rounds(recorded_catalogue):
    level = [0.0]
    rng = random.Random(3)
    candidates = []

    def figure(i, k, t):
        level[0] = min(1.2, max(0.0, level[0] + rng.gauss(0, 0.05)))
        return (2.0 if i >= change else 1.0) * 0.02 * math.exp(level[0] + rng.gauss(0, 0.03))

    b0, _ = bisection(recorded_catalogue, lambda i, k, t: 1.0)
    candidates = b0.candidates
    change = len(candidates) // 2
    b, made = bisection(recorded_catalogue, figure)
    doc = document(b, None)
    assert doc["status"] == "found" and doc["direction"] == "regression"
    assert doc["first_new"]["jax"] == str(candidates[change].version)
    assert doc["last_old"]["jax"] == str(candidates[change - 1].version)
    middle = [p for p in doc["probes"] if p["rounds"]]
    assert middle and all(len(r) == 3 for p in middle for r in p["rounds"])
    assert doc["search"]["runs"] == made[0]
    assert METRIC_EXIT["found"] == 0 and METRIC_EXIT["unmeasurable"] == 125


def test_a_deterministic_headline_is_in_the_metrics_units(recorded_catalogue):
    """Compiled memory bytes keep their exact logic (one run an end) and the headline says
    MB, never 6.567e+07, and calls neither end old or new when they are alike."""
    from pathlib import Path

    case = Path(__file__).resolve().parents[1] / "repro" / "cases" / "remat_scan_memory.py"
    question = question_from("memory", str(case), [], ())
    request = MetricRequest(start="0.4.38", end="0.5.2", backend="cpu", question=question)
    lab = FakeLab(scripted(lambda version, number: 65_670_000))
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    doc = document(b, None)
    assert doc["status"] == "alike" and doc["calibration"] is None
    assert [(v, k) for v, k, _ in lab.asked] == [("0.4.38", 1), ("0.5.2", 1), ("0.5.0", 1),
                                                 ("0.5.1", 1)]  # the ends, then inside them
    line = answer_line(document(b, None))
    assert "62.63 MiB at jax 0.4.38 and 62.63 MiB at jax 0.5.2" in line and "e+07" not in line
    assert " old" not in line and " new" not in line
    stored = json.loads(json.dumps(doc))  # the report reads its figures from the document
    assert render(stored) == render(document(b, None))
    stored["probes"][0]["figure"]["median"] = 2 * 1024**2
    shown = render(stored)
    assert "2.00 MiB at jax 0.4.38 and 62.63 MiB at jax 0.5.2" in shown
    assert any(line.startswith("| 0.4.38 ") and "| 2.00 MiB " in line
               for line in shown.splitlines())


def test_a_rerun_that_cannot_tell_keeps_the_earlier_answered_report(recorded_catalogue,
                                                                    tmp_path):
    """A found report is never overwritten by a rerun that finds none (a busy machine's
    undecided): the files stay as they were, and the document says it was kept."""
    found, _ = bisection(recorded_catalogue,
                         lambda i, k, t: 0.02 * (10.0 if i >= 3 else 1.0) * (1 + 0.01 * (k % 3)),
                         max_runs=4)
    reports = tmp_path / "reports"
    reports.mkdir()
    path, doc = write_report(found, reports)
    assert doc["status"] == "found" and "report_kept" not in doc
    before = {p.name: p.read_bytes() for p in reports.iterdir()}
    assert path.name in before
    rng = random.Random(7)
    undecided, _ = bisection(recorded_catalogue,
                             lambda i, k, t: (1.3 if i else 1.0) * 0.02
                             * math.exp(rng.uniform(0, 1.1)), max_runs=4)
    again, doc = write_report(undecided, reports)
    assert again == path and doc["status"] == "undecided" and doc["report_kept"]
    assert {p.name: p.read_bytes() for p in reports.iterdir()} == before
