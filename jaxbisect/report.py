"""A metric bisection's answer: markdown for a GitHub issue and one JSON document (docs/schema.md).

The report stands alone: the program's source, the figures of every probed release, and the
plain ``pip install`` and ``python`` lines that show them without this toolkit.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import json
import shlex
import statistics
import textwrap
from dataclasses import replace
from pathlib import Path

from packaging.version import Version

from repro.case import UNITS
from repro.metrics import concrete
from repro.options import BISECT, command_line
from repro.target import load as load_target

from .bisection import (
    OUTPUT_TOLERANCE,
    MetricBisection,
    Placed,
    calibration_text,
    crashes_of,
)
from .budgets import INTERIOR_BUDGET
from .catalogue import Release, yanked_words
from .classify import DEFAULT_CONFIDENCE as CONFIDENCE
from .classify import DEFAULT_THRESHOLD as DETERMINISTIC_THRESHOLD
from .evidence.chart import chart_markdown, write_png
from .evidence.handoff import render_culprit_commits, render_xla_range
from .evidence.render import details, render_buffers_markdown, table
from .executors import cluster_markdown
from .files import write_json_if_changed, write_text_if_changed
from .harness import target_label
from .interior import CANNOT_TELL, changes_text
from .known_flags import known_line
from .machine import machine_description
from .minimize import minimal_markdown
from .question import over_text

# 2: the scan report is the scan case's metric bisection (docs/schema.md maps schema 1's
# fields to these).
SCHEMA = 2
# 3: schema 2 with the parts it lacks (``commits``); a document without them stays schema 2,
# so that every report written before them reads, and is rewritten, as it was.
SCHEMA_WITH_COMMITS = 3
JAX_COMPARE = "https://github.com/jax-ml/jax/compare/jax-v{old}...jax-v{new}"
PY312_FROM = Version("0.11")  # jax 0.11 and later need Python 3.12
VERBS = {"regression": "Regression", "fix": "Fix", "changed": "Change"}


def grouped_reasons(unusable) -> list[tuple[str, str]]:
    """Neighbouring releases left out for the same reason, as one line each."""
    runs = itertools.groupby(sorted(unusable, key=lambda item: item[0].version),
                             key=lambda item: item[1])
    groups = [([release for release, _ in group], why) for why, group in runs]
    return [(f"jax {rs[0].version}" if len(rs) == 1 else
             f"jax {rs[0].version} … {rs[-1].version} ({len(rs)} releases)", why)
            for rs, why in groups]


def yanked_entries(yanked, candidates, probed) -> list[dict]:
    """The yanked releases inside a range, for the JSON: PyPI's reason, whether they were
    candidates (``--include-yanked``) and whether the search measured them."""
    listed = {r.version for r in candidates}
    return [{"jax": str(r.version), "jaxlib": str(r.jaxlib) if r.jaxlib else None,
             "reason": r.yanked_reason, "candidate": r.version in listed,
             "probed": str(r.version) in probed} for r in yanked]


def has_answer(json_path: Path) -> bool:
    """The report at ``json_path`` holds an answer (a change found, or the ends alike): a
    rerun that finds none (an end unmeasurable, the noise undecided) keeps it."""
    try:
        return json.loads(json_path.read_text(encoding="utf-8"))["status"] in ("found", "alike")
    except (OSError, ValueError, KeyError, TypeError):
        return False


def needs_a_gpu(b: MetricBisection, at: Path | None = None) -> list[dict]:
    """A target's range where only a real GPU compiles its ends: the parts left out, each
    with the command that measures it on a machine with one (every other option kept; ``at``:
    as typed there, see ``reproduce_argv``)."""
    req, q = b.request, b.request.question
    first, last = str(b.candidates[0].version), str(b.candidates[-1].version)
    if not q.target:
        return []
    on_gpu = replace(b, request=replace(req, backend="cuda12",
                                        question=replace(q, target="")))
    parts = [(req.start, first)] if req.start != first else []
    parts += [(last, req.end)] if req.end != last else []
    return [{"from": lo, "to": hi, "command": shlex.join(reproduce_argv(on_gpu, lo, hi, at=at))}
            for lo, hi in parts]


def where(b: MetricBisection) -> str:
    q = b.request.question
    if q.target:
        doc = next((r.document for _, p in b.probes for r in p.runs if r.document), None)
        described = (doc or {}).get("target") or {}
        if not described.get("description"):  # no run described it: the spec's own words
            described = {"description": load_target(q.target).description}
        return f"compiled for {described['description']}, without the GPU"
    return b.request.backend


def jaxlib_of(release: Release, placed: Placed) -> str:
    for run in placed.runs:
        if run.document:
            return run.document.get("jaxlib") or "?"
        if run.installed.get("jaxlib"):
            return run.installed["jaxlib"]
    return str(release.jaxlib or "?")


def seen(question, placed: Placed) -> tuple:
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
    if isinstance(value, dict):  # an output digest
        leaves = len(value.get("shapes") or [])
        return {"sha256": value.get("sha256"), "shapes": value.get("shapes"), "n": len(samples),
                "values": (value.get("values") or [])[:max(0, len(value.get("values") or [])
                                                           - 2 * leaves)]}
    return {"value": value, "n": len(samples)}


def shown(metric: str, unit: str, number: float | None) -> str:
    if number is None:
        return "–"
    if unit == "bytes":
        return f"{number / 1024**2:.2f} MB"
    if unit == "s":
        return f"{number * 1e3:.3f} ms" if number < 1 else f"{number:.3f} s"
    if abs(number) >= 1e5:  # a command's large figure (bytes, counts): digits, not 6.567e+07
        return f"{number:,.0f}"
    return f"{number:.6g}"


def figure_text(metric: str, unit: str, fig: dict) -> str:
    if "median" in fig:
        return shown(metric, unit, fig["median"])
    if "sha256" in fig:
        first = ", ".join(str(v) for v in (fig.get("values") or [])[:3])
        return f"[{first}{', …' if len(fig.get('values') or []) > 3 else ''}] (sha256 " \
               f"{fig['sha256'][:8]})"
    return str(fig.get("value", "–"))


def unit_of(b: MetricBisection) -> str:
    q = b.request.question
    return "" if q.command else UNITS[q.metric]


def probe_at(doc: dict, jax: str) -> dict:
    return next(p for p in doc["probes"] if p["jax"] == jax)


def by_release(doc: dict) -> list[dict]:
    """The probes in release order (the document lists them in the order probed)."""
    return sorted(doc["probes"], key=lambda p: Version(p["jax"]))


def said(doc: dict, fig: dict) -> str:
    """A probe's figure in the metric's units."""
    return figure_text(doc["metric"]["name"], doc["metric"]["unit"] or "", fig)


def failure_of(probe: dict) -> dict | None:
    """The run of a probe that gave no samples, where none gave any (Placed.failure)."""
    failure = next((r for r in probe["runs"] if r["status"] != "ok"), None)
    if failure and not any(r["samples"] for r in probe["runs"] if r["status"] == "ok"):
        return failure
    return None


def answer_line(b: MetricBisection, doc: dict | None = None) -> str:
    doc = doc or document(b, None)
    subject = f"{doc['metric']['name']} of {b.request.question.label}"
    where_, start, end = doc["measured"], doc["from"], doc["to"]
    if doc["status"] == "unmeasurable":
        return f"**No answer ({where_}):** {doc['reason']}."
    if doc["status"] == "alike":
        if doc["over"]:
            how = "the same shape"
        elif doc["metric"]["kind"] == "noisy":
            how = f"an equivalence test on interleaved pairs: {doc['ends']['reason']}"
        elif doc["metric"]["name"] == "error":  # messages, compared by equality
            how = "the same message"
        elif doc["metric"]["name"] == "output":  # values, within a relative tolerance
            how = (f"the same values within "
                   f"{doc['metric']['threshold'] or OUTPUT_TOLERANCE:g} relative")
        else:
            share = doc["metric"]["threshold"] or DETERMINISTIC_THRESHOLD
            how = f"within {share:.0%} of each other"
        alike = f"{subject} is {ends_figures(doc)}: alike ({how})"
        inside = doc.get("interior_check") or {}
        if inside.get("changes"):
            return (f"**Came and went ({where_}) inside jax {start} … {end}:** the ends agree "
                    f"({alike}), but not every release between them does: "
                    f"{inside['text']}.")
        return f"**No change ({where_}) in jax {start} … {end}:** {alike}." + (
            f" {inside['text']}." if inside.get("text") else "")
    if doc["status"] == "undecided":
        return (f"**Undecided ({where_}) in jax {start} … {end}:** {subject} is "
                f"{ends_figures(doc)}, but this machine's noise does not let the tool decide at "
                f"{CONFIDENCE:.0%} after {len(probe_at(doc, doc['measured_part'][0])['runs'])} "
                f"runs of each end ({doc['ends']['reason']}). {undecided_advice(doc)}")
    old, new = doc["last_old"], doc["first_new"]
    text = (f"**{VERBS.get(doc['direction'], 'Change')} ({where_}) between jax {old['jax']} "
            f"(jaxlib {old['jaxlib']}), the last release with the old behaviour, and jax "
            f"{new['jax']} (jaxlib {new['jaxlib']}), the first with the new:** "
            f"{ends_figures(doc, found=True)}.")
    r = b.search.result
    if not r.exact:
        between = [str(c.version) for c in b.candidates[r.last_old + 1:r.first_new]]
        text += (f" jax {', '.join(between)} in between could not be placed, so the change is "
                 f"in one of them or in jax {new['jax']}.")
    left_out = left_out_between(b)
    if left_out:
        text += (f" jax {', '.join(left_out)} in between cannot be measured here (not "
                 f"installable), so the change is in one of them or in jax {new['jax']}.")
    if doc.get("commits"):
        from .commit_report import commits_headline

        text += " " + commits_headline(doc)
    return text


def left_out_between(b: MetricBisection) -> list[str]:
    """The releases left out (not installable here: a target's that need a real GPU) that
    lie between the pair: the change may be in one of them."""
    if b.pair is None:
        return []
    old, new = b.pair
    return [str(r.version) for r, _ in sorted(b.unusable, key=lambda u: u[0].version)
            if old.version < r.version < new.version and not r.yanked]


def row_label(doc: dict, probe: dict) -> str:
    """A probe's behaviour in its row: old, new, skip; an end's where no change was found
    (no old or new without one)."""
    placed = probe["label"] not in ("measured", "no figure")
    if placed and doc["status"] != "found" and probe["jax"] in doc["measured_part"]:
        return "first end" if probe["jax"] == doc["measured_part"][0] else "last end"
    return probe["label"]


def skip_reason(probe: dict) -> str:
    """Why a probe was skipped: its placement's reason, or its failed run's error."""
    if probe["label"] not in ("measured", "no figure"):
        return str(probe["reason"])
    failure = next((r for r in probe["runs"] if r["status"] != "ok"), None)
    return failure["error"] if failure and failure["error"] else "no answer"


def raised_releases(b: MetricBisection) -> list[dict]:
    """Each probed release where the program raised, with its error, under a metric other
    than ``error``."""
    if b.request.question.metric == "error":
        return []
    raised = ((i, next((r for r in p.runs if r.status == "raised"), None))
              for i, p in sorted(b.search.placed.items()))
    return [{"jax": str(b.candidates[i].version), "error": run.error or "an error"}
            for i, run in raised if run is not None]


def raised_line(b: MetricBisection, doc: dict | None = None,
                at: Path | None = None) -> str | None:
    """Which releases raised, and the command that bisects by whether it raises."""
    raised = (doc or document(b, None))["raised"]
    if not raised:
        return None
    argv = reproduce_argv(b, at=at)
    argv[argv.index("--metric") + 1] = "error"
    return ("**The program raised** under " + "; ".join(f"jax {r['jax']} ({r['error'][:120]})"
                                                      for r in raised)
            + f": those releases give no {b.request.question.metric}. To find where it "
              f"starts (or stops) raising, bisect by the error itself: `{shlex.join(argv)}`")


def ends_figures(doc: dict, found: bool = False) -> str:
    """The figures (a shape's words) of the pair found, after the metric's name, or of the
    ends, without calling either old or new."""
    versions = ((doc["last_old"]["jax"], doc["first_new"]["jax"]) if found
                else doc["measured_part"])
    ends = [probe_at(doc, v) for v in versions]
    metric, joined = doc["metric"]["name"], "," if found else " and"
    if doc["over"]:
        shapes = [(p["series"] or {}).get("shape") or "no shape" for p in ends]
        if found:
            return (f"{metric} over {doc['over']['name']}: {shapes[0]} at jax {versions[0]}, "
                    f"{shapes[1]} at jax {versions[1]}")
        return (f"{shapes[0]} over {doc['over']['name']} at jax {versions[0]} and "
                f"{shapes[1]} at jax {versions[1]}")
    line = (f"{said(doc, ends[0]['figure'])} at jax {versions[0]}{joined} "
            f"{said(doc, ends[1]['figure'])} at jax {versions[1]}")
    if doc["ends"] and doc["ends"]["ratio"]:
        pairs = " within interleaved pairs" if doc["metric"]["kind"] == "noisy" else ""
        line += f" ({doc['ends']['ratio']:.2f}×{'' if found else pairs})"
    return f"{metric} {line}" if found else line


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


def thirds_line(b: MetricBisection, doc: dict | None = None) -> str | None:
    doc = doc or document(b, None)
    if not doc["third_behaviour"]:
        return None
    parts = [f"jax {v} ({said(doc, probe_at(doc, v)['figure'])}: {probe_at(doc, v)['reason']})"
             for v in doc["third_behaviour"]]
    return ("**A third behaviour**, like neither end: " + "; ".join(parts)
            + ". It is left out of the search (a skip), not filed under old or new.")


def crashed_releases(b: MetricBisection) -> list[dict]:
    """Every probed release whose runs crashed, with how often (crashes.CrashRate's JSON)."""
    out = []
    for i, placed in b.search.placed.items():
        rate = crashes_of(placed)
        if rate:
            out.append({"jax": str(b.candidates[i].version), **rate})
    return out


def crash_hint(b: MetricBisection, at: Path | None = None) -> str | None:
    """The bisection by ``--metric error`` where another metric met a crash: the same
    question, every other option kept."""
    q = b.request.question
    if q.metric == "error" or not crashed_releases(b):
        return None
    asked = replace(b, request=replace(b.request, threshold=None,
                                       question=replace(q, metric="error", samples=None,
                                                        kind="auto")))
    return shlex.join(reproduce_argv(asked, at=at))


def crash_line(b: MetricBisection, doc: dict | None = None,
               at: Path | None = None) -> str | None:
    """Where another metric than ``error`` met a crash: the releases, how often, and the
    ``--metric error`` bisection that finds the release it came with."""
    doc = doc or document(b, None)
    if doc["crash_hint"] is None:
        return None
    parts = [f"jax {c['jax']} ({c['crash']}, {c['crashed']} of {c['runs']} runs)"
             for c in doc["crashes"]]
    return (f"**Crashes** in {'; '.join(parts)}: a crash is no {doc['metric']['name']} "
            f"figure; bisect with `--metric error` to find the release it came with: "
            f"`{doc['crash_hint'] if at is None else crash_hint(b, at)}`")


def yanked_line(b: MetricBisection, doc: dict | None = None,
                at: Path | None = None) -> str | None:
    """The line beside the answer that names the yanked releases inside the range: the
    people who installed one before the yank are the ones filing reports about it."""
    doc = doc or document(b, None)
    if not doc["yanked"]:
        return None
    named = "; ".join(yanked_words(r) for r in b.yanked)
    if all(y["candidate"] for y in doc["yanked"]):
        shown = [f"jax {p['jax']}: {said(doc, p['figure']) if p['figure']['n'] else 'no figure'}"
                 + (f", {p['reason']}" if p["reason"] else "")
                 for p in (probe_at(doc, y["jax"]) for y in doc["yanked"] if y["probed"])]
        return (f"**Yanked inside the range:** {named}. Measured as a candidate "
                f"(`--include-yanked`)"
                + (f"; probed: {'; '.join(shown)}." if shown else
                   ", though the search did not need to probe it."))
    asked = replace(b, request=replace(b.request, include_yanked=True))
    return (f"**Yanked inside the range:** {named}. It was left out of the search, so this "
            f"answer says nothing of it; to measure it as a candidate too: "
            f"`{shlex.join(reproduce_argv(asked, at=at))}`")


def question_values(q, backend: str, at: Path | None = None) -> dict:
    """The options that say what is measured and where (by dest): the target or backend, the
    case and its parameters (nothing for a command, which goes after ``--``), the metric, the
    XLA flags, the samples and the metric's kind. ``at``: files as typed in that folder (see
    ``reproduce_argv``)."""
    # A spec file as a maintainer types it: from the clone, or (elsewhere) its name, the
    # report carrying the spec itself (render).
    display = display_path if at is None else (lambda path: typed_path(path, at))
    values = {"target": display(q.target) if "/" in q.target else q.target or None,
              "backend": None if q.target else backend, "metric": q.metric,
              "xla_flags": q.xla_flags, "samples": q.samples, "metric_kind": q.kind}
    if q.case is not None:
        values.update(case=display(q.case.path),
                      param=[f"{name}={value}" for name, value in q.params.items()],
                      over=over_text(q.over) if q.over != q.case.over else None)
    return values


def question_argv(q, backend: str) -> list[str]:
    """The options that say what is measured and where, as ``python -m bisect`` takes them."""
    return command_line(BISECT, question_values(q, backend), lambda o: o.shapes)


def bisect_argv(values: dict, command: tuple[str, ...] = (),
                at: Path | None = None) -> list[str]:
    """``python -m bisect`` with every option of ``values`` that shapes the answer; typed in
    folder ``at`` other than the clone, ``jax-bisect`` (``python -m bisect`` runs the
    standard library's module there)."""
    program = ["python", "-m", "bisect"] if at is None or in_clone(at) else ["jax-bisect"]
    return [*program, *command_line(BISECT, values, lambda o: o.shapes or o.local),
            *(["--", *command] if command else [])]


def reproduce_argv(b: MetricBisection, start: str | None = None, end: str | None = None,
                   minimize: bool = False, at: Path | None = None) -> list[str]:
    """The command that asks the same question: every option that shaped the answer. As the
    report gives it (``at`` None: a maintainer's, the case by its name, run from the clone),
    or as it runs typed in folder ``at`` (the terminal's: the folder the user stands in)."""
    req, q = b.request, b.request.question
    return bisect_argv({"start": start or req.start, "end": end or req.end,
                        **question_values(q, req.backend, at), "threshold": req.threshold,
                        "runs": req.runs, "max_runs": req.max_runs,
                        "include_yanked": req.include_yanked,
                        "try_xla_flags": list(req.try_xla_flags), "minimize": minimize,
                        "commits": req.commits,
                        "interior_budget": (None if req.interior_budget == INTERIOR_BUDGET
                                            else req.interior_budget),
                        # the clones as typed here (a report names none)
                        **({} if at is None else {
                            name: typed_path(str(path), at) for name, path in (
                                ("jax_repo", req.jax_repo), ("xla_repo", req.xla_repo))
                            if path is not None})},
                       q.command, at)


CLONE = Path(__file__).resolve().parent.parent  # the toolkit's own clone


def display_path(path: str, clone: Path = CLONE) -> str:
    """A case's path as a maintainer would type it: relative to the toolkit's clone where it
    lies inside it; elsewhere (the user's own folder) its file name, which the report's
    Reproduce section says to save the program under."""
    try:
        return str(Path(path).resolve().relative_to(clone))
    except ValueError:
        return Path(path).name


def inside_clone(path: str, clone: Path = CLONE) -> bool:
    return Path(path).resolve().is_relative_to(clone)


def in_clone(folder: Path, clone: Path = CLONE) -> bool:
    """Whether ``folder`` is the clone's root (where ``python -m bisect`` and ``nox -s``
    run)."""
    return folder.resolve() == clone.resolve()


def typed_path(path: str, at: Path) -> str:
    """``path`` as typed in folder ``at``: relative where it lies under it, else absolute."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(at.resolve()))
    except ValueError:
        return str(resolved)


def sweep_argv(b: MetricBisection, at: Path | None = None) -> list[str]:
    """The command that measures every release of the range (what bisection cannot see),
    as the bisection measured its probes: the same runs, threshold and classifier (the sweep
    takes neither --minimize, --include-yanked, --commits, --try-xla-flags, the clones nor
    --interior-budget). Typed in a folder ``at`` other than the clone: nox is given the
    clone's noxfile, and files (nox runs a session in the noxfile's folder) are typed there."""
    argv = reproduce_argv(b, at=at and CLONE)[3:]
    for valued in ("--interior-budget", "--jax-repo", "--xla-repo"):  # (its value follows it)
        if valued in argv:
            cut = argv.index(valued)
            argv = argv[:cut] + argv[cut + 2:]
    nox = ["nox", "-s"] if at is None or in_clone(at) else ["nox", "-f",
                                                             str(CLONE / "noxfile.py"), "-s"]
    return [*nox, "repro_range", "--",
            *[a for a in argv if a not in ("--minimize", "--include-yanked", "--commits")
              and not a.startswith("--try-xla-flags")]]


MEASURE_SNIPPETS = {
    "memory": """    stats = fn.lower(*args).compile().memory_analysis()
    print("memory (output + temp bytes):", stats.output_size_in_bytes + stats.temp_size_in_bytes)""",  # noqa: E501
    "compile_time": """    samples = []
    for _ in range(6):
        jax.clear_caches()
        started = time.perf_counter()
        fn.lower(*args).compile()
        samples.append(time.perf_counter() - started)
    print("compile_time (s), median of 5 after one warm-up:", statistics.median(samples[1:]))""",
    "run_time": """    args = concrete(args)
    jax.block_until_ready(fn(*args))  # compile and warm up
    samples = []
    while len(samples) < 5 or sum(samples) < 0.3:
        started = time.perf_counter()
        jax.block_until_ready(fn(*args))
        samples.append(time.perf_counter() - started)
    quartile = statistics.quantiles(samples, n=4, method="inclusive")[0]
    print(f"run_time (s), 25th percentile of {len(samples)} calls:", quartile)""",
    "peak_memory": """    args = concrete(args)
    compiled = fn.lower(*args).compile()
    open("/proc/self/clear_refs", "w").write("5")  # reset the peak-RSS mark (Linux)
    jax.block_until_ready(compiled(*args))
    peak = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
    print("peak RSS after compiling:", peak.split(":")[1].strip())""",
    "output": """    out = jax.block_until_ready(fn(*concrete(args)))
    for leaf in jax.tree_util.tree_leaves(out):
        a = numpy.asarray(leaf)
        print("output:", a.shape, a.dtype, "sum", a.astype(numpy.float64).sum(), a.ravel()[:8])""",
    "error": """    try:
        jax.block_until_ready(fn(*concrete(args)))
        print("error: no error")
    except Exception as exc:
        print("error:", type(exc).__name__, str(exc).splitlines()[0])""",
}

def standalone_script(b: MetricBisection) -> str | None:
    """The case's source and the lines that measure its metric, runnable with plain
    ``python`` in any environment with jax."""
    q = b.request.question
    if q.case is None:
        return None
    params = q.case.resolve(q.params)
    measuring = f"    fn, args = case(**{params!r})\n{MEASURE_SNIPPETS[q.metric]}"
    if q.over:  # the series: the metric at each value of the parameter
        name, values = q.over
        measuring = (f"    for value in {list(values)!r}:\n        print({name!r}, value)\n"
                     f"        fn, args = case(**{{**{params!r}, {name!r}: value}})\n"
                     + textwrap.indent(MEASURE_SNIPPETS[q.metric], "    "))
    return (f"{q.case.source.rstrip()}\n\n\n# --- measuring, as `python -m repro --case` does "
            f"(jax and numpy only) ---\nimport statistics, time  # noqa: E402\n\nimport numpy  "
            f"# noqa: E402\n\n\n{inspect.getsource(concrete)}\n\nif __name__ == \"__main__\":\n"
            f"    print(\"jax\", jax.__version__, jax.devices()[0].device_kind)\n"
            f"{measuring}\n")


def series_of(run) -> dict | None:
    """A run's series (the metric over a parameter) as the report and the JSON give it:
    the figure at each value, the shape, the size it was measured at, the fallback if any."""
    metric = ((run.document or {}).get("metric") or {}) if run else {}
    if "over" not in metric:
        return None
    shape = metric.get("shape") or {}
    return {"over": metric["over"]["name"], "params": metric.get("params"),
            "figures": {str(p["at"]): p["value"] if p["status"] == "ok" else None
                        for p in metric["points"]},
            "errors": {str(p["at"]): p["error"] for p in metric["points"] if p["error"]},
            "status": shape.get("status"), "growth": shape.get("growth_per_outer",
                                                              shape.get("change")),
            "shape": metric.get("value") or metric.get("error") or shape.get("status"),
            "metric": (metric.get("fallback") or {}).get("metric") or metric["name"],
            "fallback": metric.get("fallback")}


def series_mode(b: MetricBisection, series: dict, beside: dict | None = None) -> str:
    """How a row was measured: the size asked, a smaller one, or a real run's peak
    (``beside``: a COMPARE program's own parameters, said in its column's header)."""
    asked = {**b.request.question.case.resolve(b.request.question.params), **(beside or {})}
    smaller = ", ".join(f"{k} {v}" for k, v in (series["params"] or {}).items()
                        if asked.get(k) != v)
    mode = "runtime" if series["fallback"] else "compiled" if series["metric"] == "memory" \
        else series["metric"]
    return mode + (f", {smaller}" if smaller else "")


def series_columns(b: MetricBisection, doc: dict):
    """The shape's columns: one a value of the parameter (the size asked where measured, else
    the search's), the case's COMPARE programs, the shape; and a probe's cells in them."""
    q, unit = b.request.question, doc["metric"]["unit"] or ""
    name, values = q.over
    scale = " (MB)" if unit == "bytes" else f" ({unit})" if unit else ""
    headers = ["mode", *(f"{name}={v}{scale}" for v in values),
               *(f"{label}{scale}" for label in q.case.compare), "shape"]

    def compared(got: dict | None, beside: dict) -> str:
        figures = [f for f in (got or {}).get("figures", {}).values() if f is not None]
        if not figures:
            return "–"
        ends = [shown_bare(unit, f) for f in (min(figures), max(figures))]
        text = ends[0] if ends[0] == ends[1] else " … ".join(ends)
        if got["fallback"]:
            text += f" ({series_mode(b, got, beside)})"
        if len(got["figures"]) < len(values):
            text += f" ({name} {', '.join(got['figures'])} only)"
        return text

    def cells(probe: dict) -> tuple[str, list, str]:
        series, failure = probe["series"], failure_of(probe)
        note = ""
        if series and series["fallback"]:
            note = f"compiled statistics empty: {series['fallback']['reason']}"
        elif failure:
            note = failure["error"] or ""
        figures = (series or {}).get("figures", {})
        return row_label(doc, probe), [
            series_mode(b, series) if series else "–",
            *(shown_bare(unit, figures.get(str(v))) for v in values),
            *(compared(probe["compare"].get(label), beside)
              for label, beside in q.case.compare.items()),
            series["shape"] if series else "–"], note
    return headers, cells


def figure_columns(b: MetricBisection, doc: dict):
    """One figure a release: its median, spread, samples and runs; and a probe's cells."""
    metric, unit = doc["metric"]["name"], doc["metric"]["unit"] or ""
    headers = [metric, "spread (min … max)",
               "figures" if doc["metric"]["kind"] == "noisy" and doc["case"] else "samples",
               "runs"]

    def cells(probe: dict) -> tuple[str, list, str]:
        fig, failure = probe["figure"], failure_of(probe)
        label = "third behaviour" if probe["third"] else row_label(doc, probe)
        if probe["confidence"] is not None and label in ("old", "new"):
            label += f" ({probe['confidence']:.3f})"
        spread = (f"{shown(metric, unit, fig['min'])} … {shown(metric, unit, fig['max'])}"
                  if "median" in fig and fig["n"] > 1 else "")
        note = probe["reason"] if probe["reason"] and label not in ("old", "new") else ""
        if failure:
            note = failure["error"] or ""
        runs = sum((r["crash_rate"] or {}).get("runs", 1) for r in probe["runs"])
        return label, [said(doc, fig) if fig["n"] else "–", spread, fig["n"], runs], note
    return headers, cells


def shown_bare(unit: str, number) -> str:
    """A figure in a column whose header carries the unit."""
    if number is None:
        return "–"
    return f"{number / 1024**2:.2f}" if unit == "bytes" else shown("", unit, number)


def probe_rows(b: MetricBisection, doc: dict | None = None) -> tuple[list[str], list[list]]:
    """The table of probes, a row a release in release order; its note column only where a
    row has a note."""
    doc = doc or document(b, None)
    columns, cells = (series_columns if doc["over"] else figure_columns)(b, doc)
    headers, rows = ["jax", "jaxlib", "behaviour", *columns, "probe #", "note"], []
    for probe in by_release(doc):
        label, middle, note = cells(probe)
        number = doc["search"]["order"].index(probe["jax"]) + 1  # its place in the search
        rows.append([probe["jax"], probe["jaxlib"], label, *middle, number, note[:160]])
    if any(row[-1] for row in rows):
        return headers, rows
    return headers[:-1], [row[:-1] for row in rows]


def shape_chart(b: MetricBisection) -> dict | None:
    """The series of the ends (and the pair) at the size asked, as lines: label ->
    [(value, figure)], with the chart's words (``chart_markdown``'s and ``write_png``'s
    arguments); None where fewer than two have numbers."""
    q, unit = b.request.question, unit_of(b)
    scale, y = (1024**2, f"{q.metric} (MB)") if unit == "bytes" else (1, f"{q.metric} ({unit})")
    lines = {}
    indices = sorted({0, len(b.candidates) - 1, *(b.sized.full if b.sized else ())})
    for i in indices:
        series = series_of(b.full_run(i))
        if series and all(isinstance(v, (int, float)) for v in map(_number, series["figures"])):
            points = [(_number(x), f / scale) for x, f in series["figures"].items()
                      if f is not None]
            mode = " (runtime)" if series["fallback"] else ""
            lines[f"jax {b.candidates[i].version}{mode}"] = points
    if len(lines) < 2:
        return None
    return {"series": lines, "title": f"{q.metric} of {q.label} against {q.over[0]}",
            "x_label": q.over[0], "y_label": y}


def _number(text: str):
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(text)
    return text


def chart(b: MetricBisection, doc: dict) -> str | None:
    """A mermaid chart of the metric's median per probed release (GitHub renders it); a
    shape's: its series at the ends and the pair, a line each, and the PNG beside it."""
    q = b.request.question
    if q.over:
        drawn = shape_chart(b)
        return chart_markdown(**drawn) if drawn else None
    points = [(p["jax"], p["figure"]["median"]) for p in by_release(doc)
              if "median" in p["figure"]]
    if len(points) < 2:
        return None
    unit = doc["metric"]["unit"] or ""
    scale, label = (1024**2, "MB") if unit == "bytes" else (1, unit or q.metric)
    values = [v / scale for _, v in points]
    top = max(values) * 1.1 or 1.0
    return "\n".join([
        "```mermaid", "xychart-beta", f'    title "{q.metric} of {q.label} by jax release"',
        f'    x-axis [{", ".join(chr(34) + r + chr(34) for r, _ in points)}]',
        f'    y-axis "{q.metric} ({label})" 0 --> {top:.6g}',
        f'    bar [{", ".join(f"{v:.6g}" for v in values)}]', "```"])


def attribution_lines(a: dict, came_with: str | None = None) -> list[str]:
    """JAX, XLA's HLO passes, or below HLO, and the commits either side (the XLA range and
    the hand-off below it only where ``--commits`` did not find a jax commit)."""
    lines = ["## Where the change is", "", a["text"][0].upper() + a["text"][1:] + ".", ""]
    links = a.get("links") or {}
    if links.get("xla_compare"):
        count = (f" ({a['xla_commit_count']} commits)" if a.get("xla_commit_count") is not None
                 else "")
        lines += [f"XLA commits: {links['xla_compare']}{count}", ""]
    elif a.get("xla_note"):
        lines += [a["xla_note"] + ".", ""]
    if came_with == "jax":
        lines += ["Below the release: the first bad jax commit is named above (*jax commits*); "
                  "the XLA range and the hand-off below it are not needed.", ""]
    else:
        lines += render_xla_range(a)
        if a.get("xla_culprit_commits"):
            lines += render_culprit_commits(a["xla_culprit_commits"])
    commits = a.get("commits") or {}
    shown = [f"jax {c['jax']}: {c['commit'] or c['ref']} ({c['source']})"
             for c in (commits.get("old"), commits.get("new")) if c and c.get("jax")]
    if shown:
        lines += ["JAX commits of the wheels: " + "; ".join(shown) + ".", ""]
    if a.get("diff"):
        lines += details("The lowered modules, where they differ", a["diff"], "diff")
    elif a.get("optimized_hlo") == "differs" and a.get("first_difference"):
        lines += details("XLA's optimized HLO (normalised: metadata, source locations and names "
                         "set aside), its first real difference", a["first_difference"], "diff")
    return lines


def evidence_lines(b: MetricBisection, evidence: dict) -> list[str]:
    """The buffers at the peak of a memory case (evidence/collect.py), and the command that
    remakes one release's dump."""
    q = b.searched
    params = dict(sorted(evidence["params"].items()))
    argv = ["python", "-m", "repro.dumps", "--case", display_path(q.case.path),
            *(f"--param={k}={v}" for k, v in params.items()),
            *(["--target", q.target] if q.target else ["--backend", b.request.backend]),
            *([f"--xla-flags={q.xla_flags}"] if q.xla_flags else []), "--json"]
    # Without the toolkit: the same compile with XLA's dump on, in the Reproduce section's
    # environments, from the case file's folder.
    keywords = ", ".join(f"{k}={json.dumps(v) if isinstance(v, str) else repr(v)}"
                         for k, v in params.items())  # double quotes: no shell escapes
    code = (f"import {Path(q.case.path).stem} as c; fn, args = c.case({keywords}); "
            f"fn.lower(*args).compile()")
    flags = [f"{q.xla_flags} --xla_dump_to=dump-{r.version} --xla_dump_hlo_as_text".strip()
             for r in b.pair]
    plain = [f"XLA_FLAGS={shlex.quote(f)} venv-{r.version}/bin/python -c {shlex.quote(code)}"
             for f, r in zip(flags, b.pair)]
    return [render_buffers_markdown(evidence, shlex.join(argv), plain)]


def render(b: MetricBisection, extra: dict | None = None, doc: dict | None = None) -> str:
    """The markdown report, read from its document (``b``'s, with ``extra``, where not
    given); ``b`` gives the question as asked (the case, its label and program) and the
    commands that ask it again."""
    doc = doc or document(b, None, extra)
    q, search = b.request.question, doc["search"]
    title = (f"# {q.label}: {q.metric} across jax {doc['from']} … {doc['to']} "
             f"({doc['measured']})")
    parts = [title, "", answer_line(b, doc), ""]
    for entry in doc.get("xla_flags_known", ()):
        parts += [known_line(entry), ""]
    first, last = doc["measured_part"]
    for part in doc["needs_a_gpu"]:
        parts += [f"**Measured part: jax {first} … {last}.** jax {part['from']} … "
                  f"{part['to']} needs a real GPU: `{part['command']}`", ""]
    for line in (thirds_line(b, doc), raised_line(b, doc), crash_line(b, doc),
                 yanked_line(b, doc)):
        if line:
            parts += [line, ""]
    if doc["status"] == "found":
        parts += [f"Compare: {doc['compare']}", ""]
    if doc.get("interior"):
        parts += ["## The releases inside", "",
                  "The ends agree, so bisection probes nothing between them; each release "
                  "inside was measured too and placed against both ends as the search places "
                  "a probe (`old`: as the ends; `cannot tell`: not placed within its runs), "
                  f"about {doc['interior_check']['estimate']:.0f} s by the ends' own run times, "
                  f"within the interior budget of {doc['interior_check']['budget']:.0f} s "
                  "(`--interior-budget`).",
                  "", table(["jax", "behaviour", doc["metric"]["name"], "why"],
                            [[r["jax"], r["label"], said(doc, r["figure"]), r["reason"] or ""]
                             for r in doc["interior"]]), ""]
    if "sweep" in doc:
        parts += ["A change made and undone inside the range cannot be seen by bisection: "
                  "to measure every release in it:", "", "```sh", doc["sweep"], "```", ""]
    if doc.get("next_step"):
        step = doc["next_step"]
        parts += ["## Next step", "", f"The newest release installable here is jax "
                  f"{step['newest']}; to look further:", "", "```sh", step["command"], "```",
                  ""]
    shaped = {k: v for k, v in q.case.resolve(q.params).items()
              if not q.over or k != q.over[0]} if q.case else {}
    how = (f"Each row: {q.metric} of `{q.label}`"
           + (f" at each {q.over[0]} and its shape over them (the case's own classifier where "
              f"it has one, repro/verdict.py's relative one otherwise)" if q.over else "")
           + (f" with {', '.join(f'{k}={v!r}' for k, v in shaped.items())}" if q.case else "")
           + ("; beside it, at the ends and the pair, " + ", ".join(
               f"{label} ({params_text(p)})" for label, p in q.case.compare.items())
              if q.case and q.case.compare else "")
           + (", the median of one figure a run (a run: one process; its figure: the 25th "
              "percentile of its calls), with their spread" if q.noisy else "")
           + (f"; XLA_FLAGS `{q.xla_flags}`" if q.xla_flags else "") + ".")
    if doc["ends"]:
        how += f" The ends: {doc['ends']['reason']}."
    if doc["calibration"]:
        how += f" Calibration: {calibration_text(doc['calibration'])}."
    if q.noisy and doc["status"] == "found":
        how += (" Each release between the ends was measured in rounds beside a fresh run of "
                "each end (old, it, new, one after the other) and placed from the ratios within "
                "its rounds.")
    headers, rows = probe_rows(b, doc)
    candidates = search["candidates"]
    parts += [f"## Releases probed ({search['probes']} of {candidates} candidates)", "",
              how, "", table(headers, rows), "",
              f"Search: {search['probes']} probes ({search['remeasures']} re-measured), at "
              f"most {search['limit']['probes']} for {candidates} candidates when none is "
              f"skipped; {search['runs']} runs in all."
              + (f" Up to {search['jobs']} releases probed at once (--jobs), in rounds: "
                 + "; ".join(", ".join(r) for r in search["rounds"]) + "."
                 if search["jobs"] > 1 and b.search.result else "")
              + (f" The {doc['search_size']['note']}." if doc["search_size"] else ""), ""]
    if doc.get("chart"):  # the PNG beside the report (write_report)
        parts += [f"![{q.metric} of {q.label} by jax release]({doc['chart']})", ""]
    drawn = chart(b, doc)
    if drawn:
        parts += [drawn, ""]
    skipped = [p for p in by_release(doc) if p["label"] not in ("old", "new")
               and p["jax"] not in doc["third_behaviour"]]
    if skipped or b.unusable:
        parts += ["Skipped or left out:", ""]
        parts += [f"- jax {p['jax']}: {skip_reason(p)}" for p in skipped]
        parts += [f"- {which}: not installable here ({why})"
                  for which, why in grouped_reasons(b.unusable)]
        parts.append("")
    if q.case is not None:
        parts += ["## The program", "",
                  *details(f"{display_path(q.case.path)} (sha256 {q.case.sha256[:12]})",
                           [q.case.source.rstrip()], "python")]
    saved = ([f"(Save the program above, in *The program*, as `{display_path(q.case.path)}` "
              f"in the toolkit's clone first: it is not part of the toolkit.)", ""]
             if q.case is not None and not inside_clone(q.case.path) else [])
    if "/" in q.target and not inside_clone(q.target):  # a spec file of the user's travels
        saved += details(f"{display_path(q.target)}: the target spec (save it beside the "
                         f"program)", [Path(q.target).read_text(encoding="utf-8").rstrip()],
                         "text")
    parts += ["## Reproduce", "", "With this toolkit (a JAX release-bisection toolkit; its "
              "README's Quick start installs it):", "", *saved, "```sh", doc["reproduce"],
              "```", ""]
    parts += standalone_lines(b)
    from .commit_report import commits_lines, pair_heading

    sections = {  # the document's optional parts, in the report's order
        "commits": lambda _: commits_lines(doc, b),
        "commits_by_pair": lambda parts: [line for part in parts for line in commits_lines(
            {**doc, "commits": part}, b, heading=pair_heading(part))],
        "attribution": lambda a: attribution_lines(a, (doc.get("commits") or {})
                                                   .get("came_with")),
        "evidence": lambda e: evidence_lines(b, e),
        "minimal": lambda m: [minimal_markdown(m, m.get("case_path", ""))],
        "explanation": lambda e: why_lines(e, q.metric, doc["metric"]["unit"] or ""),
        "try_xla_flags": lambda tried: tried_lines(tried, b),
        "interrupted": lambda why: [f"_{why[0].upper()}{why[1:]}._", ""]}
    for key, lines in sections.items():
        if doc.get(key):
            parts += lines(doc[key])
    if b.time_limit is not None:
        parts += [f"Time limit of a run: {b.time_limit.seconds:.0f} s ({b.time_limit.why}).",
                  ""]
    if doc.get("cluster"):  # where the runs ran, when not here (executors.py)
        parts += [cluster_markdown(doc["cluster"])]
    parts += packages_lines(doc["probes"])
    parts += machine_lines()
    return "\n".join(parts)


def packages_lines(probes: list[dict]) -> list[str]:
    """Every package recorded in each probed release's environment (its date-resolved set)."""
    installed = sorted(((p["jax"], p["installed"]) for p in probes if p.get("installed")),
                       key=lambda jp: Version(jp[0]))
    names = sorted({n for _, packages in installed for n in packages} - {"jax"})
    if not names:
        return []
    rows = [[jax, *(packages.get(n, "") for n in names)] for jax, packages in installed]
    return details("Packages installed in each probed environment (resolved as of each "
                   "release's date)", [table(["jax", *names], rows)])


def machine_lines() -> list[str]:
    return details("Environment of the probing machine", [machine_description(dated=True)],
                   "text")


def tried_lines(tried: list[dict], b: MetricBisection) -> list[str]:
    """``--try-xla-flags``: each set of flags under the first new release, and whether it
    brings the old behaviour back."""
    rows = [[f"`{t['xla_flags']}`", _figure_cell(b.request.question.metric, unit_of(b),
                                                  t["figure"]) if t["figure"] is not None
             else t["error"] or "", t["behaviour"], "yes ✅" if t["restores"] else "no"]
            for t in tried]
    sized = params_text(b.searched.params) if b.sized else ""
    return [f"## XLA flags tried under jax {tried[0]['release']} (--try-xla-flags)", "",
            f"Measured as the search measured its probes{f' ({sized})' if sized else ''}, "
            f"placed by the bisection's classifier:", "",
            table(["XLA_FLAGS", b.request.question.metric, "behaviour", "old behaviour back"],
                  rows), ""]


def params_text(params: dict) -> str:
    return ", ".join(f"{k} {', '.join(map(str, v)) if isinstance(v, tuple) else v}"
                     for k, v in params.items())


def _figure_cell(metric: str, unit: str, value) -> str:
    """One measured value (a number, a shape's [word, rate], an error line) as a figure."""
    return figure_text(metric, unit, figure(metric, () if value is None else (value,)))


def workaround_lines(workarounds: list[dict], metric: str, unit: str) -> list[str]:
    """Every flag setting that brought the old figure back, one a line: the flag, the
    release, the figure, and whether (and how) the reverse was tested."""
    lines = []
    for w in workarounds:
        line = ("- **Workaround:** " if w.get("safe", True) else
                "- **Diagnostic only** (correctness depends on this pass; never a fix): ")
        line += (f"`{w['xla_flags']}` under jax {w['release']} "
                 + (f"gives the fixed {metric} before the fix" if w.get("brings") == "new"
                    else f"brings back the old {metric}"))
        if w.get("figure") is not None:
            line += f" ({_figure_cell(metric, unit, w['figure'])})"
        reverse = w.get("reverse")
        if reverse:
            if reverse.get("tested"):
                line += (f"; the reverse, `{reverse['xla_flags']}` under jax "
                         f"{reverse['release']}, gives the {reverse['behaviour']} behaviour")
                if reverse.get("figure") is not None:
                    line += f" ({_figure_cell(metric, unit, reverse['figure'])})"
            else:
                line += (f"; the reverse (`{reverse.get('xla_flags', '?')}` under jax "
                         f"{reverse['release']}) could not be tested: "
                         f"{reverse.get('error') or 'it gave no figure'}")
        lines.append(line + ".")
    return lines + ([""] if lines else [])


def test_table(tests: list[dict], metric: str, unit: str, summary: str) -> list[str]:
    rows = [[t["release"], f"`{t['xla_flags']}`", t["behaviour"],
             _figure_cell(metric, unit, t.get("figure")),
             (t.get("finding") or t.get("error") or "")[:160]] for t in tests]
    return details(summary, [table(["jax", "XLA_FLAGS", "behaviour", metric, "note"], rows)])


def why_lines(explanation: dict, metric: str, unit: str) -> list[str]:
    """The "Why" section from the explanation's document: what the flag and pass searches
    said, every workaround they measured, and a table of every setting measured."""
    culprit = explanation["culprit"]
    flags = culprit.get("flags") if culprit.get("flags") is not None else (
        culprit if "flag_defaults_changed" in culprit or culprit.get("kind") == "workaround"
        else None)
    passes = culprit if flags is not culprit else None
    said = [c["text"] for c in (flags, passes) if c and c.get("text")]
    lines = ["## Why", "", " ".join(t[0].upper() + t[1:].rstrip(".") + "." for t in said), ""]
    workarounds = [w for c in (flags, passes) if c for w in c.get("workarounds") or []]
    lines += workaround_lines(workarounds, metric, unit)
    budget = explanation.get("budget") or {}
    if budget.get("exhausted"):
        lines += [f"The explanation's budget ({budget['seconds']:.0f} s, --explain-budget) was "
                  f"spent: what it did not reach is marked not tested.", ""]
    if flags and flags.get("tests"):
        lines += test_table(flags["tests"], metric, unit, "Every flag setting measured")
    if passes and passes.get("tests"):
        lines += test_table(passes["tests"], metric, unit, "Every HLO pass turned off")
    first = (passes or {}).get("first_difference") or {}
    if first.get("status") == "differ" and first.get("diff"):
        files = {side: first.get(f"{side}_file") or "" for side in ("old", "new")}
        after = [f"jax {first[side]} after `{name.split('.after_')[1].split('.before_')[0]}`"
                 for side, name in files.items() if ".after_" in name]
        lines += details(f"Where the modules of jax {first['old']} and {first['new']} first "
                         f"differ, pass by pass ({'; '.join(after)}; numbering removed)"
                         + (" (cut short)" if first.get("diff_truncated") else ""),
                         first["diff"], "diff")
    return lines


def standalone_lines(b: MetricBisection) -> list[str]:
    """Plain ``pip install`` and ``python`` lines for the ends (or the pair found)."""
    q, s = b.request.question, b.search
    releases = ([b.pair[0], b.pair[1]] if s.status == "found"
                else [b.candidates[0], b.candidates[-1]])
    index = {str(c.version): i for i, c in enumerate(b.candidates)}
    # A GPU's answer (a compile-only target's plan, or cuda12) is checked on that GPU, with
    # jax's CUDA 12 wheels; the question's XLA_FLAGS go with every run.
    gpu = b.request.backend != "cpu"
    gpu_name = where(b).removeprefix("compiled for ").removesuffix(", without the GPU")
    on = (f" on a machine with the GPU ({gpu_name})" if q.target
          else " on a machine with an NVIDIA GPU" if gpu else "")
    flags = f"XLA_FLAGS={shlex.quote(q.xla_flags)} " if q.xla_flags else ""
    lines = [f"Without it{on}, in a fresh virtual environment per release (Python "
             f"{'3.12' if any(r.version >= PY312_FROM for r in releases) else '3.11'}):", "",
             "```sh"]
    for release in releases:
        placed = s.placed.get(index[str(release.version)])
        jaxlib = jaxlib_of(release, placed) if placed else str(release.jaxlib)
        venv = f"venv-{release.version}"
        run = (f"{flags}{venv}/bin/python measure.py" if q.case is not None
               else f". {venv}/bin/activate && {flags}{shlex.join(q.command)}")
        wheels = (shlex.quote(f"jax[cuda12]=={release.version}") if gpu
                  else f"jax=={release.version} jaxlib=={jaxlib}")
        lines += [f"python3 -m venv {venv} && {venv}/bin/pip install {wheels}", run]
    lines += ["```", ""]
    script = standalone_script(b)
    if script:
        lines += details(f"measure.py: the program and the lines that measure {q.metric}",
                         [script.rstrip()], "python")
    lines += ["(Old releases may need the packages of their day: the toolkit resolves each "
              "environment as of its release's date, e.g. `uv pip install --exclude-newer "
              "DATE`.)", ""]
    return lines


def document(b: MetricBisection, report_path: Path | None, extra: dict | None = None) -> dict:
    req, q, s = b.request, b.request.question, b.search
    probes = []
    for index, placed in s.placed.items():
        release = b.candidates[index]
        p = placed.placement
        # A release the search never placed (an end of a range without an answer) is
        # measured, or without a figure, never a skip.
        unplaced = "measured" if placed.values else "no figure"
        probes.append({
            "jax": str(release.version), "jaxlib": jaxlib_of(release, placed),
            "label": p.label.value if p else unplaced,
            "confidence": p.confidence if p else None,
            "third": bool(p and p.third), "reason": p.reason if p else None,
            "runs": [{"number": r.number, "status": r.status, "error": r.error,
                      "samples": list(r.samples), "cached": r.cached, "seconds": r.seconds,
                      "crash": r.crash, "crash_rate": r.crash_rate,
                      **({"ran_on": r.ran_on} if r.ran_on else {})}
                     # Each run once: a release that hung is asked again by the search,
                     # and answered with its one hung run (budgets.EndsTimer).
                     for r in {r.number: r for r in placed.runs}.values()],
            "figure": figure(q.metric, seen(q, placed)), "cached": placed.cached,
            "classified": [v if isinstance(v, (int, float, str)) else None
                           for v in placed.values],
            "rounds": [list(r) for r in placed.rounds],
            "installed": next((r.installed for r in placed.runs if r.installed), {}),
            **({"series": series_of(b.full_run(index)),
                "compare": {label: series_of(run) for label, run in
                            ((b.sized.compare if b.sized else {}).get(index) or {}).items()}}
               if q.over else {})})
    pair = b.pair
    doc = {
        "schema": SCHEMA, "kind": "metric", "from": req.start, "to": req.end,
        "backend": req.backend, "target": q.target or None, "measured": where(b),
        "status": s.status, "direction": b.direction,
        "calibration": s.calibration,
        "exact": bool(s.result and s.result.exact and s.status == "found"
                      and not left_out_between(b)),
        "reason": s.reason,
        "metric": {"name": q.metric, "unit": unit_of(b) or None,
                   "kind": "noisy" if q.noisy else "deterministic",
                   "threshold": req.threshold},
        "case": ({**q.case.as_json(q.params), "path": display_path(q.case.path),
                  "source": q.case.source} if q.case else None),
        "command": list(q.command) or None,
        "xla_flags": q.xla_flags,
        "over": {"name": q.over[0], "values": list(q.over[1])} if q.over else None,
        "search_size": ({"params": b.searched.params, "agreed": b.sized.agreed,
                         "over": list(b.searched.over[1]) if b.searched.over else None,
                         "note": b.sized.note} if b.sized and b.sized.note else None),
        "ends": ({"distinct": s.ends.distinct, "direction": s.ends.direction,
                  "ratio": s.ends.ratio, "reason": s.ends.reason} if s.ends else None),
        "last_old": ({"jax": str(pair[0].version),
                      "jaxlib": jaxlib_of(pair[0], s.placed[s.result.last_old])} if pair else None),
        "first_new": ({"jax": str(pair[1].version),
                       "jaxlib": jaxlib_of(pair[1], s.placed[s.result.first_new])}
                      if pair else None),
        "third_behaviour": [str(b.candidates[i].version) for i in s.thirds],
        "crashes": crashed_releases(b),
        "yanked": yanked_entries(b.yanked, b.candidates,
                                 {str(b.candidates[i].version) for i in s.placed}),
        "crash_hint": crash_hint(b),
        "raised": raised_releases(b),
        "probes": probes,
        "measured_part": [str(b.candidates[0].version), str(b.candidates[-1].version)],
        "needs_a_gpu": needs_a_gpu(b),
        "search": {"probes": len(s.placed), "remeasures": s.remeasures, "runs": s.runs,
                   "max_runs": s.max_runs,
                   "limit": {"probes": b.limit[0], "rounds": b.limit[1]},
                   "order": [str(b.candidates[i].version) for i in s.placed],
                   # The releases of each round, probed at once where a round has several.
                   "rounds": [[str(b.candidates[i].version) for i in r]
                              for r in (s.result.rounds if s.result else ())],
                   "jobs": b.request.jobs, "candidates": len(b.candidates),
                   # Each probe's time span (seconds since the search began) and the probes
                   # that were measured at the same time.
                   "spans": {str(b.candidates[i].version): list(span)
                             for i, span in sorted(s.spans.items())},
                   "overlapped": [[str(b.candidates[i].version), str(b.candidates[j].version)]
                                  for i, j in s.overlapped()]},
        "skipped": [{"jax": str(rel.version), "reason": f"not installable here: {why}"}
                    for rel, why in b.unusable],
        "reproduce": shlex.join(reproduce_argv(b, minimize=bool((extra or {}).get("minimal")))),
        "time_limit": ({**b.time_limit.as_json(), "explicit": req.timeout is not None}
                       if b.time_limit else None),
        "report": str(report_path) if report_path else None,
    }
    doc.update(interior_document(b))
    if s.status == "alike" and not (b.interior and b.interior.measured):
        doc["sweep"] = shlex.join(sweep_argv(b))
    if pair:
        doc["compare"] = JAX_COMPARE.format(old=pair[0].version, new=pair[1].version)
    if b.commits is not None:
        from .commit_report import commits_document

        doc.update(schema=SCHEMA_WITH_COMMITS, commits=commits_document(b.commits, b))
    if b.commits_by_pair:
        from .commit_report import commits_by_pair_document

        doc.update(schema=SCHEMA_WITH_COMMITS,
                   commits_by_pair=commits_by_pair_document(b.commits_by_pair, b))
    doc.update(extra or {})
    return doc


def interior_document(b: MetricBisection) -> dict:
    """Ends alike: ``interior`` (each release measured inside: ``{jax, label, figure}``, with
    the reason and runs) and ``interior_check`` (the budget, the estimate from the ends' own
    run times, whether it was measured, the changes' pairs and their words)."""
    inside = b.interior
    if inside is None:
        return {}
    names = [str(c.version) for c in b.candidates]
    q = b.request.question
    rows = [{"jax": names[i], "label": inside.labels[i],
             "figure": figure(q.metric, seen(q, inside.placed[i])),
             "reason": inside.placed[i].placement.reason if inside.placed[i].placement else None,
             "runs": len(inside.placed[i].runs),
             "rounds": [list(r) for r in inside.placed[i].rounds]}
            for i in inside.indices if i in inside.placed]
    unit = unit_of(b)

    def said_at(i: int) -> str:
        return figure_text(q.metric, unit, figure(q.metric, seen(q, inside.placed[i])))

    if not inside.measured and inside.budget <= 0:
        text = (f"The {len(inside.indices)} releases inside were not measured "
                f"(`--interior-budget 0`: off)")
    elif not inside.measured:
        text = (f"The {len(inside.indices)} releases inside were not measured: about "
                f"{inside.estimate:.0f} s from the ends' own run times, over the interior "
                f"budget of {inside.budget:.0f} s (`--interior-budget`)")
    elif inside.changes:
        text = changes_text(names, inside.changes, said_at)
    else:
        unplaced = [names[i] for i in inside.indices if inside.labels[i] == CANNOT_TELL]
        text = (f"Every release inside (jax {', '.join(names[i] for i in inside.indices)}) "
                f"was measured too" + (f"; jax {', '.join(unplaced)} could not be told "
                                       f"(cannot tell), every other one behaves as the ends"
                                       if unplaced else " and behaves as the ends"))
    changes = [{"came": [names[c.came[0]], names[c.came[1]]],
                "went": [names[c.went[0]], names[c.went[1]]],
                "releases": [names[k] for k in c.releases], "exact": c.exact}
               for c in inside.changes]
    return {"interior": rows,
            "interior_check": {"releases": [names[i] for i in inside.indices],
                               "measured": inside.measured,
                               "budget": inside.budget,
                               "estimate": round(inside.estimate, 1),
                               "per_release": round(inside.per_release, 2),
                               "changes": changes, "text": text}}


def report_path(b: MetricBisection, folder: Path) -> Path:
    return folder / f"{report_stem(b)}.md"


def report_stem(b: MetricBisection) -> str:
    """``bisect-A-B-where-case-metric``, plus a digest of the other options that shape the
    answer where any are set."""
    req, q = b.request, b.request.question
    place = target_label(q.target) or req.backend  # a spec file: its stem and content digest
    name = q.case.name if q.case else "command"
    stem = f"bisect-{req.start}-{req.end}-{place}-{name}-{q.metric}"
    shaping = {"params": q.params, "xla_flags": q.xla_flags, "samples": q.samples,
               "kind": q.kind, "threshold": req.threshold, "runs": req.runs,
               "max_runs": req.max_runs,
               "command": list(q.command)}
    if req.include_yanked:  # only where set: reports of earlier runs keep their names
        shaping["include_yanked"] = True
    if q.case and q.over != q.case.over:  # another shape than the case's own, or one figure
        shaping["over"] = over_text(q.over)
    if req.interior_budget != INTERIOR_BUDGET:  # only where set, as --include-yanked
        shaping["interior_budget"] = req.interior_budget
    if req.try_xla_flags:  # a report with the flags' section beside the plain one
        shaping["try_xla_flags"] = list(req.try_xla_flags)
    if req.commits:  # a report with the commits' section beside the plain one
        shaping["commits"] = True
    if q.kind != "auto" or any(value for key, value in shaping.items() if key != "kind"):
        stem += "-" + digest(shaping)
    return stem


def digest(shaping: dict) -> str:
    """A report name's digest of the options that shape its answer."""
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()[:8]


def write_report(b: MetricBisection, folder: Path, extra: dict | None = None
                 ) -> tuple[Path, dict]:
    md_path = report_path(b, folder)
    doc = document(b, md_path, extra)
    if b.search.status in ("unmeasurable", "undecided") \
            and has_answer(md_path.with_suffix(".json")):
        doc["report_kept"] = ("an earlier run's report holds an answer and this run found "
                              "none: it was left as it was")
        return md_path, doc
    drawn = shape_chart(b) if b.request.question.over else None
    if drawn is not None:  # matplotlib where present (an earlier picture kept otherwise)
        png = write_png(path=md_path.with_suffix(".png"), **drawn)
        if png is not None:
            doc["chart"] = png.name
    elif md_path.with_suffix(".png").exists():  # an earlier run's picture this one does not show
        md_path.with_suffix(".png").unlink()
    write_text_if_changed(md_path, render(b, doc=doc))
    write_json_if_changed(md_path.with_suffix(".json"), doc)
    return md_path, doc


def explain_argv(release: Release, backend: str, question, *, threshold=None,
                 runs=None) -> list[str]:
    """The command that asks ``--explain`` the same question."""
    return bisect_argv({"explain": str(release.version), **question_values(question, backend),
                        "threshold": threshold, "runs": runs})


def write_explain_report(folder: Path, release: Release, backend: str, question,
                         explanation: dict, *, threshold=None, runs=None) -> tuple[Path, dict]:
    """``explain-RELEASE-where-case-metric[-digest]``: the passes behind a case's figure."""
    place = target_label(question.target) or backend
    stem = f"explain-{release.version}-{place}-{question.case.name}-{question.metric}"
    shaping = {"params": question.params, "xla_flags": question.xla_flags,
               "samples": question.samples, "kind": question.kind if question.kind != "auto"
               else None, "threshold": threshold, "runs": runs}
    if any(shaping.values()):
        stem += "-" + digest(shaping)
    path = folder / f"{stem}.md"
    unit = UNITS[question.metric]
    command = shlex.join(explain_argv(release, backend, question, threshold=threshold,
                                      runs=runs))
    doc = {"schema": SCHEMA, "kind": "metric-explain", "explain": str(release.version),
           "backend": backend, "target": question.target or None,
           "metric": {"name": question.metric, "unit": unit},
           "case": {**question.case.as_json(question.params),
                    "path": display_path(question.case.path), "source": question.case.source},
           "explanation": explanation, "reproduce": command, "report": str(path)}
    def cell(t: dict) -> str:  # a shape's word, and its figures at each value where known
        word = _figure_cell(question.metric, unit, t["figure"])
        series = t.get("series") or {}
        if not series or None in series.values():
            return word
        figures = " / ".join(shown(question.metric, unit, v).removesuffix(" MB")
                             for v in series.values())
        return (f"{word} ({figures}{' MB' if unit == 'bytes' else ''} at {question.over[0]} "
                f"{' / '.join(series)})")

    rows = [[t["xla_flags"].split("=", 1)[1], cell(t),
             f"{t['ratio']:.2f}×" if t["ratio"] else "",
             {"fix": "lower", "regression": "higher", "changed": "different"}.get(
                 t["direction"], "the same") if t.get("verdict") in ("changed", "same")
             else t.get("verdict", "")] for t in explanation["tests"]]
    ways = [f"- jax {w['release']} with `XLA_FLAGS=\"{w['xla_flags']}\"`: "
            + _figure_cell(question.metric, unit, w["figure"])
            + ("" if w["safe"] else " (diagnostic only: correctness depends on this pass; "
                                    "never a fix)") for w in explanation.get("workarounds", [])]
    base = explanation["baseline"]
    text = "\n".join([
        f"# {question.case.name}: which HLO passes shape its {question.metric} under jax "
        f"{release.version} ({place})", "", explanation["culprit"]["text"] + ".", "",
        f"Baseline: {_figure_cell(question.metric, unit, base)}"
        + (f" ({params_text(question.params)})" if question.params else "") + ".", "",
        *(["Ways around it found by this search:", "", *ways, ""] if ways else []),
        *details("Every pass turned off", [
            table(["pass turned off", question.metric, "ratio to the baseline",
                   "against the baseline"], rows)
            if rows else "_No pass was turned off._"]),
        "## The program", "", *details(display_path(question.case.path),
                                       [question.case.source.rstrip()], "python"),
        "## Reproduce", "", "```sh", command, "```", "", *machine_lines()])
    write_text_if_changed(path, text)
    write_json_if_changed(path.with_suffix(".json"), doc)
    return path, doc
