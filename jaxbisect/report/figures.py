"""A release's figure and the one way every report writes it: sizes in MiB (2^20 bytes),
times in ms or s, an output by its first values and digest."""

from __future__ import annotations

import statistics

from jaxbisect.search.error_signature import core
from repro import units
from repro.units import MIB  # noqa: F401  (the reports' scale, named once in repro.units)


def mib(nbytes: float | None, unit: bool = True) -> str:
    """A size in MiB (``repro.units``' form; ``unit``: with " MiB"); "–" for none."""
    if nbytes is None:
        return "–"
    return units.mib(nbytes) if unit else units.mib_number(nbytes)


def seen(question, placed) -> tuple:
    """The figures a row shows: a noisy function case's one figure a run (its low quantile,
    what the classifier compared), every sample otherwise."""
    if question.noisy and question.case is not None and placed.values:
        return placed.values
    return placed.samples


def figure(metric: str, samples: tuple) -> dict:
    """A release's figure: median, spread and count of a scalar metric; the value of the
    others (an error line, an output digest)."""
    scalars = [float(s) for s in samples
               if isinstance(s, (int, float)) and not isinstance(s, bool)]
    if samples and len(scalars) == len(samples):
        return {"median": statistics.median(scalars), "min": min(scalars), "max": max(scalars),
                "n": len(scalars)}
    if not samples:
        return {"n": 0}
    value = samples[0]
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], str):
        return {"value": value[0], "rate": value[1], "n": len(samples)}  # a shape
    if isinstance(value, dict) and not outputs_agree(samples):  # a nondeterministic output
        return {"nondeterministic": True, "value": "nondeterministic: its runs' outputs differ",
                "n": len(samples), "runs": [s.get("values") for s in samples]}
    if isinstance(value, dict):  # an output digest
        leaves = len(value.get("shapes") or [])
        return {"sha256": value.get("sha256"), "shapes": value.get("shapes"), "n": len(samples),
                "values": (value.get("values") or [])[:max(0, len(value.get("values") or [])
                                                           - 2 * leaves)]}
    return {"value": value, "n": len(samples)}


def outputs_agree(samples: tuple) -> bool:
    """Output digests of one release's runs are the same bytes. Runs of one program in one
    environment give the same bits unless it reads what it never wrote (or races): runs
    that differ at all are nondeterministic, even where they agree within the tolerance the
    releases are compared by (two values of uninitialised memory ~1e-310 do), and no one of
    them is shown as the release's value."""
    return len({s.get("sha256") if isinstance(s, dict) else repr(s) for s in samples}) <= 1


def nondeterministic(question, placed) -> bool:
    """``placed``'s runs gave outputs that differ (the classifier's NONDETERMINISTIC)."""
    return question.metric == "output" and len(placed.samples) > 1 and \
        not outputs_agree(placed.samples)


def placed_fields(question, placed) -> dict:
    """What a document's row says of a placed candidate, a release or a commit alike: its
    label (one the search never placed, an end of a range without an answer, is measured or
    without a figure, never a skip), confidence, third behaviour and reason, its figure, what
    the classifier saw and a noisy metric's rounds."""
    from jaxbisect.search.placing import Shown

    p, odd = placed.placement, nondeterministic(question, placed)
    return {"label": p.label.value if p else (Shown.MEASURED if placed.values
                                               else Shown.NO_FIGURE),
            "confidence": p.confidence if p else None,
            "third": bool(p and p.third),
            "reason": (p.reason if p else None) if not odd else "; ".join(
                filter(None, [p and p.reason, "its runs' outputs differ: nondeterministic"])),
            "figure": figure(question.metric, seen(question, placed)), "cached": placed.cached,
            **({"nondeterministic": True} if odd else {}),
            "classified": [v if isinstance(v, (int, float, str)) else None
                           for v in placed.values],
            "rounds": [list(r) for r in placed.rounds]}


def shown(metric: str, unit: str, number: float | None) -> str:
    """A number in its unit's words."""
    if number is None:
        return "–"
    if unit == "bytes":
        return mib(number)
    if unit == "s":
        return f"{number * 1e3:.3f} ms" if number < 1 else f"{number:.3f} s"
    if abs(number) >= 1e5:  # a command's large figure (bytes, counts): digits, not 6.567e+07
        return f"{number:,.0f}"
    return f"{number:.6g}"


def shown_bare(unit: str, number) -> str:
    """A figure in a column whose header carries the unit (``column_unit``)."""
    if number is None:
        return "–"
    return mib(number, unit=False) if unit == "bytes" else shown("", unit, number)


def column_unit(unit: str) -> str:
    """A column header's unit, for the figures ``shown_bare`` writes."""
    return units.column(unit)


def figure_text(metric: str, unit: str, fig: dict) -> str:
    if "median" in fig:
        return shown(metric, unit, fig["median"])
    if "sha256" in fig:
        first = ", ".join(str(v) for v in (fig.get("values") or [])[:3])
        return f"[{first}{', …' if len(fig.get('values') or []) > 3 else ''}] (sha256 " \
               f"{fig['sha256'][:8]})"
    if metric == "error" and isinstance(fig.get("value"), str):
        return core(fig["value"])  # the whole message as a maintainer reads it, its figures kept
    return str(fig.get("value", "–"))


def figure_cell(metric: str, unit: str, value) -> str:
    """One measured value (a number, a shape's [word, rate], an error line) as a figure."""
    return figure_text(metric, unit, figure(metric, () if value is None else (value,)))


def peak_under(series: dict, unit: str, figures: list) -> str | None:
    """A run's peak series that stayed under the tables' 0.01 MiB: not a figure of the program
    (a process's peak moves by pages and rises only past what the process already holds, so
    it does not see an allocation that small), said as what the peak did; None for any other
    series."""
    if series.get("metric") != "peak_memory" or unit != "bytes":
        return None
    if max(figures) < MIB / 200:
        return ("not seen (a run's peak did not rise)" if not max(figures) else
                "not seen (a run's peak rose less than 0.01 MiB)")
    at = sorted(series.get("figures") or {}, key=_as_number)
    flat = [k for k in at if series["figures"][k] == 0]
    if not flat:
        return None
    over = series.get("over") or ""
    rose = [f for f in figures if f]
    said = " … ".join(dict.fromkeys(shown_bare(unit, f) for f in (min(rose), max(rose))))
    return (f"not seen at {over} {', '.join(flat)} (a run's peak did not rise); {said} at "
            f"{over} {', '.join(k for k in at if series['figures'][k])}")


def _as_number(key: str):
    try:
        return (0, float(key))
    except ValueError:
        return (1, key)
