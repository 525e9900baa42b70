"""The report's "Why" section, rendered from a recorded explanation document (a memory
bisection whose flag restores the old figure one way only, issue 25's figures)."""

from __future__ import annotations

import json
from pathlib import Path

from jaxbisect.evidence.explain import difference_sentence
from jaxbisect.report.markdown.sections import why_lines as section_lines

RECORDED = Path(__file__).parent / "data" / "explanation-thunk-runtime.json"


def why_lines(explanation: dict, metric: str, unit: str) -> list[str]:
    """The section as a CPU bisection's document renders it."""
    return section_lines({"explanation": explanation, "metric": {"name": metric, "unit": unit},
                          "backend": "cpu", "target": None})


def table_rows(lines: list[str], summary: str) -> list[list[str]]:
    """The rows of the github table under ``<summary>summary</summary>``."""
    lines = "\n".join(lines).splitlines()
    start = next(i for i, line in enumerate(lines) if f"<summary>{summary}</summary>" in line)
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("</details>"):
            break
        if line.startswith("|") and not set(line) <= set("|-: "):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[1:]  # less the header


def test_a_one_way_flag_is_named_as_a_workaround_with_its_figure_and_why_not_both_ways():
    explanation = json.loads(RECORDED.read_text())
    lines = why_lines(explanation, "memory", "bytes")
    text = "\n".join(lines)
    assert "No XLA flag explains it:" not in text  # the old report's hiding sentence
    bullets = [line for line in lines if line.startswith("- **Workaround:**")]
    assert len(bullets) == 1
    (bullet,) = bullets
    for part in ("`--xla_cpu_use_thunk_runtime=false`", "jax 0.4.33", "35.13 MiB",
                 "could not be tested", "UNIMPLEMENTED: Custom call target __onednn$matmul",
                 "jax 0.4.31"):
        assert part in bullet
    flags = table_rows(lines, "Every flag setting measured")
    assert flags[0][:4] == ["0.4.33", "`--xla_cpu_use_thunk_runtime=false`", "old", "35.13 MiB"]
    assert flags[1][:3] == ["0.4.31", "`--xla_cpu_use_thunk_runtime=true`", "skip"]
    assert flags[1][4].startswith("UNIMPLEMENTED")
    passes = table_rows(lines, "Every HLO pass turned off")
    assert [row[1] for row in passes] == ["`--xla_disable_hlo_passes=copy-insertion`"]


def test_a_much_slower_pass_is_a_finding_in_the_table():
    explanation = {"culprit": {"kind": "none", "text": "no pass brings it back", "tests": [
        {"release": "0.5.3", "xla_flags": "--xla_disable_hlo_passes=copy-insertion",
         "behaviour": "much slower", "figure": None, "error": "a run went past 30 s",
         "finding": "makes the case much slower: this pass matters"}]}}
    rows = table_rows(why_lines(explanation, "run_time", "s"), "Every HLO pass turned off")
    assert rows == [["0.5.3", "`--xla_disable_hlo_passes=copy-insertion`", "much slower", "–",
                     "makes the case much slower: this pass matters"]]


def test_a_difference_at_a_pipeline_start_does_not_contradict_identical_lowering():
    at_start = difference_sentence({"status": "differ", "pass": "pipeline-start",
                                    "pipeline": "cpu-compile"})
    assert "already differ as pipeline `cpu-compile` starts" in at_start
    assert "after `pipeline-start`" not in at_start
    later = difference_sentence({"status": "differ", "pass": "copy-insertion",
                                 "pipeline": "cpu-compile"})
    assert "first differ after `copy-insertion`" in later
    assert difference_sentence({"status": "same"}) == ""
