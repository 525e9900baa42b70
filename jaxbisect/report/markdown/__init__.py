"""A report's markdown, read from its JSON document alone (docs/schema.md): the first screen,
the tables, the commits part, the reproduce lines and the sections below them.

``render`` is the one entry: ``python -m bisect --render FILE.json`` and the writing of a report
both call it, so a shipped report is what its document renders to with the current code."""

from __future__ import annotations

from jaxbisect.report.markdown.bisection import render_bisection
from jaxbisect.report.markdown.explain import render_explain
from jaxbisect.report.markdown.words import words_now

KINDS = {"metric": render_bisection, "metric-explain": render_explain}


def render(doc: dict) -> str:
    """The markdown of a bisection's or an explanation's document."""
    return words_now(KINDS[doc["kind"]](doc))
