"""``--commits``' part of the markdown: the first bad jax commit or the jaxlib it came with,
its line in the first screen and its section (each step, the skips, the commits not seen)."""

from __future__ import annotations

import re

from jaxbisect.report.figures import figure_text
from jaxbisect.report.installs import pip_install, venv_python
from jaxbisect.report.markdown import tpu
from jaxbisect.report.markdown.reproduce import shown_program
from jaxbisect.report.markdown.words import cut, details, linked, short, subject, table, unit

# What each verdict of jax's Python says of the HLO rule's culprit (evidence/where.py).
AGREES = {"jax": ("jax",), "jaxlib": ("xla", "below-hlo", "jaxlib"),
          "both": ("jax", "xla", "below-hlo", "jaxlib")}
CAME_WITH_WORDS = {"jax": "a jax commit", "jaxlib": "the newer jaxlib",
                   "both": "a jax commit on the newer jaxlib"}


# A part's two commits (the parent, the commit named) in the words of what happened there:
# where a change went, the parent still shows it.
PARENT_WORDS = {"came": ("last good", "first bad"), "went": ("the last that still shows it",
                                                             "the first without it"),
                "fix": ("last bad", "fixed")}
# The commit a part names, in the words of what happened there: where an error came, where
# it went again (the first commit without it), where a fix undid a regression.
FIRST_WORDS = {"came": "First bad commit", "went": "Gone with commit", "fix": "Fixed by commit"}


def commits_measured(n: int) -> str:
    """``2 commits measured``: a search's count said as what it counts."""
    return f"{n} commit{'s' if n != 1 else ''} measured"


def parts(doc: dict) -> list[tuple[list[str] | None, dict]]:
    """Each commits part with the pair it searched: one, or one a pair (``commits_by_pair``)."""
    if doc.get("commits_by_pair"):
        return [(p.get("pair"), p) for p in doc["commits_by_pair"]]
    return [(None, doc["commits"])] if doc.get("commits") else []


def revert_words(first: dict) -> str:
    """A revert's change: what it removes (or re-lands) and that change's pull request."""
    r = first.get("reverts")
    if not r:
        return ""
    pr = f", PR [#{r['pr']}](https://github.com/jax-ml/jax/pull/{r['pr']})" if r.get("pr") else ""
    again = "re-lands" if r.get("relands") else "reverts"
    return f"; it {again} [`{r['sha'][:10]}`](https://github.com/jax-ml/jax/commit/{r['sha']}) " \
           f"“{cut(r.get('subject') or '', 80)}”{pr}"


def compare_link(doc: dict) -> str:
    """The XLA range on the first screen, its commits by the 10 characters a commit is shown
    by (GitHub's compare page takes them so; the whole link is under *Where the change is*)."""
    xla = ((doc.get("attribution") or {}).get("links") or {}).get("xla_compare")
    return "; XLA: " + SHA.sub(r"\1", xla) if xla else ""


SHA = re.compile(r"\b([0-9a-f]{10})[0-9a-f]{30}\b")  # a whole commit's first 10 of 40


def first_line(doc: dict, c: dict, pair: list[str] | None) -> str:
    """One commits part in the first screen."""
    # The kind is in the line's words ("First bad commit", "Gone with commit"): the pair only.
    at = f" ({pair[0]} → {pair[1]})" if pair else ""
    # The attribution's XLA range is the answer's pair's: a pair inside alike ends has none.
    xla = "" if pair else compare_link(doc)
    if c["came_with"] == "jax" and c.get("first_bad"):
        first = c["first_bad"]
        where = "" if c["exact"] else f" (or {counted(len(c['between']), 'commit')} before it)"
        return (f"- **{FIRST_WORDS.get(c.get('kind'), FIRST_WORDS['came'])}{at}:** "
                f"{linked(first, brief=True)}{where}{revert_words(first)}")
    if c["came_with"] == "both":
        first = c.get("first_bad")
        gate = f" (gate: `{c['jaxlib_gate']}`)" if c.get("jaxlib_gate") else ""
        commit = f"jax commit {linked(first, brief=True)}" if first else "a jax commit"
        return (f"- **Needs both{at}:** jaxlib {c['new_jaxlib']} and {commit}{gate}"
                f"{xla}")
    if c["came_with"] == "jaxlib":
        newer = c.get("newer") or {}
        if newer.get("came_with") == "jaxlib" and c.get("steps"):
            # both halves: what each jaxlib's end commits gave, and what was not measured
            inside = c.get("inside") or {}
            unseen = [(side.get("commits") or 0, jaxlib) for side, jaxlib in (
                (inside.get("older") or {}, c["runs_on"]["jaxlib"]),
                (inside.get("newer") or {}, newer["jaxlib"])) if not side.get("measured")]
            unseen = [(n, j) for n, j in unseen if n]
            said = ("" if not unseen else
                    f"; {unseen[0][0]} and {unseen[1][0]} between them unmeasured"
                    if len(unseen) == 2 else
                    f"; {unseen[0][0]} between them on {unseen[0][1]} unmeasured")
            return (f"- **Came with jaxlib {c['new_jaxlib']}{at}**, not jax's Python (on jaxlib "
                    f"{c['runs_on']['jaxlib']} the end commits behave as jax {c['old']}, on "
                    f"{newer['jaxlib']} as jax {c['new']}{said}){xla}")
        return (f"- **Came with jaxlib {c['new_jaxlib']}{at}**, not jax's Python (on jaxlib "
                f"{c['runs_on']['jaxlib']} commit `{short(c['new_end'])}` behaves as jax "
                f"{c['old']}){xla}")
    return f"- **Commits{at}: cannot tell** ({cut(c.get('reason') or c['status'], 160)})."


def newer_words(c: dict) -> str:
    """What the newer jaxlib's half measured, no more: every commit only where the commits
    between its ends were looked at, else its ends and the count left unseen."""
    newer = c["newer"]
    inside = (c.get("inside") or {}).get("newer") or {}
    if inside.get("measured") and not inside.get("changes"):
        return (f"; on jaxlib {newer['jaxlib']} every commit that runs there behaves as "
                f"jax {c['new']}")
    unseen = inside.get("commits")
    return (f"; the range's first and last jax commits that run on jaxlib {newer['jaxlib']} "
            f"both behave as jax {c['new']} there"
            + (f"; the {unseen} between them were not measured" if unseen else ""))


def commits_first_lines(doc: dict) -> list[str]:
    # A TPU target's swaps of the release's parts say more than the commits where the change
    # came with libtpu (the commits run jax's Python over each release's jaxlib and libtpu).
    if said := tpu.commits_words(doc):
        if tpu.first_screen_line(doc):  # the line above already says which part, and how
            said = said.split(" (the swaps")[0]
        return [f"- **jax commits:** {said}"]
    return [first_line(doc, c, pair) for pair, c in parts(doc)]


def headline(doc: dict, c: dict) -> str:
    """The section's sentence about the commits."""
    if c["came_with"] in ("jax", "both") and c.get("first_bad"):
        first = c["first_bad"]
        where = ("" if c["exact"] else
                 f" (or {counted(len(c['between']), 'commit')} before it that could not run)")
        merged = first.get("side_commits") or []
        what = ("merging " + ", ".join(f"{short(x)} “{x['subject']}” by {x['author']}"
                                       for x in merged[:3])
                + (f" and {len(merged) - 3} more" if len(merged) > 3 else "")
                if merged else f"by {first['author']}")
        last = c.get("last_good")
        on = c["new_jaxlib"] if c["came_with"] == "both" else c["runs_on"]["jaxlib"]
        before = (f"; the commit before it on jax's first-parent history, {short(last)}, "
                  f"behaves as jax {c['old']} (both on jaxlib {on})" if last else "")
        gate = ((f" It needs jaxlib {c['new_jaxlib']} too"
                 + (f" (jax's gate: `{c['jaxlib_gate']}`)" if c.get("jaxlib_gate") else "")
                 + f"; on jaxlib {c.get('old_jaxlib') or c['runs_on']['jaxlib']} every commit "
                 f"up to {short(c['new_end'])} behaves as jax {c['old']}.")
                if c["came_with"] == "both" else "")
        ends = c.get("ends_as_releases") or []
        third = (f" The last commit on jaxlib {c['runs_on']['jaxlib']} behaves as neither "
                 f"release (judged as the bisection judges a release, it is {ends[1]}): a third "
                 f"behaviour there." if len(ends) == 2 and ends[1] != "new" else "")
        words = FIRST_WORDS.get(c.get("kind"), FIRST_WORDS["came"])
        return (f"**{words}: {linked(first)}**{where}, {what}, {first['date'][:10]}"
                f"{revert_words(first)}{before}.{gate}{third}")
    if c["came_with"] == "jaxlib" and (libtpu := libtpu_first(doc)):
        newer = c.get("newer") or {}
        both_ways = newer_words(c) if newer else ""
        old = (doc.get("libtpu") or {}).get("old") or {}
        return (f"**No jax commit measured brings it (each measured one behaves as the "
                f"release whose jaxlib and libtpu it runs on): swapping libtpu between the "
                f"releases (*{tpu.SECTION}*, below) places the change in "
                f"libtpu {libtpu}.** "
                f"jax's Python at {short(c['new_end'])}, the last commit before jax {c['new']} "
                f"that runs on jax {c['old']}'s jaxlib {c['runs_on']['jaxlib']} and libtpu "
                f"{old.get('libtpu')}, behaves as jax {c['old']} there{both_ways}: the commits "
                f"change jax's Python only, each release's environment carrying its own jaxlib "
                f"and libtpu, so they cannot part jaxlib from libtpu; the swaps (jax "
                f"{old.get('jax')} and jaxlib {old.get('jaxlib')} held) can.")
    if c["came_with"] == "jaxlib":
        newer = c.get("newer") or {}
        both_ways = newer_words(c) if newer else ""
        return (f"**It came with jaxlib {c['new_jaxlib']}, not jax's Python:** jax's Python "
                f"at {short(c['new_end'])}, the last commit before jax {c['new']} that runs on "
                f"jaxlib {c['runs_on']['jaxlib']}, behaves as jax {c['old']} there"
                f"{both_ways}.")
    return f"**Commits: cannot tell** ({c['reason'] or c['status']})."


def libtpu_first(doc: dict) -> str | None:
    """The libtpu release the swaps placed the change in (the document's ``libtpu`` part), or
    None where they did not place it in libtpu."""
    part = doc.get("libtpu") or {}
    if part.get("part") != "came with libtpu":
        return None
    return (part.get("narrowed") or {}).get("first_new") or (part.get("new") or {}).get("libtpu")


def newer_lines(c: dict) -> list[str]:
    """The other half of the experiment: jax's Python of the range on the newer jaxlib."""
    newer = c.get("newer")
    if not newer:
        return []
    before = (f", from the first that behaves as either release (the {newer['start']} before "
              f"it fail or behave as neither)" if newer["start"] else "")
    inside = (c.get("inside") or {}).get("newer") or {}
    more = (f", then the {inside['commits']} between them" if inside.get("measured") else "")
    return [f"The second search, on jaxlib {newer['jaxlib']} (jax {c['new']}'s environment): "
            f"the commits of the range that pass jax's version check there{before}; "
            f"{commits_measured(newer['probes'])}{more}: "
            + (newer["reason"] or {"both": "the first bad commit above",
                                   "jaxlib": "every one behaves as the newer release"}
               .get(newer["came_with"], "")) + ".", ""]


# Where comparing the lowered modules placed a change (evidence/where.py's culprits), in words.
CULPRIT_WORDS = {"jax": "jax's lowering to StableHLO", "xla": "XLA (the modules are the same)",
                 "below-hlo": "XLA below its HLO passes", "jaxlib": "jaxlib"}


def agreement(doc: dict, c: dict) -> str | None:
    """The commit search's finding beside the HLO rule's, where both were made."""
    culprit = (doc.get("attribution") or {}).get("culprit")
    came_with = c["came_with"]
    if culprit is None or came_with not in AGREES:
        return None
    found = CAME_WITH_WORDS[came_with]
    why = (doc.get("attribution") or {}).get("reason") or "no reason was recorded"
    if came_with == "jaxlib" and (libtpu := libtpu_first(doc)):
        return (f"Among the jax commits it measured, the commit search found none that "
                f"brings it (each behaves as the release whose jaxlib and libtpu it runs on), "
                f"and swapping libtpu "
                f"between the two releases places the change in libtpu {libtpu}.")
    said = CULPRIT_WORDS.get(culprit, culprit)
    if culprit not in AGREES["jax"] + AGREES["jaxlib"]:
        return (f"Comparing the two releases' lowered modules could not place it (they could "
                f"not be compared: {why}); the commit search measured that it came with "
                f"{found}.")
    if culprit in AGREES[came_with]:
        return (f"This agrees with comparing the two releases' lowered modules, which placed "
                f"it in {said}; now measured: it came with {found}.")
    return (f"Comparing the two releases' lowered modules places it in {said}; the commit "
            f"search measured that it came with {found}. Both are stated: one reads the "
            f"modules, the other runs jax's Python.")


def branch_words(c: dict) -> str:
    """Where the old tag is dated after the new end: it sits on its release branch, and the
    search goes on along main from where that branch left it (the dates go back)."""
    # each day as the commit table shows it: the date its author's clock gave
    tagged, last = (str((c.get(k) or {}).get("date") or "")[:10] for k in ("old_end", "new_end"))
    if not (tagged and last and tagged > last):
        return ""
    return (f" {c['from_tag']} is tagged on its release branch ({tagged}), after "
            f"main had moved on: the commits after it are main's, from where that branch left "
            f"main up to {short(c['new_end'])} ({last}), so their dates run from "
            f"before the tag's.")


def part_lines(doc: dict, c: dict, pair: list[str] | None) -> list[str]:
    """One commits part's section."""
    title = f"## jax commits{f' ({pair[0]} → {pair[1]})' if pair else ''}"
    lines = [title, "", headline(doc, c), ""]
    if c.get("from_tag") is None:
        return lines
    lines += [f"The range searched: the {c['candidates']} commits from {c['from_tag']} "
              f"({short(c['old_end'])}) along jax's first-parent history to "
              f"{short(c['new_end'])}, the last that runs on jaxlib {c['runs_on']['jaxlib']}, "
              f"each as jax's Python of that commit on jax {c['runs_on']['jax']}'s environment "
              f"(a merge is one step: the state main was in; the commits inside it are listed "
              f"where it is the first bad one)." + branch_words(c)
              + (f" {commits_measured(c['search']['probes'])} (at most "
                 f"{c['search']['limit']['probes']} when none is skipped), "
                 f"{c['search']['runs']} runs in all"
                 + (": its two ends, which behave alike, so there was nothing to place "
                    "between them." if c["search"]["probes"] == 2 and not c.get("first_bad")
                    else ".") if c.get("search") else ""), ""]
    lines += newer_lines(c)
    comparison = agreement(doc, c)
    if comparison:
        lines += [comparison, ""]
    if c["steps"]:
        older = c.get("old_jaxlib", c["runs_on"]["jaxlib"])
        rows = [[short(st), st["date"][:10], subject(st["subject"]),
                 (st.get("runs_on") or c["runs_on"])["jaxlib"],
                 st["error"] or figure_text(doc["metric"]["name"], unit(doc), st["figure"]),
                 "third behaviour" if st.get("third") else st["label"]]
                for st in sorted(c["steps"], key=lambda st: (  # the older jaxlib's first
                    (st.get("runs_on") or c["runs_on"])["jaxlib"] != older, st["index"]))]
        inside = inside_rows(doc, c)
        rows += inside
        said = {row[-1] for row in inside}  # the labels of commits between alike end commits
        lines += details(f"Each commit measured ({len(rows)})", [
            f"label: `old` = behaves as jax {c['old']}, `new` = as jax {c['new']} (this "
            f"section's pair)"
            + ("".join(f"; `{w}`: a commit between two end commits that behave alike, "
                       f"{BETWEEN_MEANS[w]}" for w in sorted(said) if w in BETWEEN_MEANS))
            + ".", "",
            table(["commit", "date", "subject", "on jaxlib", doc["metric"]["name"], "label"],
                  rows)])
    first = c.get("first_bad")
    if first:
        words = FIRST_WORDS.get(c.get("kind"), FIRST_WORDS["came"])
        lines += [f"{words}: {first['url']}" + (f", pull request {first['pr_url']}"
                                                if first.get("pr_url") else ""),
                  *([f"Its parent ({PARENT_WORDS[c.get('kind') or 'came'][0]}): "
                     f"{c['last_good']['url']}"]
                    if c.get("last_good") else []), ""]
        if first.get("files"):
            lines += details(f"{counted(len(first['files']), 'file')} it touched", first["files"],
                             "text")
        if first.get("side_commits"):
            merged = counted(len(first["side_commits"]), "commit")
            lines += details(f"{merged} the merge brought in",
                             [f"{short(x)} {x['subject']} ({x['author']}, {x['date'][:10]})"
                              for x in first["side_commits"]], "text")
        if c["between"]:
            lines += [f"Not placed between them ({len(c['between'])}: they could not run):", "",
                      *[f"- {linked(x)}" for x in c["between"]], ""]
    thirds = [st for st in c["steps"] if st.get("third")]
    if thirds:  # a hang under a timing metric: beyond both ends, as a release's
        lines += ["A third behaviour, like neither end (left out of the search, not filed "
                  "under old or new):", "",
                  *[f"- `{st['sha'][:10]}` {subject(st['subject'])}: {st['reason']}"
                    for st in thirds], ""]
    lines += inside_lines(c)
    if c["skipped"]:
        lines += ["Skipped (as `git bisect run`'s exit 125: never read as a behaviour):", "",
                  *[f"- `{x['sha'][:10]}` {subject(x['subject'])}: {x['why']}"
                    for x in c["skipped"]], ""]
    need = len(c["need_new"])
    if c["came_with"] != "both" and need:
        older = c["runs_on"]["jaxlib"]
        newer_ran = bool((c.get("newer") or {}).get("probes"))
        lines += [f"Not seen on jaxlib {older}: the {need} commit{'' if need == 1 else 's'} "
                  f"after {short(c['new_end'])} need{'s' if need == 1 else ''} jaxlib "
                  f"{c['new_jaxlib']} (jax {c['new']}'s release preparation raised the minimum; "
                  f"so do the commits on {c['to_tag']}'s release branch, where it has one), and "
                  f"jax code gated on the jaxlib version takes jaxlib {older}'s path throughout"
                  + (f"; the second search above measures them on jaxlib {c['new_jaxlib']}."
                     if newer_ran else "."), ""]
    if c["need_new"]:
        lines += details("the commits that need the newer jaxlib",
                         [f"{short(x)} {x['subject']}" for x in c["need_new"]], "text")
    reproduce = commit_reproduce(doc, c)
    if reproduce:
        # jaxlib's (or libtpu's) change: the end commits show that no jax commit has it
        title = ("Reproduce the two commits without the toolkit (git, pip, python)"
                 if c["came_with"] in ("jax", "both") else
                 "The end commits on each jaxlib behave as its release (no jax commit "
                 "measured brings the change), without the toolkit (git, pip, python)"
                 if sum("checkout -q" in line for line in reproduce) > 2 else
                 f"The two end commits behave alike on jaxlib {c['runs_on']['jaxlib']} (no "
                 f"jax commit measured brings the change), without the toolkit (git, pip, "
                 f"python)")
        lines += details(title, reproduce, "sh")
    return lines


def commit_reproduce(doc: dict, c: dict) -> list[str]:
    """Plain git, pip and python lines that run the report's own program at the two commits
    the answer rests on, each with what it gave there; the document's own lines where the
    report has no program (a command: the command, shown in full)."""
    shown = shown_program(doc)
    if c["came_with"] in ("jax", "both") and c.get("last_good") and c.get("first_bad"):
        pair = list(zip((c["last_good"], c["first_bad"]), PARENT_WORDS[c.get("kind") or "came"]))
    elif c["came_with"] == "jaxlib" and c.get("old_end") and c.get("new_end"):
        pair = [(c["old_end"], f"as jax {c['old']}"), (c["new_end"], f"as jax {c['old']} too")]
    else:
        return []
    on = (c["runs_on"] if c["came_with"] != "both" else
          {"jax": c["new"], "jaxlib": c["new_jaxlib"]})
    install = pip_install(doc, on["jax"], on["jaxlib"])
    if shown is None:  # the document's own lines, its install pinned as measured
        return [re.sub(r"^python3 -m venv", f"{venv_python(on['jax'], doc)} -m venv",
                       re.sub(r"/bin/pip install .*$", f"/bin/{install}", line))
                if "/bin/pip install " in line else line for line in c.get("reproduce") or ()]
    # one clone for every block of the page, each environment its own venv
    lines = ["[ -d jax-src ] || git clone https://github.com/jax-ml/jax jax-src",
             f"# jax {on['jax']}'s environment (jaxlib {on['jaxlib']}), jax's Python from the "
             f"clone:", venv_line(doc, on["jax"], on["jaxlib"])]
    steps = {(st["sha"], st["runs_on"]["jaxlib"]): st for st in c.get("steps") or ()}
    lines += commit_runs(doc, shown, [(commit, role, steps.get((commit["sha"], on["jaxlib"])))
                                      for commit, role in pair], f"venv-{on['jax']}")
    newer = [st for st in c.get("steps") or () if st["runs_on"]["jaxlib"] == c["new_jaxlib"]
             and st["runs_on"]["jaxlib"] != on["jaxlib"]]
    if c["came_with"] != "jaxlib" or len(newer) < 2:
        return lines
    # The other half: the same program on the newer jaxlib's end commits (what they measured)
    newer = [min(newer, key=lambda st: st["index"]), max(newer, key=lambda st: st["index"])]
    lines += [f"# then jax {c['new']}'s environment (jaxlib {c['new_jaxlib']}), the same clone:",
              venv_line(doc, c["new"], c["new_jaxlib"])]
    return lines + commit_runs(doc, shown, [(st, f"as jax {c['new']}" + (" too" if k else ""),
                                             st) for k, st in enumerate(newer)],
                               f"venv-{c['new']}")


def venv_line(doc: dict, jax: str, jaxlib: str) -> str:
    """A fresh venv for a release's environment, pinned as measured (its Python named)."""
    venv = f"venv-{jax}"
    return (f"{venv_python(jax, doc)} -m venv {venv} && {venv}/bin/"
            f"{pip_install(doc, jax, jaxlib)}")


def commit_runs(doc: dict, shown: dict, runs: list[tuple[dict, str, dict | None]],
                venv: str) -> list[str]:
    """A checkout and the program's run at each commit, in ``venv``, with what the toolkit
    measured."""
    lines = []
    command = re.sub(r"(^|\s)python ", rf"\1{venv}/bin/python ", shown["ends"][0]["command"])
    for commit, role, st in runs:
        figure = (st["error"] or figure_text(doc["metric"]["name"], unit(doc), st["figure"])
                  if st else None)
        gave = f": the toolkit measured {figure}" if figure else ""
        lines += [f"# {short(commit)}, {role}{gave}",
                  f"git -C jax-src checkout -q {commit['sha']} && PYTHONPATH=$PWD/jax-src "
                  f"{command}"]
    return lines


# A commit between alike ends, placed against them (search/placing.py's AgainstEnds).
BETWEEN_WORDS = {"old": "between, as both ends", "differs": "between, as neither end",
                 "cannot tell": "between, cannot tell"}
BETWEEN_MEANS = {"between, as both ends": "which behaves as both of them",
                 "between, as neither end": "which behaves as neither of them",
                 "between, cannot tell": "which could not be told from them"}


def inside_rows(doc: dict, c: dict) -> list[list]:
    """The commit table's rows of the commits measured between alike ends (``inside``), each
    with its subject and date where the record names the commit elsewhere."""
    known = {x["sha"]: x for x in (*c["need_new"], *c["steps"], *c.get("between", ()))}
    rows = []
    for side in ("older", "newer"):
        part = (c.get("inside") or {}).get(side) or {}
        jaxlib = c["new_jaxlib"] if side == "newer" else c.get("old_jaxlib",
                                                               c["runs_on"]["jaxlib"])
        for row in part.get("rows") or () if part.get("measured") else ():
            named = known.get(row["sha"]) or {}
            rows.append([row["sha"][:10], str(named.get("date") or "")[:10] or "–",
                         subject(named["subject"]) if named.get("subject") else "–", jaxlib,
                         figure_text(doc["metric"]["name"], unit(doc), row["figure"]),
                         BETWEEN_WORDS.get(row["label"], row["label"])])
    return rows


def inside_lines(c: dict) -> list[str]:
    """Alike commit ends: the commits between them, looked at or not (``inside``)."""
    lines = []
    for side in ("older", "newer"):
        part = (c.get("inside") or {}).get(side)
        if part is None:
            continue
        jaxlib = c["new_jaxlib"] if side == "newer" else c.get("old_jaxlib",
                                                               c["runs_on"]["jaxlib"])
        these = (f"the {part['commits']} commits between the two end commits, which behave "
                 f"alike on jaxlib {jaxlib}")
        untold = [x[:10] for x in part.get("cannot_tell", ())]
        if not part["measured"]:
            why = ("`--interior-budget 0`: off" if part["budget"] <= 0 else
                   f"about {part['estimate']:.0f} s by the measured commits' own run times, "
                   f"over the time allowed for them ({part['budget']:.0f} s, "
                   f"`--interior-budget`)")
            lines += [f"Not looked at: {these}; {why}.", ""]
        elif part["changes"]:
            lines += [f"Looked at {these}: a change came and went among them: " + "; ".join(
                f"came at {x['came'][0][:10]} → {x['came'][1][:10]}, went at "
                f"{x['went'][0][:10]} → {x['went'][1][:10]}" for x in part["changes"]) + ".", ""]
        else:
            lines += [f"Looked at {these}: "
                      + (f"{', '.join(untold)} could not be told (cannot tell), every other "
                         f"one behaves as the ends do." if untold else
                         "each behaves as the ends do."), ""]
    return lines


def commits_lines(doc: dict) -> list[str]:
    """Every commits part's section."""
    return [line for pair, c in parts(doc) for line in part_lines(doc, c, pair)]


def counted(n: int, noun: str) -> str:
    """"the commit", "the 3 commits": a count in words a maintainer writes."""
    return f"the {noun}" if n == 1 else f"the {n} {noun}s"
