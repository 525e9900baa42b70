"""Every shipped report, read as a maintainer pastes it (issue 49): a report whose answer is a
change shows a plain program of at most 40 lines and the installs where the behaviour differs
(the pair found; a change inside alike ends: where it came and where it went), each with what
was measured there; nothing it runs is a file it neither prints nor links; no link is cut; no
failure is said by an exception's own text; the first screen is short. The pairs and the
outputs are read from each report's JSON document, not from its wording."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from jaxbisect.evidence.passes import is_safe, setting_kind
from jaxbisect.report.markdown.reproduce import changed_pairs
from repro.target import load as load_target
from repro.tpu_target import recipe_lines

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "reports"
DOCUMENTS = sorted(p for p in [*REPORTS.glob("*.json"), *(REPORTS / "cases").glob("*.json")]
                   if p.name.startswith(("bisect-", "explain-")))
FIRST_LINES = 20
MAX_PROGRAM = 40

FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
URL = re.compile(r"https?://[^\s)<>\]|`'\"]+")
GITHUB = re.compile(r"https?://github\.com/[\w.-]+/[\w.-]+(?:\.git#\S+)?"
                    r"(?:/(?:commit/[0-9a-f]{7,40}|pull/\d+|issues/\d+|compare/\S+\.\.\.\S+"
                    r"|tree/\S+|blob/\S+))?/?$")
EXCEPTION = re.compile(r"\b\w*(?:Error|Exception): |<urlopen error|\[Errno |Traceback \(most")
RUN_FILE = re.compile(r"\bpython3?\s+(?!-)(?P<file>[\w./-]+\.py)\b")
IMPORTED = re.compile(r"python3?\s+-c\s+'import (?P<module>\w+)")


def report(path: Path) -> tuple[dict, str]:
    return json.loads(path.read_text()), path.with_suffix(".md").read_text()


def first_screen(markdown: str) -> str:
    cut = min(i for i in (markdown.find("<details>"), markdown.find("\n## "), len(markdown))
              if i >= 0)
    return markdown[:cut]


def blocks(markdown: str, lang: str | None = None) -> list[str]:
    return [m["body"] for m in FENCE.finditer(markdown) if lang is None or m["lang"] == lang]


def changed(doc: dict) -> bool:
    return doc.get("kind") == "metric" and bool(changed_pairs(doc))


def printed_program(markdown: str, name: str) -> str | None:
    """The program the report prints under a summary that names it (``repro.py: …``)."""
    at = markdown.find(f"<summary>{name}:")
    if at < 0:
        return None
    return next((m["body"] for m in FENCE.finditer(markdown, at) if m["lang"] == "python"),
                None)


def measured_errors(doc: dict) -> list[str]:
    """The error metric's measured values (the bug itself, shown as the program prints it)."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("value", "output", "error") and isinstance(v, str):
                    found.extend(line for line in v.splitlines() if line.strip())
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    if (doc.get("metric") or {}).get("name") == "error":
        walk({k: doc.get(k) for k in ("probes", "interior", "reproducer", "commits",
                                      "commits_by_pair", "everywhere_error")})
        walk((doc.get("interior_check") or {}).get("text"))
        found += [(doc.get("interior_check") or {}).get("text") or ""]
    return sorted({f for f in found if f}, key=len, reverse=True)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_the_first_screen_is_short(path):
    _, markdown = report(path)
    assert len(first_screen(markdown).rstrip("\n").splitlines()) <= FIRST_LINES


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if changed(report(p)[0])],
                         ids=lambda p: p.stem)
def test_a_change_shows_a_short_plain_program_where_the_behaviour_differs(path):
    doc, markdown = report(path)
    program = printed_program(markdown, "repro.py")
    assert program is not None, "no standalone program"
    # a TPU target's program carries the deviceless recipe beside the case (any machine runs it)
    recipe = (recipe_lines(load_target(doc["target"]), (doc.get("case") or {}).get("devices"))
              if doc.get("target") and load_target(doc["target"]).kind == "tpu" else 0)
    assert len(program.splitlines()) <= MAX_PROGRAM + recipe
    assert not re.search(r"^\s*(from|import)\s+(jaxbisect|repro|bisect)\b", program, re.M)
    screen = first_screen(markdown)
    r = doc.get("reproducer") or {}
    measured = {e["jax"]: e for e in [*(r.get("ends") or ()),
                                      *((r.get("went") or {}).get("ends") or ())]}
    for pair in changed_pairs(doc):
        for jax in pair[:2]:
            # each release's own venv, made on its line and run on the next
            install = re.search(rf"^python3\.\d+ -m venv (?P<venv>\w+) && (?P=venv)/bin/pip "
                                rf"install .*\bjax(\[\w+\])?=={re.escape(jax)}\b.*$\n"
                                rf"^(?P=venv)/bin/python repro\.py +# (?P<said>[^\n]*)$",
                                screen, re.M)
            assert install, f"no install of jax {jax} with its output in the first screen"
            assert "(no output)" not in install["said"]
            if jax in measured:  # what the program printed there, from the JSON
                first = measured[jax]["output"].splitlines()[0].strip()
                assert first[:60] in install["said"], (first, install["said"])
    if measured:
        assert r["shows_change"] is True
        if r.get("went"):
            assert r["went"]["shows_change"] is True


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_nothing_runs_a_file_the_report_does_not_print(path):
    _, markdown = report(path)
    for body in blocks(markdown, "sh"):
        for m in RUN_FILE.finditer(body):
            name = m["file"].rsplit("/", 1)[-1]
            assert printed_program(markdown, name) or f"`{name}` is the case" in markdown, \
                f"runs {name}, which the report does not print"
        assert not IMPORTED.search(body), IMPORTED.search(body)[0]
        for m in re.finditer(r"--case[ =](?P<path>\S+)", body):  # a case outside the clone
            if "/" not in m["path"]:
                assert printed_program(markdown, m["path"]) or \
                    f"`{m['path']}` is the case" in markdown, m["path"]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_no_link_is_cut(path):
    _, markdown = report(path)
    for url in URL.findall(markdown):
        url = url.rstrip(".,;:")
        if "github.com" in url:
            assert GITHUB.match(url), f"a cut or partial link: {url}"
    assert not re.search(r"https?://\S*…", markdown)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_no_failure_is_said_by_exception_text(path):
    """Exception text only where it is the measured error itself (the bug, from the JSON)
    or inside a printed program."""
    doc, markdown = report(path)
    text = FENCE.sub(lambda m: "" if m["lang"] == "python" else m[0], markdown)
    for value in measured_errors(doc):
        text = text.replace(value, "").replace(value[:300], "")
    text = re.sub(r"…", "", text)
    leftover = [line for line in text.splitlines() if EXCEPTION.search(line)]
    # A measured error cut to fit a cell or a line: its start is the JSON's.
    starts = [v[:40] for v in measured_errors(doc)]
    leftover = [line for line in leftover
                if not any(s and s in line for s in starts)]
    assert not leftover, leftover[:3]


def test_the_came_and_went_reports_show_where_it_came_and_where_it_went():
    """jit_kwarg_named_f (0.4.35 → 0.4.36, went 0.4.36 → 0.4.37) and exp_nan_under_jit
    (0.6.1 → 0.6.2, went 0.6.2 → 0.7.0): the program's output measured at each."""
    wanted = {"bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json":
              (["0.4.35", "0.4.36"], ["0.4.36", "0.4.37"]),
              "bisect-0.6.0-0.7.0-cpu-exp_nan_under_jit-output.json":
              (["0.6.1", "0.6.2"], ["0.6.2", "0.7.0"])}
    for name, (came, went) in wanted.items():
        doc = json.loads((REPORTS / "cases" / name).read_text())
        r = doc["reproducer"]
        assert [e["jax"] for e in r["ends"]] == came
        assert [e["jax"] for e in r["went"]["ends"]] == went
        assert r["shows_change"] is True and r["went"]["shows_change"] is True
        outputs = [e.get("outputs") or [e["output"]] for e in (*r["ends"], r["went"]["ends"][1])]
        assert not set(outputs[0]) & set(outputs[1]) and not set(outputs[1]) & set(outputs[2])
        assert r["lines"] <= MAX_PROGRAM


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.stem)
def test_a_pass_turned_off_is_a_workaround_only_by_the_one_rule(path):
    """One word for one kind of setting in every report: an HLO pass turned off is a
    diagnostic where correctness depends on it or where it was compiled for a target without
    it, never called a workaround there (the JSON's settings, their flags)."""
    doc, markdown = report(path)
    culprit = (doc.get("explanation") or {}).get("culprit") or {}
    settings = [w for c in (culprit, culprit.get("flags") or {})
                if isinstance(c, dict) for w in c.get("workarounds") or ()]
    for w in settings:
        kind = setting_kind(w["xla_flags"], w.get("safe", True), bool(doc.get("target")))
        lines = [line for line in markdown.splitlines() if w["xla_flags"] in line]
        if kind == "diagnostic":
            assert not [x for x in lines if "workaround" in x.lower()], lines
        else:
            assert [x for x in lines if "workaround" in x.lower()], lines


def hlo_setting(path: Path) -> dict:
    return ((report(path)[0].get("hlo_module") or {}).get("culprit") or {})


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if hlo_setting(p).get("setting")],
                         ids=lambda p: p.stem)
def test_the_setting_that_undoes_a_change_is_said_as_what_it_is(path):
    """The HLO section's (and its bundle README's) setting is a workaround or a diagnostic by
    the one rule the first screen uses, never "the culprit"."""
    culprit = hlo_setting(path)
    kind = setting_kind(culprit["setting"], is_safe(culprit["pass"]) if culprit.get("pass")
                        else True, bool(report(path)[0].get("target")))
    other = {"workaround": "diagnostic", "diagnostic": "workaround"}[kind]
    texts = [path.with_suffix(".md").read_text()]
    bundle = (report(path)[0].get("hlo_module") or {}).get("bundle")
    if bundle and (path.parent / bundle / "README.md").is_file():
        texts.append((path.parent / bundle / "README.md").read_text())
    for text in texts:
        said = [line for line in text.splitlines()  # lines that label it: "Label: `setting`"
                for before in [line.partition(f"`{culprit['setting']}`")[0]]
                if before.endswith(": ") and "`" not in before]
        assert said, "the setting is labelled"
        for line in said:
            assert kind in line.lower() and other not in line.lower(), line
            assert "culprit" not in line.lower(), line


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if (report(p)[0].get("commits") or {})
                                  .get("newer")], ids=lambda p: p.stem)
def test_every_commit_is_said_only_where_every_commit_was_looked_at(path):
    doc, markdown = report(path)
    inside = ((doc["commits"].get("inside") or {}).get("newer") or {})
    if not inside.get("measured"):
        assert "every commit that runs there" not in markdown


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if report(p)[0].get("commits_by_pair")
                                  or report(p)[0].get("commits")], ids=lambda p: p.stem)
def test_a_parent_is_named_by_what_it_measured(path):
    """Where a change went, the parent of the commit named still shows it: never "last good"
    beside a parent whose measured figure is the change (the JSON's steps)."""
    doc, markdown = report(path)
    parts = doc.get("commits_by_pair") or [doc["commits"]]
    for c in parts:
        parent = c.get("last_good")
        if not parent:
            continue
        said = next(line for line in markdown.splitlines()
                    if line.startswith("Its parent (") and parent["url"] in line)
        step = next((st for st in c["steps"] if st["sha"] == parent["sha"]), None)
        if c.get("kind") == "went":
            assert "last good" not in said
        if step and step["label"] == "old" and c.get("kind") in (None, "came"):
            assert "last good" in said


@pytest.mark.parametrize("path", [p for p in DOCUMENTS if report(p)[0].get("status") == "found"],
                         ids=lambda p: p.stem)
def test_the_headline_says_the_documents_direction(path):
    """The markdown's word for the change is the JSON's ``direction``; a "changed" one is a
    regression or a fix only where the record says which end is right: the case's EXPECT, or
    an error metric's "no error" at one end. The pair's words say the same."""
    from jaxbisect.report.markdown.words import direction_of, pair_words

    doc, markdown = report(path)
    said = direction_of(doc)
    if said != doc["direction"]:
        pair = [probe["figure"].get("value") for probe in doc["probes"]
                if probe["jax"] in (doc["last_old"]["jax"], doc["first_new"]["jax"])]
        assert doc["direction"] == "changed" and (
            (doc.get("case") or {}).get("expect") is not None
            or (doc["metric"]["name"] == "error" and "no error" in pair)), said
    word = {"regression": "Regression", "fix": "Fix", "changed": "Change"}[said]
    assert first_screen(markdown).splitlines()[2].startswith(f"**{word} (")
    first = dict(zip(("last_old", "first_new"), pair_words(doc)))
    assert f"**{first['last_old'].capitalize()}:** jax {doc['last_old']['jax']}" in markdown
