"""The commits behind two releases: the JAX commit each wheel records, the XLA commit it pins.

``jaxlib.version._git_hash`` (from jaxlib 0.4.24) names the JAX commit a wheel was built from;
``XLA_COMMIT`` in ``third_party/xla/workspace.bzl`` (later ``revision.bzl``) at that commit
names XLA's. Without the hash, the release tag is the best reference. The pins are read from a
local jax clone (``--jax-repo``), else the pins table shipped with the toolkit
(``jaxbisect/data/xla_pins.json``, see ``jaxbisect.lab.pins``), else GitHub.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from jaxbisect.files import cache_dir, write_json
from jaxbisect.lab import git
from jaxbisect.lab.pins import (
    PIN_FILES,
    TABLE_WORDS,
    PinFound,
    PinTable,
    lookup,
    pin_at,
    xla_commit_from_pin,
)

JAX_REPO_URL = "https://github.com/jax-ml/jax"
XLA_REPO_URL = "https://github.com/openxla/xla"
RAW_URL = "https://raw.githubusercontent.com/jax-ml/jax/{ref}/third_party/xla/{pin}"
Fetch = Callable[[str], bytes]  # a URL's body; raises OSError (urllib's errors included)


def release_commit(document: dict | None) -> dict:
    """The JAX commit a release's jaxlib was built from, and where that answer came from."""
    if not document or document.get("status") != "ok":
        return {"jax": None, "jaxlib": None, "commit": None, "ref": None, "source": None}
    commit = document.get("jaxlib_git_hash")
    # Without the hash (jaxlib < 0.4.24) the tag of the jaxlib's version is the best reference.
    ref = commit or f"jax-v{document['jaxlib']}"
    return {"jax": document["jax"], "jaxlib": document["jaxlib"], "commit": commit, "ref": ref,
            "source": "jaxlib.version._git_hash" if commit else "release tag (no hash in wheel)"}


class GitHubUnreachable(Exception):
    """GitHub did not answer (no network, a proxy, a timeout): stop asking it."""


def github(url: str) -> bytes:
    """The real ``Fetch``: a URL's body from GitHub."""
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read()


def pin_online(ref: str, fetch: Fetch | None = None) -> str | None:
    """The XLA commit pinned at ``ref`` (a JAX commit or tag), read from GitHub and cached:
    a pin at a commit never changes. None where GitHub has no pin there; GitHubUnreachable
    where it does not answer."""
    safe = re.sub(r"[^\w.\-]", "_", ref)
    path = cache_dir() / "xla-pins" / f"{safe}.json"
    try:
        return json.loads(path.read_text())["xla_commit"]
    except (OSError, ValueError, KeyError):
        pass
    for pin_file in PIN_FILES:
        try:
            text = (fetch or github)(RAW_URL.format(ref=ref, pin=pin_file)).decode()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                continue  # this release keeps its pin in the other file (or no such ref)
            raise GitHubUnreachable(f"GitHub answered {exc.code}") from None
        except (OSError, ValueError) as exc:
            raise GitHubUnreachable(str(exc)) from None
        if xla := xla_commit_from_pin(text):
            write_json(path, {"ref": ref, "pin": pin_file, "xla_commit": xla})
            return xla
    return None


def pin_for(release: dict, jax_repo: Path | None, fetch: Fetch | None = None,
            table: PinTable | None = None) -> PinFound:
    """One release's XLA pin (``release_commit``'s dict): the wheel's JAX commit in the local
    clone, else the release tag there (the commit may be missing from the clone), else the
    pins table (the wheel's commit where it has it, else the tag's), else GitHub (both refs)
    where ``fetch`` is given. ``note`` says why the table had none (a release newer than it)."""
    tag = f"jax-v{release['jaxlib']}" if release.get("jaxlib") else None
    refs = [r for r in (release.get("commit"), tag) if r]
    if jax_repo is not None:
        for ref in refs:
            if found := pin_at(jax_repo, ref):
                return PinFound(found[0], git.commit(jax_repo, ref) or ref,
                                f"a jax clone at {ref}")
    note = None
    if table is not None:
        from_table = lookup(release, table)
        if from_table.xla_commit:
            return from_table
        note = from_table.note
    if fetch is not None:
        for ref in refs:
            if found := pin_online(ref, fetch):
                return PinFound(found, ref, f"GitHub at {ref}", note)
    return PinFound(None, None, "", note)


def release_pins(old: dict | None, new: dict | None, jax_repo: Path | None = None,
                 fetch: Fetch | None = None, table: PinTable | None = None,
                 xla_repo: Path | None = None) -> dict:
    """The JAX commits of two releases' wheels, the XLA commits they pin (from a local jax
    clone, the pins table or GitHub) and the links between them: ``commits``,
    ``xla_commits``, ``xla_pin_sources``, ``xla_pin_jax_commits``, ``xla_note``,
    ``xla_commit_count`` (with an XLA clone), ``xla_pins_table``, ``links``."""
    commits = {"old": release_commit(old), "new": release_commit(new)}
    links: dict[str, str | None] = {"jax_compare": None, "xla_compare": None,
                                    "xla_pin_old": None, "xla_pin_new": None}
    if commits["old"]["jax"] and commits["new"]["jax"]:
        links["jax_compare"] = (f"{JAX_REPO_URL}/compare/jax-v{commits['old']['jax']}"
                                f"...jax-v{commits['new']['jax']}")
    pins = {side: PinFound(None, None, "") for side in ("old", "new")}
    unreachable = None
    for side in pins:
        ref = commits[side]["ref"]
        if not ref:
            continue
        # the folder holds workspace.bzl (older) or revision.bzl (newer) with XLA_COMMIT
        links[f"xla_pin_{side}"] = f"{JAX_REPO_URL}/tree/{ref}/third_party/xla"
        try:
            pins[side] = pin_for(commits[side], jax_repo, fetch, table)
        except GitHubUnreachable as exc:
            unreachable, fetch = str(exc), None  # one failure is enough: ask no more
            pins[side] = pin_for(commits[side], jax_repo, None, table)
    xla = {side: pin.xla_commit for side, pin in pins.items()}
    notes = [pin.note for pin in pins.values() if pin.note and not pin.xla_commit]
    count = None
    if xla["old"] and xla["new"]:
        links["xla_compare"] = f"{XLA_REPO_URL}/compare/{xla['old']}...{xla['new']}"
        xla_note = None
        if xla_repo is not None:
            count = git.count_between(xla_repo, xla["old"], xla["new"])
    else:
        newer = (f"{' and '.join(notes)} {'is' if len(notes) == 1 else 'are'} newer than "
                 f"{TABLE_WORDS} (newest {table.newest_tag}, made {table.made}): falling back to a "
                 f"local clone or GitHub; " if notes and table is not None else "")
        xla_note = ("XLA commits not derived: " + newer
                    + "the wheels record only the JAX commit, and the "
                    "XLA pin (XLA_COMMIT in third_party/xla/workspace.bzl, later revision.bzl) "
                    "needs the JAX sources at that commit"
                    + (f"; {jax_repo} did not have them" if jax_repo is not None else "")
                    + (f"; GitHub could not be reached ({unreachable})" if unreachable else "")
                    + ("" if jax_repo is not None else "; --jax-repo PATH reads a local clone"))
    return {"commits": commits, "xla_commits": xla,
            "xla_pin_sources": {side: pin.source or None for side, pin in pins.items()},
            "xla_pin_jax_commits": {side: pin.jax_commit for side, pin in pins.items()},
            "xla_note": xla_note, "xla_commit_count": count,
            "xla_pins_table": table.describe() if table is not None else None,
            "links": links}


@dataclass(frozen=True)
class XlaCommit:
    sha: str
    subject: str
    sets_new_value: bool     # an added line names the culprit together with its new value


def commits_touching(xla_repo: Path, old: str, new: str, name: str,
                     new_value: str | None = None) -> list[XlaCommit]:
    """The commits in ``old..new`` of a local openxla/xla clone whose diff adds or removes a
    line naming ``name`` (``git log -G``; ``-S`` misses a default flipped in place), newest
    first."""
    out = []
    for sha, subject in git.commits_changing(xla_repo, old, new, re.escape(name)):
        sets = new_value is not None and any(
            added.startswith("+") and name in added
            and re.search(rf"\b{re.escape(new_value)}\b", added)
            for added in git.patch(xla_repo, sha).splitlines())
        out.append(XlaCommit(sha, subject, sets))
    return out


def most_likely(commits: list[XlaCommit], name: str) -> XlaCommit | None:
    """The commit that sets the new value, else one naming the culprit in its subject, else
    the newest."""
    for test in (lambda c: c.sets_new_value, lambda c: name in c.subject, lambda c: True):
        if found := next((c for c in commits if test(c)), None):
            return found
    return None


def culprit_commits(culprit: dict, attribution: dict, xla_repo: Path) -> dict:
    """``--xla-repo``: the commits between the two XLA pins, in a local openxla/xla clone,
    that touch the explanation's culprit flag or pass, and the most likely one."""
    pins = attribution.get("xla_commits") or {}
    out = {"name": None, "range": None, "commits": [], "most_likely": None, "note": None}
    if culprit.get("kind") not in ("flag", "pass") or not culprit.get("name"):
        return {**out, "note": "no culprit to look for"}
    if not (pins.get("old") and pins.get("new")):
        return {**out, "note": "the XLA pins of the two releases are not known (see --jax-repo)"}
    name = culprit["name"].split()[0].removeprefix("--")
    defaults = culprit.get("flag_defaults_changed") or (culprit.get("flags") or {}).get(
        "flag_defaults_changed") or []
    change = next((c for c in defaults if c["name"] == name), None)
    commits = commits_touching(xla_repo, pins["old"], pins["new"], name,
                               str(change["new"]) if change else None)
    likely = most_likely(commits, name)
    return {**out, "name": name, "range": f"{pins['old']}..{pins['new']}",
            "commits": [asdict(c) for c in commits],
            "most_likely": asdict(likely) if likely else None,
            "note": None if commits else f"no commit between the pins names {name}"}
