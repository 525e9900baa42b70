"""``--explain RELEASE --target``: the pass search runs on a compile-only target as anywhere
else (it was refused after the one-pipeline merge): each pass that changed the module turned
off, the ones without which the shape stops growing named as ways around it. A fake lab of
shapes; the real target's per-pass dumps are tests/test_target.py's."""

from __future__ import annotations

from fake_lab import FakeLab
from test_paired_explain import _Version, hold_pass_dumps

from jaxbisect.cli import SCAN_CASE
from jaxbisect.evidence.explain import explain_release
from jaxbisect.lab.store import Store
from jaxbisect.search.question import Run, question_from


def test_a_target_names_the_passes_whose_removal_keeps_it_constant(tmp_path):
    question = question_from("memory", str(SCAN_CASE), [], (), target="a6000",
                             over="n_outer=2,5")
    assert question.target == "a6000" and question.case.name == "scan_growth"
    asked = []

    def answer(version, q, number):
        asked.append((q.target, q.xla_flags))
        shape = ["constant", 0.0] if q.xla_flags.endswith("=slow-pass") else ["grows", 1.0]
        return Run(release=version, number=number, status="ok", samples=(shape,))

    lab = FakeLab(answer, Store(tmp_path / "store"))
    hold_pass_dumps(lab, "0.5.0", question, backend="cuda12-deviceless")
    doc = explain_release(lab, _Version("0.5.0"), "cuda12-deviceless", question,
                          lambda m: None)
    assert doc["passes_changed"] == ["slow-pass", "idle-pass"]
    assert (doc["culprit"]["kind"], doc["culprit"]["name"]) == ("pass", "slow-pass")
    assert doc["workarounds"] == [{"release": "0.5.0", "xla_flags":
                                   "--xla_disable_hlo_passes=slow-pass",
                                   "figure": ["constant", 0.0], "safe": True}]
    assert [t["verdict"] for t in doc["tests"]] == ["changed", "same"]
    assert {t for t, _ in asked} == {"a6000"}  # every run compiled for the target


def test_a_fix_on_a_target_names_the_ways_around_it_before_the_fix(recorded_catalogue,
                                                                  tmp_path):
    """A fix (v0 grows under 0.4.35, constant under 0.4.38): the passes turned off under the
    release before it that already give the fixed shape are the ways around it for whoever
    stays there (the deleted pipeline searched the release that grows); the new release's
    passes that bring the growth back explain the fix and are no workaround."""
    from jaxbisect import cli
    from jaxbisect.evidence.explain import explain_passes
    from jaxbisect.pipeline import question_of, request_from
    from jaxbisect.stages.releases import bisect_metric

    def answer(version, q, number):
        grows = (version == "0.4.35") != q.xla_flags.endswith(
            "=slow-pass" if version == "0.4.35" else "=idle-pass")
        shape = ["grows", 1.0] if grows else ["constant", 0.0]
        return Run(release=version, number=number, status="ok", samples=(shape,))

    args, command = cli.parse(["--from", "0.4.35", "--to", "0.4.38", "--target", "a6000"])
    request = request_from(args, question_of(args, command), recorded_catalogue)
    lab = FakeLab(answer, Store(tmp_path / "store"))
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    assert b.direction == "fix" and [str(r.version) for r in b.pair] == ["0.4.35", "0.4.38"]
    for version in ("0.4.35", "0.4.38"):
        hold_pass_dumps(lab, version, b.searched, backend=request.backend)
    doc = explain_passes(b, lab, lambda m: None)
    assert doc["restoring"] == ["idle-pass"]
    assert doc["workarounds"] == [{"release": "0.4.35", "xla_flags":
                                   "--xla_disable_hlo_passes=slow-pass", "safe": True,
                                   "brings": "new"}]
    assert {(t["release"], t["behaviour"]) for t in doc["tests"]} == {
        ("0.4.38", "old"), ("0.4.38", "new"), ("0.4.35", "new"), ("0.4.35", "old")}


def test_an_explanation_on_a_target_is_titled_in_the_words_its_bisections_use():
    import json
    from pathlib import Path

    from jaxbisect.report.markdown.explain import render_explain

    reports = Path(__file__).resolve().parent.parent / "reports"
    doc = json.loads((reports / "explain-0.5.0-a6000-scan_growth-memory-0ab78550.json").read_text())
    bisect = json.loads((reports / "bisect-0.4.20-0.5.0-a6000-scan_growth-memory.json").read_text())
    assert doc["target"] == bisect["target"] == "a6000"
    title = render_explain(doc).splitlines()[0]
    assert title.endswith(f"under jax {doc['explain']} ({bisect['measured']})"), title
    assert "(a6000)" not in title
