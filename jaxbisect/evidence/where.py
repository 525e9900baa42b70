"""Where a change between two releases is: JAX (its lowering), XLA's HLO passes (the
optimized HLO), or below HLO (XLA's code generation or its runtime).

One rule, on normalized text, for every path that attributes a change (a case's bisection
and the built-in scan report's evidence): the lowered modules are compared once source
locations and names are gone (``lowering.normalize_lowered``), the optimized modules once
what never changes the program is gone (``normalize_optimized``). Same lowering and same
optimized HLO is below HLO, whatever the metric; the report shows the first real difference.
"""

from __future__ import annotations

import difflib
import json
import re

from jaxbisect.evidence.common import (
    MAX_LINE_CHARS,
    QUOTED,
    around_keeping_head,
    balanced_end,
    first_differing,
    shortened,
)
from jaxbisect.evidence.lowering import compare_lowering

MAX_DIFF_LINES = 40

WORDS = {
    "jax": "the lowered modules differ: the change is in JAX (its lowering to StableHLO)",
    "xla": "the lowered modules are identical but XLA's optimized HLO differs: the change is "
           "in XLA's HLO passes (inside jaxlib)",
    "below-hlo": "the lowered modules and XLA's optimized HLO are both identical once "
                 "metadata, source locations and names are set aside: the change is below HLO "
                 "(XLA's code generation or its runtime, inside jaxlib)",
    "jaxlib": "the lowered modules are identical, and XLA's optimized HLO could not be "
              "compared: the change is inside jaxlib (XLA's HLO passes or below them)",
    "unknown": "the lowered StableHLO of the two releases could not be compared",
}

# Attributes of an instruction whose value never changes the program: where it came from
# (metadata={op_name=… source_file=… source_line=… stack_frame_id=…}) and what it is called.
_DROPPED_ATTRIBUTES = ("metadata", "op_name")
# A module's fingerprint (newer XLA's frontend attribute): a hash of all of it, which differs
# wherever anything does, so never the first real difference.
_FINGERPRINT = re.compile(r'(\bfingerprint_\w*=)"[0-9a-f]+"')
# The stack-frame tables newer XLA prints after the computations (source files, functions,
# lines): provenance, like metadata.
_FRAME_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_FRAME_ROW = re.compile(r"^\s*\d+\s")
# backend_config keys that only name things (the rest, a fusion's kind or tiling, is kept).
NAMING_KEYS = frozenset({"name", "op_name"})
_IDENTIFIER = re.compile(r"\b([A-Za-z_][\w\-]*?)\.\d+(?:\.\d+)*\b")
_MODULE = re.compile(r"^HloModule [\w.\-]+")


def _attribute_end(line: str, start: int) -> int:
    """The index just past the value of the attribute whose value begins at ``start``: a
    balanced ``{…}`` (quotes respected), a quoted string, or a bare token."""
    if line.startswith("{", start):
        return balanced_end(line, start)
    if line.startswith('"', start):  # unterminated: to the line's end
        return quoted.end() if (quoted := QUOTED.match(line, start)) else len(line)
    end = start
    while end < len(line) and line[end] not in ", )":
        end += 1
    return end


def _drop_attribute(line: str, name: str) -> str:
    """``line`` without every ``, name=VALUE`` outside quotes (VALUE balanced)."""
    pattern = re.compile(r",?\s*\b" + re.escape(name) + r"=")
    out, pos = [], 0
    while True:
        match = pattern.search(line, pos)
        while match and _inside_quotes(line, match.start()):
            match = pattern.search(line, match.end())
        if match is None:
            return "".join(out) + line[pos:]
        out.append(line[pos:match.start()])
        pos = _attribute_end(line, match.end())


def _inside_quotes(line: str, index: int) -> bool:
    return any(m.start() < index < m.end() for m in QUOTED.finditer(line))


def _clean_backend_config(line: str) -> str:
    """A ``backend_config={json}`` without the keys that only name things, nor empty fields
    (a field renamed while empty, as jaxlib 0.10.2 renamed a while loop's
    ``dynamic_variable_tuple_indices: []``, says nothing about the program)."""
    marker = "backend_config="
    at = line.find(marker)
    if at < 0 or _inside_quotes(line, at):
        return line
    start = at + len(marker)
    end = _attribute_end(line, start)
    try:
        config = json.loads(line[start:end])
    except ValueError:
        return line

    def clean(value):
        if isinstance(value, dict):  # an empty field is proto3's default: printed or not
            return {k: clean(v) for k, v in value.items()
                    if k not in NAMING_KEYS and v not in ([], {}, "")}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return line[:start] + json.dumps(clean(config), sort_keys=True,
                                     separators=(",", ":")) + line[end:]


def normalize_optimized(text: str, *, backend_config: bool = True) -> list[str]:
    """XLA's optimized HLO without what does not change the program: metadata (op names,
    source files and lines, stack frames) and the stack-frame tables, op names, the
    backend-config keys that only name things (the whole backend config unless
    ``backend_config``), the module's name, instruction and computation numbering
    (``%copy.5``, ``region_0.8``), the module's fingerprint, the printer's comments, ``%``
    signs and blank lines."""
    dropped = _DROPPED_ATTRIBUTES if backend_config else (*_DROPPED_ATTRIBUTES, "backend_config")
    names: dict[str, str] = {}

    def rename(match: re.Match) -> str:
        return names.setdefault(match.group(), f"{match.group(1)}.#{len(names)}")

    lines, in_table = [], False
    for raw in text.splitlines():
        line = raw.strip()
        if line in _FRAME_TABLES:
            in_table = True
            continue
        if in_table and _FRAME_ROW.match(line):
            continue
        in_table = False
        for name in dropped:
            line = _drop_attribute(line, name)
        line = _clean_backend_config(line) if backend_config else line
        line = _MODULE.sub("HloModule m", line)
        line = _FINGERPRINT.sub(r'\1"…"', line)
        line = re.sub(r"/\*.*?\*/|\s*//.*$", "", line).replace("%", "").strip()
        if line:
            lines.append(_IDENTIFIER.sub(rename, line))
    return lines


# A long changed line is kept around its first differing character: this many characters
# before it (the rest of MAX_LINE_CHARS after it).
LEAD_CHARS = 60


def _around(a: str, b: str) -> tuple[str, str]:
    """A removed and an added diff line (each its mark first), each longer than
    ``MAX_LINE_CHARS`` cut to about that around their first differing character, between two
    tokens: ``…`` where something was cut; an instruction's head kept first where the
    difference lies past it."""
    width = MAX_LINE_CHARS - 3  # the mark and two "…"
    at = first_differing(a[1:], b[1:])
    lead = max(LEAD_CHARS, at - (max(len(a), len(b)) - 1 - width))  # near the end: more before
    cut_a, cut_b = around_keeping_head(a[1:], b[1:], lead, width - lead,
                                       whole_within=MAX_LINE_CHARS - 1)
    return a[:1] + cut_a, b[:1] + cut_b


def _kept_where_they_differ(hunk: list[str]) -> list[str]:
    """The hunk's lines, each cut to about ``MAX_LINE_CHARS``: a run of removed lines and the
    run of added lines after it are paired in order, and each pair is cut around its first
    differing character (two lines that share a long prefix never read equal); other lines
    from their start."""
    out = list(hunk)
    i = 2 if hunk[:1] and hunk[0].startswith("---") else 0  # past the "--- old/+++ new" header
    while i < len(hunk):
        if not hunk[i].startswith("-"):
            i += 1
            continue
        removed_end = i
        while removed_end < len(hunk) and hunk[removed_end].startswith("-"):
            removed_end += 1
        added_end = removed_end
        while added_end < len(hunk) and hunk[added_end].startswith("+"):
            added_end += 1
        for k, (a, b) in enumerate(zip(hunk[i:removed_end], hunk[removed_end:added_end])):
            out[i + k], out[removed_end + k] = _around(a, b)
        i = added_end
    return shortened(out, MAX_DIFF_LINES)


def first_difference(old: list[str], new: list[str], context: int = 2) -> list[str]:
    """The first hunk of a unified diff of two normalized modules: the first real
    difference, trimmed (a changed line kept around its first differing character)."""
    diff = list(difflib.unified_diff(old, new, "old", "new", n=context, lineterm=""))
    hunk = []
    for line in diff:
        if line.startswith("@@") and any(h.startswith("@@") for h in hunk):
            break
        hunk.append(line)
    return _kept_where_they_differ(hunk)


def where_the_change_is(old_lowered: str | None, new_lowered: str | None,
                        old_optimized: str | None, new_optimized: str | None) -> dict:
    """The attribution of a change between two releases' modules: ``lowering``
    (identical | changed | unknown), ``optimized_hlo`` (identical | differs | unknown, or None
    where the lowering already differs or is unknown), ``culprit`` (jax | xla | below-hlo |
    jaxlib | unknown) with its ``text``, the lowering's diff and ``first_difference``: the
    first real difference of whichever comparison decided."""
    lowering = compare_lowering(old_lowered, new_lowered)
    optimized, optimized_diff = None, []
    if lowering["lowering"] == "identical":
        optimized = "unknown"
        if old_optimized and new_optimized:
            old, new = normalize_optimized(old_optimized), normalize_optimized(new_optimized)
            optimized = "identical" if old == new else "differs"
            optimized_diff = first_difference(old, new) if old != new else []
    culprit = ("jax" if lowering["lowering"] == "changed" else
               {"differs": "xla", "identical": "below-hlo", "unknown": "jaxlib"}.get(
                   optimized or "", "unknown"))
    shown = lowering["diff"][:MAX_DIFF_LINES] if culprit == "jax" else optimized_diff
    return {"lowering": lowering["lowering"], "optimized_hlo": optimized, "culprit": culprit,
            "text": WORDS[culprit], **{field: lowering[field] for field in (
                "reason", "diff", "diff_truncated", "added", "removed")},
            "first_difference": shown}


PAYLOAD_WORDS = ("a Pallas kernel's payload is the kernel as each release's Mosaic serialises "
                 "it, which may differ for one kernel")
# A TPU target's change placed by the swaps of its release's parts (stages/libtpu.py):
# the words a culprit gets where the swaps, not the modules, say where it is.
TPU_WORDS = {
    "libtpu": "swapping libtpu between the two releases says it came with libtpu {libtpu} "
              "(jax and jaxlib held, the new libtpu alone shows it): the change is in libtpu, "
              "the TPU compiler and runtime, closed source: its release is the finest level "
              "there is",
    "jax+libtpu": "swapping libtpu between the two releases says it needs both: neither the "
                  "new jax and jaxlib with the old libtpu nor the old ones with the new libtpu "
                  "show it",
    "jax/jaxlib": "swapping libtpu between the two releases says it came with jax/jaxlib (the "
                  "new jax and jaxlib show it with the old libtpu)",
    "tpu-unplaced": "for a TPU target a lowered module that differs does not say the change is "
                    f"in jax ({PAYLOAD_WORDS}), and swapping libtpu between the two releases "
                    "did not place it",
    "tpu-unswapped": "for a TPU target a lowered module that differs does not say the change is "
                     f"in jax ({PAYLOAD_WORDS}); libtpu was not swapped between these two "
                     "releases, as a release between them gave no figure (they are not "
                     "consecutive), so where the change lies is not known",
}


def following_the_swaps(attribution: dict, parts: dict | None) -> dict:
    """A TPU target's attribution as the swaps of its release's parts say it (``parts``: the
    document's ``libtpu`` part): a change that came with libtpu is libtpu's, with no XLA
    compare link offered as its cause; one that needs both says so; a lowered module that
    differs never places a change in jax by itself."""
    part = (parts or {}).get("part")
    narrowed = (parts or {}).get("narrowed") or {}
    new_libtpu = (narrowed.get("first_new") if narrowed.get("exact") else None) or (
        ((parts or {}).get("new") or {}).get("libtpu"))
    culprit = {"came with libtpu": "libtpu", "needs both": "jax+libtpu"}.get(part)
    if culprit is None and part == "came with jax/jaxlib" and attribution.get("culprit") in (
            "jax", "unknown"):
        culprit = "jax/jaxlib"
    if culprit is None and attribution.get("culprit") == "jax":
        culprit = "tpu-unplaced" if parts else "tpu-unswapped"
    if culprit is None:
        return attribution
    out = {**attribution, "culprit": culprit,
           "text": TPU_WORDS[culprit].format(libtpu=new_libtpu), "by": "swaps"}
    if culprit == "libtpu":
        links = dict(out.get("links") or {})
        if "xla_compare" in links:
            links["xla_compare"] = None
        out.update(links=links, xla_commits=None,
                   xla_note="the change came with libtpu alone: XLA's commits between the "
                            "two jaxlibs are not its cause")
    return out
