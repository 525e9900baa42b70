"""The evidence as markdown for the report: the collectors' results, rendered apart from them."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from tabulate import tabulate

from jaxbisect.evidence.common import UNITS
from jaxbisect.evidence.schedule import stacked_words
from jaxbisect.report.figures import mib


def _bytes(nbytes: int | None) -> str:
    """A size read from XLA's dump, rounded as XLA's own text rounds it (its
    ``HumanReadableNumBytes``: cut to whole KiB, then MiB and up to 2 decimals, KiB to 1), so
    a figure here and XLA's line for the same allocation agree: 26345796 B is 25.12 MiB in
    both (not 25.13); with a space before the unit."""
    if nbytes is None:
        return "n/a"
    if nbytes < UNITS["KiB"]:
        return f"{nbytes} B"
    units, n = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"), nbytes
    step = 0
    while n >= UNITS["MiB"] and step < len(units) - 1:
        n //= 1024
        step += 1
    return f"{n / 1024:.1f} KiB" if step == 0 else f"{n / 1024:.2f} {units[step]}"


def _exact(nbytes: int | None) -> str:
    """A size from the dump as a figure and its byte count: ``25.12 MiB (26345796 B)``."""
    return "n/a" if nbytes is None else (
        _bytes(nbytes) if nbytes < UNITS["KiB"] else f"{_bytes(nbytes)} ({nbytes} B)")


def _megabytes(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else mib(nbytes)


def table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A GitHub markdown table, every cell as written (no number re-formatting)."""
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def details(summary: str, lines: Sequence[str], language: str | None = None) -> list[str]:
    """A collapsed block of ``lines``, in a code block of ``language`` where given."""
    body = [f"```{language}", *lines, "```"] if language is not None else list(lines)
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""]


def _code(lines: Sequence[str], language: str = "text") -> str:
    return f"```{language}\n" + "\n".join(lines) + "\n```"


def what_differs(old: Sequence[str], new: Sequence[str],
                 context: int = 1) -> tuple[list[str], list[str]]:
    """Two dumps shown side by side cut to the lines where they differ, ``context`` lines
    around each; every stretch left out said with its length."""
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    keep_old, keep_new = set(), set()
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag != "equal":
            keep_old.update(range(max(a1 - context, 0), min(a2 + context, len(old))))
            keep_new.update(range(max(b1 - context, 0), min(b2 + context, len(new))))
    return _kept(old, keep_old), _kept(new, keep_new)


def _kept(lines: Sequence[str], keep: set[int]) -> list[str]:
    out: list[str] = []
    left_out = 0
    for i, line in enumerate(lines):
        if i in keep:
            if left_out:
                out.append(f"… {left_out} line{'s' if left_out > 1 else ''} the same under "
                           f"both left out")
                left_out = 0
            out.append(line)
        else:
            left_out += 1
    if left_out:
        out.append(f"… {left_out} line{'s' if left_out > 1 else ''} the same under both "
                   f"left out")
    return out


def render_buffers_markdown(evidence: dict, command: str | Sequence[str],
                            plain: Sequence[str] = ()) -> str:
    """A case's buffers at the peak (evidence/collect.py's ``peak_evidence``) as markdown;
    ``command`` remakes one release's dump, ``plain`` both without the toolkit."""
    old, new = evidence["releases"]["old"], evidence["releases"]["new"]
    o, n = f"jax {old['jax'] or '?'}", f"jax {new['jax'] or '?'}"
    # By name: a stored document's keys come back sorted.
    params = ", ".join(f"{k}={v!r}" for k, v in sorted((evidence.get("params") or {}).items()))
    followed = evidence.get("followed")
    shape = "[" + ",".join(map(str, followed)) + "]" if followed else None
    named = ("the case's own" if evidence.get("stacked_shape")
             else "the array whose count at the peak changed most between the plans")

    def places(reading: dict) -> str:  # arrays: a tuple's place holds only its pointers
        return places_words(reading)

    rows = [["jaxlib", old["jaxlib"] or "n/a", new["jaxlib"] or "n/a"],
            ["plan (output + temp)", *(_megabytes(r["plan_bytes"]) for r in (old, new))],
            ["XLA's total bytes used", _exact(old["dump_total_bytes"]),
             _exact(new["dump_total_bytes"])],
            ["largest allocation", *(f"{_exact(r['largest_allocation']['size_bytes'])}, "
                                     f"{r['largest_allocation']['kind']}"
                                     if r["largest_allocation"] else "n/a" for r in (old, new))],
            ["held in it (places, by shape)", places(old), places(new)]]
    if shape:
        rows.append([f"{shape} buffers (places)", *(
            f"{r['stacked']['slots']} ({_bytes(r['stacked']['bytes'])}, "
            f"{r['stacked']['values']} values)" if r["stacked"] else "n/a" for r in (old, new))])
    out = ["## The buffers at the peak", "",
           f"XLA's plan of the case at {params or 'its defaults'}, from each release's dump "
           f"(its buffer assignment; the largest allocation is sized to the plan's peak, and "
           f"values that are never live together share a place in it). Sizes from the dump "
           f"are rounded as XLA's own text rounds them (under 1 KiB: bytes; under 1 MiB: KiB "
           f"to 1 decimal; from 1 MiB: cut to whole KiB, then 2 decimals), with the byte "
           f"count beside the largest:", "",
           table(["", o, n], rows), "", *shared_space_words(((o, old), (n, new)))]
    moved = {}  # the shapes one plan holds at the peak in more places (≥ 1 % of the most)
    for key, more, fewer, change, sign in (("new_at_peak", n, o, "bytes_added", "+"),
                                           ("old_at_peak", o, n, "bytes_removed", "−")):
        entries = evidence.get(key) or []
        moved[key] = [e for e in entries if e[change] * 100 >= entries[0][change]]
        if moved[key]:
            out += [f"Held at the peak under {more} in more places than under {fewer}: "
                    + "; ".join(f"`{e['shape']}` {e['old_places']} → {e['new_places']} "
                                f"({sign}{_bytes(e[change])})" for e in moved[key][:5]) + ".", ""]
    if not any(moved.values()) and old["at_peak"] and new["at_peak"]:
        out += ["Both plans hold the same shapes in as many places at the peak.", ""]
    errors, values, raw = [], [], []
    for label, release in ((o, old), (n, new)):
        errors += [f"_{label}: {release['error']}_", ""] if release["error"] else []
        a = release["largest_allocation"]
        if a:
            values += [f"{label}: allocation {a['index']}, {_bytes(a['size_bytes'])} = "
                       f"{a['size_bytes']} B, {a['kind']}", *(f"  {v['values']:3d} × {v['shape']} "
                                           f"({_bytes(v['size_bytes'])} each)"
                                           for v in a["values"]), ""]
    for key in ("memory_usage_report", "buffer_assignment", "after_optimizations"):
        pair = [r["raw"].get(key) or [] for r in (old, new)]
        if pair[0] and pair[0] == pair[1]:
            raw += [f"**{key.replace('_', ' ').capitalize()}**, the same under {o} and {n} "
                    f"({len(pair[0])} lines):", "", _code(pair[0]), ""]
            continue
        for label, lines in zip((o, n), what_differs(*pair) if all(pair) else pair):
            if lines:
                raw += [f"**{label}, {key.replace('_', ' ')}**", "", _code(lines), ""]
    out += errors
    if values:
        out += details("The values of the largest allocation, by shape", values[:-1], "text")
    if old["schedule"] or new["schedule"]:
        out += [f"The scheduled entry computation (XLA's *after_optimizations* HLO): where "
                f"{shape} buffers ({named}) are made relative to the while loops"
                + (", cut to where the releases differ:" if old["schedule"] and new["schedule"]
                   else "."), ""]
        out += ["Each loop's count is of the buffers made *outside* the loops that are still "
                "used after it starts (made before it, carried into it); a buffer a loop makes "
                "inside itself is not counted there. The places at the peak (above) count every "
                "buffer of the plan.", ""]
        schedules = [schedule_lines(r["schedule"], (r.get("raw") or {}).get("after_optimizations"))
                     for r in (old, new)]
        pair = (tuple(schedules) if not all(schedules) else what_differs(*schedules))
        out += [line for label, lines in zip((o, n), pair) if lines
                for line in (_code([f"{label}:", *lines]), "")]
    if raw:
        note = RAW_NOTE + (COLUMNS_NOTE if any("\nTotal bytes used" in x for x in raw)
                           else "")
        out += details("XLA's own text, from its dumps", [note, "", "\n".join(raw).rstrip()])
    if isinstance(command, str):
        out += ["One release's dumps, made again: from this toolkit's clone, with the `python` "
                "of that release's environment (its `pip install` line in *Reproduce*; the "
                "report's .json file holds what was read from the dumps: the figures and "
                "excerpts above):", "", _code([command], "sh"), ""]
    else:  # each release's venv of the reproduce block, made in the clone
        out += ["Each release's dumps, made again: from this toolkit's clone, in the venvs of "
                "*Reproduce* made there (the report's .json file holds what was read from the "
                "dumps: the figures and excerpts above):", "", _code(list(command), "sh"), ""]
    if plain:
        out += ["Without the toolkit, from the folder of the case file (*The program*), in the "
                "environments of *Reproduce*; XLA writes `*after_optimizations-buffer-"
                "assignment.txt`, `*-memory-usage-report.txt` and `*after_optimizations.txt` "
                "into each `dump-…` folder:", "", _code(plain, "sh"), ""]
    return "\n".join(out)


RAW_NOTE = ("The lines below are XLA's text from its dump files, cut to the ones the tables "
            "above rest on: sizes in bytes (`size=…`), or in XLA's own units with no space "
            "(`…B`, `…KiB`, `…MiB`): under 1 KiB, bytes; under 1 MiB, KiB to 1 decimal; from "
            "1 MiB, cut to whole KiB before 2 decimals, as the figures above are. One part is "
            "set anew: the rows under the line `size; offset; …` (a header of the toolkit's) "
            "are the memory usage report's rows for the places, inside an allocation, that "
            "hold the case's stacked shape, without XLA's running total in front, their shapes "
            "sorted and the rows in order of their offset (XLA's order changes from run to "
            "run).")
# Older jaxlibs' memory usage report: the lines under "Total bytes used" have XLA's header
COLUMNS_NOTE = (" In the memory usage report, a line under `Total bytes used` reads, as XLA's "
                "column header there says, `cumulative_size; total_size - cumulative_size; "
                "allocation`.")


def places_words(reading: dict, shown: int = 3) -> str:
    """The arrays held in the largest allocation at the peak, by shape: places × shape (their
    bytes), the largest ``shown``."""
    arrays = [e for e in reading.get("at_peak") or () if not e["shape"].startswith("(")]
    return ("; ".join(f"{e['places']} × {e['shape']} ({_bytes(e['bytes'])})"
                      for e in arrays[:shown]) + ("; …" if len(arrays) > shown else "")
            if arrays else "n/a")


def shared_space(reading: dict) -> int | None:
    """The bytes of the arrays held at the peak where they add up to more than the largest
    allocation (buffers never live together given overlapping offsets in it, each counted
    once per place), else None: then the parts are not to be read as a sum."""
    arrays = sum(e["bytes"] for e in reading.get("at_peak") or ()
                 if not e["shape"].startswith("("))
    size = (reading.get("largest_allocation") or {}).get("size_bytes")
    return arrays if size and arrays > size else None


def shared_space_words(labelled: Sequence[tuple[str, dict]]) -> list[str]:
    """The sentence under the table where the places held add up past the allocation."""
    over = [(label, total, r["largest_allocation"]["size_bytes"]) for label, r in labelled
            if (total := shared_space(r)) is not None]
    if not over:
        return []
    return ["The places held overlap: buffers that are never live at the same time are given "
            "overlapping offsets of the allocation, and each is counted with its own shape, "
            "so the shapes' bytes add up to more than the allocation ("
            + "; ".join(f"{label}: {_bytes(total)} counted in {_bytes(size)}"
                        for label, total, size in over)
            + "). They say which arrays the plan holds, not how its bytes divide.", ""]


# A schedule's header, as any record says it: the stacked shape and the count at most.
_HEADER = re.compile(r"; stacked (?P<shape>\S+) buffers (?:made outside the loops and )?live at "
                     r"a loop's start: at most (?P<peak>\d+)(?: \(those a loop makes inside "
                     r"its body are not counted here\))?$")
_LIVE = re.compile(r"; stacked buffers live: (\d+)$")


_LOOP = re.compile(r"^\s*\d+\s+(\S+): loop \d+ of \d+")
_STACKED = re.compile(r"; stacked (\[[\d,]+\]) buffers")
_UNTRACED = re.compile(r"; stacked buffers live: not traced \((\d+) carried in from a value "
                       r"this listing does not follow\)$")
def untraced_words(carried: int) -> str:
    """A loop whose stacked state the reading did not follow, with how many of its stacked
    elements came in that way (the record's count)."""
    return ("; made before it, used after its start: not counted (its "
            + (f"{carried} stacked element{'s' if carried != 1 else ''} of state came" if carried
               else "stacked state came")
            + " in from a value that could not be followed back to a buffer of the entry "
            "computation)")


UNTRACED_WORDS = ("; made before it, used after its start: not counted (its stacked state "
                  "could not be followed back to a buffer of the entry computation)")


def untraced_loops(lines: list[str], raw: list[str] | None) -> set[str]:
    """Loops a reading made before the listing followed tuple-shaped values counted 0 with no
    carried buffer although their state holds a stacked array (the raw after_optimizations
    line of the loop says so): that 0 is not a count."""
    shape = next((m.group(1) for m in map(_STACKED.search, lines[:1]) if m), None)
    if not shape:
        return set()
    dims = shape[1:-1]
    out = set()
    for line in lines[1:]:
        m = _LOOP.match(line)
        if m and ", carries " not in line and line.endswith("; stacked buffers live: 0"):
            loop = next((r for r in raw or () if r.lstrip("%").startswith(f"{m.group(1)} = ")),
                        None)
            if loop and re.search(rf"\[{re.escape(dims)}\]", loop.split(" while(")[0]):
                out.add(m.group(1))
    return out




def schedule_lines(lines: list[str], raw: list[str] | None = None) -> list[str]:
    """A schedule reading as the report shows it: the header's "at most" count said as what
    it counts (buffers made outside the loops, at a loop's start: not the peak's), as records
    written later say it, or none where a loop's stacked state was not traced; each loop's
    count said as what it counts; a loop whose stacked state the reading did not trace
    (``raw``: the release's after_optimizations lines) says so rather than 0."""
    untraced = untraced_loops(list(lines or ()), raw)
    loops = [m.group(1) for m in map(_LOOP.match, lines or ()) if m]
    untraced |= {m.group(1) for line in lines or () if _UNTRACED.search(line)
                 for m in [_LOOP.match(line)] if m}
    out = []
    for line in lines or ():
        m = _LOOP.match(line)
        if m and m.group(1) in untraced and line.endswith("; stacked buffers live: 0"):
            line = line.removesuffix("; stacked buffers live: 0") + UNTRACED_WORDS
        header = _HEADER.search(line)
        if header:  # any record's header, in today's words (evidence/schedule.py's)
            line = line[:header.start()] + "; " + stacked_words(
                header["shape"], int(header["peak"]), len(loops), len(untraced))
        out.append(_UNTRACED.sub(lambda m: untraced_words(int(m[1])), _LIVE.sub(
            r"; made before it, used after its start: \1", line)))
    return out
