"""The commits behind two releases: the JAX commit each wheel records, the XLA commit it pins.

``jaxlib.version._git_hash`` (from jaxlib 0.4.24) names the JAX commit a wheel was built from;
``XLA_COMMIT`` in ``third_party/xla/workspace.bzl`` (later ``revision.bzl``) at that commit
names XLA's. Without the hash, the release tag is the best reference.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

JAX_REPO_URL = "https://github.com/jax-ml/jax"
XLA_REPO_URL = "https://github.com/openxla/xla"


def xla_commit_from_pin(text: str) -> str | None:
    """``XLA_COMMIT = "<40 hex>"`` from third_party/xla/workspace.bzl or revision.bzl."""
    m = re.search(r'^XLA_COMMIT\s*=\s*"([0-9a-f]{40})"', text, re.MULTILINE)
    return m.group(1) if m else None


def xla_commit_in_checkout(jax_repo: Path, jax_commit: str) -> str | None:
    """The XLA commit pinned at ``jax_commit`` in a local clone of JAX, without the network."""
    for pin in ("third_party/xla/revision.bzl", "third_party/xla/workspace.bzl"):
        done = subprocess.run(["git", "-C", str(jax_repo), "show", f"{jax_commit}:{pin}"],
                              capture_output=True, text=True, check=False)
        if done.returncode == 0 and (commit := xla_commit_from_pin(done.stdout)):
            return commit
    return None


def release_commit(document: dict | None) -> dict:
    """The JAX commit a release's jaxlib was built from, and where that answer came from."""
    if not document or document.get("status") != "ok":
        return {"jax": None, "jaxlib": None, "commit": None, "ref": None, "source": None}
    commit = document.get("jaxlib_git_hash")
    # Without the hash (jaxlib < 0.4.24) the tag of the jaxlib's version is the best reference.
    ref = commit or f"jax-v{document['jaxlib']}"
    return {"jax": document["jax"], "jaxlib": document["jaxlib"], "commit": commit, "ref": ref,
            "source": "jaxlib.version._git_hash" if commit else "release tag (no hash in wheel)"}



def commit_range(old: dict | None, new: dict | None, jax_repo: Path | None = None) -> dict:
    """The JAX commits of two releases' wheels, the XLA commits they pin (where a local jax
    clone has them) and the links between them: ``commits``, ``xla_commits``, ``xla_note``,
    ``links``."""
    commits = {"old": release_commit(old), "new": release_commit(new)}
    links: dict[str, str | None] = {"jax_compare": None, "xla_compare": None,
                                    "xla_pin_old": None, "xla_pin_new": None}
    if commits["old"]["jax"] and commits["new"]["jax"]:
        links["jax_compare"] = (f"{JAX_REPO_URL}/compare/jax-v{commits['old']['jax']}"
                                f"...jax-v{commits['new']['jax']}")
    xla = {"old": None, "new": None}
    for side in ("old", "new"):
        ref = commits[side]["ref"]
        if ref:  # the folder holds workspace.bzl (older) or revision.bzl (newer) with XLA_COMMIT
            links[f"xla_pin_{side}"] = f"{JAX_REPO_URL}/tree/{ref}/third_party/xla"
            if jax_repo is not None:
                xla[side] = xla_commit_in_checkout(jax_repo, ref)
    if xla["old"] and xla["new"]:
        links["xla_compare"] = f"{XLA_REPO_URL}/compare/{xla['old']}...{xla['new']}"
        xla_note = None
    else:
        xla_note = ("XLA commits not derived: the wheels record only the JAX commit, and the "
                    "XLA pin (XLA_COMMIT in third_party/xla/workspace.bzl, later revision.bzl) "
                    "needs the JAX sources at that commit"
                    + ("" if jax_repo is None else f"; {jax_repo} did not have them"))
    return {"commits": commits, "xla_commits": xla, "xla_note": xla_note, "links": links}
