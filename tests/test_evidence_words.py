"""The evidence sections said so that a maintainer can act on them: every pass counted is
named, the baseline's bracket says what it is, the buffers at the peak never add up past their
allocation unsaid, the run_hlo_module lines run as pasted, and why no bundle is attached."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from jaxbisect.evidence.explain import baseline_shape_words, passes_said
from jaxbisect.evidence.hlo_bundle import (
    NO_BUNDLE,
    details_lines,
    readme_text,
    run_hlo_module_line,
    why_not_words,
)
from jaxbisect.report.markdown.evidence import (
    _bytes,
    _exact,
    places_words,
    render_buffers_markdown,
    shared_space,
    shared_space_words,
)
from jaxbisect.report.markdown.explain import culprit_words

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def test_every_pass_counted_is_named_and_the_note_comes_after_the_list():
    said = passes_said(["priority-fusion", "copy-insertion", "copy_fusion"])
    assert said.startswith("`priority-fusion`, `copy-insertion` and `copy_fusion`")
    assert said.count("`") == 8  # three in the list, the unsafe one again in its note
    assert said.endswith("(`copy-insertion`: diagnostic only, correctness depends on it)")
    assert passes_said(["algsimp"]) == "`algsimp`"


def test_the_baseline_bracket_says_the_baseline_not_the_passes_effect():
    old = ("Turning off one HLO pass at a time under jax 0.5.0, 6 of the 21 passes that "
           "changed scan_growth's module change its memory (grows with every pass): "
           "`algsimp` (constant without it)")
    said = culprit_words(old)
    assert "(with every pass left on, it grows)" in said
    assert "(grows with every pass)" not in said
    assert baseline_shape_words("constant") == "with every pass left on, it is constant"
    for path in REPORTS.glob("explain-*.md"):
        assert "with every pass)" not in path.read_text(), path


def _reading(at_peak, size):
    return {"at_peak": at_peak, "largest_allocation": {"size_bytes": size}}


def test_buffers_sharing_space_are_said_to_share_it_never_summed_past_the_allocation():
    at_peak = [{"bytes": 80_000_000, "places": 2, "shape": "f32[100,1000,100]"},
               {"bytes": 5_200_000, "places": 13, "shape": "f32[1000,100]"},
               {"bytes": 160, "places": 2, "shape": "(s32[], f32[])"}]
    assert places_words(_reading(at_peak, 84_800_000)) == (
        "2 × f32[100,1000,100] (76.29 MiB); 13 × f32[1000,100] (4.96 MiB)")
    assert shared_space(_reading(at_peak, 84_800_000)) == 85_200_000  # tuples: pointers only
    assert shared_space(_reading(at_peak, 90_000_000)) is None
    said = shared_space_words([("jax 0.5.0", _reading(at_peak, 84_800_000)),
                               ("jax 0.5.1", _reading(at_peak, 90_000_000))])
    assert "jax 0.5.0: 81.25 MiB counted in 80.87 MiB" in said[0]
    assert "jax 0.5.1" not in said[0]
    assert shared_space_words([("jax 0.5.1", _reading(at_peak, 90_000_000))]) == []


def test_the_shipped_remat_report_says_its_peak_buffers_share_space():
    path = REPORTS / "cases" / "bisect-0.4.38-0.5.2-cpu-remat_scan_memory-memory.json"
    evidence = json.loads(path.read_text())["evidence"]
    text = render_buffers_markdown(evidence, "c")
    old = evidence["releases"]["old"]
    arrays = sum(e["bytes"] for e in old["at_peak"] if not e["shape"].startswith("("))
    assert arrays > old["largest_allocation"]["size_bytes"]  # the data that needs the words
    assert "The places held overlap" in text and "counted in 80.87 MiB" in text
    assert "holds most more of" not in text
    assert "the report's .json file holds what was read from the dumps" in text


PART = {"bundle": "bisect-x-hlo", "files": ["module-n_outer-5.pb", "module-n_outer-5.txt"],
        "culprit": {"setting": "--xla_disable_hlo_passes=copy_fusion", "pass": "copy_fusion"},
        "reproduces": True, "figures": [], "params": {"n_outer": 5}}


def test_run_hlo_module_lines_keep_the_bundle_path_across_the_cd_into_xla():
    lines = run_hlo_module_line(PART).splitlines()
    assert lines[0].startswith("BUNDLE=$PWD ")
    assert lines[1].startswith("cd ")
    words = shlex.split(lines[2])
    assert words[:2] == ["bazel", "run"]
    assert "$BUNDLE/module-n_outer-5.txt" in words and "$PWD/module-n_outer-5.txt" not in words
    # bazel runs the tool in its runfiles tree: the dump goes under the bundle, by its path
    assert "--xla_dump_to=$BUNDLE/xla-dump" in words
    assert lines[3].startswith("# ") and "$BUNDLE/xla-dump/" in lines[3]
    compared = run_hlo_module_line({**PART, "xla_compare": "https://github.com/openxla/xla/"
                                    "compare/aaa111...bbb222"}).splitlines()
    assert "git checkout -q bbb222" in compared[1]  # the newer jaxlib's XLA
    in_report = details_lines(PART)
    assert "BUNDLE=$PWD/bisect-x-hlo   # the bundle folder, as an absolute path" in in_report[
        in_report.index("```sh") + 1]
    readme = readme_text({**PART, "figures": []}, PART["files"], "case", {})
    assert "$BUNDLE/module-n_outer-5.txt" in readme and "$PWD/module-n_outer" not in readme


def test_shipped_readmes_and_reports_never_hand_bazel_a_path_under_the_xla_folder():
    for path in [*REPORTS.glob("*-hlo/README.md"), *REPORTS.glob("**/*.md")]:
        for line in path.read_text().splitlines():
            if "run_hlo_module --" in line:
                assert "$PWD/" not in line.split("run_hlo_module --", 1)[1], path


def test_why_no_bundle_is_said_plainly():
    said = why_not_words("the module's figure is the compiled plan's memory; this question's "
                         "metric is error")
    assert said == ("a bundle reproduces a compiled memory plan; this report's figure is the "
                    "program's error")
    assert details_lines({"bundle": None, "why_not": "the module's figure is the compiled "
                          "plan's memory; this question's metric is output"})[0] == (
        f"{NO_BUNDLE}: a bundle reproduces a compiled memory plan; this report's figure is "
        "the program's output.")
    unplaced = why_not_words("where the change lies is not known (the lowered modules were not "
                             "compared and the commits were not searched): no module is "
                             "claimed")
    assert "not compared" not in unplaced and "not placed in XLA" in unplaced


def test_a_report_points_to_rebuilds_below_only_where_they_are():
    """A TPU report (no JAX-Toolbox rebuild: it never rebuilds libtpu) says nothing of
    "the rebuilds below"; a report that offers the rebuild may."""
    from pathlib import Path

    from jaxbisect.report.markdown import render

    root = Path(__file__).resolve().parent.parent / "reports"
    for path in sorted([*root.glob("bisect-*.json"), *(root / "cases").glob("bisect-*.json")]):
        markdown = render(json.loads(path.read_text()))
        if "(before the rebuilds below)" in markdown:
            assert "**Below the release:**" in markdown, path.name


def test_the_check_figures_say_their_unit():
    from jaxbisect.report.markdown.handoff import check_words

    argv = ["python", "-m", "repro", "--metric", "run_time", "--check", "0.0001647", "0.0424334"]
    said = check_words(argv)
    assert "0.0001647 0.0424334" in said and "(s)" in said
    shape = check_words([*argv[:3], "--metric", "memory", "--over", "n_outer=2,5", "--check",
                         "constant", "grows"])  # shapes, in words: which passes, which fails
    assert "shape over n_outer" in shape and "passes (exit 0)" in shape
    assert check_words(["python", "-m", "repro", "--metric", "error", "--check", "a", "b"]) == ""


def test_a_dump_size_reads_as_xla_writes_it_never_rounded_another_way():
    # XLA's HumanReadableNumBytes: whole KiB, then 2 decimals (25728 KiB = 25.125 -> 25.12).
    assert _bytes(26345796) == "25.12 MiB" and _exact(26345796) == "25.12 MiB (26345796 B)"
    assert _bytes(26607972) == "25.38 MiB"  # XLA's "Total bytes used: 26607972 (25.38MiB)"
    assert _bytes(131072) == "128.0 KiB" and _bytes(16) == "16 B"
    path = REPORTS / "bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json"
    evidence = json.loads(path.read_text())["evidence"]
    text = render_buffers_markdown(evidence, "c")
    # Every figure of an allocation XLA's own text names agrees with XLA's.
    for xla in re.findall(r"allocation (\d+): size ([\d.]+)MiB", text):
        assert f"allocation {xla[0]}, {xla[1]} MiB = " in text, xla
    assert re.findall(r"allocation \d+: size \d+,", text)  # the bytes line is there too
    size = evidence["releases"]["old"]["largest_allocation"]["size_bytes"]
    assert f"{_bytes(size)} ({size} B), preallocated-temp" in text
    assert "25.13 MiB" not in text
    assert "XLA's own text, from its dumps" in text and "units with no space" in text
