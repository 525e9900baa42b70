"""The XLA flag step of the explanation: the flag list, the diff, the search, end to end.

tests/data/xla-flags holds real ``XLA_FLAGS=--help`` output (stderr) of jaxlib 0.5.0 and 0.5.1
on the CPU.
"""

from __future__ import annotations

import json
import subprocess
from itertools import combinations
from pathlib import Path

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.evidence.flags import FlagChange, changed_defaults, relevant_to, search_flags
from repro.xla_flags import parse_flag_help

DATA = Path(__file__).parent / "data" / "xla-flags"
CPU_FLAG = "xla_cpu_enable_concurrency_optimized_scheduler"


def help_text(version: str) -> str:
    return (DATA / f"jax-{version}-cpu-help.txt").read_text()


# -- the flag list and its diff ----------------------------------------------------------------

def test_parses_every_flag_of_real_help_output():
    old, new = parse_flag_help(help_text("0.5.0")), parse_flag_help(help_text("0.5.1"))
    for text, flags in ((help_text("0.5.0"), old), (help_text("0.5.1"), new)):
        assert len(flags) == text.count("\n\t--") + text.startswith("\t--") > 200
        assert len({f["name"] for f in flags}) == len(flags)
    by_name = {f["name"]: f for f in new}
    assert by_name[CPU_FLAG]["default"] == "true" and by_name[CPU_FLAG]["type"] == "bool"
    assert by_name["xla_dump_to"]["default"] == ""            # printed as ""
    assert by_name["xla_gpu_cuda_data_dir"]["default"] == "./cuda_sdk_lib"
    assert by_name["xla_cpu_experimental_xnn_graph_fusion_mode"]["default"] == \
        "XNN_GRAPH_FUSION_MODE_DISABLED"
    assert {f["type"] for f in new} == {"bool", "int32", "int64", "float", "string"}
    assert {f["name"]: f for f in old}["xla_cpu_enable_fast_math"]["default"] == "false"
    assert "Comma-separated list of hlo passes" in by_name["xla_disable_hlo_passes"]["help"]


def test_help_text_over_several_lines_stays_with_its_flag():
    text = ("usage: --help\nFlags:\n\t--xla_a=1\tint32\tfirst line\nsecond line\n"
            "\t--xla_b=\"x y\"\tstring\tb\n")
    assert parse_flag_help(text) == [
        {"name": "xla_a", "default": "1", "type": "int32", "help": "first line second line"},
        {"name": "xla_b", "default": "x y", "type": "string", "help": "b"}]
    assert parse_flag_help("F parse_flags_from_env.cc] Flag parsing failed.\n") == []


def test_defaults_that_changed_from_0_5_0_to_0_5_1():
    changes = changed_defaults(parse_flag_help(help_text("0.5.0")),
                               parse_flag_help(help_text("0.5.1")))
    assert FlagChange(CPU_FLAG, "false", "true", "bool") in changes
    assert [c.name for c in changes] == sorted(c.name for c in changes)
    assert all(c.old != c.new for c in changes)
    cpu = [c.name for c in changes if relevant_to("cpu", c.name)]
    # a dump flag changes what XLA writes beside a compile, never the program: not tested
    assert "xla_dump_hlo_as_long_text" in {c.name for c in changes}
    assert cpu == [CPU_FLAG]
    cuda = [c.name for c in changes if relevant_to("cuda12", c.name)]
    assert CPU_FLAG not in cuda and "xla_gpu_triton_gemm_any" in cuda
    # flags only one release knows cannot be set in the other: never "changed"
    assert "xla_cpu_enable_mlir_tiling_and_fusion" not in {c.name for c in changes}


@given(st.dictionaries(st.sampled_from("abcdef"), st.sampled_from(["0", "1", '""']),
                       max_size=6),
       st.dictionaries(st.sampled_from("abcdef"), st.sampled_from(["0", "1", '""']),
                       max_size=6))
def test_changed_defaults_is_the_set_difference(old, new):
    as_list = lambda d: [{"name": k, "default": v, "type": "t"} for k, v in d.items()]  # noqa: E731
    got = changed_defaults(as_list(old), as_list(new))
    assert {(c.name, c.old, c.new) for c in got} == \
        {(k, old[k], new[k]) for k in old.keys() & new.keys() if old[k] != new[k]}


# -- the search, against a brute-force oracle ---------------------------------------------------

OLD, NEW = "constant", "grows"


def fake_measurer(changes, behaviour):
    """``behaviour(values)`` -> verdict, where ``values`` maps each flag to the value in force;
    a release runs with its own defaults, except the flags a test sets to the other's."""
    calls = []

    def test(release, flags):
        values = {c.name: (c.old if release == "old" else c.new) for c in changes}
        for f in flags:
            values[f.name] = f.new if release == "old" else f.old
        calls.append((release, tuple(f.name for f in flags)))
        return behaviour(values)

    return test, calls


def oracle(changes, test):
    """Every single flag, then every pair, in order: the first proven both ways."""
    for size in (1, 2):
        for subset in combinations(changes, size):
            if test("new", subset) == OLD and test("old", subset) == NEW:
                return subset
    return ()


def flag_changes(n):
    return [FlagChange(f"xla_f{i}", "false", "true", "bool") for i in range(n)]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.data())
def test_search_agrees_with_the_oracle_on_any_behaviour(n, data):
    changes = flag_changes(n)
    outcomes = st.sampled_from([OLD, NEW, "unavailable"])
    table = data.draw(st.dictionaries(st.tuples(*[st.booleans()] * n), outcomes,
                                      min_size=2 ** n, max_size=2 ** n))
    behaviour = lambda values: table[tuple(values[c.name] == "true" for c in changes)]  # noqa: E731
    test, calls = fake_measurer(changes, behaviour)
    found = search_flags(changes, test, OLD, NEW)
    assert found.culprit == oracle(changes, fake_measurer(changes, behaviour)[0])
    assert len(calls) == len(set(calls)) == len(found.tests)  # nothing measured twice
    for flags in found.restoring:
        assert test("new", flags) == OLD
    assert {s for s in found.restoring if len(s) == 1} == \
        {(c,) for c in changes if test("new", (c,)) == OLD}


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 7), st.data())
def test_search_finds_a_planted_flag(n, data):
    changes = flag_changes(n)
    culprit = data.draw(st.sampled_from(changes))
    test, _ = fake_measurer(changes, lambda v: NEW if v[culprit.name] == "true" else OLD)
    found = search_flags(changes, test, OLD, NEW)
    assert found.culprit == (culprit,) and found.restoring == ((culprit,),)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 7), st.data(), st.sampled_from(["and", "or"]))
def test_search_finds_a_planted_pair(n, data, how):
    changes = flag_changes(n)
    a, b = sorted(data.draw(st.lists(st.sampled_from(changes), min_size=2, max_size=2,
                                     unique=True)), key=changes.index)
    combine = all if how == "and" else any
    test, _ = fake_measurer(changes, lambda v: NEW if combine(
        v[f.name] == "true" for f in (a, b)) else OLD)
    found = search_flags(changes, test, OLD, NEW)
    assert found.culprit == (a, b)


def test_too_many_pairs_are_left_out():
    changes = flag_changes(12)
    test, calls = fake_measurer(changes, lambda v: NEW)
    found = search_flags(changes, test, OLD, NEW, max_pairs=10)
    assert found.culprit == () and len(calls) == 12   # 12 singles, none of the 66 pairs


# -- in real environments -----------------------------------------------------------------------

@pytest.mark.jax
def test_the_harness_lists_the_flags_of_a_release(jax_python):

    from conftest import run_repro  # noqa: F401  (same environment set-up as the harness tests)

    done = subprocess.run([str(jax_python("0.5.1")), "-m", "repro.xla_flags", "--json"],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["status"], document["jax"], document["jaxlib"]) == ("ok", "0.5.1", "0.5.1")
    recorded = parse_flag_help(help_text("0.5.1"))
    assert [f["name"] for f in document["flags"]] == [f["name"] for f in recorded]
    assert {f["name"]: f["default"] for f in document["flags"]}[CPU_FLAG] == "true"
