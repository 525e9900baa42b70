"""``nox -s reports_check``: every shipped report's printed lines, run as a maintainer pastes them.

Every install line a report prints (its first screen, *Without the toolkit*, the commit pair,
the HLO bundle's README) runs in a fresh uv environment holding only that line, and must give
the jax and jaxlib it pins. Every program it prints with an output beside it (the first
screen's ``repro.py``, the bundle's ``compile_hlo.py``) runs in the environment of the line
printed above it, and what it prints is compared with what the report says it printed (a
recorded run): an error's line and an output's values as they are (an end whose recorded
runs differ: any value of the same form), a compiled plan's MiB to 0.01, a run's peak within
25 %, a time by the pair's ratio (below). A line that needs an accelerator (a GPU's or a TPU's
wheels, a program compiled for one) is named, not run.

For each report whose answer is a change (reports/ and reports/cases/), the program the report
prints (``repro.py``) runs in a plain environment of each install the report names where the
behaviour differs: a uv virtual environment holding only that install's own pip line, the
program in a folder of its own. The check fails where the outputs do not differ as the report
says: an error or an output that does not change, a size or a shape that does not move, a
timing whose ratio is nearer no change than the report's headline ratio (in log space: under
its square root).

What it cannot check here is said, not skipped silently: a report compiled for a GPU without
one (its program needs that GPU), a release that needs a Python this machine lacks.

    python -m jaxbisect.tools.reports_check [REPORTS_DIR ...] [--json] [--pairs-only]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.version import Version

from jaxbisect.files import cache_dir
from jaxbisect.lab.harness import RunTimedOut, run_script
from jaxbisect.lab.interpreters import find_interpreters
from jaxbisect.lab.machine import uv_binary
from jaxbisect.report.installs import parsed
from jaxbisect.report.markdown.answer import TIMINGS
from jaxbisect.report.markdown.reproduce import changed_pairs, figure_varies, shown_program
from jaxbisect.stages.program import FILE, Program
from jaxbisect.stages.program_runs import ProgramRun, error_line, figures, numbers, shows

PY312_FROM = Version("0.11")   # jax 0.11 and later need Python 3.12
TIMEOUT = 900.0                # one run of a program (a compile at the full size is minutes)
VARYING_RUNS = 5               # runs of an end the bisection found nondeterministic, at most


@dataclass(frozen=True)
class Checked:
    """One pair of one report: where it came (or went, or was fixed), the outputs measured
    in plain environments, and whether they differ as the report says."""

    report: str
    pair: tuple[str, str]
    kind: str
    outputs: tuple[str, str] = ("", "")
    result: str = "cannot check"   # "differs as the report says" | "fails" | "cannot check"
    why: str = ""
    ratio: float | None = None     # a timing's: measured, and the least that passes
    least: float | None = None
    seconds: float = 0.0
    details: dict = field(default_factory=dict)


def reports_in(folders: list[Path]) -> list[Path]:
    return sorted(p for folder in folders for p in folder.glob("bisect-*.json"))


def python_for(jax: str) -> str:
    return "3.12" if Version(jax) >= PY312_FROM else "3.11"


def environment(install: str, python: str, say) -> Path:
    """A uv virtual environment holding exactly ``install`` (a ``pip install …`` line),
    made once and kept under the cache (keyed by the line and the Python)."""
    key = hashlib.sha256(f"{python}\n{install}".encode()).hexdigest()[:16]
    where = cache_dir() / "reports-check" / key
    ready = where / ".ready"
    if ready.exists():
        return where / "bin" / "python"
    shutil.rmtree(where, ignore_errors=True)
    say(f"  making a plain environment (Python {python}): {install}")
    uv = uv_binary() or "uv"
    found = {f"{i.version[0]}.{i.version[1]}": str(i.path) for i in find_interpreters()}
    subprocess.run([uv, "venv", "-q", "--python", found.get(python, python), str(where)],
                   check=True,
                   capture_output=True, text=True)
    argv = install.split()
    assert argv[:2] == ["pip", "install"], install
    subprocess.run([uv, "pip", "install", "-q", "--python", str(where / "bin" / "python"),
                    *(a.strip("'\"") for a in argv[2:])], check=True, capture_output=True,
                   text=True)
    ready.write_text(install)
    return where / "bin" / "python"


def run_at(end: dict, text: str, xla_flags: str, say) -> ProgramRun:
    python = environment(end["install"], python_for(end["jax"]), say)
    try:
        done = run_script(python, FILE, text, TIMEOUT, xla_flags=xla_flags)
    except RunTimedOut:
        return ProgramRun(end["jax"], 1, f"timed out after {TIMEOUT:.0f} s", None, {})
    if done.returncode == 0:
        out = "\n".join(line.rstrip() for line in (done.stdout or "").splitlines()
                        if line.strip())
    else:
        out = error_line(done.stderr or "")
    return ProgramRun(end["jax"], 1, out, done.returncode, {})


def shown_ratio(program: Program, old: str | None, new: str | None) -> float | None:
    """A timing's ratio from two outputs of the program."""
    a = figures(program, old or "") if old else None
    b = figures(program, new or "") if new else None
    return b[0] / a[0] if a and b and a[0] > 0 else None


def answer_ratio(doc: dict, old: str, new: str) -> float | None:
    """The ratio the report's headline shows: the two releases' figures (medians over their
    runs), the answer's own measurement; None where either has none."""
    medians = [next((p["figure"].get("median") for p in doc["probes"] if p["jax"] == v), None)
               for v in (old, new)]
    if None in medians or not medians[0]:
        return None
    return medians[1] / medians[0]


def check_report(path: Path, say) -> list[Checked]:
    doc = json.loads(path.read_text())
    name = path.name
    pairs = changed_pairs(doc)
    if not pairs:
        return []
    shown = shown_program(doc)
    if shown is None:
        return [Checked(name, (a, b), kind, why="the report has no program")
                for a, b, kind in pairs]
    # a TPU target's program compiles without the chip (its recipe inside): it runs here
    if doc["backend"] not in ("cpu", "tpu") or (doc.get("target") and doc["backend"] != "tpu"):
        return [Checked(name, (a, b), kind,
                        why=f"{doc['measured']}: not run here, the program needs that GPU "
                            f"(the report shows no output under its name)")
                for a, b, kind in pairs]
    program = program_of(doc, shown)
    ends = {e["jax"]: e for e in shown["ends"]}
    runs: dict[str, ProgramRun] = {}
    out = []
    for old, new, kind in pairs:
        missing = [v for v in (old, new) if v not in ends]
        if missing:
            out.append(Checked(name, (old, new), kind,
                               why=f"no install of jax {', '.join(missing)} in the report"))
            continue
        have = {f"{i.version[0]}.{i.version[1]}" for i in find_interpreters()}
        lacking = [v for v in (old, new) if python_for(v) not in have]
        if lacking:
            out.append(Checked(name, (old, new), kind,
                               why=f"jax {', '.join(lacking)} needs Python "
                                   f"{python_for(lacking[0])}, not on this machine"))
            continue
        for v in (old, new):
            if v not in runs:
                say(f"{name}: jax {v}")
                runs[v] = run_at(ends[v], shown["text"], doc.get("xla_flags") or "", say)
        a, b = runs[old], runs[new]
        outputs = (a.output, b.output)
        if a.exit is None or b.exit is None:
            out.append(Checked(name, (old, new), kind, outputs, "fails",
                               why="a run did not finish (timed out)"))
            continue
        ok, why, ratio, least = differs_as_said(doc, program, kind, ends[old], ends[new], a, b)
        flaky = [v for v in (old, new) if figure_varies(doc, v)]
        if not ok and flaky:  # it prints any value, the other end's too: judged as such
            tries = [(a, b)]
            for _ in range(VARYING_RUNS - 1):
                again = {v: run_at(ends[v], shown["text"], doc.get("xla_flags") or "", say)
                         for v in flaky}
                pair = (again.get(old, a), again.get(new, b))
                tries.append(pair)
                if differs_as_said(doc, program, kind, ends[old], ends[new], *pair)[0]:
                    break
            shown_at = [i for i, pair in enumerate(tries, 1) if differs_as_said(
                doc, program, kind, ends[old], ends[new], *pair)[0]]
            ok = bool(shown_at)
            outputs = (tries[-1][0].output, tries[-1][1].output)
            why = (f"jax {', '.join(flaky)} prints something else each run (the report says "
                   f"so): {'shown at run ' + str(shown_at[0]) if ok else 'not shown'} of "
                   f"{len(tries)}")
        out.append(Checked(name, (old, new), kind, outputs,
                           "differs as the report says" if ok else "fails", why=why,
                           ratio=ratio, least=least))
    return out


def differs_as_said(doc: dict, program: Program, kind: str, old_end: dict, new_end: dict,
                    a: ProgramRun, b: ProgramRun) -> tuple[bool, str, float | None,
                                                          float | None]:
    """Whether runs ``a`` (the older install) and ``b`` differ as the report says: an error or
    output that changes, a figure or shape that moves the answer's way; a timing whose ratio
    is nearer the ratio the report's headline shows, R, than no change, as the harness's own
    check places a figure (in log space: at least sqrt(R); a speed-up: at most sqrt(R)). A
    timing on a shared machine moves by more than half its ratio (84× against a headline's
    194×, measured here), never back to no change. (ok, why, the measured ratio, the bound
    that passes)."""
    if program.metric in TIMINGS:
        want = (answer_ratio(doc, old_end["jax"], new_end["jax"])
                or shown_ratio(program, old_end.get("output"), new_end.get("output")))
        got = shown_ratio(program, a.output, b.output)
        if not want or not got:
            return False, "no ratio to compare", got, None
        bound = want ** 0.5
        ok = got >= bound if want >= 1 else got <= bound
        return ok, (f"ratio {got:.3g}× measured, {want:.3g}× in the report's headline: "
                    f"{'at least' if want >= 1 else 'at most'} {bound:.3g}× passes"), got, bound
    direction = None if kind in ("came", "went") and doc["status"] == "alike" else \
        doc.get("direction") if doc.get("direction") in ("regression", "fix") else None
    ok = shows(program, direction, a, b, threshold=doc["metric"].get("threshold"))
    return ok, "" if ok else "the outputs do not differ as the report says", None, None


def program_of(doc: dict, shown: dict) -> Program:
    """The shown program as reproducer.shows reads it: its metric, and a shape's values (the
    ones its loop runs over)."""
    over = ()
    if doc.get("over"):
        import ast

        name = doc["over"]["name"]
        loops = [n for n in ast.walk(ast.parse(shown["text"])) if isinstance(n, ast.For)
                 and isinstance(n.target, ast.Name) and n.target.id == "value"]
        values = ast.literal_eval(loops[0].iter) if loops else tuple(doc["over"]["values"])
        over = (name, tuple(values))
    return Program(text=shown["text"], metric=doc["metric"]["name"], params={}, over=over,
                   xla_flags=doc.get("xla_flags") or "")


# -- every printed line, run and compared with what the report says ----------------------------

PIP = re.compile(r"pip install (?P<words>[^#\n`]+)")
BUNDLE_RUN = re.compile(r"^(?:XLA_FLAGS=\S+ )?(?P<venv>\w+)/bin/python compile_hlo\.py "
                        r"(?P<files>[^#\n]+?)\s+# jax (?P<jax>[\w.]+): (?P<said>.+)$",
                        re.MULTILINE)
PEAK_TOLERANCE = 0.25   # a run's peak resident memory, between two runs of one program
MIB_TOLERANCE = 0.01    # a compiled plan's MiB, as printed (two decimals)


@dataclass(frozen=True)
class Line:
    """One printed line of one report, run: an install (``kind`` "install"), the program
    printed beside an install ("program"), a bundle's ``compile_hlo.py`` ("bundle")."""

    report: str
    kind: str
    text: str
    jax: str
    result: str            # "as the report says" | "differs" | "needs an accelerator"
    said: str = ""         # what the report says it prints
    printed: str = ""      # what it printed here
    why: str = ""


def install_lines(text: str) -> list[str]:
    """Every install line a text prints that installs a release (``pip install …==…``)."""
    seen = []
    for m in PIP.finditer(text):
        line = f"pip install {m['words'].strip()}"
        if "==" in line and line not in seen:
            seen.append(line)
    return seen


def accelerator(line: str) -> str | None:
    """The accelerator a line needs (its wheels, or a program compiled for one), or None."""
    held = parsed(line)
    if any(n.startswith("jax-cuda") for n in held) or "[cuda" in line:
        return "an NVIDIA GPU (the CUDA wheels)"
    # libtpu installs on any x86-64 Linux and a TPU report's program compiles for the TPU
    # without one (its recipe inside): such a line runs here
    return None


def versions_of(python: Path) -> str:
    done = subprocess.run([str(python), "-c", "import jax, jaxlib; print(jax.__version__, "
                           "jaxlib.__version__)"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})
    if done.returncode != 0:
        return error_line(done.stderr or "") or f"exit {done.returncode}"
    return done.stdout.strip()


def check_install(report: str, line: str, say, compile_only: bool = False) -> Line:
    """``compile_only``: a bundle's line whose program compiles for a target without it
    (the CUDA plugin and ptxas, no GPU): it runs here."""
    held = parsed(line)
    jax = held.get("jax", "?")
    need = None if compile_only else accelerator(line)
    if need:
        return Line(report, "install", line, jax, "needs an accelerator", why=need)
    want = f"{held.get('jax')} {held.get('jaxlib')}"
    try:
        python = environment(line, python_for(jax), say)
    except subprocess.CalledProcessError as exc:
        return Line(report, "install", line, jax, "differs", want,
                    (exc.stderr or "").strip().splitlines()[-1:][0] if exc.stderr else "",
                    "the install failed")
    got = versions_of(python)
    return Line(report, "install", line, jax, "as the report says" if got == want else
                "differs", want, got, "" if got == want else "import jax gave another answer")


def same_form(a: str, b: str) -> bool:
    """Two outputs alike but for their numbers (a nondeterministic end's runs)."""
    return _NUMBERS.sub("#", a) == _NUMBERS.sub("#", b)


_NUMBERS = re.compile(r"[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)",
                      re.IGNORECASE)


def _near(a: float, b: float, rel: float, absolute: float = 0.0) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= max(absolute, rel * max(abs(a), abs(b)))


def agrees(metric: str, peak: bool, said: list[str], printed: str,
           varies: bool = False) -> tuple[bool, str]:
    """Whether ``printed`` is what the report says its program printed (``said``: the
    recorded runs' outputs; more than one that differ, or ``varies``, the bisection's own runs
    of that release differed: nondeterministic, any output of that form)."""
    if len(set(said)) > 1 or varies:
        ok = all(same_form(s, printed) for s in said)
        return ok, "nondeterministic end: the same form, any values"
    want = said[0]
    if metric == "error":
        from jaxbisect.search.error_signature import core, same_error

        # one error however a release words it (the bisection's own comparison), or the core
        # the report shows where its record kept the first line only
        return (printed == want or same_error(printed, want) or core(printed) == core(want),
                "the error, by its signature or the core the report shows")
    a, b = numbers(want), numbers(printed)
    if not same_form(want, printed) or len(a) != len(b):
        return False, "another form"
    if metric == "memory":
        rel, absolute = (PEAK_TOLERANCE, 0.0) if peak else (0.0, MIB_TOLERANCE)
        return all(_near(x, y, rel, absolute) for x, y in zip(a, b)), (
            f"a run's peak within {PEAK_TOLERANCE:.0%}" if peak else "MiB to 0.01")
    if metric == "output":
        from jaxbisect.search.comparing import OUTPUT_TOLERANCE

        return all(_near(x, y, OUTPUT_TOLERANCE) for x, y in zip(a, b)), "its values"
    return True, "a time: judged by the pair's ratio"


def wrong_as_said(doc: dict, jax: str, printed: str) -> bool:
    """Where the case states what is right (EXPECT) and the report says ``jax`` is wrong: a
    printed output that is wrong too agrees with what the report claims of that release."""
    from jaxbisect.report.markdown.expect import judged, verdicts

    expect = (doc.get("case") or {}).get("expect")
    if expect is None or verdicts(doc).get(jax) is not False or doc["metric"]["name"] != "output":
        return False
    # the values: the last bracketed list of "output: float64[] [v, …]" (not its dtype's 64)
    groups = [g for g in re.findall(r"\[([^\[\]]*)\]", printed) if g.strip()]
    values = numbers(groups[-1]) if groups else []
    return bool(values) and judged(expect, {"values": values}, "output") is False


# A first screen's release: the line that makes its venv and installs into it, and the run
# in that venv on the next line.
VENV_RUN = re.compile(r"^(?P<python>python3(?:\.\d+)?) -m venv (?P<venv>\w+) && "
                      r"(?P=venv)/bin/(?P<install>pip install [^#\n]+?)\s*$\n"
                      r"^(?:XLA_FLAGS=\S+ )?(?P<run>\S+) repro\.py\b", re.MULTILINE)


def unmade_runs(markdown: str) -> dict[str, str]:
    """Each release on the first screen whose run does not use the venv its line makes
    (``a/bin/python`` after ``python3.11 -m venv a && a/bin/pip install …``), with why: pasted,
    such a run would use whatever Python the shell has."""
    screen = markdown.split("<details>", 1)[0]
    out = {}
    for install in install_lines(screen):
        jax = parsed(install).get("jax")
        m = next((m for m in VENV_RUN.finditer(screen) if parsed(m["install"]).get("jax") == jax),
                 None)
        if m is None:
            out[jax] = "its install line makes no venv"
        elif m["run"] != f"{m['venv']}/bin/python":
            out[jax] = f"its run uses {m['run']}, not the venv {m['venv']} its line makes"
    return out


def printed_installs(markdown: str) -> dict[str, str]:
    """The first screen's install line for each release (the program's environment)."""
    screen = markdown.split("<details>", 1)[0]
    return {parsed(line).get("jax"): line for line in install_lines(screen)}


def check_programs(path: Path, say) -> list[Line]:
    """The first screen's program at each install it prints with an output, compared with
    the output the report says (its recorded run)."""
    doc = json.loads(path.read_text())
    markdown = path.with_suffix(".md").read_text()
    r = doc.get("reproducer") or {}
    ends = [*(r.get("ends") or ()), *((r.get("went") or {}).get("ends") or ())]
    if not r.get("program") or not ends:
        return []
    lines = printed_installs(markdown)
    unmade = unmade_runs(markdown)
    out, seen = [], set()
    for end in ends:
        if end["jax"] in seen:
            continue
        seen.add(end["jax"])
        line = lines.get(end["jax"])
        said = end.get("outputs") or [end.get("output") or ""]
        text = f"{end['command']}  (jax {end['jax']})"
        if line is None or end["jax"] in unmade:
            out.append(Line(path.name, "program", text, end["jax"], "differs", said[0], "",
                            unmade.get(end["jax"]) or "the report prints no install for it"))
            continue
        need = accelerator(line) or (doc.get("target") and not str(doc.get("backend", ""))
                                     .startswith("tpu") and "the GPU it was compiled for")
        if need:
            out.append(Line(path.name, "program", text, end["jax"], "needs an accelerator",
                            why=need))
            continue
        if end.get("exit") is None:
            continue  # never ran: the report shows no output under its name
        say(f"{path.name}: the program at jax {end['jax']}")
        python = environment(line, python_for(end["jax"]), say)
        try:
            done = run_script(python, FILE, r["program"], TIMEOUT,
                              xla_flags=doc.get("xla_flags") or "")
            printed = ("\n".join(x.rstrip() for x in (done.stdout or "").splitlines()
                                 if x.strip()) if done.returncode == 0
                       else error_line(done.stderr or ""))
        except RunTimedOut:
            printed = f"timed out after {TIMEOUT:.0f} s"
        ok, how = agrees(doc["metric"]["name"], r.get("quantity") == "peak", said, printed,
                         varies=figure_varies(doc, end["jax"]))
        if not ok and wrong_as_said(doc, end["jax"], printed):
            ok, how = True, ("wrong, as the report says (its EXPECT), with another wrong value "
                             "here: the value a wrong result takes is this machine's")
        out.append(Line(path.name, "program", text, end["jax"],
                        "as the report says" if ok else "differs", " | ".join(said), printed,
                        how))
    return out


def check_bundle(readme: Path, say) -> list[Line]:
    """A bundle's ``compile_hlo.py`` lines, each in the environment of the line that makes
    its venv, compared with the MiB the README says."""
    text = readme.read_text()
    venvs = {m[1]: m[2] for m in re.finditer(r"python3(?:\.\d+)? -m venv (\w+) && \1/bin/"
                                             r"(pip install [^\n]+)", text)}
    out = []
    for m in BUNDLE_RUN.finditer(text):
        line = venvs.get(m["venv"])
        name = f"{readme.parent.name}/README.md"
        if line is None:  # a run with no venv line that makes its environment: said, not skipped
            out.append(Line(name, "bundle", m[0].split("   #")[0], m["jax"], "differs",
                            m["said"].strip(), "", f"no line makes the venv {m['venv']}"))
            continue
        if accelerator(line):
            out.append(Line(name, "bundle", m[0].split("   #")[0], m["jax"],
                            "needs an accelerator", m["said"].strip(), "", accelerator(line)))
            continue
        python = environment(line, python_for(m["jax"]), say)
        done = subprocess.run([str(python), "compile_hlo.py", *m["files"].split()],
                              cwd=readme.parent, capture_output=True, text=True,
                              timeout=TIMEOUT)
        printed = " / ".join(f"{x:.2f} MiB" for line_ in done.stdout.splitlines()
                             for x in numbers(line_.split(":", 1)[1])[:1] if ":" in line_)
        a, b = numbers(m["said"]), numbers(printed)
        shown = [len(x.split(".")[1]) if "." in x else 0  # the README's own precision
                 for x in re.findall(r"\d+(?:\.\d+)?", m["said"])]
        ok = len(a) == len(b) and all(_near(x, y, 0.0, 0.5 * 10 ** -d + MIB_TOLERANCE / 2)
                                      for x, y, d in zip(a, b, shown))
        out.append(Line(name, "bundle", m[0].split("   #")[0], m["jax"],
                        "as the report says" if ok else "differs", m["said"].strip(), printed,
                        "MiB to 0.01"))
    return out


def check_lines(folders: list[Path], say) -> list[Line]:
    """Every report's and bundle's printed install lines and programs, run."""
    checked: list[Line] = []
    ran: dict[str, Line] = {}
    for path in reports_in(folders):
        markdown = path.with_suffix(".md").read_text()
        for line in install_lines(markdown):
            if line not in ran:
                ran[line] = check_install(path.name, line, say)
            checked.append(Line(**{**asdict(ran[line]), "report": path.name}))
        checked += check_programs(path, say)
    for folder in folders:
        for readme in sorted(folder.glob("*-hlo/README.md")):
            compile_only = "--target " in readme.read_text()
            for line in install_lines(readme.read_text()):
                if line not in ran:
                    ran[line] = check_install(readme.parent.name, line, say, compile_only)
                checked.append(Line(**{**asdict(ran[line]),
                                       "report": f"{readme.parent.name}/README.md"}))
            checked += check_bundle(readme, say)
    return checked


def counts(lines: list[Line]) -> dict:
    """What the run says in numbers: lines run (each distinct line once), those that printed
    other than the report says, those that need an accelerator (named)."""
    unique = {(c.kind, c.text) if c.kind == "install" else (c.kind, c.report, c.text): c
              for c in lines}.values()  # an install line once; a program once a report
    run = [c for c in unique if c.result != "needs an accelerator"]
    return {"install_lines_run": sum(c.kind == "install" for c in run),
            "programs_run": sum(c.kind in ("program", "bundle") for c in run),
            "mismatches": sum(c.result == "differs" for c in run),
            "need_an_accelerator": sorted({f"{c.report}: {c.text} ({c.why})" for c in lines
                                           if c.result == "needs an accelerator"})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxbisect.tools.reports_check",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path,
                        default=[Path("reports"), Path("reports/cases")])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--pairs-only", action="store_true",
                        help="only whether each pair's outputs differ as the report says")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    checked = [c for p in reports_in(args.folders) for c in check_report(p, say)]
    failed = [c for c in checked if c.result == "fails"]
    lines = [] if args.pairs_only else check_lines(args.folders, say)
    numbers_ = counts(lines)
    if args.json:
        print(json.dumps({"checked": [asdict(c) for c in checked], "failed": len(failed),
                          "lines": [asdict(c) for c in lines], **numbers_}, indent=1))
    else:
        for c in checked:
            shown = " → ".join(c.pair)
            print(f"{c.result:>27}  {c.report} ({c.kind} {shown})"
                  + (f": {c.why}" if c.why else ""))
            if c.outputs != ("", ""):
                for v, o in zip(c.pair, c.outputs):
                    print(f"{'':>29}jax {v}: {' | '.join(o.splitlines())[:150]}")
        for c in lines:
            if c.result != "as the report says":
                print(f"{c.result:>27}  {c.report}: {c.text[:120]}"
                      + (f" ({c.why})" if c.why else "")
                      + (f"\n{'':>29}says: {c.said[:150]}\n{'':>29}printed: {c.printed[:150]}"
                         if c.result == "differs" else ""))
        told = sum(c.result != "cannot check" for c in checked)
        print(f"{told} pairs checked, {len(failed)} failed, "
              f"{len(checked) - told} that cannot be checked here")
        if not args.pairs_only:
            print(f"{numbers_['install_lines_run']} install lines run, "
                  f"{numbers_['programs_run']} programs run, {numbers_['mismatches']} print "
                  f"other than the report says; {len(numbers_['need_an_accelerator'])} need "
                  f"an accelerator (named above)")
    return 1 if failed or numbers_["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
