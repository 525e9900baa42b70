"""Where and what: normalising lowered modules, reading XLA's dumps, the chart, end to end.

The files under tests/data/lowered and tests/data/dumps are real: written by the releases they
are named after (see tests/data/dumps/README.md), at n_res 4, n_inner 3.
"""

from __future__ import annotations

import builtins
import re
import subprocess
from pathlib import Path

import pytest

from jaxbisect.evidence.lowering import compare_lowering, normalize_lowered
from jaxbisect.evidence.release import (
    BufferAssignment,
    memory_report_total,
    parse_buffer_assignment,
    stacked_buffers_live,
)
from jaxbisect.evidence.schedule import parse_entry_computation, schedule_summary
from jaxbisect.lab.pins import pin_at, xla_commit_from_pin
from jaxbisect.report.chart import chart_markdown, write_png
from repro.dumps import trim_after_optimizations, trim_buffer_assignment

DATA = Path(__file__).parent / "data"
N_INNER, SHAPE = 3, (4, 4, 4)  # the sizes of the checked-in dumps
OLD, NEW = "0.5.0", "0.5.1"    # the releases either side of the CPU change


def lowered(name: str) -> str:
    return (DATA / "lowered" / f"{name}.mlir").read_text()


def dump(version: str, name: str) -> str:
    return (DATA / "dumps" / f"jax-{version}" / name).read_text()


# -- normalisation of lowered modules ------------------------------------------------------

def test_same_program_from_different_releases_normalises_equal():
    """0.6.2 and 0.7.0 print v0 differently (private function names @None vs @closed_call_5,
    region indentation) but lower the same program."""
    old, new = lowered("v0-jax-0.6.2"), lowered("v0-jax-0.7.0")
    assert old != new
    assert normalize_lowered(old) == normalize_lowered(new)
    assert compare_lowering(old, new)["lowering"] == "identical"


def test_locations_are_not_part_of_the_program():
    plain, debug = lowered("v0-jax-0.5.0"), lowered("v0-jax-0.5.0-debug-info")
    assert "loc(" in debug and "#loc" in debug
    normal = normalize_lowered(debug)
    assert "loc" not in normal
    assert normal == normalize_lowered(plain)


def test_version_noise_goes_and_meaning_stays():
    text = normalize_lowered(lowered("v0-jax-0.4.20"))
    assert "jax.result_info" not in text and "{replicated}" not in text
    assert "mhlo.num_partitions = 1" in text  # kept: it changes what XLA compiles
    assert text.startswith("module @module ")
    assert not re.search(r"%(?!v\d)\w", text)  # every SSA value renamed canonically
    sharded = ('func.func public @main(%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[2]<=[2]}", '
               'jax.result_info = "x"}) -> tensor<8xf32> {')
    assert normalize_lowered(sharded) == ('func.func public @main(%v0: tensor<8xf32> '
                                          '{mhlo.sharding = "{devices=[2]<=[2]}"}) '
                                          '-> tensor<8xf32> {')


def test_real_lowering_change_survives():
    """0.5.3 stopped emitting the index normalisation (compare/select) around the scan's
    dynamic_update_slice: a change in JAX's lowering, shown in the diff."""
    result = compare_lowering(lowered("v0-jax-0.5.0"), lowered("v0-jax-0.5.3"))
    assert result["lowering"] == "changed"
    assert result["removed"] > 0
    removed = [line for line in result["diff"] if line.startswith("-")]
    assert any("stablehlo.select" in line for line in removed)
    assert len(result["diff"]) <= 60


@pytest.mark.parametrize("edit", [
    ("stablehlo.cosine", "stablehlo.sine"),
    ("dense<3> : tensor<i32>", "dense<2> : tensor<i32>"),
    ("stablehlo.multiply %arg0, %arg0", "stablehlo.multiply %arg0, %0"),  # other dataflow
])
def test_semantic_edit_is_detected(edit):
    text = lowered("v0-jax-0.7.0")
    assert edit[0] in text
    result = compare_lowering(text, text.replace(edit[0], edit[1], 1))
    assert result["lowering"] == "changed"
    assert any(line.startswith("+") and not line.startswith("+++") for line in result["diff"])


def test_different_variant_is_a_change_and_missing_text_is_unknown():
    assert compare_lowering(lowered("v0-jax-0.5.0"), lowered("v1-jax-0.5.0"))["lowering"] \
        == "changed"
    assert compare_lowering(None, lowered("v0-jax-0.5.0"))["lowering"] == "unknown"
    assert compare_lowering(lowered("v0-jax-0.5.0"), lowered("v0-jax-0.5.0"))["lowering"] \
        == "identical"


# -- XLA's dump files ------------------------------------------------------------------------

@pytest.mark.parametrize("version, slots", [("0.4.20", 2), (OLD, 2), (NEW, 3), ("0.10.2", 3)])
def test_stacked_buffers_in_the_buffer_assignment(version, slots):
    """At n_outer 3 the old plan reuses two places for the three stacked buffers; from 0.5.1
    on each outer iteration has its own."""
    assignment = parse_buffer_assignment(dump(version, "buffer-assignment.txt"))
    stacked = stacked_buffers_live(assignment, N_INNER, SHAPE)
    assert (stacked["slots"], stacked["bytes"]) == (slots, slots * 3 * 64 * 4)
    assert stacked["values"] == 15 and stacked["shape"] == "[3,4,4,4]"
    largest = assignment.largest()
    assert largest.kind == "preallocated-temp"
    assert any(v.name == "copy.5" for v in largest.values)


@pytest.mark.parametrize("version, total", [(OLD, 2660), (NEW, 3492), ("0.10.2", 3492)])
def test_the_memory_usage_reports_total_in_both_layouts(version, total):
    assert memory_report_total(dump(version, "memory-usage-report.txt")) == total


def test_exact_totals_and_empty_inputs():
    assert parse_buffer_assignment(dump(OLD, "buffer-assignment.txt")).total_bytes == 2660
    assert parse_buffer_assignment(dump(NEW, "buffer-assignment.txt")).largest().size_bytes \
        == 2948
    assert parse_buffer_assignment("") == BufferAssignment(None, ())
    assert memory_report_total("") is None
    assert stacked_buffers_live(BufferAssignment(None, ()), 3, SHAPE)["slots"] == 0


@pytest.mark.parametrize("version", [OLD, NEW])
def test_trimmed_dumps_parse_like_the_raw_ones(version):
    """repro.dumps sends only the allocations and the ENTRY computation; nothing the
    parsers read is lost."""
    raw_assignment, raw_hlo = dump(version, "buffer-assignment.txt"), \
        dump(version, "after_optimizations.txt")
    trimmed = trim_buffer_assignment(raw_assignment)
    assert len(trimmed) < len(raw_assignment) / 3
    assert parse_buffer_assignment(trimmed) == parse_buffer_assignment(raw_assignment)
    entry = trim_after_optimizations(raw_hlo)
    assert "metadata=" not in entry and "fused_computation (" not in entry
    strip = [(i.name, i.opcode, i.operands) for i in parse_entry_computation(raw_hlo)]
    assert [(i.name, i.opcode, i.operands) for i in parse_entry_computation(entry)] == strip
    assert schedule_summary(entry, N_INNER, SHAPE) == schedule_summary(raw_hlo, N_INNER, SHAPE)


# -- the schedule ---------------------------------------------------------------------------

def _positions(lines: list[str]) -> dict[str, int]:
    return {m.group(2): int(m.group(1)) for line in lines[1:]
            if (m := re.match(r"\s*(\d+)\s+([\w.\-]+)", line))}


def test_schedule_old_release_copies_just_before_each_loop():
    lines = schedule_summary(dump(OLD, "after_optimizations.txt"), N_INNER, SHAPE)
    assert "3 while loops" in lines[0] and "at most 2" in lines[0]
    at = _positions(lines)
    assert at["broadcast.4"] < at["copy.5"] < at["while.39"] < at["copy.14"] < at["while.79"] \
        < at["while.119"]
    assert any("while.39: loop 1 of 3 (3 trips), carries copy.5; stacked buffers live: 2" in line
               for line in lines)


@pytest.mark.parametrize("version, creator", [(NEW, "broadcast.4"),
                                              ("0.10.2", "wrapped_broadcast")])
def test_schedule_new_release_makes_every_copy_before_the_first_loop(version, creator):
    lines = schedule_summary(dump(version, "after_optimizations.txt"), N_INNER, SHAPE)
    assert "at most 3" in lines[0]
    at = _positions(lines)
    loops = sorted(p for name, p in at.items() if name.startswith("while"))
    assert at[creator] < at["copy.5"] < at["copy.14"] < loops[0]
    live = [int(line.rsplit(" ", 1)[1]) for line in lines if "stacked buffers live:" in line]
    assert live == [3, 2, 1]


LOOP_MAKES_IT = """HloModule m, is_scheduled=true

ENTRY %main (p: f32[4,4,4]) -> f32[3,4,4,4] {
  %p = f32[4,4,4]{2,1,0} parameter(0)
  %t = (f32[4,4,4]{2,1,0}) tuple(%p)
  %w = (f32[4,4,4]{2,1,0}) while(%t), condition=%c, body=%b
  %g = f32[4,4,4]{2,1,0} get-tuple-element(%w), index=0
  ROOT %s = f32[3,4,4,4]{3,2,1,0} call(%g), to_apply=%stack
}
"""


@pytest.mark.parametrize("text, most", [(LOOP_MAKES_IT, 0), (None, 2)])
def test_the_schedule_header_says_it_counts_buffers_made_outside_the_loops(text, most):
    """needs-b 3: "at most 0" beside a peak placed inside a loop read as a contradiction (the
    A6000 report): the header says what it counts, buffers the entry computation makes."""
    lines = schedule_summary(text or dump(OLD, "after_optimizations.txt"), N_INNER, SHAPE)
    counted = re.search(r"stacked \[3,4,4,4\] buffers made outside the loops and live at a "
                        r"loop's start: at most (\d+)", lines[0])
    assert counted and int(counted.group(1)) == most
    assert "a loop makes inside its body are not counted" in lines[0]


def test_schedule_of_a_release_printing_without_percent_signs():
    lines = schedule_summary(dump("0.4.20", "after_optimizations.txt"), N_INNER, SHAPE)
    assert "at most 2" in lines[0]
    assert any(line.strip()[:1].isdigit() and "copy.14 = copy(broadcast.3)" in line
               for line in lines)


def test_schedule_without_entry_or_loops():
    assert schedule_summary("HloModule m\n", 3, SHAPE) == ["no ENTRY computation found"]
    hlo = ("ENTRY %main (x: f32[4,4,4]) -> f32[4,4,4] {\n"
           "  %x = f32[4,4,4]{2,1,0} parameter(0)\n"
           "  ROOT %c = f32[4,4,4]{2,1,0} cosine(f32[4,4,4]{2,1,0} %x)\n}\n")
    lines = schedule_summary(hlo, 3, SHAPE)
    assert "0 while loops" in lines[0] and lines[-1] == "no while loops in the entry computation"


# -- attribution and the report from the checked-in files -----------------------------------

def _document(version: str, lowered_name: str, git_hash: str | None) -> dict:
    """An evidence document as ``python -m repro.dumps`` prints it, from real files."""
    files = {key: dump(version, name) for key, name in (
        ("memory_usage_report", "memory-usage-report.txt"),
        ("buffer_assignment", "buffer-assignment.txt"),
        ("after_optimizations", "after_optimizations.txt"))
        if (DATA / "dumps" / f"jax-{version}" / name).exists()}
    return {"schema": 1, "status": "ok", "error": None, "jax": version, "jaxlib": version,
            "jaxlib_git_hash": git_hash, "lowered": {"status": "ok", "text": lowered(lowered_name)},
            "compiled": {"status": "ok", "total_bytes": 2308 if version == OLD else 3204,
                         "hlo": files.get("after_optimizations")},
            "dump": {"status": "ok", "files": files}}



def test_xla_commit_from_either_pin_file(tmp_path):
    commit = "1e81d47ecb624cb8e75890fe9c1e5b04558ef545"
    workspace = (f'load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")\n\n'
                 f'XLA_COMMIT = "{commit}"\nXLA_SHA256 = "{"0" * 64}"\n')
    assert xla_commit_from_pin(workspace) == commit
    assert xla_commit_from_pin('# buildifier: disable=module-docstring\nXLA_COMMIT = "b00ea9a0'
                               'cdde1e3261b31efc503da2788098f4d5"\n') \
        == "b00ea9a0cdde1e3261b31efc503da2788098f4d5"
    assert xla_commit_from_pin('XLA_COMMIT = "main"\n') is None
    repo = tmp_path / "jax"
    (repo / "third_party" / "xla").mkdir(parents=True)
    (repo / "third_party" / "xla" / "workspace.bzl").write_text(workspace)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "pin"], check=True)
    head = subprocess.run(git[:3] + ["rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert pin_at(repo, head) == (commit, "workspace.bzl")
    assert pin_at(repo, "0" * 40) is None


# -- the chart ------------------------------------------------------------------------------

MERMAID_LINE = re.compile(r'^    line "[^"]*" \[(-?\d+(\.\d+)?)(, -?\d+(\.\d+)?)*\]$')


def test_chart_is_a_mermaid_xychart_with_one_line_per_series():
    series = {"jax 0.5.0": [(1, 12.75), (2, 25.25), (4, 25.25), (6, 25.25)],
              "jax 0.5.1": [(6, 75.25), (1, 12.75), (2, 25.25), (4, 50.25)]}
    markdown = chart_markdown(series)
    block = markdown.split("```")[1].splitlines()
    assert block[0] == "mermaid" and block[1] == "xychart-beta"
    assert block[2].startswith('    title "')
    assert block[3] == '    x-axis "n_outer" [1, 2, 4, 6]'
    assert re.fullmatch(r'    y-axis "[^"]+" 0 --> \d+(\.\d+)?', block[4])
    assert float(block[4].rsplit(" ", 1)[1]) >= 75.25
    lines = block[5:]
    assert len(lines) == 2 and all(MERMAID_LINE.match(line) for line in lines)
    assert lines[1] == '    line "jax 0.5.1" [12.75, 25.25, 50.25, 75.25]'  # sorted by n_outer
    assert "1. jax 0.5.0; 2. jax 0.5.1" in markdown


def test_chart_uses_shared_n_outer_and_plain_numbers():
    series = {'a "quoted"': [(1, 0.00012), (2, 123456789.0), (3, 1.0)], "b": [(2, 1.0), (3, 2.0)]}
    markdown = chart_markdown(series)
    assert '    x-axis "n_outer" [2, 3]' in markdown
    assert "e+" not in markdown and "e-" not in markdown
    assert '    line "a \'quoted\'" [123456789, 1]' in markdown
    assert "n_outer 1 not measured for every line" in markdown
    assert chart_markdown({}).startswith("_No measurements")
    assert chart_markdown({"a": [(1, 1.0)], "b": [(2, 1.0)]}).startswith("_The series share")


def without_matplotlib(monkeypatch) -> None:
    """Make ``import matplotlib`` fail, as in an environment without it."""
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)


def test_png_only_with_matplotlib(tmp_path, monkeypatch):
    series = {"jax 0.5.1": [(1, 12.75), (2, 25.25)]}
    without_matplotlib(monkeypatch)
    assert write_png(series, tmp_path / "chart.png") is None
    monkeypatch.undo()
    pytest.importorskip("matplotlib")
    path = write_png(series, tmp_path / "chart.png")
    assert path is not None and path.read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("version", ["0.5.0", "0.5.1", "0.10.2"])
def test_the_raw_buffer_lines_do_not_depend_on_xlas_row_order(version):
    """Issue 17, item 11: XLA lists an allocation's values (and the report's equal-sized
    rows) in an order that changes from run to run; the report's lines do not."""
    import random

    from jaxbisect.evidence.release import relevant_raw_lines

    folder = DATA / "dumps" / f"jax-{version}"
    files = {key: (folder / name).read_text() for key, name in
             (("buffer_assignment", "buffer-assignment.txt"),
              ("memory_usage_report", "memory-usage-report.txt"))
             if (folder / name).exists()}

    def row(line: str) -> bool:
        return line.startswith(" value: ") or (line.count(";") >= 4
                                                and not line.startswith("cumulative_size"))

    def shuffled(text: str, seed: int) -> str:
        """Each run of rows (one allocation's values, one table's rows) in another order, the
        shapes in each row too, and the running total in front of a row changed with it."""
        lines, out, run = text.splitlines(), [], []
        for line in [*lines, ""]:
            if row(line):
                if line.count(";") >= 4 and "; allocation " not in line:
                    cells = line.split(";", 4)
                    shapes = cells[4].split(", ") if "(" not in cells[4] else [cells[4]]
                    random.Random(seed).shuffle(shapes)
                    line = ";".join([f"\t {seed}.00MiB( {seed}%)", *cells[1:4],
                                     " " + ", ".join(s.strip() for s in shapes)])
                run.append(line)
                continue
            random.Random(seed).shuffle(run)
            out += [*run, line]
            run = []
        return "\n".join(out[:-1]) + "\n"

    raw = relevant_raw_lines(files, N_INNER, (4, 4, 4))
    assert any(len(lines) > 1 for lines in raw.values())
    for seed in range(5):
        again = relevant_raw_lines({k: shuffled(v, seed) for k, v in files.items()}, N_INNER,
                                   (4, 4, 4))
        assert again == raw


def test_a_chart_this_environment_cannot_remake_is_kept(tmp_path, monkeypatch):
    """Issue 17, item 2: a rerun without matplotlib keeps (and links) the earlier chart."""
    chart = tmp_path / "bisect-0.5.0-0.5.1-cpu.png"
    chart.write_bytes(b"\x89PNG an earlier run's chart")
    without_matplotlib(monkeypatch)
    assert write_png({"jax 0.5.1": [(1, 1.0), (2, 2.0)]}, chart) == chart
    assert chart.read_bytes() == b"\x89PNG an earlier run's chart"


def test_the_chart_library_is_part_of_the_default_install():
    """Issue 17, item 2: ``pip install -e .`` (the Quick start) brings matplotlib."""
    import tomllib

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    assert any(dep.split(">")[0].split("=")[0].strip() == "matplotlib"
               for dep in project["project"]["dependencies"])


# -- end to end, on two real releases ---------------------------------------------------------

SCHEDULER_OFF = "--xla_cpu_enable_concurrency_optimized_scheduler=false"





def test_a_chart_drawn_before_from_the_same_figures_is_not_drawn_again(tmp_path, monkeypatch):
    """A stored rerun draws nothing: matplotlib is not even imported where the picture these
    figures drew is still in place; new figures, or a picture changed since, are drawn."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    series, path = {"jax 0.5.1": [(1, 12.75), (2, 25.25)]}, tmp_path / "chart.png"
    first = write_png(series, path).read_bytes()
    imported, real_import = [], builtins.__import__

    def recording(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            imported.append(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", recording)
    assert write_png(series, path) == path and not imported
    assert path.read_bytes() == first
    path.write_bytes(b"\x89PNG changed by hand")
    assert write_png(series, path).read_bytes() == first and imported
    imported.clear()
    write_png({"jax 0.5.1": [(1, 12.75), (2, 50.5)]}, path)
    assert imported and path.read_bytes() != first


MODULE_LINE = ("module @jit_f attributes {mhlo.num_partitions = 1 : i32, "
               "mhlo.num_replicas = 1 : i32} {")
OLD_LOWERED = MODULE_LINE + """
  func.func public @main(%arg0: tensor<8xf32> loc("x")) -> (tensor<8xf32> {jax.result_info = ""}) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<8xf32> loc(#loc3)
    %1 = stablehlo.add %0, %arg0 : tensor<8xf32> loc(#loc4)
    return %1 : tensor<8xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
"""
NEW_LOWERED = MODULE_LINE + """
  func.func public @main(%arg0: tensor<8xf32> loc("x")) -> (tensor<8xf32> {jax.result_info = ""}) {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<8xf32> loc(#loc3)
    %1 = stablehlo.add %0, %arg0 : tensor<8xf32> loc(#loc4)
    %2 = "stablehlo.all_reduce"(%1) <{replica_groups = dense<0> : tensor<1x1xi64>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %3 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %3 : tensor<f32>
    }) : (tensor<8xf32>) -> tensor<8xf32> loc(#loc5)
    return %2 : tensor<8xf32> loc(#loc)
  } loc(#loc)
} loc(#loc)
"""


def defined(lines: list[str]) -> list[str]:
    return [m.group(1) for line in lines for m in [re.match(r"(%\w+)(?::\d+)? = ", line)] if m]


def test_the_lowered_diff_numbers_each_side_as_it_is():
    """Context lines are the new module's: a value the new side returns is the one it defines,
    and no value is defined twice on either side (issue 49: `+%v19 = …all_reduce` followed by
    ` return %v18`)."""
    result = compare_lowering(OLD_LOWERED, NEW_LOWERED)
    assert result["lowering"] == "changed"
    body = [d for d in result["diff"] if not d.startswith(("---", "+++", "@@"))]
    new_side = [d[1:] for d in body if d[0] in " +"]
    old_side = [d[1:] for d in body if d[0] in " -"]
    assert any("all_reduce" in line for line in new_side)
    for side in (new_side, old_side):
        assert len(defined(side)) == len(set(defined(side))), side
    reduced = defined([line for line in new_side if "all_reduce" in line])[0]
    returned = [line for line in new_side if line.startswith("return ")]
    assert returned == [f"return {reduced} : tensor<8xf32>"], result["diff"]
    old_return = [line for line in old_side if line.startswith("return ")]
    assert old_return and old_return != returned  # the return changed: shown as changed
    new_lines = normalize_lowered(NEW_LOWERED).splitlines()
    assert all(line in new_lines for line in new_side)
    old_lines = normalize_lowered(OLD_LOWERED).splitlines()
    assert all(line in old_lines for line in old_side)
