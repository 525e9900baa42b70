"""One release's side of the evidence, reduced from its ``repro.dumps`` document."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict

from ..harness import DumpOptions
from .common import is_stacked, split_top_level
from .dumps import parse_buffer_assignment, parse_memory_usage_report, stacked_buffers_live
from .schedule import INSTRUCTION, parse_entry_computation, schedule_summary

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



def release_evidence(document: dict | None, options: DumpOptions,
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

