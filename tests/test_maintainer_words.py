"""The reports' words as a JAX maintainer reads them: no search jargon ("probe", "classifier"),
counts that read right for one, the commits named, and a compiler's error never called a
Python exception raised before XLA has a module."""

from __future__ import annotations

import json
from pathlib import Path

from jaxbisect.evidence.explain import none_brought_words
from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.commits import commits_measured, newer_words
from jaxbisect.report.markdown.sections import compiler_error, python_error, said_of

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def _doc(name: str) -> dict:
    return json.loads((REPORTS / name).read_text())


def test_no_search_jargon_reaches_a_page():
    for name in ("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json",
                 "bisect-0.5.0-0.5.1-cpu-scan_growth-memory-e4b85d1c.json",
                 "bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json"):
        text = render(_doc(name))
        for word in ("classifier", "probes:", " probes,", "JSON document", "measured its probes"):
            assert word not in text, (name, word)
    assert commits_measured(2) == "2 commits measured" and commits_measured(1).endswith(
        "1 commit measured")


def test_the_newer_jaxlibs_half_names_the_commits_it_measured():
    doc = _doc("bisect-0.5.0-0.5.1-cpu-scan_growth-memory-e4b85d1c.json")
    c = doc["commits"]
    unseen = ((c.get("inside") or {}).get("newer") or {}).get("commits")
    assert unseen  # the data that needs the words: commits between the ends not measured
    said = newer_words(c)
    assert "the range's first and last jax commits that run on jaxlib" in said
    assert f"the {unseen} between them were not measured" in said
    assert "not looked at" not in render(doc)


def test_one_changed_default_is_said_as_one_and_pairs_only_where_measured():
    one = none_brought_words(1, "A6000", paired=False)
    assert one == "the one changed default that can matter on A6000, set back, does not bring"
    assert "(or in pairs)" in none_brought_words(3, "A6000", paired=True)
    assert "(or in pairs)" not in none_brought_words(12, "A6000", paired=False)
    doc = _doc("bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json")
    flags = doc["explanation"]["culprit"]["flags"]
    assert len(flags["flag_defaults_changed"]) == 1 and "(or in pairs)" not in flags["text"]
    # a record of an older pipeline said it so: its page says today's words
    flags["text"] = ("No XLA flag explains it: none of the 1 changed defaults that can matter "
                     "on A6000, compiled without the GPU, set back one at a time (or in pairs), "
                     "brings jax 0.12.0's memory back to jax 0.11.2's.")
    said = said_of(flags)
    assert "the one changed default that can matter on A6000" in said
    assert "(or in pairs)" not in said and "none of the 1 " not in said
    assert "none of the 1 changed" not in render(doc)


def test_a_mosaic_error_is_never_called_a_python_exception_before_xla():
    doc = _doc("cases/bisect-0.7.0-0.7.2-v5e-pallas_bf16_batched_matvec-error.json")
    assert compiler_error(doc) == "MosaicError" and not python_error(doc)
    text = render(doc)
    assert "raised before XLA has a module" not in text
    # jax 0.7.1 in between gave no figure: no commit search is offered over a gap
    where = text.split("## Where the change is", 1)[1]
    assert "not consecutive" in where and " --commits" not in where
    consecutive = render({**doc, "unplaced_between": []})
    assert "(`MosaicError`) is raised while compiling the kernel" in consecutive
    assert " --commits" in consecutive.split("## Where the change is", 1)[1]


def test_the_sweep_label_line_says_each_label_shown_as_label_equals_meaning():
    from jaxbisect.report import sweep_summary
    line = sweep_summary.LABEL_LINE
    assert "beside the oldest and the newest release swept together" not in line
    for folder in ("a6000", "repro"):
        rows = [r for r in (REPORTS / folder / "README.md").read_text().splitlines()
                if r.startswith("| ") and not r.startswith("| jax")]
        header = next(r for r in (REPORTS / folder / "README.md").read_text().splitlines()
                      if r.startswith("| jax"))
        at = [c.strip() for c in header.split("|")].index("label")
        labels = {[c.strip() for c in r.split("|")][at] for r in rows}
        assert labels
        for label in labels:
            assert f"{label} = " in line, (folder, label)


def test_the_first_screen_names_the_end_commits_on_each_jaxlib_and_what_was_not_measured():
    doc = _doc("bisect-0.5.0-0.5.1-cpu-scan_growth-memory-e4b85d1c.json")
    inside = doc["commits"]["inside"]
    said = (f"(on jaxlib 0.5.0 the end commits behave as jax 0.5.0, on 0.5.1 as jax 0.5.1; "
            f"{inside['older']['commits']} and {inside['newer']['commits']} between them "
            f"unmeasured)")
    assert not inside["older"]["measured"] and not inside["newer"]["measured"]
    assert said in render(doc).split("\n## ", 1)[0]
