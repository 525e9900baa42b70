"""The one table every report shares: a row per measured release (GitHub markdown)."""

from __future__ import annotations

from tabulate import tabulate

from .probe import Measurement

MB = 1024**2


def _case_mb(document: dict, variant: str, n_outer: int) -> str:
    for case in document["cases"]:
        if case["variant"] == variant and case["n_outer"] == n_outer:
            return f"{case['total_bytes'] / MB:.2f}" if case["status"] == "ok" else "n/a"
    return "–"


def results_table(measurements: list[Measurement], *, extra: dict[str, list[str]] | None = None
                  ) -> str:
    """Release, jaxlib, backend, device, mode, v0 MB at each n_outer, v1/v2 MB, verdict.

    v1 and v2 are shown at the largest n_outer (they do not depend on it). Releases whose
    harness gave no document show why in the verdict column. ``extra`` adds columns
    (name -> one cell per measurement), e.g. the bisection's "probed as" column.
    """
    n_outers = sorted({n for m in measurements if m.document
                       for n in m.document["params"]["n_outer"]})
    top = n_outers[-1] if n_outers else None
    headers = ["jax", "jaxlib", "backend", "device", "mode"]
    headers += [f"v0 n_outer={n} (MB)" for n in n_outers]
    headers += [f"v1 n_outer={top} (MB)", f"v2 n_outer={top} (MB)", "verdict"]
    rows = []
    for m in measurements:
        d = m.document
        if d is None:
            rows.append([m.release, m.installed.get("jaxlib", "?"), m.backend, "", m.options.mode]
                        + [""] * (len(n_outers) + 2) + [f"skipped: {m.error}"])
            continue
        verdict = d["verdict"]
        shown = verdict["status"]
        if verdict["growth_per_outer"] is not None:
            shown += f" ({verdict['growth_per_outer']:+.2f}/outer)"
        elif verdict.get("reason"):
            shown += f": {verdict['reason']}"
        rows.append([d["jax"], d["jaxlib"], d["backend"], d["device"], d["mode"]]
                    + [_case_mb(d, "v0", n) for n in n_outers]
                    + [_case_mb(d, "v1", top), _case_mb(d, "v2", top), shown])
    for name, cells in (extra or {}).items():
        headers.append(name)
        for row, cell in zip(rows, cells):
            row.append(cell)
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
