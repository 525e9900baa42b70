"""The last fresh reader's findings, held over the shipped records: the Why section says the
flag search's finding, a setting with no figure says why (or that no reason was recorded), an
HLO module's figure is shown as every MiB figure (two decimals)."""

import json
import re
from pathlib import Path

from jaxbisect.evidence.hlo import mib
from jaxbisect.evidence.hlo_bundle import shown_mib
from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.explain import no_figure_words
from jaxbisect.report.markdown.sections import said_of

REPORTS = Path(__file__).resolve().parent.parent / "reports"


def test_a_flag_search_that_found_no_changed_default_says_so_under_why():
    doc = json.loads((REPORTS / "cases/bisect-0.6.0-0.6.2-cpu-exp_nan_under_jit-output.json")
                     .read_text())
    culprit = doc["explanation"]["culprit"]
    assert not culprit.get("flag_defaults_changed") and "No XLA flag" in culprit["text"]
    why = render(doc).split("## Why", 1)[1].split("\n## ", 1)[0]
    assert culprit["text"].split(":")[0] in why
    assert said_of({"text": "No XLA flag explains it: none of the 0 changed defaults …"}) is None


def test_a_setting_with_no_figure_says_why_or_that_no_reason_was_kept():
    assert no_figure_words({"verdict": "no figure", "reason": "crashed: SIGSEGV"}) == (
        "no figure: crashed: SIGSEGV")
    assert "no reason was recorded" in no_figure_words({"verdict": "no figure", "reason": None})
    assert no_figure_words({"verdict": "changed"}) == "changed"
    page = (REPORTS / "explain-0.5.0-a6000-scan_growth-memory-0ab78550.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| ") and "no figure" in line]
    assert rows and all(re.search(r"no figure( at \w+ \d+)?: \w", r)
                        or "no reason was recorded" in r for r in rows), rows


def test_an_hlo_modules_figure_is_shown_to_two_decimals_as_the_reports():
    assert mib(441208256) == 420.769 and shown_mib(mib(441208256)) == "420.77"
    assert shown_mib("–") == "–"
    text = (REPORTS / "cases/bisect-0.4.38-0.5.2-cpu-remat_scan_memory-memory-hlo/README.md"
            ).read_text()
    assert "420.77" in text and "420.8 " not in text and "420.8|" not in text


def test_a_change_that_came_with_libtpu_offers_no_xla_commits_line():
    doc = json.loads((REPORTS / "cases/bisect-0.8.3-0.9.0-v5e-pallas_bf16_batched_matvec-error-"
                                "e4b85d1c.json").read_text())
    assert doc["attribution"]["culprit"] == "libtpu" and doc["attribution"]["by"] == "swaps"
    assert "XLA's commits between the two releases" not in render(doc)


def test_a_lowered_diff_kept_without_its_differing_lines_says_so():
    doc = json.loads((REPORTS / "cases/bisect-0.7.0-0.8.1-v5e-pallas_fused_matmul_vmem-error.json")
                     .read_text())
    shown = render(doc)
    # the cut lines are the Pallas kernel's custom call: its payload, said as such
    assert "differ only inside the Pallas kernel's `tpu_custom_call`" in shown
    assert "The lowered modules, where they differ" not in shown
    doc["attribution"]["diff"] = [line.replace("tpu_custom_call", "other_call")
                                  for line in doc["attribution"]["diff"]]
    assert "the lines that differ were not kept" in render(doc)


def test_a_checks_figures_are_the_tables_in_six_figures():
    doc = json.loads((REPORTS / "cases/bisect-0.4.30-0.4.33-cpu-while_loop_cpu_slowdown-"
                                "run_time.json").read_text())
    argv = doc["attribution"]["triage"]["argv"]
    old, new = argv[argv.index("--check") + 1:argv.index("--check") + 3]
    # the median each probe's table row shows, in six figures (not another median of samples)
    shown = {p["jax"]: f"{p['figure']['median']:.6g}" for p in doc["probes"]}
    assert (old, new) == (shown[doc["last_old"]["jax"]], shown[doc["first_new"]["jax"]])


def test_the_time_limit_says_its_rule_never_a_first_runs_seconds_the_rows_may_not_hold():
    from jaxbisect.report.markdown.sections import run_lines

    doc = {"time_limit": {"seconds": 64.0, "explicit": False,
                          "why": "20× the slower end's first run (3.2 s), 60 s at least"}}
    (line, _) = run_lines(doc)[:2]
    assert line == "Time limit of a run: 64 s (20× the slower end's first run, 60 s at least)."


def test_an_errors_printed_line_names_what_it_leaves_out_of_the_quote():
    """The program's quoted instruction is said as "[the instruction it quotes]", never a
    bare "…" a reader takes for a cut (in the headline, the tables and the printed line)."""
    page = (REPORTS / "cases/bisect-0.7.0-0.8.1-v5e-pallas_fused_matmul_vmem-error.md").read_text()
    line = next(x for x in page.splitlines() if "RESOURCE_EXHAUSTED" in x and "prints" in x)
    assert "on stack for [the instruction it quotes]. Scoped" in line and "16.12M" in line
    assert not [x for x in page.splitlines() if "stack for …" in x]


def test_a_sweep_cell_of_a_plan_of_0_bytes_is_no_figure_a_runs_peak_is_one():
    from jaxbisect.report.sweep_summary import series_cell

    plan = {"figures": {"1": 0, "2": 0}, "status": "unavailable", "over": "n_outer",
            "shape": "memory reported as 0 bytes at n_outer 1, 2 (this release does not "
                     "measure it)", "fallback": None, "metric": "memory"}
    assert series_cell("bytes", plan, [1, 2]).startswith("not measured (memory reported as 0")
    peak = {**plan, "figures": {"1": 65536, "2": 0}, "fallback": {"metric": "peak_memory"}}
    assert series_cell("bytes", peak, [1, 2]).startswith("0.00 … 0.06")
    # a run's peak under the table's 0.01 MiB: said in the column's unit, never a bare "0.00"
    flat = {**peak, "figures": {"1": 0, "2": 4096}, "metric": "peak_memory"}
    assert series_cell("bytes", flat, [1, 2]).startswith(
        "not seen (a run's peak rose less than 0.01 MiB)")
    readme = (REPORTS / "repro" / "README.md").read_text()
    row = next(x for x in readme.splitlines() if x.startswith("| 0.4.20") and "| cpu" in x)
    assert "not measured (memory reported" not in row and "a run's peak" in row


def test_a_bundle_readme_never_says_at_nothing():
    for readme in REPORTS.glob("**/*-hlo/README.md"):
        assert "\nAt .\n" not in readme.read_text(), readme


def test_a_libtpu_narrowing_block_runs_each_libtpu_in_its_own_environment():
    """Each libtpu the search placed the change between: a fresh venv with the held jax and
    jaxlib, and the page's program run in it (an install alone runs nothing)."""
    doc = json.loads((REPORTS / "cases/bisect-0.7.0-0.8.1-v5e-pallas_fused_matmul_vmem-error"
                                ".json").read_text())
    narrowed = doc["libtpu"]["narrowed"]
    block = render(doc).split("the search placed the change between libtpu", 1)[1]
    block = block.split("```sh", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(block) == 4
    for (install, run), libtpu in zip((block[:2], block[2:]),
                                      (narrowed["last_old"], narrowed["first_new"])):
        venv = f"libtpu-{libtpu}"
        assert install.startswith(f"python3.11 -m venv {venv} && {venv}/bin/pip install ")
        assert f"libtpu=={libtpu} " in install and f"jax=={narrowed['held']['jax']} " in install
        assert run.startswith(f"{venv}/bin/python {doc['reproducer']['file']}")


def test_a_timing_workaround_says_its_own_figure_never_restored():
    """A noisy figure comes near the old one, never to it: the check says what it gave."""
    doc = json.loads((REPORTS / "cases/bisect-0.4.30-0.4.33-cpu-while_loop_cpu_slowdown-"
                                "run_time.json").read_text())
    w = doc["explanation"]["culprit"]["workarounds"][0]
    page = render(doc)
    culprit = next(line for line in page.splitlines() if line.startswith("- **Culprit:**"))
    old, new = (next(p for p in doc["probes"] if p["jax"] == doc[k]["jax"])
                for k in ("last_old", "first_new"))
    assert (f"the toolkit's run gave {w['figure'] * 1e3:.3f} ms, against jax {old['jax']}'s "
            f"{old['figure']['median'] * 1e3:.3f} ms and jax {new['jax']}'s "
            f"{new['figure']['median'] * 1e3:.3f} ms") in culprit and "restores" not in culprit
    assert "brings back the old run_time" not in page


def test_what_two_figures_were_the_same_within_is_recorded():
    """The tolerance a deterministic answer compared within is in its record, and its page
    says that one: an output's relative and absolute, another figure's share."""
    from jaxbisect.report.document import tolerance_of
    from jaxbisect.report.markdown.answer import alike_how
    from jaxbisect.search.classify import DEFAULT_THRESHOLD
    from jaxbisect.search.question import question_from

    case = "repro/cases/exp_nan_under_jit.py"
    assert tolerance_of(question_from("output", case, [], ()), None) == {
        "tolerance": {"relative": 1e-5, "absolute": 1e-8}}
    assert tolerance_of(question_from("output", case, [], ()), 0.1)["tolerance"] == {
        "relative": 0.1, "absolute": 0.1 * 1e-3}
    assert tolerance_of(question_from("error", case, [], ()), None) == {}
    assert tolerance_of(question_from("memory", case, [], ()), None) == {
        "tolerance": {"relative": DEFAULT_THRESHOLD}}
    doc = {"over": None, "metric": {"name": "output", "kind": "deterministic",
                                    "threshold": None,
                                    "tolerance": {"relative": 2e-5, "absolute": 3e-8}}}
    assert "within 2e-05 relative, 3e-08 absolute" in alike_how(doc)
    doc["metric"] = {"name": "memory", "kind": "deterministic", "threshold": None}
    assert alike_how(doc) == f"the same within {DEFAULT_THRESHOLD:.0%}"


def test_a_lines_python_is_the_one_its_environment_ran():
    """Each probe records the Python its environment ran; an install line's Python note and a
    venv line's interpreter follow it (the releases' Requires-Python for older records)."""
    from jaxbisect.report.installs import python_needed, python_of, venv_python

    doc = json.loads((REPORTS / "bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json")
                     .read_text())
    ran = {p["jax"]: p["python"] for p in doc["probes"]}
    assert ran["0.10.2"].startswith("3.11.") and ran["0.12.0"].startswith("3.12.")
    assert (python_of("0.10.2", doc), python_needed("0.10.2", doc)) == ("3.11", None)
    assert venv_python("0.12.0", doc) == "python3.12"
    moved = {**doc, "probes": [{**p, "python": "3.13.0"} for p in doc["probes"]]}
    assert python_of("0.12.0", moved) == "3.13" and venv_python("0.10.2", moved) == "python3.13"
    assert python_of("0.12.0", {}) == "3.12" and python_of("0.10.2", {}) == "3.11"


def test_a_kernels_payload_difference_is_said_with_the_versions_that_wrote_it():
    """Lowered modules that differ only inside a Pallas kernel's serialised payload: no diff
    of cut base64, but the MLIR producer each payload's bytecode names."""
    doc = json.loads((REPORTS / "cases/bisect-0.7.0-0.7.2-v5e-pallas_bf16_batched_matvec-"
                                "error.json").read_text())
    page = render(doc)
    assert "The lowered modules, where they differ" not in page
    assert "`MLIR21.0.0git` at jax 0.7.0, `MLIR22.0.0git` at jax 0.7.2" in page


def test_the_search_size_is_said_beside_rows_of_another_size():
    """The search compares shapes at a smaller size; the rows show each release at theirs:
    said so, never "measured at" a size the rows do not show."""
    doc = json.loads((REPORTS / "bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json").read_text())
    assert doc["search_size"]["agreed"] and doc["search_size"]["params"] == {"n_res": 32}
    page = render(doc)
    assert "compared each release's shape over n_outer at n_res 32, n_outer 2,5" in page
    assert "the size its mode column names" in page and "scale-free" not in page


def test_a_change_no_jax_commit_brings_never_reads_as_no_commit_showing_it():
    """On the newer jaxlib every commit shows it: no jax commit *brings* it."""
    doc = json.loads((REPORTS / "cases/bisect-0.8.3-0.9.0-v5e-pallas_bf16_batched_matvec-error-"
                                "e4b85d1c.json").read_text())
    assert any(st["label"] == "new" for st in doc["commits"]["steps"])
    page = render(doc)
    assert "jax commit shows" not in page and "No jax commit measured brings it" in page


def _doc(name: str) -> dict:
    return json.loads(next(REPORTS.rglob(name)).read_text())


def test_the_check_inside_alike_ends_names_the_releases_it_could_not_measure():
    doc = _doc("bisect-0.4.20-0.5.0-a6000-scan_growth-memory.json")
    lo, hi = doc["measured_part"]
    from packaging.version import Version

    between = [s["jax"] for s in doc["skipped"] if Version(lo) < Version(s["jax"]) < Version(hi)]
    assert between and not set(between) & set(doc["interior_check"]["releases"])
    assert f"each release between them that runs here (not jax {', '.join(between)}:" in \
        render(doc)


def test_a_timing_release_placed_with_an_end_it_differs_from_is_said_with_its_ratio():
    doc = _doc("bisect-0.4.30-0.4.33-cpu-while_loop_cpu_slowdown-run_time.json")
    by = {p["jax"]: p for p in doc["probes"]}
    ratio = by["0.4.31"]["figure"]["median"] / by["0.4.30"]["figure"]["median"]
    assert by["0.4.31"]["label"] == "old" and ratio > 1.1
    said = f"jax 0.4.31 is {ratio:.2f}× jax 0.4.30's run_time"
    assert said in render(doc)
    assert "python -m bisect --from 0.4.30 --to 0.4.31 " in render(doc)


def test_two_releases_short_lists_are_shown_whole_to_compare():
    doc = _doc("bisect-0.4.38-0.5.2-cpu-remat_scan_memory-memory.json")
    values = doc["evidence"]["releases"]["new"]["largest_allocation"]["values"]
    markdown = render(doc)
    assert len(values) > 5  # more than the first part of a cut block would keep
    for v in values:
        assert re.search(rf"^\s*{v['values']} × {re.escape(v['shape'])} ", markdown, re.M), v


def test_a_run_peak_swept_at_fewer_values_says_which():
    doc = _doc("bisect-0.4.20-0.5.0-cpu-scan_growth-memory.json")
    got = {k for p in doc["probes"] for k in (p["series"].get("figures") or {})}
    missing = [str(v) for v in doc["over"]["values"] if str(v) not in got]
    assert missing == ["15"]
    assert "so not at n_outer 15" in render(doc)
