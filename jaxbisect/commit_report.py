"""``--commits``' part of a bisection's report: the jax commit that changed the answer, or
the measured finding that the change came with the newer jaxlib (docs/commits.md).

``commits_document`` is the JSON's ``commits`` part (docs/schema.md); ``commits_lines`` its
markdown section and ``commits_headline`` its sentence in the answer, both read from it.
"""

from __future__ import annotations

import shlex

from .bisection import CommitBisection, MetricBisection
from .report import details, figure, figure_text, seen, table

# What each verdict of jax's Python says of the HLO rule's culprit (evidence/where.py).
AGREES = {"jax": ("jax",), "jaxlib": ("xla", "below-hlo", "jaxlib")}
SUBJECT_WIDTH = 72


def _commit(c, **more) -> dict | None:
    return {**c.as_json(), **more} if c is not None else None


def commits_document(cb: CommitBisection, b: MetricBisection) -> dict:
    """The ``commits`` part: what was searched, each step, what was skipped and the answer."""
    old, new = cb.pair or b.pair or (None, None)
    doc = {"status": cb.status, "came_with": cb.came_with, "reason": cb.reason or cb.unseen,
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
               new_jaxlib=str(new.jaxlib))
    if cb.search is None:
        return doc
    s, q = cb.search.search, b.searched
    # Alike ends are both the older release's behaviour, not "old" and "new".
    as_release = dict(zip((0, len(cb.search.candidates) - 1), cb.ends_as_releases))
    steps = []
    for index, placed in s.placed.items():
        commit = cb.search.candidates[index].commit
        failure = placed.failure
        p = placed.placement
        steps.append({"index": index, "sha": commit.sha, "subject": commit.subject,
                      "date": commit.date,
                      "jax": str(cb.search.candidates[index].version),
                      "label": as_release.get(index) or (p.label.value if p else "measured"),
                      "reason": p.reason if p else None,
                      "figure": figure(q.metric, seen(q, placed)),
                      "error": failure.error if failure and not placed.values else None,
                      "runs": len(placed.runs), "cached": placed.cached,
                      "seconds": round(sum(r.seconds for r in placed.runs), 2)})
    doc.update(steps=steps, reason=cb.reason or cb.unseen or s.reason,
               skipped=[{"sha": st["sha"], "subject": st["subject"],
                         "why": st["error"] or st["reason"]}
                        for st in steps if st["label"] == "skip"],
               search={"probes": len(s.placed), "runs": s.runs, "remeasures": s.remeasures,
                       "limit": {"probes": cb.search.limit[0], "rounds": cb.search.limit[1]},
                       "time_limit": (cb.search.time_limit.as_json()
                                      if cb.search.time_limit else None)},
               ends_as_releases=list(cb.ends_as_releases))
    if cb.status == "found":
        r = s.result
        first = cb.first_bad
        doc.update(exact=r.exact,
                   last_good=_commit(cb.last_good),
                   first_bad=_commit(first, files=span.files(first),
                                     side_commits=[_commit(c) for c in span.side_commits(first)]),
                   between=[_commit(cb.commit_at(i))
                            for i in range(r.last_old + 1, r.first_new)])
    doc["reproduce"] = reproduce_lines(doc, b)
    return doc


def short(c: dict) -> str:
    return c["sha"][:10]


def linked(c: dict) -> str:
    pr = f" ([#{c['pr']}]({c['pr_url']}))" if c.get("pr") else ""
    return f"[`{short(c)}`]({c['url']}) {c['subject'][:SUBJECT_WIDTH]}{pr}"


def commits_headline(doc: dict) -> str | None:
    """The answer's sentence about the commits, or None where none were asked for."""
    c = doc.get("commits")
    if not c:
        return None
    if c["came_with"] == "jax":
        first = c["first_bad"]
        where = ("" if c["exact"] else
                 f" (or one of the {len(c['between'])} commits before it that could not run)")
        merged = first.get("side_commits") or []
        what = ("merging " + ", ".join(f"{short(x)} “{x['subject']}” by {x['author']}"
                                       for x in merged[:3])
                + (f" and {len(merged) - 3} more" if len(merged) > 3 else "")
                if merged else f"by {first['author']}")
        last = c["last_good"]
        ends = c.get("ends_as_releases") or []
        third = (f" The last commit on jaxlib {c['runs_on']['jaxlib']} behaves as neither "
                 f"release (the release search's classifier says {ends[1]}): a third "
                 f"behaviour there." if len(ends) == 2 and ends[1] != "new" else "")
        return (f"**First bad commit: {linked(first)}**{where}, {what}, {first['date'][:10]}; "
                f"the commit before it on jax's first-parent history, {short(last)}, behaves "
                f"as jax {c['old']} (both on jaxlib {c['runs_on']['jaxlib']}).{third}")
    if c["came_with"] == "jaxlib":
        return (f"**It came with jaxlib {c['new_jaxlib']}, not jax's Python:** jax's Python "
                f"at {short(c['new_end'])}, the last commit before jax {c['new']} that runs on "
                f"jaxlib {c['runs_on']['jaxlib']}, behaves as jax {c['old']} there.")
    return f"**Commits: cannot tell** ({c['reason'] or c['status']})."


def commits_by_pair_document(parts, b: MetricBisection) -> list[dict]:
    """``commits_by_pair``: the ``commits`` part of each pair the answer names, with the pair
    and what happened there (came, went, fix)."""
    return [{"pair": [str(r.version) for r in cb.pair], "kind": cb.kind,
             **commits_document(cb, b)} for cb in parts]


def pair_heading(part: dict) -> str:
    """A pair's section title: where the change came (went, was fixed)."""
    return (f"## jax commits where it {part['kind']}: jax {part['pair'][0]} → "
            f"{part['pair'][1]}")


def commits_lines(doc: dict, b: MetricBisection, heading: str = "## jax commits") -> list[str]:
    """The report's section on the commits (``doc["commits"]``: one pair's part)."""
    c = doc["commits"]
    lines = [heading, "", commits_headline(doc), ""]
    if c.get("from_tag") is None:
        return lines
    unit = doc["metric"]["unit"] or ""
    lines += [f"Searched: the {c['candidates']} commits from {c['from_tag']} "
              f"({short(c['old_end'])}) along jax's first-parent history to "
              f"{short(c['new_end'])}, the last that runs on jaxlib {c['runs_on']['jaxlib']}, "
              f"each as jax's Python of that commit on jax {c['runs_on']['jax']}'s environment "
              f"(a merge is one step: the state main was in; the commits inside it are listed "
              f"where it is the first bad one)."
              + (f" {c['search']['probes']} probes, {c['search']['runs']} runs, at most "
                 f"{c['search']['limit']['probes']} when none is skipped." if c.get("search")
                 else ""), ""]
    comparison = agreement(doc)
    if comparison:
        lines += [comparison, ""]
    if c["steps"]:
        rows = [[short(st), st["date"][:10], st["subject"][:SUBJECT_WIDTH],
                 st["error"] or figure_text(doc["metric"]["name"], unit, st["figure"]),
                 st["label"]] for st in sorted(c["steps"], key=lambda st: st["index"])]
        lines += [table(["commit", "date", "subject", doc["metric"]["name"], "label"], rows), ""]
    first = c.get("first_bad")
    if first:
        lines += [f"First bad commit: {first['url']}" + (f", pull request {first['pr_url']}"
                                                         if first.get("pr_url") else ""),
                  f"Its parent (last good): {c['last_good']['url']}", ""]
        if first["files"]:
            lines += details(f"the {len(first['files'])} files it touched", first["files"],
                             "text")
        if first["side_commits"]:
            lines += details(f"the {len(first['side_commits'])} commits the merge brought in",
                             [f"{short(x)} {x['subject']} ({x['author']}, {x['date'][:10]})"
                              for x in first["side_commits"]],
                             "text")
        if c["between"]:
            lines += [f"Not placed between them ({len(c['between'])}: they could not run):", "",
                      *[f"- {linked(x)}" for x in c["between"]], ""]
    if c["skipped"]:
        lines += ["Skipped (as `git bisect run`'s exit 125: never read as a behaviour):", "",
                  *[f"- `{x['sha'][:10]}` {x['subject'][:SUBJECT_WIDTH]}: {x['why']}"
                    for x in c["skipped"]], ""]
    need = len(c["need_new"])
    lines += [f"Not seen by this search: the {need} commit{'' if need == 1 else 's'} after "
              f"{short(c['new_end'])} need{'s' if need == 1 else ''} jaxlib {c['new_jaxlib']} "
              f"(jax {c['new']}'s release preparation raised the minimum; where {c['to_tag']} "
              f"sits on a release branch, its commits there too), and jax code gated on the "
              f"jaxlib version takes jaxlib {c['runs_on']['jaxlib']}'s path throughout.", ""]
    if c["need_new"]:
        lines += details("the commits that need the newer jaxlib",
                         [f"{short(x)} {x['subject']}" for x in c["need_new"]], "text")
    if c.get("reproduce"):
        lines += ["Reproduce without the toolkit (the program as `measure.py`, in *Reproduce* "
                  "above):", "", "```sh", *c["reproduce"], "```", ""]
    return lines


def agreement(doc: dict) -> str | None:
    """The commit search's finding beside the HLO rule's, where both were made."""
    culprit = (doc.get("attribution") or {}).get("culprit")
    came_with = doc["commits"]["came_with"]
    if culprit is None or came_with is None:
        return None
    if culprit not in AGREES["jax"] + AGREES["jaxlib"]:
        return (f"The HLO rule could not tell ({culprit}: the modules could not be compared); "
                f"the commit search measured that it came with "
                f"{'a jax commit' if came_with == 'jax' else 'the newer jaxlib'}.")
    if culprit in AGREES[came_with]:
        return (f"This agrees with the HLO rule's attribution ({culprit}), now measured: "
                f"jax's Python {'did' if came_with == 'jax' else 'did not'} change it.")
    return (f"The HLO rule's attribution says {culprit}; the commit search measured that it "
            f"came with {'a jax commit' if came_with == 'jax' else 'the newer jaxlib'}. Both "
            f"are stated: the rule reads the modules, the search runs jax's Python.")


def reproduce_lines(c: dict, b: MetricBisection) -> list[str]:
    """Plain git, pip and python lines that show the two commits the answer rests on."""
    if c["came_with"] == "jax":
        pair = [(c["last_good"], "old"), (c["first_bad"], "new")]
    elif c["came_with"] == "jaxlib":
        pair = [(c["old_end"], "old"), (c["new_end"], "old too")]
    else:
        return []
    old = c["runs_on"]
    venv = f"venv-{old['jax']}"
    q = b.request.question
    flags = f"XLA_FLAGS={shlex.quote(q.xla_flags)} " if q.xla_flags else ""
    jax = "jax[cuda12]" if b.request.backend == "cuda12" else "jax"
    run = (f"(. {venv}/bin/activate && PYTHONPATH=$PWD/jax-src {flags}"
           f"{shlex.join(q.command)})" if q.command
           else f"PYTHONPATH=$PWD/jax-src {flags}{venv}/bin/python measure.py")
    lines = ["git clone https://github.com/jax-ml/jax jax-src",
             f"python3 -m venv {venv} && {venv}/bin/pip install '{jax}=={old['jax']}' "
             f"jaxlib=={old['jaxlib']}"]
    for commit, expect in pair:
        lines.append(f"git -C jax-src checkout -q {commit['sha']} && {run}   # {expect}")
    return lines
