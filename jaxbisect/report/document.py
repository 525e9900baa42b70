"""A metric bisection's JSON document (docs/schema.md) and the files of its report: the
document is the source, its markdown is what ``markdown.render`` makes of it (``--render``
remakes it from the document alone)."""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import replace
from pathlib import Path

from jaxbisect.errors import UserError
from jaxbisect.evidence.hlo_bundle import ROLES, rerender_readme
from jaxbisect.files import display_path, inside_clone, write_atomic, write_json_if_changed
from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.harness import target_label
from jaxbisect.lab.machine import machine_description
from jaxbisect.report.chart import write_png
from jaxbisect.report.commands import explain_argv, reproduce_argv, sweep_argv
from jaxbisect.report.commits import commits_by_pair_document, commits_document
from jaxbisect.report.figures import figure, figure_text, placed_fields, seen
from jaxbisect.report.installs import venv_python
from jaxbisect.report.markdown import KINDS, render
from jaxbisect.report.markdown.tables import shape_chart
from jaxbisect.report.markdown.words import pair_words
from jaxbisect.search.budgets import INTERIOR_BUDGET
from jaxbisect.search.classify import DEFAULT_THRESHOLD
from jaxbisect.search.comparing import OUTPUT_TOLERANCE, output_atol
from jaxbisect.search.interior import changes_text
from jaxbisect.search.metric_search import crashes_of
from jaxbisect.search.placing import AgainstEnds, Placed
from jaxbisect.search.question import over_text, series_of
from jaxbisect.search.rounds import Status
from jaxbisect.stages.releases import MetricBisection
from repro.case import UNITS
from repro.target import load as load_target
from repro.target import plan_words

# 2: the scan report is the scan case's metric bisection (docs/schema.md maps schema 1's
# fields to these).
SCHEMA = 2
# 3: schema 2 with the parts it lacks (``commits``); a document without them stays schema 2,
# so that every report written before them reads, and is rewritten, as it was.
SCHEMA_WITH_COMMITS = 3
JAX_COMPARE = "https://github.com/jax-ml/jax/compare/jax-v{old}...jax-v{new}"
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
        status = json.loads(json_path.read_text(encoding="utf-8"))["status"]
        return status in (Status.FOUND, Status.ALIKE)
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
    device = req.backend.device_backend().name
    on_gpu = replace(b, request=replace(req, backend=device, question=replace(q, target="")))
    parts = [(req.start, first)] if req.start != first else []
    parts += [(last, req.end)] if req.end != last else []
    return [{"from": lo, "to": hi, "command": shlex.join(reproduce_argv(on_gpu, lo, hi, at=at))}
            for lo, hi in parts]


def where(b: MetricBisection) -> str:
    q = b.request.question
    if q.target:
        doc = next((r.document for _, p in b.probes for r in p.runs if r.document), None)
        described = (doc or {}).get("target") or {}
        if not described.get("description"):  # no run described it: the target's own words
            return load_target(q.target).plan_words
        return plan_words(described)
    return b.request.backend


def jaxlib_of(release: Release, placed: Placed) -> str:
    for run in placed.runs:
        if run.document:
            return run.document.get("jaxlib") or "?"
        if run.installed.get("jaxlib"):
            return run.installed["jaxlib"]
    return str(release.jaxlib or "?")


def unit_of(b: MetricBisection) -> str:
    q = b.request.question
    return "" if q.command else UNITS[q.metric]


def skipped_reason(why: str) -> str:
    """Why a release was left out: one that needs a real GPU to compile installs fine and
    is only not measured here; any other could not be installed."""
    if why.startswith("needs a real GPU"):  # cuda12.NEEDS_A_GPU
        return f"not measured here: {why}"
    return f"not installable here: {why}"


def left_out_between(b: MetricBisection) -> list[str]:
    """The releases left out (not installable here: a target's that need a real GPU) that
    lie between the pair: the change may be in one of them."""
    if b.pair is None:
        return []
    old, new = b.pair
    return [str(r.version) for r, _ in sorted(b.unusable, key=lambda u: u[0].version)
            if old.version < r.version < new.version and not r.yanked]


def raised_releases(b: MetricBisection) -> list[dict]:
    """Each probed release where the program raised, with its error, under a metric other
    than ``error``."""
    if b.request.question.metric == "error":
        return []
    raised = ((i, next((r for r in p.runs if r.status == "raised"), None))
              for i, p in sorted(b.search.placed.items()))
    return [{"jax": str(b.candidates[i].version), "error": run.error or "an error"}
            for i, run in raised if run is not None]


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


def document(b: MetricBisection, report_path: Path | None, extra: dict | None = None,
             commits: tuple = ()) -> dict:
    """The JSON document of a bisection over releases, with ``commits``: the bisections one
    level down (commit_bisection.CommitBisection), one a pair the answer names."""
    req, q, s = b.request, b.request.question, b.search
    probes = []
    for index, placed in s.placed.items():
        release = b.candidates[index]
        probes.append({
            "jax": str(release.version), "jaxlib": jaxlib_of(release, placed),
            **placed_fields(q, placed),
            "runs": [{"number": r.number, "status": r.status, "error": r.error,
                      "samples": list(r.samples), "cached": r.cached, "seconds": r.seconds,
                      "crash": r.crash, "crash_rate": r.crash_rate,
                      **({"ran_on": r.ran_on} if r.ran_on else {})}
                     # Each run once: a release that hung is asked again by the search,
                     # and answered with its one hung run (budgets.EndsTimer).
                     for r in {r.number: r for r in placed.runs}.values()],
            "installed": next((r.installed for r in placed.runs if r.installed), {}),
            # the Python its environment ran (the harness's own record of it)
            "python": next((r.document["python"] for r in placed.runs
                            if (r.document or {}).get("python")), None),
            **({"series": series_of(b.full_run(index)),
                "compare": {label: series_of(run) for label, run in
                            ((b.sized.compare if b.sized else {}).get(index) or {}).items()}}
               if q.over else {})})
    pair = b.pair
    doc = {
        "schema": SCHEMA, "kind": "metric", "from": req.start, "to": req.end,
        "backend": req.backend, "target": q.target or None, "measured": where(b),
        "status": b.status, "direction": b.direction,
        "everywhere_error": b.everywhere_error.as_json() if b.status == Status.FAILS_EVERYWHERE
        else None,
        "calibration": s.calibration,
        "exact": bool(s.result and s.result.exact and s.status == Status.FOUND
                      and not left_out_between(b)),
        "reason": s.reason,
        # the error bisected (--error-match, a case's ERROR), where one was named
        **({"error_match": q.error_match} if q.error_match else {}),
        "metric": {"name": q.metric, "unit": unit_of(b) or None,
                   "kind": "noisy" if q.noisy else "deterministic",
                   "threshold": req.threshold, **tolerance_of(q, req.threshold)},
        "label": q.label,
        "case": ({**q.case.as_json(q.params), "path": display_path(q.case.path),
                  "source": q.case.source, "compare": q.case.compare,
                  "shipped": inside_clone(q.case.path)} if q.case else None),
        "command": list(q.command) or None,
        "xla_flags": q.xla_flags,
        "over": {"name": q.over[0], "values": list(q.over[1])} if q.over else None,
        "search_size": ({"metric": b.searched.metric, "params": b.searched.params,
                         "agreed": b.sized.agreed,
                         # the end without compiled statistics, where the search measured a
                         # run's peak at every release
                         **({"instead_of": {"jax": str(b.sized.fallback["jax"]),
                                            "reason": b.sized.fallback.get("reason")}}
                            if b.sized.fallback else {}),
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
        **({"nondeterministic_releases": [p["jax"] for p in probes if p.get("nondeterministic")]}
           if any(p.get("nondeterministic") for p in probes) else {}),
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
        "skipped": [{"jax": str(rel.version), "reason": skipped_reason(why)}
                    for rel, why in b.unusable],
        "reproduce": shlex.join(reproduce_argv(b, minimize=bool((extra or {}).get("minimal")))),
        "time_limit": ({**b.time_limit.as_json(), "explicit": req.timeout is not None}
                       if b.time_limit else None),
        "report": str(report_path) if report_path else None,
    }
    doc.update(interior_document(b), machine=machine_description())
    doc.update(shown_apart(b, doc))
    if s.status == Status.ALIKE and not (b.interior and b.interior.measured):
        doc["sweep"] = shlex.join(sweep_argv(b))
    if pair:
        doc["compare"] = JAX_COMPARE.format(old=pair[0].version, new=pair[1].version)
    if len(commits) == 1:  # one pair below the answer (or none to search, and why)
        doc.update(schema=SCHEMA_WITH_COMMITS, commits=commits_document(commits[0], b))
    elif commits:  # every pair the answer names: where it came, where it went
        doc.update(schema=SCHEMA_WITH_COMMITS,
                   commits_by_pair=commits_by_pair_document(commits, b))
    doc.update(extra or {})
    if not (doc.get("reproducer") or {}).get("program"):
        # the page's plain program where there is no standalone one: written here, with the
        # record, so the page shows the text the record holds (never run: no output)
        from jaxbisect.report.markdown.reproduce import standalone_script

        script = standalone_script(doc)
        if script:
            doc["measure_program"] = {"file": "measure.py", "program": script, "run": False}
    return doc


def typed_at(b: MetricBisection, doc: dict, at: Path) -> dict:
    """The document with the commands beside its answer as they run typed in folder ``at``
    (the terminal's: the folder the user stands in)."""
    return {**doc, **shown_apart(b, doc, at), "needs_a_gpu": needs_a_gpu(b, at),
            "crash_hint": crash_hint(b, at) if doc["crash_hint"] else None}


def shown_apart(b: MetricBisection, doc: dict, at: Path | None = None) -> dict:
    """What the markdown shows that the rest of the document does not say: the releases
    between the pair that could not be placed or measured, the commands beside the answer
    (by the error; with the yanked releases), a user's target spec."""
    req, q, r = b.request, b.request.question, b.search.result
    out = {}
    if doc["status"] == Status.FOUND and not r.exact:
        out["unplaced_between"] = [str(c.version)
                                   for c in b.candidates[r.last_old + 1:r.first_new]]
    if left_out_between(b):
        out["left_out_between"] = left_out_between(b)
    if doc["raised"]:
        argv = reproduce_argv(b, at=at)
        argv[argv.index("--metric") + 1] = "error"
        out["raised_hint"] = shlex.join(argv)
    if doc["yanked"] and not all(y["candidate"] for y in doc["yanked"]):
        asked = replace(b, request=replace(req, include_yanked=True))
        out["yanked_hint"] = shlex.join(reproduce_argv(asked, at=at))
    if "/" in q.target and not inside_clone(q.target):  # a spec file of the user's travels
        out["target_spec"] = {"name": display_path(q.target),
                              "text": Path(q.target).read_text(encoding="utf-8")}
    return out


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
             "rounds": [list(r) for r in inside.placed[i].rounds],
             "installed": next((r.installed for r in inside.placed[i].runs if r.installed), {})}
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
        unplaced = [names[i] for i in inside.indices if inside.labels[i] == AgainstEnds.CANNOT_TELL]
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


def as_stored(doc: dict) -> dict:
    """``doc`` as its JSON file holds it (keys sorted, tuples as lists): the markdown is
    rendered from what is stored, so ``--render`` of the JSON gives the same file."""
    return json.loads(json.dumps(doc, sort_keys=True))


def write_report(b: MetricBisection, folder: Path, extra: dict | None = None,
                 commits: tuple = ()) -> tuple[Path, dict]:
    md_path = report_path(b, folder)
    doc = document(b, md_path, extra, commits)
    if b.search.status in (Status.UNMEASURABLE, Status.UNDECIDED) \
            and has_answer(md_path.with_suffix(".json")):
        doc["report_kept"] = ("an earlier run's report holds an answer and this run found "
                              "none: it was left as it was")
        return md_path, doc
    drawn = shape_chart(doc)
    if drawn is not None:  # an artefact beside the report, never linked from it (matplotlib
        png = write_png(path=md_path.with_suffix(".png"), **drawn)  # where present)
        if png is not None:
            doc["chart"] = png.name
    elif md_path.with_suffix(".png").exists():  # an earlier run's picture of another answer
        md_path.with_suffix(".png").unlink()
    json_path = md_path.with_suffix(".json")
    # The markdown renders the JSON as it stays on disk: where only volatile parts changed the
    # stored document is kept, and its rendering with it (``--render`` gives the same file).
    stored = as_stored(doc) if write_json_if_changed(json_path, doc) else \
        json.loads(json_path.read_text(encoding="utf-8"))
    write_rendered(md_path, render(stored))
    rerender_readme(json_path, stored, bundle_roles(stored),  # the bundle's, in the same words
                    bundle_pythons(stored))
    return md_path, doc


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
           "explanation": explanation, "reproduce": command, "report": str(path),
           "place": place, "over": ({"name": question.over[0], "values": list(question.over[1])}
                                    if question.over else None),
           "machine": machine_description()}
    json_path = path.with_suffix(".json")
    stored = as_stored(doc) if write_json_if_changed(json_path, doc) else \
        json.loads(json_path.read_text(encoding="utf-8"))
    write_rendered(path, render(stored))
    return path, doc


def rerender(json_path: Path) -> Path:
    """``--render``: the markdown beside a report's JSON document, remade from the document
    alone with this renderer; a file that is not one is a UserError."""
    try:
        doc = json.loads(json_path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(f"--render: cannot read {json_path}: {exc.strerror or exc}") from None
    except ValueError:
        raise UserError(f"--render: {json_path} is not JSON") from None
    if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
        raise UserError(f"--render: {json_path} is not a bisection's or an explanation's "
                        f"document (its kind: {doc.get('kind') if isinstance(doc, dict) else '?'})")
    if doc.get("schema") not in (SCHEMA, SCHEMA_WITH_COMMITS):
        raise UserError(f"--render: {json_path} has schema {doc.get('schema')!r}; this toolkit "
                        f"renders schemas {SCHEMA} and {SCHEMA_WITH_COMMITS}")
    md_path = json_path.with_suffix(".md")
    try:
        text = render(doc)
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
        raise UserError(f"--render: {json_path} lacks a part its schema has ({exc!r})") from None
    write_rendered(md_path, text)
    rerender_readme(json_path, doc, bundle_roles(doc), bundle_pythons(doc))
    return md_path


def tolerance_of(q, threshold: float | None) -> dict:
    """What two figures of a deterministic metric were the same within (``--threshold``, else
    the classifier's default): an output's relative and absolute tolerance, another figure's
    share; nothing for a noisy metric (a test) or an error (equality)."""
    if q.noisy or q.over or q.metric in ("error", "exit_code"):
        return {}
    if q.metric == "output":
        rtol = threshold or OUTPUT_TOLERANCE
        return {"tolerance": {"relative": rtol, "absolute": output_atol(rtol)}}
    return {"tolerance": {"relative": threshold or DEFAULT_THRESHOLD}}


def bundle_pythons(doc: dict) -> dict[str, str]:
    """Each measured release's interpreter for the bundle's venv lines, as its record says."""
    return {p["jax"]: venv_python(p["jax"], doc) for p in doc.get("probes") or ()}


def bundle_roles(doc: dict) -> tuple[str, str]:
    """The HLO bundle's words for the pair: the report's, by the answer's direction."""
    found = doc.get("status") == Status.FOUND and doc.get("last_old") and doc.get("first_new")
    return pair_words(doc) if found and (doc.get("hlo_module") or {}).get("bundle") else ROLES


def write_rendered(md_path: Path, text: str) -> None:
    """The markdown of a stored document, written where it differs at all: it is that
    document's rendering, volatile lines included (a rerun leaves both as they were)."""
    if not md_path.is_file() or md_path.read_text(encoding="utf-8") != text:
        write_atomic(md_path, text)
