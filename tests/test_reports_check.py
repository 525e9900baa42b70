"""``nox -s reports_check``'s judgement, on the shipped reports' own programs and outputs: a
timing passes nearer the ratio the headline shows than no change (its square root or more),
an error or an output that does not change fails, a report compiled for a GPU is said to be
unchecked (nothing is run)."""

from __future__ import annotations

import json
from pathlib import Path

from jaxbisect.report.markdown.reproduce import shown_program
from jaxbisect.stages.program_runs import ProgramRun
from jaxbisect.tools.reports_check import check_report, differs_as_said, program_of

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def shipped(name: str) -> dict:
    return json.loads(next(REPORTS.rglob(name)).read_text())


def run(jax: str, output: str, exit: int = 0) -> ProgramRun:
    return ProgramRun(jax, 1, output, exit, {})


def test_a_timing_passes_only_nearer_the_headline_ratio_than_no_change():
    doc = shipped("bisect-0.4.30-0.4.33-cpu-while_loop_cpu_slowdown-run_time.json")
    shown = shown_program(doc)
    program, (old, new) = program_of(doc, shown), shown["ends"]
    medians = [next(p["figure"]["median"] for p in doc["probes"] if p["jax"] == e["jax"])
               for e in (old, new)]  # the headline's 0.164 ms → 40.346 ms
    half = (medians[1] / medians[0]) ** 0.5  # log-halfway between no change and the headline
    fast = run("0.4.31", "run_time: 1.000 ms (median of 100 calls)")
    for ratio, ok in ((half * 1.05, True), (half * 0.95, False), (1.0, False)):
        slow = run("0.4.33", f"run_time: {ratio:.3f} ms (median of 5 calls)")
        got = differs_as_said(doc, program, "came", old, new, fast, slow)
        assert got[0] is ok and abs(got[3] - half) < 1e-9


def test_an_error_or_an_output_that_does_not_change_fails():
    doc = shipped("bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json")
    shown = shown_program(doc)
    program = program_of(doc, shown)
    came = [e for e in shown["ends"] if e["jax"] in ("0.4.35", "0.4.36")]
    raised = "TypeError: result_paths() got multiple values for argument 'f'"
    assert differs_as_said(doc, program, "came", *came, run("0.4.35", "no error"),
                           run("0.4.36", raised, 1))[0]
    assert not differs_as_said(doc, program, "came", *came, run("0.4.35", "no error"),
                               run("0.4.36", "no error"))[0]
    nan = shipped("bisect-0.6.0-0.7.0-cpu-exp_nan_under_jit-output.json")
    shown = shown_program(nan)
    program = program_of(nan, shown)
    assert differs_as_said(nan, program, "came", *shown["ends"][:2], run("0.6.1", "nan"),
                           run("0.6.2", "6.9e-310"))[0]
    assert not differs_as_said(nan, program, "came", *shown["ends"][:2], run("0.6.1", "nan"),
                               run("0.6.2", "nan"))[0]


def test_a_shape_that_does_not_move_fails():
    doc = shipped("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    shown = shown_program(doc)
    program = program_of(doc, shown)
    assert program.over == ("n_outer", (2, 5))
    flat = "n_outer=2: 25.25 MiB\nn_outer=5: 25.25 MiB"
    grows = "n_outer=2: 25.25 MiB\nn_outer=5: 62.75 MiB"
    ends = shown["ends"]
    assert differs_as_said(doc, program, "came", *ends, run("0.5.0", flat), run("0.5.1", grows))[0]
    assert not differs_as_said(doc, program, "came", *ends, run("0.5.0", flat),
                               run("0.5.1", flat))[0]
    assert not differs_as_said(doc, program, "came", *ends, run("0.5.0", grows),
                               run("0.5.1", flat))[0]  # a fix is not the regression said


def test_a_report_compiled_for_a_gpu_is_said_unchecked_and_nothing_runs():
    path = next(REPORTS.glob("bisect-0.10.2-0.12.0.1-a6000-*.json"))
    checked = check_report(path, say=lambda _: None)
    assert [c.result for c in checked] == ["cannot check"]
    assert "needs that GPU" in checked[0].why


def test_an_output_whose_shape_alone_changes_differs():
    """The same values in another shape, dtype or structure is a change (jax#-style: a
    vector that became a column)."""
    doc = shipped("bisect-0.9.2-0.10.2-cpu-vmap_matvec_wrong_result-output.json")
    shown = shown_program(doc)
    program = program_of(doc, shown)
    ends = shown["ends"]
    assert differs_as_said(doc, program, "came", *ends, run("0.10.1", "[0, 1, 2]"),
                           run("0.10.2", "[[0], [1], [2]]"))[0]
    assert not differs_as_said(doc, program, "came", *ends, run("0.10.1", "[0, 1, 2]"),
                               run("0.10.2", "[0, 1, 2]"))[0]


def test_a_nondeterministic_end_agrees_by_form_never_by_luck():
    """jax 0.6.2's exp(x * nan) prints uninitialised memory: a value of the recorded form
    agrees, whatever the value; a deterministic end's output must be the recorded one."""
    from jaxbisect.tools.reports_check import agrees

    recorded = ["output: float64[] [5.562692138966e-310]"]
    other = "output: float64[] [4.6484649431329e-310]"
    assert agrees("output", False, recorded, other, varies=True)[0]
    assert not agrees("output", False, recorded, other)[0]
    assert not agrees("output", False, recorded, "output: float64[3] [1.0, 2.0, 3.0]",
                      varies=True)[0]
    assert agrees("memory", False, ["n_outer=2: 25.25 MiB"], "n_outer=2: 25.25 MiB")[0]
    assert not agrees("memory", False, ["n_outer=2: 25.25 MiB"], "n_outer=2: 25.27 MiB")[0]
    assert agrees("memory", True, ["n_outer=2: 25.25 MiB, a run's peak"],
                  "n_outer=2: 24.00 MiB, a run's peak")[0]
    assert agrees("error", False, ["TypeError: x"], "TypeError: x")[0]
    assert not agrees("error", False, ["TypeError: x"], "no error")[0]


def test_an_error_recorded_as_its_first_line_agrees_with_the_whole_message():
    """A record that kept an error's first line, and a program that prints the whole message
    (Mosaic's quote of the operation and its bug link after it): the same error; another
    error's words are not."""
    from jaxbisect.tools.reports_check import agrees

    first = ("MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: Only 32-bit types "
             "supported")
    whole = first + ('\n\nThe MLIR operation involved:\n  %10 = "vector.extract"(%9)\n\n'
                     "Please report a bug at: https://github.com/google/jax/issues/new")
    assert agrees("error", False, [first], whole)[0]
    assert not agrees("error", False, [first], whole.replace("32-bit", "16-bit"))[0]


def test_a_wrong_end_agrees_with_another_wrong_value_never_with_the_right_one():
    """vmap_matvec_wrong_result (EXPECT 268435456.0; jax 0.10.2 wrong): another machine's
    wrong value agrees with the report's claim; the expected value, or the right end's, does
    not."""
    from jaxbisect.tools.reports_check import wrong_as_said

    doc = json.loads((Path(__file__).resolve().parent.parent / "reports" / "cases" /
                      "bisect-0.9.2-0.10.2-cpu-vmap_matvec_wrong_result-output.json").read_text())
    assert wrong_as_said(doc, "0.10.2", "output: float64[] [267911424.0]")
    assert not wrong_as_said(doc, "0.10.2", "output: float64[] [268435456.0]")
    assert not wrong_as_said(doc, "0.10.1", "output: float64[] [267911424.0]")
    assert not wrong_as_said({**doc, "case": {**doc["case"], "expect": None}}, "0.10.2",
                             "output: float64[] [267911424.0]")


def test_a_bundle_run_is_never_skipped_unsaid(tmp_path):
    """Each ``compile_hlo.py`` line of a bundle README is run in the venv its line makes,
    whatever Python names it; one whose venv no line makes is a finding, and one that needs
    the CUDA wheels is said so (nothing installed)."""
    from jaxbisect.tools.reports_check import check_bundle

    readme = tmp_path / "b-hlo" / "README.md"
    readme.parent.mkdir()
    readme.write_text("\n".join([
        "```sh",
        "python3.12 -m venv new && new/bin/pip install 'jax[cuda12]==0.12.0' jaxlib==0.12.0 "
        "jax-cuda12-plugin==0.12.0",
        "new/bin/python compile_hlo.py module.pb --target a6000   # jax 0.12.0: 1.00 MiB",
        "old/bin/python compile_hlo.py module.pb   # jax 0.11.2: 2.00 MiB",
        "```", ""]))
    lines = check_bundle(readme, lambda _: None)
    assert [(x.jax, x.result) for x in lines] == [("0.12.0", "needs an accelerator"),
                                                  ("0.11.2", "differs")]
    assert "no line makes the venv old" in lines[1].why


def test_a_first_screen_run_outside_the_venv_its_line_makes_is_a_finding():
    """Each release of a shipped first screen runs in the venv its own line makes; a bare
    ``pip install`` (the active environment), or a run in another venv, is named."""
    from jaxbisect.tools.reports_check import unmade_runs

    pages = [p for p in REPORTS.rglob("*.md") if p.name.startswith(("bisect-", "explain-"))]
    assert pages and not {p.name: u for p in pages if (u := unmade_runs(p.read_text()))}
    made = ("python3.11 -m venv a && a/bin/pip install jax==0.5.0 jaxlib==0.5.0\n"
            "a/bin/python repro.py   # prints: 1\n")
    assert unmade_runs(made) == {}
    assert unmade_runs("pip install jax==0.5.0 jaxlib==0.5.0\npython repro.py\n") == \
        {"0.5.0": "its install line makes no venv"}
    other = made.replace("a/bin/python repro.py", "b/bin/python repro.py")
    assert "not the venv a" in unmade_runs(other)["0.5.0"]
