"""What a bisection prints on stdout: the answer in plain text, every command in it as it runs
typed in the folder the user stands in."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from jaxbisect.lab.known_flags import known_line
from jaxbisect.report.commands import wider_range
from jaxbisect.search.placing import Behaviour, Verdict


def timings_line(timings: dict) -> str:
    """Where this run's time went: each step, in the order they began (those after the
    answer ran beside each other where they could)."""
    steps = sorted(timings["steps"].items(), key=lambda item: item[1]["began"])
    return (f"time: {timings['seconds']:.1f} s in all; "
            + ", ".join(f"{name} {t['seconds']:.1f} s" for name, t in steps))


def reproducer_line(doc: dict) -> str | None:
    """The standalone program's outputs at the ends, on one line."""
    part = doc.get("reproducer")
    if not part:
        return None
    if part["why_not"] and part.get("program"):
        return (f"standalone program ({part['lines']} lines, {part['file']}), not run: "
                f"{part['why_not']}")
    if part["why_not"]:
        return f"no standalone program: {part['why_not']}"
    said = "; ".join(f"jax {end['jax']}: {', '.join(end['output'].splitlines())}"
                     for end in part["ends"])
    ran = all(end.get("exit") is not None for end in part["ends"])
    shows = {True: "shows the change", False: "does not show the change",
             None: "could not be run at both ends"}[part["shows_change"]]
    if part.get("quantity") == "peak" and ran:  # alike ends: one quantity at both
        shows = ("prints a run's peak at both ends, "
                 + {True: "the same shape", False: "not the same shape",
                    None: "no shape"}[part.get("agrees")])
    return (f"standalone program ({part['lines']} lines, {part['file']}) {shows}: {said}"
            + ("; its output differs between runs of one release" if part["nondeterministic"]
               else ""))


def plain(markdown: str) -> str:
    """A report's line for the terminal: no emphasis or code marks, a link as its text and
    its address."""
    text = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", markdown)
    return text.replace("**", "").replace("`", "")


def commits_line(doc: dict) -> str | None:
    """How many commits were probed and run (the probes line is the releases'): the search's
    probes, and the runs of every commit measured, both jaxlibs' and the commits looked at
    inside alike ends."""
    parts = [p for p in [doc.get("commits"), *doc.get("commits_by_pair", ())]
             if p and p.get("search")]
    if not parts:
        return None

    def inside(p: dict) -> list[dict]:
        return [side for side in (p.get("inside") or {}).values() if side["measured"]]

    def runs(p: dict) -> int:
        return (p["search"]["runs"] + (p.get("newer") or {}).get("runs", 0)
                + sum(side["runs"] for side in inside(p)))

    return "commits: " + "; ".join(
        (f"{p['kind']} {p['pair'][0]} → {p['pair'][1]}: " if "pair" in p else "")
        + f"{p['search']['probes']} probes of {p['candidates']} candidates"
        + "".join(f", and {side['commits']} inside alike ends" for side in inside(p))
        + f"; runs: {runs(p)}"
        for p in parts)


def terminal_lines(bisection, doc: dict, catalogue, here: Path) -> list[str]:
    """The answer on stdout, in plain text: every command in it as it runs typed in ``here``,
    the folder the user stands in (the report's keep a maintainer's form: the case by its
    name, from the clone)."""
    from jaxbisect.report import document as report
    from jaxbisect.report.commands import sweep_argv
    from jaxbisect.report.markdown import answer
    from jaxbisect.report.markdown.commits import commits_first_lines

    typed = report.typed_at(bisection, doc, here)
    lines = [plain(text)
             for text in (answer.answer_line(typed), *commits_first_lines(typed),
                          answer.thirds_line(typed), answer.raised_line(typed),
                          answer.crash_line(typed), answer.yanked_line(typed)) if text]
    lines += [known_line(entry) for entry in doc.get("xla_flags_known", ())]
    if "sweep" in doc:
        lines.append(f"a change made and undone inside the range cannot be seen by "
                     f"bisection; every release: "
                     f"{shlex.join(sweep_argv(bisection, at=here))}")
    if "minimal" in doc:
        lines.append(minimal_line(doc["minimal"]))
    lines += [tried_line(tried) for tried in doc.get("try_xla_flags", ())]
    lines += [f"measured jax {doc['measured_part'][0]} … {doc['measured_part'][1]} only; "
              f"the rest needs a real GPU: {part['command']}"
              for part in typed["needs_a_gpu"]]
    if "next_step" in doc:
        lines.append(f"to look further: "
                     f"{wider_range(catalogue, bisection, at=here)['next_step']['command']}")
    return [*lines, *filter(None, [reproducer_line(doc)]), probes_line(bisection),
            *filter(None, [commits_line(doc)])]


def tried_line(tried: dict) -> str:
    said = {Behaviour.OLD: "brings the old behaviour back",
            Behaviour.NEW: "keeps the new behaviour"}.get(
        tried["behaviour"], f"gives no answer ({tried['behaviour']}: {tried['error']})")
    return f"--try-xla-flags {tried['xla_flags']} under jax {tried['release']}: {said}"


def probes_line(bisection) -> str:
    """How many releases were probed, and how many of their runs a rerun read back from the
    store instead of measuring (each run once, however often the search asked for it)."""
    s, inside = bisection.search, bisection.interior
    measured = {i: p for i, p in (inside.placed.items() if inside else ()) if i not in s.placed}
    runs = {(r.release, r.number): r for p in (*s.placed.values(), *measured.values())
            for r in p.runs}
    # An error metric's end is its crash rate's runs (the report's and the JSON's count).
    made = {key: (r.crash_rate or {}).get("runs", 1) for key, r in runs.items()}
    stored = sum(made[key] for key, r in runs.items() if r.cached)
    return (f"probes: {len(s.placed)} ({s.remeasures} re-measured)"
            + (f", and {len(measured)} releases inside the ends" if measured else "")
            + f"; runs: {sum(made.values())}, {stored} of them stored from an earlier run")


def minimal_line(minimal: dict) -> str:
    """``--minimize``'s answer on stdout: the minimal program's parameters."""
    if minimal.get("at_start") == Verdict.CANNOT_TELL:
        return ("minimal: nothing shrunk (cannot tell whether the change shows at the "
                "parameters asked for: the paired test left it undecided)")
    if not minimal.get("kept_at_start"):
        return "minimal: nothing shrunk (the change does not show at the parameters asked for)"
    params = " ".join(f"--param {k}={v}" for k, v in minimal["params"].items())
    return (f"minimal: {params} ({minimal['metric']} {minimal['old_value']} at jax "
            f"{minimal['old']}, {minimal['new_value']} at jax {minimal['new']}"
            + ("" if minimal.get("complete") else "; the budget ran out: smaller may exist")
            + ")")
