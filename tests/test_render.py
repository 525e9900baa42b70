"""Reports rendered from their JSON document alone (``--render``): every shipped report is
what its document renders to; the first screen is short and holds the answer; no report holds
a local path or a relative image link, or passes GitHub's comment limit."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from jaxbisect.lab.jax_history import Commit, CommitRange
from jaxbisect.report.installs import pinned, pip_install
from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.reproduce import shown_program
from jaxbisect.report.markdown.sections import commits_command, python_error
from jaxbisect.report.markdown.words import LIMIT

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "reports"
# the bisections' and explanations' records (bench.json is the bench's, rendered by it)
SHIPPED = sorted(p for p in [*REPORTS.glob("*.json"), *(REPORTS / "cases").glob("*.json")]
                 if p.name.startswith(("bisect-", "explain-")))
# The short answer with its reproduce block: up to three installs, each pinning the six
# packages its release was measured with (about 100 characters a line).
FIRST_LINES, FIRST_CHARS = 20, 1700
# A shipped report's first screen, as a maintainer reads it in an issue: a short answer.
SHIPPED_CHARS = 1500
# A document made to hold every part at once (two commit parts, a culprit, a bundle): longer.
WORST_CHARS = 1800
# A path of this machine or a user's: a home, the clone, a temporary folder.
LOCAL_PATH = re.compile(r"(?<![\w/.])(/home/|/root/|/Users/|/tmp/|/work/|/private/|[A-Z]:\\)")
RELATIVE_IMAGE = re.compile(r"!\[[^\]]*\]\((?!https?://)")
VERSION = re.compile(r"\bjax (\d+\.\d+\.\d+(?:\.\d+)?)\b")


def first_screen(markdown: str) -> str:
    """What a reader sees before the first folded block or section."""
    cut = min(i for i in (markdown.find("<details>"), markdown.find("\n## "), len(markdown))
              if i >= 0)
    return markdown[:cut]


def doc_of(name: str) -> dict:
    return json.loads(next(p for p in SHIPPED if p.name == name).read_text())


def assert_readable(markdown: str, chars: int = FIRST_CHARS) -> None:
    screen = first_screen(markdown)
    assert len(screen.rstrip("\n").splitlines()) <= FIRST_LINES, screen
    assert len(screen) <= chars, screen
    assert not LOCAL_PATH.search(markdown), LOCAL_PATH.search(markdown)
    assert not RELATIVE_IMAGE.search(markdown)
    assert len(markdown) <= LIMIT


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_report_is_its_document_rendered(path):
    """A renderer change regenerates the shipped markdowns (``--render``) in its commit."""
    assert render(json.loads(path.read_text())) == path.with_suffix(".md").read_text()


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_report_opens_short_with_no_path_and_no_image_link(path):
    doc = json.loads(path.read_text())
    markdown = render(doc)
    assert_readable(markdown, SHIPPED_CHARS)
    screen = first_screen(markdown)
    if doc["kind"] == "metric":
        # The first screen names only releases the document holds (no "fixed in" invented).
        held = {doc["from"], doc["to"], *(p["jax"] for p in doc["probes"]),
                *(r["jax"] for r in doc.get("interior") or ()),
                *(x for c in (doc.get("interior_check") or {}).get("changes") or ()
                  for x in (*c["came"], *c["went"])),
                *(x for p in doc["needs_a_gpu"] for x in (p["from"], p["to"])),
                *(y["jax"] for y in doc["yanked"]), *(s["jax"] for s in doc["skipped"]),
                *((doc.get("next_step") or {}).get("newest"),)}
        assert set(VERSION.findall(screen)) <= held
        if doc["status"] == "found":
            assert doc["last_old"]["jax"] in screen and doc["first_new"]["jax"] in screen
        shown = shown_program(doc)
        if shown:  # the standalone program's install line and output where it differs
            assert all(end["install"] in screen for end in shown["ends"])
            assert doc["reproduce"] in markdown  # the toolkit's command, folded under it
        else:
            assert doc["reproduce"] in screen  # the toolkit's command


def test_the_culprits_are_named_in_the_first_screen():
    cpu = doc_of("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    assert cpu["explanation"]["culprit"]["name"] in first_screen(render(cpu))
    a6000 = doc_of("bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json")
    assert a6000["explanation"]["culprit"]["name"] == "constant-fill-copy-rewriter"
    assert "constant-fill-copy-rewriter" in first_screen(render(a6000))


def test_the_first_bad_commit_is_linked_in_the_first_screen():
    doc = doc_of("bisect-0.5.3-0.6.0-cpu-jvp_vmap_symbolic_zero-error-e4b85d1c.json")
    screen = first_screen(render(doc))
    first = doc["commits"]["first_bad"]
    # by the 10 characters it is shown by; the whole hash in its section
    assert f"[`{first['sha'][:10]}`](https://github.com/jax-ml/jax/commit/{first['sha'][:10]})" \
        in screen
    assert first["url"] in render(doc) and first["url"] not in screen
    assert first["pr_url"] in screen
    assert "0.6.1" not in screen  # the range does not measure it


def test_sizes_are_mib_everywhere():
    doc = doc_of("bisect-0.5.0-0.10.2-cpu-scan_growth-memory.json")
    # The report's own words and tables (the case's source, quoted as written, aside).
    markdown = re.sub(r"```python\n.*?```", "", render(doc), flags=re.DOTALL)
    assert " MB" not in markdown and "(MB)" not in markdown
    assert "6164.55" in markdown  # 6,464,000,772 bytes / 2**20
    assert 6_464_000_772 / 2**20 == pytest.approx(6164.55, abs=0.005)


def test_no_sentence_counts_nothing_and_crashed_passes_are_said_apart():
    doc = doc_of("bisect-0.9.2-0.10.2-cpu-vmap_matvec_wrong_result-output.json")
    flags = doc["explanation"]["culprit"]["flags"]
    # As documents written before session 38 stored it: a sentence that counts nothing.
    flags.update(kind="none", flag_defaults_changed=0,
                 text="No XLA flag explains it: none of the 0 changed defaults did")
    assert "of the 0 " not in render(doc)
    a6000 = doc_of("bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json")
    tests = a6000["explanation"]["culprit"]["tests"]
    measured = sum(t["release"] == "0.12.0" and t["behaviour"] != "skip" for t in tests)
    assert f"of the {measured} passes measured" in render(a6000)
    assert "passes tried" not in render(a6000)


def test_a_pass_turned_off_is_a_workaround_only_where_it_ran_and_correctness_allows():
    # compiled for a GPU without it: the plan changed, nothing ran: a diagnostic
    a6000 = doc_of("bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json")
    assert "**Workaround" not in render(a6000) and "(diagnostic)" in first_screen(render(a6000))
    # run on the CPU, a pass correctness does not depend on, the right output back: a way out
    matvec = doc_of("bisect-0.9.2-0.10.2-cpu-vmap_matvec_wrong_result-output.json")
    assert "**Workaround:** `--xla_disable_hlo_passes=dot-library-rewriter`" in render(matvec)
    assert "(workaround)" in first_screen(render(matvec))
    unsafe = copy.deepcopy(matvec)  # one correctness depends on: never a fix
    for w in unsafe["explanation"]["culprit"]["workarounds"]:
        w["safe"] = False
    assert "**Workaround" not in render(unsafe) and "(diagnostic)" in render(unsafe)
    cpu = doc_of("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")  # a CPU flag: a user's option
    assert "**Workaround:**" in render(cpu)


def test_the_longest_evidence_is_cut_to_the_comment_limit():
    path = max(SHIPPED, key=lambda p: p.with_suffix(".md").stat().st_size)
    doc = json.loads(path.read_text())
    doc["attribution"]["first_difference"] = ["+ " + "x" * 150] * 800  # 120k characters
    doc["attribution"]["optimized_hlo"] = "differs"
    doc["attribution"].pop("diff", None)
    markdown = render(doc)
    assert len(markdown) <= LIMIT and "comment limit" in markdown
    assert_readable(markdown)


REPRODUCER = {
    "file": "repro.py", "program": "import jax\nprint(jax.__version__)\n", "lines": 2,
    "ends": [{"jax": "0.5.3", "jaxlib": "0.5.3", "role": "last good",
              "install": "pip install 'jax==0.5.3' 'jaxlib==0.5.3' 'numpy==2.2.4'",
              "command": "python repro.py", "output": "no error", "exit": 0},
             {"jax": "0.6.0", "jaxlib": "0.6.0", "role": "first bad",
              "install": "pip install 'jax==0.6.0' 'jaxlib==0.6.0' 'numpy==2.2.4'",
              "command": "python repro.py",
              "output": "TypeError: Argument 'Zero(ShapedArray(float32[3]))' " + "x" * 400,
              "exit": 1}],
    "shows_change": True, "nondeterministic": False, "why_not": None}


def test_a_reproducer_is_the_first_screens_reproduce_block():
    doc = doc_of("bisect-0.5.3-0.6.0-cpu-jvp_vmap_symbolic_zero-error-e4b85d1c.json")
    doc["reproducer"] = REPRODUCER
    markdown = render(doc)
    assert_readable(markdown)
    screen = first_screen(markdown)
    for end in REPRODUCER["ends"]:  # each install pinned from the document's own record
        assert pip_install(doc, end["jax"]) in screen and end["command"] in screen
        assert pinned(pip_install(doc, end["jax"]))
    assert "no error" in screen and "TypeError" in screen
    assert REPRODUCER["program"].strip() in markdown


def test_the_parts_other_helpers_write_render_in_the_first_screen():
    """``hlo_module``, ``commits.came_with == "both"``, ``commits_by_pair`` and the status
    ``fails_everywhere`` (docs/schema.md): each named in a short first screen."""
    doc = doc_of("bisect-0.5.0-0.5.1-cpu-scan_growth-memory-e4b85d1c.json")
    doc["hlo_module"] = {"bundle": "bisect-0.5.0-0.5.1-cpu-scan_growth-memory-hlo",
                         "files": ["module.hlo", "run.sh"], "reproduces": True,
                         "figures": [{"jaxlib": "0.5.0", "figure": 30.5, "unit": "MiB",
                                      "label": "old"}], "why_not": None, "fuel": None}
    both = copy.deepcopy(doc)
    both["commits"].update(came_with="both", jaxlib_gate="xla_extension_version >= 312",
                           first_bad={**doc["commits"]["old_end"], "files": [],
                                      "side_commits": []})
    screen = first_screen(render(both))
    assert "Needs both" in screen and "xla_extension_version >= 312" in screen
    assert "**HLO module**" in screen and "reproduces the change" in screen
    assert both["commits"]["first_bad"]["sha"][:10] in screen
    assert_readable(render(both))
    pairs = copy.deepcopy(doc)
    pairs.pop("reproducer")  # several pairs are named where the ends are alike: no program
    pairs["commits_by_pair"] = [{**pairs.pop("commits"), "pair": ["0.5.0", "0.5.1"],
                                 "kind": "came"}] * 2
    assert first_screen(render(pairs)).count("Came with jaxlib 0.5.1 (0.5.0 → 0.5.1") == 2
    assert_readable(render(pairs), WORST_CHARS)
    everywhere = doc_of("bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json")
    everywhere.update(status="fails_everywhere", everywhere_error={
        "error": "ValueError: need 2 devices", "cause": "too_few_devices",
        "fix": "set XLA_FLAGS=--xla_force_host_platform_device_count=2 at the case's top"})
    screen = first_screen(render(everywhere))
    assert "ValueError: need 2 devices" in screen and "device_count=2" in screen


def test_render_rewrites_the_markdown_from_the_json_alone(tmp_path):
    source = next(p for p in SHIPPED if p.name.startswith("bisect-0.6.0-0.6.2"))
    copied = tmp_path / source.name
    copied.write_text(source.read_text())
    done = subprocess.run([sys.executable, "-m", "jaxbisect", "--render", str(copied)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert copied.with_suffix(".md").read_text() == source.with_suffix(".md").read_text()
    (tmp_path / "other.json").write_text(json.dumps({"kind": "sweep"}))
    (tmp_path / "old.json").write_text(json.dumps({**json.loads(source.read_text()),
                                                   "schema": 1}))
    for bad in ("missing.json", "other.json", "old.json"):
        done = subprocess.run([sys.executable, "-m", "jaxbisect", "--render",
                               str(tmp_path / bad)], capture_output=True, text=True, cwd=REPO,
                              timeout=120)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert not (tmp_path / bad).with_suffix(".md").exists()


@pytest.mark.parametrize("source", [p for p in SHIPPED if (p.parent / (
    (json.loads(p.read_text()).get("hlo_module") or {}).get("bundle") or "-") / "README.md")
    .is_file()], ids=lambda p: p.stem)
def test_render_remakes_the_bundle_readme_from_the_json_alone(tmp_path, source):
    """A stale README beside a copied report comes back as shipped: its install lines from
    the probes' recorded packages, its words from the current renderer."""
    bundle = json.loads(source.read_text())["hlo_module"]["bundle"]
    copied = tmp_path / source.name
    copied.write_text(source.read_text())
    (tmp_path / bundle).mkdir()
    (tmp_path / bundle / "README.md").write_text("stale\n")
    done = subprocess.run([sys.executable, "-m", "jaxbisect", "--render", str(copied)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert ((tmp_path / bundle / "README.md").read_text()
            == (source.parent / bundle / "README.md").read_text())


def end_cells(markdown: str, releases: tuple[str, str]) -> list[str]:
    """The "end" column of the HLO module's table, at each of ``releases``' rows."""
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in markdown.splitlines()
            if line.startswith("| ")]
    header = next(r for r in rows if r[:3] == ["jax", "jaxlib", "end"])
    return [next(r for r in rows if r[0] == v and len(r) == len(header))[2] for v in releases]


@pytest.mark.parametrize("direction, words", [("fix", ["last bad", "first fixed"]),
                                               ("regression", ["last good", "first bad"])])
def test_the_hlo_modules_table_names_the_pair_by_the_answers_direction(tmp_path, direction,
                                                                       words):
    """A fix's HLO table (report and bundle README) calls the newer release the first fixed,
    never the first bad; a regression's as before. Read from the JSON alone (``--render``),
    so an old record renders right."""
    source = REPORTS / "bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json"
    doc = {**json.loads(source.read_text()), "direction": direction}
    # records made before roles followed the direction named every pair so
    for figure, role in zip(doc["hlo_module"]["figures"], ("last good", "first bad")):
        figure["role"] = role
    pair = (doc["last_old"]["jax"], doc["first_new"]["jax"])
    bundle = doc["hlo_module"]["bundle"]
    copied = tmp_path / source.name
    copied.write_text(json.dumps(doc))
    (tmp_path / bundle).mkdir()
    (tmp_path / bundle / "README.md").write_text("stale\n")
    done = subprocess.run([sys.executable, "-m", "jaxbisect", "--render", str(copied)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    markdown = copied.with_suffix(".md").read_text()
    readme = (tmp_path / bundle / "README.md").read_text()
    assert end_cells(markdown, pair) == words
    assert end_cells(readme, pair) == words
    assert f"under the {words[0]} release" in markdown
    assert f"With it the {words[1]} jaxlib" in readme


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=A", "-c", "user.email=a@b",
                           *args], capture_output=True, text=True, check=True).stdout.strip()


def test_a_revert_names_the_change_it_removes_or_lands_again(tmp_path):
    """A first bad commit that reverts: followed through reverts of reverts to the change."""
    git(tmp_path, "init", "-q", "-b", "main")

    def commit(message: str) -> Commit:
        git(tmp_path, "commit", "-q", "--allow-empty", "-m", message)
        sha = git(tmp_path, "rev-parse", "HEAD")
        return Commit(sha=sha, subject=message.splitlines()[0], author="A", date="",
                      parents=(), pr=None, version="", minimum_jaxlib="")

    change = commit("Make scans cheaper (#27001)")
    revert = commit(f"Reverts {change.sha}\n\nPiperOrigin-RevId: 1")
    again = commit(f'Revert "Reverts {change.sha[:12]}"\n\nThis reverts commit {revert.sha}.')
    plain = commit("Unrelated")
    span = CommitRange(tmp_path, "", "", "", (), ())
    assert span.reverted(plain) is None
    assert span.reverted(revert) == {"sha": change.sha, "subject": change.subject, "pr": 27001,
                                     "relands": False, "chain": 1}
    assert span.reverted(again)["sha"] == change.sha and span.reverted(again)["relands"]


def test_an_error_bisections_runs_agree_between_the_lab_the_table_and_the_json(
        recorded_catalogue):
    """The error metric runs each end three times (a crash rate): all three are counted."""
    from fake_lab import FakeLab, scripted

    from jaxbisect.report.document import document
    from jaxbisect.report.markdown.tables import probe_rows
    from jaxbisect.report.terminal import probes_line
    from jaxbisect.search.question import question_from
    from jaxbisect.stages.releases import MetricRequest, bisect_metric

    case = REPO / "repro" / "cases" / "jvp_vmap_symbolic_zero.py"
    request = MetricRequest(start="0.5.3", end="0.6.0", backend="cpu",
                            question=question_from("error", str(case), [], ()))
    lab = FakeLab(scripted(lambda v, n: "no error" if v == "0.5.3" else "TypeError: x"))
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    doc = document(b, None)
    assert doc["search"]["runs"] == len(lab.asked) == 6 and doc["crashes"] == []
    headers, rows = probe_rows(doc)
    assert sum(int(row[headers.index("program runs")]) for row in rows) == len(lab.asked)
    assert f"runs: {len(lab.asked)}," in probes_line(b)  # the terminal's count too


def test_a_change_in_jaxs_python_points_to_the_commits_not_to_a_rebuild():
    doc = doc_of("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    assert "jax-toolbox-triage" in render(doc)  # inside jaxlib: the hand-off below it
    doc["attribution"]["culprit"] = "jax"
    markdown = render(doc)
    assert "jax-toolbox-triage" not in markdown
    (command,) = [line for line in markdown.splitlines() if line.endswith(" --commits")]
    assert command.startswith(doc["reproduce"].split(" --case")[0].replace(
        doc["from"], doc["last_old"]["jax"]).replace(doc["to"], doc["first_new"]["jax"]))


def test_a_python_exception_no_module_placed_points_to_the_commits_first():
    """An error that jax's Python raises before a module exists: ``--commits`` is the next
    step, before the rebuild-based hand-off; a crash is not pointed there."""
    doc = doc_of("bisect-0.5.3-0.6.0-cpu-jvp_vmap_symbolic_zero-error-e4b85d1c.json")
    doc.pop("commits")
    doc["schema"] = 2
    assert python_error(doc) and doc["attribution"]["culprit"] not in ("jax", "xla")
    section = render(doc).split("## Where the change is", 1)[1]
    command = commits_command(doc)
    assert command.endswith("--commits") and command in section
    assert section.index(command) < section.index("jax-toolbox-triage")
    crashed = copy.deepcopy(doc)
    for probe in crashed["probes"]:
        if probe["jax"] == doc["first_new"]["jax"]:
            probe["figure"]["value"] = "crash: SIGSEGV (signal 11)"
    assert not python_error(crashed)
    assert commits_command(doc) not in render(crashed).split("## Where the change is", 1)[1]


def test_ends_that_read_the_same_are_said_once():
    """A change that came and went inside ends with the same message: the headline says the
    message once ("no error at both ends"), never "no error at … and no error at …: the same
    message"; ends that differ in their words are each said."""
    from jaxbisect.report.markdown.answer import answer_line

    doc = doc_of("bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error-e4b85d1c.json")
    line = answer_line(doc).split(" Expected: ")[0]  # EXPECT's sentence says its own
    ends = {p["jax"]: p["figure"]["value"] for p in doc["probes"]}
    assert ends[doc["from"]] == ends[doc["to"]] == "no error"
    assert line.count("no error") == 1 and "at both ends" in line
    assert "the same message" not in line
    other = copy.deepcopy(doc)
    for probe in other["probes"]:
        if probe["jax"] == doc["to"]:
            probe["figure"]["value"] = "ValueError: another"
    line = answer_line(other)
    assert "at both ends" not in line and "ValueError: another" in line
    assert "the same message" in line  # how ends that agree were compared, where they differ


def test_a_tag_on_its_release_branch_says_why_the_dates_go_back():
    """jax-v0.8.3 is tagged after main's last commit on jaxlib 0.8.3: the search line says
    the tag is on its release branch, with both days as the commit table shows them."""
    from jaxbisect.report.markdown.commits import branch_words

    doc = doc_of("bisect-0.8.3-0.9.0-v5e-pallas_bf16_batched_matvec-error-e4b85d1c.json")
    c = doc["commits"]
    said = branch_words(c)
    assert c["from_tag"] in said and "release branch" in said
    assert c["old_end"]["date"][:10] in said and c["new_end"]["date"][:10] in said
    assert said in render(doc)
    c["old_end"] = {**c["old_end"], "date": "2026-01-01T00:00:00+00:00"}  # tagged before
    assert branch_words(c) == ""
    assert branch_words(doc_of("bisect-0.5.0-0.5.1-cpu-scan_growth-memory-e4b85d1c.json")[
        "commits"]) == ""


@pytest.mark.parametrize("reason, said", [
    ("raised: at n_outer 2: XlaRuntimeError: INTERNAL: Unsupported instruction opcode: slice",
     " at n_outer 2: Unsupported instruction opcode: slice"),
    ("raised: at n_outer 2: XlaRuntimeError: INTERNAL: ptxas exited, output: ptxas "
     "/tmp/tempfile-vm-c2cd-8050, line 10; fatal", " at n_outer 2: ptxas exited, output: ptxas "
     "(a temporary file), line 10; fatal"),
    ("crashed: SIGABRT: Check failed: x == 1", ": crashed (SIGABRT): Check failed: x == 1"),
    ("hangs past 60 s", ": hangs past 60 s"),
])
def test_a_pass_that_gave_no_figure_says_why_without_the_exception_class(reason, said):
    from jaxbisect.report.markdown.explain import reason_words

    assert reason_words(reason) == said


def test_a_diff_cut_inside_its_hunk_says_how_many_lines_are_not_kept():
    from jaxbisect.report.markdown.sections import hunks_cut

    whole = ["--- old", "+++ new", "@@ -1,3 +1,2 @@", " a", "-b", "-c", "+d"]
    assert hunks_cut(whole) == []
    assert hunks_cut(whole[:-2]) == [
        "… the hunk goes on: 1 old and 1 new lines not kept with this report"]
    assert hunks_cut(["no hunk"]) == []
    # a record that ends on a removed line: shown, and its replacement said to be not kept
    from jaxbisect.report.markdown.sections import with_hunk_cut

    assert with_hunk_cut(whole[:-2]) == [*whole[:-2], "… the hunk goes on: 1 old and 1 new "
                                         "lines not kept with this report (among the new "
                                         "ones, what replaced the last removed line above)"]
    assert with_hunk_cut(whole) == whole


def test_a_release_without_compiled_statistics_is_never_said_as_not_measured():
    """jax 0.4.20's record carries the harness's "not measured by this release" beside the
    run's peak it measured instead: the page says the statistics are empty."""
    doc = doc_of("bisect-0.4.20-0.5.0-cpu-scan_growth-memory.json")
    assert "not measured by this release" in json.dumps(doc)
    page = render(doc)
    assert "not measured by this release" not in page
    assert "compiled statistics are empty" in page
