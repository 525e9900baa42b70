"""A metric bisection's report with a fake lab's runs over the recorded catalogue: the releases
where the program raised (and the --metric error command), an end that measured is not a
skip, the run's derived time limit in the JSON, and where the Reproduce lines find the case."""

from __future__ import annotations

import shlex
from pathlib import Path

from fake_lab import FakeLab, scripted

from jaxbisect.report.document import document
from jaxbisect.report.markdown import render
from jaxbisect.search.question import Question
from jaxbisect.stages.releases import MetricRequest, bisect_metric
from repro.case import read_case

REPO = Path(__file__).resolve().parent.parent
SHIPPED = REPO / "repro" / "cases" / "while_loop_cpu_slowdown.py"
CASE = '''import jax, jax.numpy as jnp
METRIC = "memory"
def case(n=4):
    return jax.jit(lambda x: x * 2), (jnp.ones(n),)
'''


def bisected(catalogue, case_path, figures: dict, metric="memory"):
    """The bisection of 0.4.30 … 0.4.35 with each release's run from ``figures``: a number,
    or an error text (the program raised)."""
    question = Question(metric=metric, case=read_case(str(case_path)))
    request = MetricRequest(start="0.4.30", end="0.4.35", backend="cpu", question=question)
    lab = FakeLab(scripted(lambda version, number: figures[version], seconds=2.0))
    b = bisect_metric(catalogue, request, lab, lambda m: None)
    return b, b.candidates


def test_releases_that_raised_are_named_with_the_error_metric_command(recorded_catalogue,
                                                                       tmp_path):
    (tmp_path / "mine.py").write_text(CASE)
    names = ["0.4.30", "0.4.31", "0.4.33", "0.4.34", "0.4.35"]
    figures = dict(zip(names, [100.0, "UNIMPLEMENTED: Custom call target __onednn$matmul",
                               300.0, 300.0, 300.0]))
    b, candidates = bisected(recorded_catalogue, tmp_path / "mine.py", figures)
    assert [str(c.version) for c in candidates] == names
    doc = document(b, None)
    assert doc["status"] == "found"
    assert doc["raised"] == [{"jax": "0.4.31", "error": figures["0.4.31"]}]
    markdown = render(document(b, None))
    line = next(x for x in markdown.splitlines() if x.startswith("**The program raised**"))
    command = shlex.split(line.split("`")[1])
    assert command[command.index("--metric") + 1] == "error"
    # the derived limit: the ends' first runs took 2 s each
    assert doc["time_limit"]["explicit"] is False and doc["time_limit"]["seconds"] == 60.0
    # a case outside the toolkit's clone: named by its file name, to be saved from the report
    assert doc["case"]["path"] == "mine.py"
    assert "--case mine.py" in doc["reproduce"]
    assert "save the program below" in markdown


def test_an_end_that_measured_is_not_a_skip(recorded_catalogue):
    names = ["0.4.30", "0.4.31", "0.4.33", "0.4.34", "0.4.35"]
    figures = dict(zip(names, ["ValueError: no such size", 1.0, 1.0, 1.0, 5.0]))
    b, _ = bisected(recorded_catalogue, SHIPPED, figures, metric="memory")
    doc = document(b, None)
    assert doc["status"] == "unmeasurable"
    labels = {p["jax"]: p["label"] for p in doc["probes"]}
    assert labels == {"0.4.30": "no figure", "0.4.35": "measured"}
    assert doc["raised"] == [{"jax": "0.4.30", "error": "ValueError: no such size"}]
    # a shipped case: named by its path inside the clone, nothing to save
    assert doc["case"]["path"] == "repro/cases/while_loop_cpu_slowdown.py"
    assert "save the program below" not in render(document(b, None))


def test_the_probes_line_counts_the_runs_read_back_from_the_store(recorded_catalogue):
    from dataclasses import replace

    from jaxbisect.report.terminal import probes_line

    names = ["0.4.30", "0.4.31", "0.4.33", "0.4.34", "0.4.35"]
    b, _ = bisected(recorded_catalogue, SHIPPED, dict(zip(names, [1.0, 1.0, 5.0, 5.0, 5.0])))
    placed = {i: replace(p, runs=tuple(replace(r, cached=i == 0) for r in p.runs))
              for i, p in b.search.placed.items()}  # a resume: the old end was stored
    resumed = replace(b, search=replace(b.search, placed=placed))
    total = sum(len(p.runs) for p in placed.values())
    assert probes_line(resumed).endswith(f"runs: {total}, 1 of them stored from an earlier run")


def test_minimize_prints_the_minimal_parameters():
    from jaxbisect.report.terminal import minimal_line

    line = minimal_line({"kept_at_start": True, "params": {"steps": 2048, "n": 3},
                         "metric": "run_time", "old_value": 0.01, "new_value": 0.0004,
                         "old": "0.5.2", "new": "0.5.3", "complete": True})
    assert line == ("minimal: --param steps=2048 --param n=3 (run_time 0.01 at jax 0.5.2, "
                    "0.0004 at jax 0.5.3)")
    assert "nothing shrunk" in minimal_line({"kept_at_start": False})
