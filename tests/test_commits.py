"""The XLA commit range: pins from a local jax clone (or the release tag, or GitHub's recorded
answer), and the commits of a local XLA clone that touch the culprit (--xla-repo). Real git
repositories, built here."""

from __future__ import annotations

import io
import subprocess
import urllib.error
from pathlib import Path

import pytest

from jaxbisect.evidence.pin_ranges import (
    GitHubUnreachable,
    commits_touching,
    culprit_commits,
    most_likely,
    pin_online,
    release_pins,
)

GITHUB = Path(__file__).parent / "data" / "github"
FLAG = "xla_cpu_enable_concurrency_optimized_scheduler"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], capture_output=True, text=True, check=True).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str, tag: str | None = None) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", message)
    if tag:
        git(repo, "tag", tag)
    return git(repo, "rev-parse", "HEAD")


def pin(sha: str) -> str:
    return f'XLA_COMMIT = "{sha}"\nXLA_SHA256 = "{"0" * 64}"\n'


@pytest.fixture
def repos(tmp_path):
    """An XLA clone where a flag's default flips between two pins, and a jax clone pinning
    them: the old release in workspace.bzl, the new in revision.bzl, as jax moved it."""
    xla, jax = tmp_path / "xla", tmp_path / "jax"
    for repo in (xla, jax):
        repo.mkdir()
        git(repo, "init", "-q")
    flags = "debug_options_flags.cc"
    x0 = commit(xla, {flags: f"opts.set_{FLAG}(false);\n"}, "Add the concurrency scheduler")
    x1 = commit(xla, {"other.cc": "int x;\n"}, "Unrelated")
    x2 = commit(xla, {flags: f"// {FLAG} is experimental\nopts.set_{FLAG}(false);\n"},
                "Document it")
    x3 = commit(xla, {flags: f"// {FLAG} is experimental\nopts.set_{FLAG}(true);\n"},
                "[XLA:CPU] Turn on the concurrency optimized scheduler by default")
    x4 = commit(xla, {"other.cc": "int y;\n"}, "Unrelated again")
    j_old = commit(jax, {"third_party/xla/workspace.bzl": pin(x0)}, "pin old", "jax-v0.5.0")
    commit(jax, {"third_party/xla/workspace.bzl": "# moved\n",
                 "third_party/xla/revision.bzl": pin(x4)}, "pin new", "jax-v0.5.1")
    j_new = git(jax, "rev-parse", "HEAD")
    return {"xla": xla, "jax": jax, "x": [x0, x1, x2, x3, x4], "jax_old": j_old,
            "jax_new": j_new}


def document(version: str, git_hash: str | None) -> dict:
    return {"status": "ok", "jax": version, "jaxlib": version, "jaxlib_git_hash": git_hash}


def test_pins_from_the_wheels_commits_in_a_local_clone(repos):
    found = release_pins(document("0.5.0", repos["jax_old"]), document("0.5.1", repos["jax_new"]),
                         repos["jax"])
    assert found["xla_commits"] == {"old": repos["x"][0], "new": repos["x"][4]}
    assert found["links"]["xla_compare"].endswith(f"compare/{repos['x'][0]}...{repos['x'][4]}")
    assert found["xla_note"] is None
    assert found["xla_pin_sources"]["old"].endswith(f"at {repos['jax_old']}")


def test_a_commit_missing_from_the_clone_falls_back_to_the_release_tag(repos):
    found = release_pins(document("0.5.0", "f" * 40), document("0.5.1", None), repos["jax"])
    assert found["xla_commits"] == {"old": repos["x"][0], "new": repos["x"][4]}
    assert found["xla_pin_sources"]["old"].endswith("at jax-v0.5.0")
    unknown = release_pins(document("0.4.1", "f" * 40), document("0.5.1", None), repos["jax"])
    assert unknown["xla_commits"]["old"] is None and unknown["links"]["xla_compare"] is None
    assert str(repos["jax"]) in unknown["xla_note"]


def recorded_github(url: str) -> bytes:
    """raw.githubusercontent.com as recorded in tests/data/github; 404 for the rest."""
    ref, pin = url.split("/jax-ml/jax/")[1].split("/third_party/xla/")
    path = GITHUB / f"jax-{ref}-{pin}"
    if not path.exists():
        raise urllib.error.HTTPError(url, 404, "Not Found", {}, io.BytesIO())
    return path.read_bytes()


def test_pins_from_github_recorded_answers_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    old = "0045b03078dbcfc8bdaa2664ddbf90e5f2c4265b"
    new = "006b2904720bf029cb4298ab963f8f50438e79df"
    asked = []

    def fetch(url):
        asked.append(url)
        return recorded_github(url)

    found = release_pins(document("0.5.0", old), document("0.5.1", new), None, fetch)
    assert found["xla_commits"] == {"old": "1e81d47ecb624cb8e75890fe9c1e5b04558ef545",
                                    "new": "b00ea9a0cdde1e3261b31efc503da2788098f4d5"}
    assert found["xla_pin_sources"]["new"] == f"GitHub at {new}"
    assert any(u.endswith(f"{old}/third_party/xla/revision.bzl") for u in asked)  # 404, then
    assert any(u.endswith(f"{old}/third_party/xla/workspace.bzl") for u in asked)
    asked.clear()
    assert pin_online(old, fetch) == "1e81d47ecb624cb8e75890fe9c1e5b04558ef545"
    assert asked == []                                     # a pin never changes: cached


def test_github_unreachable_is_said_once_and_not_asked_again(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    asked = []

    def offline(url):
        asked.append(url)
        raise urllib.error.URLError("Name or service not known")

    with pytest.raises(GitHubUnreachable):
        pin_online("a" * 40, offline)
    found = release_pins(document("0.5.0", "a" * 40), document("0.5.1", "b" * 40), None, offline)
    assert found["xla_commits"] == {"old": None, "new": None}
    assert "GitHub could not be reached" in found["xla_note"] and len(asked) == 2


def test_commits_touching_the_culprit_and_the_most_likely_one(repos):
    x = repos["x"]
    found = commits_touching(repos["xla"], x[0], x[4], FLAG, "true")
    assert [c.sha for c in found] == [x[3], x[2]]          # newest first; -G sees the flip
    assert [c.sets_new_value for c in found] == [True, False]
    assert most_likely(found, FLAG).sha == x[3]
    assert most_likely(commits_touching(repos["xla"], x[0], x[2], FLAG), FLAG).sha == x[2]
    assert commits_touching(repos["xla"], x[0], x[4], "xla_no_such_flag") == []
    assert commits_touching(repos["xla"], "0" * 40, x[4], FLAG) == []   # not in the clone
    assert most_likely([], FLAG) is None


def test_the_explanations_culprit_is_looked_for_between_the_pins(repos):
    """--xla-repo: the flag the explanation names (its new default from the flag search, also
    under a pass culprit's ``flags``), looked for between the two releases' XLA pins."""
    x = repos["x"]
    attribution = {"xla_commits": {"old": x[0], "new": x[4]}}
    flag = {"kind": "flag", "name": f"--{FLAG}",
            "flag_defaults_changed": [{"name": FLAG, "old": "false", "new": "true"}]}
    found = culprit_commits(flag, attribution, repos["xla"])
    assert (found["name"], found["range"]) == (FLAG, f"{x[0]}..{x[4]}")
    assert [c["sha"] for c in found["commits"]] == [x[3], x[2]]
    assert found["most_likely"]["sha"] == x[3] and found["most_likely"]["sets_new_value"]
    under_pass = culprit_commits({"kind": "pass", "name": FLAG, "flags": flag}, attribution,
                                 repos["xla"])
    assert under_pass["most_likely"]["sha"] == x[3]
    assert culprit_commits({"kind": "none", "name": None}, attribution,
                           repos["xla"])["note"] == "no culprit to look for"
    assert "pins" in culprit_commits(flag, {}, repos["xla"])["note"]
