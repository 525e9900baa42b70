"""Small readings of a report's document that every part of the markdown shares."""

from __future__ import annotations

import re
from collections.abc import Sequence

from packaging.version import Version
from tabulate import tabulate

from jaxbisect.report.figures import figure_text
from jaxbisect.report.markdown.expect import verdicts
from jaxbisect.search.classify import Direction
from jaxbisect.search.rounds import Status
from repro.verdict import slope

LIMIT = 65_536  # GitHub's comment limit, in characters
# Where the toolkit's own command runs (`python -m bisect` from the clone's root only: away
# from it the standard library's `bisect` answers, silently)
IN_THE_CLONE = ("from the root of its clone, in the environment its README's Quick start "
                "sets up; `jax-bisect` takes the same arguments from anywhere")
SUBJECT_WIDTH = 180  # a commit subject whole: an XLA revision in it is evidence


EMPTY_CELLS = (None, "")
# An end's role in plain words (the records say "first end", "last end").
END_WORDS = {"first end": "oldest release measured", "last end": "newest release measured"}


def filled_columns(headers: Sequence[str], rows: Sequence[Sequence],
                   empty: tuple = EMPTY_CELLS) -> tuple[list[str], list[list]]:
    """The table less each column empty in every row (its cells all in ``empty``): a column
    of nothing says nothing."""
    if not rows:
        return list(headers), [list(r) for r in rows]
    keep = [i for i in range(len(headers)) if any(r[i] not in empty for r in rows)]
    return [headers[i] for i in keep], [[r[i] for i in keep] for r in rows]


def table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub markdown table, every cell as written (no number re-formatting), less any
    column empty in every row."""
    headers, rows = filled_columns(headers, rows)
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def details(summary: str, lines: Sequence[str], language: str | None = None) -> list[str]:
    """A collapsed block of ``lines``, in a code block of ``language`` where given."""
    body = [f"```{language}", *lines, "```"] if language is not None else list(lines)
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""]


def label(doc: dict) -> str:
    """The program's name in the user's words: the case's, or the command's."""
    if doc.get("label"):
        return doc["label"]
    return doc["case"]["name"] if doc.get("case") else " ".join(doc.get("command") or ())


def unit(doc: dict) -> str:
    return doc["metric"]["unit"] or ""


def probe_at(doc: dict, jax: str) -> dict:
    return next(p for p in doc["probes"] if p["jax"] == jax)


def by_release(doc: dict) -> list[dict]:
    """The probes in release order (the document lists them in the order probed)."""
    return sorted(doc["probes"], key=lambda p: Version(p["jax"]))


def said(doc: dict, fig: dict) -> str:
    """A probe's figure in the metric's units; an output as what it is (its values, and its
    dtype and shape), both runs' values where they differ."""
    if doc["metric"]["name"] == "output" and (fig.get("nondeterministic") or "sha256" in fig):
        return output_words(fig)
    return figure_text(doc["metric"]["name"], unit(doc), fig)


def output_words(fig: dict) -> str:
    """An output's figure in words: ``nan (float64)``, ``float32[3]: [0.0, 1.0, 2.0]``; a
    nondeterministic one by each run's first value."""
    if fig.get("nondeterministic"):
        firsts = [str(r[0]) for r in fig.get("runs") or () if r]
        return "differs between runs: " + "; ".join(firsts) if firsts else str(fig["value"])
    values = [str(v) for v in fig.get("values") or ()]
    shapes = fig.get("shapes") or []
    shown = ", ".join(values[:3]) + (", …" if len(values) > 3 else "")
    if len(shapes) != 1:
        return f"[{shown}]" + (f" ({len(shapes)} arrays)" if len(shapes) > 1 else "")
    dims, dtype = shapes[0]
    if not dims:
        return f"{shown} ({dtype})"
    return f"{dtype}[{','.join(map(str, dims))}]: [{shown}]"


def failure_of(probe: dict) -> dict | None:
    """The run of a probe that gave no samples, where none gave any."""
    failure = next((r for r in probe["runs"] if r["status"] != "ok"), None)
    if failure and not any(r["samples"] for r in probe["runs"] if r["status"] == "ok"):
        return failure
    return None


def runs_of(probe: dict) -> int:
    """A probe's runs, as the search counted them (a crash rate's runs are its runs)."""
    return sum((r.get("crash_rate") or {}).get("runs", 1) for r in probe["runs"])


def params_text(params: dict) -> str:
    return ", ".join(f"{k} {', '.join(map(str, v)) if isinstance(v, (tuple, list)) else v}"
                     for k, v in params.items())


def short(c: dict) -> str:
    return c["sha"][:10]


def subject(text: str, most: int = SUBJECT_WIDTH) -> str:
    """A commit's subject in at most about ``most`` characters, cut between words: a link is
    kept whole or left out (a cut one would be autolinked to a page that does not exist)."""
    words, kept = " ".join(str(text).split()).split(" "), []
    for word in words:
        link = "://" in word or word.startswith(("github.com/", "www."))
        if len(" ".join([*kept, word])) > most and not (link and not kept):
            return " ".join(kept) + " …" if kept else cut(word, most)
        kept.append(word)
    return " ".join(kept)


def linked(c: dict, brief: bool = False) -> str:
    """A commit as a link, its subject and its pull request (a merge's subject names it: its
    number there is the link). ``brief``: the link names the commit by the 10 characters it is
    shown by, as GitHub takes it (a first screen's; the whole hash is in its section)."""
    url = c["url"][:-30] if brief and re.search(r"/[0-9a-f]{40}$", c["url"]) else c["url"]
    said, pr = subject(c["subject"]), ""
    if c.get("pr"):
        merge = f"Merge pull request #{c['pr']} "
        if said.startswith(merge):
            said = f"Merge pull request [#{c['pr']}]({c['pr_url']}) {said[len(merge):]}"
        else:
            pr = f" ([#{c['pr']}]({c['pr_url']}))"
    return f"[`{short(c)}`]({url}) {said}{pr}"


def cut(text: str, most: int) -> str:
    """``text`` on one line, at most ``most`` characters, cut at a word's end (mid-word only
    where one word runs past half of them)."""
    text = " ".join(str(text).split())
    if len(text) <= most:
        return text
    kept = text[:most - 1]
    space = kept.rfind(" ")
    if space > most // 2 and text[most - 1] != " ":
        kept = kept[:space]
    return kept.rstrip(" ,;:(") + "…"


def clause_cut(text: str, most: int) -> str:
    """A reason in a table cell: whole where it fits; else its first clause (to the first
    "; ") whole where that is at most half again ``most``; else cut at a word's end."""
    text = " ".join(str(text).split())
    if len(text) <= most:
        return text
    first = text.split("; ")[0]
    if len(first) < len(text) and len(first) <= most * 3 // 2:
        return first + "; …"
    return cut(text, most)


def pair_or_ends(doc: dict) -> list[str]:
    """The two releases an answer rests on: the pair found, else the ends measured."""
    if doc["status"] == Status.FOUND and doc.get("last_old"):
        return [doc["last_old"]["jax"], doc["first_new"]["jax"]]
    return list(doc["measured_part"])


LOCAL_FILE = re.compile(r"(?<![\w/.])/(?:tmp|home|root|work|Users|private)/[^\s,;:)]+")
NO_NETWORK = re.compile(r"\s*\(?<urlopen error [^>]*>\)?")
XLA_FAILED = re.compile(r"\b(?:[\w.]+\.)?(?:Jax|Xla)RuntimeError:\s*(?:[A-Z_]+:\s*)?")
RAISED = re.compile(r"\b(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit)):\s*")


NOT_INSTALLABLE_GPU = "not installable here: needs a real GPU"


def measured_not_installable(text: str) -> str:
    """A release skipped because compiling it needs a real GPU installs fine: it was not
    *measured* here (documents from before said "not installable here")."""
    return text.replace(NOT_INSTALLABLE_GPU, "not measured here: needs a real GPU")


AT_CONFIDENCE = re.compile(r"\bat (0\.\d{2,})\b")  # "… at 0.9939": the test's confidence


def percent_sure(confidence: float) -> str:
    """A confidence (0.99875) as a reader says it: 99.9%."""
    return f"{confidence * 100:.1f}%"


def confidence_words(text: str) -> str:
    """A placement's bare confidence ("the old behaviour at 0.9988", "change 148x … 383x at
    0.9939") said as what it is: "at 99.9% confidence"."""
    return AT_CONFIDENCE.sub(lambda m: f"at {percent_sure(float(m[1]))} confidence", text)


# Words the harness writes into a record, and how a page says them (the record keeps the
# harness's, which the store's keys depend on).
WORDS_NOW = {
    "a Pallas kernel's payload differs between releases by its serialised bytes alone":
        "a Pallas kernel's payload is the kernel as each release's Mosaic serialises it, which "
        "may differ for one kernel",
    "not counted (no loop's stacked state comes from a value this listing follows;":
        "not counted (no loop's stacked state could be followed back to a buffer of the entry "
        "computation;",
    "memory_analysis() reports 0 bytes (not measured by this release)":
        "memory_analysis() reports 0 bytes (this release's compiled statistics are empty)",
    "; a TPU VM would not": "; on a Cloud TPU VM jax would write one that libtpu reads",
    "as a release between them could not be measured (they are not":
        "as a release between them gave no figure (they are not",
}


def value_named(source: str, name: str, value) -> str | None:
    """What a case's docstring calls one value of a parameter, where it names it so: "the
    carry-only scan (``variant=1``)" gives "the carry-only scan"; None where it does not."""
    import ast

    try:
        doc = " ".join((ast.get_docstring(ast.parse(source or "")) or "").split())
    except SyntaxError:
        return None
    m = re.search(rf"\b(the|an?)\s+([^(),;.`]{{3,40}}?)\s+\(``{re.escape(name)}="
                  rf"{re.escape(str(value))}``\)", doc)
    return f"{m[1]} {m[2]}" if m else None


def words_now(text: str) -> str:
    """``text`` with a record's older words said as the pages say them now (WORDS_NOW)."""
    for old, new in WORDS_NOW.items():
        text = text.replace(old, new)
    for old, new in PATTERNS_NOW:
        text = old.sub(new, text)
    return text


# Older words with a figure in them (a date, a tag): the same, by pattern.
PATTERNS_NOW = [
    (re.compile(r"\((https://\S+) at (jax-v[\d.]+), made (\d{4}-\d\d-\d\d)\)"),
     r"(made on \3 from \1's tags up to \2)"),
]


def plainly(text: str | None) -> str:
    """A failure of the toolkit's own (a network, a setting XLA refused, a step that raised)
    said in words, without the exception's own text: never the program's measured error,
    which is the bug and is shown as the program prints it."""
    text = NO_NETWORK.sub(" (no network connection)", str(text or ""))
    text = LOCAL_FILE.sub("a temporary file", text)  # this machine's paths say nothing
    text = XLA_FAILED.sub("XLA failed: ", text)
    text = measured_not_installable(text)
    return RAISED.sub(lambda m: f"raised {m[1]}, saying ", text).strip()


def value_words(doc: dict, value) -> str:
    """One measured value in a table cell (a flag or pass tried): an output's as what it is,
    never a raw list; anything else as the figures write it."""
    from jaxbisect.report.figures import figure_cell

    metric = doc["metric"]["name"]
    if metric == "output" and isinstance(value, (list, tuple)) and len(value) == 2 \
            and isinstance(value[0], list) and isinstance(value[1], list):
        shapes, values = value
        return output_words({"sha256": "", "shapes": shapes,
                             "values": values[:max(0, len(values) - 2 * len(shapes))]})
    if metric == "output" and isinstance(value, dict) and "values" in value:
        shapes = value.get("shapes") or []
        values = value["values"]
        return output_words({"sha256": "", "shapes": shapes,
                             "values": values[:max(0, len(values) - 2 * len(shapes))]})
    return figure_cell(metric, unit(doc), value)


PER_OUTER = re.compile(r"^(?P<status>\w+) \((?P<growth>[+-]\d+\.\d+)/outer\)$")
# The scan verdict (repro/verdict.py) fits n_outer 2 and above: n_outer 1 keeps nothing across
# outer steps, so even a constant plan holds one stacked output fewer there.
FITTED_FROM = 2
SHAPE_LEGEND = (
    "Shape: the memory over n_outer, fitted from n_outer 2 on (n_outer 1 keeps nothing "
    "across outer steps, so it may hold one stacked output fewer than n_outer 2 even where "
    "the memory is constant): constant, or grows by about one stacked output (the scan's "
    "n_inner × n_res³ values) per n_outer, its size in MiB from the row's own figures.")


def per_outer_mib(figures: dict | None) -> float | None:
    """The least-squares growth in MiB per n_outer of ``figures`` ({n_outer: bytes}) over
    n_outer 2 and above, as the scan verdict fits them; None where fewer than two are there."""
    points = sorted((int(n), b) for n, b in (figures or {}).items()
                    if str(n).isdigit() and int(n) >= FITTED_FROM
                    and isinstance(b, (int, float)) and not isinstance(b, bool))
    if len(points) < 2:
        return None
    return slope(points) / 2**20


def shape_words(label: str | None, figures: dict | None = None) -> str:
    """The scan verdict's label in words: ``grows (+1.00/outer)`` (one more stacked output
    held for each n_outer, repro/verdict.py) as "grows 3051.76 MiB per n_outer" (fitted from
    n_outer 2, as SHAPE_LEGEND says), with the growth from ``figures`` ({n_outer: bytes})
    where given; ``constant (+0.00/outer)`` as "constant from n_outer 2"."""
    m = PER_OUTER.match(label or "")
    if not m:
        return label or ""
    if m["status"] == "constant":
        return f"constant from n_outer {FITTED_FROM}"
    growth = per_outer_mib(figures)
    if growth is None or (growth > 0) != (float(m["growth"]) > 0):  # figures that disagree
        # with the label (a record edited by hand): the label's own words
        outputs = float(m["growth"])
        return (f"{m['status']} by {outputs:.2f} stacked output"
                f"{'' if abs(outputs) == 1 else 's'} per n_outer")
    return f"{m['status']} {growth:.2f} MiB per n_outer"


# What a found change's pair is called, by its direction.
PAIR_WORDS = {Direction.REGRESSION: ("last good", "first bad"),
              Direction.FIX: ("last bad", "first fixed"),
              Direction.CHANGED: ("last old", "first new")}


def direction_of(doc: dict) -> str:
    """The change's direction; where a case states what is right (EXPECT), the pair's end that
    gives it says which; an error that appears is a regression, one that goes a fix."""
    direction = doc["direction"]
    if direction != Direction.CHANGED or not (doc.get("last_old") and doc.get("first_new")):
        return direction
    pair = (doc["last_old"]["jax"], doc["first_new"]["jax"])
    right = verdicts(doc)  # the case's EXPECT, where it states what is right
    if all(v in right for v in pair) and right[pair[0]] != right[pair[1]]:
        return Direction.REGRESSION if right[pair[0]] else Direction.FIX
    if doc["metric"]["name"] == "error":
        old, new = (probe_at(doc, v)["figure"].get("value") for v in pair)
        return (Direction.REGRESSION if old == "no error" else
                Direction.FIX if new == "no error" else direction)
    return direction


def pair_words(doc: dict) -> tuple[str, str]:
    """"last good" / "first bad", or the words of a fix or of a change."""
    return PAIR_WORDS.get(direction_of(doc), PAIR_WORDS[Direction.CHANGED])
