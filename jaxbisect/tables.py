"""The one table every report shares: a row per measured release (GitHub markdown)."""

from __future__ import annotations

from tabulate import tabulate

from .catalogue import backend_words
from .harness import HarnessOptions
from .measurements import Measurement

MB = 1024**2


def _case_mb(document: dict, variant: str, n_outer: int) -> str:
    for case in document["cases"]:
        if case["variant"] == variant and case["n_outer"] == n_outer:
            if case["status"] == "left out":
                return "–"
            return f"{case['total_bytes'] / MB:.2f}" if case["status"] == "ok" else "n/a"
    return "–"


def _across(document: dict, variant: str, n_outers: list[int]) -> str:
    """A variant that does not depend on n_outer in one cell: its MB, or the range it spans."""
    values = [_case_mb(document, variant, n) for n in n_outers]
    measured = [v for v in values if v not in ("n/a", "–")]
    if not measured:
        return values[0] if values else "–"
    low, high = min(measured, key=float), max(measured, key=float)
    gaps = ""
    if "n/a" in values:
        gaps = " (some n/a)"
    elif len(measured) < len(values):  # left out on purpose (v2 for a GPU target)
        at = [str(n) for n, v in zip(n_outers, values) if v not in ("n/a", "–")]
        gaps = f" (n_outer {', '.join(at)} only)"
    return (low if low == high else f"{low}–{high}") + gaps


def _mode_cell(m: Measurement, asked: HarnessOptions | None) -> str:
    """The row's mode, with the sizes it was measured at where they are not the asked ones
    (a real run's fallback at a smaller n_res, under a heading that gives the asked ones)."""
    mode = m.document["mode"] if m.document else m.options.mode
    if asked is None:
        return mode
    sizes = [f"{name} {getattr(m.options, name)}" for name in ("n_res", "n_inner", "dtype")
             if getattr(m.options, name) != getattr(asked, name)]
    return ", ".join([mode, *sizes])


def results_rows(measurements: list[Measurement], *, extra: dict[str, list[str]] | None = None,
                 asked: HarnessOptions | None = None) -> tuple[list[str], list[list[str]]]:
    """Release, jaxlib, backend, device, mode, v0 MB at each n_outer, v1/v2 MB, verdict.

    v1 and v2 get one cell each for all n_outer: their MB, or the range it spans. Releases whose
    harness gave no document show why in the verdict column. ``extra`` adds columns
    (name -> one cell per measurement), e.g. the bisection's "probe #" column. Backend and
    device are left out when every row says "cpu | cpu": they would say nothing. ``asked``:
    the sizes the table's heading gives; a row measured at others says so in its mode cell.
    """
    n_outers = sorted({n for m in measurements if m.document
                       for n in m.document["params"]["n_outer"]})
    headers = ["jax", "jaxlib", "backend", "device", "mode"]
    headers += [f"v0 n_outer={n} (MB)" for n in n_outers]
    headers += ["v1, any n_outer (MB)", "v2, any n_outer (MB)", "verdict"]
    rows = []
    for m in measurements:
        d = m.document
        if d is None:
            rows.append([m.release, m.installed.get("jaxlib", "?"),
                         backend_words(m.backend, m.options.target), "",
                         _mode_cell(m, asked)]
                        + [""] * (len(n_outers) + 2) + [f"skipped: {m.error}"])
            continue
        verdict = d["verdict"]
        shown = verdict["status"]
        if verdict["growth_per_outer"] is not None:
            shown += f" ({verdict['growth_per_outer']:+.2f}/outer)"
        elif verdict.get("reason"):
            shown += f": {verdict['reason']}"
        backend, device = d["backend"], d["device"]
        if d.get("deviceless"):  # XLA's plan for that GPU, never a run on one
            backend = backend_words(m.backend, m.options.target)
        rows.append([d["jax"], d["jaxlib"], backend, device, _mode_cell(m, asked)]
                    + [_case_mb(d, "v0", n) for n in n_outers]
                    + [_across(d, "v1", n_outers), _across(d, "v2", n_outers), shown])
    for name, cells in (extra or {}).items():
        headers.append(name)
        for row, cell in zip(rows, cells):
            row.append(cell)
    if rows and all(row[2] == "cpu" and row[3] in ("cpu", "") for row in rows):
        headers = headers[:2] + headers[4:]
        rows = [row[:2] + row[4:] for row in rows]
    return headers, rows


def results_table(measurements: list[Measurement], *, extra: dict[str, list[str]] | None = None
                  ) -> str:
    headers, rows = results_rows(measurements, extra=extra)
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


# Which columns a narrow table gives up first: what the verdict does not rest on.
# The note stays while it can: it says why a row has gaps (a search probe, a real run).
NARROWING = ("v1, any n_outer (MB)", "v2, any n_outer (MB)", "device", "backend", "mode",
             "note", "jaxlib")


