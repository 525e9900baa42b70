"""What: XLA's memory-usage report and buffer assignment, reduced to the stacked buffers.

How many stacked ``[n_inner, *shape]`` buffers XLA's plan holds at once, read from the dump
files ``--xla_dump_to`` writes (``*-memory-usage-report.txt``, ``*-buffer-assignment.txt``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .common import human_bytes, is_stacked, split_top_level

_TOTAL = re.compile(r"^Total bytes used:\s*(\d+)")
_REPORT_TOTAL = re.compile(r"^Total bytes(?: used)?:\s*(\d+)")
_ALLOCATION = re.compile(r"^allocation (\d+): size ([^,]+), (.*?):?\s*$")
_VALUE = re.compile(r"^\s*value: <(\d+) (.+?) @\d+> \(size=(\d+),offset=(\d+)\): (.+?)\s*$")
_MULTIPLIED = re.compile(r"^(\d+)\s*[×x]\s*(\S.*)$")


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
    for part in split_top_level(text):
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

