"""The short answer a maintainer reads first: the symptom, the pair, the commit or the jaxlib,
the culprit, "fixed in", the HLO bundle and one reproduce block (docs/bisect.md's order), and
the sentences beside the answer that say what it does not cover."""

from __future__ import annotations

import contextlib
import re
import shlex

from packaging.version import Version

from jaxbisect.evidence.passes import setting_kind as kind_of_setting
from jaxbisect.lab.known_flags import known_line
from jaxbisect.report.figures import shown
from jaxbisect.report.markdown import tpu
from jaxbisect.report.markdown.commits import commits_first_lines
from jaxbisect.report.markdown.expect import expect_sentence
from jaxbisect.report.markdown.reproduce import in_venv, reproduce_block, venv_of
from jaxbisect.report.markdown.words import (
    cut,
    direction_of,
    label,
    pair_words,
    plainly,
    probe_at,
    said,
    shape_words,
    unit,
    value_words,
)
from jaxbisect.search.classify import DEFAULT_THRESHOLD, Direction
from jaxbisect.search.comparing import OUTPUT_TOLERANCE, errors_alike, output_atol
from jaxbisect.search.placing import Behaviour
from jaxbisect.search.rounds import Status

VERBS = {Direction.REGRESSION: "Regression", Direction.FIX: "Fix", Direction.CHANGED: "Change"}
CONFIDENCE = 0.95  # classify.DEFAULT_CONFIDENCE, as the undecided sentence says it
PEAK_EVERYWHERE = "a run's peak at every release"

TIMINGS = ("run_time", "compile_time")  # noisy figures: never the same twice


def ends_figures(doc: dict, found: bool = False) -> str:
    """The figures (a shape's words) of the pair found, after the metric's name, or of the
    ends, without calling either old or new."""
    versions = ((doc["last_old"]["jax"], doc["first_new"]["jax"]) if found
                else doc["measured_part"])
    ends = [probe_at(doc, v) for v in versions]
    metric, joined = doc["metric"]["name"], " →" if found else " and"
    if doc["over"] and searched_by_peak(doc):
        # Every release measured as a run's peak (one end has no plan): the search's shapes.
        shapes = [shape_words(str((p.get("figure") or {}).get("value") or "")) or "no shape"
                  for p in ends]
        name = doc["over"]["name"]
        if found:
            return (f"{metric} ({PEAK_EVERYWHERE}) over {name}: {shapes[0]} at jax "
                    f"{versions[0]} → {shapes[1]} at jax {versions[1]}")
        return f"{shapes[0]} over {name} at jax {versions[0]} and {shapes[1]} at jax {versions[1]}"
    if doc["over"]:
        shapes = [shape_words((p.get("series") or {}).get("shape"),
                              (p.get("series") or {}).get("figures")) or "no shape"
                  for p in ends]
        name = doc["over"]["name"]
        if found:
            return (f"{metric} over {name}: {shapes[0]} at jax {versions[0]} → {shapes[1]} at "
                    f"jax {versions[1]}" + sized_ends(doc, ends))
        return (f"{shapes[0]} over {name} at jax {versions[0]} and {shapes[1]} at jax "
                f"{versions[1]}" + sized_ends(doc, ends))
    differ = [runs_differ(doc, e["jax"]) for e in ends]
    shown = [said(doc, rounded(e["figure"]) if d else e["figure"]) for e, d in zip(ends, differ)]
    if metric == "error":  # a message's own last stop, before " at jax …" goes on the sentence
        shown = [f[:-1] if f.endswith(".") and not f.endswith("..") else f for f in shown]
    if not found and ends_read_alike(doc):  # said once
        asked = tuple(versions) == (doc["from"], doc["to"])  # the headline names them
        return f"{shown[0]} at both ends" + ("" if asked else f" (jax {', '.join(versions)})")
    line = (f"{shown[0]} at jax {versions[0]}{differ[0]}{joined} {shown[1]} at jax "
            f"{versions[1]}{differ[1]}")
    if any(differ):
        return f"{metric} {line}" if found else line
    if metric == "error" and found:  # the error's words say what it is
        return line
    figures = [SHOWN.fullmatch(f) for f in shown]
    if found and all(figures) and figures[0]["unit"] == figures[1]["unit"] \
            and float(figures[0]["number"]) > 0:  # the ratio of the figures as shown
        line += f" ({ratio_text(float(figures[1]['number']) / float(figures[0]['number']))})"
    elif doc["ends"] and doc["ends"]["ratio"]:
        pairs = " within interleaved pairs" if doc["metric"]["kind"] == "noisy" else ""
        line += f" ({doc['ends']['ratio']:.2f}×{'' if found else pairs})"
    return f"{metric} {line}" if found else line


PRINTED = re.compile(r"\[(?P<values>[^\]]*)\]\s*$")


def first_printed(values: list) -> str:
    """A run's first value as a headline says it: three figures."""
    first = values[0] if values else ""
    with contextlib.suppress(ValueError, TypeError):
        return f"{float(first):.3g}"
    return str(first)


def rounded(fig: dict) -> dict:
    """An output's figure with its values in three figures, as the runs beside it are said."""
    values = [float(f"{v:.3g}") if isinstance(v, float) else v for v in fig.get("values") or ()]
    return {**fig, "values": values} if values else fig


def program_prints(doc: dict, version: str) -> list[str]:
    """The first value the standalone program printed in each of its runs at a release."""
    out = []
    for end in (doc.get("reproducer") or {}).get("ends") or ():
        if end.get("jax") == version:
            for line in end.get("outputs") or ():
                printed = PRINTED.search(line or "")
                if printed:
                    out.append(first_printed(printed["values"].split(",")))
    return out


def search_prints(doc: dict, version: str, probe: dict | None = None) -> list[str]:
    """The first value of each of the search's samples at a release."""
    out = []
    runs = (probe or probe_at(doc, version)).get("runs") or ()
    if isinstance(runs, int):  # an interior row: its runs counted, their samples not kept
        runs = ()
    for run in runs:
        for sample in run.get("samples") or ():
            values = sample.get("values") if isinstance(sample, dict) else None
            if values:
                out.append(first_printed(values))
    return out


def runs_differ(doc: dict, version: str, probe: dict | None = None) -> str:
    """Where a release's recorded runs of an output differ (the search's runs or the program's
    own), what follows its figure, each value by where it came from: " in the bisection's 2
    runs; the program below printed 5.56e-310 and 4.66e-310 in two runs: it differs between
    runs"; "" where they all agree."""
    if doc["metric"]["name"] != "output":
        return ""
    searched, printed = search_prints(doc, version, probe), program_prints(doc, version)
    if len(set(searched) | set(printed)) < 2:
        return ""
    runs = (probe or probe_at(doc, version)).get("runs") or ()
    runs = runs if isinstance(runs, int) else len(runs)
    text = f" in the bisection's {runs} run{'s' if runs != 1 else ''}"
    figure = said(doc, (probe or probe_at(doc, version)).get("figure"))
    if len(set(searched)) > 1 and "differs between runs" not in figure:  # else said there
        text += f" (it differs between them: {'; '.join(dict.fromkeys(searched))})"
    if printed:
        counted = {1: "one run", 2: "two runs", 3: "three runs"}.get(len(printed),
                                                                   f"{len(printed)} runs")
        named = list(dict.fromkeys(printed))
        text += (f"; the program below printed {' and '.join(named)} in {counted}"
                 + (": it differs between runs" if len(named) > 1 else ""))
    return text


def ends_read_alike(doc: dict) -> bool:
    """Whether the ends measured read the same, word for word, on a metric that compares
    nothing else (EQUAL_AS_SHOWN): said once, with nothing on how they were compared."""
    if doc["over"] or doc["metric"]["name"] not in EQUAL_AS_SHOWN:
        return False
    first, last = (said(doc, probe_at(doc, v)["figure"]) for v in doc["measured_part"])
    return first == last


# Metrics whose ends agree only where their words do (a message, values): two ends that read
# the same are said once, and how they were compared goes without saying.
EQUAL_AS_SHOWN = ("error",)
SHOWN = re.compile(r"(?P<number>[0-9.]+(?:e[-+]?\d+)?) (?P<unit>[^\s(]+)")


def ratio_text(ratio: float) -> str:
    """A ratio in three significant figures (193.6× is not 214.99×'s neighbour by accident)."""
    return f"{ratio:.1f}×" if ratio >= 10 else f"{ratio:.3g}×"


def sized_ends(doc: dict, ends: list[dict]) -> str:
    """A shape's figures at the largest value both ends measured, in the metric's unit."""
    figures = sized_figures(doc, ends)
    return f" ({figures})" if figures else ""


def sized_figures(doc: dict, ends: list[dict]) -> str:
    """"n_outer=10, n_res=32: 25.04 MiB → 25.18 MiB": the ends' series (the tables' figures) at
    the largest value both measured; "" where none is shared or they are two quantities."""
    figures = [((p.get("series") or {}).get("figures") or {}) for p in ends]
    shared = [v for v in figures[0] if v in figures[1]
              and isinstance(figures[0][v], (int, float)) and isinstance(figures[1][v],
                                                                         (int, float))]
    if not shared:
        return ""
    at = max(shared, key=lambda v: float(v) if v.replace(".", "", 1).isdigit() else 0)
    old, new = (shown(doc["metric"]["name"], unit(doc), f[at]) for f in figures)
    sizes = [sized_as(doc, p.get("series") or {}) for p in ends]
    if sizes[0] == sizes[1]:
        return f"{doc['over']['name']}={at}{', ' + sizes[0] if sizes[0] else ''}: {old} → {new}"
    return ""  # two quantities: said in a sentence of its own (quantities_sentence)


def searched_by_peak(doc: dict) -> bool:
    """Whether the search measured every release by a run's peak: a memory question where an
    end has no compiled statistics (stages/releases.py, one_quantity)."""
    sized = doc.get("search_size") or {}
    return doc["metric"]["name"] == "memory" and sized.get("metric") == "peak_memory"


def one_quantity(doc: dict, versions: tuple[str, str]) -> str:
    """Why every release was measured by a run's peak, and its figures at both ends as the
    tables below show them (the program's own printed lines stay in the Reproduce block)."""
    sized = doc["search_size"]
    fell = sized.get("instead_of")
    why = (f" No compiled statistics at jax {fell['jax']}: "
           f"{plainly(fell.get('reason') or 'memory reported as 0 bytes')}."
           if fell else " An end has no compiled statistics.")
    sizes = ", ".join(f"{k}={v}" for k, v in (sized.get("params") or {}).items())
    over = doc["over"]["name"]
    text = (f"{why} Every release was searched by a run's peak at {sizes}, {over} "
            f"{', '.join(map(str, sized.get('over') or ()))}")
    both = sized_figures(doc, [probe_at(doc, v) for v in versions])
    return text + (f"; in the tables below, jax {versions[0]} → {versions[1]} at {both}."
                   if both else ".")


def quantities_sentence(doc: dict, versions: tuple[str, str]) -> str:
    """Where the two ends were measured as two quantities, the sentence that says so."""
    if not doc.get("over"):
        return ""
    if searched_by_peak(doc):
        return one_quantity(doc, versions)
    ends = [probe_at(doc, v) for v in versions]
    sizes = [sized_as(doc, p.get("series") or {}) for p in ends]
    if sizes[0] == sizes[1] or not all((p.get("series") or {}).get("figures") for p in ends):
        return ""
    text = other_quantities(doc, ends)
    return f" {text[0].upper()}{text[1:]}."


def other_quantities(doc: dict, ends: list[dict]) -> str:
    """Ends measured as two quantities (a release without compiled statistics: a run's peak at
    another size), said plainly: which end has none, what was compared instead (the shape,
    scale-free), and the one quantity both ends printed where the program measured it."""
    series = [p.get("series") or {} for p in ends]
    name = doc["over"]["name"]
    fell = [(p, s) for p, s in zip(ends, series) if s.get("fallback")]
    how = [("a run's peak" if s.get("fallback") else "the compiled plan")
           + (f" at {sized}" if (sized := sized_as(doc, {**s, 'fallback': None})) else "")
           for s in series]
    compared = (f"compared instead: the shape over {name}, from {how[0]} at jax "
                f"{ends[0]['jax']} and {how[1]} at jax {ends[1]['jax']}")
    if not fell:
        return f"measured at other sizes; {compared}"
    p, s = fell[0]
    said = (f"no compiled statistics at jax {p['jax']}: "
            f"{plainly(s['fallback'].get('reason') or 'memory_analysis() reports 0 bytes')}; "
            f"{compared}")
    both = peak_at_both(doc)
    return said + (f"; a run's peak at both ends, printed by the program below: {both}"
                   if both else "")


def peak_at_both(doc: dict) -> str:
    """The last value the peak program printed at each end (its recorded runs): "n_outer=10:
    24.88 MiB → 25.02 MiB"; "" where it did not run at both."""
    r = doc.get("reproducer") or {}
    if r.get("quantity") != "peak" or len(r.get("ends") or ()) != 2:
        return ""
    last = [((e.get("output") or "").strip().splitlines() or [""])[-1] for e in r["ends"]]
    if any(e.get("exit") != 0 for e in r["ends"]) or not all(": " in x for x in last):
        return ""
    at = [x.split(": ", 1) for x in last]
    if at[0][0] != at[1][0]:
        return ""
    figures = [x[1].split(",")[0] for x in at]
    return f"{at[0][0]}: {figures[0]} → {figures[1]}"


SIZES = ("n_res", "n", "rows", "cols", "size", "batch", "n_inner")


def sized_as(doc: dict, series: dict) -> str:
    """How a series was measured, beside its figures: its size parameters (``n_res=200``),
    and a run's peak where compiled statistics were empty."""
    params = series.get("params") or {}
    over = (doc.get("over") or {}).get("name")
    sized = ", ".join(f"{k}={v}" for k, v in params.items()
                      if k != over and isinstance(v, int) and not isinstance(v, bool)
                      and (k in SIZES or k.startswith("n_")) and k != "variant")
    return sized + (", a run's peak (compiled statistics empty)" if series.get("fallback")
                    else "")


def changes_words(doc: dict) -> str:
    """Each change inside alike ends, from the document's rows: where it came, where it went,
    and what the releases unlike the ends gave (a nondeterministic one: each run's)."""
    rows = {r["jax"]: r for r in doc.get("interior") or ()}
    parts = []
    for c in doc["interior_check"]["changes"]:
        differ = {v: runs_differ(doc, v, rows[v]) for v in c["releases"] if v in rows}
        sep = " raises" if doc["metric"]["name"] == "error" else ":"
        unlike = "; ".join(
            f"jax {v}{sep} {said(doc, rounded(rows[v]['figure']) if d else rows[v]['figure'])}{d}"
            for v, d in differ.items())
        parts.append(f"came at jax {c['came'][0]} → {c['came'][1]}, went at jax "
                     f"{c['went'][0]} → {c['went'][1]}" + (f" ({unlike})" if unlike else "")
                     + ("" if c.get("exact", True) else
                        "; a release between could not be told, so each pair spans it"))
    return "; ".join(parts)


def measured_throughout(doc: dict) -> bool:
    """Whether every release of the asked range was measured and behaves as the ends: the
    ends measured are the ends asked, nothing inside was left out, and every release inside
    was measured and placed as the ends (the records, not the answer's status)."""
    if tuple(doc.get("measured_part") or ()) != (doc["from"], doc["to"]):
        return False
    first, last = (Version(v) for v in doc["measured_part"])
    if any(first < Version(s["jax"]) < last for s in doc.get("skipped") or ()):
        return False
    inside = doc.get("interior_check") or {}
    rows = {r["jax"]: r for r in doc.get("interior") or ()}
    return bool(inside.get("measured")) and all(
        rows.get(v, {}).get("label") == "old" for v in inside.get("releases") or ())


def present_at_both(doc: dict) -> str:
    """Where the ends agree on the behaviour a report is about (a shape that grows, an error
    raised), that it is there at both: "no change" is not "no bug". "Throughout the range"
    only where every release of it was measured alike (``measured_throughout``)."""
    ends = [probe_at(doc, v) for v in doc["measured_part"]]
    first, last = doc["measured_part"]
    # the ends measured, where the range asked begins or ends where nothing was measured
    both = ("both ends" if (first, last) == (doc["from"], doc["to"])
            else "both ends measured")
    where = ("present throughout the range, every release of it measured" if
             measured_throughout(doc) else f"present at jax {first} and jax {last}")
    if doc["over"]:
        shapes = [(p.get("series") or {}).get("status") for p in ends]
        if shapes[0] == shapes[1] and shapes[0] in ("grows", "shrinks"):
            return f" It {shapes[0]} with {doc['over']['name']} at {both}: {where}."
    if doc["metric"]["name"] == "error":
        values = [p["figure"].get("value") for p in ends]
        alike = errors_alike(doc.get("error_match") or "")
        if alike(values[0], values[1]) and values[0] not in (None, "no error"):
            return f" {both.capitalize()} raise it: {where}."
    return ""


def inside_text(doc: dict) -> str:
    """The releases inside alike ends, from the document's rows: those measured and how they
    behave, those left out and why (never "every release" where some were not measured)."""
    inside = doc.get("interior_check") or {}
    if not inside.get("measured"):
        return f" {inside['text']}." if inside.get("text") else ""
    rows = doc.get("interior") or []
    first, last = (Version(v) for v in doc["measured_part"])
    left = [s for s in doc["skipped"] if first < Version(s["jax"]) < last]
    alike = all(r["label"] == "old" for r in rows)
    named = (", ".join(r["jax"] for r in rows) if len(rows) <= 5 else
             f"{rows[0]['jax']} … {rows[-1]['jax']}")
    said = (f" The {len(rows)} release{'s' if len(rows) != 1 else ''} inside measured here "
            f"(jax {named}) "
            + (f"behave as jax {first} and {last}." if alike else
               f"do not all behave as jax {first} and {last}."))
    if left:
        why = plainly(left[0]["reason"]).split(" (")[0].rstrip(".")  # never cut
        said += (f" Not measured inside: jax {', '.join(s['jax'] for s in left)} "
                 f"({why.removeprefix('not measured here: ')}).")
    return said


def undecided_advice(doc: dict) -> str:
    """What would decide an undecided bisection: more runs, a quieter machine."""
    c, max_runs = doc["calibration"] or {}, doc["search"]["max_runs"] or 0
    more = max(2 * max_runs, max_runs + 10)
    text = (f"Not a \"no change\": more runs decide it (rerun with `--max-runs {more}`; the "
            f"runs made so far are stored), or a quieter machine (nothing else running)")
    if c:
        text += (f"; at this machine's noise (a pair's ratio ±{c['pair_spread']:.1%}) "
                 f"{c['max_runs']} runs resolve a change of {c['resolvable_ratio']:.3g}× or more")
    return text + "."


def alike_how(doc: dict) -> str:
    if doc["over"]:
        return "the same shape"
    if doc["metric"]["kind"] == "noisy":
        return f"the same by an equivalence test on interleaved pairs ({doc['ends']['reason']})"
    if doc["metric"]["name"] == "error":  # messages, compared by equality
        return "the same message"
    if doc["metric"]["name"] == "output":  # values, within a relative tolerance
        # (search/classify.py: a NaN matches only a NaN)
        given = doc["metric"]["threshold"]
        recorded = doc["metric"].get("tolerance") or {}  # older records: the default then
        rtol = recorded.get("relative") or given or OUTPUT_TOLERANCE
        atol = recorded.get("absolute") or output_atol(rtol)
        return (f"the same values (within {rtol:g} relative, {atol:g} absolute"
                + ("" if given else ", the default: --threshold sets the relative one")
                + "; a NaN matches a NaN)")
    share = ((doc["metric"].get("tolerance") or {}).get("relative")
             or doc["metric"]["threshold"] or DEFAULT_THRESHOLD)
    return f"the same within {share:.0%}"


def range_words(doc: dict) -> str:
    """The range the answer speaks for: the asked one, or, where only part of it was measured,
    that part and in a clause why the rest was not (the skipped releases' reasons)."""
    start, end = doc["from"], doc["to"]
    part = tuple(doc.get("measured_part") or (start, end))
    if part == (start, end):
        return f"jax {start} … {end}"
    first, last = (Version(v) for v in part)
    out = sorted((s for s in doc.get("skipped") or () if not first <= Version(s["jax"]) <= last),
                 key=lambda s: Version(s["jax"]))
    why = ""
    if out:
        reasons = [plainly(s["reason"]).split(" (")[0] for s in out]
        reason = max(set(reasons), key=reasons.count)
        reason = ": ".join(reason.split(": ")[:2]).rstrip(".")  # the clause, not the detail
        named = (f"jax {out[0]['jax']}" if len(out) == 1 else
                 f"jax {out[0]['jax']} … {out[-1]['jax']}")
        why = f"; {named} {reason if reason.startswith('not ') else 'not measured: ' + reason}"
    return f"jax {part[0]} … {part[1]} (of jax {start} … {end} asked{why})"


def answer_line(doc: dict) -> str:
    """The answer in one sentence: the symptom, old → new, with its units."""
    subject = (f"{doc['metric']['name']} of {label(doc)}"
               + (f" ({PEAK_EVERYWHERE})" if doc.get("over") and searched_by_peak(doc) else ""))
    where, start, end = measured_words(doc), doc["from"], doc["to"]
    status, asked = doc["status"], range_words(doc)
    if status == Status.FAILS_EVERYWHERE:
        e = doc.get("everywhere_error") or {}
        return (f"**Fails at every release measured ({where}) in jax {start} … {end}:** "
                f"{cut(e.get('error') or doc.get('reason') or 'the same error', 300)}"
                + (f" ({e['cause'].replace('_', ' ')})" if e.get("cause") else "")
                + (f". To fix the case: {e['fix']}" if e.get("fix") else "") + ".")
    if status == Status.UNMEASURABLE:
        return f"**No answer ({where}):** {doc['reason']}."
    if status == Status.ALIKE:
        verb = ":" if doc["over"] else " is"
        if doc["metric"]["name"] == "error" and not doc["over"]:  # "f raises no error"
            subject, verb = label(doc), " raises"
        alike = (f"{subject}{verb} {ends_figures(doc)}"
                 + ("" if ends_read_alike(doc) else f": {alike_how(doc)}"))
        inside = doc.get("interior_check") or {}
        if inside.get("changes"):
            shown = {said(doc, probe_at(doc, v)["figure"]) for v in doc["measured_part"]}
            if not ends_read_alike(doc) and len(shown) == 1 and not doc["over"]:
                # the same words at both ends: how they were compared is not the news here
                (figure,) = shown
                alike = (f"{subject}{verb} {figure} at both ends"
                         + ("; a NaN matches a NaN" if "nan" in figure.lower() else ""))
            agree = alike if ends_read_alike(doc) else f"the ends agree ({alike})"
            return (f"**Came and went ({where}) inside {asked}:** {agree}; inside "
                    f"them it {changes_words(doc)}." + expect_sentence(doc))
        return (f"**No change ({where}) in {asked}:** {alike}."
                + quantities_sentence(doc, tuple(doc["measured_part"]))
                + present_at_both(doc) + inside_text(doc))
    if status == Status.UNDECIDED:
        runs = len(probe_at(doc, doc["measured_part"][0])["runs"])
        return (f"**Undecided ({where}) in {asked}:** {subject} is "
                f"{ends_figures(doc)}, but this machine's noise does not let the tool decide at "
                f"{CONFIDENCE:.0%} after {runs} runs of each end ({doc['ends']['reason']}). "
                f"{undecided_advice(doc)}")
    return (f"**{VERBS.get(direction_of(doc), 'Change')} ({where}):** "
            f"{ends_figures(doc, found=True)}."
            + quantities_sentence(doc, (doc["last_old"]["jax"], doc["first_new"]["jax"]))
            + expect_sentence(doc))


def pair_line(doc: dict) -> str | None:
    """The releases either side of the change, with their jaxlib, and jax's compare link."""
    if doc["status"] != Status.FOUND:
        return None
    old, new = doc["last_old"], doc["first_new"]
    before, after = pair_words(doc)
    line = (f"- **{before.capitalize()}:** jax {old['jax']}{own_jaxlib(old)}; "
            f"**{after}:** jax {new['jax']}{own_jaxlib(new)}")
    unplaced, left_out = doc.get("unplaced_between"), doc.get("left_out_between")
    if unplaced:
        line += (f" (or jax {', '.join(unplaced)} in between, which gave no figure "
                 f"here: see *Skipped or left out*)")
    if left_out:
        line += (f" (or jax {', '.join(left_out)} in between, which cannot be measured here: "
                 f"not installable)")
    if not doc["exact"] and not unplaced and not left_out:
        line += " (not exact: a release between them could not be placed)"
    return line + (f"; {doc['compare']}" if doc.get("compare") else "")


def own_jaxlib(end: dict) -> str:
    """An end's jaxlib where it is not the jax release's own number (jax 0.4.37 runs on 0.4.36)."""
    return "" if end.get("jaxlib") == end["jax"] else f" (jaxlib {end.get('jaxlib')})"


def culprit_line(doc: dict) -> str | None:
    """The XLA flag or HLO pass behind the change, and the one setting that checks it."""
    culprit = (doc.get("explanation") or {}).get("culprit") or {}
    flags = culprit.get("flags") if isinstance(culprit.get("flags"), dict) else None
    named = [c for c in (culprit, flags) if c and c.get("kind") in ("flag", "pass")
             and c.get("name")]
    if not named:
        return None
    c = named[0]
    what = "XLA flag" if c["kind"] == "flag" else "HLO pass"
    change = next((f" (default {d['old']} → {d['new']})" for d in
                   c.get("flag_defaults_changed") or () if f"--{d['name']}" == c["name"]), "")
    # A flag is proven both ways (flags.py); a pass is where the modules part, not a cause.
    said = "Culprit" if c["kind"] == "flag" else "Where it changes"
    line = f"- **{said}:** {what} `{c['name']}`{change}"
    checks = [w for w in c.get("workarounds") or ()
              if w.get("brings", Behaviour.OLD) == Behaviour.OLD]
    if not checks and c["name"] in (c.get("restoring") or ()) and doc.get("first_new"):
        checks = [{"xla_flags": f"--xla_disable_hlo_passes={c['name']}",
                   "release": doc["first_new"]["jax"], "safe": True}]
    if checks:
        w = checks[0]
        before = f"jax {doc['last_old']['jax']}'s" if doc.get("last_old") else "the old"
        # a timing's own figure: "behaviour" is the classifier's reading, which a noisy
        # figure only comes near (never the same figure)
        # what the toolkit's own run with the setting gave (a check to run, not one run)
        timed = doc["metric"]["name"] in TIMINGS and isinstance(w.get("figure"), (int, float))
        ends = [probe_at(doc, doc[k]["jax"]) for k in ("last_old", "first_new")
                if doc.get(k)] if timed else []
        medians = [(e["jax"], (e.get("figure") or {}).get("median")) for e in ends]
        gave = (f"{value_words(doc, w['figure'])}, against "
                + " and ".join(f"jax {j}'s {value_words(doc, m)}" for j, m in medians)
                if timed and len(medians) == 2 and all(m for _, m in medians) else
                f"{value_words(doc, w['figure'])}, {before} behaviour" if timed else
                f"{before} shape" if doc.get("over") else f"{before} {doc['metric']['name']}")
        line += (f"; check: {check_command(doc, w)}: the toolkit's run gave {gave} "
                 f"({setting_kind(doc, w)})")
    elif c["kind"] == "pass":
        line += "; the releases' HLO modules first differ after it"
    return line + "."


def check_command(doc: dict, w: dict) -> str:
    """A setting as a maintainer tries it: on the standalone program's command where the
    document has one, else under the release."""
    end = next((e for e in (doc.get("reproducer") or {}).get("ends") or ()
                if e["jax"] == w["release"]), None)
    folder = venv_of(doc, w["release"]) if end else None
    if end and folder:  # in the reproduce block's venv of that release
        return (f"`XLA_FLAGS={w['xla_flags']} {in_venv(end['command'], folder)}` "
                f"(venv {folder}: jax {w['release']})")
    if end:
        return f"`XLA_FLAGS={w['xla_flags']} {end['command']}` (jax {w['release']})"
    return f"`XLA_FLAGS={w['xla_flags']}` under jax {w['release']}"


def setting_kind(doc: dict, w: dict) -> str:
    """"workaround" or "diagnostic" (evidence/passes.py's one rule, the HLO section's too)."""
    return kind_of_setting(w["xla_flags"], w.get("safe", True),
                           compiled_only=bool(doc.get("target")))


def hlo_line(doc: dict) -> str | None:
    """The HLO bundle beside the report: XLA's side of the change, without jax."""
    h = doc.get("hlo_module")
    if not h:
        return None
    if not h.get("bundle"):  # why there is none is said below, not in the short answer
        return None
    check = {True: "reproduces the change", False: "does not reproduce the change",
             None: "not run"}[h.get("reproduces")]
    return f"- **HLO module** alone (no jax tracing): {check}."


PLAN = ("XLA's plan for a ", ", not a measurement on one")


def measured_words(doc: dict) -> str:
    """Where the figures come from: a target's compiled plan is "XLA's plan" only where the
    figure is the plan's memory; an error or an output was compiled (and run) for the target
    without its chip, which is no plan."""
    where = str(doc["measured"])
    if doc["metric"]["name"] in ("memory",) or not (where.startswith(PLAN[0])
                                                     and where.endswith(PLAN[1])):
        return where
    return f"compiled for a {where[len(PLAN[0]):-len(PLAN[1])]} without one"


def first_screen(doc: dict) -> list[str]:
    """At most about 15 lines, before the first section: the answer and how to see it."""
    title = (f"# {label(doc)}: {doc['metric']['name']} across jax {doc['from']} … {doc['to']} "
             f"({measured_words(doc)})")
    part = tpu.first_screen_line(doc)
    facts = [pair_line(doc), *commits_first_lines(doc), culprit_line(doc), hlo_line(doc)]
    # which part of a TPU release: its swap's reason whole (what no figure means there)
    facts = [cut(f, 420) for f in facts if f]
    if part:
        facts.insert(1, cut(f"- {part}", 480))
    return [title, "", answer_line(doc), "", *facts, *([""] if facts else []),
            *reproduce_block(doc)]


def yanked_words(y: dict) -> str:
    reason = (f"PyPI's reason: \"{y['reason']}\"" if y.get("reason") else "PyPI gives no reason")
    return f"jax {y['jax']} (jaxlib {y.get('jaxlib') or '?'}) was yanked ({reason})"


def thirds_line(doc: dict) -> str | None:
    if not doc["third_behaviour"]:
        return None
    parts = [f"jax {v} ({said(doc, probe_at(doc, v)['figure'])}: {probe_at(doc, v)['reason']})"
             for v in doc["third_behaviour"]]
    return ("**A third behaviour**, like neither end: " + "; ".join(parts)
            + ". It is left out of the search (a skip), not filed under old or new.")


def raised_line(doc: dict) -> str | None:
    """Which releases raised, and the command that bisects by whether it raises."""
    if not doc["raised"]:
        return None
    hint = doc.get("raised_hint") or metric_error_command(doc["reproduce"])
    return ("**The program raised** under " + "; ".join(f"jax {r['jax']} ({r['error'][:120]})"
                                                      for r in doc["raised"])
            + f": those releases give no {doc['metric']['name']}. To find where it starts "
              f"(or stops) raising, bisect by the error itself: `{hint}`")


def crash_line(doc: dict) -> str | None:
    """Where another metric than ``error`` met a crash: the releases, how often, and the
    ``--metric error`` bisection that finds the release it came with."""
    if doc["crash_hint"] is None:
        return None
    parts = [f"jax {c['jax']} ({c['crash']}, {c['crashed']} of {c['runs']} runs)"
             for c in doc["crashes"]]
    return (f"**Crashes** in {'; '.join(parts)}: a crash is no {doc['metric']['name']} "
            f"figure; bisect with `--metric error` to find the release it came with: "
            f"`{doc['crash_hint']}`")


def yanked_line(doc: dict) -> str | None:
    """The yanked releases inside the range: the people who installed one before the yank
    are the ones filing reports about it."""
    if not doc["yanked"]:
        return None
    named = "; ".join(yanked_words(y) for y in doc["yanked"])
    if all(y["candidate"] for y in doc["yanked"]):
        probed = [f"jax {p['jax']}: {said(doc, p['figure']) if p['figure']['n'] else 'no figure'}"
                  + (f", {p['reason']}" if p["reason"] else "")
                  for p in (probe_at(doc, y["jax"]) for y in doc["yanked"] if y["probed"])]
        return (f"**Yanked inside the range:** {named}. Measured as a candidate "
                f"(`--include-yanked`)" + (f"; probed: {'; '.join(probed)}." if probed else
                                           ", though the search did not need to probe it."))
    hint = doc.get("yanked_hint") or doc["reproduce"] + " --include-yanked"
    first, last = (Version(v) for v in doc.get("measured_part") or (doc["from"], doc["to"]))
    outside = [y["jax"] for y in doc["yanked"] if not first <= Version(y["jax"]) <= last]
    if outside:  # before (or after) every release this machine could measure here
        return (f"**Yanked inside the range:** {named}. It was left out of the search, so this "
                f"answer says nothing of it; like the releases around it that were not "
                f"measured here (above), `--include-yanked` would not measure it here.")
    return (f"**Yanked inside the range:** {named}. It was left out of the search, so this "
            f"answer says nothing of it; to measure it as a candidate too: `{hint}`")


def gpu_part_line(doc: dict, part: dict) -> str:
    """The part left to a real GPU: the releases not measured here (never the measured end
    its command reaches, named apart as that end) and the command that measures them."""
    first, last = doc["measured_part"]
    lo, hi = Version(part["from"]), Version(part["to"])
    measured = {Version(first), Version(last)}
    left = sorted(Version(s["jax"]) for s in doc.get("skipped") or ()
                   if lo <= Version(s["jax"]) <= hi and Version(s["jax"]) not in measured)
    start, end = (left[0], left[-1]) if left else (lo, hi)
    named = f"jax {start}" if start == end else f"jax {start} … {end}"
    verb = "was" if start == end else "were"
    ends = [str(v) for v in (lo, hi) if v in measured]
    with_end = (f" (with {' and '.join(ends)} as the end measured here)" if ends else "")
    return (f"**Measured part: jax {first} … {last}.** {named} {verb} not measured here: "
            f"compiling {'it' if start == end else 'them'} needs a real GPU: "
            f"`{part['command']}`{with_end}")


def notes_lines(doc: dict) -> list[str]:
    """The sentences beside the answer: flags some releases do not know, the parts left to a
    GPU, a third behaviour, releases that raised or crashed, yanked releases."""
    first, last = doc["measured_part"]
    lines = [*(known_line(e) for e in doc.get("xla_flags_known", ())),
             *(gpu_part_line(doc, p) for p in doc["needs_a_gpu"]),
             thirds_line(doc), raised_line(doc), crash_line(doc), yanked_line(doc)]
    return [part for line in lines if line for part in (line, "")]


def metric_error_command(reproduce: str) -> str:
    """The same question by ``--metric error`` (a document from before ``raised_hint``)."""
    argv = [a for a in shlex.split(reproduce) if a != "--minimize"]
    argv[argv.index("--metric") + 1] = "error"
    return shlex.join(argv)
