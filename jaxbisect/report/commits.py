"""``--commits``' part of a bisection's document: the jax commit that changed the answer, or
the measured finding that the change came with the newer jaxlib (docs/commits.md).

``commits_document`` is the JSON's ``commits`` part (docs/schema.md); markdown/commits.py
renders it.
"""

from __future__ import annotations

import shlex

from jaxbisect.files import display_path
from jaxbisect.report.figures import figure, placed_fields, seen
from jaxbisect.report.installs import venv_python
from jaxbisect.search.classify import Label
from jaxbisect.search.placing import AgainstEnds
from jaxbisect.search.rounds import Status
from jaxbisect.stages.commits import CameWith, CommitBisection
from jaxbisect.stages.program import FILE as PROGRAM_FILE
from jaxbisect.stages.program import why_not
from jaxbisect.stages.releases import MetricBisection


def _commit(c, **more) -> dict | None:
    return {**c.as_json(), **more} if c is not None else None


def commits_document(cb: CommitBisection, b: MetricBisection) -> dict:
    """The ``commits`` part: what was searched, each step, what was skipped and the answer."""
    old, new = cb.pair or b.pair or (None, None)
    doc = {"status": cb.status, "came_with": cb.came_with, "reason": cb.why_not,
           "old": str(old.version) if old else None, "new": str(new.version) if new else None,
           "first_bad": None, "last_good": None, "exact": False, "candidates": 0,
           "steps": [], "skipped": [], "need_new": [], "between": []}
    span = cb.span
    if span is None:
        return doc
    doc.update(from_tag=span.old_tag, to_tag=span.new_tag,
               runs_on={"jax": str(old.version), "jaxlib": span.jaxlib},
               old_end=_commit(span.candidates[0]), new_end=_commit(span.candidates[-1]),
               candidates=len(span.candidates),
               need_new=[_commit(c, why=c.refused) for c in span.need_new],
               new_jaxlib=str(new.jaxlib), old_jaxlib=span.jaxlib)
    if cb.search is None:
        return doc
    s = cb.search.search
    steps = _steps(cb.search, b, cb.ends_as_releases, {"jax": str(old.version),
                                                        "jaxlib": span.jaxlib})
    newer = cb.newer
    if newer is not None and newer.search is not None:
        steps += _steps(newer.search, b, newer.labels, {"jax": str(new.version),
                                                          "jaxlib": newer.jaxlib})
    doc.update(steps=steps, reason=cb.why_not or s.reason,
               skipped=[{"sha": st["sha"], "subject": st["subject"],
                         "why": st["error"] or st["reason"], "runs_on": st["runs_on"]}
                        for st in steps if st["label"] == Label.SKIP and not st.get("third")],
               search={"probes": len(s.placed), "runs": s.runs, "remeasures": s.remeasures,
                       "limit": {"probes": cb.search.limit[0], "rounds": cb.search.limit[1]},
                       "time_limit": (cb.search.time_limit.as_json()
                                      if cb.search.time_limit else None)},
               ends_as_releases=list(cb.ends_as_releases))
    thirds = [st["sha"] for st in steps if st.get("third")]
    if thirds:  # like neither end (a hang under a timing metric): the release rows' word
        doc["third_behaviour"] = thirds
    for part, side in ((cb.search, "older"), (newer.search if newer else None, "newer")):
        if part is not None and part.interior is not None:
            doc.setdefault("inside", {})[side] = inside_document(part, b.searched)
    if newer is not None:
        doc["newer"] = {"jaxlib": newer.jaxlib, "came_with": newer.came_with,
                        "reason": newer.why_not, "start": newer.start,
                        "ends_as_releases": list(newer.labels),
                        "probes": len(newer.search.search.placed) if newer.search else 0,
                        "runs": newer.search.search.runs if newer.search else 0}
    if cb.came_with == CameWith.BOTH:
        d = cb.deciding
        r = d.search.result
        first = cb.first_bad
        doc.update(exact=r.exact, last_good=_commit(cb.last_good),
                   first_bad=_commit(first, files=span.files(first),
                                     side_commits=[_commit(c) for c in span.side_commits(first)],
                                     **({"reverts": reverts}
                                        if (reverts := span.reverted(first)) else {})),
                   jaxlib_gate=span.gate(first),
                   between=[_commit(d.candidates[i].commit)
                            for i in range(r.last_old + 1, r.first_new)])
    if cb.status == Status.FOUND:
        r = s.result
        first = cb.first_bad
        doc.update(exact=r.exact,
                   last_good=_commit(cb.last_good),
                   first_bad=_commit(first, files=span.files(first),
                                     side_commits=[_commit(c) for c in span.side_commits(first)],
                                     **({"reverts": reverts}
                                        if (reverts := span.reverted(first)) else {})),
                   between=[_commit(cb.commit_at(i))
                            for i in range(r.last_old + 1, r.first_new)])
    doc["reproduce"] = reproduce_lines(doc, b)
    return doc


def _steps(search, b: MetricBisection, labels: tuple, runs_on: dict) -> list[dict]:
    """Each commit a search placed, with the release its environment (jaxlib) is."""
    s, q = search.search, b.searched
    # Alike ends are both one release's behaviour, not "old" and "new".
    as_release = dict(zip((0, len(search.candidates) - 1), labels))
    steps = []
    for index, placed in s.placed.items():
        commit = search.candidates[index].commit
        failure = placed.failure
        fields = placed_fields(q, placed)  # as a release's row says them
        steps.append({"index": index, "sha": commit.sha, "subject": commit.subject,
                      "date": commit.date,
                      "jax": str(search.candidates[index].version), "runs_on": runs_on,
                      **fields, "label": as_release.get(index) or fields["label"],
                      "error": failure.error if failure and not placed.values else None,
                      "runs": len(placed.runs),
                      "seconds": round(sum(r.seconds for r in placed.runs), 2)})
    return steps


def inside_document(search: MetricBisection, q) -> dict:
    """Commit ends alike: the commits between them, looked at within ``--interior-budget``
    (as a bisection over releases looks inside alike ends) or not: each one measured (its
    label against the ends, its figure, its runs), the ones that could not be told, and where
    a change came and went among them."""
    inside = search.interior
    sha = [c.commit.sha for c in search.candidates]
    placed = {i: p for i, p in inside.placed.items() if i in inside.indices}
    return {"commits": len(inside.indices), "measured": inside.measured,
            "estimate": round(inside.estimate, 1), "budget": inside.budget,
            "rows": [{"sha": sha[i], "label": inside.labels[i],
                      "figure": figure(q.metric, seen(q, p)),
                      "reason": p.placement.reason if p.placement else None,
                      "runs": len(p.runs)} for i, p in sorted(placed.items())],
            "runs": sum(len(p.runs) for p in placed.values()),
            "cannot_tell": [sha[i] for i in inside.indices
                            if inside.labels.get(i) == AgainstEnds.CANNOT_TELL],
            "changes": [{"came": [sha[i] for i in c.came], "went": [sha[i] for i in c.went],
                         "exact": c.exact} for c in inside.changes]}


def commits_by_pair_document(parts, b: MetricBisection) -> list[dict]:
    """``commits_by_pair``: the ``commits`` part of each pair the answer names, with the pair
    and what happened there (came, went, fix)."""
    return [{"pair": [str(r.version) for r in cb.pair], "kind": cb.kind,
             **commits_document(cb, b)} for cb in parts]


def reproduce_lines(c: dict, b: MetricBisection) -> list[str]:
    """Plain git, pip and python lines that show the two commits the answer rests on."""
    if c["came_with"] in (CameWith.JAX, CameWith.BOTH):  # both: on the newer jaxlib
        pair = [(c["last_good"], "old"), (c["first_bad"], "new")]
    elif c["came_with"] == CameWith.JAXLIB:
        pair = [(c["old_end"], "old"), (c["new_end"], "old too")]
    else:
        return []
    old = (c["runs_on"] if c["came_with"] != CameWith.BOTH else  # it ran on the newer jaxlib
           {"jax": c["new"], "jaxlib": c["new_jaxlib"]})
    venv = f"venv-{old['jax']}"
    q = b.request.question
    flags = f"XLA_FLAGS={shlex.quote(q.xla_flags)} " if q.xla_flags else ""
    held = next((run.installed for i, c in enumerate(b.candidates) if str(c.version) ==
                 old["jax"] and b.placed_at(i) for run in b.placed_at(i).runs
                 if run.installed), None)
    if q.command:
        run = (f"(. {venv}/bin/activate && PYTHONPATH=$PWD/jax-src {flags}"
               f"{shlex.join(q.command)})")
    elif why_not(q.metric, case=q.case, target=q.target) is None:
        # The standalone program the report writes (and its page runs): its flags are its own.
        run = f"PYTHONPATH=$PWD/jax-src {venv}/bin/python {PROGRAM_FILE}"
    else:  # no plain program: the toolkit's harness on the case, from this checkout
        argv = [a for a in q.harness_argv() if a != "--json"]
        if "--case" in argv and q.case is not None:
            argv[argv.index("--case") + 1] = display_path(q.case.path)
        run = f"PYTHONPATH=$PWD/jax-src:$PWD {venv}/bin/python -m repro {shlex.join(argv)}"
    lines = ["git clone https://github.com/jax-ml/jax jax-src",
             f"{venv_python(old['jax'])} -m venv {venv} && {venv}/bin/pip install "
             f"{b.request.backend.pip_words(old['jax'], old['jaxlib'], held)}"]
    for commit, expect in pair:
        lines.append(f"git -C jax-src checkout -q {commit['sha']} && {run}   # {expect}")
    return lines
