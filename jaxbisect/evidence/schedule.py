"""What: the scheduled entry computation (XLA's *after_optimizations* HLO).

Where the schedule creates the stacked buffers relative to the while loops, and how many are
live when each loop starts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import takewhile

from jaxbisect.evidence.common import balanced_end, is_stacked, split_top_level


@dataclass(frozen=True)
class HloInstruction:
    position: int      # index in the entry computation's schedule
    name: str
    shape: str
    opcode: str
    operands: tuple[str, ...]
    attributes: str
    root: bool = False


INSTRUCTION = re.compile(r"^\s*(ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_COMMENT = re.compile(r"/\*.*?\*/")


def _parse_instruction(line: str, position: int) -> HloInstruction | None:
    m = INSTRUCTION.match(line)
    if not m:
        return None
    rest = m.group(3)
    end = balanced_end(rest, 0) if rest.startswith("(") else len(rest.split(" ", 1)[0])
    shape, rest = rest[:end], rest[end:].lstrip()
    op = re.match(r"([\w\-]+)\(", rest)
    if not op:
        return None
    close = balanced_end(rest, op.end() - 1)
    inside = _COMMENT.sub("", rest[op.end():close - 1])
    if "%" in inside:  # newer printers: `%name`, older typed ones: `f32[..] %name`
        operands = tuple(re.findall(r"%([\w.\-]+)", inside))
    else:
        operands = tuple(p.split()[-1] for p in split_top_level(inside) if p.strip())
    return HloInstruction(position, m.group(2), shape, op.group(1), operands,
                          rest[close:].lstrip(", "), bool(m.group(1)))


def parse_entry_computation(hlo_text: str) -> list[HloInstruction]:
    """The instructions of the ENTRY computation of a scheduled HLO module, in order."""
    lines = hlo_text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("ENTRY")), len(lines))
    instructions: list[HloInstruction] = []
    for line in takewhile(lambda line: not line.startswith("}"), lines[start + 1:]):
        if parsed := _parse_instruction(line, len(instructions)):
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
            producer = by_name.get(inst.operands[0])
            index = re.search(r"index=(\d+)", inst.attributes)
            k = int(index.group(1)) if index else None
            if producer is not None and producer.opcode == "while" and k is not None \
                    and producer.operands:
                carried = by_name.get(producer.operands[0])
                if carried is not None and carried.opcode == "tuple":
                    if k < len(carried.operands):
                        source = root.get(carried.operands[k], carried.operands[k])
            elif producer is not None and producer.opcode == "tuple" and k is not None \
                    and k < len(producer.operands):
                source = root.get(producer.operands[k], producer.operands[k])
            elif producer is not None and k is not None:
                # An element of a tuple-shaped value (a multi-output fusion): a buffer the
                # producer makes, named by its index ("fusion{1}"), made where it is.
                source = f"{producer.name}{{{k}}}"
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


def untraced_carries(loop: HloInstruction, carried: HloInstruction | None, root: dict,
                     n_inner: int, array_shape: Sequence[int]) -> int:
    """How many stacked elements of the loop's state come in from a value the liveness does
    not follow (not a ``tuple`` of arrays it traced): its count of them would read 0."""
    elements = split_top_level(loop.shape[1:-1]) if loop.shape.startswith("(") else []
    stacked = [k for k, e in enumerate(elements) if is_stacked(e.strip(), n_inner, array_shape)]
    if carried is None or carried.opcode != "tuple":
        return len(stacked)
    return sum(1 for k in stacked
               if k >= len(carried.operands) or carried.operands[k] not in root)


def stacked_words(shape: str, peak: int, loops: int, untraced: int) -> str:
    """What the header counts: buffers the entry computation makes (outside the loops), at the
    loops whose stacked state it follows; one a loop makes inside its body is not among them,
    so a count never contradicts a peak placed inside a loop, and a loop it does not follow is
    never counted 0."""
    inside = "those a loop makes inside its body are not counted here"
    if loops and untraced == loops:
        return (f"stacked {shape} buffers made outside the loops and live at a loop's start: "
                f"not counted (no loop's stacked state could be followed back to a buffer "
                f"of the entry computation; {inside})")
    followed = (f" at the {loops - untraced} loop{'' if loops - untraced == 1 else 's'} it "
                f"follows (the other {untraced} not counted)" if untraced else "")
    return (f"stacked {shape} buffers made outside the loops and live at a loop's start: at "
            f"most {peak}{followed} ({inside})")


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

    def made_at(buffer: str) -> int | None:  # "fusion{1}": made by the fusion
        made = by_name.get(buffer) or by_name.get(buffer.rsplit("{", 1)[0])
        return made.position if made is not None else None

    made_by: dict[str, list[str]] = {}  # a tuple-shaped producer's stacked buffers
    for buffer in dict.fromkeys(root.values()):
        if buffer not in by_name and made_at(buffer) is not None:
            made_by.setdefault(buffer.rsplit("{", 1)[0], []).append(buffer)
    lines = []
    peak, untraced = 0, 0
    for inst in instructions:
        if inst.opcode == "while":
            number = loops.index(inst) + 1
            carried = by_name.get(inst.operands[0]) if inst.operands else None
            carries = [root.get(o, o) for o in (carried.operands if carried else ())
                       if o in root]
            live = [b for b, end in last_use.items()
                    if made_at(b) is not None and made_at(b) < inst.position <= end]
            trips = _trip_count(inst.attributes)
            unfollowed = untraced_carries(inst, carried, root, n_inner, array_shape)
            if not unfollowed:
                peak = max(peak, len(live))
            untraced += bool(unfollowed)
            lines.append(f"{inst.position:4d}  {inst.name}: loop {number} of {len(loops)}"
                         + (f" ({trips} trips)" if trips else "")
                         + (f", carries {', '.join(carries)}" if carries else "")
                         + (f"; stacked buffers live: {len(live)}" if not unfollowed else
                            f"; stacked buffers live: not traced ({unfollowed} carried in from "
                            f"a value this listing does not follow)"))
        elif inst.name in made_by:
            lines.append(f"{inst.position:4d}  {inst.name} = {inst.opcode}"
                         f"({', '.join(inst.operands)}): creates {len(made_by[inst.name])} "
                         f"stacked buffers (one value, a tuple of them)")
        elif inst.name in root and root[inst.name] == inst.name \
                and inst.opcode != "get-tuple-element":
            what = {"copy": "copies", "dynamic-update-slice": "updates",
                    "parameter": "receives"}.get(inst.opcode, "creates")
            lines.append(f"{inst.position:4d}  {inst.name} = {inst.opcode}"
                         f"({', '.join(inst.operands)}): {what} a stacked buffer")
    if not loops:
        lines.append("no while loops in the entry computation")
    header = (f"entry computation: {len(instructions)} instructions, {len(loops)} while loops; "
              + stacked_words(shape, peak, len(loops), untraced))
    if len(lines) > max_lines:
        lines = lines[:max_lines - 1] + [f"… {len(lines) - max_lines + 1} more lines"]
    return [header, *lines]

