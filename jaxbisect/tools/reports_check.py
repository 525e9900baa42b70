"""``nox -s reports_check``: every shipped report's program, run as a maintainer pastes it.

For each report whose answer is a change (reports/ and reports/cases/), the program the report
prints (``repro.py``) runs in a plain environment of each install the report names where the
behaviour differs: a uv virtual environment holding only that install's own pip line, the
program in a folder of its own. The check fails where the outputs do not differ as the report
says: an error or an output that does not change, a size or a shape that does not move, a
timing whose ratio is nearer no change than the report's headline ratio (in log space: under
its square root).

What it cannot check here is said, not skipped silently: a report compiled for a GPU without
one (its program needs that GPU), a release that needs a Python this machine lacks.

    python -m jaxbisect.tools.reports_check [REPORTS_DIR ...] [--json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from packaging.version import Version

from jaxbisect.files import cache_dir
from jaxbisect.lab.harness import RunTimedOut, run_script
from jaxbisect.report.markdown.reproduce import changed_pairs, shown_program
from jaxbisect.stages.program import FILE, Program
from jaxbisect.stages.program_runs import ProgramRun, error_line, figures, shows

PY312_FROM = Version("0.11")   # jax 0.11 and later need Python 3.12
TIMEOUT = 900.0                # one run of a program (a compile at the full size is minutes)
TIMINGS = ("run_time", "compile_time")


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
    subprocess.run(["uv", "venv", "-q", "--python", python, str(where)], check=True,
                   capture_output=True, text=True)
    argv = install.split()
    assert argv[:2] == ["pip", "install"], install
    subprocess.run(["uv", "pip", "install", "-q", "--python", str(where / "bin" / "python"),
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
    if doc.get("target") or doc["backend"] != "cpu":
        return [Checked(name, (a, b), kind,
                        why=f"{doc['measured']}: not run here, the program needs that GPU "
                            f"(the report's outputs are this toolkit's, compiled for it "
                            f"without one)")
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
        lacking = [v for v in (old, new) if shutil.which(f"python{python_for(v)}") is None
                   and python_for(v) != "3.11"]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m jaxbisect.tools.reports_check",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="*", type=Path,
                        default=[Path("reports"), Path("reports/cases")])
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)

    def say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    checked = [c for p in reports_in(args.folders) for c in check_report(p, say)]
    failed = [c for c in checked if c.result == "fails"]
    if args.json:
        print(json.dumps({"checked": [asdict(c) for c in checked],
                          "failed": len(failed)}, indent=1))
    else:
        for c in checked:
            shown = " → ".join(c.pair)
            print(f"{c.result:>27}  {c.report} ({c.kind} {shown})"
                  + (f": {c.why}" if c.why else ""))
            if c.outputs != ("", ""):
                for v, o in zip(c.pair, c.outputs):
                    print(f"{'':>29}jax {v}: {' | '.join(o.splitlines())[:150]}")
        told = sum(c.result != "cannot check" for c in checked)
        print(f"{told} pairs checked, {len(failed)} failed, "
              f"{len(checked) - told} that cannot be checked here")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
