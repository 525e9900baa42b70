"""The tables below the first screen, and the headline above them, agree with the JSON they
are rendered from (a maintainer's review of the shipped scan_growth and case reports)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_report_records import inner_words

from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.tables import (
    how_text,
    interior_lines,
    probe_rows,
    rows_params,
    search_line,
)

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "reports"
SCAN_CPU = REPORTS / "bisect-0.4.20-0.5.0-cpu-scan_growth-memory.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_table_intro_states_the_size_its_rows_were_measured_at():
    doc = load(SCAN_CPU)
    measured = rows_params(doc)
    assert measured and measured != {k: doc["case"]["params"][k] for k in measured}
    how = how_text(doc)
    for k, v in measured.items():
        assert f"{k}={v!r}" in how, (k, how)
    # the case's own size, where it differs, only as what was asked
    for k, v in measured.items():
        if doc["case"]["params"].get(k) != v:
            assert f"with {k}={doc['case']['params'][k]!r}" not in how
            assert f"asks {k}={doc['case']['params'][k]!r}" in how


def test_an_unavailable_plan_prints_no_figure_and_a_runs_peak_its_figures():
    """A compiled plan of 0 bytes (the release measures nothing) is no figure; a run's peak of
    0 bytes (its growth below a page) is a figure like any other (the mission's v1 at 0.4.20:
    0, 0, 0, 4096 bytes)."""
    from jaxbisect.report.markdown.tables import unmeasured

    plan = {"status": "unavailable", "figures": {"1": 0, "2": 0}, "metric": "memory",
            "fallback": None}
    assert unmeasured(plan)
    assert not unmeasured({**plan, "metric": "peak_memory"})
    assert not unmeasured({**plan, "fallback": {"metric": "peak_memory"}})
    doc = load(SCAN_CPU)
    headers, rows = probe_rows(doc)
    peaks = [(p["jax"], c) for p in doc["probes"] for c, s in (p.get("compare") or {}).items()
             if s.get("status") == "unavailable" and s.get("metric") == "peak_memory"]
    assert peaks
    for jax, c in peaks:
        row = next(r for r in rows if r[0] == jax)
        cell = row[next(i for i, h in enumerate(headers) if h.startswith(c))]
        assert (re.match(r"\d+\.\d\d", cell) or "a run's peak" in cell) \
            and "not measured" not in cell, cell


def test_a_compare_series_with_real_figures_still_prints_them():
    doc = load(SCAN_CPU)
    headers, rows = probe_rows(doc)
    last = next(r for r in rows if r[0] == doc["measured_part"][1])
    cell = last[next(i for i, h in enumerate(headers) if h.startswith("v1"))]
    assert re.match(r"\d+\.\d\d", cell), cell


INNER = re.compile(r"\bprobes?\b|\bthe pair\b|classifier|interior budget|"
                   r"\(`--interior-budget`\)|re-measured", re.IGNORECASE)


@pytest.mark.parametrize("path", sorted([*REPORTS.glob("bisect-*.json"),
                                         *(REPORTS / "cases").glob("bisect-*.json")]),
                         ids=lambda p: p.name)
def test_the_tables_sections_speak_a_maintainers_words(path):
    doc = load(path)
    if "probes" not in doc or "search" not in doc:
        pytest.skip("not a bisection's document")
    headers, _ = probe_rows(doc)
    text = "\n".join([how_text(doc), search_line(doc), *interior_lines(doc), " ".join(headers)])
    assert not INNER.findall(text), INNER.findall(text)
    found = [w for w in inner_words() if re.search(rf"\b{re.escape(w)}\b", text, re.IGNORECASE)]
    assert not found, found  # docs/glossary.md's words, held to the tables' intros too
    assert "order measured" in headers
    assert "probe #" not in render(doc)


def test_the_headline_quotes_the_tables_figures_not_a_second_run():
    from jaxbisect.report.markdown.answer import answer_line, peak_at_both

    doc = load(SCAN_CPU)
    line = answer_line(doc)
    series = [next(p for p in doc["probes"] if p["jax"] == v)["series"]
              for v in doc["measured_part"]]
    at = max(set(series[0]["figures"]) & set(series[1]["figures"]), key=float)
    tables = [f"{s['figures'][at] / 2**20:.2f} MiB" for s in series]
    assert f"{tables[0]} → {tables[1]}" in line, line
    printed = peak_at_both(doc)  # the program's own run: another measurement of a noisy figure
    assert printed and printed.split(": ", 1)[1] not in line
    assert printed.split(": ", 1)[1].split(" → ")[0] in render(doc)  # kept in Reproduce


def test_a_headline_names_the_part_measured_and_why_not_the_rest():
    from jaxbisect.report.markdown.answer import answer_line

    doc = load(REPORTS / "bisect-0.4.20-0.5.0-a6000-scan_growth-memory.json")
    first, last = doc["measured_part"]
    assert (first, last) != (doc["from"], doc["to"])
    line = answer_line(doc)
    head = line.split(":**")[0]
    assert f"jax {first} … {last}" in head, head
    assert f"in jax {doc['from']} … {doc['to']}" not in head, head
    before = [s for s in doc["skipped"] if s["jax"] == doc["from"]]
    assert before and "needs a real GPU" in before[0]["reason"] and "needs a real GPU" in head


def test_a_headline_over_the_whole_range_names_it_alone():
    from jaxbisect.report.markdown.answer import answer_line

    doc = load(SCAN_CPU)
    assert tuple(doc["measured_part"]) == (doc["from"], doc["to"])
    assert f"in jax {doc['from']} … {doc['to']}:**" in answer_line(doc)


def test_the_ends_compared_in_the_reports_unit():
    from jaxbisect.report.markdown.tables import ends_reason

    doc = load(REPORTS / "cases" / "bisect-0.4.38-0.5.2-cpu-remat_scan_memory-memory.json")
    medians = {p["jax"]: p["figure"]["median"] for p in doc["probes"]}
    old, new = (medians[v] for v in (doc["measured_part"][0], doc["measured_part"][-1]))
    text = ends_reason(doc)
    # the rows' figures (441208256 B: 420.77 MiB), not the reason's rounded 4.412e+08 (420.76)
    assert f"{old / 2**20:.2f} MiB vs {new / 2**20:.2f} MiB" in text, text
    assert "420.77 MiB" in text and "420.76" not in text, text
    assert not re.search(r"\de[+-]\d", text), text


def test_a_paired_ratio_says_what_it_is_beside_the_answers():
    from jaxbisect.report.markdown.tables import ends_reason

    doc = load(REPORTS / "cases" / "bisect-0.4.30-0.4.33-cpu-while_loop_cpu_slowdown-run_time.json")
    paired = re.search(r"last/first end ([\d.]+)x", doc["ends"]["reason"])
    assert paired
    text = ends_reason(doc)
    assert "median of the last end's run_time over the first's" in text
    # the answer's pair (0.4.31 → 0.4.33) is not the ends (0.4.30 → 0.4.33): said so
    assert doc["last_old"]["jax"] != doc["measured_part"][0]
    assert f"is {paired[1]}×" in text and "so the two ratios differ" in text
    assert "another estimate of the same change" not in text
    assert not re.search(r"\dx\b", text), text
    ends = {**doc, "last_old": {**doc["last_old"], "jax": doc["measured_part"][0]}}
    assert "ratio in the answer above is that of the two medians" in ends_reason(ends)


def test_a_headline_says_an_output_differs_between_the_recorded_runs():
    from jaxbisect.report.markdown.answer import answer_line

    doc = load(REPORTS / "cases" / "bisect-0.6.0-0.6.2-cpu-exp_nan_under_jit-output.json")
    new = doc["first_new"]["jax"]
    end = next(e for e in doc["reproducer"]["ends"] if e["jax"] == new)
    printed = {float(line.rsplit("[", 1)[1].rstrip("]")) for line in end["outputs"]}
    assert len(printed) > 1
    line = answer_line(doc)
    assert "the program below printed " in line and ": it differs between runs" in line, line
    for value in printed:
        assert f"{value:.3g}" in line, (value, line)
    old = doc["last_old"]["jax"]
    assert f"nan (float64) at jax {old}" in line  # an end whose runs agree: its one value


def test_a_search_count_is_out_of_the_releases_it_could_measure_and_the_range_asked():
    from jaxbisect.report.markdown.tables import probes_lines

    doc = load(REPORTS / "bisect-0.4.20-0.5.0-a6000-scan_growth-memory.json")
    candidates, skipped = doc["search"]["candidates"], len(doc["skipped"])
    assert skipped  # releases the machine cannot install, left out before the search
    text = "\n".join([search_line(doc), *probes_lines(doc)])
    yanked = ", ".join(y["jax"] for y in doc["yanked"] if not y["candidate"])
    said = (f"of the {candidates} measurable here ({candidates + skipped} in the range asked"
            + (f"; yanked {yanked} left out)" if yanked else ")"))
    assert f"measured, {doc['search']['probes']} {said}:" in text and "at most" in text, text
    assert f"of the {candidates} in the range" not in text, text
    cpu = load(SCAN_CPU)  # nothing skipped: the candidates are the range
    assert f"of the {cpu['search']['candidates']} in the range (yanked 0.4.32 left out) when" \
        in search_line(cpu)


def test_a_compare_program_is_said_as_the_rows_measured_it():
    doc = load(REPORTS / "bisect-0.4.20-0.5.0-a6000-scan_growth-memory.json")
    over = doc["over"]["name"]
    measured = {k for p in doc["probes"] for k in ((p.get("compare") or {}).get("v2") or {})
                .get("figures", {})}
    defined = [str(v) for v in doc["case"]["compare"]["v2"][over]]
    assert sorted(measured) != sorted(defined)  # the definition asks more than was measured
    text = how_text(doc)
    # the value named as the case's docstring names it; why only the first was compiled
    assert f"v2 (variant 2, the unrolled loop; {over} {', '.join(sorted(measured))} only, of " \
           f"{', '.join(defined)} asked: on any compile-only target, a program compared" in text, \
        text
    assert f"{over} {', '.join(defined)}, variant 2" not in text, text
    cpu = load(SCAN_CPU)  # all the definition's values measured: said as measured
    assert f"v2 ({over} 1, 2; n_res 32, variant 2, the unrolled loop)" in how_text(cpu), \
        how_text(cpu)


def test_the_tables_say_the_releases_measured_and_the_time_allowed_not_jargon():
    doc = load(SCAN_CPU)
    first, last = doc["measured_part"]
    text = how_text(doc)
    assert doc["ends"]["reason"] == "the ends give the same value"
    # a shape's "value" is its word (constant, grows): said as a shape, never as a figure
    assert f"The oldest and newest releases measured (jax {first} and {last}): they give the " \
           f"same shape over {doc['over']['name']}." in text, text
    assert "The ends:" not in text and "the ends give" not in text, text
    differ = load(REPORTS / "cases" / "bisect-0.6.0-0.6.2-cpu-exp_nan_under_jit-output.json")
    assert differ["ends"]["reason"] == "the ends give different values"
    assert "measured (jax 0.6.0 and 0.6.2): they give different values." in how_text(differ)
    case = load(REPORTS / "cases" / "bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json")
    inside = "\n".join(interior_lines(case))
    budget = case["interior_check"]["budget"]
    assert f"the time allowed for them ({budget:.0f} s, `--interior-budget`)" in inside, inside
    assert "set by" not in inside and "The ends agree" not in inside, inside


def test_a_placements_confidence_is_said_as_what_it_is():
    doc = load(REPORTS / "cases" / "bisect-0.4.30-0.4.33-cpu-while_loop_cpu_slowdown-run_time.json")
    placed = next(p for p in doc["probes"] if p["confidence"] is not None)
    headers, rows = probe_rows(doc)
    row = next(r for r in rows if r[0] == placed["jax"])
    assert row[2] == f"{placed['label']} ({placed['confidence'] * 100:.1f}% sure)", row
    said = re.search(r"at (0\.\d+)$", placed["reason"])
    assert said and f"at {float(said[1]) * 100:.1f}% confidence" in row[-1], row
    ends = re.search(r"at (0\.\d+)", doc["ends"]["reason"])
    text = how_text(doc)
    assert ends and f"at {float(ends[1]) * 100:.1f}% confidence" in text, text
    assert not re.search(r"\bat 0\.\d+|\(0\.\d+\)", " ".join([text, *map(str, row)]))


@pytest.mark.parametrize("name", ["cases/bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json",
                                  "cases/bisect-0.6.0-0.7.0-cpu-exp_nan_under_jit-output.json",
                                  "bisect-0.4.20-0.5.0-cpu-scan_growth-memory.json"])
def test_the_releases_inside_define_every_behaviour_their_rows_say(name):
    doc = load(REPORTS / name)
    used = {r["label"] for r in doc["interior"]}
    intro = interior_lines(doc)[2]
    defined = set(re.findall(r"`([a-z ]+)`: ", intro))
    assert defined == used, (defined, used, intro)
