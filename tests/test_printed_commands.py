"""Every command ``python -m bisect`` prints to the terminal runs as pasted, from the folder
where it was run; the report keeps a maintainer's form (the case by its file name, from the
clone). Run for real: a case outside the clone, from the clone and from the case's folder."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from fake_lab import FakeLab, scripted

from jaxbisect import cli, sweep
from jaxbisect.lab.store import Store
from jaxbisect.report.commands import reproduce_argv, wider_range
from jaxbisect.report.document import document
from jaxbisect.report.markdown.answer import raised_line
from jaxbisect.report.terminal import terminal_lines
from jaxbisect.search.question import question_from
from jaxbisect.stages.releases import MetricRequest, bisect_metric

BIN = Path(sys.executable).parent  # the environment's python, jax-bisect and nox
PROGRAMS = ("python -m bisect", "jax-bisect", "nox ")
CASE = '''"""A small program: the sum of a vector's squares."""
import jax
import jax.numpy as jnp

METRIC = "memory"


def case(n=64):
    return jax.jit(lambda x: (x * x).sum()), (jnp.ones(n, jnp.float32),)
'''


def printed_commands(stdout: str) -> list[list[str]]:
    """Each command a line of the terminal's answer suggests (after its last ": ")."""
    found = []
    for line in stdout.splitlines():
        for program in PROGRAMS:
            at = line.find(program)
            if at >= 0:
                found.append(shlex.split(line[at:]))
                break
    return found


def as_pasted(argv: list[str], cwd: Path, *more: str) -> subprocess.CompletedProcess:
    """``argv`` run in ``cwd`` by a shell whose environment is this one's (activated)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)
    return subprocess.run([*argv, *more], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def case_of(argv: list[str]) -> str:
    return argv[argv.index("--case") + 1]


def swapped(argv: list[str], **values: str) -> list[str]:
    """``argv`` with the values of some options replaced (``start`` for --from, ``end`` for
    --to): a wider range's command asked over the range already measured."""
    argv = list(argv)
    for option, value in (("--from", values.get("start")), ("--to", values.get("end"))):
        if value is not None:
            argv[argv.index(option) + 1] = value
    return argv


@pytest.mark.jax
# From the case's folder (the entry point, the case by a relative path) in nox -s tests; both
# forms are also checked offline below.
@pytest.mark.parametrize("where", [pytest.param("clone", marks=pytest.mark.full),
                                   "case's folder"])
def test_every_printed_command_runs_as_pasted(jax_python, tmp_path, where):
    """The yanked line's, the sweep's and the wider range's commands: each run where the
    bisection was run (the wider range's over the range already measured, so it is quick;
    the sweep's as nox would run it, in the noxfile's folder: ``nox -f`` is checked to find
    it from there)."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "mine.py").write_text(CASE)
    for version in ("0.4.31", "0.4.33"):
        jax_python(version)
    if where == "clone":   # python -m bisect from the clone, the case elsewhere
        cwd, program, case = REPO, ["python", "-m", "bisect"], str(folder / "mine.py")
    else:                  # the installed entry point, from the case's folder
        cwd, program, case = folder, ["jax-bisect"], "mine.py"
    reports = tmp_path / "reports"
    done = as_pasted([*program, "--from", "0.4.31", "--to", "0.4.33", "--backend", "cpu",
                      "--case", case, "--no-evidence", "--reports", str(reports)], cwd)
    assert done.returncode == 1, done.stderr   # alike: the sweep's and a wider range's lines
    commands = printed_commands(done.stdout)
    kinds = [c[0] for c in commands]
    assert len(commands) == 3 and kinds.count("nox") == 1, done.stdout
    doc = json.loads(next(reports.glob("*.json")).read_text())
    assert doc["case"]["path"] == "mine.py"   # the report: the maintainer's form
    assert "--case mine.py" in doc["sweep"] and "--case mine.py" in doc["reproduce"]
    assert doc["yanked"] and not doc["yanked"][0]["candidate"]
    for argv in commands:
        assert (cwd / case_of(argv)).resolve() == folder / "mine.py" or argv[0] == "nox"
        if argv[0] == "nox":
            noxfile = ["-f", argv[argv.index("-f") + 1]] if "-f" in argv else []
            listed = as_pasted(["nox", *noxfile, "--list"], cwd)
            assert listed.returncode == 0 and "repro_range" in listed.stdout, listed.stderr
            # nox runs the session in the noxfile's folder: the clone
            posargs = argv[argv.index("--") + 1:]
            assert (REPO / case_of(posargs)).resolve() == folder / "mine.py"
            swept = as_pasted(["python", "-m", "jaxbisect.sweep", *posargs, "--reports",
                               str(tmp_path / "swept")], REPO)
            assert swept.returncode == 0, swept.stderr
            continue
        ran = as_pasted(swapped(argv, start="0.4.31", end="0.4.33"), cwd, "--json",
                        "--no-evidence", "--reports", str(tmp_path / "again"))
        assert ran.returncode == 1, ran.stderr
        again = json.loads(ran.stdout)
        assert again["case"]["sha256"] == doc["case"]["sha256"]
        assert again["status"] == "alike"


# -- the terminal's commands against the report's, in a lab of scripted runs --------------------

@pytest.mark.parametrize("figures, lines", [
    ({"0.4.30": 7, "0.4.31": 7, "0.4.33": 7}, ("yanked", "sweep", "wider range")),
    ({"0.4.30": 7, "0.4.31": "ValueError: no", "0.4.33": 9}, ("raised", "yanked"))])
def test_the_terminal_types_the_case_from_the_folder_the_report_by_its_name(
        recorded_catalogue, tmp_path, figures, lines):
    """A case outside the clone, over a range with a yanked release inside: alike ends with
    the release inside over the interior budget (the sweep's and a wider range's commands),
    or a change with a release that raises (the raised line's command). Every command on
    the terminal names the case by a path that resolves from the folder it is typed in; the
    report's by its file name."""
    folder = tmp_path / "elsewhere" / "work"
    folder.mkdir(parents=True)
    (folder / "mine.py").write_text(CASE)
    question = question_from("memory", str(folder / "mine.py"), [], ())
    lab = FakeLab(scripted(lambda v, k: figures[v], seconds=5.0), Store(tmp_path / "store"))
    # --commits and an interior budget below the release inside: options the sweep does not
    # take, so its command must leave them out
    request = MetricRequest(start="0.4.30", end="0.4.33", backend="cpu", question=question,
                            commits=True, interior_budget=1.0)
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    doc = document(b, None)
    if b.search.status == "alike":
        doc.update(wider_range(recorded_catalogue, b))
    assert bool(doc["raised"]) == ("raised" in lines) and doc["yanked"]
    for here in (folder, folder.parent, REPO, tmp_path):
        commands = printed_commands("\n".join(terminal_lines(b, doc, recorded_catalogue,
                                                              here)))
        assert len(commands) == len(lines)
        for argv in commands:
            nox = argv[0] == "nox"
            base = REPO if nox else here   # nox runs its session in the noxfile's folder
            assert (base / case_of(argv)).resolve() == folder / "mine.py", argv
            assert argv[0] == ("nox" if nox else "python" if here == REPO else "jax-bisect")
            assert ("-f" in argv) == (nox and here != REPO)
            if nox:   # each parses as its program takes it
                sweep.parse_args(argv[argv.index("--") + 1:])
            else:
                cli.parse(argv[3 if argv[0] == "python" else 1:])
    assert case_of(reproduce_argv(b)) == "mine.py"   # the report's form
    if "sweep" in doc:
        assert case_of(shlex.split(doc["sweep"])) == "mine.py"
        assert case_of(shlex.split(doc["next_step"]["command"])) == "mine.py"
    if doc["raised"]:
        assert "--case mine.py " in raised_line(doc)
