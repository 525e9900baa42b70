"""The tables below the first screen: every release probed (a figure or a shape a row), the
releases inside, the chart of the same figures, what was skipped, the packages."""

from __future__ import annotations

import contextlib
import itertools
import re

from packaging.version import Version

from jaxbisect.report.chart import chart_markdown
from jaxbisect.report.figures import MIB, column_unit, peak_under, shown, shown_bare
from jaxbisect.report.markdown.words import (
    EMPTY_CELLS,
    END_WORDS,
    PER_OUTER,
    SHAPE_LEGEND,
    by_release,
    clause_cut,
    confidence_words,
    details,
    failure_of,
    filled_columns,
    label,
    measured_not_installable,
    pair_or_ends,
    pair_words,
    params_text,
    percent_sure,
    plainly,
    probe_at,
    runs_of,
    said,
    shape_words,
    table,
    unit,
    value_named,
)
from jaxbisect.search.classify import DEFAULT_NOISY_THRESHOLD, Label
from jaxbisect.search.metric_search import calibration_text
from jaxbisect.search.placing import AgainstEnds, Shown
from jaxbisect.search.rounds import Status

LOOK = re.compile(r" \(look \d+\)")  # the sequential test's internal step: no reader's word


def row_label(doc: dict, probe: dict) -> str:
    """A probe's behaviour in its row: old, new, skip; an end's where no change was found
    (no old or new without one)."""
    placed = probe["label"] not in (Shown.MEASURED, Shown.NO_FIGURE)
    if placed and doc["status"] != Status.FOUND and probe["jax"] in doc["measured_part"]:
        return END_WORDS["first end" if probe["jax"] == doc["measured_part"][0] else "last end"]
    # the search's skip (as git bisect's 125) is said as the glossary says it
    return "cannot tell" if probe["label"] == "skip" else probe["label"]


def skip_reason(probe: dict) -> str:
    """Why a probe was skipped: its placement's reason, or its failed run's error."""
    if probe["label"] not in (Shown.MEASURED, Shown.NO_FIGURE):
        return measured_not_installable(str(probe["reason"]))
    failure = next((r for r in probe["runs"] if r["status"] != "ok"), None)
    return plainly(failure["error"]) if failure and failure["error"] else "no answer"


def compare_params(doc: dict) -> dict:
    """The case's COMPARE programs and their parameters (their labels alone in a document
    from before ``case.compare``)."""
    known = (doc.get("case") or {}).get("compare")
    if known is not None:
        return known
    labels = {k for p in doc["probes"] for k in (p.get("compare") or {})}
    return {k: {} for k in sorted(labels)}


def compared_words(doc: dict) -> dict:
    """Each COMPARE program as the rows measured it: its own parameters (those its series ran
    at that differ from the case's) and the values of the swept parameter it has figures at,
    with the ones its definition asks that gave none; the definition alone where no row holds
    it (a document from before the series kept their parameters)."""
    over = (doc.get("over") or {}).get("name")
    asked_case = (doc.get("case") or {}).get("params") or {}
    words = {}
    for c, defined in compare_params(doc).items():
        got = [s for p in doc["probes"] if (s := (p.get("compare") or {}).get(c))]
        if not got:
            words[c] = params_text(defined)
            continue
        params = {k: v for s in got for k, v in (s.get("params") or {}).items()
                  if k != over and asked_case.get(k) != v}
        params = params or {k: v for k, v in defined.items() if k != over}
        source = (doc.get("case") or {}).get("source") or ""
        text = params_text(params) + "".join(
            f", {w}" for k, v in params.items() if (w := value_named(source, k, v)))
        values = sorted({k for s in got for k, f in (s.get("figures") or {}).items()
                         if f is not None}, key=_number_key)
        wanted = defined.get(over) if over else None
        wanted = [str(v) for v in (wanted if isinstance(wanted, (list, tuple)) else
                                   doc["over"]["values"] if over else ())]
        if over and values and values != wanted:
            # a compile-only target measures a program of its own values at the first only
            # (repro/cli.py: the unrolled loop's compile for a GPU takes minutes after it)
            first = (doc.get("target") and isinstance(defined.get(over), (list, tuple))
                     and values == wanted[:1])
            text += (f"; {over} {', '.join(values)} only"
                     + (f", of {', '.join(wanted)} asked" if wanted else "")
                     + (f": on any compile-only target, a program compared beside the case "
                        f"is compiled at the first {over} it names only, a rule made for GPUs "
                        f"(compiling an unrolled loop for a GPU takes minutes from the second "
                        f"value on)" if first else ""))
        elif over and over in defined and values:  # the program's own values, all measured
            text = f"{over} {', '.join(values)}; {text}"
        words[c] = text.lstrip("; ")
    return words


def series_mode(doc: dict, series: dict, beside: dict | None = None) -> str:
    """How a row was measured: the size asked, a smaller one, or a real run's peak
    (``beside``: a COMPARE program's own parameters, said in its column's header)."""
    asked = {**doc["case"]["params"], **(beside or {})}
    smaller = ", ".join(f"{k} {v}" for k, v in (series["params"] or {}).items()
                        if asked.get(k) != v)
    mode = ("a run's peak" if series["fallback"] or series["metric"] == "peak_memory" else
            "compiled plan" if series["metric"] == "memory" else series["metric"])
    return mode + (f", {smaller}" if smaller else "")


def unmeasured(series: dict) -> bool:
    """A series its release did not measure: a compiled plan marked unavailable, with figures
    of 0 (memory reported as 0 bytes), which are no figures at all. A run's peak always
    measures: its 0 is a peak below what RSS can see (a page), a figure like any other."""
    if series.get("metric") == "peak_memory" or series.get("fallback"):
        return False
    return series.get("status") == "unavailable" and any(
        f == 0 for f in (series.get("figures") or {}).values())


def rows_params(doc: dict) -> dict:
    """The parameters every row's series was measured at, where they are one set (a run's
    peak at every release: n_res 32, not the case's 200); {} where rows differ or have none."""
    sets = [p["series"]["params"] for p in doc["probes"]
            if p.get("series") and p["series"].get("params")]
    return sets[0] if sets and all(s == sets[0] for s in sets) else {}


def series_columns(doc: dict):
    """The shape's columns: one a value of the parameter (the size asked where measured, else
    the search's), the case's COMPARE programs, the shape; and a probe's cells in them."""
    name, values, u = doc["over"]["name"], doc["over"]["values"], unit(doc)
    compare, scale = compare_params(doc), column_unit(u)
    headers = ["mode", *(f"{name}={v}{scale}" for v in values),
               *(f"{c}{scale}" for c in compare), "shape"]

    def compared(got: dict | None, beside: dict) -> str:
        figures = [f for f in (got or {}).get("figures", {}).values() if f is not None]
        if not figures:
            return "–"
        if unmeasured(got):  # 0 bytes from a release that does not measure it: no figure
            return f"not measured ({plainly(got.get('shape') or 'no figure').split(' (')[0]})"
        ends = [shown_bare(u, f) for f in (min(figures), max(figures))]
        text = ends[0] if ends[0] == ends[1] else " … ".join(ends)
        text = peak_under(got, u, figures) or text
        if got["fallback"]:
            text += f" ({series_mode(doc, got, beside)})"
        if len(got["figures"]) < len(values):
            text += f" ({name} {', '.join(sorted(got['figures'], key=_number_key))} only)"
        return text

    def cells(probe: dict) -> tuple[str, list, str]:
        series, failure = probe.get("series"), failure_of(probe)
        note = ""
        if series and series["fallback"]:
            note = f"compiled statistics empty: {series['fallback']['reason']}"
        elif failure:
            note = failure["error"] or ""
        figures = (series or {}).get("figures", {})
        return row_label(doc, probe), [
            series_mode(doc, series) if series else "–",
            *(shown_bare(u, figures.get(str(v))) for v in values),
            *(compared((probe.get("compare") or {}).get(c), beside)
              for c, beside in compare.items()),
            shape_words(series["shape"], figures) if series else "–"], note
    return headers, cells


def figure_columns(doc: dict):
    """One figure a release: its median, spread, samples and runs; and a probe's cells."""
    metric, u = doc["metric"]["name"], unit(doc)
    # "program runs": each process run (an error's figure is one message, from its runs)
    headers = [metric, "spread (min … max)",
               "figures" if doc["metric"]["kind"] == "noisy" and doc["case"] else "samples",
               "program runs"]

    def cells(probe: dict) -> tuple[str, list, str]:
        fig, failure = probe["figure"], failure_of(probe)
        row = Shown.THIRD if probe["third"] else row_label(doc, probe)
        if probe["confidence"] is not None and row in (Label.OLD, Label.NEW):
            row += f" ({percent_sure(probe['confidence'])} sure)"
        spread = (f"{shown(metric, u, fig['min'])} … {shown(metric, u, fig['max'])}"
                  if "median" in fig and fig["n"] > 1 else "")
        note = probe["reason"] if probe["reason"] and row not in (Label.OLD, Label.NEW) else ""
        if failure:
            note = failure["error"] or ""
        return row, [said(doc, fig) if fig["n"] else "–", spread, fig["n"],
                     runs_of(probe)], note
    return headers, cells


def probe_rows(doc: dict) -> tuple[list[str], list[list]]:
    """The table of probes, a row a release in release order; its note column only where a
    row has a note."""
    columns, cells = (series_columns if doc["over"] else figure_columns)(doc)
    headers, rows = ["jax", "jaxlib", "behaviour", *columns, "order measured", "note"], []
    for probe in by_release(doc):
        row, middle, note = cells(probe)
        number = doc["search"]["order"].index(probe["jax"]) + 1  # its place in the search
        rows.append([probe["jax"], probe["jaxlib"], row, *middle, number,
                     clause_cut(confidence_words(plainly(note)), 160) if note else ""])
    # a figure's column no release has (a size the search never measured): "–" in every row
    return filled_columns(headers, rows, (*EMPTY_CELLS, "–") if len(rows) > 1 else EMPTY_CELLS)


def _number_key(text: str) -> tuple:
    """Numbers by value before anything else by its text (1, 2, 5, 10, not 1, 10, 2, 5)."""
    n = _number(text)
    return (0, n, "") if isinstance(n, (int, float)) else (1, 0, str(n))


def _number(text: str):
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(text)
    return text


def shape_chart(doc: dict) -> dict | None:
    """A shape's series at the ends and the pair at the size asked, a line each: label ->
    [(value, figure)], with the chart's words (``chart_markdown``'s and ``write_png``'s
    arguments); None where fewer than two have numbers."""
    if not doc["over"]:
        return None
    metric, u = doc["metric"]["name"], unit(doc)
    scale, y = (MIB, f"{metric} (MiB)") if u == "bytes" else (1, f"{metric} ({u})")
    versions = sorted({*doc["measured_part"], *pair_or_ends(doc)}, key=Version)
    lines = {}
    for v in versions:
        series = probe_at(doc, v).get("series")
        if series and all(isinstance(_number(x), (int, float)) for x in series["figures"]):
            mode = " (a run's peak)" if series["fallback"] else ""
            lines[f"jax {v}{mode}"] = [(_number(x), f / scale)
                                       for x, f in series["figures"].items() if f is not None]
    if len(lines) < 2:
        return None
    return {"series": lines, "title": f"{metric} of {label(doc)} against {doc['over']['name']}",
            "x_label": doc["over"]["name"], "y_label": y}


def chart(doc: dict) -> str | None:
    """A mermaid chart GitHub renders: a shape's series at the ends and the pair, a line
    each; else the metric's median per probed release, a bar each."""
    if doc["over"]:
        drawn = shape_chart(doc)
        return chart_markdown(**drawn) if drawn else None
    metric, u = doc["metric"]["name"], unit(doc)
    points = [(p["jax"], p["figure"]["median"]) for p in by_release(doc)
              if "median" in p["figure"]]
    scale, y = (MIB, f"{metric} (MiB)") if u == "bytes" else (1, f"{metric} ({u or metric})")
    if u == "s" and points and all(v < 1 for _, v in points):  # the unit the tables show
        scale, y = 1e-3, f"{metric} (ms)"
    if len(points) < 2:
        return None
    values = [v / scale for _, v in points]
    top = max(values) * 1.1 or 1.0
    return "\n".join([
        "```mermaid", "xychart-beta", f'    title "{metric} of {label(doc)} by jax release"',
        f'    x-axis [{", ".join(chr(34) + r + chr(34) for r, _ in points)}]',
        f'    y-axis "{y}" 0 --> {top:.6g}',
        f'    bar [{", ".join(f"{v:.6g}" for v in values)}]', "```"])


NUMBER = r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
VS = re.compile(rf"^(?P<old>{NUMBER}) vs (?P<new>{NUMBER}), (?P<ratio>{NUMBER})x")
PAIRED = re.compile(rf"last/first end (?P<ratio>{NUMBER})x over (?P<n>\d+) interleaved pairs")


def end_figure(doc: dict, i: int, said_: float) -> float:
    """An end's figure as the rows show it (the probe's median, full precision), where the
    reason's rounded number (4.412e+08) is that figure; else the reason's own number. One
    quantity is printed one way: 441208256 B is 420.77 MiB everywhere, not 420.76 here."""
    with contextlib.suppress(StopIteration, KeyError, TypeError, IndexError):
        median = probe_at(doc, doc["measured_part"][i])["figure"]["median"]
        if median and abs(median - said_) <= 1e-3 * abs(median):
            return float(median)
    return said_


def ends_reason(doc: dict) -> str:
    """How the ends compared, in the report's unit (MiB, not 8.48e+07 bytes), and a paired
    ratio said as what it is: the median of the pairs' ratios, not the ratio of the medians
    the answer quotes."""
    metric, u = doc["metric"]["name"], unit(doc)
    text = LOOK.sub("", doc["ends"]["reason"])
    vs = VS.match(text)
    if vs and u:
        old, new = (shown(metric, u, end_figure(doc, i, float(vs[k])))
                    for i, k in ((0, "old"), (-1, "new")))
        text = f"{old} vs {new}, {vs['ratio']}×" + text[vs.end():]
    paired = PAIRED.search(text)
    if paired:
        text = (text[:paired.start()] + f"the median of the last end's {metric} over the "
                f"first's in {paired['n']} interleaved pairs (one run of each, one after the "
                f"other) is {paired['ratio']}×" + text[paired.end():])
        pair = [(doc.get(k) or {}).get("jax") for k in ("last_old", "first_new")]
        if doc["status"] == Status.FOUND and pair == list(doc["measured_part"]):
            text += ("; the ratio in the answer above is that of the two medians it shows, "
                     "another estimate of the same change")
        elif doc["status"] == Status.FOUND:  # the answer's pair lies inside the ends
            text += (f"; this ratio compares the oldest and newest releases measured, while "
                     f"the answer above compares jax {pair[0]} and {pair[1]} (the two medians "
                     f"it shows), so the two ratios differ")
    if doc["over"] and text == "the ends give the same value":  # a shape's word, not a figure
        text = "the ends give the same shape over " + doc["over"]["name"]
    text = confidence_words(re.sub(r"^the ends give ", "they give ", text))
    return re.sub(rf"({NUMBER})x\b", "\\1×", text)


def peak_values_words(doc: dict) -> str:
    """Where the rows' run's peak was measured at fewer values of the swept parameter than
    asked (the case's own sizes for a run's peak): which, so an empty column says why."""
    over = doc.get("over") or {}
    asked = [str(v) for v in over.get("values") or ()]
    peaks = [s for p in doc["probes"] if (s := p.get("series") or {})
             and (s.get("metric") == "peak_memory" or s.get("fallback"))]
    got = {k for s in peaks for k in (s.get("figures") or {})}
    missing = [v for v in asked if v not in got]
    if not peaks or not missing:
        return ""
    return (f"; a run's peak is measured at the sizes the case sets for it ({over['name']} "
            f"{', '.join(v for v in asked if v in got)}), so not at {over['name']} "
            f"{', '.join(missing)}")


def how_text(doc: dict) -> str:
    """What each row measured, and how the ends and the machine's noise were read."""
    metric, case, over = doc["metric"]["name"], doc.get("case"), doc["over"]
    noisy = doc["metric"]["kind"] == "noisy"
    asked = dict(case["params"]) if case else {}
    measured = {**asked, **(rows_params(doc) if over else {})}  # the rows' own size
    shaped = {k: v for k, v in measured.items() if not over or k != over["name"]}
    other = ", ".join(f"{k}={asked[k]!r}" for k in shaped if k in asked and asked[k] != shaped[k])
    compare = compare_params(doc) if case else {}
    where = "at the ends"
    if doc["status"] == Status.FOUND:
        before, after = pair_words(doc)
        where += f" and at the {before} and the {after} releases"
    how = (f"Each row: {metric} of `{label(doc)}`"
           + (f" at each {over['name']} and its shape over them (judged by the case's own "
              f"rule where it has one, else by its relative growth, repro/verdict.py)"
              if over else "")
           + (f" with {', '.join(f'{k}={v!r}' for k, v in shaped.items())}" if case else "")
           + (f" (the case asks {other})" if other else "")
           + peak_values_words(doc)
           + (f"; beside it, {where}, " + ", ".join(
               f"{c} ({said_})" if said_ else c for c, said_ in compared_words(doc).items())
              if compare else "")
           + (", the median of one figure a run (a run: one process; its figure: the 25th "
              "percentile of its calls), with their spread" if noisy else "")
           + (f"; XLA_FLAGS `{doc['xla_flags']}`" if doc.get("xla_flags") else "") + ".")
    if doc["ends"]:
        first, last = doc["measured_part"][0], doc["measured_part"][-1]
        how += (f" The oldest and newest releases measured (jax {first} and {last}): "
                f"{ends_reason(doc)}.")
    crash_runs = max(((r.get("crash_rate") or {}).get("runs", 1) for p in doc["probes"]
                      for r in p["runs"]), default=1)
    if metric == "error" and crash_runs > 1:  # what "samples" and "program runs" count
        how += (f" An error's figure is one message (a sample); each end is run "
                f"{crash_runs} times (program runs), so that a crash that comes only some of "
                f"the time is told from one that comes every time.")
    if doc["calibration"]:
        how += f" Calibration: {calibration_text(doc['calibration'])}."
    if noisy and doc["status"] == Status.FOUND:
        how += (" Each release between the ends was measured in rounds beside a fresh run of "
                "each end (old, it, new, one after the other) and placed from the ratios within "
                "its rounds: old (new) where it is confidently nearer that end on a log scale, "
                "within half the ends' change of it (its note gives its ratio to each end).")
        how += smaller_changes(doc)
    return how


def smaller_changes(doc: dict) -> str:
    """A release placed with an end it differs from by more than the classifier's threshold
    (jax 0.4.31 at 1.43× jax 0.4.30, placed old beside a 145× change): said, with the range
    that would ask about it, as the search placed only the change between the ends."""
    threshold = doc["metric"].get("threshold") or DEFAULT_NOISY_THRESHOLD  # a noisy metric's
    ends = {label: probe_at(doc, v) for label, v in zip(("old", "new"), doc["measured_part"])}
    said = []
    for p in doc["probes"]:
        end = ends.get(p.get("label"))
        if end is None or p["jax"] == end["jax"]:
            continue
        mine, theirs = ((p.get("figure") or {}).get("median"),
                        (end.get("figure") or {}).get("median"))
        if not mine or not theirs:
            continue
        ratio = mine / theirs
        if ratio > 1 + threshold or ratio < 1 / (1 + threshold):
            pair = sorted((p["jax"], end["jax"]), key=Version)
            ask = re.sub(r"--from \S+ --to \S+", f"--from {pair[0]} --to {pair[1]}",
                         doc.get("reproduce") or "")
            said.append(f"jax {p['jax']} is {ratio:.2f}× jax {end['jax']}'s "
                        f"{doc['metric']['name']} and placed with it beside the change between "
                        f"the ends: a smaller change the search does not place"
                        + (f" (`{ask}` asks about it)" if "--from" in ask else ""))
    return (" " + "; ".join(said).capitalize().replace("Jax", "jax", 1) + ".") if said else ""


def of_candidates(doc: dict) -> str:
    """The count a search's numbers are out of: the releases it could measure, and the range
    asked beside it where releases were skipped before the search (not installable here)."""
    candidates = doc["search"]["candidates"]
    probed = {p["jax"] for p in doc.get("probes") or ()}
    asked = candidates + len({s["jax"] for s in doc.get("skipped") or ()} - probed)
    yanked = [y["jax"] for y in doc.get("yanked") or () if not y.get("candidate")]
    left = f"yanked {', '.join(yanked)} left out" if yanked else ""
    if asked == candidates:
        return f"of the {candidates} in the range" + (f" ({left})" if left else "")
    return (f"of the {candidates} measurable here ({asked} in the range asked"
            f"{'; ' + left if left else ''})")


def search_line(doc: dict) -> str:
    """The search's counts, as the JSON has them, and the releases inside where measured."""
    search = doc["search"]
    line = (f"Search: {search['probes']} releases measured ({search['remeasures']} measured "
            f"again), at most {search['limit']['probes']} {of_candidates(doc)} when "
            f"none is skipped; {search['runs']} runs in all")
    inside = doc.get("interior") or []
    if inside and (doc.get("interior_check") or {}).get("measured"):
        line += (f", and {sum(r['runs'] for r in inside)} runs of the {len(inside)} releases "
                 f"inside (*The releases inside*)")
    line += "."
    if search["jobs"] > 1 and search["rounds"]:
        line += (f" Up to {search['jobs']} releases probed at once (--jobs), in rounds: "
                 + "; ".join(", ".join(r) for r in search["rounds"]) + ".")
    sized = doc["search_size"]
    if sized and sized.get("agreed") and sized.get("over") and doc.get("over"):
        at = ", ".join([*(f"{k} {v}" for k, v in (sized.get("params") or {}).items()),
                        f"{doc['over']['name']} {','.join(map(str, sized['over']))}"])
        line += (f" The search compared each release's shape over {doc['over']['name']} at "
                 f"{at}, a smaller size: at both ends the shape there is the one the rows "
                 f"show; each row's figures are at the size its mode column names (the size "
                 f"asked where it names none).")
    elif sized:
        line += f" The {sized['note'].replace('search probes', 'search measured')}."
    return line


def grouped_skips(skipped: list[dict]) -> list[str]:
    """Neighbouring releases left out for the same reason, as one line each."""
    runs = itertools.groupby(sorted(skipped, key=lambda s: Version(s["jax"])),
                             key=lambda s: s["reason"])
    out = []
    for why, group in runs:
        rs = [s["jax"] for s in group]
        which = f"jax {rs[0]}" if len(rs) == 1 else f"jax {rs[0]} … {rs[-1]} ({len(rs)} releases)"
        out.append(f"- {which}: {measured_not_installable(why)}")
    return out


def probes_lines(doc: dict) -> list[str]:
    """The section of every release probed: how, the table, the search, the chart, skips."""
    headers, rows = probe_rows(doc)
    search = doc["search"]
    lines = [table(headers, rows), ""]
    if any(PER_OUTER.match(str(((p.get("series") or {}).get("shape")) or ""))
           for p in doc["probes"]):
        lines += [SHAPE_LEGEND, ""]
    lines += [search_line(doc), ""]
    drawn = chart(doc)
    if drawn:
        lines += [drawn, ""]
    skipped = [p for p in by_release(doc) if p["label"] not in (Label.OLD, Label.NEW)
               and p["jax"] not in doc["third_behaviour"]]
    if skipped or doc["skipped"]:
        lines += ["Skipped or left out:", "",
                  *[f"- jax {p['jax']}: {skip_reason(p)}" for p in skipped],
                  *grouped_skips(doc["skipped"]), ""]
    return details(f"Releases the search measured, {search['probes']} {of_candidates(doc)}"
                   f": the table, the search"
                   f"{', the chart' if drawn else ''}",
                   [how_text(doc), "", *lines])


INTERIOR_WORDS = {
    AgainstEnds.OLD: "behaves as both of them",
    AgainstEnds.DIFFERS: "behaves as neither of them",
    AgainstEnds.CANNOT_TELL: "not told apart within its runs",
}


def interior_legend(rows: list[dict]) -> str:
    """Every behaviour the rows inside say, defined, in the order they first appear."""
    used = {r["label"] for r in rows}
    labels = [x for x in INTERIOR_WORDS if x in used] + sorted(used - set(INTERIOR_WORDS))
    return "; ".join(f"`{x}`: {INTERIOR_WORDS.get(x, x)}" for x in labels)


HERE = "not measured here: "  # a skipped release's reason, said after its name


def interior_lines(doc: dict) -> list[str]:
    if not doc.get("interior"):
        return []
    check = doc["interior_check"]
    part = doc.get("measured_part") or (doc["from"], doc["to"])
    between = [s for s in doc.get("skipped") or ()
               if Version(part[0]) < Version(s["jax"]) < Version(part[1])]
    yanked = [y["jax"] for y in doc.get("yanked") or ()
              if not y.get("candidate") and Version(part[0]) < Version(y["jax"]) < Version(part[1])]
    each = ("each release between them" if not between else
            f"each release between them that runs here (not jax "
            f"{', '.join(s['jax'] for s in between)}: "
            f"{measured_not_installable(between[0]['reason']).removeprefix(HERE)})")
    if yanked:
        each += f" (yanked jax {', '.join(yanked)} left out)"
    return details("The releases inside", [
        "The oldest and newest releases measured agree, so the search had no change to "
        f"place between them; after it, a check of its own measured {each} "
        f"and compared it with both ends as the search compares a release "
        f"({interior_legend(doc['interior'])}), about "
        f"{check['estimate']:.0f} s estimated from the ends' run times"
        + (f" ({len(doc['interior'])} × {check['per_release']:.1f} s)"
           if check.get("per_release") else "")
        + f", within the time allowed for them ({check['budget']:.0f} s, "
        f"`--interior-budget`).", "",
        table(["jax", "behaviour", doc["metric"]["name"], "runs", "why"],
              [[r["jax"], r["label"], said(doc, r["figure"]), r["runs"], r["reason"] or ""]
               for r in doc["interior"]])])


def packages_lines(probes: list[dict]) -> list[str]:
    """Every package recorded in each measured release's environment (its date-resolved set):
    the search's releases and those measured inside alike ends, a row a release."""
    installed = sorted({p["jax"]: p["installed"] for p in probes if p.get("installed")}.items(),
                       key=lambda jp: Version(jp[0]))
    names = sorted({n for _, packages in installed for n in packages} - {"jax"})
    if not names:
        return []
    rows = [[jax, *(packages.get(n, "") for n in names)] for jax, packages in installed]
    return details("Packages installed for each release measured (resolved as of its "
                   "release date)", [table(["jax", *names], rows)])
