"""The pipeline's stages (pipeline.py) with a lab of answers: the report is written once, after
the last stage; a refusal (exit 2) or Ctrl-C at a later stage leaves an earlier report of the
same question byte for byte as it was; a finished rerun with the same figures leaves it too.
The jax commits come from a real git repository built here."""

from __future__ import annotations

import shutil

import pytest
from fake_lab import FakeLab
from test_commit_hangs import git, history

from jaxbisect import pipeline
from jaxbisect.cli import parse
from jaxbisect.errors import UserError
from jaxbisect.lab.runs import exit_status_run
from jaxbisect.lab.store import Store
from jaxbisect.search.rounds import Status

OLD, NEW = "0.4.30", "0.4.31"
FIRST_BAD = 5  # of history()'s 8 commits: 0 the old tag … 7 the release's preparation


def lab_of(store: Store, shas: list[str], interrupt: bool = False) -> FakeLab:
    """0.4.30 exits 0, 0.4.31 exits 1; a commit by its place in ``shas`` (found by its short
    hash); ``interrupt``: Ctrl-C at the first commit run."""
    places = {sha[:10]: i for i, sha in enumerate(shas)}

    def answer(version: str, question, number: int):
        if version in (OLD, NEW):
            return exit_status_run(int(version == NEW), "", version, number)
        if interrupt:
            raise KeyboardInterrupt
        return exit_status_run(int(places[version.rpartition("+")[2]] >= FIRST_BAD), "",
                               version, number)

    return FakeLab(answer, store)


def run(repo, reports, lab):
    args, command = parse(["--from", OLD, "--to", NEW, "--backend", "cpu", "--commits",
                           "--jax-repo", str(repo), "--reports", str(reports), "--no-evidence",
                           "--", "true"])
    return pipeline.bisect(args, command, lambda m: None, lab=lab)


def test_a_later_stage_stopped_leaves_the_finished_report_as_it_was(recorded_catalogue,
                                                                     tmp_path):
    repo, shas = history(tmp_path, 8)
    store = Store(tmp_path / "store")
    done = run(repo, tmp_path / "reports", lab_of(store, shas))
    assert done.bisection.status == Status.FOUND
    assert done.doc["commits"]["first_bad"]["sha"] == shas[FIRST_BAD]
    files = sorted((tmp_path / "reports").iterdir())
    texts = {p: p.read_bytes() for p in files}

    # Ctrl-C in the commits stage (the releases stage has run again, from the lab's answers)
    with pytest.raises(KeyboardInterrupt):
        run(repo, tmp_path / "reports", lab_of(Store(tmp_path / "fresh"), shas, interrupt=True))
    assert {p: p.read_bytes() for p in files} == texts
    assert sorted((tmp_path / "reports").iterdir()) == files

    # A refusal in the commits stage: a clone without the newer release's tag
    lacking = tmp_path / "lacking"
    shutil.copytree(repo, lacking)
    git(lacking, "tag", "-d", f"jax-v{NEW}")
    with pytest.raises(UserError, match=f"jax-v{NEW}"):
        run(lacking, tmp_path / "reports", lab_of(store, shas))
    assert {p: p.read_bytes() for p in files} == texts

    # Finished again with the same figures: the files as they were
    run(repo, tmp_path / "reports", lab_of(store, shas))
    assert {p: p.read_bytes() for p in files} == texts


def test_every_step_is_timed_and_the_times_stay_out_of_the_report(recorded_catalogue,
                                                                   tmp_path):
    """What each step cost is the run's (``timings``: printed with ``--json``), never the
    report's: a rerun with the same figures leaves the report's files as they were."""
    from jaxbisect.report.terminal import timings_line

    repo, shas = history(tmp_path, 8)
    store = Store(tmp_path / "store")
    done = run(repo, tmp_path / "reports", lab_of(store, shas))
    timings = done.timings.as_json()
    assert {"setup", "releases", "jax commits", "report"} <= set(timings["steps"])
    assert "explanation" not in timings["steps"]  # --no-evidence: not asked, not timed
    assert all(t["seconds"] >= 0 and t["began"] <= timings["seconds"]
               for t in timings["steps"].values())
    assert timings_line(timings).startswith("time: ")
    for path in (tmp_path / "reports").glob("*.json"):
        assert "timings" not in path.read_text()
