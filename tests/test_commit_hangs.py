"""A jax commit is a candidate like a release, after the search too: one that hangs under a
timing metric is a third behaviour ("hangs past N s", beyond both ends), as a release that
hangs is, and alike commit ends are looked inside as alike release ends are. The commits are
read from a real git repository built here; the runs come from a lab of answers."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fake_lab import FakeLab

from jaxbisect.lab.store import Store
from jaxbisect.report.commits import commits_document
from jaxbisect.report.document import as_stored, document
from jaxbisect.report.markdown import render
from jaxbisect.search.question import Question, Run
from jaxbisect.stages.commits import bisect_commits, commits_in
from jaxbisect.stages.releases import MetricRequest, bisect_metric

OLD, NEW = "0.4.30", "0.4.31"
# A timing read from a command's JSON, declared deterministic so that one run places it.
TIMING = Question(metric="run_time", command=("true",), kind="deterministic")
SECONDS = {"old": 1.0, "new": 3.0}


def git(repo: Path, *args: str, when: int = 0) -> str:
    stamp = f"@{1722300000 + when * 3600} +0000"
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=A", "-c", "user.email=a@b",
                           *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_DATE": stamp,
                               "GIT_COMMITTER_DATE": stamp}).stdout.strip()


def history(root: Path, count: int) -> tuple[Path, list[str]]:
    """A jax repository: jax-v0.4.30 tagged, ``count`` - 1 commits of 0.4.31 that run on
    jaxlib 0.4.30, then 0.4.31's release (needs jaxlib 0.4.31, tagged)."""
    repo = root / "jax"
    (repo / "jax").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shas = []

    def commit(version: str, minimum: str, tag: str = "") -> None:
        (repo / "jax" / "version.py").write_text(
            f'_version: str = "{version}"\n_minimum_jaxlib_version = "{minimum}"\n')
        (repo / "jax" / "step.py").write_text(f"STEP = {len(shas)}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"Step {len(shas)}", when=len(shas))
        if tag:
            git(repo, "tag", tag)
        shas.append(git(repo, "rev-parse", "HEAD"))

    commit(OLD, OLD, f"jax-v{OLD}")
    for _ in range(count - 1):
        commit(NEW, OLD)
    commit(NEW, NEW, f"jax-v{NEW}")
    return repo, shas


def lab_of(states: dict[str, str], tmp_path: Path) -> FakeLab:
    """Each release's or commit's (by its short hash) state: old, new or hangs."""
    def answer(version: str, question, number: int) -> Run:
        state = states.get(version) or states[version.rpartition("+")[2]]
        if state == "hangs":
            return Run(release=version, number=number, status="hung",
                       error="timed out", seconds=60.0)
        if state == "broken":
            return Run(release=version, number=number, status="failed",
                       error="ImportError: cannot import name newer_api", seconds=0.01)
        return Run(release=version, number=number, status="ok",
                   samples=(SECONDS[state],), seconds=0.01)

    return FakeLab(answer, Store(tmp_path / "store"))


def test_a_commit_that_hangs_is_a_third_behaviour_as_a_release_is(recorded_catalogue, tmp_path):
    repo, shas = history(tmp_path, 8)
    states = {OLD: "old", NEW: "new", "0.4.29": "old", **{
        sha[:10]: ("hangs" if i == 3 else "old" if i < 5 else "new")
        for i, sha in enumerate(shas)}}
    lab = lab_of(states, tmp_path)
    b = bisect_metric(recorded_catalogue, MetricRequest(OLD, NEW, "cpu", TIMING), lab,
                      lambda m: None)
    cb = bisect_commits(b, commits_in(repo, lambda m: None), lab, lambda m: None)
    assert cb.came_with == "jax" and cb.first_bad.sha == shas[5]
    hung = cb.search.search.placed[3]  # the middle commit, probed first
    assert 3 in cb.search.search.thirds and hung.placement.third
    assert hung.placement.reason.startswith("hangs past")
    doc = commits_document(cb, b)
    assert doc["third_behaviour"] == [shas[3]]
    step = next(s for s in doc["steps"] if s["sha"] == shas[3])
    assert step["third"] and step["reason"].startswith("hangs past")
    assert shas[3] not in [x["sha"] for x in doc["skipped"]]  # a behaviour, not a skip
    report = document(b, tmp_path / "bisect.md", commits=(cb,))
    assert report["commits"]["third_behaviour"] == [shas[3]]
    assert f"`{shas[3][:10]}`" in render(as_stored(report))  # named in the report
    # A commit's row says what a release's row says of its placement.
    said = {"label", "confidence", "third", "reason", "figure", "classified", "rounds"}
    assert said <= set(report["probes"][0]) and said <= set(step)

    # A release that hangs in the same place of a bisection over releases: the same words.
    releases = bisect_metric(recorded_catalogue,
                             MetricRequest("0.4.29", NEW, "cpu", TIMING),
                             lab_of({**states, OLD: "hangs"}, tmp_path / "releases"),
                             lambda m: None)
    middle = next(p for r, p in releases.probes if str(r.version) == OLD)
    assert middle.placement.third and middle.placement.reason.startswith("hangs past")
    assert (middle.placement.label, middle.outcome) == (hung.placement.label, hung.outcome)


@pytest.mark.parametrize("inside, came_with", [(["old"] * 6, "jaxlib"),
                                               (["old", "old", "new", "old", "old", "old"],
                                                None),
                                               (["old", "old", "broken", "old", "old", "old"],
                                                "jaxlib")])
def test_alike_commit_ends_are_looked_inside(recorded_catalogue, tmp_path, inside, came_with):
    """Every commit on the older jaxlib as the older release (the ends, and within the budget
    those inside): the newer jaxlib's doing. A commit inside unlike both ends: it came and
    went among the commits, never "came with jaxlib"."""
    repo, shas = history(tmp_path, 8)
    states = {OLD: "old", NEW: "new", **{sha[:10]: state for sha, state
                                         in zip(shas, ["old", *inside, "old", "new"])}}
    lab = lab_of(states, tmp_path)
    # The newer jaxlib's side: each commit there as the newer release.
    lab.by_jaxlib = True
    answer = lab.answer
    lab.answer = lambda asked, q, k: answer(
        NEW if asked.partition("@")[2] == NEW else asked.partition("@")[0], q, k)
    b = bisect_metric(recorded_catalogue, MetricRequest(OLD, NEW, "cpu", TIMING), lab,
                      lambda m: None)
    cb = bisect_commits(b, commits_in(repo, lambda m: None), lab, lambda m: None)
    assert cb.came_with == came_with
    inside_doc = commits_document(cb, b)["inside"]["older"]
    assert inside_doc["measured"] and inside_doc["commits"] == 6
    assert [row["sha"] for row in inside_doc["rows"]] == shas[1:7]
    assert inside_doc["runs"] == 6  # one run a commit inside: counted with the search's
    # A commit that cannot be told is said so, as a release inside alike ends is.
    assert inside_doc["cannot_tell"] == [sha for sha, state in zip(shas[1:], inside)
                                         if state == "broken"]
    if came_with is None:
        assert inside_doc["changes"] == [{"came": [shas[2], shas[3]],
                                          "went": [shas[3], shas[4]], "exact": True}]
        assert shas[2][:10] in cb.why_not
    else:
        assert inside_doc["changes"] == []


# --- real: jax 0.5.0 and 0.5.1's wheels, and a history of a fake jax whose answer() decides
# the figure; one commit's answer() never returns ---
TIMED = ("import json, os, jax; new = jax.answer() if hasattr(jax, 'answer') else "
         "int(os.environ['JAX_BISECT_RELEASE'] == '0.5.1'); "
         "print(json.dumps({'run_time': 1.0 + 2.0 * new}))")
BODIES = {"old": "def answer():\n    return 0\n", "new": "def answer():\n    return 1\n",
          "hangs": "def answer():\n    while True:\n        pass\n"}


@pytest.mark.jax
@pytest.mark.full  # waits out a 5 s limit; a release that hangs: test_case_releases
def test_a_real_commit_that_hangs_is_named_as_a_third_behaviour(jax_python, tmp_path):
    from test_commit_bisection import bisect_json, gated_history

    jax_python("0.5.0"), jax_python("0.5.1")
    repo, shas = gated_history(tmp_path, [BODIES[s] for s in
                                          ("old", "old", "hangs", "new", "new")])
    code, doc, err = bisect_json("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu",
                                 "--commits", "--jax-repo", str(repo), "--timeout", "5",
                                 "--metric", "run_time", "--metric-kind", "deterministic",
                                 "--reports", str(tmp_path / "reports"), "--", "python", "-c",
                                 TIMED, cwd=tmp_path)
    assert code == 0, err
    c = doc["commits"]
    assert c["came_with"] == "jax" and c["first_bad"]["sha"] == shas[4]
    assert c["third_behaviour"] == [shas[3]]
    hung = next(st for st in c["steps"] if st["sha"] == shas[3])
    assert hung["third"] and hung["reason"].startswith("hangs past 5 s")
    assert shas[3] not in [x["sha"] for x in c["skipped"]]


def test_a_hang_inside_alike_ends_is_a_third_behaviour_too(recorded_catalogue, tmp_path):
    """The look inside places a candidate that hangs as the search does: beyond both ends."""
    from jaxbisect.search.placing import AgainstEnds

    lab = lab_of({"0.4.29": "old", OLD: "hangs", NEW: "old"}, tmp_path)
    b = bisect_metric(recorded_catalogue, MetricRequest("0.4.29", NEW, "cpu", TIMING), lab,
                      lambda m: None)
    assert b.status == "alike" and b.interior.measured
    (inside,) = b.interior.indices
    assert b.interior.placed[inside].placement.third
    assert b.interior.labels[inside] == AgainstEnds.DIFFERS and b.interior.came_and_went
