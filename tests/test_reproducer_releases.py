"""The standalone reproducer on real releases: the program written from a shipped case, run
by the pipeline's stage at both ends of its answer (jaxbisect/stages/program_runs.py), then run
again as a maintainer would, in plain environments installed only from the ``install`` line the
part records (no toolkit, nothing else on the path).

Small sizes where the case has them (the scan case's search size); one run is 2-5 s.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TEST_CACHE

from jaxbisect.lab import backends
from jaxbisect.lab.catalogue import load_catalogue
from jaxbisect.lab.lab import RealLab
from jaxbisect.lab.machine import uv_binary
from jaxbisect.lab.store import Store
from jaxbisect.stages.program import FILE, MAX_LINES, write_program
from jaxbisect.stages.program_runs import RUNS, figures, reproducer
from repro.case import read_case

CPU = backends.get("cpu")

CASES = REPO / "repro" / "cases"
# case, its sizes (the answer's: the scan case's search size), old end, new end, direction
ENDS = {
    "error": ("jvp_vmap_symbolic_zero", {}, "0.5.3", "0.6.0", "changed"),
    "output": ("exp_nan_under_jit", {}, "0.6.1", "0.6.2", "changed"),
    "memory": ("scan_growth", {"n_res": 32}, "0.5.0", "0.5.1", "regression"),
    "run_time": ("while_loop_cpu_slowdown", {}, "0.4.31", "0.4.33", "regression"),
}


def plain_python(install: str) -> Path:
    """A fresh environment holding exactly what ``install`` (``pip install PINS``) names,
    made once a clone (the tests' cache) with uv's pip, from nothing of the toolkit."""
    words = shlex.split(install)
    assert words[:2] == ["pip", "install"] and all("==" in w for w in words[2:]), install
    folder = TEST_CACHE / "plain" / hashlib.sha256(install.encode()).hexdigest()[:16]
    python = folder / "bin" / "python"
    if not (folder / ".complete").exists():
        shutil.rmtree(folder, ignore_errors=True)
        uv = uv_binary()
        subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(folder)],
                       check=True, capture_output=True)
        subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), *words[2:]],
                       check=True, capture_output=True)
        (folder / ".complete").write_text(install)
    return python


def as_pasted(python: Path, program: str, tmp: Path) -> subprocess.CompletedProcess:
    """``python repro.py`` in a folder of its own, in a shell's environment."""
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / FILE).write_text(program)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "JAX_", "XLA_", "VIRTUAL_ENV"))}
    return subprocess.run([str(python), FILE], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.jax
# The error case in nox -s tests, the quickest (the shipped cases' bisections run each
# program at both ends too, as the pipeline does); every metric in nox -s tests_full.
@pytest.mark.parametrize("metric", [m if m == "error" else pytest.param(m, marks=pytest.mark.full)
                                    for m in ENDS])
def test_the_program_shows_the_change_at_both_ends_as_pasted(metric, tmp_path, jax_python):
    name, params, old, new, direction = ENDS[metric]
    case = read_case(CASES / f"{name}.py")
    over = (case.over[0], case.search_params[case.over[0]]) if case.over else ()
    program = write_program(case, metric, params, over)
    catalogue = load_catalogue()
    for version in (old, new):
        jax_python(version)  # the lab's environments: the tests' own, installed once
    lab = RealLab(lambda message: None, store=Store(tmp_path / "store"))
    ends = [(catalogue.get(old), "last good"), (catalogue.get(new), "first bad")]
    part = reproducer(program, ends, CPU, lab, direction=direction, timeout=600,
                      say=lambda message: None)

    assert part["lines"] <= MAX_LINES and part["why_not"] is None
    assert part["shows_change"] is True, part["ends"]
    first, second = part["ends"]
    assert (first["jax"], second["jax"]) == (old, new)
    # The output metric's case reads memory that was never written at 0.6.2: its two runs
    # usually print two values, and then the toolkit says so (each run's output kept) instead
    # of presenting one as the behaviour; by chance they can agree. The others never differ.
    differ = [end for end in part["ends"] if len(set(end.get("outputs") or ())) > 1]
    if metric == "memory":  # a compiled plan's memory, run once an end: not asked
        assert part["nondeterministic"] is None and not differ
    else:
        assert part["nondeterministic"] is (bool(differ) and metric != "run_time")  # times vary
    if metric == "error":
        assert not differ
    if metric == "error":
        assert (first["exit"], first["output"]) == (0, "no error")
        assert second["exit"] == 1 and second["output"].startswith(
            "TypeError: Argument 'Zero(ShapedArray(float32[3]))'")
    if metric == "memory":  # 0.5.0 constant, 0.5.1 one stacked buffer (12.5 MiB) more an outer
        before, after = (figures(program, end["output"]) for end in part["ends"])
        assert before[0] == before[1] and after[1] - after[0] == pytest.approx(3 * 12.5, 0.01)

    # A rerun measures nothing: every run is read back from the store.
    again = reproducer(program, ends, CPU, lab, direction=direction, timeout=600,
                       say=lambda message: pytest.fail(f"measured again: {message}"))
    assert again == part

    # As a maintainer pastes it: plain environments from the install lines, nothing else.
    pasted = []
    for k, end in enumerate(part["ends"]):
        assert end["command"] == f"python {FILE}"
        done = as_pasted(plain_python(end["install"]), program.text, tmp_path / f"end{k}")
        assert done.returncode == end["exit"], done.stderr[-2000:]
        pasted.append(done.stdout.strip() if done.returncode == 0 else done.stderr)
    if metric in ("error", "memory"):  # the same lines as the pipeline's runs
        assert pasted[0] == part["ends"][0]["output"]
        if metric == "memory":
            assert pasted[1] == part["ends"][1]["output"]
        else:
            assert part["ends"][1]["output"] in pasted[1]
    if metric == "output":
        assert pasted[0] == "nan" and pasted[1] != "nan"
    if metric == "run_time":  # about 90x slower at 0.4.33 (ms a call)
        times = [figures(program, text)[0] for text in pasted]
        assert times[1] > 10 * times[0]
    assert RUNS == 2
