"""A TPU report's parts of its own, from the document alone: which part of the release the
change came with (the document's ``libtpu`` part: stages/libtpu.py), as a first-screen line and
a section, and an error figure as a maintainer reads it (its core, with its figures).

Each function takes the document (or a figure) and returns markdown; the report's renderers
call them (the first screen: :func:`first_screen_line`; the folded sections: :func:`section`).
"""

from __future__ import annotations

import re

from jaxbisect.report.installs import pip_words, python_of, venv_python
from jaxbisect.report.markdown.words import PAIR_WORDS, pair_words
from jaxbisect.search.error_signature import core
from jaxbisect.search.tpu_parts import Part
from jaxbisect.stages.program import FILE

SECTION = "The three parts of a TPU release"
_CELL_MAX = 160  # a table cell's error: its core, cut only past its figures


def error_words(figure) -> str:
    """An ``error`` figure (the whole message) as one line with its figures."""
    if not isinstance(figure, str):
        return "—" if figure is None else str(figure)
    return core(figure)


def _cell(figure) -> str:
    words = error_words(figure).replace("|", "\\|")
    return words if len(words) <= _CELL_MAX else words[:_CELL_MAX - 1] + "…"


def _parts(side: dict) -> str:
    return f"jax {side['jax']}, jaxlib {side['jaxlib']}, libtpu {side['libtpu']}"


def _install(doc: dict, words: str) -> str:
    """A narrowing's install words (``jax==A jaxlib==A libtpu==X``) pinned as every install
    line is: the held release's measured packages, its libtpu swapped for X."""
    said = dict(w.split("==", 1) for w in words.split() if "==" in w)
    try:
        line = pip_words(doc, said["jax"])
    except (KeyError, StopIteration, TypeError, ValueError):
        return words
    if "jaxlib==" not in line:  # no record of the held release's packages: the words
        return words
    return re.sub(r"libtpu==\S+", f"libtpu=={said.get('libtpu')}", line)


def first_screen_line(doc: dict) -> str | None:
    """One line: which part of the TPU release the change came with, as measured by the swaps
    (and, for libtpu, the first libtpu release on PyPI that shows it with its install line);
    None where the document has no such part."""
    part = doc.get("libtpu")
    if not part:
        return None
    old, new, said = part.get("old") or {}, part.get("new") or {}, part.get("part")
    narrowed = part.get("narrowed") or {}
    if said == "came with libtpu":
        if narrowed.get("first_new") and narrowed.get("exact"):
            return (f"**Which part:** came with libtpu {narrowed['first_new']}: with jax "
                    f"{old.get('jax')} and jaxlib {old.get('jaxlib')} held, the first libtpu "
                    f"release on PyPI that shows it, after {narrowed['last_old']} in version "
                    f"order (the lines that show it: *{SECTION}*, below). libtpu is closed "
                    f"source: its release is the finest level there is.")
        return (f"**Which part:** came with libtpu (between {old.get('libtpu')} and "
                f"{new.get('libtpu')}: jax {old.get('jax')} with libtpu {new.get('libtpu')} "
                f"shows it, jax {new.get('jax')} with libtpu {old.get('libtpu')} does not).")
    if said == "came with jax/jaxlib":
        return (f"**Which part:** came with jax/jaxlib {new.get('jax')} (it shows with libtpu "
                f"{old.get('libtpu')}; jax {old.get('jax')} does not with libtpu "
                f"{new.get('libtpu')}).")
    if said == "needs both":
        first = narrowed.get("first_new") if narrowed.get("exact") else None
        return (f"**Which part:** needs both: jax/jaxlib {new.get('jax')} and libtpu "
                f"{first or new.get('libtpu')} together (neither release's jax and jaxlib "
                f"with the other's libtpu shows it"
                + (f"; with jax {new.get('jax')} held, libtpu {first} is the first release "
                   f"on PyPI that shows it, after {narrowed['last_old']}"
                   # its lines, where it is not the first bad release's own (above)
                   + ("" if first == new.get("libtpu") else f" (its lines: *{SECTION}*, below)")
                   if first else "") + ").")
    return (f"**Which part:** cannot tell{ruled_out(part)} "
            f"({unmeasured_words(part) or part.get('reason')}).")


def ruled_out(part: dict) -> str:
    """What the one swap that gave a figure rules out: the old jax and jaxlib with the new
    libtpu behaving as before is not libtpu alone (search/tpu_parts.py's table)."""
    old, new = part.get("old") or {}, part.get("new") or {}
    for w in part.get("swaps") or ():
        if w.get("jax") == old.get("jax") and w.get("seen") == "old":
            return (f" whether jax/jaxlib {new.get('jax')} alone or with libtpu: not libtpu "
                    f"alone, as jax {old.get('jax')} with libtpu {w['libtpu']} behaves as "
                    f"before")
    return ""


def _no_figure(swap: dict) -> bool:
    return swap.get("figure") is None and swap.get("seen") not in ("old", "new")


def _swap_said(swap: dict) -> str:
    """Why a swap gave no figure, from its record (its reason: an error, a status)."""
    why = (swap.get("reason") or "").removeprefix("cannot tell here: ")
    return why or swap.get("status") or swap.get("error") or "no figure recorded"


def unmeasured_words(part: dict) -> str:
    """Each swap that gave no figure, in its own record's words: what ran and why nothing
    came back ("jax 0.7.0 and jaxlib 0.7.0 with libtpu 0.0.17 gave no figure: …")."""
    return "; ".join(f"jax {w['jax']} and jaxlib {w['jaxlib']} with libtpu {w['libtpu']} gave "
                     f"no figure: {_swap_said(w)}"
                     for w in part.get("swaps") or () if _no_figure(w))


def pair_roles(doc: dict) -> tuple[str, str]:
    """The pair's words by the answer's direction ("last bad" / "first fixed" for a fix); a
    document without a found pair: "last old" / "first new"."""
    found = doc.get("direction") and doc.get("last_old") and doc.get("first_new")
    return pair_words(doc) if found and doc.get("metric") else PAIR_WORDS["changed"]


def section(doc: dict) -> list[str]:
    """The swaps measured (each release's parts, what each run showed), and the libtpu
    releases measured where the change came with libtpu; [] without the part."""
    part = doc.get("libtpu")
    if not part:
        return []
    lines = [f"### {SECTION}", "",
             "A TPU release is jax's Python, jaxlib (C++) and libtpu (the TPU compiler and "
             "runtime, closed source), pinned separately. Each release's jax and jaxlib were "
             "run with the other release's libtpu (`TPU_LIBRARY_PATH`):", "",
             "| jax | jaxlib | libtpu | behaves as | what it showed |", "|---|---|---|---|---|"]
    roles = pair_roles(doc)
    for side, role in zip(("old", "new"), roles):  # the pair, not the range's ends
        ends = part.get(side) or {}
        lines.append(f"| {ends.get('jax')} | {ends.get('jaxlib')} | {ends.get('libtpu')} | "
                     f"{role}, as measured | |")
    for swap in part.get("swaps") or ():
        showed = (_swap_said(swap).replace("|", "\\|") if _no_figure(swap)
                  else _cell(swap.get("figure")))
        seen = dict(zip(("old", "new"), roles)).get(swap["seen"], swap["seen"])
        lines.append(f"| {swap['jax']} | {swap['jaxlib']} | {swap['libtpu']} | {seen} "
                     f"| {showed} |")
    said = (unmeasured_words(part) if part.get("part") == "cannot tell" else "")
    lines += ["", f"**{part.get('part')}**: {said or part.get('reason')}."]
    narrowed = part.get("narrowed")
    if narrowed:
        held = narrowed.get("held") or part["old"]
        lines += ["", f"libtpu releases searched with jax {held['jax']} and jaxlib "
                      f"{held['jaxlib']} held: {', '.join(narrowed['candidates'])} "
                      f"(every release on PyPI between the two pins)"
                      + (f"; the search placed the change between libtpu "
                         f"{narrowed['last_old']} and {narrowed['first_new']}, each in a fresh "
                         f"Python {python_of(held['jax'], doc)} environment:"
                         if narrowed.get("first_new") else ".")]
        if narrowed.get("first_new"):
            lines += ["", "```sh"]
            for side, said in (("old", "behaves as before"), ("new", "shows the change")):
                libtpu = narrowed["last_old" if side == "old" else "first_new"]
                venv = f"libtpu-{libtpu}"
                python = venv_python(held["jax"], doc)
                lines += [f"{python} -m venv {venv} && {venv}/bin/pip install "
                          f"{_install(doc, narrowed['install'][side])}",
                          f"{venv}/bin/python {FILE}   # {said}, as the search placed it"]
            lines.append("```")
        if narrowed.get("skipped"):
            lines += ["", f"Skipped (no figure): {', '.join(narrowed['skipped'])}."]
        finest = (narrowed.get("finest") or "").rstrip(".")
        lines += ["", f"{finest}.", ""] if finest else [""]
    changes = part.get("jaxlib_commits") or {}
    # where the swaps place it in libtpu alone, jaxlib's commits are not where to look
    if changes.get("commits") and part.get("part") != Part.LIBTPU:
        lines += ["", f"Commits that change the jax repository's jaxlib/ between the releases "
                      f"({changes['count']}; a jaxlib build at each would test them, the "
                      f"toolkit runs jax's Python only):", ""]
        lines += [f"- [{c['sha'][:10]}]({c['url']}) {c['subject']}"
                  for c in changes["commits"][:20]]
        if changes["count"] > 20:
            lines.append(f"- … and {changes['count'] - 20} more")
    return lines


def commits_words(doc: dict) -> str | None:
    """``--commits``' answer for a TPU target, where the swaps of the release's parts say more
    than the commits (which run jax's Python over each release's jaxlib and libtpu together):
    None where the commits' own words stand (a first bad jax commit, or no TPU part)."""
    part, commits = doc.get("libtpu"), doc.get("commits") or {}
    if not part or not commits:
        return None
    said, came_with = part.get("part"), commits.get("came_with")
    old, new = part.get("old") or {}, part.get("new") or {}
    jaxlib_commits = (part.get("jaxlib_commits") or {}).get("count")
    builds = (f"; {jaxlib_commits} commits change the jax repository's jaxlib/ between the "
              f"releases, the candidates a jaxlib build would test" if jaxlib_commits else "")
    if said == "came with libtpu":
        first = (part.get("narrowed") or {}).get("first_new") or new.get("libtpu")
        return (f"no jax commit: the change came with libtpu {first} (the swaps: jax "
                f"{old.get('jax')} and jaxlib {old.get('jaxlib')} show it with that libtpu); "
                f"libtpu is closed source, its release is the finest level there is")
    if said == "needs both" and came_with != "jax":
        return (f"needs both: jaxlib {new.get('jaxlib')} with libtpu {new.get('libtpu')} (the "
                f"swaps: neither alone shows it){builds}")
    if said == "came with jax/jaxlib" and came_with == "jaxlib":
        return (f"came with jaxlib {new.get('jaxlib')} (libtpu {old.get('libtpu')} held by the "
                f"swaps){builds}")
    return None
