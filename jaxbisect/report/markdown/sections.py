"""The sections below the first screen: where the change is (JAX, XLA's HLO passes, below
HLO) and the next step, why (the flags and passes measured), the buffers at the peak, the
flags tried, the HLO bundle, where and on what the runs ran."""

from __future__ import annotations

import base64
import re
import shlex

from jaxbisect.evidence.common import MAX_LINE_CHARS, around_keeping_head, whole_tokens
from jaxbisect.evidence.explain import STORED_DIFFERENCE, difference_sentence, none_brought_words
from jaxbisect.evidence.hlo_bundle import details_lines
from jaxbisect.lab.executors import cluster_markdown
from jaxbisect.report.figures import figure_cell
from jaxbisect.report.markdown.answer import TIMINGS, setting_kind
from jaxbisect.report.markdown.evidence import render_buffers_markdown
from jaxbisect.report.markdown.handoff import render_culprit_commits, render_xla_range
from jaxbisect.report.markdown.reproduce import program_sizes, shown_program, venv_folder
from jaxbisect.report.markdown.words import (
    cut,
    details,
    pair_words,
    params_text,
    plainly,
    table,
    value_words,
)
from jaxbisect.search.placing import Behaviour, Verdict
from jaxbisect.search.rounds import Status
from repro.target import load as load_target


def in_jax_python(doc: dict) -> bool:
    """The change is in jax's Python by the attribution (the lowered modules differ)."""
    return (doc.get("attribution") or {}).get("culprit") == "jax"


PYTHON_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)\b")


# Raised by the compiler or the runtime below jax's Python (jaxlib's Mosaic, XLA, libtpu):
# a Python exception class, but never one raised before XLA has a module.
COMPILER_ERROR = re.compile(r"^(?:[\w.]*\.)?(?P<name>MosaicError|JaxRuntimeError|"
                            r"XlaRuntimeError)\b")
COMPILER_WORDS = {"MosaicError": "while compiling the kernel (jaxlib's Mosaic compiler, "
                                 "or libtpu)",
                  "JaxRuntimeError": "by XLA or the runtime below jax's Python, while "
                                     "compiling or running",
                  "XlaRuntimeError": "by XLA or the runtime below jax's Python, while "
                                     "compiling or running"}


def _error_values(doc: dict) -> list[str]:
    """The ends' errors, where an error metric's answer is found and the HLO rule could not
    place it."""
    if doc["metric"]["name"] != "error" or doc["status"] != Status.FOUND:
        return []
    if (doc.get("attribution") or {}).get("culprit") in ("jax", "xla", "below-hlo"):
        return []
    values = [(p.get("figure") or {}).get("value") for p in doc["probes"]
              if p["jax"] in (doc["last_old"]["jax"], doc["first_new"]["jax"])]
    return [v for v in values if isinstance(v, str)]


def compiler_error(doc: dict) -> str | None:
    """The class of an end's error raised below jax's Python (``MosaicError``, …), else
    None."""
    return next((m["name"] for v in _error_values(doc) if (m := COMPILER_ERROR.match(v))),
                None)


def python_error(doc: dict) -> bool:
    """An error metric whose new behaviour is a Python exception (not a crash) that the HLO
    rule could not place (the program raises before a module exists): jax's Python is the
    first suspect, and ``--commits`` tells it from the jaxlib without a build. A compiler's
    or runtime's error (``compiler_error``) is none."""
    return compiler_error(doc) is None and any(PYTHON_ERROR.match(v)
                                               for v in _error_values(doc))


def commits_command(doc: dict) -> str:
    """The same question with ``--commits``: jax's own commits between the pair."""
    argv = shlex.split(doc["reproduce"])
    if doc["status"] == Status.FOUND:
        argv[argv.index("--from") + 1] = doc["last_old"]["jax"]
        argv[argv.index("--to") + 1] = doc["first_new"]["jax"]
    return shlex.join(argv if "--commits" in argv else [*argv, "--commits"])


def not_compared_why(a: dict) -> str:
    """Why the two releases' modules could not be compared: the attribution's recorded
    ``reason``, or that none was recorded."""
    return a.get("reason") or "no reason was recorded"


def attribution_text(a: dict) -> str:
    """The attribution's sentence; a comparison that could not be made says why."""
    text = a["text"][0].upper() + a["text"][1:]
    if a.get("culprit") == "unknown" and "could not be compared" in text:
        text += f" ({not_compared_why(a)})"
    return text + "."


def attribution_lines(doc: dict) -> list[str]:
    """JAX, XLA's HLO passes, or below HLO, and the commits either side; the next step:
    ``--commits`` where the change is in jax's Python, the hand-off below the release where
    it is in jaxlib and no jax commit was named."""
    a = doc["attribution"]
    came_with = (doc.get("commits") or {}).get("came_with")
    lines = ["## Where the change is", "", attribution_text(a), ""]
    if doc["metric"]["name"] == "compile_time" and a.get("culprit") in ("xla", "below-hlo"):
        lines += ["The HLO rule reads the modules only: a compile_time change can also lie in "
                  "jax's own tracing and lowering (Python, before any module exists), which it "
                  "cannot see; jax's commits (`--commits`) measure that.", ""]
    links = a.get("links") or {}
    if came_with == "jax":  # jax's Python, measured: XLA's commits are beside the point
        pass
    elif links.get("xla_compare"):
        count = (f" ({a['xla_commit_count']} commits)" if a.get("xla_commit_count") is not None
                 else "")
        lines += [f"XLA commits: {links['xla_compare']}{count}", ""]
    elif a.get("by") == "swaps" and a.get("culprit") == "libtpu":
        pass  # came with libtpu alone: XLA's commits between the jaxlibs are not its cause
    elif a.get("xla_note"):
        lines += [xla_note_words(a), ""]
    if a.get("by") == "swaps" and a.get("culprit") in ("libtpu", "jax+libtpu"):
        # a TPU release's parts swapped: libtpu is closed source, its release the finest
        # level; neither jax's commits nor a rebuild of jax and XLA can name it
        pass
    elif came_with == "jax":
        lines += ["The first bad jax commit is named above (*jax commits*): jax's Python, "
                  "measured, so XLA's commits are not looked at.", ""]
    elif came_with == "both":
        lines += ["The first bad jax commit is named above (*jax commits*); it needs the newer "
                  "jaxlib too, whose XLA commits are linked above.", ""]
    elif in_jax_python(doc) and came_with is None:
        lines += ["**Next step:** the change is in jax's Python, so jax's own commits between "
                  "the two releases name it, without building anything:", "", "```sh",
                  commits_command(doc), "```", ""]
    else:
        tpu = str(doc.get("backend", "")).startswith("tpu")
        xla_range = render_xla_range(a, tpu=tpu, backend=str(doc.get("backend") or ""))
        between = doc.get("unplaced_between") or []
        if between and came_with is None and (python_error(doc) or compiler_error(doc)):
            lines += [f"**Next step:** jax {', '.join(between)} in between gave no figure "
                      f"here, so the two releases are not consecutive and jax's commits "
                      f"between them would end as cannot tell; measure jax "
                      f"{', '.join(between)} where it gives one (a Cloud TPU VM) first.", ""]
        elif python_error(doc) and came_with is None:
            rebuilds = any(line.startswith("**Below the release:**") for line in xla_range)
            lines += ["**Next step:** the error is a Python exception raised before XLA has a "
                      "module; jax's own commits between the two releases tell jax's Python "
                      "from the jaxlib, without building anything"
                      + (" (before the rebuilds below)" if rebuilds else "") + ":", "",
                      "```sh", commits_command(doc), "```", "", *mosaic_caveat(doc)]
        elif (compiled := compiler_error(doc)) and came_with is None:
            lines += [f"**Next step:** the error (`{compiled}`) is raised "
                      f"{COMPILER_WORDS[compiled]}, after jax's Python has lowered the "
                      f"program; jax's own commits between the two releases tell a change in "
                      f"jax's Python (its lowering) from one in the jaxlib, without building "
                      f"anything:", "", "```sh", commits_command(doc), "```", "",
                      *mosaic_caveat(doc)]
        lines += xla_range
        if a.get("xla_culprit_commits"):
            lines += render_culprit_commits(a["xla_culprit_commits"])
    commits = a.get("commits") or {}
    shown = [f"jax {c['jax']}: {c['commit'] or c['ref']} ({c['source']})"
             for c in (commits.get("old"), commits.get("new")) if c and c.get("jax")]
    if shown:
        lines += ["JAX commits of the wheels: " + "; ".join(shown) + ".", ""]
    if a.get("diff"):
        shown = unhidden_difference(a["diff"])[0]
        changed = [line for line in a["diff"]
                   if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        if changed and all("tpu_custom_call" in line for line in changed):
            producers = payload_producers(changed)
            lines += ["The lowered modules differ only inside the Pallas kernel's "
                      "`tpu_custom_call`, in its serialised Mosaic payload (cut from this "
                      "report)"
                      + (f", whose MLIR bytecode starts with the version that wrote it: "
                         f"`{producers[0]}` at jax {(doc.get('last_old') or {}).get('jax')}, "
                         f"`{producers[1]}` at jax {(doc.get('first_new') or {}).get('jax')}"
                         if producers else "")
                      + ": the payload is the kernel as each release's Mosaic serialises it, "
                      "which may differ for one kernel, so a different payload alone does not "
                      "say the change is in jax.", ""]
        elif any(line[:1] in "+-" and not line.startswith(("+++", "---")) for line in shown):
            lines += details("The lowered modules, where they differ",
                             with_hunk_cut(shown), "diff")
        else:  # the record kept the lines around the difference, not the lines that differ
            lines += ["The lowered modules differ, but the lines this report kept of them are "
                      "the same: the lines that differ were not kept, so they cannot be shown "
                      "here.", ""]
    elif a.get("optimized_hlo") == "differs" and a.get("first_difference"):
        shown, hidden = unhidden_difference(a["first_difference"])
        header = any(line.startswith("-HloModule ") and "fingerprint" in line
                     for line in a["first_difference"])
        if hidden and header:
            lines += ["XLA's optimized HLO differs (normalised: metadata and source locations "
                      "set aside, names renumbered in order, #N); its first differing line is "
                      "the module's header, whose `frontend_attributes` hold a fingerprint (a "
                      "hash of the module, which differs wherever anything in it does), and "
                      "the record keeps no later difference: where the modules first differ "
                      "pass by pass, and XLA's own text from its dumps, are below.", ""]
        elif hidden:
            lines += [f"XLA's optimized HLO differs (normalised: metadata and source "
                      f"locations set aside, names renumbered in order, #N), but its first "
                      f"differing line{'s' if hidden > 1 else ''}"
                      f" differ{'' if hidden > 1 else 's'} only beyond the part of "
                      f"{'each' if hidden > 1 else 'the'} line kept with this report, so the "
                      f"difference cannot be shown here.", ""]
        if any(line[:1] in "+-" and not line.startswith(("+++", "---")) for line in shown):
            element = ("; `name#N` without the dot: element N of a tuple-shaped value, as "
                       "XLA writes it" if any(TUPLE_ELEMENT.search(x) for x in shown) else "")
            lines += details("XLA's optimized HLO (normalised: metadata and source locations "
                             f"set aside, names renumbered in order, #N{element}), its first "
                             "real difference", with_hunk_cut(shown), "diff")
    return lines


_PAYLOAD = re.compile(r'\\22body\\22: \\22([A-Za-z0-9+/]+)')


def payload_producers(changed: list[str]) -> list[str] | None:
    """The MLIR bytecode producer each side's Mosaic payload names (its base64 body's first
    bytes, "MLIR21.0.0git"), where one removed and one added line hold one that differs."""
    said = []
    for mark in "-+":
        body = next((m[1] for line in changed if line[:1] == mark
                     for m in [_PAYLOAD.search(line)] if m), None)
        if body is None:
            return None
        head = base64.b64decode(body[:48], validate=False)
        producer = re.match(rb"ML\xefR.(MLIR[\x20-\x7e]+?)\x00", head, re.DOTALL)
        if producer is None:
            return None
        said.append(producer[1].decode())
    return said if said[0] != said[1] else None


_HUNK = re.compile(r"^@@ -\d+(?:,(?P<old>\d+))? \+\d+(?:,(?P<new>\d+))? @@")


def with_hunk_cut(diff: list[str]) -> list[str]:
    """A diff as shown: every line the record holds, and where it kept only its first lines,
    a closing line saying how many of each side are not kept; where it ends on removed lines,
    that what replaced them is among those (a change shown by half is said as such)."""
    end = len(diff)
    while end and diff[end - 1][:1] == "-" and not diff[end - 1].startswith("---"):
        end -= 1
    return diff + hunks_cut(diff, len(diff) - end)


def hunks_cut(diff: list[str], removed: int = 0) -> list[str]:
    """A closing line where the diff's last hunk shows fewer lines than its header counts
    (the record keeps a diff's first lines only): how many of each side are not kept, and
    that what replaced the ``removed`` lines it ends on is among them."""
    at = max((k for k, line in enumerate(diff) if _HUNK.match(line)), default=None)
    if at is None:
        return []
    header = _HUNK.match(diff[at])
    body = diff[at + 1:]
    old = sum(1 for line in body if line[:1] in " -")
    new = sum(1 for line in body if line[:1] in " +")
    missing = (int(header["old"] or 1) - old, int(header["new"] or 1) - new)
    if max(missing) <= 0:
        return []
    lines = "the last removed line" if removed == 1 else f"the {removed} removed lines"
    return [f"… the hunk goes on: {missing[0]} old and {missing[1]} new lines not kept with "
            f"this report" + (f" (among the new ones, what replaced {lines} above)"
                              if removed and missing[1] > 0 else "")]


def unhidden_difference(diff: list[str]) -> tuple[list[str], int]:
    """A recorded diff without its -/+ pairs the record cut before they differ (the same
    text on both sides, each ending "…"), each line that an older record cut inside a token
    cut between two (``whole_tokens``; a -/+ pair kept as recorded where that would hide
    where they differ): what it shows, and how many pairs it left out."""
    shown, hidden = _unhidden(diff)
    return at_token_boundaries(shown), hidden


def at_token_boundaries(diff: list[str]) -> list[str]:
    """Each body line of a diff through ``whole_tokens``, but for a removed line and the added
    line after it that would then read the same: their difference lies in what was dropped."""
    out = [line if line.startswith(("---", "+++", "@@")) else whole_tokens(line)
           for line in diff]
    for k in range(len(diff) - 1):
        a, b = diff[k], diff[k + 1]
        if (a.startswith("-") and b.startswith("+") and not a.startswith("---")
                and a[1:] != b[1:] and out[k][1:] == out[k + 1][1:]):
            out[k], out[k + 1] = a, b
    return out


def _unhidden(diff: list[str]) -> tuple[list[str], int]:
    out, hidden, k = [], 0, 0
    while k < len(diff):
        line = diff[k]
        nxt = diff[k + 1] if k + 1 < len(diff) else ""
        if (line.startswith("-") and not line.startswith("---") and nxt.startswith("+")
                and line[1:] == nxt[1:] and line.endswith("…")):
            hidden += 1
            k += 2
            continue
        before = diff[k - 1] if k else ""
        after = diff[k + 2] if k + 2 < len(diff) else ""
        if (line.startswith("-") and not line.startswith("---") and nxt.startswith("+")
                and not before.startswith("-") and not after.startswith("+")  # one line changed
                and max(len(line), len(nxt)) > AROUND * 2):
            out += around_difference(line, nxt)
            k += 2
            continue
        out.append(line)
        k += 1
    return out, hidden


# characters kept either side of a long line's first difference: a line as long as the
# pipeline keeps one (MAX_LINE_CHARS), the mark and two "…" aside
AROUND = (MAX_LINE_CHARS - 3) // 2


def around_difference(old: str, new: str) -> list[str]:
    """Two long lines cut around their first differing character, between two tokens, never
    at a shared prefix: "…" where something was left out."""
    cut_old, cut_new = around_keeping_head(old[1:], new[1:], AROUND, AROUND)
    return [old[:1] + cut_old, new[:1] + cut_new]


def evidence_lines(doc: dict) -> list[str]:
    """The buffers at the peak of a memory case (evidence/collect.py), and the command that
    remakes one release's dump."""
    evidence, case = doc["evidence"], doc["case"]
    params = dict(sorted(evidence["params"].items()))
    argv = ["python", "-m", "repro.dumps", "--case", case["path"],
            *(f"--param={k}={v}" for k, v in params.items()),
            *(["--target", doc["target"]] if doc.get("target") else
              ["--backend", doc["backend"]]),
            *([f"--xla-flags={doc['xla_flags']}"] if doc.get("xla_flags") else []), "--json"]
    # Without the toolkit: the report's own program with XLA's dumps on, in the reproduce
    # block's environments (never a file the report does not print).
    shown = shown_program(doc)
    runs = ([f"{shlex.join([f'{venv_folder(i)}/bin/python', *argv[1:]])}   # jax {e['jax']}"
             for i, e in enumerate(shown["ends"])] if shown else shlex.join(argv))
    text = render_buffers_markdown(evidence, runs, ())
    if shown:
        flags = doc.get("xla_flags") or ""
        sizes = program_sizes(shown["text"])
        own = f" ({sizes})" if sizes else ""
        named = {k: v for k, v in evidence["params"].items() if f"{k}=" in sizes
                 or f"{k} " in sizes}
        same = bool(named) and all(f"{k}={v!r}" in sizes or f"{k}={v}" in sizes
                                   for k, v in named.items())
        runs = ["XLA_FLAGS="
                + shlex.quote(f"{flags} --xla_dump_to=dump-{e['jax']} --xla_dump_hlo_as_text"
                              .strip())
                + f" {venv_folder(i)}/bin/python {shown['file']}   # jax {e['jax']}"
                for i, e in enumerate(shown["ends"])]
        # a GPU's compile needs it: without one, jax runs on the CPU, a plan of its own
        gpu = (f" on a machine with the GPU it was compiled for "
               f"({load_target(doc['target']).description})"
               if doc.get("target") and load_target(doc["target"]).kind == "gpu" else "")
        text += "\n".join([
            f"Without the toolkit: `{shown['file']}` (above) with XLA's dumps on, in each "
            f"venv of the reproduce block{gpu}; XLA writes "
            f"`*after_optimizations-buffer-assignment.txt`, `*-memory-usage-report.txt` and "
            f"`*after_optimizations.txt` into each `dump-…` folder, one set for each compile "
            + (f"of the program, at the dump's sizes above{own}:" if same else
               f"of the program, at the program's own sizes{own}; these are not the sizes of "
               f"the dump above ({params_text(evidence['params'])}), so their figures are the "
               f"program's, not the tables' above:"),
            "", "```sh", *runs, "```", ""])
    title, _, body = text.partition("\n")
    return details(title.removeprefix("## "), [capped(body.strip()), ""])


DUMP_LINES = 16  # a dump's code block beyond this is cut: the JSON document holds it whole
TEXT_BLOCK = re.compile(r"^```text\n(?P<body>.*?)\n```$", re.MULTILINE | re.DOTALL)


def capped(text: str, most: int = DUMP_LINES) -> str:
    """Each dump's text block cut to its first ``most`` lines, with how many were left out
    (a report is read, the JSON beside it is searched)."""
    def cut_block(m: re.Match) -> str:
        lines = m["body"].splitlines()
        # a block that ends with its own count ("… 2 more lines": the record's cut)
        inner = re.fullmatch(r"… (\d+) more lines?", lines[-1].strip()) if lines else None
        if inner:
            lines = lines[:-1]
        if len(lines) <= most:
            return m[0]
        parts = [p for p in "\n".join(lines).split("\n\n") if p.strip()]
        if len(parts) == 2 and all(len(p.splitlines()) <= most for p in parts):
            return m[0]  # two releases' short lists side by side: both whole, to compare
        kept, held = "\n".join(lines[:most]), len(lines) - most
        beyond = int(inner[1]) if inner else 0
        return (f"```text\n{kept}\n… {held + beyond} more lines left out (the report's "
                + (f".json file holds the next {held}; the last {beyond} were not kept"
                   if beyond else ".json file holds them")
                + ")\n```")
    return TEXT_BLOCK.sub(cut_block, text)


def target_words(doc: dict) -> str:
    """The compile-only target a document measured, as its description says it."""
    return load_target(doc["target"]).description if doc.get("target") else "its target"


def workaround_lines(doc: dict, workarounds: list[dict]) -> list[str]:
    """Every flag setting that brought the old figure back, one a line: the flag, the
    release, the figure, whether (and how) the reverse was tested, and whether it is a
    workaround (keeps the result right, a user's option on that target) or a diagnostic."""
    metric = doc["metric"]["name"]
    lines = []
    for w in workarounds:
        kind = setting_kind(doc, w)
        line = ("- **Workaround:** " if kind == "workaround" else
                "- **Diagnostic** (correctness depends on this pass; never a fix): "
                if not w.get("safe", True) else
                f"- **Diagnostic** (measured by compiling for {target_words(doc)} without "
                f"one, never run: a pass turned off is not offered as a fix there): ")
        line += (f"`{w['xla_flags']}` under jax {w['release']} "
                 + (f"gives the fixed {metric} before the fix" if w.get("brings") == Behaviour.NEW
                    else "brings back the old behaviour" if metric in TIMINGS
                    else f"brings back the old {metric}"))
        if w.get("figure") is not None:
            line += f" ({value_words(doc, w['figure'])})"
        reverse = w.get("reverse")
        if reverse:
            if reverse.get("tested"):
                line += (f"; the reverse, `{reverse['xla_flags']}` under jax "
                         f"{reverse['release']}, gives the {reverse['behaviour']} behaviour")
                if reverse.get("figure") is not None:
                    line += f" ({value_words(doc, reverse['figure'])})"
            else:
                line += (f"; the reverse (`{reverse.get('xla_flags', '?')}` under jax "
                         f"{reverse['release']}) could not be tested: "
                         f"{plainly(reverse.get('error')) or 'it gave no figure'}")
        lines.append(line + ".")
    return lines + ([""] if lines else [])


def test_table(doc: dict, tests: list[dict], summary: str) -> list[str]:
    metric = doc["metric"]["name"]
    rows = [[t["release"], f"`{t['xla_flags']}`", t["behaviour"],
             value_words(doc, t.get("figure")),
             cut(plainly(t.get("finding") or t.get("error") or ""), 160)] for t in tests]
    return details(summary, [table(["jax", "XLA_FLAGS", "behaviour", metric, "note"], rows)])


UNTOLD = (Behaviour.CANNOT_TELL, Behaviour.SKIP, Behaviour.NOT_TESTED, Behaviour.MUCH_SLOWER)
TRIED = re.compile(r"under jax (?P<release>[\w.]+)(?P<middle>.*?) for (?P<found>\d+) of "
                   r"the (?P<tried>\d+) passes tried")


# A document written before the count was said as read: "none of the 1 changed defaults …,
# set back one at a time (or in pairs), brings", where one default has no pairs.
NONE_OF = re.compile(r"none of the (?P<n>\d+) changed defaults that can matter on (?P<on>.+?), "
                     r"set back one at a time \(or in pairs\), brings")


def _none_of(c: dict, text: str) -> str:
    paired = any(len(t.get("xla_flags", "").split()) > 1 for t in c.get("tests") or ())
    return NONE_OF.sub(lambda m: none_brought_words(int(m["n"]), m["on"], paired), text)


def said_of(c: dict) -> str | None:
    """A search's sentence, left out where it counts nothing ("none of the 0 …"); a
    document's "k of the n passes tried" (written before the crashed ones were said apart)
    counted again from its tests: the passes measured, and those that crashed apart."""
    text = c.get("text")
    if not text or "none of the 0 " in text:  # a count of nothing says nothing
        return None
    if c.get("first_difference"):  # said from the record's own files, as today's pipeline
        text = STORED_DIFFERENCE.sub(lambda m: difference_sentence(c["first_difference"]), text)
    untold = [t for t in c.get("tests") or () if t.get("behaviour") in UNTOLD]
    if c.get("kind") == "none" and untold:  # "cannot tell" is its own answer, never "no"
        told = len(c.get("tests") or ()) - len(untold)
        return (f"cannot tell whether an XLA flag explains it: {len(untold)} of the "
                f"{len(c.get('tests') or ())} settings measured could not be placed against "
                f"the two releases ("
                + "; ".join(f"`{t['xla_flags']}` under jax {t['release']}: {t['behaviour']}"
                            for t in untold[:3])
                + ("; …" if len(untold) > 3 else "") + ")"
                + (f", and none of the other {told} brings the old behaviour back"
                   if told else ""))

    def counted(m: re.Match) -> str:
        at = [t for t in c.get("tests") or () if t["release"] == m["release"]
              and t["behaviour"] != Behaviour.NOT_TESTED]
        failed = [t["xla_flags"].split("=", 1)[1] for t in at
                  if t["behaviour"] == Behaviour.SKIP]
        more = (f" ({len(failed)} more crashed or gave no figure: "
                + ", ".join(f"`{n}`" for n in failed) + ")" if failed else "")
        return (f"under jax {m['release']}{m['middle']} for {m['found']} of the "
                f"{len(at) - len(failed)} passes measured{more}")

    return _none_of(c, TRIED.sub(counted, text).replace(" (ways around it there)", ""))


def why_lines(doc: dict) -> list[str]:
    """The "Why" section from the explanation's document: what the flag and pass searches
    said, every setting that brought a release's figure back, and every setting measured."""
    explanation = doc["explanation"]
    culprit = explanation["culprit"]
    flags = culprit.get("flags") if culprit.get("flags") is not None else (
        culprit if "flag_defaults_changed" in culprit or culprit.get("kind") == "workaround"
        else None)
    passes = culprit if flags is not culprit else None
    said = [t for t in (said_of(c) for c in (flags, passes) if c) if t]
    lines = ["## Why", ""]
    if said:
        lines += [" ".join(t[0].upper() + t[1:].rstrip(".") + "." for t in said), ""]
    workarounds = [w for c in (flags, passes) if c for w in c.get("workarounds") or []]
    lines += workaround_lines(doc, workarounds)
    budget = explanation.get("budget") or {}
    if budget.get("exhausted"):
        lines += [f"The explanation's budget ({budget['seconds']:.0f} s, --explain-budget) was "
                  f"spent: what it did not reach is marked not tested.", ""]
    if flags and flags.get("tests"):
        lines += test_table(doc, flags["tests"], "Every flag setting measured")
    if passes and passes.get("tests"):
        lines += test_table(doc, passes["tests"], "Every HLO pass turned off")
    first = (passes or {}).get("first_difference") or {}
    if first.get("status") == "differ" and first.get("diff"):
        files = {side: first.get(f"{side}_file") or "" for side in ("old", "new")}
        after = [f"jax {first[side]} after `{name.split('.after_')[1].split('.before_')[0]}`"
                 for side, name in files.items() if ".after_" in name]
        # XLA's own "name#N" (no dot): element N of a tuple-shaped value, beside our ".#N"
        element = ("; `name#N` without the dot: element N of a tuple-shaped value, as XLA "
                   "writes it" if any(TUPLE_ELEMENT.search(x) for x in first["diff"]) else "")
        lines += details(f"Where the modules of jax {first['old']} and {first['new']} first "
                         f"differ, pass by pass ({'; '.join(after)}; names renumbered in order, "
                         f"#N{element})"
                         + (" (cut short)" if first.get("diff_truncated") else ""),
                         with_hunk_cut(first["diff"]), "diff")
    return lines


TUPLE_ELEMENT = re.compile(r"\w#\d+\b")


def tried_lines(doc: dict) -> list[str]:
    """``--try-xla-flags``: each set of flags under the first new release, and whether it
    brings the old behaviour back."""
    tried, metric = doc["try_xla_flags"], doc["metric"]["name"]
    rows = [[f"`{t['xla_flags']}`", value_words(doc, t["figure"])
             if t["figure"] is not None else plainly(t["error"]), t["behaviour"],
             "yes ✅" if t["restores"] else "no"] for t in tried]
    sized = params_text(doc["search_size"]["params"]) if doc.get("search_size") else ""
    return [f"## XLA flags tried under jax {tried[0]['release']} (--try-xla-flags)", "",
            f"Measured as the bisection measured each release{f' ({sized})' if sized else ''}, "
            f"and judged as the bisection judges a release:", "",
            table(["XLA_FLAGS", metric, "behaviour", "old behaviour back"], rows), ""]


def hlo_lines(doc: dict) -> list[str]:
    """The HLO bundle beside the report: its figures, files, the culprit's run_hlo_module line,
    the fuel step (evidence/hlo_render.py, the hlo helper's)."""
    lines = details_lines(doc["hlo_module"], pair_words(doc))
    bundle = doc["hlo_module"].get("bundle")
    if bundle and lines:  # a folder beside the report: no link survives a paste
        lines += [f"The bundle is a folder, `{bundle}/`, beside the report's JSON, not a link: "
                  f"pasted as a comment, attach it as `{bundle}.zip`.", ""]
    return lines


def minimal_lines(doc: dict) -> list[str]:
    """``--minimize``: the smallest parameters at which the pair still behave apart, and the
    program at them."""
    m, title = doc["minimal"], "Minimal reproducer"
    if m.get("at_start") == Verdict.CANNOT_TELL:
        return details(title, [f"Cannot tell whether jax {m['old']} and {m['new']} behave apart "
                               f"at the parameters asked for (the paired test left it "
                               f"undecided), so nothing was shrunk.", ""])
    if not m["kept_at_start"]:
        return details(title, [f"The change does not show between jax {m['old']} and "
                               f"{m['new']} at the parameters asked for, so nothing was "
                               f"shrunk.", ""])
    changed = {k: (m["started_from"][k], v) for k, v in m["params"].items()
               if m["started_from"].get(k) != v}
    shrunk = ", ".join(f"{k} {a} → {b}" for k, (a, b) in changed.items()) or "nothing smaller"
    note = "" if m["complete"] else " (the time budget ran out: smaller may exist)"
    fixed = (f" Kept as the case's author fixed them: {', '.join(m['fixed'])}."
             if m["fixed"] else "")
    old, new = (figure_cell(m["metric"], m["unit"] or "", m[k]) for k in ("old_value",
                                                                         "new_value"))
    return details(title, [
        f"The smallest parameters at which jax {m['old']} and {m['new']} still behave apart "
        f"({m['metric']}: {old} against {new}), found by halving each integer parameter and "
        f"tightening, in {m['trials']} trials{note}: {shrunk}.{fixed}", "",
        f"The program ({m.get('case_path', '')} with these defaults):", "", "```python",
        m["program"].rstrip(), "```"])


def run_lines(doc: dict) -> list[str]:
    """Where and on what the runs ran: the time limit, the cluster, the machine."""
    lines = []
    limit = doc.get("time_limit")
    if limit is not None:
        # The rule, without the first run's seconds it was timed from: those come from the
        # invocation that wrote the report, while the runs above may be stored from an earlier
        # one (their own seconds), so the two figures need not agree.
        why = re.sub(r" \([0-9.]+ s\)", "", limit["why"])
        lines += [f"Time limit of a run: {limit['seconds']:.0f} s ({why}).", ""]
    if doc.get("cluster"):  # where the runs ran, when not here (executors.py)
        lines += [cluster_markdown(doc["cluster"])]
    if doc.get("machine"):
        lines += details("The machine that measured", [doc["machine"]], "text")
    return lines


def xla_note_words(a: dict) -> str:
    """Why the XLA commits between the two releases are not linked, from the records: the
    JAX commits the wheels name (each pins its XLA in jax's sources at that commit), and that
    those sources were not at hand when the report was made."""
    commits = a.get("commits") or {}
    named = [f"jax {c['jax']}: `{(c.get('commit') or c.get('ref') or '?')[:10]}`"
             for c in (commits.get("old"), commits.get("new")) if c]
    note = a.get("xla_note") or ""
    why = [*(["the jax clone it read (`--jax-repo`, or the toolkit's own) did not hold those "
              "commits"]
             if "did not have them" in note else []),
           *(["GitHub was not reachable"] if "GitHub could not be reached" in note else [])]
    return ("XLA's commits between the two releases: not found for this report. Each jaxlib "
            "pins its XLA in jax's sources at the jax commit its wheel names"
            + (f" (jax commits, not XLA's: {'; '.join(named)})" if named else "")
            + (f", and those sources were not at hand when it ran ({'; '.join(why)})" if why
               else ", and those sources were not at hand when it ran")
            + "; the same command run again with `--jax-repo PATH` (a clone of jax that "
              "holds those commits) links the XLA commits between them."
            + pins_at(a))


def pins_at(a: dict) -> str:
    """Where each release's XLA pin is read by hand (jax's ``third_party/xla`` at the wheel's
    commit), from the record's links."""
    links = a.get("links") or {}
    shown = [links[k] for k in ("xla_pin_old", "xla_pin_new") if links.get(k)]
    if len(shown) != 2:
        return ""
    return (f" Each pin by hand (`XLA_COMMIT` in that folder): {shown[0]} and "
            f"{shown[1]}.")


def mosaic_caveat(doc: dict) -> list[str]:
    """Where a release of the range gave no figure here because its jax wrote a Mosaic
    version the libtpu it ran with cannot read (compiled without a chip), the commit search
    meets the same at the commits after that change: said before anyone runs it."""
    runs = [(p["jax"], p.get("libtpu") or (p.get("installed") or {}).get("libtpu"),
             p.get("reason")) for p in doc.get("probes") or ()]
    runs += [(w["jax"], w["libtpu"], w.get("reason"))
             for w in (doc.get("libtpu") or {}).get("swaps") or ()]
    seen = next(((jax, libtpu) for jax, libtpu, why in runs if "Mosaic version" in str(why)),
                None)
    if seen is None:
        return []
    return [f"Compiled without a chip, a commit whose jax writes a newer Mosaic version than "
            f"its environment's libtpu reads gives no figure (as jax {seen[0]} did with "
            f"libtpu {seen[1]} above): those commits end as cannot tell here, where on a "
            f"Cloud TPU VM they would not (jax writes a version its libtpu reads there), so "
            f"run it on one to place every commit.", ""]
