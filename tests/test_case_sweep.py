"""A case sweep measures and labels every release as a bisection measures its probes
(jaxbisect/case_sweep.py), with injected runs: the ends' runs are the bisection's, every
release gets the classifier's label, and a release is measured more only while unplaced."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.bisection import every_sample, search_metric
from jaxbisect.case_sweep import ALIKE, label_of, place_every
from jaxbisect.classify import noisy
from jaxbisect.question import Run

CENTRES = {"old": 10.0, "new": 30.0, "third": 3000.0}


def noisy_runner(history: list[str], seed: int, calls: list):
    """Run k of release i: the same figure every time it is asked (as the store gives)."""
    def run_at(i: int, number: int) -> Run:
        calls.append((i, number))
        rng = random.Random(f"{seed}-{i}-{number}")
        value = CENTRES[history[i]] * (1 + rng.uniform(-0.08, 0.08))
        return Run(release=str(i), number=number, status="ok", samples=(value,))
    return run_at


@st.composite
def histories(draw):
    n = draw(st.integers(2, 9))
    change = draw(st.integers(1, n - 1))
    history = ["old" if i < change else "new" for i in range(n)]
    for i in range(1, n - 1):
        history[i] = draw(st.sampled_from([history[i]] * 3 + ["third"]))
    if draw(st.booleans()):
        history = ["old"] * n  # ends alike
    return history, draw(st.integers(0, 10_000))


@settings(max_examples=60, deadline=None)
@given(histories())
def test_the_ends_are_measured_as_the_bisection_measured_them(drawn):
    history, seed = drawn
    bisected, swept = [], []
    s = search_metric(len(history), noisy_runner(history, seed, bisected), noisy,
                      noisy_metric=True, batch=5, max_runs=10)
    placed, ends = place_every(len(history), noisy_runner(history, seed, swept), noisy,
                               noisy_metric=True, batch=5, max_runs=10, reduce=every_sample)
    for i in (0, len(history) - 1):
        # The same pairs of the ends, then fresh runs beside each release it visits: the
        # runs both made are the same runs (the store's), so the same figures.
        a, b = placed[i].runs, s.placed[i].runs
        assert a[:min(len(a), len(b))] == b[:min(len(a), len(b))]
        assert [r.number for r in a] == list(range(1, len(a) + 1))
    assert ends.distinct == s.ends.distinct and s.status in ("found", "alike", "undecided")
    labels = [label_of(p, ends) for p in placed]
    assert all(label in ("old", "new", "ambiguous", "third behaviour", ALIKE, "measured")
               for label in labels)
    for i, truth in enumerate(history):
        assert 5 <= len(placed[i].runs)
        if 0 < i < len(history) - 1:
            assert len(placed[i].runs) <= 10            # rounds of a release: the cap
        if labels[i] in ("old", "new"):
            assert truth == labels[i]                      # a confident label is the truth
        if truth == "third" and ends.distinct:
            assert labels[i] in ("third behaviour", "ambiguous")


def test_an_end_without_a_figure_leaves_every_release_unlabelled():
    def run_at(i, number):
        if i == 0:
            return Run(release="0", number=number, status="hung", error="hangs past 120 s")
        return Run(release=str(i), number=number, status="ok", samples=(1.0,))

    placed, ends = place_every(3, run_at, noisy, noisy_metric=True, batch=5, max_runs=10,
                               reduce=every_sample)
    assert ends is None and placed[1] is None
    assert label_of(placed[0], ends) == "no figure"
    assert label_of(placed[2], ends) == "measured"  # the end that measured


def test_one_release_is_measured_once_a_run_and_not_placed():
    calls: list = []
    placed, ends = place_every(1, noisy_runner(["old"], 1, calls), noisy, noisy_metric=True,
                               batch=5, max_runs=10, reduce=every_sample)
    assert calls == [(0, k) for k in range(1, 6)] and ends is None
    assert label_of(placed[0], ends) == "measured"


def test_a_sweep_in_a_lab_of_recorded_documents_labels_every_release(recorded_catalogue,
                                                                      tmp_path, capsys):
    """sweep_case through a fake lab of documents recorded from real runs of
    remat_scan_memory: each release's file holds its recorded figure and label."""
    import argparse
    import json
    from pathlib import Path
    from types import SimpleNamespace

    from fake_lab import FakeLab, recorded, recorded_documents

    from jaxbisect.case_sweep import sweep_case

    case = Path(__file__).resolve().parents[1] / "repro" / "cases" / "remat_scan_memory.py"
    versions = ["0.4.35", "0.4.36", "0.4.37", "0.4.38", "0.5.0", "0.5.1"]
    args = argparse.Namespace(
        target=None, metric=None, case=str(case), param=[], over=None, xla_flags="", samples=None,
        metric_kind="auto", backend="cpu", reports=tmp_path / "reports",
        refresh_catalogue=False, runs=None, max_runs=None, remeasure=False, timeout=None,
        threshold=None, command="nox -s repro_range -- …", argv=[])
    lab = FakeLab(recorded(recorded_documents("remat_scan_memory-jax-*.json")))

    def select(catalogue, args, backend):
        return [SimpleNamespace(release=catalogue.get(v), skip=None) for v in versions]

    assert sweep_case(args, lambda m: None, select, lab) == 0
    folder = tmp_path / "reports" / "remat_scan_memory-memory"
    docs = {v: json.loads((folder / f"jax-{v}-cpu.json").read_text()) for v in versions}
    assert {v: d["label"] for v, d in docs.items()} == {
        **{v: "old" for v in versions[:-1]}, "0.5.1": "new"}
    assert docs["0.5.0"]["runs"][0]["samples"] == [84802880]
    assert docs["0.5.1"]["runs"][0]["samples"] == [441208256]
    assert sorted(lab.versions_asked) == sorted(versions)
