"""A bisection's report: the first screen, then everything else folded below it."""

from __future__ import annotations

import re

from jaxbisect.report.markdown import tpu
from jaxbisect.report.markdown.answer import first_screen, notes_lines
from jaxbisect.report.markdown.commits import commits_lines
from jaxbisect.report.markdown.reproduce import standalone_lines
from jaxbisect.report.markdown.sections import (
    attribution_lines,
    evidence_lines,
    hlo_lines,
    minimal_lines,
    run_lines,
    tried_lines,
    why_lines,
)
from jaxbisect.report.markdown.tables import interior_lines, packages_lines, probes_lines
from jaxbisect.report.markdown.words import LIMIT, details

FENCED = re.compile(r"^```[\w-]*\n(?P<body>.*?)\n```$", re.MULTILINE | re.DOTALL)
CUT_NOTE = ("[… {left} characters left out here to keep the report within GitHub's "
            "{limit:,}-character comment limit; the report's .json file beside it holds them "
            "whole]")


def target_lines(doc: dict) -> list[str]:
    """A user's target spec file, which travels with the report."""
    spec = doc.get("target_spec")
    if not spec:
        return []
    return details(f"{spec['name']}: the target spec (save it beside the program)",
                   [spec["text"].rstrip()], "text")


def render_bisection(doc: dict) -> str:
    """The markdown report of a bisection's document."""
    notes = notes_lines(doc)
    if "sweep" in doc:
        notes += ["A change made and undone inside the range cannot be seen by bisection: "
                  "to measure every release in it:", "", "```sh", doc["sweep"], "```", ""]
    if doc.get("next_step"):
        step = doc["next_step"]
        notes += [f"The newest release installable here is jax {step['newest']}; to look "
                  f"further:", "", "```sh", step["command"], "```", ""]
    parts = [*first_screen(doc), *(["## Notes", "", *notes] if notes else [])]
    sections = {  # the document's optional parts, in the report's order
        "commits": commits_lines, "commits_by_pair": commits_lines,
        "libtpu": tpu.section, "attribution": attribution_lines, "explanation": why_lines,
        "hlo_module": hlo_lines, "evidence": evidence_lines, "minimal": minimal_lines,
        "try_xla_flags": tried_lines,
        "interrupted": lambda d: [f"_{d['interrupted'][0].upper()}"
                                  f"{d['interrupted'][1:]}._", ""]}
    done = set()
    body = []
    for key, lines in sections.items():
        if doc.get(key) and lines not in done:
            done.add(lines)
            body += lines(doc)
    parts += ["## Details", "", *interior_lines(doc), *probes_lines(doc),
              *standalone_lines(doc), *target_lines(doc), *body, *run_lines(doc),
              *packages_lines([*doc["probes"], *(doc.get("interior") or ())])]
    return within_limit(parts)


def within_limit(parts: list[str], limit: int = LIMIT) -> str:
    """The lines joined, the longest code blocks (the evidence's dumps and diffs) cut, each
    with a note, until the whole fits GitHub's comment limit."""
    text = "\n".join(parts)
    while len(text) > limit:
        blocks = [m for m in FENCED.finditer(text)]
        if not blocks:
            break
        block = max(blocks, key=lambda m: len(m["body"]))
        note = CUT_NOTE.format(left=0, limit=limit)
        keep = len(block["body"]) - (len(text) - limit) - len(note) - 20
        if keep < 0 and len(block["body"]) <= len(note) + 20:
            break  # nothing left worth cutting
        kept = block["body"][:max(0, keep)].rsplit("\n", 1)[0] if keep > 0 else ""
        left = len(block["body"]) - len(kept)
        body = f"{kept}\n{CUT_NOTE.format(left=left, limit=limit)}".lstrip("\n")
        text = text[:block.start("body")] + body + text[block.end("body"):]
    return text
