"""The standalone reproducer's pure parts: the program written from a case (jaxbisect/
program.py), what its runs say (jaxbisect/stages/program_runs.py), and a nondeterministic output
in the bisection (classify.outputs). No JAX release: tests/test_reproducer_releases.py runs
the programs."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest
from conftest import REPO
from fake_lab import FakeLab
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.lab import backends
from jaxbisect.report.document import document
from jaxbisect.report.markdown.reproduce import standalone_script
from jaxbisect.search.classify import NONDETERMINISTIC, Label
from jaxbisect.search.comparing import classifier_for
from jaxbisect.search.question import Question, Run, question_from
from jaxbisect.stages.program import (
    MAX_LINES,
    Program,
    case_source,
    why_not,
    write_program,
)
from jaxbisect.stages.program_runs import ProgramRun, error_line, figures, install_line, shows
from jaxbisect.stages.releases import MetricRequest, bisect_metric
from repro.case import CONSTANTS, read_case
from repro.tpu_target import TARGETS, deviceless_program
from repro.units import MIB, MIB_TEXT, column, mib

CPU = backends.get("cpu")

CASES = sorted((REPO / "repro" / "cases").glob("*.py"))
TOOLKIT = ("repro", "jaxbisect", "bisect", "tests")


def answer_program(path: Path):
    """The program a bisection of the case writes: at its search size where it has one."""
    case = read_case(path)
    params = dict(case.search_params)
    over = case.over
    if over and isinstance(params.get(over[0]), tuple):
        over = (over[0], params.pop(over[0]))
    return case, write_program(case, case.metric, params, over)


def test_every_shipped_case_makes_a_short_plain_program():
    assert len(CASES) >= 7
    for path in CASES:
        case, program = answer_program(path)
        tree = ast.parse(program.text)  # it parses
        assert program.lines <= MAX_LINES, (path.name, program.lines)
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                    for a in n.names} | {n.module.split(".")[0] for n in ast.walk(tree)
                                         if isinstance(n, ast.ImportFrom)}
        assert imported and not imported & set(TOOLKIT), (path.name, imported)
        assert "jax" in imported
        bound = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)}
        assert not bound & set(CONSTANTS), path.name  # no ANSWER, METRIC, OVER …
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert "case" in defined and not {"shape", "evidence"} & defined, path.name
        docstrings = [n for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef)) and ast.get_docstring(n)]
        assert not docstrings, path.name


def test_the_program_measures_what_the_metric_says():
    scan, program = answer_program(REPO / "repro" / "cases" / "scan_growth.py")
    # The search's size and its two values of n_outer: constant against grows is visible.
    assert "for value in (2, 5):" in program.text
    assert "case(n_res=32, n_outer=value)" in program.text
    assert "output_size_in_bytes + m.temp_size_in_bytes" in program.text
    assert eval(MIB_TEXT) == MIB and f"/ {MIB_TEXT}:.2f}} MiB" in program.text
    _, timing = answer_program(REPO / "repro" / "cases" / "while_loop_cpu_slowdown.py")
    assert "statistics.quantiles(times, n=4, method=\"inclusive\")[0]" in timing.text \
        and " ms " in timing.text
    _, error = answer_program(REPO / "repro" / "cases" / "jvp_vmap_symbolic_zero.py")
    assert error.text.rstrip().endswith('print("no error")')
    flagged = write_program(scan, "memory", {"n_res": 8}, (), xla_flags="--xla_foo=true")
    assert flagged.command == "XLA_FLAGS=--xla_foo=true python repro.py"
    assert "case(n_res=8)" in flagged.text
    # measured at 3 values at most (the first, middle and last of those a shape is fitted at)
    wide = write_program(scan, "memory", {"n_res": 8}, ("n_outer", (1, 2, 5, 10, 15)))
    assert "for value in (2, 10, 15):" in wide.text  # n_outer 1 is not fitted


SIZE_PRINT = re.compile(r"^[\w=' ]+: (\d+\.\d\d) MiB(, a run's peak)?$")


def printed_sizes(text: str) -> list[str]:
    """What each line of ``text`` that prints a size prints, run with stand-ins for what jax
    and the kernel give (a plan of 3 MiB output + 0.5 MiB temp; a peak of 3.5 MiB above
    1 MiB resident, in the kernel's KiB)."""
    import contextlib
    import io
    from types import SimpleNamespace

    stand_ins = {"m": SimpleNamespace(output_size_in_bytes=3 * MIB, temp_size_in_bytes=MIB // 2),
                 "kib": lambda k: {"VmHWM": 4608, "VmRSS": 1024}[k], "base": 1024,
                 "peak": "VmHWM:\t    3584 kB\n", "value": 5}
    out = []
    for line in text.splitlines():
        if "print(" in line and any(w in line for w in ("_in_bytes", "kib(", "peak")):
            said = io.StringIO()
            with contextlib.redirect_stdout(said):
                exec(line.strip(), dict(stand_ins))
            out.append(said.getvalue().strip())
    return out


def test_every_program_prints_a_size_in_mib_as_the_report_reads_it():
    """The first screen's program (on the CPU, a run's peak, a TPU compiled without one) and
    *Without the toolkit*'s measure.py (a GPU compiled without one) print a size the same way:
    MiB with two decimals, which the program's recorded run is read back by."""
    scan = read_case(REPO / "repro" / "cases" / "scan_growth.py")
    doc = {"case": {"params": {"n_res": 8}, "source": scan.source, "path": "scan.py"},
           "over": None, "metric": {"name": "memory"}}
    over = {"name": "n_outer", "values": [1, 2]}
    programs = {
        "plan": write_program(scan, "memory", {"n_res": 8}).text,
        "plan over n_outer": write_program(scan, "memory", {"n_res": 8}, ("n_outer", (1, 2))).text,
        "peak": write_program(scan, "memory", {"n_res": 8}, peak=True).text,
        "peak over n_outer": write_program(scan, "memory", {"n_res": 8}, ("n_outer", (1, 2)),
                                           peak=True).text,
        "tpu": deviceless_program(TARGETS["v5e"], case_source(scan.source), metric="memory"),
        "measure.py": standalone_script(doc),
        "measure.py over n_outer": standalone_script({**doc, "over": over}),
        "measure.py, a run's peak": standalone_script({**doc, "metric": {"name": "peak_memory"}}),
    }
    for name, text in programs.items():
        sizes = printed_sizes(text)
        assert sizes, name  # it prints a size
        for said in sizes:
            assert SIZE_PRINT.match(said), (name, said)
            assert figures(Program(text, "memory", {}), said) == [3.5], (name, said)
    assert printed_sizes(programs["plan over n_outer"]) == ["n_outer=5: 3.50 MiB"]
    assert printed_sizes(programs["measure.py over n_outer"]) == ["n_outer=5: 3.50 MiB"]


def test_questions_without_a_plain_program_say_why():
    case = read_case(CASES[0])
    assert why_not("error", case=None)
    assert why_not("memory", case=case, target="a6000")
    assert why_not("peak_memory", case=case)
    assert why_not("memory", case=case) is None


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.lists(st.integers(0, n - 1), max_size=3), min_size=n, max_size=n),
    st.lists(st.integers(0, n - 1), max_size=3))))
def test_the_case_keeps_exactly_the_definitions_it_reaches(shape):
    """Against an oracle: helpers h0 … hN-1 that call each other, ``case`` some of them; the
    program keeps the helpers reachable from ``case`` and nothing else of the module."""
    n, calls, from_case = shape
    lines = ['"""A docstring."""', "import math", "import os", "import jax",
             'ANSWER = {"old": 1}', 'METRIC = "memory"', "UNUSED = 3"]
    for i in range(n):
        body = " + ".join(f"h{j}(x)" for j in calls[i] if j != i) or "x"
        lines += ["", f"def h{i}(x):", f'    """h{i}."""', f"    return math.sqrt({body})"]
    reach = " + ".join(f"h{j}(1.0)" for j in from_case) or "1.0"
    lines += ["", "def case(n=1):", '    """The case."""',
              f"    return jax.jit(lambda: {reach}), ()",
              "", "def shape(name, points, params):", "    return {}"]
    kept = case_source("\n".join(lines))
    tree = ast.parse(kept)
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    reachable, todo = set(), list(from_case)
    while todo:
        i = todo.pop()
        if i not in reachable:
            reachable.add(i)
            todo += [j for j in calls[i] if j != i]
    assert defined == {"case", *(f"h{i}" for i in reachable)}
    imported = {a.name for node in tree.body if isinstance(node, ast.Import) for a in node.names}
    assert imported == {"jax", *(["math"] if reachable else [])}
    assert "ANSWER" not in kept and "UNUSED" not in kept and '"""' not in kept


def test_module_settings_stay_and_their_names_are_imported():
    source = ("import os\nimport jax\nimport jax.numpy as jnp\n"
              "os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'\n"
              "jax.config.update('jax_enable_x64', True)\n"
              "FIXED = ()\n\ndef case(n=2):\n    # a comment line\n"
              "    return jax.jit(jnp.sin), (jnp.ones(n),)\n")
    kept = case_source(source)
    assert "import os" in kept and "os.environ['XLA_FLAGS']" in kept
    assert "jax.config.update" in kept and "FIXED" not in kept and "# a comment" not in kept


def test_an_error_line_is_the_metrics_own():
    traceback = """jax.errors.SimplifiedTraceback: For simplicity, JAX has removed frames

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/tmp/x/repro.py", line 3, in <module>
    jax.block_until_ready(fn(*args))
jaxlib.xla_extension.XlaRuntimeError: INTERNAL: failed at 0x7f3a2c
  second line of the message
--------------------
For simplicity, JAX has removed its internal frames from the traceback."""
    # the whole message, up to jax's note on removed frames (its figures may be lines down)
    assert error_line(traceback) == ("XlaRuntimeError: INTERNAL: failed at 0x…\n"
                                     "  second line of the message")
    assert error_line("Traceback (most recent call last):\n  File x\nKeyError") == "KeyError"
    assert error_line("Killed") == "Killed"
    # this machine's paths in a quoted source location: the file's name alone
    quoted = ('Traceback (most recent call last):\n  File x\nValueError: at source_file='
              '"/root/.cache/x/programs/run-n0bme0u5/repro.py" source_line=33 in '
              '/usr/lib/python3/site-packages/jax/_src/core.py')
    assert error_line(quoted) == ('ValueError: at source_file="repro.py" source_line=33 in '
                                  'core.py')


def test_the_install_line_pins_what_the_environment_held():
    line = install_line({"scipy": "1.15.2", "numpy": "2.2.4", "jaxlib": "0.5.3",
                         "jax": "0.5.3", "ml-dtypes": "0.5.1"})
    assert line == ("pip install jax==0.5.3 jaxlib==0.5.3 ml-dtypes==0.5.1 numpy==2.2.4 "
                    "scipy==1.15.2")


def run(output: str, exit: int = 0) -> ProgramRun:
    return ProgramRun("x", 1, output, exit, {})


def test_shows_the_change_the_way_the_answer_says():
    scan, program = answer_program(REPO / "repro" / "cases" / "scan_growth.py")
    constant, grows = run("n_outer=2: 25.38 MiB\nn_outer=5: 25.38 MiB"), \
        run("n_outer=2: 37.88 MiB\nn_outer=5: 75.38 MiB")
    assert figures(program, grows.output) == [37.88, 75.38]
    assert shows(program, "regression", constant, grows)
    assert not shows(program, "fix", constant, grows)
    assert not shows(program, "regression", grows, grows)
    tiny = run("n_outer=2: 0.00 MiB\nn_outer=5: 0.00 MiB")  # a minimal case, at 2 decimals
    assert not shows(program, "regression", tiny, tiny)
    _, timing = answer_program(REPO / "repro" / "cases" / "while_loop_cpu_slowdown.py")
    fast, slow = run("run_time: 0.210 ms (median of 100 calls)"), \
        run("run_time: 23.400 ms (median of 13 calls)")
    assert shows(timing, "regression", fast, slow) and not shows(timing, "fix", fast, slow)
    assert not shows(timing, "regression", fast, run("run_time: 0.220 ms (median of 9 calls)"))
    _, output = answer_program(REPO / "repro" / "cases" / "exp_nan_under_jit.py")
    assert shows(output, "changed", run("nan"), run("5.562692138966e-310"))
    assert not shows(output, "changed", run("nan"), run("nan"))
    _, error = answer_program(REPO / "repro" / "cases" / "jvp_vmap_symbolic_zero.py")
    assert shows(error, "changed", run("no error"), run("TypeError: x", 1))
    assert not shows(error, "changed", run("TypeError: x", 1), run("TypeError: x", 1))


def test_one_size_formatter():
    assert mib(6464000772) == "6164.55 MiB" and column("bytes") == " (MiB)"
    assert column("s") == " (s)" and column(None) == ""


# -- a nondeterministic output in the bisection ------------------------------------------


def digest(value: float) -> dict:
    return {"shapes": [[[], "float64"]], "values": [repr(value) if math.isnan(value) else value,
                                                    0.0, 0.0], "sha256": repr(value)}


def test_an_output_whose_runs_differ_is_nondeterministic_not_a_value():
    q = Question(metric="output", case=read_case(REPO / "repro" / "cases" /
                                                 "exp_nan_under_jit.py"))
    make = classifier_for(q, None)
    nan = (("()",), (math.nan, 0.0, 0.0))
    # values that differ beyond the tolerance from run to run (a race, say)
    garbage = [(("()",), (v, 0.0, 0.0)) for v in (1.5, 2.5, 3.5)]
    c = make([nan, nan], garbage[:2])
    assert c.ends().distinct and "new end's output differs between runs" in c.ends().reason
    placed = c(garbage[1:])
    assert placed.label is Label.NEW and "nondeterministic" in placed.reason
    assert c([nan, nan]).label is Label.OLD
    assert not make(garbage[:2], garbage[1:]).ends().distinct  # both nondeterministic: alike
    assert make([nan], [nan]).end([garbage[0], garbage[1]]) == NONDETERMINISTIC


def test_a_bisection_says_which_releases_are_nondeterministic(recorded_catalogue):
    """exp(x * nan) at 0.6.2 prints another garbage value each run: the bisection measures
    an output twice a release, names 0.6.2 nondeterministic and shows no value for it."""
    values = {"0.6.0": [math.nan, math.nan], "0.6.1": [math.nan, math.nan],
              "0.6.2": [5.5e-310, 6.9e-310]}

    def answer(version: str, question: Question, number: int) -> Run:
        return Run(release=version, number=number, status="ok",
                   samples=(digest(values[version][number - 1]),))

    question = question_from("output", str(REPO / "repro" / "cases" / "exp_nan_under_jit.py"),
                             [], ())
    lab = FakeLab(answer)
    b = bisect_metric(recorded_catalogue, MetricRequest("0.6.0", "0.6.2", "cpu", question),
                      lab, lambda m: None)
    doc = document(b, None)
    assert doc["status"] == "found"
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.6.1", "0.6.2")
    assert sorted({(v, k) for v, k, _ in lab.asked}) == [
        (v, k) for v in ("0.6.0", "0.6.1", "0.6.2") for k in (1, 2)]
    assert doc["nondeterministic_releases"] == ["0.6.2"]
    new = next(p for p in doc["probes"] if p["jax"] == "0.6.2")
    assert new["nondeterministic"] and new["figure"]["nondeterministic"]
    assert "values" not in new["figure"] and len(new["figure"]["runs"]) == 2
    assert not any(p.get("nondeterministic") for p in doc["probes"] if p["jax"] != "0.6.2")


def test_a_plain_program_gets_a_shells_environment(monkeypatch):
    from jaxbisect.lab.harness import plain_environ

    monkeypatch.setenv("PYTHONPATH", "/somewhere/repro")
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    monkeypatch.setenv("XLA_FLAGS", "--xla_dump_to=/tmp/x")
    env = plain_environ("--xla_cpu_use_thunk_runtime=false")
    assert "PYTHONPATH" not in env and "JAX_PLATFORMS" not in env
    assert env["XLA_FLAGS"] == "--xla_cpu_use_thunk_runtime=false"
    assert "XLA_FLAGS" not in plain_environ()


def test_the_stage_writes_at_the_search_size_and_says_when_an_end_cannot_run(
        recorded_catalogue, tmp_path):
    """A shape searched small (the scan case: n_res 32, n_outer 2 and 5) is written at that
    size; an end whose environment cannot be had leaves the program without a measured
    answer (shows_change null), and nothing of it is stored: a rerun tries again."""
    from fake_lab import scripted

    from jaxbisect.lab.store import Store
    from jaxbisect.stages.program_runs import reproducer_of, sizes
    from repro.case import SCAN_CASE

    def shape(version: str, number: int):
        return ["grows", 1.0] if version == "0.5.1" else ["constant", 0.0]

    question = question_from(None, str(SCAN_CASE), [], ())
    store = Store(tmp_path / "store")
    b = bisect_metric(recorded_catalogue, MetricRequest("0.5.0", "0.5.1", "cpu", question),
                      FakeLab(scripted(shape), store), lambda m: None)
    assert b.search.status == "found"
    assert sizes(b) == ({"n_res": 32}, ("n_outer", (2, 5)))
    assert sizes(b, {"kept_at_start": True, "params": {"n_res": 3, "n_inner": 2}}) == (
        {"n_res": 3, "n_inner": 2}, ("n_outer", (2, 5)))
    part = reproducer_of(b, FakeLab(scripted(shape), store), lambda m: None)
    assert part["why_not"] is None and part["lines"] <= MAX_LINES
    assert "case(n_res=32, n_outer=value)" in part["program"]
    assert [(e["jax"], e["role"], e["exit"]) for e in part["ends"]] == [
        ("0.5.0", "last good", None), ("0.5.1", "first bad", None)]
    assert part["shows_change"] is None and "not installed" in part["ends"][0]["output"]
    assert not list((tmp_path / "store").rglob("program-*.json"))


def test_the_program_is_nondeterministic_exactly_where_one_ends_runs_differ(
        recorded_catalogue, tmp_path):
    """Runs read back from the store (no environment): two runs of one end that print
    different values make the program nondeterministic, each run's output kept; runs that
    agree, or times (which always vary), do not."""
    import hashlib
    from types import SimpleNamespace

    from jaxbisect.lab.store import Key, Store
    from jaxbisect.stages.program_runs import RUNS, reproducer

    def stage(metric: str, case: str, printed: dict) -> dict:
        program = write_program(read_case(REPO / "repro" / "cases" / case), metric, {}, ())
        store = Store(tmp_path / metric / case)
        for version, outputs in printed.items():
            for number, output in enumerate(outputs, 1):
                key = Key(version, "cpu", "program",
                          {"program": hashlib.sha256(program.text.encode()).hexdigest(),
                           "xla_flags": program.xla_flags, "run": number})
                store.put(key, ProgramRun(version, number, output, 0, {}).as_json())
        lab = SimpleNamespace(store=store, remeasure=False)
        ends = [(recorded_catalogue.get(v), role)
                for v, role in zip(printed, ("last good", "first bad"))]
        return reproducer(program, ends, CPU, lab, direction="changed", timeout=1,
                          say=lambda message: pytest.fail(f"measured: {message}"))

    assert RUNS == 2
    garbage = stage("output", "exp_nan_under_jit.py",
                    {"0.6.1": ["nan", "nan"], "0.6.2": ["4.74e-322", "5.562692138966e-310"]})
    assert garbage["nondeterministic"] and garbage["shows_change"]
    assert [e.get("outputs") for e in garbage["ends"]] == [
        None, ["4.74e-322", "5.562692138966e-310"]]
    steady = stage("output", "exp_nan_under_jit.py",
                   {"0.6.1": ["nan", "nan"], "0.6.2": ["1e-310", "1e-310"]})
    assert not steady["nondeterministic"] and steady["ends"][1]["output"] == "1e-310"
    times = stage("run_time", "while_loop_cpu_slowdown.py",
                  {"0.4.31": ["run_time: 0.2 ms", "run_time: 0.3 ms"],
                   "0.4.33": ["run_time: 60 ms", "run_time: 61 ms"]})
    assert not times["nondeterministic"]
    # A compiled plan's memory is one figure: each end runs once (a second run stored here
    # is never read), and whether its output varies is not asked.
    plan = stage("memory", "remat_scan_memory.py",
                 {"0.5.0": ["memory: 80.87 MiB", "memory: 1.00 MiB"],
                  "0.5.1": ["memory: 420.80 MiB"]})
    assert plan["nondeterministic"] is None
    assert [e["output"] for e in plan["ends"]] == ["memory: 80.87 MiB", "memory: 420.80 MiB"]


def test_the_run_time_program_prints_the_statistic_the_search_takes_of_a_run():
    """The pasted program's run_time is the 25th percentile of its calls, as the search takes
    a run's figure (search/comparing.py low_quantile), labelled so; figures() reads it."""
    import contextlib
    import io
    import statistics

    from jaxbisect.search.placing import _quantile

    _, program = answer_program(REPO / "repro" / "cases" / "while_loop_cpu_slowdown.py")
    assert "statistics.quantiles(times, n=4, method=\"inclusive\")[0]" in program.text
    assert "(the 25th percentile of {len(times)} calls)" in program.text
    assert "statistics.median(times)" not in program.text
    times = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2]
    assert statistics.quantiles(times, n=4, method="inclusive")[0] == \
        pytest.approx(_quantile(times, 0.25)[0])
    assert statistics.median(times) != pytest.approx(_quantile(times, 0.25)[0])
    tail = program.text[program.text.index("quartile = "):]  # the program's own last lines
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(tail, {"statistics": statistics, "times": times})  # noqa: S102
    line = printed.getvalue().strip()
    assert line == f"run_time: {_quantile(times, 0.25)[0] * 1e3:.3f} ms (the 25th percentile " \
        "of 6 calls)"
    assert figures(program, line) == [pytest.approx(_quantile(times, 0.25)[0] * 1e3, abs=1e-3)]
