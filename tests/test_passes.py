"""The pass step: pass names from real per-pass dump names, and comparing two releases' dumps.

tests/data/xla-passes holds the real names of the files jaxlib 0.5.0 and 0.5.1 wrote for v0 with
``--xla_dump_hlo_pass_re=.*`` on the CPU (n_outer 3, n_inner 5, n_res 8).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.evidence.passes import (
    first_difference,
    is_safe,
    normalize_hlo,
    parse_dump_name,
    passes_that_changed,
    passes_that_ran,
)

DATA = Path(__file__).parent / "data" / "xla-passes"


def names(version: str) -> list[str]:
    return (DATA / f"jax-{version}-cpu-dump-names.txt").read_text().split()


def test_pass_names_from_real_dump_names():
    got = names("0.5.1")
    assert parse_dump_name(got[4]).after == "call-inliner"
    assert parse_dump_name(got[4]).before == "batch-dot-simplification"
    assert parse_dump_name(got[4]).pipeline == "HLO_passes_through_layout_assignment"
    # copy insertion dumps its own stages: not pass boundaries
    stage = next(n for n in got if "adding_copies" in n)
    assert parse_dump_name(stage).before is None
    assert passes_that_changed(got) == [
        "dce", "call-inliner", "algsimp", "simplification", "while-loop-trip-count-annotator",
        "flatten-call-graph", "layout-assignment", "reshape-decomposer", "fusion",
        "copy-insertion"]
    ran = passes_that_ran(got)
    assert set(passes_that_changed(got)) <= set(ran)
    assert {"sharding-remover", "batch-dot-simplification", "reduce-decomposer"} <= set(ran)
    assert not {"pipeline-start", "pipeline-end"} & set(ran)
    assert passes_that_changed(names("0.5.0")) == passes_that_changed(got)
    assert parse_dump_name("module_0001.jit_outer_loop.cpu_after_optimizations.txt") is None
    assert parse_dump_name("module_0001.jit_outer_loop.before_optimizations.txt") is None


def test_correctness_passes_are_never_offered_as_fixes():
    assert not is_safe("copy-insertion") and not is_safe("layout-assignment")
    assert is_safe("algsimp") and is_safe("fusion")


MODULE = """HloModule jit_outer_loop, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%region_0.8 (arg.9: f32[4]) -> f32[4] {
  %arg.9 = f32[4]{0} parameter(0)
  ROOT %cosine.10 = f32[4]{0} cosine(f32[4]{0} %arg.9)
}

ENTRY %main.12 (Arg_0.1: f32[4]) -> f32[4] {
  %Arg_0.1 = f32[4]{0} parameter(0)
  ROOT %while.11 = f32[4]{0} while(f32[4]{0} %Arg_0.1), condition=%c.3, body=%region_0.8, backend_config={"known_trip_count":{"n":"5"}}
}
"""


def renumbered(text: str, offset: int) -> str:
    import re

    return re.sub(r"\.(\d+)\b", lambda m: f".{int(m.group(1)) + offset}", text).replace(
        "jit_outer_loop", "jit_outer_loop_1")


@given(st.integers(0, 500))
def test_numbering_and_module_name_do_not_count(offset):
    assert normalize_hlo(renumbered(MODULE, offset)) == normalize_hlo(MODULE)


def test_printer_comments_and_backend_config_do_not_count_but_ops_do():
    short = MODULE.replace("}\n\nENTRY", "} // region_0.8\n\nENTRY").replace(
        ', backend_config={"known_trip_count":{"n":"5"}}', "")
    assert normalize_hlo(short) == normalize_hlo(MODULE)
    assert normalize_hlo(MODULE.replace("cosine(", "sine(")) != normalize_hlo(MODULE)


def dumps(pipeline_passes: list[tuple[str, str, str]], text: str) -> list[dict]:
    return [{"file": f"module_0001.jit_outer_loop.{i:04d}.{p}.after_{a}.before_{b}.txt",
             "text": text} for i, (p, a, b) in enumerate(pipeline_passes)]


PIPE = [("simp", "pipeline-start", "algsimp"), ("simp", "algsimp", "dce"),
        ("main", "fusion", "copy-insertion")]


def test_first_difference_names_the_pass():
    old = dumps(PIPE, MODULE)
    assert first_difference(old, dumps(PIPE, renumbered(MODULE, 7)))["status"] == "same"
    new = dumps(PIPE, MODULE)
    new[2] = {**new[2], "text": MODULE.replace("cosine(", "sine(")}
    found = first_difference(old, new)
    assert (found["status"], found["pass"], found["pipeline"]) == ("differ", "fusion", "main")
    assert any(line.startswith("+") and "sine(" in line for line in found["diff"])
    extra = dumps(PIPE[:1] + [("simp", "licm", "dce")] + PIPE[1:], MODULE)
    found = first_difference(old, extra)
    assert (found["pass"], found["how"]) == ("licm", "only one release changes the module here")


@pytest.mark.parametrize("version", ["0.5.0", "0.5.1"])
def test_real_names_pair_with_themselves(version):
    same = [{"file": n, "text": MODULE} for n in names(version)]
    assert first_difference(same, same)["status"] == "same"


def test_configuring_a_child_process_keeps_its_environment():
    """The pass dumps of a GPU target need JAX_SKIP_CUDA_CONSTRAINTS_CHECK (and PATH, HOME):
    setting the backend and XLA_FLAGS must not wipe the rest (it once did)."""
    import subprocess
    import sys

    code = ("import os; os.environ['JAX_SKIP_CUDA_CONSTRAINTS_CHECK'] = '1'; "
            "os.environ['XLA_FLAGS'] = '--a=1'; "
            "from repro.process import configure_this_process; "
            "configure_this_process('cpu', '--b=2'); "
            "print(os.environ['JAX_SKIP_CUDA_CONSTRAINTS_CHECK'], os.environ['JAX_PLATFORMS'], "
            "os.environ['XLA_FLAGS'], 'PATH' in os.environ)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent.parent, check=True)
    assert done.stdout.split() == ["1", "cpu", "--a=1", "--b=2", "True"]
