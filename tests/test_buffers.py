"""The buffers at the peak of any memory case: XLA's dumps reduced (evidence/release.py,
evidence/collect.py), from real dumps recorded under tests/data/dumps (see its README), one
property test of the reduction against a plain recount, and one real run of repro.dumps."""

from __future__ import annotations

import difflib
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from fake_lab import FakeLab, _Version, scripted
from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.evidence.collect import buffers_at_peak, dump_params, peak_evidence
from jaxbisect.evidence.release import (
    BufferAllocation,
    BufferAssignment,
    BufferValue,
    at_peak,
    bare_shape,
    case_reading,
    new_at_peak,
)
from jaxbisect.lab.harness import MODULE_ANSWERS, run_module
from jaxbisect.report.markdown.evidence import render_buffers_markdown, what_differs
from jaxbisect.search.question import Question
from repro.case import read_case

DATA = Path(__file__).resolve().parent / "data" / "dumps"
ROOT = Path(__file__).resolve().parent.parent
OLD, NEW = "0.5.0", "0.5.1"


def scan_document(version: str, stacked=(3, 4, 4, 4)) -> dict:
    """A ``repro.dumps --case`` document around the scan dumps recorded at n_inner 3, n_res 4."""
    folder = DATA / f"jax-{version}"
    files = {key: (folder / name).read_text() for key, name in (
        ("memory_usage_report", "memory-usage-report.txt"),
        ("buffer_assignment", "buffer-assignment.txt"),
        ("after_optimizations", "after_optimizations.txt"))}
    return {"schema": 1, "kind": "evidence", "status": "ok", "error": None, "jax": version,
            "jaxlib": version, "stacked_shape": list(stacked) if stacked else None,
            "case": {"params": {"n_outer": 3, "n_inner": 3, "n_res": 4}},
            "compiled": {"status": "ok", "total_bytes": 2308 if version == OLD else 3204},
            "dump": {"status": "ok", "files": files}}


def remat_document(version: str) -> dict:
    return json.loads((DATA / f"remat_scan_memory-jax-{version}.json").read_text())


def test_the_scan_case_holds_one_more_stacked_buffer_at_the_peak():
    evidence = peak_evidence(scan_document(OLD), scan_document(NEW), {}, {})
    old, new = evidence["releases"]["old"], evidence["releases"]["new"]
    assert evidence["followed"] == [3, 4, 4, 4] == evidence["stacked_shape"]
    assert (old["stacked"]["slots"], new["stacked"]["slots"]) == (2, 3)
    assert evidence["new_at_peak"][0] == {"shape": "f32[3,4,4,4]", "old_places": 2,
                                          "new_places": 3, "bytes_added": 768}
    assert new["largest_allocation"]["size_bytes"] == 2948
    assert new["largest_allocation"]["values"][0]["shape"] == "f32[3,4,4,4]"
    assert "at most 2" in old["schedule"][0] and "at most 3" in new["schedule"][0]
    assert (old["plan_bytes"], new["plan_bytes"]) == (2308, 3204)


def test_without_a_named_buffer_the_one_grown_at_the_peak_is_followed():
    """A case with no evidence() hook: the array the new plan holds in most more places."""
    evidence = peak_evidence(scan_document(OLD, None), scan_document(NEW, None), {}, {})
    assert evidence["stacked_shape"] is None and evidence["followed"] == [3, 4, 4, 4]
    assert evidence["releases"]["new"]["stacked"]["slots"] == 3


def test_a_fix_names_what_the_old_plan_held_more_of():
    """Read the other way round (the new release holds fewer): old_at_peak names the buffer,
    and it is still the one followed."""
    evidence = peak_evidence(scan_document(NEW, None), scan_document(OLD, None), {}, {})
    assert evidence["new_at_peak"] == [] and evidence["followed"] == [3, 4, 4, 4]
    assert evidence["old_at_peak"][0] == {"shape": "f32[3,4,4,4]", "old_places": 3,
                                          "new_places": 2, "bytes_removed": 768}


def test_a_general_case_its_residuals_are_made_before_the_loops():
    """remat_scan_memory (no hook), recorded small: jax 0.5.1 makes the remat'd scans'
    stacked residuals up front, so more of them are live at the peak."""
    evidence = peak_evidence(remat_document(OLD), remat_document(NEW), {}, {})
    old, new = evidence["releases"]["old"], evidence["releases"]["new"]
    assert evidence["params"] == {"rows": 20, "cols": 10, "block_size": 10, "num_blocks": 4}
    assert evidence["followed"] == [10, 20, 10]
    grown = evidence["new_at_peak"][0]
    assert grown["shape"] == "f32[10,20,10]" and grown["new_places"] > grown["old_places"]
    assert "at most 2" in old["schedule"][0] and "at most 4" in new["schedule"][0]
    assert new["plan_bytes"] > 2 * old["plan_bytes"]
    assert all(r["error"] is None for r in (old, new))


def test_a_release_without_a_document_leaves_its_side_empty_with_the_reason():
    evidence = peak_evidence(scan_document(OLD), None, {"new": "the harness timed out"}, {})
    new = evidence["releases"]["new"]
    assert new["error"] == "the harness timed out" and new["at_peak"] == []
    assert evidence["new_at_peak"] == [] and evidence["releases"]["old"]["stacked"]["slots"] == 2
    render_buffers_markdown(evidence, "python -m repro.dumps")  # renders what there is
    failed = case_reading({"status": "error", "error": "cannot build the case here: X",
                           "jax": NEW}, None)
    assert failed["error"].endswith(": X") and failed["jax"] == NEW


def test_the_section_reads_alike_from_the_store():
    """The store writes sorted keys; the section must not depend on the dict's order."""
    evidence = peak_evidence(remat_document(OLD), remat_document(NEW), {}, {})
    stored = json.loads(json.dumps(evidence, sort_keys=True))
    assert render_buffers_markdown(stored, "c") == render_buffers_markdown(evidence, "c")


values = st.builds(lambda offset, size, dims: BufferValue(0, "v", size, offset,
                                                          f"f32[{','.join(map(str, dims))}]"
                                                          "{0}"),
                   st.integers(0, 6), st.integers(1, 50),
                   st.lists(st.integers(1, 3), min_size=1, max_size=2))


@given(st.lists(values, max_size=25), st.lists(values, max_size=25))
def test_at_peak_against_a_recount(old_values, new_values):
    """Each place (offset) counts once, by the shape of its largest value; shapes grown at
    the peak are exactly those with more places under the new plan."""
    def assignment(vs):
        return BufferAssignment(None, (BufferAllocation(0, 1000, "preallocated-temp",
                                                        tuple(vs)),))

    def recount(vs):
        places = {}
        for v in vs:
            if v.offset not in places or v.size_bytes > places[v.offset].size_bytes:
                places[v.offset] = v
        counts = {}
        for v in places.values():
            counts[bare_shape(v.shape)] = counts.get(bare_shape(v.shape), 0) + 1
        return counts

    old, new = at_peak(assignment(old_values)), at_peak(assignment(new_values))
    assert {e["shape"]: e["places"] for e in new} == recount(new_values)
    assert sum(e["places"] for e in new) == len({v.offset for v in new_values})
    before, after = recount(old_values), recount(new_values)
    assert {e["shape"] for e in new_at_peak(old, new)} == \
        {s for s, n in after.items() if n > before.get(s, 0)}
    assert new_at_peak(new, new) == []


def _bisection(question: Question, figures: dict):
    """What buffers_at_peak reads of a bisection: the question, the pair and its runs."""
    def run(points: dict):
        return SimpleNamespace(document={"metric": {"points": [
            {"at": at, "value": value} for at, value in points.items()]}})

    placed = {i: SimpleNamespace(runs=[run(points)]) for i, points in figures.items()}
    return SimpleNamespace(request=SimpleNamespace(question=question, backend="cpu"),
                           searched=question, pair=(_Version(OLD), _Version(NEW)), timeout=60,
                           search=SimpleNamespace(result=SimpleNamespace(last_old=0, first_new=1),
                                                  placed=placed))


def test_the_dump_is_made_where_the_ends_first_differ():
    case = read_case(ROOT / "repro" / "cases" / "scan_growth.py")
    q = Question(metric="memory", case=case, params={"n_res": 32}, over=case.over)
    b = _bisection(q, {0: {1: 10, 2: 20, 5: 20}, 1: {1: 10, 2: 20, 5: 50}})
    assert dump_params(b) == {"n_res": 32, "n_outer": 5}
    same = _bisection(q, {0: {1: 10, 2: 20}, 1: {1: 10, 2: 20}})
    assert dump_params(same)["n_outer"] == 15  # none differs: the last value


def test_the_dumps_come_through_the_lab_and_its_store(tmp_path):
    """Stored documents are read back without an environment; where none is stored and the
    lab cannot install, each side says why, and nothing is raised."""
    from jaxbisect.evidence.collect import dumps_key
    from jaxbisect.lab.store import Store

    case = read_case(ROOT / "repro" / "cases" / "remat_scan_memory.py")
    q = Question(metric="memory", case=case, params={"rows": 20})
    b = _bisection(q, {0: {}, 1: {}})
    lab = FakeLab(scripted(lambda version, number: None), store=Store(tmp_path))
    written, extra = [], {}
    buffers_at_peak(b, lab, lambda line: None, extra, lambda: written.append(1))
    assert written == [1]
    assert all("installs nothing" in extra["evidence"]["releases"][s]["error"]
               for s in ("old", "new"))
    for version in (OLD, NEW):
        lab.store.put(dumps_key(q, _Version(version), "cpu", {"rows": 20}),
                      remat_document(version))
    buffers_at_peak(b, lab, lambda line: None, extra, lambda: None)
    assert extra["evidence"]["followed"] == [10, 20, 10]
    assert extra["evidence"]["releases"]["new"]["jax"] == NEW


def test_no_buffers_for_a_metric_that_is_not_memory(tmp_path):
    case = read_case(ROOT / "repro" / "cases" / "remat_scan_memory.py")
    b = _bisection(Question(metric="compile_time", case=case), {0: {}, 1: {}})
    extra: dict = {}
    buffers_at_peak(b, FakeLab(scripted(lambda v, n: None)), print, extra, lambda: None)
    assert extra == {}


def test_repro_dumps_of_the_scan_case_in_the_releases_around_the_change(jax_python):
    """python -m repro.dumps --case: the case's evidence() hook sets n_outer 3 and names the
    stacked buffer; jax 0.5.0's plan holds 2 of them, 0.5.1's 3 (a real run, small size)."""
    case = str(ROOT / "repro" / "cases" / "scan_growth.py")
    argv = ["--json", "--case", case, "--param=n_inner=3", "--param=n_res=4",
            "--backend", "cpu"]
    docs = [run_module(jax_python(v), "repro.dumps", argv, 300, answers=MODULE_ANSWERS)
            for v in (OLD, NEW)]
    assert [d["case"]["params"]["n_outer"] for d in docs] == [3, 3]
    assert docs[0]["stacked_shape"] == [3, 4, 4, 4]
    assert "--xla_dump_to" not in docs[0]["xla_flags"]
    evidence = peak_evidence(*docs, {}, {})
    old, new = evidence["releases"]["old"], evidence["releases"]["new"]
    assert (old["stacked"]["slots"], new["stacked"]["slots"]) == (2, 3)
    assert old["plan_bytes"] == docs[0]["compiled"]["total_bytes"] > 0
    assert evidence["new_at_peak"][0]["shape"] == "f32[3,4,4,4]"


def test_repro_dumps_for_a_target_reads_the_plan_from_the_dump(target_python):
    """--target a6000 under jax 0.5.0 (memory_analysis() is None for a compile-only GPU
    before 0.6.1): the plan's bytes come from the dumped buffer assignment, and the A6000's
    plan already holds all three stacked buffers at n_outer 3."""
    argv = ["--json", "--case", str(ROOT / "repro" / "cases" / "scan_growth.py"),
            "--param=n_inner=3", "--param=n_res=4", "--target", "a6000"]
    doc = run_module(target_python(OLD), "repro.dumps", argv, 300, answers=MODULE_ANSWERS)
    assert doc["deviceless"] and doc["device"].startswith("NVIDIA RTX A6000")
    assert doc["compiled"]["source"] == "XLA buffer-assignment dump"
    reading = case_reading(doc, doc["stacked_shape"])
    assert reading["plan_bytes"] > 0 and reading["stacked"]["slots"] == 3


@pytest.mark.parametrize("args, words", [
    (["--case", "nosuch.py"], "no case file nosuch.py"),
    (["--case", "repro/cases/scan_growth.py", "--param", "nope=1"], "no parameter 'nope'"),
    (["--case", "repro/cases/scan_growth.py", "--param", "n_res=x"], "n_res is an int"),
    (["--case", "repro/cases/scan_growth.py", "--target", "nosuch"], "unknown target")])
@pytest.mark.parametrize("module", ["repro.dumps", "repro.xla_passes"])
def test_repro_dumps_bad_input_is_one_line_before_jax(module, args, words):
    """Refused in one line, exit 2, before jax is imported (the driver's Python has none)."""
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr


dump_lines = st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=30)


@given(dump_lines, dump_lines)
def test_two_dumps_are_cut_to_what_differs(old, new):
    """Each side, its stretches left out put back (their stated lengths), is the dump as it
    was; every line not in the longest common run of both (difflib's oracle) is shown."""
    shown = what_differs(old, new)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for side, lines, (lo, hi) in ((0, old, (1, 2)), (1, new, (3, 4))):
        rebuilt, kept = [], set()
        for line in shown[side]:
            m = re.fullmatch(r"… (\d+) lines? the same under both left out", line)
            if m:
                rebuilt += [None] * int(m[1])
            else:
                kept.add(len(rebuilt))
                rebuilt.append(line)
        assert len(rebuilt) == len(lines)
        assert all(r is None or r == x for r, x in zip(rebuilt, lines))
        for code in matcher.get_opcodes():
            if code[0] != "equal":
                assert set(range(code[lo], code[hi])) <= kept
    if old == new:
        assert all(line.startswith("…") for line in shown[0] + shown[1])
