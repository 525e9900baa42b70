"""The sweep's summary: every release's result in one table (its README), written from the
results' JSON."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from packaging.version import InvalidVersion, Version
from tabulate import tabulate

from jaxbisect.errors import UserError
from jaxbisect.files import (
    VOLATILE_LINES,
    write_atomic,
)
from jaxbisect.lab import backends
from jaxbisect.lab.machine import machine_description
from jaxbisect.report.figures import figure_text, peak_under, shown_bare
from jaxbisect.report.markdown.words import (
    PER_OUTER,
    SHAPE_LEGEND,
    params_text,
    shape_words,
    value_named,
    words_now,
)
from jaxbisect.search.classify import Label
from jaxbisect.search.placing import (
    Shown,
)
from repro.units import column

SUMMARY = "README.md"


UPDATED = "- Updated: "  # the one summary line that changes on every run


MACHINE_SUMMARY = "<details><summary>Machine</summary>"
COMMAND = "- Command: "
UPDATED_FORMAT = "%Y-%m-%d %H:%M"
LABEL_LINE = ("- Label (each backend's rows against that backend's own): old = behaves as the "
              "oldest release measured with it, new = as the newest, "
              "cannot tell = its runs could not tell which, third behaviour = as neither; "
              "like the ends = the oldest and newest behave alike, and so does it; measured = "
              "swept alone, nothing to compare it with; no figure = run, but gave none; "
              "skipped = not run (the note says why). A GPU target's rows are XLA's plan for "
              "that GPU, compiled on this machine without it.")
LABEL_WORDS = {Label.AMBIGUOUS: "cannot tell"}  # a label the table says in the reader's words


def result_order(d: dict):
    return (d.get("target") or "", d["backend"], version_key(d["release"]))


def version_key(text: str):
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def where_words(d: dict) -> str:
    return backends.words(d["backend"], d.get("target") or "")


def asked_line(d: dict) -> str:
    return shlex.join(["python", "-m", "repro", *d["asked"]])


def mode_of(d: dict) -> str:
    """How a series was measured: compiled (or the metric), or a real run's peak where the
    compiled statistics were empty, with any size that is not the one asked."""
    series = d.get("series") or {}
    asked = (d.get("case") or {}).get("params") or {}
    smaller = ", ".join(f"{k} {v}" for k, v in (series.get("params") or {}).items()
                        if asked.get(k) != v)
    mode = "a run's peak" if series.get("fallback") else \
        "compiled plan" if d["metric"] == "memory" else d["metric"]
    return mode + (f", {smaller}" if smaller else "")


def note_of(d: dict) -> str:
    if d.get("skipped"):
        return d["skipped"] if backends.get(d["backend"]).needs_device(d["skipped"]) \
            else f"not installable here: {d['skipped']}"
    if (d.get("series") or {}).get("fallback"):
        return f"compiled statistics empty: {d['series']['fallback']['reason']}"
    if d.get("error"):
        return d["error"]
    if d.get("label") not in (Label.OLD, Label.NEW, Shown.LIKE_THE_ENDS, Shown.MEASURED):
        return d.get("reason") or ""
    return ""


def series_cell(unit: str, got: dict | None, values: list) -> str:
    """A COMPARE program's series in one cell: its figure, or the range it spans, and the
    values it was measured at where not every one."""
    figures = [f for f in ((got or {}).get("figures") or {}).values() if f is not None]
    if not figures:
        return "–"
    if (got.get("status") == "unavailable" and "0 bytes" in str(got.get("shape") or "")
            and not got.get("fallback") and got.get("metric") != "peak_memory"):
        # a release that reports 0 bytes measured nothing: no figure, as the bisection's table
        return f"not measured ({got['shape']})"
    ends = [shown_bare(unit, f) for f in (min(figures), max(figures))]
    text = ends[0] if ends[0] == ends[1] else " … ".join(ends)
    text = peak_under(got, unit, figures) or text
    measured = [str(v) for v in values if str(v) in got["figures"]]
    if got.get("fallback") and "run's peak" not in text:
        text += " (a run's peak)"
    if len(measured) < len(values):
        text += f" ({got['over']} {', '.join(measured)} only)"
    return text


def results_rows(results: list[dict]) -> tuple[list[str], list[list[str]]]:
    """A row a result: the release, where it ran, its label; a shape's figure at each value
    of its parameter and its COMPARE programs beside it, or a figure with its spread."""
    unit = next((d["unit"] for d in results), "")
    scale = column(unit)
    over = next((d["over"] for d in results if d.get("over")), None)
    headers = ["jax", "jaxlib", "backend", "device", "label"]
    if over:
        values = sorted({v for d in results if d.get("over") for v in d["over"][1]})
        compare = sorted({label for d in results for label in d.get("compare") or {}})
        headers += ["mode", *(f"{over[0]}={v}{scale}" for v in values),
                    *(f"{label}{scale}" for label in compare), "shape"]
    else:
        metric = results[0]["metric"] if results else ""
        headers += [metric, "spread", "runs"]
    rows = []
    for d in results:
        where = where_words(d)
        device = d.get("device") or ""
        row = [d["release"], d.get("jaxlib") or "?",
               where if d.get("target") or d.get("skipped") else d["backend"],
               device,
               LABEL_WORDS.get(d["label"], d["label"])]
        fig = d.get("figure") or {"n": 0}
        if over:
            series = d.get("series") or {}
            row += [mode_of(d) if not d.get("skipped") else "",
                    *(shown_bare(unit, series.get("figures", {}).get(str(v)))
                      if series else "" for v in values),
                    *(series_cell(unit, (d.get("compare") or {}).get(label), values)
                      if series else "" for label in compare),
                    shape_words(series.get("shape"), series.get("figures"))]
        else:
            spread = (f"{figure_text(d['metric'], unit, {'median': fig['min']})} … "
                      f"{figure_text(d['metric'], unit, {'median': fig['max']})}"
                      if "median" in fig and fig["n"] > 1 else "")
            row += [figure_text(d["metric"], unit, fig) if fig["n"] else "", spread,
                    str(len(d.get("runs") or []))]
        rows.append([*row, note_of(d)[:160]])
    headers.append("note")
    if rows and all(row[2] == "cpu" and row[3] in ("cpu", "") for row in rows):
        headers = headers[:2] + headers[4:]
        rows = [row[:2] + row[4:] for row in rows]
    if not any(row[-1] for row in rows):
        headers.pop()
        rows = [row[:-1] for row in rows]
    return headers, rows


def case_words(results: list[dict]) -> Callable[[str, object], str | None]:
    """What the case's own docstring calls a parameter's value (``value_named``), read from
    the case file the results were asked with, where its sha256 is the results' (else
    nothing is said)."""
    import hashlib

    asked = next((d.get("asked") for d in results if d.get("asked")), None) or []
    path = asked[asked.index("--case") + 1] if "--case" in asked[:-1] else None
    shas = {(d.get("case") or {}).get("sha256") for d in results} - {None}
    file = Path(__file__).resolve().parents[2] / path if path else None
    source = ""
    if file and file.is_file() and len(shas) == 1:
        source = file.read_text(encoding="utf-8")
        if hashlib.sha256(source.encode()).hexdigest() not in shas:
            source = ""
    return lambda name, value: value_named(source, name, value)


def columns_line(results: list[dict]) -> str:
    """What the mode column and each program measured beside the case say: the parameters
    that set each apart from the case's row (from the results' own records)."""
    if not any(d.get("over") for d in results):
        return ""
    base = next(((d.get("series") or {}).get("params") or {} for d in results
                 if (d.get("series") or {}).get("params")), {})
    beside = {}
    for d in results:
        for label, got in (d.get("compare") or {}).items():
            differs = {k: v for k, v in (got.get("params") or {}).items() if base.get(k) != v}
            beside.setdefault(label, differs)
    named = case_words(results)
    said = "; ".join(f"{label} = the same program at {params_text(p)}"
                     + (f" ({', '.join(w for k, v in p.items() if (w := named(k, v)))}, "
                        f"as the case's docstring says)"
                        if any(named(k, v) for k, v in p.items()) else "")
                     if p else label for label, p in sorted(beside.items()))
    fell = next(((d.get("series") or {}).get("fallback") for d in results
                 if (d.get("series") or {}).get("fallback")), None)
    peak = (f" and at {d_over(results)} {', '.join(map(str, fell['values']))} only, the "
            f"sizes the case sets for it (– beyond them)" if fell and fell.get("values") else "")
    return ("- Columns: mode = compiled plan (its statistics, `memory_analysis()`) or a run's "
            "peak (the memory a run held above what was resident before it, where a "
            "release's compiled statistics are "
            f"empty, at the sizes named{peak})"
            + (f"; {said}, measured beside it" if said else "") + ".")


def d_over(results: list[dict]) -> str:
    """The swept parameter's name, as the results hold it."""
    over = next((d["over"] for d in results if d.get("over")), None)
    return over[0] if isinstance(over, (list, tuple)) else (over or {}).get("name", "")


def results_table(results: list[dict]) -> str:
    """The results' table, as the page and the terminal show it (a record's words as said)."""
    headers, rows = results_rows(results)
    return words_now(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))


def summary_text(results: list[dict], unreadable: list[str], command: str, now: datetime,
                 machine: Callable[[], str] = machine_description) -> str:
    measured = [d for d in results if not d.get("skipped")]
    first = (measured or results or [{}])[0]
    name = (first.get("case") or {}).get("name", "?")
    lines = [f"# {name}: {first.get('metric', '?')} by jax release", "",
             ("Written by `jaxbisect.sweep` from the JSON results beside this file and "
              f"`{RUN_RECORD}` (the command, date and machine of the run that wrote it); do not "
              "edit by hand, rerun the command instead."), "",
             f"{COMMAND}`{command}`", f"{UPDATED}{now:{UPDATED_FORMAT}} UTC"]
    by_asked: dict[str, list[str]] = {}
    for d in results:  # every row's, a skipped one's too (its record holds what was asked)
        if d.get("asked"):
            by_asked.setdefault(asked_line(d), []).append(f"{d['release']} ({where_words(d)})")
    for asked, releases in by_asked.items():
        which = "" if len(by_asked) == 1 else f" (for {', '.join(releases)})"
        lines.append(f"- Asked{which}: `{asked}`")
    lines.append(LABEL_LINE)
    columns = columns_line(results)
    if columns:
        lines.append(columns)
    if any(PER_OUTER.match(str((d.get("series") or {}).get("shape") or "")) for d in results):
        lines.append(f"- {SHAPE_LEGEND}")
    lines += ["", results_table(results) if results else "_No results yet._", ""]
    if unreadable:
        lines += [f"Unreadable result files (ignored): {', '.join(unreadable)}", ""]
    lines += [MACHINE_SUMMARY, "", "```text", *measured_on(results),
              "", SWEEP_RAN, machine(), "```", "", "</details>", ""]
    infos = [d for d in measured if d.get("environment")]
    if infos:
        lines += ["<details><summary><code>jax.print_environment_info()</code> of each "
                  "release</summary>", ""]
        for d in infos:
            lines += [f"jax {d['release']} ({where_words(d)}):", "", "```text",
                      d["environment"].rstrip(), "```", ""]
        lines += ["</details>", ""]
    return words_now("\n".join(lines))


SWEEP_RAN = ("the sweep that wrote this file ran on (results it kept may come from an earlier "
             "run, on the machines above):")
UNAME = re.compile(r"uname_result\((?P<fields>.*)\)")


def machine_of(d: dict) -> str | None:
    """The machine a result's own record names (its ``jax.print_environment_info()``'s
    platform line: system, kernel release, architecture), or None where it names none."""
    line = next((line for line in (d.get("environment") or "").splitlines()
                 if line.startswith("platform:")), None)
    if line is None:
        return None
    said = line.removeprefix("platform:").strip()
    m = UNAME.fullmatch(said)
    if m:
        fields = dict(re.findall(r"(\w+)='([^']*)'", m["fields"]))
        said = " ".join(fields.get(k, "") for k in ("system", "release", "machine")).strip()
    return said or None


def python_of(d: dict) -> str | None:
    line = next((line for line in (d.get("environment") or "").splitlines()
                 if line.startswith("python:")), None)
    return line.split()[1] if line and len(line.split()) > 1 else None


def measured_on(results: list[dict]) -> list[str]:
    """The machine(s) the rows were measured on, as each result's record names it, with the
    releases measured on each; the rows whose record names none, said so."""
    by_machine: dict[str, list[str]] = {}
    for d in results:
        if d.get("skipped"):
            continue
        python = python_of(d)
        row = f"{d['release']} ({where_words(d)}{', python ' + python if python else ''})"
        by_machine.setdefault(machine_of(d) or "", []).append(row)
    lines = ["measured on (each result's own record, its jax.print_environment_info()):"]
    lines += [f"- {m}: jax {'; '.join(rows)}" for m, rows in by_machine.items() if m]
    if by_machine.get(""):
        lines.append(f"- no machine in its record: jax {'; '.join(by_machine[''])}")
    return lines


def write_summary(reports: Path, command: str,
                  machine: Callable[[], str] = machine_description) -> Path:
    """Rebuild ``REPORTS/README.md``; left untouched when only its date or the machine that
    reran it would change (the results it tabulates were kept as they were)."""
    results, unreadable = load_results(reports)
    path = reports / SUMMARY
    now, described = datetime.now(UTC).replace(second=0, microsecond=0), machine()
    text = summary_text(results, unreadable, command, now, lambda: described)
    try:
        old = path.read_text(encoding="utf-8")
    except OSError:
        old = None
    # The run's own record beside the results: written with the summary, so the two agree
    if old is None or undated(old) != undated(text) or not (reports / RUN_RECORD).is_file():
        write_atomic(reports / RUN_RECORD, json.dumps(
            {"kind": RUN_KIND, "schema": 1, "command": command,
             "run": now.strftime("%Y-%m-%dT%H:%M:%SZ"), "machine": described},
            indent=2) + "\n")
        write_atomic(path, text)
    return path


RUN_RECORD = "sweep.json"  # the command, date and machine of the run that wrote the summary
RUN_KIND = "sweep-run"


def run_record(reports: Path) -> tuple[str, datetime, str] | None:
    """The sweep run's own record (``sweep.json``): its command, date and machine."""
    try:
        doc = json.loads((reports / RUN_RECORD).read_text(encoding="utf-8"))
        return (doc["command"], datetime.strptime(doc["run"], "%Y-%m-%dT%H:%M:%SZ")
                .replace(tzinfo=UTC), doc["machine"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def render_summary(reports: Path) -> Path:
    """Rewrite ``REPORTS/README.md`` from the results beside it, measuring nothing (``python
    -m jaxbisect.sweep --render DIR``): the command, the date and the machine it records are
    those of the run that measured them, carried as they are, so the same results give the
    same file."""
    path = reports / SUMMARY
    results, unreadable = load_results(reports)
    if not results:
        raise UserError(f"{reports}: no sweep results (jax-*.json) to render")
    try:
        old = path.read_text(encoding="utf-8")
    except OSError:
        raise UserError(f"{path}: no summary to take the sweep's command from (run the sweep "
                        f"itself)") from None
    command, now, machine = run_record(reports) or recorded(old)  # older folders: carried
    if command is None:
        raise UserError(f"{path}: no '{COMMAND.strip()}' line to carry (run the sweep itself)")
    text = summary_text(results, unreadable, command, now or datetime.now(UTC),
                        (lambda: machine) if machine is not None else machine_description)
    if text != old:
        write_atomic(path, text)
    return path


def recorded(text: str) -> tuple[str | None, datetime | None, str | None]:
    """What a summary records of the run that wrote it: its command, its date and the
    machine's description (None where it holds none)."""
    lines = text.splitlines()
    command = next((line[len(COMMAND):].strip().strip("`") for line in lines
                    if line.startswith(COMMAND)), None)
    now = None
    for line in lines:
        if line.startswith(UPDATED):
            try:
                now = datetime.strptime(line[len(UPDATED):].removesuffix(" UTC").strip(),
                                        UPDATED_FORMAT).replace(tzinfo=UTC)
            except ValueError:
                now = None
            break
    machine = None
    if MACHINE_SUMMARY in lines:
        after = lines[lines.index(MACHINE_SUMMARY) + 1:]
        start = next((i for i, line in enumerate(after) if line.startswith("```")), None)
        if start is not None:
            end = next((i for i, line in enumerate(after[start + 1:], start + 1)
                        if line.startswith("```")), None)
            if end is not None:
                block = after[start + 1:end]
                if SWEEP_RAN in block:  # the rows' machines are remade from the results
                    block = block[block.index(SWEEP_RAN) + 1:]
                machine = "\n".join(block)
    return command, now, machine


def undated(text: str) -> list[str]:
    """The summary less its date and its Machine block (that block describes the machine of
    the last run that changed a result)."""
    lines, in_machine = [], False
    for line in text.splitlines():
        if line == MACHINE_SUMMARY:
            in_machine = True
        elif in_machine and line == "</details>":
            in_machine = False
        elif not in_machine and not line.startswith((UPDATED, *VOLATILE_LINES)):
            lines.append(line)
    return lines


def read_result(path: Path) -> dict | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(document, dict) and document.get("kind") == "sweep-result"
    return document if ok else None


def load_results(folder: Path) -> tuple[list[dict], list[str]]:
    """Every result directly in ``folder``, by where (the backend first) then release; and
    the JSON files that are not one."""
    found, unreadable = [], []
    for path in sorted(folder.glob("*.json")):
        if path.name == RUN_RECORD:  # the run's own record, not a result
            continue
        document = read_result(path)
        if document is None:
            unreadable.append(path.name)
        else:
            found.append(document)
    return sorted(found, key=result_order), unreadable
