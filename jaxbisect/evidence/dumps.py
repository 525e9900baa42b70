"""What: XLA's buffer assignment, reduced to the stacked buffers; the memory report's total.

How many stacked ``[n_inner, *shape]`` buffers XLA's plan holds at once, read from the dump
files ``--xla_dump_to`` writes (``*-memory-usage-report.txt``, ``*-buffer-assignment.txt``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .common import is_stacked

_TOTAL = re.compile(r"^Total bytes used:\s*(\d+)")
_REPORT_TOTAL = re.compile(r"^Total bytes(?: used)?:\s*(\d+)")
_ALLOCATION = re.compile(r"^allocation (\d+): size ([^,]+), (.*?):?\s*$")
_VALUE = re.compile(r"^\s*value: <(\d+) (.+?) @\d+> \(size=(\d+),offset=(\d+)\): (.+?)\s*$")


def memory_report_total(text: str) -> int | None:
    """XLA's ``*-memory-usage-report.txt``: its total bytes (one total per memory space,
    summed); None where it gives none. Older jaxlibs (0.5 … 0.7) print ``Total bytes used:``,
    newer ones (0.10.2) a ``Total bytes:`` under each ``Memory Space`` header."""
    totals = [int(m.group(1)) for line in text.splitlines()
              if (m := _REPORT_TOTAL.match(line.strip()))]
    return sum(totals) if totals else None


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


def stacked_buffers_live(parsed: BufferAssignment, n_inner: int,
                         array_shape: Sequence[int]) -> StackedBuffers:
    places: dict[tuple[int, int], int] = {}
    values = 0
    for allocation in parsed.allocations:
        for value in allocation.values:
            if is_stacked(value.shape, n_inner, array_shape):
                values += 1
                key = (allocation.index, value.offset)
                places[key] = max(places.get(key, 0), value.size_bytes)
    shape = "[" + ",".join(map(str, (n_inner, *array_shape))) + "]"
    return StackedBuffers(len(places), sum(places.values()), values, shape)
