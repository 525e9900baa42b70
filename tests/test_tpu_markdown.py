"""The TPU parts of a report (jaxbisect/report/markdown/tpu.py), rendered from the document's
``libtpu`` part as the stage writes it (the recorded swaps of tests/test_libtpu_stage.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fake_lab import FakeLab
from test_libtpu_stage import PYPI_LIBTPU, answered, found_pair, held

from jaxbisect.report.markdown.tpu import (
    SECTION,
    commits_words,
    error_words,
    first_screen_line,
    section,
)
from jaxbisect.report.markdown.words import words_now
from jaxbisect.stages.libtpu import libtpu_part


def part_for(catalogue, name, case, old, new, pins):
    lab = FakeLab(answered(held(name)))
    b = found_pair(catalogue, case, old, new, lab)
    return libtpu_part(b, lab, lambda m: None, libtpu_of=lambda r: pins[str(r.version)],
                       listed=lambda: PYPI_LIBTPU)


def test_a_libtpu_change_names_the_first_libtpu_with_its_exact_install_line(
        recorded_catalogue):
    doc = {"libtpu": part_for(recorded_catalogue, "pallas_bf16_batched_matvec",
                              "pallas_bf16_batched_matvec.py", "0.8.3", "0.9.0",
                              {"0.8.3": "0.0.32.1", "0.9.0": "0.0.34"})}
    line = first_screen_line(doc)
    # its lines are the section's (a venv each), named from the first screen: no bare pip
    assert "came with libtpu 0.0.33" in line and "pip install" not in line
    assert f"*{SECTION}*" in line
    body = "\n".join(section(doc))
    assert f"### {SECTION}" in body
    assert ("python3.11 -m venv libtpu-0.0.33 && libtpu-0.0.33/bin/pip install jax==0.8.3 "
            "jaxlib==0.8.3 libtpu==0.0.33") in body
    assert "libtpu==0.0.32.1\nlibtpu-0.0.32.1/bin/python repro.py   # behaves as before" in body
    assert not re.search(r"\bGPU\b", line + body)
    assert re.search(r"libtpu==0\.0\.32(?![.\d])", body) is None  # never a prefix


def test_a_change_that_needs_both_says_so(recorded_catalogue):
    doc = {"libtpu": part_for(recorded_catalogue, "pallas_vmem_limit", "pallas_vmem_limit.py",
                              "0.8.0", "0.8.1", {"0.8.0": "0.0.24", "0.8.1": "0.0.30"})}
    assert first_screen_line(doc).startswith("**Which part:** needs both")
    line = first_screen_line(doc)
    assert "libtpu 0.0.30 is the first release on PyPI that shows it, after 0.0.29" in line
    # the first libtpu that shows it is the first bad release's own: its install line is the
    # reproduce block's, not said twice; another libtpu's is
    assert "pip install" not in line
    other = json.loads(json.dumps(doc, default=str))
    other["libtpu"]["narrowed"]["first_new"] = "0.0.27"
    other["libtpu"]["narrowed"]["install"]["new"] = "jax==0.8.1 jaxlib==0.8.1 libtpu==0.0.27"
    assert f"(its lines: *{SECTION}*, below)" in first_screen_line(other)
    assert "libtpu==0.0.27" in "\n".join(section(other))
    assert "limit 32.00M" not in "\n".join(section(doc))  # neither swap failed
    assert first_screen_line({}) is None and section({}) == []


def test_an_error_figure_is_shown_by_its_core():
    figure = ("JaxRuntimeError: RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom:\nRan out "
              "of memory in memory space vmem while allocating on stack for %f.1 = "
              "f32[16384,1024]{1,0:T(8,128)} custom-call(%x.1), metadata={op_name=\"a\"}. "
              "Scoped allocation with size 64.00M and limit 32.00M exceeded scoped vmem limit "
              "by 32.00M.")
    words = error_words(figure)
    assert "size 64.00M and limit 32.00M" in words and "custom-call" not in words


def test_commits_for_a_tpu_target_follow_the_swaps():
    base = {"old": {"jax": "0.8.3", "jaxlib": "0.8.3", "libtpu": "0.0.32.1"},
            "new": {"jax": "0.9.0", "jaxlib": "0.9.0", "libtpu": "0.0.34"},
            "narrowed": {"first_new": "0.0.33"}, "jaxlib_commits": {"count": 7, "commits": []}}
    libtpu = {"libtpu": {**base, "part": "came with libtpu"},
              "commits": {"came_with": None}}
    assert "libtpu 0.0.33" in commits_words(libtpu) and "jaxlib" not in commits_words(
        libtpu).split("(")[0]
    both = {"libtpu": {**base, "part": "needs both"}, "commits": {"came_with": "jaxlib"}}
    assert commits_words(both).startswith("needs both") and "7 commits" in commits_words(both)
    jax = {"libtpu": {**base, "part": "came with jax/jaxlib"}, "commits": {"came_with": "jax"}}
    assert commits_words(jax) is None  # the first bad commit's own words stand
    assert commits_words({"commits": {"came_with": "jaxlib"}}) is None


SHIPPED_DOCS = sorted((Path(__file__).resolve().parent.parent / "reports").glob("**/bisect-*.json"))
# The shipped TPU documents with libtpu swaps (the tests below read only these: none is skipped).
SWAPPED = [p for p in SHIPPED_DOCS if (json.loads(p.read_text()).get("libtpu") or {}).get("swaps")]
IN_LIBTPU = [p for p in SWAPPED if json.loads(p.read_text())["libtpu"].get("part")
             == "came with libtpu" and json.loads(p.read_text()).get("commits")]
NO_FIGURE = [p for p in SWAPPED if any(w.get("figure") is None
                                       for w in json.loads(p.read_text())["libtpu"]["swaps"])]


def test_the_shipped_reports_hold_each_kind_these_tests_read():
    assert IN_LIBTPU and NO_FIGURE


@pytest.mark.parametrize("path", IN_LIBTPU, ids=lambda p: p.name)
def test_where_the_swaps_place_it_in_libtpu_no_section_says_jaxlib(path):
    doc = json.loads(path.read_text())
    part = doc["libtpu"]
    text = path.with_suffix(".md").read_text()
    assert "came with jaxlib" not in text.lower() and "came with the newer jaxlib" not in text
    libtpu = (part.get("narrowed") or {}).get("first_new") or part["new"]["libtpu"]
    section = text.split("## jax commits", 1)[1].split("\n## ", 1)[0]
    assert f"libtpu {libtpu}" in section and "No jax commit" in section
    # nor lists jaxlib's own commits as the place to look
    listed = [c for c in (part.get("jaxlib_commits") or {}).get("commits", ())
              if f"[{c['sha'][:10]}]({c['url']})" in text]
    assert not listed, listed


@pytest.mark.parametrize("path", NO_FIGURE, ids=lambda p: p.name)
def test_a_swap_that_gave_no_figure_is_said_from_its_record(path):
    doc = json.loads(path.read_text())
    swaps = [w for w in doc["libtpu"]["swaps"] if w.get("figure") is None]
    text = path.with_suffix(".md").read_text()
    screen = next(line for line in text.splitlines() if line.startswith("- **Which part:**"))
    for w in swaps:
        why = words_now(w["reason"].removeprefix("cannot tell here: "))  # as pages say it
        assert f"with libtpu {w['libtpu']} gave no figure: {why}" in screen
        row = next(line for line in text.splitlines()
                   if line.startswith(f"| {w['jax']} | {w['jaxlib']} | {w['libtpu']} |"))
        assert why.replace("|", "\\|") in row


def test_no_figure_is_said_with_the_swap_s_own_status():
    swap = {"jax": "0.7.0", "jaxlib": "0.7.0", "libtpu": "0.0.17", "figure": None,
            "seen": "no figure", "reason": None,
            "status": "Unsupported version: expected <= 4 but got 7"}
    doc = {"libtpu": {"part": "cannot tell", "reason": "no figure", "swaps": [swap],
                      "old": {"jax": "0.6.2", "jaxlib": "0.6.2", "libtpu": "0.0.17"},
                      "new": {"jax": "0.7.0", "jaxlib": "0.7.0", "libtpu": "0.0.19"}}}
    assert first_screen_line(doc) == (
        "**Which part:** cannot tell (jax 0.7.0 and jaxlib 0.7.0 with libtpu 0.0.17 gave no "
        "figure: Unsupported version: expected <= 4 but got 7).")
    assert "| no figure | Unsupported version: expected <= 4 but got 7 |" in "\n".join(
        section(doc))


def test_an_error_compiled_for_a_tpu_is_never_called_xlas_plan():
    """A plan is a memory figure; an error compiled for a TPU without its chip is said as
    compiled for it (title and headline), a memory report keeps "XLA's plan"."""
    from jaxbisect.report.markdown import render

    for path in SHIPPED_DOCS:
        doc = json.loads(path.read_text())
        if not str(doc.get("measured", "")).startswith("XLA's plan for a TPU"):
            continue
        head = "\n".join(render(doc).splitlines()[:3])
        if doc["metric"]["name"] == "memory":
            assert "XLA's plan for a TPU v5e" in head
        else:
            assert "XLA's plan" not in head and "compiled for a TPU v5e without one" in head


def test_the_three_parts_table_labels_the_pair_by_its_roles_not_the_range_s_ends():
    """The range's old end is 0.6.1; the table's first rows are the pair (0.6.2, 0.7.0), a
    fix's "last bad" and "first fixed", and each swap behaves as one of them."""
    import json
    from pathlib import Path

    path = (Path(__file__).resolve().parents[1] / "reports" / "cases"
            / "bisect-0.6.1-0.7.0-v5e-pallas_batched_dot_general-error.json")
    doc = json.loads(path.read_text())
    rows = [line for line in section(doc) if line.startswith("| 0.")]
    assert not any("the old end" in r or "the new end" in r for r in rows)
    assert rows[0].startswith(f"| {doc['last_old']['jax']} |")
    assert rows[0].endswith("| last bad, as measured | |")
    assert rows[1].endswith("| first fixed, as measured | |")
    seen = {r.split(" | ")[3] for r in rows[2:]}
    assert seen <= {"last bad", "first fixed", "no figure", "third"}, seen


def test_a_next_step_of_commits_says_where_mosaic_versions_will_give_no_figure():
    """A TPU report whose range held a run that gave no figure for a Mosaic version its libtpu
    cannot read offers --commits with that said; a report without such a run says nothing."""
    from jaxbisect.report.markdown.sections import mosaic_caveat

    reports = Path(__file__).resolve().parent.parent / "reports" / "cases"
    dot = json.loads((reports / "bisect-0.6.1-0.7.0-v5e-pallas_batched_dot_general-error.json")
                     .read_text())
    said = mosaic_caveat(dot)
    assert said and "jax 0.7.0" in said[0] and "libtpu 0.0.17" in said[0]
    assert said[0] in (reports / "bisect-0.6.1-0.7.0-v5e-pallas_batched_dot_general-error.md"
                       ).read_text()
    for swap in dot["libtpu"]["swaps"]:
        swap["reason"] = None
    assert mosaic_caveat(dot) == []


def test_a_mosaic_error_names_its_operation_on_the_first_screen():
    """The printed line is the error's first line; the operation Mosaic names (the message's
    second part, in the record) is said under the reproduce block."""
    from jaxbisect.report.markdown.reproduce import mlir_lines

    reports = Path(__file__).resolve().parent.parent / "reports" / "cases"
    name = "bisect-0.8.0-0.9.1-v5e-pallas_bf16_batched_matvec-error"
    doc = json.loads((reports / f"{name}.json").read_text())
    said = mlir_lines(doc, doc["reproducer"]["ends"])
    assert said and '"tpu.reshape"' in said[0] and "jax 0.9.0" in said[0]
    assert said[0] in (reports / f"{name}.md").read_text().split("<details>", 1)[0]
    assert mlir_lines({"probes": []}, [{"jax": "0.1", "output": "no error"}]) == []


def test_a_part_that_cannot_be_told_says_what_its_one_swap_rules_out():
    from jaxbisect.report.markdown.tpu import ruled_out

    part = {"old": {"jax": "0.6.2"}, "new": {"jax": "0.7.0"},
            "swaps": [{"jax": "0.6.2", "libtpu": "0.0.19", "seen": "old"},
                      {"jax": "0.7.0", "libtpu": "0.0.17", "seen": "no figure"}]}
    assert "alone or with libtpu: not libtpu alone" in ruled_out(part)
    part["swaps"][0]["seen"] = "no figure"
    assert ruled_out(part) == ""
