"""jax's own commits between two releases, as a bisection's candidates (docs/commits.md).

Between releases A and B, jax's main branch carries B's version number and runs on A's jaxlib:
jax's Python needs no build, so a commit's ``jax/`` and ``jax_plugins/`` first on the path of
A's environment *is* that commit. This module reads the history from a clone (the first-parent
chain from A's tag to B's), says which commits jax's own version check lets run on A's jaxlib,
and checks one out for a run: a sparse clone sharing the repository's objects, one a probe
running at once, switched in place so that unchanged files keep their bytecode.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from jaxbisect.errors import UserError
from jaxbisect.files import cache_dir, shown_path
from jaxbisect.lab import git
from jaxbisect.lab.locks import held

JAX_GITHUB = "https://github.com/jax-ml/jax"
SOURCE_DIRS = ("jax", "jax_plugins")  # what a commit puts on the path: all of jax's Python
VERSION_FILE = "jax/version.py"
DONE = ".jaxbisect-checked-out"  # in a checkout: the commit its last finished switch put there
_PREFIX = re.compile(r"[0-9]+(?:\.[0-9]+)*")  # jax's own check_jaxlib_version reads this
_ASSIGNED = r'^{}\s*(?::\s*str)?\s*=\s*["\']([^"\']+)["\']'
_MERGED_PR = re.compile(r"^Merge pull request #(\d+) ")
_SQUASHED_PR = re.compile(r"\(#(\d+)\)\s*$")
_COPYBARA_PR = re.compile(r"^COPYBARA_INTEGRATE_REVIEW=\S*/pull/(\d+)", re.MULTILINE)
# A revert names what it reverts: jax's imports ("Reverts SHA"), git's own ("This reverts
# commit SHA.").
_REVERTS = re.compile(r"^Reverts ([0-9a-f]{7,40})\b|This reverts commit ([0-9a-f]{7,40})",
                      re.MULTILINE)
REVERT_CHAIN = 10  # the most reverts of reverts followed


def numeric(version: str) -> tuple[int, ...]:
    """A version's dotted numeric prefix, as jax's ``check_jaxlib_version`` compares it
    (``0.5.1.dev20250123+db8c8fc37c`` is 0.5.1)."""
    match = _PREFIX.match(version)
    if match is None:
        raise ValueError(f"not a version: {version!r}")
    return tuple(int(part) for part in match.group(0).split("."))


def refusal(jax_version: str, minimum_jaxlib: str, jaxlib: str) -> str | None:
    """Why jax's version check (``jax/_src/lib/__init__.py``, the same rule from 0.4.31 on)
    refuses ``jaxlib`` under a jax of ``jax_version`` and ``minimum_jaxlib``; None where it
    runs."""
    if numeric(jaxlib) < numeric(minimum_jaxlib):
        return f"needs jaxlib >= {minimum_jaxlib} (jax's version check; it runs on {jaxlib})"
    if numeric(jaxlib) > numeric(jax_version):
        return f"jax {jax_version} refuses the newer jaxlib {jaxlib} (jax's version check)"
    return None


def pr_number(subject: str, body: str) -> int | None:
    """The pull request a commit came from: a merge's subject, a squash's ``(#N)``, or the
    ``COPYBARA_INTEGRATE_REVIEW`` line jax's imports carry."""
    for pattern, text in ((_MERGED_PR, subject), (_SQUASHED_PR, subject), (_COPYBARA_PR, body)):
        if match := pattern.search(text):
            return int(match.group(1))
    return None


@dataclass(frozen=True)
class Commit:
    """One commit of jax's history as a candidate: who, when, what, and whether jax's own
    version check lets it run on the older release's jaxlib."""

    sha: str
    subject: str
    author: str
    date: str                    # the committer date, ISO 8601
    parents: tuple[str, ...]
    pr: int | None
    version: str                 # jax's ``_version`` there (the next release's, mid-range)
    minimum_jaxlib: str
    refused: str | None = None   # why it cannot run on the jaxlib asked (None: it can)
    timestamp: int = 0           # the committer date, as jax's own version string takes it
    repo: str = ""               # the clone it was read from (its checkouts are made from it)

    @property
    def short(self) -> str:
        return self.sha[:10]

    @property
    def url(self) -> str:
        return f"{JAX_GITHUB}/commit/{self.sha}"

    @property
    def pr_url(self) -> str | None:
        return f"{JAX_GITHUB}/pull/{self.pr}" if self.pr else None

    @property
    def jax_version(self) -> str:
        """The commit as a version, in the form ``jax.__version__`` takes in a git checkout
        (jax/version.py's ``_version_from_git_tree``): the version, the commit's day, its
        hash (ten characters here; git's abbreviation there)."""
        # The day in UTC (jax takes the machine's): a stored run's key is the same anywhere.
        day = datetime.fromtimestamp(self.timestamp, UTC).strftime("%Y%m%d")
        return f"{self.version}.dev{day}+{self.short}"

    def as_json(self) -> dict:
        return {"sha": self.sha, "subject": self.subject, "author": self.author,
                "date": self.date, "pr": self.pr, "url": self.url, "pr_url": self.pr_url,
                "merge": len(self.parents) > 1}


@dataclass(frozen=True)
class CommitRange:
    """The commits a bisection between releases A and B searches: A's tag (A's own jax, the
    old end), then main's first-parent commits up to the last one that runs on A's jaxlib
    (the new end: B's fork point where B's tag sits on a release branch). ``need_new``: the
    commits after it (B's release preparation raises the minimum jaxlib to B's)."""

    repo: Path
    old_tag: str
    new_tag: str
    jaxlib: str                  # A's jaxlib, which every candidate runs on
    candidates: tuple[Commit, ...]
    need_new: tuple[Commit, ...]

    def runs_on(self, jaxlib: str) -> tuple[Commit, ...]:
        """The commits after the old tag that jax's version check lets run on ``jaxlib`` (the
        newer release's), in history order, each judged for it."""
        judged = (_judged(c, jaxlib) for c in (*self.candidates[1:], *self.need_new))
        return tuple(c for c in judged if c.refused is None)

    def gate(self, commit: Commit) -> str | None:
        """The jaxlib version gate ``commit``'s diff adds to jax's Python (``xla_extension_version
        >= 299``, a ``jaxlib_version`` comparison), or None where it adds none."""
        if not commit.parents:
            return None
        return jaxlib_gate(git.diff(self.repo, commit.parents[0], commit.sha, *SOURCE_DIRS))

    def side_commits(self, merge: Commit) -> list[Commit]:
        """The commits a merge brought in (its second parent's side), newest first."""
        if len(merge.parents) < 2:
            return []
        return _log(self.repo, merge.parents[1], f"^{merge.parents[0]}", f"^{self.old_tag}",
                    first_parent=False)

    def reverted(self, commit: Commit) -> dict | None:
        """What a revert changes: the commit it reverts, followed through reverts of reverts
        to the change itself (``relands``: an even chain puts that change back), with its
        pull request; None for a commit that reverts nothing (or one this clone lacks)."""
        body = git.message(self.repo, commit.sha)[2]
        sha, text, chain, subject = commit.sha, f"{commit.subject}\n{body}", 0, ""
        while (found := _REVERTS.search(text)) and chain < REVERT_CHAIN:
            if not git.has(self.repo, found.group(1) or found.group(2)):
                break
            sha, subject, body = git.message(self.repo, found.group(1) or found.group(2))
            text, chain = f"{subject}\n{body}", chain + 1
        if not chain:
            return None
        return {"sha": sha, "subject": subject, "pr": pr_number(subject, body),
                "relands": chain % 2 == 0, "chain": chain}

    def files(self, commit: Commit) -> list[str]:
        """The files ``commit`` touched (against its first parent)."""
        if not commit.parents:
            return git.files_at(self.repo, commit.sha)
        return git.changed_files(self.repo, commit.parents[0], commit.sha)


_GATE = re.compile(r"\b(_?(?:xla_extension_version|jaxlib_extension_version|jaxlib_version))"
                   r"\s*(>=|<=|==|!=|>|<)\s*(\(?[0-9][0-9, .]*\)?)")


def jaxlib_gate(diff: str) -> str | None:
    """The first comparison with jaxlib's version (``xla_extension_version``,
    ``jaxlib_extension_version``, ``jaxlib_version``) on a line a unified diff adds."""
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            if match := _GATE.search(line):
                name, op, value = match.groups()
                return f"{name.lstrip('_')} {op} {value.strip().rstrip(',')}"
    return None


def cached_clone() -> Path:
    """Where the toolkit keeps its own clone of jax when no ``--jax-repo`` is given."""
    return cache_dir() / "jax.git"


def locate_repo(given: Path | None, say=lambda message: None) -> Path:
    """The jax clone to read: ``--jax-repo``, else the toolkit's own (cloned from GitHub the
    first time). Neither: a UserError saying how to get one."""
    if given is not None:
        if not Path(given).is_dir():
            raise UserError(f"--jax-repo {given}: no such directory")
        if not _release_tags(Path(given)):
            fetch = f"`git -C {given} fetch --tags`, or " if is_jax(Path(given)) else ""
            raise UserError(f"--jax-repo {given}: not a git clone of jax-ml/jax with its "
                            f"jax-v* tags ({fetch}clone {JAX_GITHUB})")
        return Path(given)
    repo = cached_clone()
    if (repo / "HEAD").is_file():
        return repo
    url = os.environ.get("JAX_SCAN_REPRO_JAX_URL") or JAX_GITHUB  # a mirror, where GitHub is not
    say(f"cloning {url} into {shown_path(repo)} (once, about 300 MB) …")
    partial = repo.with_name(repo.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        git.clone_bare(url, partial)
    except git.GitFailed as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise UserError(f"--commits needs a clone of jax and none could be made from {url} "
                        f"({exc.said}): `git clone {JAX_GITHUB}` where you have the network, "
                        f"then pass --jax-repo PATH") from None
    partial.rename(repo)
    return repo


def is_jax(repo: Path) -> bool:
    """Whether ``repo`` is a clone of jax (its tags may be fetched into it): jax's
    version file at its HEAD, or a remote on GitHub's jax."""
    if git.has_file(repo, "HEAD", VERSION_FILE):
        return True
    return any(name in url for url in git.remote_urls(repo)
               for name in ("jax-ml/jax", "google/jax"))


def _release_tags(repo: Path) -> list[str]:
    try:
        return git.tags(repo, "jax-v*")
    except git.GitFailed:
        return []  # not a clone: said by the caller


def ensure_tag(repo: Path, tag: str, say=lambda message: None) -> str:
    """``tag``'s commit in ``repo``, fetched from its remote when missing; a UserError where
    it cannot be had."""
    if (sha := git.commit(repo, tag)) is None:
        say(f"{tag} is not in {shown_path(repo)}; fetching its tags …")
        git.fetch_tags(repo)  # said below where the tag is still missing
        sha = git.commit(repo, tag)
    if sha is None:
        how = (f"`git -C {shown_path(repo)} fetch --tags` where you have the network"
               if is_jax(repo) else f"it is not a clone of jax: clone {JAX_GITHUB}")
        raise UserError(f"{shown_path(repo)} has no tag {tag} (and fetching it failed): {how}")
    return sha


_FIELDS = "%H%x1f%P%x1f%ct%x1f%cI%x1f%an%x1f%s%x1f%b%x1e"


def _log(repo: Path, *specs: str, first_parent: bool = True) -> list[Commit]:
    """The commits of ``specs``, oldest first, with jax's version numbers at each."""
    out = git.log(repo, *specs, fields=_FIELDS, first_parent=first_parent)
    rows = [row.strip("\n").split("\x1f") for row in out.split("\x1e") if row.strip()]
    versions = _versions(repo, [row[0] for row in rows])
    return [Commit(sha=sha, subject=subject, author=author, date=date,
                   parents=tuple(parents.split()), pr=pr_number(subject, body),
                   version=versions[sha][0], minimum_jaxlib=versions[sha][1],
                   timestamp=int(stamp), repo=str(repo))
            for sha, parents, stamp, date, author, subject, body in rows]


def _versions(repo: Path, shas: list[str]) -> dict[str, tuple[str, str]]:
    """jax's ``_version`` and ``_minimum_jaxlib_version`` at each commit, read in one git
    process (``cat-file --batch``)."""
    files = git.blobs(repo, [f"{sha}:{VERSION_FILE}" for sha in shas])
    texts = {sha: "" if blob is None else blob.decode(errors="replace")
             for sha, blob in zip(shas, files, strict=True)}
    return {sha: (_assigned(text, "_version"), _assigned(text, "_minimum_jaxlib_version"))
            for sha, text in texts.items()}


def _assigned(text: str, name: str) -> str:
    match = re.search(_ASSIGNED.format(name), text, re.MULTILINE)
    return match.group(1) if match else ""


def commit_range(repo: Path, old: str, new: str, jaxlib: str,
                 say=lambda message: None) -> CommitRange:
    """The candidates between releases ``old`` and ``new`` (versions) in ``repo``, each run
    on ``jaxlib`` (``old``'s): see CommitRange."""
    old_tag, new_tag = f"jax-v{old}", f"jax-v{new}"
    old_sha = ensure_tag(repo, old_tag, say)
    ensure_tag(repo, new_tag, say)
    start = _log(repo, f"{old_sha}^!")[0]
    chain = _log(repo, f"{old_tag}..{new_tag}")
    judged = [_judged(c, jaxlib) for c in [start, *chain]]
    last = max((i for i, c in enumerate(judged) if c.refused is None), default=0)
    return CommitRange(repo, old_tag, new_tag, jaxlib, tuple(judged[:last + 1]),
                       tuple(judged[last + 1:]))


def jaxlib_commits(repo: Path, old: str, new: str) -> list[Commit]:
    """The commits between releases ``old`` and ``new`` that change the jax repository's own
    ``jaxlib/`` (its C++: Pallas's Mosaic dialect and its serialisation live there), oldest
    first: the candidates a build of jaxlib would test, where the toolkit runs jax's Python
    only."""
    return _log(repo, f"jax-v{old}..jax-v{new}", "--", "jaxlib/", first_parent=False)


def _judged(commit: Commit, jaxlib: str) -> Commit:
    if not commit.version or not commit.minimum_jaxlib:
        return replace(commit, refused=f"no jax version in {VERSION_FILE} there")
    return replace(commit, refused=refusal(commit.version, commit.minimum_jaxlib, jaxlib))


class Checkouts:
    """Sparse clones of one repository (``jax/`` and ``jax_plugins/`` only, objects shared
    with it), one a run at once: a run takes a free one, the one already at its commit where
    there is one (``prepare``: made ahead, while another probe runs), else the one used least
    recently, and switches it to its commit."""

    def __init__(self, repo: Path, root: Path):
        self.repo, self.root = Path(repo).resolve(), root
        self._busy: set[int] = set()
        self._at: dict[int, str] = {}       # slot -> the commit it was last switched to
        self._used: dict[int, float] = {}   # slot -> when it was last taken
        self._preparing: dict[str, threading.Event] = {}  # commit -> set once it is ready
        self._lock = threading.Lock()

    @contextmanager
    def _slot(self, sha: str) -> Iterator[Path]:
        with self._lock:
            free = [i for i in range(len(self._used)) if i not in self._busy]
            ready = [i for i in free if self._at.get(i) == sha]
            slot = (ready or sorted(free, key=self._used.__getitem__) or [len(self._used)])[0]
            self._busy.add(slot)
            self._used[slot] = time.monotonic()
        try:
            folder = self.root / f"slot-{slot}"
            self.root.mkdir(parents=True, exist_ok=True)
            # Another process (a second bisection on this cache) may use the same slot.
            with held(folder.with_name(folder.name + ".lock-dir")):
                self._switch(folder, sha)
                with self._lock:
                    self._at[slot] = sha
                yield folder
        finally:
            with self._lock:
                self._busy.discard(slot)

    @contextmanager
    def at(self, sha: str) -> Iterator[Path]:
        """A folder whose ``jax/`` is ``sha``'s, for the ``with`` block: put it first on the
        path of the older release's Python (one being prepared is waited for)."""
        with self._lock:
            preparing = self._preparing.get(sha)
        if preparing is not None:
            preparing.wait()
        with self._slot(sha) as folder:
            yield folder

    def prepare(self, sha: str, python: Path) -> None:
        """A slot switched to ``sha`` and its changed modules compiled by ``python`` (at the
        lowest priority), so that the probe that comes for it finds it ready."""
        with self._lock:
            if sha in self._preparing or sha in self._at.values():
                return
            self._preparing[sha] = ready = threading.Event()
        try:
            with self._slot(sha) as folder:
                subprocess.run([str(python), "-m", "compileall", "-q", "-j", "1",
                                *(str(folder / d) for d in SOURCE_DIRS
                                  if (folder / d).is_dir())],
                               capture_output=True, timeout=600, preexec_fn=lambda: os.nice(19))
        finally:
            with self._lock:
                del self._preparing[sha]
            ready.set()

    def _switch(self, folder: Path, sha: str) -> None:
        if not (folder / ".git").exists():
            shutil.rmtree(folder, ignore_errors=True)
            git.clone_shared(self.repo, folder)
            git.sparse_checkout(folder, SOURCE_DIRS)
        else:
            marker = folder / DONE
            # Trusted only where a switch finished: one stopped half-way (Ctrl-C) left HEAD as
            # it was and some files of the other commit.
            finished = marker.read_text().strip() if marker.is_file() else ""
            if finished == sha:
                return
            marker.unlink(missing_ok=True)
            if here := git.commit(folder, "HEAD"):
                # bytecode is checked by a source's time and size: drop the changed ones'
                for path in git.changed_files(folder, here, sha, *SOURCE_DIRS):
                    stale(folder / path)
        git.checkout(folder, sha)
        (folder / DONE).write_text(sha + "\n")


_POOLS: dict[tuple[Path, Path], Checkouts] = {}
_POOLS_LOCK = threading.Lock()


def checkouts(repo: Path) -> Checkouts:
    """The one pool of checkouts of ``repo`` in this process (under the cache of the moment):
    probes run at once (``--jobs``) take different slots of it."""
    key = (Path(repo).resolve(), cache_dir())
    with _POOLS_LOCK:
        if key not in _POOLS:
            digest = hashlib.sha256(str(key[0]).encode()).hexdigest()[:12]
            _POOLS[key] = Checkouts(key[0], key[1] / "checkouts" / digest)
        return _POOLS[key]


def stale(source: Path) -> None:
    """Remove ``source``'s cached bytecode (``__pycache__/NAME.*.pyc``)."""
    if source.suffix != ".py":
        return
    for pyc in (source.parent / "__pycache__").glob(f"{source.stem}.*.pyc"):
        pyc.unlink(missing_ok=True)
