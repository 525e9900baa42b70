"""A run stopped or refused part way leaves the finished report it would replace as it was;
Ctrl-C stops a run at once (exit 130) and a rerun resumes; --commits searches below every
pair the answer names. Real runs: the jax history of test_commit_bisection (the 0.5.0 and
0.5.1 wheels' sources, committed step by step), real subprocesses, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fake_lab import FakeLab
from test_commit_bisection import (  # noqa: F401 (a fixture)
    ON_THE_HISTORY,
    STALLING,
    git,
    jax_history,
)

from jaxbisect.lab.jax_history import Commit, CommitRange
from jaxbisect.lab.runs import exit_status_run
from jaxbisect.lab.store import Store
from jaxbisect.pipeline import with_commits
from jaxbisect.search.question import Question
from jaxbisect.stages.releases import MetricRequest, bisect_metric


def bisect(*args: str, cwd: Path, env: dict | None = None, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "jaxbisect", *args], cwd=cwd,
                            env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            **popen)


def question(repo: Path, reports: Path, *more: str) -> list[str]:
    return ["--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--commits",
            "--jax-repo", str(repo), "--no-evidence", "--reports", str(reports), *more,
            "--", "python", "-c", STALLING]


def searched(commits: dict, shas: list[str]) -> str:
    """What the search measured at each commit (by its index in the history) and what it
    skipped: the message of a first bad commit other than the history's."""
    steps = [(shas.index(st["sha"]), st["runs_on"]["jaxlib"] if st.get("runs_on") else "",
              st.get("label"), st.get("error") or st.get("figure")) for st in commits["steps"]]
    skipped = [(shas.index(x["sha"]), x["why"]) for x in commits["skipped"]]
    return f"steps {steps}; skipped {skipped}"


def interrupt(process: subprocess.Popen) -> tuple[int, float]:
    """SIGINT to the run's process group (as a terminal's Ctrl-C): its exit status, and the
    seconds it took to exit."""
    os.killpg(process.pid, signal.SIGINT)
    sent = time.monotonic()
    try:
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    return process.returncode, time.monotonic() - sent


@pytest.mark.jax
@ON_THE_HISTORY
def test_a_refused_or_interrupted_commit_stage_leaves_the_finished_report(
        jax_history, jax_python, tmp_path):  # noqa: F811
    repo, shas = jax_history
    reports = tmp_path / "reports"
    done = bisect(*question(repo, reports), cwd=repo.parent)
    out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err
    files = sorted(reports.glob("bisect-*"))
    finished = {p: p.read_bytes() for p in files}
    commits = json.loads(next(p for p in files if p.suffix == ".json").read_text())["commits"]
    assert commits["first_bad"]["sha"] == shas[7], searched(commits, shas)

    # A clone that lacks the newer release's tag, with nowhere to fetch it from: exit 2.
    lacking = tmp_path / "lacking.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(lacking)], check=True)
    git(lacking, "tag", "-d", "jax-v0.5.1")
    git(lacking, "remote", "remove", "origin")
    refused = bisect(*question(lacking, reports), cwd=repo.parent)
    out, err = refused.communicate(timeout=600)
    assert refused.returncode == 2 and "jax-v0.5.1" in err, err
    assert {p: p.read_bytes() for p in sorted(reports.glob("bisect-*"))} == finished

    # Ctrl-C while a commit runs (measured again: --remeasure): 130 at once, nothing written.
    stall = tmp_path / "stalled"
    stopped = bisect(*question(repo, reports, "--remeasure"), cwd=repo.parent,
                     env={"STALL": str(stall)})
    deadline = time.monotonic() + 300
    while not stall.exists() and stopped.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stall.exists(), stopped.communicate()[1]
    code, seconds = interrupt(stopped)
    assert code == 130 and seconds < 3, (code, seconds, stopped.stderr.read())
    assert {p: p.read_bytes() for p in sorted(reports.glob("bisect-*"))} == finished


@pytest.mark.jax
@ON_THE_HISTORY
def test_ctrl_c_at_any_moment_exits_130_at_once_and_a_rerun_resumes(
        jax_history, jax_python, tmp_path):  # noqa: F811
    """SIGINT to the process group at moments spread over a run measured afresh (the ends,
    the commits): every one exits 130 within 3 s; then the run finishes as it would have."""
    repo, shas = jax_history
    reports = tmp_path / "reports"
    codes = []
    for moment in (0.6, 1.5, 3.0, 5.0):
        run = bisect(*question(repo, reports, "--remeasure"), cwd=repo.parent)
        try:
            run.wait(timeout=moment)
            codes.append(("finished", run.returncode))
            continue
        except subprocess.TimeoutExpired:
            pass
        code, seconds = interrupt(run)
        assert code == 130 and seconds < 3, (moment, code, seconds, run.stderr.read())
        codes.append((moment, code))
    assert sum(code == 130 for _, code in codes) >= 3, codes
    done = bisect(*question(repo, reports), cwd=repo.parent)
    out, err = done.communicate(timeout=600)
    assert done.returncode == 0, err
    commits = json.loads(next(reports.glob("bisect-*.json")).read_text())["commits"]
    assert commits["first_bad"]["sha"] == shas[7], searched(commits, shas)


# --- came and went: the commits below both pairs, in a lab of recorded answers ---

def commits_of(states: list[str], offset: int) -> CommitRange:
    """One pair's commits, each behaving as ``old`` (exit 0) or ``new`` (exit 1)."""
    commits = tuple(
        Commit(sha=f"c{offset + i:04x}".ljust(40, "b"), subject=f"commit {offset + i}",
               author="a", date="2024-07-30", parents=(f"{offset + i:040x}",), pr=None,
               version="0.4.31", minimum_jaxlib="0.4.30",
               timestamp=1722300000 + 3600 * (offset + i))
        for i in range(len(states)))
    return CommitRange(Path("."), "jax-vA", "jax-vB", "0.4.30", commits, ())


def test_came_and_went_each_pair_is_searched_below(recorded_catalogue, tmp_path):
    """0.4.30 and 0.4.33 alike, 0.4.31 between them unlike: the commits where it came
    (0.4.30 → 0.4.31) and where it went (0.4.31 → 0.4.33), each searched, each its part."""
    releases = {"0.4.30": 0, "0.4.31": 1, "0.4.33": 0}
    spans = {("0.4.30", "0.4.31"): commits_of(["old"] * 5 + ["new"] * 3, 0),
             ("0.4.31", "0.4.33"): commits_of(["new"] * 2 + ["old"] * 6, 100)}
    exits = {c.jax_version: 0 if i < 5 else 1
             for i, c in enumerate(spans[("0.4.30", "0.4.31")].candidates)}
    exits.update({c.jax_version: 1 if i < 2 else 0
                  for i, c in enumerate(spans[("0.4.31", "0.4.33")].candidates)})
    lab = FakeLab(lambda v, q, k: exit_status_run(
        releases[v] if v in releases else exits[v], "", v, k), Store(tmp_path / "store"))
    request = MetricRequest("0.4.30", "0.4.33", "cpu",
                            Question(metric="exit_code", command=("true",)), commits=True)
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    assert b.search.status == "alike" and b.interior.came_and_went
    found = with_commits(b, lambda old, new: spans[(str(old.version), str(new.version))], lab,
                         lambda m: None)
    assert len(found) == 2  # several pairs: one part each (the document's commits_by_pair)
    parts = {cb.kind: cb for cb in found}
    assert [str(r.version) for r in parts["came"].pair] == ["0.4.30", "0.4.31"]
    assert [str(r.version) for r in parts["went"].pair] == ["0.4.31", "0.4.33"]
    assert parts["came"].first_bad.sha.startswith("c0005")
    assert parts["went"].first_bad.sha.startswith("c0066")  # 100 + 2, in hex
    assert all(cb.came_with == "jax" for cb in parts.values())


def test_one_pair_keeps_the_commits_part_as_it_was(recorded_catalogue, tmp_path):
    states = ["old"] * 3 + ["new"] * 2
    exits = {c.jax_version: 0 if s == "old" else 1
             for c, s in zip(commits_of(states, 0).candidates, states)}
    lab = FakeLab(lambda v, q, k: exit_status_run(
        {"0.4.30": 0, "0.4.31": 1}.get(v, exits.get(v)), "", v, k), Store(tmp_path / "s"))
    request = MetricRequest("0.4.30", "0.4.31", "cpu",
                            Question(metric="exit_code", command=("true",)), commits=True)
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    (cb,) = with_commits(b, lambda old, new: commits_of(states, 0), lab, lambda m: None)
    assert cb.first_bad.sha.startswith("c0003") and cb.kind == "came" and cb.pair == b.pair


def test_a_repository_that_is_not_jax_is_never_told_to_fetch_jaxs_tags(tmp_path):
    """A git repository of something else: one line, exit 2, saying to clone jax (fetching
    tags into it would not make it jax)."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "README").write_text("not jax\n")
    git(other, "add", "README")
    git(other, "commit", "-q", "-m", "something else")
    done = subprocess.run([sys.executable, "-m", "jaxbisect", "--from", "0.5.0", "--to",
                           "0.5.1", "--commits", "--jax-repo", str(other)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "fetch" not in done.stderr and "clone https://github.com/jax-ml/jax" in done.stderr


def test_the_terminals_commands_carry_the_clone_the_reports_never(tmp_path):
    """--jax-repo and --xla-repo in every command printed here, as typed in the folder; the
    report's (``at`` None) name no clone: a report is the same from any clone."""
    from types import SimpleNamespace

    from jaxbisect import cli
    from jaxbisect.report.document import reproduce_argv, sweep_argv

    (tmp_path / "src" / "jax").mkdir(parents=True)
    request = MetricRequest("0.4.35", "0.4.38", "cpu",
                            Question(metric="exit_code", command=("true",)), commits=True,
                            jax_repo=tmp_path / "src" / "jax", xla_repo=Path("/elsewhere/xla"))
    b = SimpleNamespace(request=request)
    here = reproduce_argv(b, "0.4.35", "0.4.36", at=tmp_path)
    assert here[here.index("--jax-repo") + 1] == "src/jax"
    assert here[here.index("--xla-repo") + 1] == "/elsewhere/xla"
    args, _ = cli.parse(here[1:] if here[0] == "jax-bisect" else here[3:])
    assert args.jax_repo == Path("src/jax") and args.commits
    assert "--jax-repo" not in reproduce_argv(b) and "--xla-repo" not in reproduce_argv(b)
    assert "--jax-repo" not in sweep_argv(b, at=tmp_path)  # the sweep takes no clone


def test_an_interior_budget_of_0_is_off(recorded_catalogue, tmp_path):
    """--interior-budget 0 parses, and measures nothing inside alike ends (the sweep's
    command is given instead)."""
    from jaxbisect import cli

    args, _ = cli.parse(["--from", "0.4.30", "--to", "0.4.33", "--interior-budget", "0"])
    assert args.interior_budget == 0
    asked = []
    lab = FakeLab(lambda v, q, k: asked.append(v) or exit_status_run(0, "", v, k),
                  Store(tmp_path / "store"))
    request = MetricRequest("0.4.30", "0.4.33", "cpu",
                            Question(metric="exit_code", command=("true",)), interior_budget=0)
    b = bisect_metric(recorded_catalogue, request, lab, lambda m: None)
    assert b.search.status == "alike" and not b.interior.measured
    assert sorted(set(asked)) == ["0.4.30", "0.4.33"]


def test_a_rerun_that_changes_only_timings_leaves_the_report(tmp_path):
    """The time limit and the interior's estimate come from the run's own times: a rerun that
    changes only them puts both files back byte for byte; any other change keeps both new."""
    from jaxbisect.files import keep_if_steady, texts_of, write_atomic

    md, js = tmp_path / "r.md", tmp_path / "r.json"

    def write(limit: float, estimate: float, answer: str) -> None:
        write_atomic(md, f"# {answer}\n\nabout {estimate:.0f} s by the ends' own run times\n\n"
                         f"Time limit of a run: {limit:.0f} s (4× the slower end).\n")
        write_atomic(js, json.dumps({"status": answer, "time_limit": {"seconds": limit},
                                     "interior_check": {"estimate": estimate, "budget": 600}}))

    write(30, 4, "alike")
    before = texts_of([md, js])
    write(41, 7, "alike")
    keep_if_steady(before)
    assert texts_of([md, js]) == before
    write(41, 7, "found")
    keep_if_steady(before)
    assert "found" in md.read_text() and "found" in js.read_text()
