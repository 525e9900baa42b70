"""The one option table (repro/options.py): both entry points' parsers and every command line
the toolkit writes derive from it, so what is parsed, written out and parsed again is the same
option set, and a suggested command carries every option that shaped the answer."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxbisect import cli as bisect_cli
from jaxbisect.lab.runs import KEYED, key_fields, question_key
from jaxbisect.report.commands import explain_argv, reproduce_argv
from jaxbisect.search.question import question_from
from jaxbisect.stages.releases import MetricRequest
from repro import cli as repro_cli
from repro.options import (
    BISECT,
    FLAG_VALUED,
    OPTIONS,
    REPRO,
    Option,
    command_line,
    error_regex,
    fraction,
    n_outer_list,
    options_of,
    positive_int,
    seconds,
    seconds_or_off,
    variant_number,
)

SCAN = str(Path(repro_cli.__file__).resolve().parent / "cases" / "scan_growth.py")
EXAMPLES = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
# A value argparse never mistakes for an option: it does not start with a dash.
word = st.text(st.characters(codec="ascii", exclude_characters="\x00\r\n"), min_size=1,
               max_size=12).filter(lambda t: not t.startswith("-"))
flags = st.text(st.characters(codec="ascii", exclude_characters="\x00\r\n"), min_size=1,
                max_size=12).map(lambda t: f"--xla_{t}")


def value_of(option: Option) -> st.SearchStrategy:
    """Values argparse gives this option, as it would parse them."""
    s = option.settings
    kind, nargs = s.get("type"), s.get("nargs")
    if s.get("action") == "store_true":
        return st.booleans()
    if s.get("action") == "append":
        return st.lists(flags if option.flag in FLAG_VALUED else word, max_size=3)
    if nargs == "+":
        one = (st.lists(st.integers(1, 99), min_size=1, max_size=3) if kind is n_outer_list
               else st.integers(0, 2) if kind is variant_number else word)
        return st.lists(one, min_size=1, max_size=3)
    if nargs == "*":  # --check: bare, or OLD NEW
        return st.one_of(st.just([]), st.lists(word, min_size=2, max_size=2))
    if "choices" in s:
        return st.sampled_from(s["choices"])
    if kind is positive_int:
        return st.integers(1, 10**6)
    if kind is seconds:
        return st.floats(0.001, 1e6, allow_nan=False)
    if kind is seconds_or_off:
        return st.one_of(st.just(0.0), st.floats(0.001, 1e6, allow_nan=False))
    if kind is fraction:
        return st.floats(0.0001, 0.9999)
    if kind is error_regex:
        return st.sampled_from(["RESOURCE_EXHAUSTED", r"memory space vmem.*limit \d+", "a b"])
    if kind is Path:
        return word.map(Path)
    return flags if option.flag in FLAG_VALUED else word


def option_sets(entry: str) -> st.SearchStrategy:
    """Some of ``entry``'s options, each with a value (--json or --check, not both)."""
    drawn = st.fixed_dictionaries({}, optional={o.dest: value_of(o) for o in options_of(entry)})
    return drawn.filter(lambda v: not (v.get("json") and v.get("check") is not None))


def raw_parser(entry: str) -> argparse.ArgumentParser:
    """The entry point's parser, without the checks its ``parse`` makes after parsing."""
    return bisect_cli.parser() if entry == BISECT else repro_cli.parser()


def table_part(namespace: argparse.Namespace, entry: str) -> dict:
    return {o.dest: getattr(namespace, o.dest) for o in options_of(entry)}


@pytest.mark.parametrize("entry", [BISECT, REPRO])
@EXAMPLES
@given(data=st.data())
def test_a_parsed_option_set_written_out_parses_back_the_same(entry, data):
    values = data.draw(option_sets(entry))
    argv = command_line(entry, values)
    assert shlex.split(shlex.join(argv)) == argv
    parsed = table_part(raw_parser(entry).parse_args(argv), entry)
    for dest, value in values.items():  # what was given is what is read
        assert parsed[dest] == value or (not value and parsed[dest] in (None, [], False))
    again = table_part(raw_parser(entry).parse_args(command_line(entry, parsed)), entry)
    assert again == parsed


QUESTIONS = st.fixed_dictionaries({
    "params": st.lists(st.sampled_from(["n_inner=10", "n_res=8", "dtype=float64",
                                        "variant=2"]), unique=True, max_size=3),
    "over": st.one_of(st.none(), st.just("none"),
                      st.lists(st.integers(1, 20), min_size=2, max_size=4, unique=True)
                      .map(lambda ns: "n_outer=" + ",".join(map(str, sorted(ns))))),
    "metric": st.sampled_from(["memory", "compile_time", "run_time", "peak_memory"]),
    "samples": st.one_of(st.none(), st.integers(1, 9)),
    "xla_flags": st.one_of(st.just(""), flags, st.just("--xla_a=1 --xla_b='x y'")),
})


@EXAMPLES
@given(asked=QUESTIONS)
def test_the_harness_reads_the_question_it_is_given(asked):
    """Question.harness_argv is python -m repro's command line for the same question."""
    q = question_from(asked["metric"], SCAN, asked["params"], (), xla_flags=asked["xla_flags"],
                      samples=asked["samples"], over=asked["over"])
    args = repro_cli.parse_args(q.harness_argv())
    assert (args.case.path, args.params, args.over, args.metric, args.xla_flags) \
        == (q.case.path, q.params, q.over, q.metric, q.xla_flags)
    assert args.samples == (1 if q.metric == "peak_memory" and q.samples is None
                            else q.samples)
    assert args.json and args.label == "case" and args.compare == {}


def test_every_option_the_harness_takes_is_in_the_stored_runs_key(tmp_path):
    assert {o.dest for o in OPTIONS if o.harness} == set(KEYED)
    other = tmp_path / "other.py"
    other.write_text(Path(SCAN).read_text() + "\n# edited\n")
    base = question_from("memory", SCAN, [], ())
    changed = {
        "case": question_from("memory", str(other), [], ()),
        "param": question_from("memory", SCAN, ["n_res=8"], ()),
        "over": question_from("memory", SCAN, [], (), over="none"),
        "metric": question_from("compile_time", SCAN, [], ()),
        "samples": question_from("memory", SCAN, [], (), samples=3),
        "target": question_from("memory", SCAN, [], (), target="a6000"),
        "xla_flags": question_from("memory", SCAN, [], (), xla_flags="--xla_a=1"),
        "compare": replace(base, compare=True),
        "devices": question_from("memory", SCAN, [], (), devices=4),
    }
    assert set(changed) == set(KEYED)
    for dest, q in changed.items():
        field = KEYED[dest][0]
        assert key_fields(q).get(field) != key_fields(base).get(field), dest
        assert question_key(q) != question_key(base), dest


def test_every_option_that_shapes_the_answer_is_in_the_suggested_commands():
    """A request that sets every such option: its Reproduce line names each (--explain's
    own line the release it explains)."""
    q = question_from("compile_time", SCAN, ["n_res=8"], (), target="a6000", xla_flags="--xla_a=1",
                      samples=3, kind="noisy", over="none", devices=4)
    q = replace(q, error_match="RESOURCE_EXHAUSTED")  # shapes an error metric's answer
    request = MetricRequest(start="0.5.0", end="0.5.1", backend="cuda12-deviceless", question=q,
                            threshold=0.2, runs=5, max_runs=7, include_yanked=True,
                            try_xla_flags=("--xla_b=1",), interior_budget=30.0, commits=True)
    line = reproduce_argv(SimpleNamespace(request=request), minimize=True)
    named = {word.split("=")[0] for word in line if word.startswith("--")}
    shaping = {o.flag for o in options_of(BISECT) if o.shapes}
    assert shaping - named == {"--explain", "--backend"}  # a target says where, not a backend
    release = SimpleNamespace(version="0.5.1")
    assert "--explain" in explain_argv(release, "cpu", q)
    assert "--backend" in reproduce_argv(SimpleNamespace(request=MetricRequest(
        start="0.5.0", end="0.5.1", backend="cpu", question=question_from("memory", SCAN, [],
                                                                          ()))))

