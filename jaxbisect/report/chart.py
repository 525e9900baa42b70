"""The picture: a metric's series over a parameter in each release, as a mermaid chart GitHub
renders and a PNG (the defaults name the scan case's: v0's memory against n_outer)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

from jaxbisect.files import cache_dir


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
                   y_label: str = "MiB (output + temp)", x_label: str = "n_outer") -> str:
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
             f'    x-axis "{x_label}" [{", ".join(map(str, shared))}]',
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
        caption += f" ({x_label} {', '.join(map(str, dropped))} not measured for every line)"
    return "\n".join(lines) + "\n\n" + caption + "."


def write_png(series: dict[str, list[tuple[int, float]]], path: Path,
              title: str = "v0 memory against n_outer", x_label: str = "n_outer",
              y_label: str = "MiB (output + temp)") -> Path | None:
    """The same chart as a PNG (matplotlib is a default dependency). Where matplotlib cannot
    be imported, an earlier run's chart at ``path`` is kept and its path returned, so that the
    report still shows it: None only where there is no chart at all.

    A chart drawn before from the same figures, whose picture is still at ``path``, is not
    drawn again (importing matplotlib alone takes seconds: a stored rerun would spend most of
    its time there)."""
    path = Path(path)
    drawn = hashlib.sha256(json.dumps([sorted(series.items()), title, x_label, y_label])
                           .encode()).hexdigest()[:16]
    memo = cache_dir() / "charts" / drawn  # the digest of the picture these figures drew

    def picture() -> str:
        return hashlib.sha256(path.read_bytes()).hexdigest()

    if path.is_file() and memo.is_file() and memo.read_text() == picture():
        return path
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return path if path.is_file() else None
    figure, axes = plt.subplots(figsize=(6, 4))
    for label, points in series.items():
        if points:
            xs, ys = zip(*sorted(points))
            axes.plot(xs, ys, marker="o", label=label)
    axes.set(title=title, xlabel=x_label, ylabel=y_label)
    axes.legend()
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    figure.savefig(tmp, dpi=100)
    plt.close(figure)
    if path.exists() and path.read_bytes() == tmp.read_bytes():
        tmp.unlink()  # the same picture: leave the file (and its timestamp) alone
    else:
        os.replace(tmp, path)
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(picture())
    return path
