"""One release's side of the evidence: XLA's dump files read (the buffer assignment, the
memory-usage report) and reduced, from its ``repro.dumps`` document (``case_reading``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jaxbisect.evidence.common import is_stacked, split_top_level
from jaxbisect.evidence.schedule import INSTRUCTION, parse_entry_computation, schedule_summary

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


def stacked_buffers_live(parsed: BufferAssignment, n_inner: int,
                         array_shape: Sequence[int]) -> dict:
    """The stacked ``[n_inner, *shape]`` buffers XLA planned for: ``slots``, the distinct
    places (allocation, offset) that hold one, their ``bytes``, the ``values`` and the
    ``shape`` (e.g. "[100,32,32,32]"). XLA's heap simulator gives values whose live ranges do
    not overlap the same place, so ``slots`` is how many stacked buffers the plan holds at
    once (3 per 3 outer iterations when they grow, 2 when they do not)."""
    places: dict[tuple[int, int], int] = {}
    values = 0
    for allocation in parsed.allocations:
        for value in allocation.values:
            if is_stacked(value.shape, n_inner, array_shape):
                values += 1
                key = (allocation.index, value.offset)
                places[key] = max(places.get(key, 0), value.size_bytes)
    shape = "[" + ",".join(map(str, (n_inner, *array_shape))) + "]"
    return {"slots": len(places), "bytes": sum(places.values()), "values": values,
            "shape": shape}


# XLA prints a region's rows, and the shapes in each, in an order that changes from run to run,
# with a running total in front that follows that order: the rows are shown without the total,
# their shapes sorted, by offset, so that a rerun that gathers again writes the same text.
STEADY_ROWS_HEADER = "size; offset; used_by_n_values; shapes_list (rows by offset)"


def _steady_row(line: str) -> str:
    cells = [cell.strip() for cell in line.split(";", 4)]
    shapes = sorted(part.strip() for part in split_top_level(cells[4]) if part.strip())
    return f"{cells[1]}; {cells[2]}; {cells[3]}; {', '.join(shapes)}"


def _offset(row: str) -> int:
    offset = row.split(";")[1].strip()
    return int(offset) if offset.isdigit() else -1


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
        rows = [line for line in lines if line.count(";") >= 4 and "; allocation " not in line
                and not line.strip().startswith("cumulative_size") and stacked_line(line)]
        if rows:
            head += [STEADY_ROWS_HEADER, *sorted(map(_steady_row, rows),
                                                 key=lambda r: (_offset(r), r))]
        out["memory_usage_report"] = head[:limit]
    assignment = files.get("buffer_assignment", "")
    if assignment:
        parsed = parse_buffer_assignment(assignment)
        largest = parsed.largest()
        lines = []
        if largest is not None:
            lines.append(f"allocation {largest.index}: size {largest.size_bytes}, {largest.kind}:")
            # By place, then name: XLA lists an allocation's values in no fixed order.
            lines += [f" value: <{v.id} {v.name}> (size={v.size_bytes},offset={v.offset}): "
                      f"{v.shape}" for v in sorted(largest.values,
                                                   key=lambda v: (v.offset, v.name, v.id))
                      if is_stacked(v.shape, n_inner, array_shape)]
        out["buffer_assignment"] = lines[:limit]
    hlo = files.get("after_optimizations", "")
    if hlo:
        kept = [i for i in parse_entry_computation(hlo)
                if i.opcode == "while" or is_stacked(i.shape, n_inner, array_shape)]
        wanted = {i.name for i in kept}
        out["after_optimizations"] = [line.strip() for line in hlo.splitlines()
                                      if (m := INSTRUCTION.match(line)) and m.group(2) in wanted
                                      ][:limit]
    return out


# -- any case: the plan's bytes and the buffers at its peak ---------------------------------

_LAYOUT = re.compile(r"\{[^{}]*\}")


def bare_shape(shape: str) -> str:
    """``f32[100,32,32,32]{3,2,1,0}`` -> ``f32[100,32,32,32]`` (the layout set aside)."""
    return _LAYOUT.sub("", shape).strip()


def _by_shape(values: Iterable[BufferValue]) -> dict[str, list[int]]:
    """The sizes of ``values`` by their shape, the layout set aside."""
    sizes: dict[str, list[int]] = {}
    for value in values:
        sizes.setdefault(bare_shape(value.shape), []).append(value.size_bytes)
    return sizes


def at_peak(assignment: BufferAssignment) -> list[dict]:
    """The buffers of the largest allocation (a temp allocation is sized to the plan's peak),
    one per place (offset) in it, each by the shape of the largest value XLA put there:
    ``[{"shape", "places", "bytes"}]``, most bytes first. Values whose live ranges do not
    overlap share a place, so the places are what is held at once."""
    largest = assignment.largest()
    places: dict[int, BufferValue] = {}
    for value in largest.values if largest else ():
        if value.offset not in places or value.size_bytes > places[value.offset].size_bytes:
            places[value.offset] = value
    return sorted(({"shape": shape, "places": len(sizes), "bytes": sum(sizes)}
                   for shape, sizes in _by_shape(places.values()).items()),
                  key=lambda e: (-e["bytes"], e["shape"]))


def largest_values(allocation: BufferAllocation, limit: int = 12) -> list[dict]:
    """An allocation's values by shape: ``[{"shape", "size_bytes", "values"}]``, largest
    first (XLA lists them in no fixed order)."""
    return sorted(({"shape": shape, "size_bytes": max(sizes), "values": len(sizes)}
                   for shape, sizes in _by_shape(allocation.values).items()),
                  key=lambda e: (-e["size_bytes"], e["shape"]))[:limit]


def new_at_peak(old: list[dict], new: list[dict]) -> list[dict]:
    """The shapes held at the peak in more places under the new release than the old (0 for
    one the old plan does not hold there), most bytes added first."""
    before = {e["shape"]: e for e in old}
    out = []
    for entry in new:
        was = before.get(entry["shape"], {"places": 0, "bytes": 0})
        if entry["places"] > was["places"]:
            out.append({"shape": entry["shape"], "old_places": was["places"],
                        "new_places": entry["places"],
                        "bytes_added": entry["bytes"] - was["bytes"]})
    return sorted(out, key=lambda e: (-e["bytes_added"], e["shape"]))


def case_reading(document: dict | None, followed: Sequence[int] | None,
                 error: str | None = None) -> dict:
    """One release's side of a case's evidence, from its ``repro.dumps --case`` document:
    the plan's bytes (memory_analysis()), XLA's total, the largest allocation with its
    values, the buffers at the peak; with ``followed`` (the dims of the buffer to follow),
    how many of it the plan holds, where the schedule makes them, and the raw lines."""
    out: dict = {"jax": None, "jaxlib": None, "error": error, "plan_bytes": None,
                 "dump_total_bytes": None, "largest_allocation": None, "at_peak": [],
                 "stacked": None, "schedule": [], "raw": {}}
    if document is None:
        return out
    out.update(jax=document.get("jax"), jaxlib=document.get("jaxlib"))
    if document.get("status") != "ok":
        out["error"] = document.get("error")
        return out
    out["plan_bytes"] = (document.get("compiled") or {}).get("total_bytes")
    dump = document.get("dump") or {}
    files = dump.get("files") or {}
    if dump.get("status") != "ok":
        out["error"] = f"no dump: {dump.get('error')}"
    if files.get("buffer_assignment"):
        assignment = parse_buffer_assignment(files["buffer_assignment"])
        largest = assignment.largest()
        out["dump_total_bytes"] = assignment.total_bytes
        if largest is not None:
            out["largest_allocation"] = {"index": largest.index,
                                         "size_bytes": largest.size_bytes,
                                         "kind": largest.kind,
                                         "values": largest_values(largest)}
        out["at_peak"] = at_peak(assignment)
        if followed:
            out["stacked"] = stacked_buffers_live(assignment, followed[0], followed[1:])
    if files.get("memory_usage_report") and out["dump_total_bytes"] is None:
        out["dump_total_bytes"] = memory_report_total(files["memory_usage_report"])
    if followed:
        if files.get("after_optimizations"):
            out["schedule"] = schedule_summary(files["after_optimizations"], followed[0],
                                               followed[1:])
        out["raw"] = relevant_raw_lines(files, followed[0], followed[1:])
    return out
