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
    normalized,
    parse_dump_name,
    passes_that_changed,
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
    assert not {"pipeline-start", "pipeline-end"} & set(passes_that_changed(got))
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
"""  # noqa: E501


def renumbered(text: str, offset: int) -> str:
    import re

    return re.sub(r"\.(\d+)\b", lambda m: f".{int(m.group(1)) + offset}", text).replace(
        "jit_outer_loop", "jit_outer_loop_1")


@given(st.integers(0, 500))
def test_numbering_and_module_name_do_not_count(offset):
    assert normalized(renumbered(MODULE, offset)) == normalized(MODULE)


def test_printer_comments_and_backend_config_do_not_count_but_ops_do():
    short = MODULE.replace("}\n\nENTRY", "} // region_0.8\n\nENTRY").replace(
        ', backend_config={"known_trip_count":{"n":"5"}}', "")
    assert normalized(short) == normalized(MODULE)
    assert normalized(MODULE.replace("cosine(", "sine(")) != normalized(MODULE)


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


def test_a_pass_one_release_adds_counts_only_if_the_modules_then_differ():
    """Releases add, rename and move passes all the time: one that leaves the module as the
    other release has it is no difference (jax 0.11.2 → 0.12.0 adds dozens); one that makes
    another module is named, with what each release ran there."""
    old = dumps(PIPE, MODULE)
    extra = dumps(PIPE[:1] + [("simp", "licm", "dce")] + PIPE[1:], renumbered(MODULE, 3))
    assert first_difference(old, extra)["status"] == "same"
    changed = extra[:1] + [{**extra[1], "text": MODULE.replace("cosine(", "sine(")}]
    found = first_difference(old, changed + [{**d, "text": changed[1]["text"]}
                                             for d in extra[2:]])
    assert (found["status"], found["pass"], found["pipeline"]) == ("differ", "licm", "simp")
    assert (found["old_passes"], found["new_passes"]) == ([], [["simp", "licm"]])
    assert any(line.startswith("+") and "sine(" in line for line in found["diff"])


def test_the_a6000_fix_is_named_where_the_releases_part():
    """The shape of jax 0.11.2 → 0.12.0 for the A6000: both run copy-insertion; then 0.11.2's
    copy_fusion merges the copies of a broadcast into one fusion while 0.12.0 first runs a new
    pass, constant-fill-copy-rewriter, and its copy_fusion finds nothing left to do."""
    merged = MODULE.replace("cosine(", "tanh(")
    rewritten = MODULE.replace("cosine(", "exp(")
    pipe = "pre-scheduling-copy-insertion"
    old = dumps([(pipe, "pipeline-start", "copy-insertion"), (pipe, "copy-insertion",
                 "copy_fusion")], MODULE) + dumps([(pipe, "copy_fusion", "sanitize")], merged)
    new = dumps([(pipe, "pipeline-start", "copy-insertion"), (pipe, "copy-insertion",
                 "constant-fill-copy-rewriter")], MODULE) + dumps(
        [(pipe, "constant-fill-copy-rewriter", "copy_fusion")], rewritten)
    found = first_difference(old, new)
    assert (found["pass"], found["pipeline"]) == ("constant-fill-copy-rewriter", pipe)
    assert (found["old_passes"], found["new_passes"]) == (
        [[pipe, "copy_fusion"]], [[pipe, "constant-fill-copy-rewriter"]])


def test_a_shared_pass_that_already_differs_is_named_not_the_pass_added_after_it():
    old = dumps([("simp", "pipeline-start", "algsimp"), ("simp", "algsimp", "dce")], MODULE)
    new = dumps([("simp", "pipeline-start", "algsimp")], MODULE) + dumps(
        [("simp", "algsimp", "licm")], MODULE.replace("cosine(", "sine(")) + dumps(
        [("simp", "licm", "dce")], MODULE.replace("cosine(", "exp("))
    found = first_difference(old, new)
    assert (found["pass"], found["how"]) == ("algsimp", "the module differs")


def test_extra_dumps_at_the_start_are_compared_once_both_have_a_module():
    old = dumps(PIPE, MODULE)
    new = dumps([("early", "pipeline-start", "sharding-remover"),
                 ("early", "sharding-remover", "x")], renumbered(MODULE, 2)) + dumps(PIPE, MODULE)
    assert first_difference(old, new)["status"] == "same"
    assert first_difference([], new)["how"] == "only one release's module was dumped"


def test_the_named_pass_carries_its_own_pipeline_and_is_never_a_pipeline_start():
    start = [("a", "pipeline-start", "one")]
    old = dumps(start, MODULE) + dumps([("a", "one", "end")], MODULE.replace("cosine(", "sine("))
    new = dumps(start, MODULE) + dumps([("b", "pipeline-start", "bpass"), ("b", "bpass", "x")],
                                       MODULE.replace("cosine(", "exp("))
    found = first_difference(old, new)
    assert (found["pipeline"], found["pass"]) == ("b", "bpass")
    assert found["old_passes"] == [["a", "one"]]
    swapped = dumps(start, MODULE) + dumps([("a", "two", "end")], MODULE.replace(
        "cosine(", "tanh(")) + dumps([("a", "one", "x")], MODULE.replace("cosine(", "exp("))
    in_order = dumps(start, MODULE) + dumps([("a", "one", "two")], MODULE.replace(
        "cosine(", "sine(")) + dumps([("a", "two", "x")], MODULE.replace("cosine(", "tanh("))
    found = first_difference(in_order, swapped)
    assert found["status"] == "differ" and found["pass"] != "pipeline-start"


VARIANTS = [MODULE, MODULE.replace("cosine(", "sine("), MODULE.replace("cosine(", "exp("),
            MODULE.replace("cosine(", "tanh(")]


@given(st.lists(st.integers(0, len(VARIANTS) - 1), min_size=1, max_size=8),
       st.data())
def test_passes_that_change_nothing_never_make_a_difference(states, data):
    """Against the oracle "the same sequence of modules is the same program": inserting, on
    either side, passes whose module is the one before them (renumbered) never makes a
    difference; changing the last module always does."""
    base = [("p", f"pass{i}", f"pass{i + 1}") for i in range(len(states))]
    old = [{"file": f"module_0001.jit_outer_loop.{i:04d}.{p}.after_{a}.before_{b}.txt",
            "text": VARIANTS[v]} for i, ((p, a, b), v) in enumerate(zip(base, states))]
    new = [dict(d) for d in old]
    for _ in range(data.draw(st.integers(0, 3))):
        at = data.draw(st.integers(0, len(new)))
        new.insert(at, {"file": f"module_0001.jit_outer_loop.0000.p.after_new{len(new)}"
                                f".before_x.txt",
                        "text": renumbered(new[max(at - 1, 0)]["text"],
                                           data.draw(st.integers(0, 9)))})
    assert first_difference(old, new)["status"] == "same"
    other = (states[-1] + 1) % len(VARIANTS)
    new[-1] = {**new[-1], "text": VARIANTS[other]}
    assert first_difference(old, new)["status"] == "differ"


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
