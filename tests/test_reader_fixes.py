"""What a fresh reader of the shipped reports found, each asserted on the document's data:
the part left to a GPU names the releases not measured; a release that needs a GPU to
compile is "not measured here", never "not installable"; ..."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from jaxbisect.report.document import skipped_reason
from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.answer import notes_lines

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def doc_of(name: str) -> dict:
    path = next(p for p in [*REPORTS.glob("*.json"), *(REPORTS / "cases").glob("*.json")]
                if p.name == name)
    return json.loads(path.read_text())


A6000 = "bisect-0.4.20-0.5.0-a6000-scan_growth-memory.json"


def test_the_gpu_part_names_the_releases_not_measured_and_its_measured_end():
    doc = doc_of(A6000)
    first = doc["measured_part"][0]
    (part,) = doc["needs_a_gpu"]
    assert part["to"] == first  # the command ends at the first end measured here
    left = sorted((s["jax"] for s in doc["skipped"] if s["jax"] < first), key=lambda v:
                  tuple(map(int, v.split("."))))
    (line,) = [x for x in notes_lines(doc) if x.startswith("**Measured part")]
    assert f"jax {left[0]} … {left[-1]} were not measured here" in line
    assert f"… {first} needs" not in line and f"… {first} were" not in line
    assert f"(with {first} as the end measured here)" in line


def test_a_release_that_needs_a_gpu_to_compile_is_not_measured_never_not_installable():
    assert skipped_reason("needs a real GPU: jax 0.4.36 and 0.4.37 cannot compile without "
                          "one").startswith("not measured here: needs a real GPU")
    assert skipped_reason("no wheel for this Python").startswith("not installable here")
    doc = doc_of(A6000)
    for s in doc["skipped"]:  # as a document written before said it
        s["reason"] = s["reason"].replace("not measured here: needs a real GPU",
                                          "not installable here: needs a real GPU")
    assert any(s["reason"].startswith("not installable here: needs a real GPU")
               for s in doc["skipped"])
    markdown = render(doc)
    assert "not installable here" not in markdown
    assert "not measured here: needs a real GPU" in markdown


def test_a_headline_says_where_each_output_value_came_from():
    """The search's runs agree at jax 0.6.2; the standalone program's two runs do not: each
    value is said with its source, never one list "differs between runs: a; b"."""
    from jaxbisect.report.markdown.answer import first_screen

    doc = doc_of("bisect-0.6.0-0.6.2-cpu-exp_nan_under_jit-output.json")
    new = doc["first_new"]["jax"]
    probe = next(p for p in doc["probes"] if p["jax"] == new)
    (end,) = [e for e in doc["reproducer"]["ends"] if e["jax"] == new]
    assert len(set(end["outputs"])) == 2
    values = [float(re.search(r"\[([^][]*)\]\s*$", o)[1]) for o in end["outputs"]]
    printed = " and ".join(f"{v:.3g}" for v in values)
    # the record: the search's runs differ too, said once, in the figure
    searched = [v for r in probe["runs"] for s in r["samples"] for v in s["values"]]
    assert len(set(searched)) == 2
    head = "\n".join(first_screen(doc))
    assert f"at jax {new} in the bisection's {len(probe['runs'])} runs" in head
    assert head.count("differs between runs:") == 1 and "it differs between them" not in head
    # had the search's runs agreed: each value said with where it came from
    agreed = copy.deepcopy(doc)
    at = next(p for p in agreed["probes"] if p["jax"] == new)
    for r in at["runs"]:
        for sample in r["samples"]:
            sample["values"] = [searched[0]]
    at["figure"] = {**at["figure"], "values": [searched[0]]}
    at["figure"].pop("nondeterministic", None)
    head = "\n".join(first_screen(agreed))
    assert f"the program below printed {printed} in two runs" in head, head


def test_a_program_that_measures_a_runs_peak_says_its_runs_are_its_own():
    from jaxbisect.report.markdown.reproduce import reproduce_block

    doc = doc_of("bisect-0.4.20-0.5.0-cpu-scan_growth-memory.json")
    assert doc["reproducer"]["quantity"] == "peak"
    (line,) = [x for x in reproduce_block(doc) if x.startswith("Reproduce:")]
    assert "its own runs" in line and "moves a few percent from run to run" in line
    assert "Linux only: it reads /proc" in line and "/proc/" in doc["reproducer"]["program"]
    other = doc_of("bisect-0.6.0-0.6.2-cpu-exp_nan_under_jit-output.json")
    assert other["reproducer"].get("quantity") != "peak"
    assert not any("moves a few percent" in x or "Linux only" in x
                   for x in reproduce_block(other))


def test_a_table_note_is_cut_at_a_word_and_a_reason_keeps_its_first_clause():
    from jaxbisect.report.markdown.tables import probe_rows
    from jaxbisect.report.markdown.words import clause_cut, cut

    text = "the quick brown fox jumps over the lazy dog"
    assert cut(text, 20) == "the quick brown fox…"
    assert all(cut(text, n).removesuffix("…").split()[-1] in text.split()
               for n in range(12, len(text)))  # never half a word
    assert cut(text, len(text)) == text
    doc = doc_of("bisect-0.7.0-0.7.2-v5e-pallas_bf16_batched_matvec-error.json")
    reason = next(p["reason"] for p in doc["probes"] if p["jax"] == "0.7.1")
    first = reason.split("; ")[0]
    assert len(reason) > 160 and len(first) > 160  # a cut at 160 would fall mid-sentence
    _, rows = probe_rows(doc)
    (note,) = [r[-1] for r in rows if r[0] == "0.7.1"]
    assert note == first + "; …" == clause_cut(reason, 160)
    assert "wh…" not in note


def test_a_column_empty_in_every_row_is_dropped():
    from jaxbisect.report.markdown.tables import probe_rows
    from jaxbisect.report.markdown.words import table

    explain = doc_of(next(p.name for p in REPORTS.glob("explain-0.5.1-cpu-*.json")))
    tests = explain["explanation"]["tests"]
    assert tests and all(t.get("ratio") is None for t in tests)  # no ratio in any row
    markdown = render(explain)
    assert "| pass turned off" in markdown and "ratio to the baseline" not in markdown
    doc = doc_of("bisect-0.4.20-0.5.0-cpu-scan_growth-memory.json")
    assert not any("15" in map(str, (p.get("series") or {}).get("figures") or {})
                   for p in doc["probes"])  # no release has a figure at n_outer=15
    headers, rows = probe_rows(doc)
    assert "n_outer=15 (MiB)" not in headers and "n_outer=10 (MiB)" in headers
    assert all(len(r) == len(headers) for r in rows)
    assert "b" not in table(["a", "b"], [["1", ""], ["2", None]]).splitlines()[0]
    assert "b" in table(["a", "b"], [["1", ""], ["2", "x"]]).splitlines()[0]


def test_an_error_headline_says_what_the_program_raises():
    from jaxbisect.report.markdown.answer import answer_line

    doc = doc_of("bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json")
    assert doc["metric"]["name"] == "error" and doc["status"] == "alike"
    line = answer_line(doc)
    name = doc["case"]["name"]
    assert f"{name} raises no error at both ends" in line, line
    assert f"error of {name} is" not in line
    (inside,) = [r["jax"] for r in doc["interior"] if r["label"] != "old"]
    assert f"jax {inside} raises TypeError: " in line


def test_the_ends_are_said_plainly_in_rows_and_reproduce_lines():
    from jaxbisect.report.markdown.tables import probe_rows

    doc = doc_of("bisect-0.4.20-0.5.0-cpu-scan_growth-memory.json")
    first, last = doc["measured_part"]
    _, rows = probe_rows(doc)
    labels = {r[0]: r[2] for r in rows}
    assert labels[first] == "oldest release measured"
    assert labels[last] == "newest release measured"
    assert {e["role"] for e in doc["reproducer"]["ends"]} == {"first end", "last end"}
    markdown = render(doc)
    assert f"# jax {first}, oldest release measured" in markdown
    assert "first end" not in markdown and "last end\n" not in markdown
    assert f"behave as jax {first} and {last}." in markdown
