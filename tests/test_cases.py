"""The case protocol read without jax: parameters, their types, bad files; a command's JSON."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.errors import UserError
from jaxbisect.lab.runs import command_value, question_key
from jaxbisect.search.question import Question, question_from
from repro.case import CaseError, parse_params, parse_value, read_case

GOOD = '''"""A case."""
import jax

METRIC = "run_time"
FIXED = ("n",)
ANSWER = {"from": "0.4.30", "to": "0.4.31"}


def case(n=128, scale=1.5, fast=True, name="x", *, reps=3):
    return jax.jit(lambda x: x), (jax.ShapeDtypeStruct((n,), "float32"),)
'''


def write(tmp_path, text: str, name: str = "mycase.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reads_parameters_and_constants_without_running_it(tmp_path):
    case = read_case(write(tmp_path, GOOD + "\nraise SystemExit('never run')\n"))
    assert case.defaults == {"n": 128, "scale": 1.5, "fast": True, "name": "x", "reps": 3}
    assert (case.metric, case.fixed, case.answer) == ("run_time", ("n",),
                                                       {"from": "0.4.30", "to": "0.4.31"})
    assert case.name == "mycase" and case.doc == "A case."
    assert case.as_json({"n": 4})["params"]["n"] == 4


@pytest.mark.parametrize("text, words", [
    ("def case(:\n", "syntax error"),
    ("import jax\n", r"no case\(\) function"),
    ("def case(n):\n    pass\n", "needs a default"),
    ("def case(*args):\n    pass\n", "keyword parameters"),
    ("def case(n=[1]):\n    pass\n", "must be an int"),
    ("def case(n=len('x')):\n    pass\n", "must be a literal"),
    ("METRIC = 'speed'\ndef case(n=1):\n    pass\n", "not one of"),
    ("FIXED = ('m',)\ndef case(n=1):\n    pass\n", "not parameters"),
])
def test_a_bad_case_file_is_one_clear_error(tmp_path, text, words):
    with pytest.raises(CaseError, match=words) as caught:
        read_case(write(tmp_path, text))
    assert "\n" not in str(caught.value)


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(CaseError, match="no case file"):
        read_case(tmp_path / "absent.py")
    with pytest.raises(CaseError, match="folder"):
        read_case(tmp_path)


@given(st.integers(-10**12, 10**12))
def test_int_parameters_round_trip(value):
    assert parse_value(str(value), 1, "n") == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_parameters_round_trip(value):
    assert parse_value(repr(value), 1.0, "x") == value


@pytest.mark.parametrize("text, value", [("true", True), ("0", False), ("Off", False)])
def test_bool_parameters(text, value):
    assert parse_value(text, False, "b") is value


@pytest.mark.parametrize("item, words", [
    ("n=abc", "is an int"), ("fast=maybe", "is a bool"), ("scale=nan", "NaN"),
    ("m=3", "no parameter 'm'"), ("n", "NAME=VALUE"), ("=3", "NAME=VALUE"),
])
def test_bad_params_are_refused(tmp_path, item, words):
    case = read_case(write(tmp_path, GOOD))
    with pytest.raises(CaseError, match=words):
        parse_params(case, [item])


def test_params_typed_by_their_default(tmp_path):
    case = read_case(write(tmp_path, GOOD))
    assert parse_params(case, ["n=64", "scale=2", "fast=false", "name=y=z"]) == {
        "n": 64, "scale": 2.0, "fast": False, "name": "y=z"}


def test_question_from_the_command_line(tmp_path):
    path = str(write(tmp_path, GOOD))
    q = question_from(None, path, ["n=8"], ())
    assert (q.metric, q.params, q.noisy) == ("run_time", {"n": 8}, True)
    argv = q.harness_argv()
    assert argv[0] == "--json" and argv[argv.index("--case") + 1] == q.case.path
    assert argv[argv.index("--metric") + 1] == "run_time" and "n=8" in argv
    assert question_from("memory", path, [], ()).noisy is False
    assert question_from("memory", path, [], (), kind="noisy").noisy is True
    # The key follows the program's content and every option, not the file's name.
    edited = write(tmp_path, GOOD.replace("128", "256"), "other.py")
    assert question_key(q) != question_key(question_from(None, str(edited), ["n=8"], ()))
    assert question_key(q) == question_key(question_from(None, path, ["n=8"], ()))
    assert question_key(q) != question_key(question_from(None, path, ["n=9"], ()))


@pytest.mark.parametrize("args, words", [
    (("speed", "CASE", [], ()), "one of"),
    (("run_time", "CASE", [], (), "a6000"), "needs a run"),
    ((None, None, ["n=1"], ("true",)), "--param"),
    ((None, None, [], ("true",)), "needs --case"),
    (("t", None, [], ("true",), "a6000"), "cannot run there"),
    ((None, "MISSING", [], ()), "no case file"),
])
def test_bad_questions(tmp_path, args, words):
    path = str(write(tmp_path, GOOD))
    args = tuple(path if a == "CASE" else str(tmp_path / "nope.py") if a == "MISSING" else a
                 for a in args)
    with pytest.raises(UserError, match=words):
        question_from(*args[:4], target=args[4] if len(args) > 4 else "")


def test_command_value_reads_the_last_line():
    assert command_value('noise\n{"t": 1}\n{"t": 2.5, "ok": true}\n\n', "t") == 2.5


@pytest.mark.parametrize("stdout, words", [
    ("", "printed nothing"), ("hello\n", "JSON object"), ("[1, 2]\n", "JSON object"),
    ('{"s": 1}\n', "no field 't'"), ('{"t": "fast"}\n', "not a number"),
    ('{"t": true}\n', "not a number"), ('{"t": NaN}\n', "finite"),
])
def test_command_without_the_field_is_bad_input(stdout, words):
    with pytest.raises(UserError, match=words):
        command_value(stdout, "t")


def test_command_questions_are_noisy_unless_told():
    assert Question(metric="t", command=("x",)).noisy
    assert not Question(metric="t", command=("x",), kind="deterministic").noisy
