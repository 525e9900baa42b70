"""The XLA commit every jax release pins, as a table shipped with the toolkit.

A jaxlib wheel records the JAX commit it was built from (``jaxlib.version._git_hash``), not
XLA's; XLA's is ``XLA_COMMIT`` in ``third_party/xla/revision.bzl`` (earlier
``third_party/xla/workspace.bzl``) at that JAX commit. Reading it needs the JAX sources: a
local clone or GitHub, and many machines have neither. This table, made from a clone by

    python -m jaxbisect.lab.pins --jax-repo PATH [--remote URL] [--out FILE]

holds, for every ``jax-vX.Y.Z`` and ``jaxlib-vX.Y.Z`` tag, the tag's JAX commit and the XLA
commit pinned there, with where and when the table was made. A release newer than the
table's newest tag is not in it: the report says so and falls back to ``--jax-repo`` or
GitHub. Run the command again on a machine whose clone has newer tags to refresh it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from packaging.version import InvalidVersion, Version

from jaxbisect.errors import UserError
from jaxbisect.files import write_json
from jaxbisect.lab import git

PIN_TABLE = Path(__file__).resolve().parent.parent / "data" / "xla_pins.json"
PIN_FILES = ("revision.bzl", "workspace.bzl")  # newer releases first
# Before third_party/xla (jax < 0.4.15), the WORKSPACE's http_archive named XLA's archive.
WORKSPACE_PIN = re.compile(r'"https://github\.com/openxla/xla/archive/([0-9a-f]{40})\.tar\.gz"')
TAG = re.compile(r"^(jax|jaxlib)-v(\d+(?:\.\d+)*)$")   # release tags; -rc tags are not releases
SCHEMA = 1
ABOUT = ("source", "newest_tag", "newest_tag_date", "made")  # where and when a table was made


def xla_commit_from_pin(text: str) -> str | None:
    """``XLA_COMMIT = "<40 hex>"`` from third_party/xla/workspace.bzl or revision.bzl."""
    m = re.search(r'^XLA_COMMIT\s*=\s*"([0-9a-f]{40})"', text, re.MULTILINE)
    return m.group(1) if m else None


def pin_at(repo: Path, ref: str) -> tuple[str, str] | None:
    """(XLA commit, pin file) at ``ref`` of a jax clone (bare or not); None where no pin."""
    for pin_file in PIN_FILES:
        text = git.file_at(repo, ref, f"third_party/xla/{pin_file}")
        if text is not None and (xla := xla_commit_from_pin(text)):
            return xla, pin_file
    text = git.file_at(repo, ref, "WORKSPACE")
    if text is not None and (m := WORKSPACE_PIN.search(text)):
        return m.group(1), "WORKSPACE"
    return None


@dataclass(frozen=True)
class Pin:
    tag: str
    jax_commit: str
    xla_commit: str


@dataclass(frozen=True)
class PinTable:
    """The shipped table: tags -> pins, and where it came from."""

    pins: Mapping[str, Pin]
    source: str = ""          # the clone's remote (or path)
    newest_tag: str = ""      # its newest release tag when the table was made
    newest_tag_date: str = ""
    made: str = ""            # the day the table was made

    @cached_property
    def by_jax_commit(self) -> dict[str, Pin]:
        return {p.jax_commit: p for p in self.pins.values()}

    def describe(self) -> dict:
        return {**{k: getattr(self, k) for k in ABOUT}, "tags": len(self.pins)}

    def tag_for(self, jaxlib: str) -> Pin | None:
        """The pin of the release tag of jaxlib ``jaxlib``: ``jaxlib-v`` (older jaxlib
        releases carry their own tags) before ``jax-v``."""
        return self.pins.get(f"jaxlib-v{jaxlib}") or self.pins.get(f"jax-v{jaxlib}")

    def is_newer(self, jaxlib: str) -> bool:
        """Whether jaxlib ``jaxlib`` is newer than the table's newest tag (not yet in it)."""
        newest = TAG.match(self.newest_tag)
        try:
            return bool(newest) and Version(jaxlib) > Version(newest.group(2))
        except InvalidVersion:
            return False


@dataclass(frozen=True)
class PinFound:
    """One release's XLA pin as the table gives it."""

    xla_commit: str | None
    jax_commit: str | None     # the JAX commit the pin was read at
    source: str                # in words: which commit, from where
    note: str | None = None    # "jaxlib X" where it is newer than the table


TABLE_WORDS = "the table of XLA commits each jax release pins, shipped with the toolkit"


def lookup(release: Mapping, table: PinTable) -> PinFound:
    """The pin of one release (``release_commit``'s dict: jaxlib, commit = the wheel's JAX
    commit or None): from the wheel's commit where the table has it, else from the tag."""
    jaxlib, wheel = release.get("jaxlib"), release.get("commit")
    where = (f"{TABLE_WORDS} (made on {table.made} from {table.source}'s tags up to "
             f"{table.newest_tag})")
    if wheel and (pin := table.by_jax_commit.get(wheel)):
        return PinFound(pin.xla_commit, wheel,
                        f"the wheel's commit {wheel[:10]} (tag {pin.tag}) in {where}")
    if jaxlib and (pin := table.tag_for(jaxlib)):
        differs = (f", not the wheel's own commit {wheel[:10]}, which differs from the tag's "
                   f"and is not in the table" if wheel else " (the wheel records no commit)")
        return PinFound(pin.xla_commit, pin.jax_commit,
                        f"the tag {pin.tag}'s commit {pin.jax_commit[:10]} in {where}{differs}")
    if jaxlib and table.is_newer(jaxlib):
        return PinFound(None, None, "", note=f"jaxlib {jaxlib}")  # newer than the table
    return PinFound(None, None, "")


def load_table(path: Path = PIN_TABLE) -> PinTable | None:
    """The table at ``path``; None where it is missing or unreadable (the report then says
    how the pins were found instead)."""
    try:
        doc = json.loads(Path(path).read_text())
        pins = {tag: Pin(tag, p["jax_commit"], p["xla_commit"])
                for tag, p in doc["pins"].items()}
        return PinTable(pins, *(doc[k] for k in ABOUT))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def release_tags(repo: Path) -> list[str]:
    try:
        tags = git.tags(repo)
    except git.GitFailed as exc:
        raise UserError(f"--jax-repo {repo}: not a git repository ({exc.said})") from None
    return sorted((t for t in tags if TAG.match(t)),
                  key=lambda t: (Version(TAG.match(t).group(2)), t))


def make_table(repo: Path, remote: str | None = None,
               today: dt.date | None = None) -> dict:
    """The table's document from a jax clone: every release tag with a pin."""
    tags = release_tags(repo)
    if not tags:
        raise UserError(f"--jax-repo {repo}: no jax-v*/jaxlib-v* tags (a clone of jax-ml/jax?)")
    pins, without = {}, []
    for tag in tags:
        jax_commit = git.commit(repo, tag)
        found = pin_at(repo, jax_commit) if jax_commit else None
        if found is None:  # before XLA left TensorFlow's tree jax pinned TensorFlow instead
            without.append(tag)
            continue
        pins[tag] = {"jax_commit": jax_commit, "xla_commit": found[0], "pin_file": found[1]}
    newest = max((t for t in tags if t.startswith("jax-v")), default=tags[-1],
                 key=lambda t: Version(TAG.match(t).group(2)))
    newest_date = git.commit_day(repo, newest)
    if remote is None:
        remote = git.origin_url(repo) or str(repo)
    return {"schema": SCHEMA, "source": remote, "newest_tag": newest,
            "newest_tag_date": newest_date,
            "made": (today or dt.datetime.now(dt.UTC).date()).isoformat(),
            "how": "python -m jaxbisect.lab.pins --jax-repo PATH: XLA_COMMIT in "
                   "third_party/xla/revision.bzl (earlier workspace.bzl; before that the "
                   "openxla/xla archive in WORKSPACE) at each tag's commit",
            "tags_without_pin": without, "pins": pins}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m jaxbisect.lab.pins",
                                description="Make the table of the XLA commit each jax release "
                                            "pins, from a clone of jax-ml/jax.")
    p.add_argument("--jax-repo", type=Path, required=True,
                   help="a clone of jax-ml/jax (bare or not) with its release tags")
    p.add_argument("--remote", default=None,
                   help="what to record as the table's source (default: the clone's "
                        "origin URL, else its path)")
    p.add_argument("--out", type=Path, default=PIN_TABLE,
                   help=f"where to write the table (default: {PIN_TABLE})")
    args = p.parse_args(argv)
    try:
        if not args.jax_repo.is_dir():
            raise UserError(f"--jax-repo {args.jax_repo}: no such directory")
        table = make_table(args.jax_repo, args.remote)
    except UserError as exc:
        print(f"python -m jaxbisect.lab.pins: {exc}", file=sys.stderr)
        return exc.exit_status
    write_json(args.out, table)
    print(f"{args.out}: {len(table['pins'])} tags with a pin (newest {table['newest_tag']}, "
          f"{table['newest_tag_date']}); {len(table['tags_without_pin'])} older tags without")
    return 0


if __name__ == "__main__":
    sys.exit(main())
