"""Where and what: after a bisection, the evidence a maintainer asks for next.

*Where*: lower v0 under the releases either side of the change and compare the modules once
what always differs is removed. Identical modules put the change in the XLA compiler inside
jaxlib; different ones in JAX's lowering. *What*: XLA's own account of the compiled v0 (its
dump: memory-usage report, buffer assignment, the scheduled entry computation), reduced to how
many stacked ``[n_inner, *shape]`` buffers are live and where the schedule creates them.

The driver never imports jax: ``python -m repro.evidence --json`` runs in each release's
environment and answers with one JSON document.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from tabulate import tabulate

from repro import SCHEMA

MB = 1024**2
JAX_REPO_URL = "https://github.com/jax-ml/jax"
XLA_REPO_URL = "https://github.com/openxla/xla"
MAX_DIFF_LINES = 60
MAX_LINE_CHARS = 200


class EvidenceFailed(Exception):
    """``python -m repro.evidence`` gave no usable document for a release."""


# -- where: the lowered modules -------------------------------------------------------------

_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_LOC_DEFINITION = re.compile(r"^\s*#loc\d*\s*=")
_LOC_START = re.compile(r"(?<![\w.@#%$])loc\(")
_ATTR_DICT = re.compile(r'\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}')
_ATTR_ENTRY = re.compile(r'^\s*([\w.$]+)\s*=\s*(.*?)\s*$', re.DOTALL)
_SSA = re.compile(r"%[\w$.\-]+")
_SSA_DEFINED = re.compile(r"(?::\d+)?\s*=(?!=)|:\s")  # `%x =`, `%x:2 =`, `%arg0: tensor`
_PRIVATE_FUNC = re.compile(r"func\.func\s+private\s+@([\w$.\-]+)")
_MODULE_NAME = re.compile(r"^(\s*module\s+)@[\w$.\-]+")
_EMPTIED = "\x00"

# Attributes whose value differs between releases for the same program and never reaches the
# compiled code. Each entry: attribute -> the values that are noise (None: any value).
NOISE_ATTRIBUTES: dict[str, frozenset[str] | None] = {
    # The pytree path of each result, for error messages and export; "" became "result".
    "jax.result_info": None,
    "jax.arg_info": None,
    # Older releases spell out that a one-device argument is replicated; newer ones omit it.
    # Any other sharding changes the partitioning and is kept.
    "mhlo.sharding": frozenset({'"{replicated}"'}),
    # Some releases print the default layout explicitly; a non-default layout is kept.
    "mhlo.layout_mode": frozenset({'"default"'}),
}
# Kept on purpose: mhlo.num_partitions / mhlo.num_replicas (they change what XLA compiles),
# mhlo.frontend_attributes (they carry compiler hints such as host offloading), donation.


def _outside_quotes(line: str, edit) -> str:
    """Apply ``edit`` to the parts of ``line`` outside string literals."""
    out, last = [], 0
    for match in _QUOTED.finditer(line):
        out.append(edit(line[last:match.start()]))
        out.append(match.group())
        last = match.end()
    out.append(edit(line[last:]))
    return "".join(out)


def _strip_locations(line: str) -> str:
    """Remove every ``loc(...)`` (balanced, quotes respected): source locations differ with
    the path the program was run from and with JAX's traceback filtering."""
    while (match := _LOC_START.search(line)) is not None:
        depth, i, in_string = 0, match.end() - 1, False
        while i < len(line):
            char = line[i]
            if in_string:
                if char == "\\":
                    i += 1
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        line = line[:match.start()].rstrip() + line[i + 1:]
    return line


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, current, in_string = [], 0, [], False
    for i, char in enumerate(text):
        if in_string:
            in_string = not (char == '"' and text[i - 1] != "\\")
        elif char == '"':
            in_string = True
        elif char in "([{<":
            depth += 1
        elif char in ")]}>" and text[i - 1:i + 1] != "->":  # `->` of a function type
            depth -= 1
        elif char == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def _drop_noise_attributes(line: str) -> str:
    def clean(match: re.Match) -> str:
        entries = _split_top_level(match.group(1))
        parsed = [_ATTR_ENTRY.match(entry) for entry in entries]
        if not all(parsed):  # not an attribute dictionary (a region, a dense literal, ...)
            return match.group()
        kept = [entry.strip() for entry, m in zip(entries, parsed)
                if not (m.group(1) in NOISE_ATTRIBUTES
                        and (NOISE_ATTRIBUTES[m.group(1)] is None
                             or m.group(2) in NOISE_ATTRIBUTES[m.group(1)]))]
        return "{" + ", ".join(kept) + "}" if kept else _EMPTIED

    line = _ATTR_DICT.sub(clean, line)
    return re.sub(r"\s*" + _EMPTIED, "", line)  # a dictionary left empty goes altogether


def _renumber_values(lines: list[str]) -> list[str]:
    """SSA names (``%0``, ``%cst_3``, ``%iterArg_8``) -> ``%v<N>`` in order of definition.

    Printers name values differently across releases (``%0`` became ``%cst``/``%c``, region
    values restart their numbering), but the program is the same whenever the definitions come
    in the same order and every use refers to the same definition. Sibling regions may reuse a
    name, so a use refers to the latest definition of its name.
    """
    current: dict[str, str] = {}
    counter = 0

    def rename(segment: str) -> str:
        nonlocal counter
        out, last = [], 0
        for match in _SSA.finditer(segment):
            name = match.group()
            if _SSA_DEFINED.match(segment, match.end()) or name not in current:
                current[name] = f"%v{counter}"
                counter += 1
            out.append(segment[last:match.start()] + current[name])
            last = match.end()
        return "".join(out) + segment[last:]

    return [_outside_quotes(line, rename) for line in lines]


def _rename_private_functions(text: str) -> str:
    """Private functions get their names from Python objects and counters (``@None_0``,
    ``@closed_call_5``) that vary by release; rename them in order of definition."""
    names = {name: f"@private_{i}" for i, name in enumerate(dict.fromkeys(
        _PRIVATE_FUNC.findall(text)))}
    if not names:
        return text
    return re.sub(r"@([\w$.\-]+)", lambda m: names.get(m.group(1), m.group()), text)


def normalize_lowered(text: str) -> str:
    """The lowered module without what differs between releases for the same program:
    source locations, the module's name, private function names, SSA value names, the
    attributes in ``NOISE_ATTRIBUTES`` and whitespace. Everything that reaches XLA stays."""
    lines = []
    for raw in text.splitlines():
        if _LOC_DEFINITION.match(raw):
            continue
        line = _strip_locations(raw)
        line = _drop_noise_attributes(line)
        line = _MODULE_NAME.sub(r"\1@module", line)
        # Printers changed spacing (`compare  LT,` -> `compare LT,`); strings keep theirs.
        line = _outside_quotes(line, lambda part: re.sub(r"\s+", " ", part)).strip()
        if line:
            lines.append(line)
    return "\n".join(_renumber_values(_rename_private_functions("\n".join(lines)).splitlines()))


def meaningful_diff(old: list[str], new: list[str], context: int = 1) -> list[str]:
    """A unified diff of normalised modules, aligned with value names masked.

    One inserted definition renumbers every later ``%vN``; aligning on lines with the names
    masked keeps those renumbered-but-equal lines out of the diff. When the modules differ
    only in how values connect, the masked lines are all equal: then a plain diff.
    """
    masked_old = [_SSA.sub("%_", line) for line in old]
    masked_new = [_SSA.sub("%_", line) for line in new]
    matcher = difflib.SequenceMatcher(None, masked_old, masked_new, autojunk=False)
    if matcher.ratio() == 1.0:
        return list(difflib.unified_diff(old, new, "old", "new", n=context, lineterm=""))
    out = ["--- old", "+++ new"]
    for group in matcher.get_grouped_opcodes(context):
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        out.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in old[a1:a2]]
                continue
            out += ["-" + line for line in old[a1:a2]]
            out += ["+" + line for line in new[b1:b2]]
    return out


def compare_lowering(old_text: str | None, new_text: str | None) -> dict:
    """identical / changed / unknown, and the meaningful diff (normalised, trimmed)."""
    if not old_text or not new_text:
        return {"lowering": "unknown", "diff": [], "diff_truncated": False,
                "added": 0, "removed": 0,
                "reason": "no lowered module from " + " and ".join(
                    side for side, t in (("the old release", old_text),
                                         ("the new release", new_text)) if not t)}
    old, new = normalize_lowered(old_text), normalize_lowered(new_text)
    if old == new:
        return {"lowering": "identical", "diff": [], "diff_truncated": False,
                "added": 0, "removed": 0, "reason": None}
    diff = meaningful_diff(old.splitlines(), new.splitlines())
    added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    shown = [d if len(d) <= MAX_LINE_CHARS else d[:MAX_LINE_CHARS - 1] + "…"
             for d in diff[:MAX_DIFF_LINES]]
    return {"lowering": "changed", "diff": shown, "diff_truncated": len(diff) > MAX_DIFF_LINES,
            "added": added, "removed": removed, "reason": None}


# -- what: XLA's dump -------------------------------------------------------------------------

_UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_HUMAN_SIZE = re.compile(r"^\s*([\d.]+)\s*(B|KiB|MiB|GiB|TiB)\s*$")
_ARRAY_SHAPE = re.compile(r"^([a-zA-Z]\w*)\[([^\]]*)\]")
_TOTAL = re.compile(r"^Total bytes used:\s*(\d+)")
_REPORT_TOTAL = re.compile(r"^Total bytes(?: used)?:\s*(\d+)")
_ALLOCATION = re.compile(r"^allocation (\d+): size ([^,]+), (.*?):?\s*$")
_VALUE = re.compile(r"^\s*value: <(\d+) (.+?) @\d+> \(size=(\d+),offset=(\d+)\): (.+?)\s*$")
_MULTIPLIED = re.compile(r"^(\d+)\s*[×x]\s*(\S.*)$")


def human_bytes(text: str) -> int | None:
    """``2.1KiB`` -> 2150 (XLA's report rounds, so this is approximate); ``768`` -> 768."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    match = _HUMAN_SIZE.match(text)
    return round(float(match.group(1)) * _UNITS[match.group(2)]) if match else None


def array_dims(shape: str) -> tuple[int, ...] | None:
    """``f32[3,4,4,4]{3,2,1,0}`` -> (3, 4, 4, 4); None for tuples and dynamic shapes."""
    match = _ARRAY_SHAPE.match(shape.strip())
    if not match:
        return None
    dims = [d.strip() for d in match.group(2).split(",") if d.strip()]
    return tuple(int(d) for d in dims) if all(d.isdigit() for d in dims) else None


def is_stacked(shape: str, n_inner: int, array_shape: Sequence[int]) -> bool:
    """The scan's stacked output: ``[n_inner, *array_shape]`` of any element type."""
    return array_dims(shape) == (n_inner, *array_shape)


@dataclass(frozen=True)
class ReportSlice:
    """One row of an allocation's value table: a region and the values that share it."""

    size_bytes: int | None     # approximate: the report prints rounded units
    offset: int | None
    used_by_n_values: int | None
    shapes: tuple[tuple[int, str], ...]  # (how many values, shape)


@dataclass(frozen=True)
class ReportAllocation:
    index: int | None          # None where the report does not label its tables
    size_bytes: int | None     # approximate, as above
    kind: str                  # "preallocated-temp", "output shape is |f32[..]|, maybe-live-out"
    slices: tuple[ReportSlice, ...] = ()


@dataclass(frozen=True)
class MemoryUsageReport:
    total_bytes: int | None
    allocations: tuple[ReportAllocation, ...]  # largest first, as XLA sorts them


def _shapes_list(text: str) -> tuple[tuple[int, str], ...]:
    shapes = []
    for part in _split_top_level(text):
        part = part.strip()
        if not part:
            continue
        match = _MULTIPLIED.match(part)
        shapes.append((int(match.group(1)), match.group(2)) if match else (1, part))
    return tuple(shapes)


def parse_memory_usage_report(text: str) -> MemoryUsageReport:
    """XLA's ``*-memory-usage-report.txt``: the total, then allocations by size with the
    regions of each (size, offset, and the shapes of the values sharing a region).

    Two layouts exist: older jaxlibs (0.5 … 0.7 at least) put an ``allocation N:`` line before
    every value table; newer ones (0.10.2) print a ``Memory Space`` header with ``Total bytes:``
    and unlabelled tables, largest allocation first (index and kind are then None and "").
    """
    total = None
    allocations: list[dict] = []
    by_index: dict[int, dict] = {}
    current: dict | None = None
    labelled = False

    def allocation(index: int | None, size: int | None, kind: str) -> dict:
        entry = {"index": index, "size_bytes": size, "kind": kind, "slices": []}
        allocations.append(entry)
        if index is not None:
            by_index[index] = entry
        return entry

    for line in text.splitlines():
        stripped = line.strip()
        if (m := _REPORT_TOTAL.match(stripped)) is not None:
            total = (total or 0) + int(m.group(1))  # one total per memory space
        elif (m := _ALLOCATION.match(line)) is not None:
            index = int(m.group(1))
            current = by_index.get(index) or allocation(index, human_bytes(m.group(2)),
                                                        m.group(3))
            labelled = True
        elif "; allocation " in line:  # a row of the summary: "… ; allocation 10: size …"
            m = re.search(r"allocation (\d+): size ([^,]+), (.*?):?\s*$", line)
            if m and int(m.group(1)) not in by_index:
                allocation(int(m.group(1)), human_bytes(m.group(2)), m.group(3))
        elif stripped.startswith("cumulative_size;") and "shapes_list" in stripped:
            if not labelled:
                current = allocation(None, None, "")
            labelled = False
        elif current is not None and stripped.count(";") >= 4:
            cells = [c.strip() for c in stripped.split(";", 4)]
            offset, users = cells[2], cells[3]
            current["slices"].append(ReportSlice(
                size_bytes=human_bytes(cells[1]),
                offset=int(offset) if offset.isdigit() else None,
                used_by_n_values=int(users) if users.isdigit() else None,
                shapes=_shapes_list(cells[4])))
    return MemoryUsageReport(total_bytes=total, allocations=tuple(
        ReportAllocation(index=a["index"], size_bytes=a["size_bytes"], kind=a["kind"],
                         slices=tuple(a["slices"])) for a in allocations))


@dataclass(frozen=True)
class BufferValue:
    id: int
    name: str          # the HLO value: ``copy.5``, ``while.39{2} (phi)``
    size_bytes: int
    offset: int
    shape: str


@dataclass(frozen=True)
class BufferAllocation:
    index: int
    size_bytes: int
    kind: str
    values: tuple[BufferValue, ...]


@dataclass(frozen=True)
class BufferAssignment:
    total_bytes: int | None
    allocations: tuple[BufferAllocation, ...]  # in XLA's order (by index)

    def largest(self) -> BufferAllocation | None:
        return max(self.allocations, key=lambda a: a.size_bytes, default=None)


def parse_buffer_assignment(text: str) -> BufferAssignment:
    """The allocations section of XLA's ``*-buffer-assignment.txt`` (exact sizes)."""
    allocations: list[tuple[int, int, str, list[BufferValue]]] = []
    total = None
    for line in text.splitlines():
        if (m := _TOTAL.match(line)) is not None:
            total = int(m.group(1))
            break
        if line.startswith("Used values:"):
            break
        if (m := _ALLOCATION.match(line)) is not None and m.group(2).strip().isdigit():
            allocations.append((int(m.group(1)), int(m.group(2)), m.group(3), []))
        elif (m := _VALUE.match(line)) is not None and allocations:
            allocations[-1][3].append(BufferValue(id=int(m.group(1)), name=m.group(2),
                                                  size_bytes=int(m.group(3)),
                                                  offset=int(m.group(4)), shape=m.group(5)))
    return BufferAssignment(total_bytes=total, allocations=tuple(
        BufferAllocation(index=i, size_bytes=s, kind=k, values=tuple(v))
        for i, s, k, v in allocations))


@dataclass(frozen=True)
class StackedBuffers:
    """The stacked ``[n_inner, *shape]`` buffers XLA planned for.

    ``slots``: distinct places (allocation, offset) that hold one. XLA's heap simulator gives
    values whose live ranges do not overlap the same place, so this is how many stacked buffers
    the plan holds at once (3 per 3 outer iterations when they grow, 2 when they do not).
    """

    slots: int
    bytes: int
    values: int
    shape: str         # e.g. "[100,32,32,32]"


def stacked_buffers_live(parsed: BufferAssignment | MemoryUsageReport, n_inner: int,
                         array_shape: Sequence[int]) -> StackedBuffers:
    shape = "[" + ",".join(map(str, (n_inner, *array_shape))) + "]"
    if isinstance(parsed, BufferAssignment):
        places: dict[tuple[int, int], int] = {}
        values = 0
        for allocation in parsed.allocations:
            for value in allocation.values:
                if is_stacked(value.shape, n_inner, array_shape):
                    values += 1
                    key = (allocation.index, value.offset)
                    places[key] = max(places.get(key, 0), value.size_bytes)
        return StackedBuffers(len(places), sum(places.values()), values, shape)
    slots = nbytes = values = 0
    for allocation in parsed.allocations:
        for region in allocation.slices:
            stacked = sum(n for n, s in region.shapes if is_stacked(s, n_inner, array_shape))
            if stacked:
                slots += 1
                nbytes += region.size_bytes or 0
                values += stacked
    return StackedBuffers(slots, nbytes, values, shape)


# -- what: the scheduled entry computation ---------------------------------------------------

@dataclass(frozen=True)
class HloInstruction:
    position: int      # index in the entry computation's schedule
    name: str
    shape: str
    opcode: str
    operands: tuple[str, ...]
    attributes: str
    root: bool = False


_INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_COMMENT = re.compile(r"/\*.*?\*/")


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket group that opens at ``text[start]``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _parse_instruction(line: str, position: int) -> HloInstruction | None:
    m = _INSTRUCTION.match(line)
    if not m:
        return None
    rest = m.group(3)
    if rest.startswith("("):
        end = _balanced(rest, 0)
    else:
        end = rest.find(" ") if " " in rest else len(rest)
    shape, rest = rest[:end], rest[end:].lstrip()
    op = re.match(r"([\w\-]+)\(", rest)
    if not op:
        return None
    close = _balanced(rest, op.end() - 1)
    inside = _COMMENT.sub("", rest[op.end():close - 1])
    if "%" in inside:  # newer printers: `%name`, older typed ones: `f32[..] %name`
        operands = tuple(re.findall(r"%([\w.\-]+)", inside))
    else:
        operands = tuple(p.split()[-1] for p in _split_top_level(inside) if p.strip())
    return HloInstruction(position, m.group(2), shape, op.group(1), operands,
                          rest[close:].lstrip(", "), bool(m.group(1)))


def parse_entry_computation(hlo_text: str) -> list[HloInstruction]:
    """The instructions of the ENTRY computation of a scheduled HLO module, in order."""
    instructions: list[HloInstruction] = []
    inside = False
    for line in hlo_text.splitlines():
        if line.startswith("ENTRY"):
            inside = True
            continue
        if inside:
            if line.startswith("}"):
                break
            parsed = _parse_instruction(line, len(instructions))
            if parsed:
                instructions.append(parsed)
    return instructions


def _trip_count(attributes: str) -> str | None:
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"', attributes)
    return m.group(1) if m else None


def stacked_liveness(instructions: list[HloInstruction], n_inner: int,
                     array_shape: Sequence[int]) -> tuple[dict[str, str], dict[str, int]]:
    """For each stacked value: the buffer it lives in (its root), and each root's last use.

    A while loop updates its carried buffer in place, so ``get-tuple-element(while)`` is the
    buffer that went in through the loop's tuple; a bitcast is its operand's buffer. A use by
    a tuple lasts until the tuple's own last use (the loop that takes it).
    """
    by_name = {i.name: i for i in instructions}
    root: dict[str, str] = {}
    for inst in instructions:
        if not is_stacked(inst.shape, n_inner, array_shape):
            continue
        source = inst.name
        if inst.opcode == "bitcast" and inst.operands:
            source = root.get(inst.operands[0], inst.operands[0])
        elif inst.opcode == "get-tuple-element" and inst.operands:
            loop = by_name.get(inst.operands[0])
            index = re.search(r"index=(\d+)", inst.attributes)
            if loop is not None and loop.opcode == "while" and index and loop.operands:
                carried = by_name.get(loop.operands[0])
                if carried is not None and carried.opcode == "tuple":
                    k = int(index.group(1))
                    if k < len(carried.operands):
                        source = root.get(carried.operands[k], carried.operands[k])
        root[inst.name] = source
    last: dict[str, int] = {}
    for inst in reversed(instructions):  # a tuple's operands live as long as the tuple
        for operand in inst.operands:
            last[operand] = max(last.get(operand, -1), last.get(inst.name, inst.position)
                                if inst.opcode == "tuple" else inst.position)
        if inst.root:
            last[inst.name] = len(instructions)
    last_use: dict[str, int] = {}
    for name, buffer in root.items():
        last_use[buffer] = max(last_use.get(buffer, -1), last.get(name, -1))
    return root, last_use


def schedule_summary(hlo_text: str, n_inner: int, array_shape: Sequence[int],
                     max_lines: int = 40) -> list[str]:
    """A few lines: the while loops of the entry computation in schedule order, and where the
    stacked buffers are created, copied or updated relative to them, with how many stacked
    buffers are live when each loop starts."""
    instructions = parse_entry_computation(hlo_text)
    if not instructions:
        return ["no ENTRY computation found"]
    root, last_use = stacked_liveness(instructions, n_inner, array_shape)
    loops = [i for i in instructions if i.opcode == "while"]
    by_name = {i.name: i for i in instructions}
    shape = "[" + ",".join(map(str, (n_inner, *array_shape))) + "]"
    lines = []
    peak = 0
    for inst in instructions:
        if inst.opcode == "while":
            number = loops.index(inst) + 1
            carried = by_name.get(inst.operands[0]) if inst.operands else None
            carries = [root.get(o, o) for o in (carried.operands if carried else ())
                       if o in root]
            live = [b for b, end in last_use.items()
                    if b in by_name and by_name[b].position < inst.position <= end]
            peak = max(peak, len(live))
            trips = _trip_count(inst.attributes)
            lines.append(f"{inst.position:4d}  {inst.name}: loop {number} of {len(loops)}"
                         + (f" ({trips} trips)" if trips else "")
                         + (f", carries {', '.join(carries)}" if carries else "")
                         + f"; stacked buffers live: {len(live)}")
        elif inst.name in root and root[inst.name] == inst.name \
                and inst.opcode != "get-tuple-element":
            what = {"copy": "copies", "dynamic-update-slice": "updates",
                    "parameter": "receives"}.get(inst.opcode, "creates")
            lines.append(f"{inst.position:4d}  {inst.name} = {inst.opcode}"
                         f"({', '.join(inst.operands)}): {what} a stacked buffer")
    if not loops:
        lines.append("no while loops in the entry computation")
    header = (f"entry computation: {len(instructions)} instructions, {len(loops)} while loops; "
              f"stacked {shape} buffers live at a loop's start: at most {peak}")
    if len(lines) > max_lines:
        lines = lines[:max_lines - 1] + [f"… {len(lines) - max_lines + 1} more lines"]
    return [header, *lines]


def relevant_raw_lines(files: dict, n_inner: int, array_shape: Sequence[int],
                       limit: int = 30) -> dict[str, list[str]]:
    """The lines of each dump file that the summary rests on, for a collapsed block."""
    def stacked_line(line: str) -> bool:
        return any(is_stacked(token, n_inner, array_shape)
                   for token in re.findall(r"[a-zA-Z]\w*\[[\d,]*\]", line))

    out: dict[str, list[str]] = {}
    report = files.get("memory_usage_report", "")
    if report:
        lines = report.splitlines()
        head = [line for line in lines if line.startswith(("Total bytes", "Memory Space"))]
        head += [line.rstrip() for line in lines if "; allocation " in line][:3]
        head += [line.rstrip() for line in lines if ";" in line and stacked_line(line)]
        out["memory_usage_report"] = head[:limit]
    assignment = files.get("buffer_assignment", "")
    if assignment:
        parsed = parse_buffer_assignment(assignment)
        largest = parsed.largest()
        lines = []
        if largest is not None:
            lines.append(f"allocation {largest.index}: size {largest.size_bytes}, {largest.kind}:")
            lines += [f" value: <{v.id} {v.name}> (size={v.size_bytes},offset={v.offset}): "
                      f"{v.shape}" for v in largest.values
                      if is_stacked(v.shape, n_inner, array_shape)]
        out["buffer_assignment"] = lines[:limit]
    hlo = files.get("after_optimizations", "")
    if hlo:
        kept = [i for i in parse_entry_computation(hlo)
                if i.opcode == "while" or is_stacked(i.shape, n_inner, array_shape)]
        wanted = {i.name for i in kept}
        out["after_optimizations"] = [line.strip() for line in hlo.splitlines()
                                      if (m := _INSTRUCTION.match(line)) and m.group(2) in wanted
                                      ][:limit]
    return out


# -- running it in a release's environment ----------------------------------------------------

@dataclass(frozen=True)
class EvidenceOptions:
    """What ``python -m repro.evidence`` measures; the defaults finish in seconds per release."""

    n_outer: int = 3                  # the dumped v0: old and new differ from 3 on
    n_inner: int = 100
    n_res: int = 32
    dtype: str = "float32"
    xla_flags: str = ""
    workaround_n_outer: tuple[int, ...] = (1, 2, 4, 6)
    unroll: tuple[int, ...] = ()      # () -> 2 and n_inner (full)
    platform: str = ""                # JAX_PLATFORMS for every run ("cuda": no CPU fallback)
    target: str = ""                  # compile for this GPU without one (python -m repro --target)

    def argv(self) -> list[str]:
        args = ["--n-outer", str(self.n_outer), "--n-inner", str(self.n_inner),
                "--n-res", str(self.n_res), "--dtype", self.dtype,
                "--workaround-n-outer", *map(str, self.workaround_n_outer)]
        if self.unroll:
            args += ["--unroll", *map(str, self.unroll)]
        if self.target:
            args += ["--target", self.target]
        if self.xla_flags:
            args.append(f"--xla-flags={self.xla_flags}")
        return args

    @property
    def array_shape(self) -> tuple[int, ...]:
        return (self.n_res,) * 3


def _run_in_environment(python: Path, module: str, args: Sequence[str], timeout: float,
                        platform: str = "") -> dict:
    """``python -m MODULE ARGS`` from the staged harness; its JSON document."""
    from .probe import harness_environ, staged_harness  # the same staging as the probes

    stage, env = staged_harness(), harness_environ()
    if platform:
        env["JAX_PLATFORMS"] = platform
    try:
        done = subprocess.run([str(python), "-m", module, *args], cwd=stage, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise EvidenceFailed(f"{module} timed out after {timeout:.0f} s") from None
    except OSError as exc:
        raise EvidenceFailed(f"cannot run {python}: {exc}") from None
    try:
        document = json.loads(done.stdout)
    except ValueError:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise EvidenceFailed(f"{module} printed no JSON document: {tail[:300]}") from None
    if document.get("schema") != SCHEMA:
        raise EvidenceFailed(f"{module} spoke schema {document.get('schema')}, not {SCHEMA}")
    return document


def run_evidence(python: Path, options: EvidenceOptions, timeout: float = 900) -> dict:
    """``python -m repro.evidence --json`` in one release's environment."""
    return _run_in_environment(python, "repro.evidence", ["--json", *options.argv()], timeout,
                               options.platform)


def xla_commit_from_pin(text: str) -> str | None:
    """``XLA_COMMIT = "<40 hex>"`` from third_party/xla/workspace.bzl or revision.bzl."""
    m = re.search(r'^XLA_COMMIT\s*=\s*"([0-9a-f]{40})"', text, re.MULTILINE)
    return m.group(1) if m else None


def xla_commit_in_checkout(jax_repo: Path, jax_commit: str) -> str | None:
    """The XLA commit pinned at ``jax_commit`` in a local clone of JAX, without the network."""
    for pin in ("third_party/xla/revision.bzl", "third_party/xla/workspace.bzl"):
        done = subprocess.run(["git", "-C", str(jax_repo), "show", f"{jax_commit}:{pin}"],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0 and (commit := xla_commit_from_pin(done.stdout)):
            return commit
    return None


def release_commit(document: dict | None) -> dict:
    """The JAX commit a release's jaxlib was built from, and where that answer came from."""
    if not document or document.get("status") != "ok":
        return {"jax": None, "jaxlib": None, "commit": None, "ref": None, "source": None}
    commit = document.get("jaxlib_git_hash")
    # Without the hash (jaxlib < 0.4.24) the tag of the jaxlib's version is the best reference.
    ref = commit or f"jax-v{document['jaxlib']}"
    return {"jax": document["jax"], "jaxlib": document["jaxlib"], "commit": commit, "ref": ref,
            "source": "jaxlib.version._git_hash" if commit else "release tag (no hash in wheel)"}


def attribution_of(old: dict | None, new: dict | None, jax_repo: Path | None = None) -> dict:
    old_lowered = (old or {}).get("lowered", {}).get("text")
    new_lowered = (new or {}).get("lowered", {}).get("text")
    comparison = compare_lowering(old_lowered, new_lowered)
    culprit = {"identical": "xla", "changed": "jax"}.get(comparison["lowering"], "unknown")
    commits = {"old": release_commit(old), "new": release_commit(new)}
    links: dict[str, str | None] = {"jax_compare": None, "xla_compare": None,
                                    "xla_pin_old": None, "xla_pin_new": None}
    if commits["old"]["jax"] and commits["new"]["jax"]:
        links["jax_compare"] = (f"{JAX_REPO_URL}/compare/jax-v{commits['old']['jax']}"
                                f"...jax-v{commits['new']['jax']}")
    xla = {"old": None, "new": None}
    for side in ("old", "new"):
        ref = commits[side]["ref"]
        if ref:  # the folder holds workspace.bzl (older) or revision.bzl (newer) with XLA_COMMIT
            links[f"xla_pin_{side}"] = f"{JAX_REPO_URL}/tree/{ref}/third_party/xla"
            if jax_repo is not None:
                xla[side] = xla_commit_in_checkout(jax_repo, ref)
    if xla["old"] and xla["new"]:
        links["xla_compare"] = f"{XLA_REPO_URL}/compare/{xla['old']}...{xla['new']}"
        xla_note = None
    else:
        xla_note = ("XLA commits not derived: the wheels record only the JAX commit, and the "
                    "XLA pin (XLA_COMMIT in third_party/xla/workspace.bzl, later revision.bzl) "
                    "needs the JAX sources at that commit"
                    + ("" if jax_repo is None else f"; {jax_repo} did not have them"))
    return {"lowering": comparison["lowering"], "culprit": culprit,
            "reason": comparison["reason"], "diff": comparison["diff"],
            "diff_truncated": comparison["diff_truncated"], "added": comparison["added"],
            "removed": comparison["removed"], "commits": commits, "xla_commits": xla,
            "xla_note": xla_note, "links": links}


def release_evidence(document: dict | None, options: EvidenceOptions,
                     error: str | None = None) -> dict:
    """One release's side of the evidence, reduced from its evidence document."""
    out: dict = {"jax": None, "jaxlib": None, "error": error, "plan_bytes": None,
                 "dump_total_bytes": None, "largest_allocation": None, "stacked": None,
                 "stacked_source": None, "schedule": [], "raw": {}, "workarounds": [],
                 "series": []}
    if document is None:
        return out
    out.update(jax=document.get("jax"), jaxlib=document.get("jaxlib"))
    if document.get("status") != "ok":
        out["error"] = document.get("error")
        return out
    out["plan_bytes"] = document["compiled"].get("total_bytes")
    files = document["dump"].get("files", {})
    shape = options.array_shape
    if files.get("buffer_assignment"):
        assignment = parse_buffer_assignment(files["buffer_assignment"])
        largest = assignment.largest()
        out["dump_total_bytes"] = assignment.total_bytes
        if largest is not None:
            out["largest_allocation"] = {"index": largest.index, "size_bytes": largest.size_bytes,
                                         "kind": largest.kind}
        out["stacked"] = asdict(stacked_buffers_live(assignment, options.n_inner, shape))
        out["stacked_source"] = "buffer assignment"
    elif files.get("memory_usage_report"):
        report = parse_memory_usage_report(files["memory_usage_report"])
        out["dump_total_bytes"] = report.total_bytes
        out["stacked"] = asdict(stacked_buffers_live(report, options.n_inner, shape))
        out["stacked_source"] = "memory-usage report"
    if files.get("memory_usage_report") and out["dump_total_bytes"] is None:
        out["dump_total_bytes"] = parse_memory_usage_report(
            files["memory_usage_report"]).total_bytes
    if files.get("after_optimizations"):
        out["schedule"] = schedule_summary(files["after_optimizations"], options.n_inner, shape)
    out["raw"] = relevant_raw_lines(files, options.n_inner, shape)
    if document["dump"].get("status") != "ok":
        out["error"] = f"no dump: {document['dump'].get('error')}"
    for case in document.get("workarounds", {}).get("cases", []):
        out["workarounds"].append({
            "name": case["name"], "description": case["description"], "points": case["points"],
            "verdict": case["verdict"]["status"], "growth": case["verdict"]["growth_per_outer"],
            "errors": case["errors"]})
        if case["name"] == "v0":
            out["series"] = [p for p in case["points"] if p[1] is not None]
    return out


def gather_evidence(old_python: Path, new_python: Path,
                    options: EvidenceOptions = EvidenceOptions(), *,
                    workaround_xla_flags: Sequence[str] = (), jax_repo: Path | None = None,
                    timeout: float = 900) -> dict:
    """Run the evidence module in both environments; ``{"attribution": …, "evidence": …}``.

    A release that gives no document leaves its side empty with the reason and the
    attribution "unknown"; nothing here raises for a release's failure.
    """
    documents: dict[str, dict | None] = {}
    errors: dict[str, str | None] = {}
    for side, python in (("old", old_python), ("new", new_python)):
        try:
            documents[side], errors[side] = run_evidence(Path(python), options, timeout), None
        except EvidenceFailed as exc:
            documents[side], errors[side] = None, str(exc)
    flag_cases = []
    for flags in workaround_xla_flags:  # XLA reads flags at start-up: one harness run each
        combined = " ".join(f for f in (options.xla_flags, flags) if f)
        args = ["--json", "--quiet", "--variants", "v0", "--n-outer",
                *map(str, options.workaround_n_outer), "--n-inner", str(options.n_inner),
                "--n-res", str(options.n_res), "--dtype", options.dtype,
                f"--xla-flags={combined}"] + (["--target", options.target] if options.target
                                              else [])
        try:
            doc = _run_in_environment(Path(new_python), "repro", args, timeout,
                                      options.platform)
            points = [[c["n_outer"], c["total_bytes"]] for c in doc["cases"]]
            flag_cases.append({"name": f"v0 with XLA_FLAGS={flags}", "xla_flags": flags,
                               "points": points, "verdict": doc["verdict"]["status"],
                               "growth": doc["verdict"]["growth_per_outer"], "errors": []})
        except EvidenceFailed as exc:
            flag_cases.append({"name": f"v0 with XLA_FLAGS={flags}", "xla_flags": flags,
                               "points": [], "verdict": "unavailable", "growth": None,
                               "errors": [str(exc)]})
    attribution = attribution_of(documents["old"], documents["new"], jax_repo)
    releases = {side: release_evidence(documents[side], options, errors[side])
                for side in ("old", "new")}
    releases["new"]["workarounds"] += flag_cases
    restoring = [w["name"] for w in releases["new"]["workarounds"] if w["verdict"] == "constant"]
    evidence = {"schema": 1, "options": {**asdict(options),
                                         "workaround_n_outer": list(options.workaround_n_outer),
                                         "unroll": list(options.unroll)},
                "releases": releases, "restores_constant": restoring}
    return {"attribution": attribution, "evidence": evidence}


# -- the report -------------------------------------------------------------------------------

def _mb(nbytes: int | None) -> str:
    return "n/a" if nbytes is None else f"{nbytes / MB:.2f} MB"


def _bytes(nbytes: int | None) -> str:
    if nbytes is None:
        return "n/a"
    for unit in ("GiB", "MiB", "KiB"):
        if nbytes >= _UNITS[unit]:
            return f"{nbytes / _UNITS[unit]:.2f} {unit}"
    return f"{nbytes} B"


def _commit_cell(commit: dict) -> str:
    if commit.get("commit"):
        return f"[`{commit['commit'][:10]}`]({JAX_REPO_URL}/commit/{commit['commit']})"
    return f"`{commit['ref']}` ({commit['source']})" if commit.get("ref") else "unknown"


def _axis_top(value: float) -> float:
    """A round number a little above ``value`` (two significant digits) for the y-axis."""
    if value <= 0:
        return 1.0
    step = 10 ** (math.floor(math.log10(value * 1.05)) - 1)
    return math.ceil(value * 1.05 / step) * step


def _format_number(value: float) -> str:
    """Numbers as mermaid's grammar takes them: plain decimals, no exponent."""
    text = f"{value:.{2 if abs(value) >= 1 else 4}f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def chart_markdown(series: dict[str, list[tuple[int, float]]],
                   title: str = "v0 memory against n_outer",
                   y_label: str = "MB (output + temp)") -> str:
    """A mermaid ``xychart-beta`` line chart, which GitHub renders in markdown as it stands.

    Its x-axis is categorical, so every line must have a value at each category: the chart uses
    the n_outer values all series share. Mermaid draws no legend; the caption names the lines.
    """
    series = {label: sorted(points) for label, points in series.items() if points}
    if not series:
        return "_No measurements to chart._"
    shared = sorted(set.intersection(*({n for n, _ in pts} for pts in series.values())))
    if not shared:
        return "_The series share no n_outer value; nothing to chart._"
    top = max(y for pts in series.values() for n, y in pts if n in shared)
    lines = ["```mermaid", "xychart-beta", f'    title "{title}"',
             f'    x-axis "n_outer" [{", ".join(map(str, shared))}]',
             f'    y-axis "{y_label}" 0 --> {_format_number(_axis_top(top))}']
    for label, points in series.items():
        values = dict(points)
        safe = label.replace('"', "'")
        lines.append(f'    line "{safe}" [{", ".join(_format_number(values[n]) for n in shared)}]')
    lines.append("```")
    caption = "Lines, in order: " + "; ".join(f"{i}. {label}" for i, label in
                                               enumerate(series, 1))
    dropped = sorted({n for pts in series.values() for n, _ in pts} - set(shared))
    if dropped:
        caption += f" (n_outer {', '.join(map(str, dropped))} not measured for every line)"
    return "\n".join(lines) + "\n\n" + caption + "."


def write_png(series: dict[str, list[tuple[int, float]]], path: Path,
              title: str = "v0 memory against n_outer") -> Path | None:
    """The same chart as a PNG, when matplotlib is importable; None otherwise."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, axes = plt.subplots(figsize=(6, 4))
    for label, points in series.items():
        if points:
            xs, ys = zip(*sorted(points))
            axes.plot(xs, ys, marker="o", label=label)
    axes.set(title=title, xlabel="n_outer", ylabel="MB (output + temp)")
    axes.legend()
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    figure.savefig(tmp, dpi=100)
    plt.close(figure)
    os.replace(tmp, path)
    return path


def evidence_series(evidence: dict) -> dict[str, list[tuple[int, float]]]:
    """label -> [(n_outer, MB)] of v0 for each release in the evidence."""
    out = {}
    for side in ("old", "new"):
        release = evidence["releases"][side]
        if release["series"]:
            out[f"jax {release['jax']}"] = [(n, b / MB) for n, b in release["series"]]
    return out


def _details(summary: str, body: str) -> str:
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def _code(lines: Sequence[str], language: str = "text") -> str:
    return f"```{language}\n" + "\n".join(lines) + "\n```"


def render_evidence_markdown(attribution: dict, evidence: dict,
                             series: dict[str, list[tuple[int, float]]] | None = None) -> str:
    """The evidence as markdown; ``series`` (label -> [(n_outer, MB)]) replaces the chart's
    default lines (the two releases of the evidence) with, e.g., every release probed."""
    old, new = evidence["releases"]["old"], evidence["releases"]["new"]
    options = evidence["options"]
    o, n = f"jax {old['jax'] or '?'}", f"jax {new['jax'] or '?'}"
    out = [f"### Where and what: {o} → {n}", ""]
    verdicts = {
        "identical": "the lowered v0 modules are **identical** once source locations, names "
                     "and version-only attributes are removed: the change is in the **XLA "
                     "compiler inside jaxlib**.",
        "changed": "the lowered v0 modules **differ** beyond names and locations: JAX's "
                   "**lowering changed** (the diff is below; XLA may have changed too).",
        "unknown": f"unknown ({attribution.get('reason') or 'no lowered modules'}).",
    }
    out += [(f"**Where:** {verdicts[attribution['lowering']]} "
             f"Culprit: `{attribution['culprit']}`."), ""]
    commits, links = attribution["commits"], attribution["links"]
    shape = "[" + ",".join(map(str, [options["n_inner"]] + [options["n_res"]] * 3)) + "]"
    rows = [
        ["jaxlib", old["jaxlib"] or "n/a", new["jaxlib"] or "n/a"],
        ["JAX commit of the wheel", _commit_cell(commits["old"]), _commit_cell(commits["new"])],
        ["XLA pin", *(f"[third_party/xla]({links[f'xla_pin_{s}']})" if links[f"xla_pin_{s}"]
                      else "n/a" for s in ("old", "new"))],
        [f"v0 plan at n_outer {options['n_outer']} (output + temp)",
         _mb(old["plan_bytes"]), _mb(new["plan_bytes"])],
        ["XLA's total bytes used", _bytes(old["dump_total_bytes"]),
         _bytes(new["dump_total_bytes"])],
        ["largest allocation", *(f"{_bytes(r['largest_allocation']['size_bytes'])}, "
                                 f"{r['largest_allocation']['kind']}"
                                 if r["largest_allocation"] else "n/a" for r in (old, new))],
        [f"stacked {shape} buffers (slots)", *(
            f"{r['stacked']['slots']} ({_bytes(r['stacked']['bytes'])}, "
            f"{r['stacked']['values']} values)" if r["stacked"] else "n/a" for r in (old, new))],
    ]
    out += [tabulate(rows, headers=["", o, n], tablefmt="github", disable_numparse=True), ""]
    link_line = []
    if links["jax_compare"]:
        link_line.append(f"JAX changes: [{o}…{n}]({links['jax_compare']})")
    if links["xla_compare"]:
        link_line.append(f"XLA changes: [compare]({links['xla_compare']})")
    elif attribution.get("xla_note"):
        link_line.append(attribution["xla_note"])
    if link_line:
        out += [" · ".join(link_line) + ".", ""]
    for side, release in (("old", old), ("new", new)):
        if release["error"]:
            out += [f"_{side} release: {release['error']}_", ""]
    if attribution["lowering"] == "changed" and attribution["diff"]:
        more = " (trimmed)" if attribution["diff_truncated"] else ""
        out += [_details(f"Lowering diff, normalised: +{attribution['added']} "
                         f"−{attribution['removed']} lines{more}",
                         _code(attribution["diff"], "diff")), ""]
    if old["schedule"] or new["schedule"]:
        out += [(f"**What:** the scheduled entry computation (XLA's *after_optimizations* "
                 f"HLO) at n_outer {options['n_outer']}: where stacked {shape} buffers are made "
                 f"relative to the while loops."), ""]
        body = []
        for label, release in ((o, old), (n, new)):
            body += [f"{label}:", *release["schedule"], ""]
        out += [_code(body[:-1]), ""]
    raw = []
    for label, release in ((o, old), (n, new)):
        for key, lines in release["raw"].items():
            if lines:
                raw += [f"**{label}, {key.replace('_', ' ')}**", "", _code(lines), ""]
    if raw:
        out += [_details("Raw lines from XLA's dumps", "\n".join(raw).rstrip()), ""]
    if new["workarounds"]:
        ns = options["workaround_n_outer"]
        rows = []
        for w in new["workarounds"]:
            points = {p[0]: p[1] for p in w["points"]}
            rows.append([w["name"], *(_mb(points.get(k)).replace(" MB", "") for k in ns),
                         w["verdict"] + (" ✅" if w["verdict"] == "constant" else "")])
        out += [(f"**What helps under {n}** (memory_analysis output + temp, MB; "
                 f"n_inner {options['n_inner']}, n_res {options['n_res']}):"), "",
                tabulate(rows, headers=["way around", *(f"n_outer={k}" for k in ns), "memory"],
                         tablefmt="github", disable_numparse=True), ""]
        restoring = evidence.get("restores_constant") or []
        out += [("Restore constant memory: " + ", ".join(f"`{r}`" for r in restoring) + "."
                 if restoring else "None of these restores constant memory."), ""]
    series = series or evidence_series(evidence)
    if series:
        out += ["**The picture:**", "", chart_markdown(series), ""]
    return "\n".join(out).rstrip() + "\n"
