"""The one place the toolkit runs the ``git`` program: jax's and XLA's clones read, a clone
made, a checkout switched, the toolkit's own commit.

Each function says what it asks of git. Where the answer may be "no" (a ref a clone lacks, a
file not there, a clone that is not one), it is False, None or empty; where git must answer
(a clone to read, a checkout to make), a failure is a ``GitFailed`` naming the repository.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from jaxbisect.errors import UserError
from jaxbisect.files import shown_path


class GitFailed(UserError):
    """git could not run, or exited with a failure; ``said`` is its last line about it."""

    def __init__(self, message: str, said: str):
        super().__init__(message)
        self.said = said


def _git(args: list[str], *, timeout: float | None = None,
         input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` as bytes; OSError or TimeoutExpired where it could not run or finish."""
    return subprocess.run(["git", *args], input=input, capture_output=True, timeout=timeout)


def _text(output: bytes) -> str:
    # As a text-mode subprocess reads it (universal newlines): a message's \r\n or \r is \n.
    return output.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _said(done: subprocess.CompletedProcess[bytes]) -> str:
    lines = _text(done.stderr).strip().splitlines()
    return lines[-1] if lines else f"exit status {done.returncode}"


def _answer(repo: Path, *args: str, timeout: float | None = None) -> str | None:
    """``git -C repo ARGS``'s output where it succeeds; None where it fails or cannot run."""
    try:
        done = _git(["-C", str(repo), *args], timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return _text(done.stdout) if done.returncode == 0 else None


def run(repo: Path, *args: str, timeout: float | None = 300) -> str:
    """``git -C repo ARGS``'s output; a failure is a GitFailed naming the repository and the
    command (``git log in PATH: ...``)."""
    command = args[2] if args[:1] == ("-c",) else args[0]  # a -c NAME=VALUE before it
    try:
        done = _git(["-C", str(repo), *args], timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitFailed(f"git in {shown_path(repo)}: {exc}", str(exc)) from None
    if done.returncode != 0:
        said = _said(done)
        raise GitFailed(f"git {command} in {shown_path(repo)}: {said}", said)
    return _text(done.stdout)


def commit(repo: Path, ref: str) -> str | None:
    """The full hash of ``ref``'s commit in ``repo`` (a tag followed to its commit); None
    where the clone lacks it."""
    return (_answer(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
            or "").strip() or None


def has(repo: Path, ref: str) -> bool:
    """Whether ``repo`` holds ``ref``'s commit."""
    return commit(repo, ref) is not None


def short_head(folder: Path) -> str | None:
    """The abbreviated hash of HEAD of the clone ``folder`` lies in; None where it lies in
    none (an installed package) or git is missing."""
    return (_answer(folder, "rev-parse", "--short", "HEAD", timeout=15) or "").strip() or None


def has_file(repo: Path, ref: str, path: str) -> bool:
    """Whether ``path`` exists at ``ref``."""
    return _answer(repo, "cat-file", "-e", f"{ref}:{path}") is not None


def file_at(repo: Path, ref: str, path: str) -> str | None:
    """``path``'s text at ``ref`` (a bare clone too); None where it is not there."""
    return _answer(repo, "show", f"{ref}:{path}")


def blobs(repo: Path, specs: list[str]) -> list[bytes | None]:
    """The contents of many ``REF:PATH`` at once, in one git process (``cat-file --batch``),
    in the order asked; None for one that is not there."""
    if not specs:
        return []
    try:
        done = _git(["-C", str(repo), "cat-file", "--batch"], timeout=300,
                    input="".join(f"{spec}\n" for spec in specs).encode())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitFailed(f"git cat-file in {shown_path(repo)}: {exc}", str(exc)) from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[-300:]
        raise GitFailed(f"git cat-file in {shown_path(repo)} failed: {said}", said)
    data, found, at = done.stdout, [], 0
    for _ in specs:
        header_end = data.index(b"\n", at)
        header = data[at:header_end].decode().split()
        at = header_end + 1
        if header[-1] == "missing":
            found.append(None)
            continue
        size = int(header[2])
        found.append(data[at:at + size])
        at += size + 1
    return found


def tags(repo: Path, pattern: str | None = None) -> list[str]:
    """The tags of ``repo`` (those matching ``pattern``, a glob); a GitFailed where ``repo``
    is not a clone."""
    return run(repo, "tag", "--list", *([pattern] if pattern else []), timeout=None).split()


def fetch_tags(repo: Path) -> None:
    """Fetch ``repo``'s tags from its ``origin``, where it can (the caller checks for the tag
    it needs)."""
    _answer(repo, "fetch", "--quiet", "--tags", "origin", timeout=600)


def remote_urls(repo: Path) -> list[str]:
    """The URLs of ``repo``'s remotes ([] where it has none or is not a clone)."""
    out = _answer(repo, "remote", "-v") or ""
    return [line.split()[1] for line in out.splitlines() if len(line.split()) > 1]


def origin_url(repo: Path) -> str | None:
    """The URL of ``repo``'s ``origin``; None where it has none."""
    return (_answer(repo, "config", "--get", "remote.origin.url") or "").strip() or None


def clone_bare(url: str, dest: Path) -> None:
    """A bare clone of ``url`` at ``dest``; a GitFailed saying why where none could be made."""
    try:
        done = _git(["clone", "--bare", "--quiet", url, str(dest)], timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitFailed(f"git clone {url}: {exc}", str(exc)) from None
    if done.returncode != 0:
        said = _said(done) if done.stderr.strip() else "failed"
        raise GitFailed(f"git clone {url}: {said}", said)


def clone_shared(repo: Path, dest: Path) -> None:
    """A clone of ``repo`` at ``dest`` that shares its objects, nothing checked out."""
    run(dest.parent, "clone", "--quiet", "--shared", "--no-checkout", str(repo), dest.name)


def sparse_checkout(folder: Path, dirs: tuple[str, ...]) -> None:
    """Check out only ``dirs`` in the clone ``folder`` from now on."""
    run(folder, "sparse-checkout", "set", *dirs)


def checkout(folder: Path, sha: str) -> None:
    """Switch the clone ``folder`` to ``sha`` (detached), whatever its files held."""
    run(folder, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--force",
        "--detach", sha)


def log(repo: Path, *specs: str, fields: str, first_parent: bool = False) -> str:
    """``git log --reverse --format=FIELDS SPECS``: the commits of ``specs``, oldest first
    (``first_parent``: along first parents only)."""
    return run(repo, "log", *(("--first-parent",) if first_parent else ()), "--reverse",
               f"--format={fields}", *specs)


def message(repo: Path, ref: str) -> tuple[str, str, str]:
    """``ref``'s commit: its full hash, its subject and the body of its message."""
    sha, subject, body = run(repo, "log", "-1", "--format=%H%x1f%s%x1f%b", ref).split("\x1f", 2)
    return sha, subject, body.rstrip("\n")


def diff(repo: Path, old: str, new: str, *paths: str) -> str:
    """The unified diff from ``old`` to ``new`` (no context lines), under ``paths``."""
    return run(repo, "diff", "--unified=0", old, new, "--", *paths)


def changed_files(repo: Path, old: str, new: str, *paths: str) -> list[str]:
    """The files that differ between ``old`` and ``new`` (under ``paths``, where given)."""
    return run(repo, "diff", "--name-only", old, new, *(("--", *paths) if paths else ())).split()


def files_at(repo: Path, ref: str) -> list[str]:
    """Every file of ``ref``'s tree."""
    return run(repo, "ls-tree", "-r", "--name-only", ref).split()


def commit_day(repo: Path, ref: str) -> str:
    """The day of ``ref``'s commit (YYYY-MM-DD, the committer's); "" where the clone lacks it."""
    return (_answer(repo, "log", "-1", "--format=%cs", f"{ref}^{{commit}}") or "").strip()


def count_between(repo: Path, old: str, new: str) -> int | None:
    """How many commits ``old..new`` holds; None where the clone lacks them."""
    out = (_answer(repo, "rev-list", "--count", f"{old}..{new}") or "").strip()
    return int(out) if out.isdigit() else None


def commits_changing(repo: Path, old: str, new: str, regex: str) -> list[tuple[str, str]]:
    """(hash, subject) of each commit in ``old..new`` whose diff adds or removes a line
    matching ``regex`` (``git log -G``), newest first; [] where the clone lacks them."""
    out = _answer(repo, "log", "--format=%H%x09%s", "-G", regex, f"{old}..{new}") or ""
    return [(sha, subject) for sha, _, subject in (line.partition("\t")
                                                     for line in out.splitlines())]


def patch(repo: Path, sha: str) -> str:
    """The lines ``sha`` changes (no context, no header); "" where the clone lacks it."""
    return _answer(repo, "show", "--format=", "-U0", sha) or ""
