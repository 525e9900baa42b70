"""For a TPU target's pair, the commits that change the jax repository's own jaxlib/ C++
between the two releases are named as the candidates a jaxlib build would test
(stages/commits.py's jaxlib_changes, lab/jax_history.py's jaxlib_commits), on a real git
repository made here."""

from __future__ import annotations

import subprocess
from pathlib import Path

from jaxbisect.stages.commits import jaxlib_changes


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                                          "GIT_COMMITTER_NAME": "t",
                                          "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}
                          ).stdout.strip()


def history(root: Path) -> Path:
    repo = root / "jax"
    (repo / "jax").mkdir(parents=True)
    (repo / "jaxlib" / "mosaic").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")

    def commit(files: dict[str, str], message: str, version: str, tag: str = "") -> None:
        for name, text in {**files, "jax/version.py":
                           f'_version = "{version}"\n_minimum_jaxlib_version = "0.8.3"\n'}.items():
            (repo / name).write_text(text)
        git(repo, "add", "-A", ".")
        git(repo, "commit", "-q", "-m", message)
        if tag:
            git(repo, "tag", tag)

    commit({"jax/a.py": "0", "jaxlib/mosaic/serde.cc": "v7"}, "Release 0.8.3", "0.8.3",
           "jax-v0.8.3")
    commit({"jax/a.py": "1"}, "Python only (#1)", "0.9.0")
    commit({"jaxlib/mosaic/serde.cc": "v8"}, "Mosaic: serialise version 8 (#2)", "0.9.0")
    commit({"jax/a.py": "2"}, "Python again (#3)", "0.9.0")
    commit({"jaxlib/mosaic/layout.cc": "x"}, "Mosaic: infer layout (#4)", "0.9.0", "jax-v0.9.0")
    return repo


def test_the_commits_that_change_jaxlib_are_named_and_only_they(tmp_path):
    part = jaxlib_changes(history(tmp_path), "0.8.3", "0.9.0")
    assert [c["subject"] for c in part["commits"]] == ["Mosaic: serialise version 8 (#2)",
                                                       "Mosaic: infer layout (#4)"]
    assert part["count"] == 2 and [c["pr"] for c in part["commits"]] == [2, 4]
    assert str(tmp_path) not in str(part)  # no path of this machine


def test_a_history_that_cannot_be_read_says_so_without_a_path(tmp_path):
    part = jaxlib_changes(tmp_path / "nothing", "0.8.3", "0.9.0")
    assert part["count"] is None and part["commits"] == []
    assert str(tmp_path) not in part["reason"]
