"""The minimizer's search against an oracle, and the minimal program's source."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.lab import backends
from jaxbisect.stages.minimize import Trial, shrink, with_defaults

CPU = backends.get("cpu")


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), st.tuples(st.integers(1, 300),
                                                          st.integers(0, 300)), min_size=1))
def test_a_monotone_change_shrinks_to_its_thresholds(spec):
    """The change shows iff every parameter is at least its threshold: each parameter ends at
    exactly max(threshold, floor), never above where it started, each set tested once."""
    start = {name: max(start, need) for name, (need, start) in spec.items()}
    need = {name: n for name, (n, _) in spec.items()}
    calls = []

    def test(params):
        calls.append(tuple(sorted(params.items())))
        return Trial(params, all(params[k] >= need[k] for k in need))

    result = shrink(start, sorted(spec), test)
    assert result.complete
    assert result.params == {k: max(1, need[k]) for k in spec}
    assert all(result.params[k] <= start[k] for k in spec)
    assert len(calls) == len(set(calls))
    assert test(result.params).kept


@given(st.integers(1, 10**6))
def test_fixed_and_unnamed_parameters_never_move(value):
    result = shrink({"n": value, "keep": 7}, ["n"], lambda p: Trial(p, True))
    assert result.params == {"n": 1, "keep": 7}


def test_a_budget_stops_it_with_what_it_has():
    ticks = iter(range(1000))
    result = shrink({"n": 1024}, ["n"], lambda p: Trial(p, True),
                    spent=lambda: next(ticks) >= 3)
    assert not result.complete and 1 < result.params["n"] < 1024


def test_the_minimal_program_changes_only_the_defaults():
    source = ('"""Doc."""\nimport jax\n\n\ndef case(n_outer=10, n_res=200, name="é", *, k=3):\n'
              '    return n_outer\n')
    out = with_defaults(source, {"n_outer": 2, "n_res": 8, "k": 1})
    assert out.splitlines()[4] == 'def case(n_outer=2, n_res=8, name="é", *, k=1):'
    assert out.splitlines()[:4] == source.splitlines()[:4]
    ast.parse(out)


def test_minimize_runs_both_releases_in_the_lab_until_the_thresholds(recorded_catalogue):
    """The minimizer (minimize.py) through a fake lab whose new release grows only from
    rows 37 and block_size 4 up: it settles there, asks the lab only for both releases at
    each trial's parameters, and never moves the case's FIXED num_blocks."""
    from pathlib import Path

    from fake_lab import FakeLab

    from jaxbisect.search.question import Run, question_from
    from jaxbisect.stages.minimize import minimize

    case = Path(__file__).resolve().parents[1] / "repro" / "cases" / "remat_scan_memory.py"
    question = question_from("memory", str(case), [], ())
    asked = []

    def answer(version, asked_question, number):
        p = asked_question.case.resolve(asked_question.params)
        asked.append((version, p))
        grows = version == "0.5.1" and p["rows"] >= 37 and p["block_size"] >= 4
        figure = 8 * p["rows"] * p["cols"] * (5 if grows else 1)
        return Run(release=version, number=number, status="ok", samples=(figure,))

    old, new = recorded_catalogue.get("0.5.0"), recorded_catalogue.get("0.5.1")
    shrunk, first, names = minimize(old, new, CPU, question, FakeLab(answer), lambda m: None)
    assert first.kept and shrunk.complete and names == ["rows", "cols", "block_size"]
    assert shrunk.params == {"rows": 37, "cols": 1, "block_size": 4, "num_blocks": 10}
    trials = [params for _, params in asked]
    assert all(p["num_blocks"] == 10 for p in trials)
    assert [v for v, _ in asked] == ["0.5.0", "0.5.1"] * (len(shrunk.trials) + 1)


def test_a_shape_keeps_each_sides_own_word_while_it_shrinks(recorded_catalogue):
    """The scan case by its shape: below n_res 8 (a fake lab's threshold) both releases
    "grow" at rates far apart. Apart, yet not the change (constant → grows): the minimizer
    stops at n_res 8."""
    from fake_lab import FakeLab

    from jaxbisect.search.question import Run, question_from
    from jaxbisect.stages.minimize import minimize
    from repro.case import SCAN_CASE

    question = question_from(None, str(SCAN_CASE), ["n_inner=4", "n_res=40"], ())

    def answer(version, asked, number):
        p = asked.case.resolve(asked.params)
        if p["n_res"] < 8:  # overhead dominates: both grow, 3x apart
            shape = ["grows", 8.0 if version == "0.5.0" else 24.0]
        else:
            shape = ["constant", 0.0] if version == "0.5.0" else ["grows", 1.0]
        return Run(release=version, number=number, status="ok", samples=(shape,))

    old, new = recorded_catalogue.get("0.5.0"), recorded_catalogue.get("0.5.1")
    shrunk, first, _ = minimize(old, new, CPU, question, FakeLab(answer), lambda m: None)
    assert first.kept and shrunk.params["n_res"] == 8 and shrunk.params["n_inner"] == 1
    assert all(t.kept == (t.params["n_res"] >= 8) for t in shrunk.trials)
