"""The user's XLA flags against each release's own flag list.

XLA aborts a process whose XLA_FLAGS names a flag it does not know ("Unknown flag in
XLA_FLAGS"): a typo, or a flag added or removed between releases. Before anything is measured,
``check_at_ends`` lists the flags of both ends (``python -m repro.xla_flags``, stored like a
probe): a flag neither end knows is the user's mistake (one line, exit 2, with the nearest
names). A flag one end does not know is a fact about the releases: ``FlagCheckedLab`` answers a
run in a release whose XLA does not know a flag of its question with a failed run that says so
(a skip inside the range, no figure at an end), never with a crash.

XLA_FLAGS as XLA reads it (measured, jaxlib 0.5.1): words split at blanks, a value may be
quoted (``--xla_dump_to="a b"``); a flag is ``--name`` or ``--name=value``; ``-name`` and
``--noname`` are unknown flags; a value that does not begin with ``-`` is read as the name of
a file of flags.
"""

from __future__ import annotations

import difflib
import shlex
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from jaxbisect.errors import UserError
from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.harness import MODULE_ANSWERS, HarnessFailed, harness_id, run_module
from jaxbisect.lab.lab import Lab, Say
from jaxbisect.lab.store import Key
from jaxbisect.search.question import Question, Run

NEAREST = 3  # known names offered beside a flag no end knows
Asked = Sequence[tuple[str, str]]  # (option, its XLA_FLAGS value): --xla-flags, --try-xla-flags


def flag_names(xla_flags: str) -> list[str]:
    """The flags an XLA_FLAGS value sets, by name, in order (``--a=1 --b`` -> ``["a", "b"]``).
    A word that is not ``--name[=value]`` is kept whole (``-a=1``): XLA knows no such flag.
    A UserError where XLA would read the value as the name of a file of flags."""
    text = xla_flags.strip()
    if not text:
        return []
    if not text.startswith("-"):
        raise UserError(f"XLA_FLAGS {text!r}: XLA reads a value that does not begin with `-` "
                        f"as the name of a file of flags; give the flags themselves "
                        f"(--name=value)")
    try:
        words = shlex.split(text)
    except ValueError:  # quotes that do not close, a lone backslash: words at blanks
        words = text.split()
    return [word[2:].split("=", 1)[0] if word.startswith("--") and not word.startswith("---")
            else word for word in words]


def nearest(name: str, known: Sequence[str], n: int = NEAREST) -> list[str]:
    """The ``n`` known names most like ``name`` (difflib's ratio), most alike first."""
    bare = name.lstrip("-").split("=", 1)[0]
    return difflib.get_close_matches(bare, sorted(known), n=n, cutoff=0.0)


def unknown_at_both(asked: Asked, lists: Sequence[set[str]],
                    releases: Sequence[str]) -> str | None:
    """The one line that refuses flags no release of ``lists`` knows, or None."""
    known_anywhere = set().union(*lists)
    problems = []
    for option, value in asked:
        for name in flag_names(value):
            if name not in known_anywhere:
                near = ", ".join(f"--{k}" for k in nearest(name, sorted(known_anywhere)))
                shown = name if name.startswith("-") else f"--{name}"
                problems.append(f"{option}: XLA knows no flag {shown} in "
                                f"{' or '.join(f'jax {r}' for r in releases)}"
                                + (f" (nearest: {near})" if near else ""))
    return "; ".join(dict.fromkeys(problems)) or None


def xla_flag_list(lab: Lab, release: Release, backend: str, *, timeout: float) -> list[dict]:
    """XLA's flags in the release (``python -m repro.xla_flags``), stored like a probe."""
    # A backend says which process lists them (backends.Backend.flags_platform): XLA's flag
    # list is one for every backend, and a compile-only process has no device to start.
    platform = backend.flags_platform()
    key = Key(str(release.version), backend, "xla-flags", {"platform": platform}, harness_id())

    def listed() -> dict:  # stored when it is a good one; HarnessFailed: listed again next time
        document = run_module(lab.environment(release, backend).python, "repro.xla_flags",
                              ["--json", "--backend", platform], timeout,
                              answers=MODULE_ANSWERS, platform=platform)
        if document.get("status") != "ok":
            raise HarnessFailed(f"jax {release.version}: {document.get('error')}")
        return document

    return lab.store.get_or_run(key, listed, remeasure=lab.remeasure)["flags"]


Listed = Callable[[Release, str], "set[str] | None"]  # a release's flag names; None: unknown


def lister(lab: Lab, say: Say, timeout: float = 300) -> Listed:
    """``xla_flag_list`` as names; None (said once) where the list cannot be had: the flags
    are then not checked in that release and its runs say what XLA says."""
    seen: dict[tuple[str, str], set[str] | None] = {}

    def names(release: Release, backend: str) -> set[str] | None:
        release = release.environment_release  # a jax commit: the XLA of its release's jaxlib
        key = (str(release.version), backend)
        if key not in seen:
            try:
                seen[key] = {f["name"] for f in xla_flag_list(lab, release, backend,
                                                               timeout=timeout)}
            except UserError:
                raise
            except Exception as exc:  # an old release without XLA_FLAGS=--help, a lost probe
                say(f"jax {release.version}: XLA's flags could not be listed ({exc}); its "
                    f"runs are made as asked")
                seen[key] = None
        return seen[key]

    return names


@dataclass
class FlagCheckedLab:
    """``lab``, except that a run whose XLA_FLAGS names a flag the release's XLA does not
    know is not made: it is a failed run that says so (a skip; at an end, no figure)."""

    lab: Lab
    listed: Listed
    # version -> the flags of the questions asked there that its XLA does not know
    unknown: dict[str, set[str]] = field(default_factory=dict)
    known: dict[str, set[str]] = field(default_factory=dict)   # and those it knows
    ends: tuple[str, ...] = ()   # the releases check_at_ends listed
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def store(self):
        return self.lab.store

    @property
    def remeasure(self) -> bool:
        return self.lab.remeasure

    @property
    def executor(self):
        from jaxbisect.lab.executors import LOCAL

        return getattr(self.lab, "executor", LOCAL)

    def environment(self, release: Release, backend: str):
        return self.lab.environment(release, backend)

    def cheap(self, release: Release, backend: str, question: Question) -> int:
        return self.lab.cheap(release, backend, question)

    def missing(self, release: Release, backend: str, names: Sequence[str]) -> list[str]:
        """The flags of ``names`` that ``release``'s XLA does not know (recorded); [] where
        its flag list cannot be had."""
        listed = self.listed(release, backend) if names else None
        if listed is None:
            return []
        # A jax commit's XLA is its release's jaxlib's: recorded under that release.
        version = str(release.environment_release.version)
        with self._lock:
            self.unknown.setdefault(version, set()).update(n for n in names if n not in listed)
            self.known.setdefault(version, set()).update(n for n in names if n in listed)
        return [n for n in names if n not in listed]

    def check_at_ends(self, asked: Asked, ends: Sequence[Release],
                      backend: str) -> None:
        """Refuse (UserError) flags that neither end's XLA knows, before anything is
        measured."""
        names = list(dict.fromkeys(n for _, value in asked for n in flag_names(value)))
        if not names:
            return
        lists = [self.listed(r, backend) for r in ends]
        if any(names_there is None for names_there in lists):
            return  # an end's flags could not be listed: its runs say what XLA says
        for release in ends:
            self.missing(release, backend, names)  # recorded for the report
        self.ends = tuple(str(r.version) for r in ends)
        problem = unknown_at_both(asked, lists, [str(r.version) for r in ends])
        if problem:
            raise UserError(problem)

    def run(self, release: Release, backend: str, question: Question, number: int, *,
            timeout: float) -> Run:
        missing = self.missing(release, backend, flag_names(question.xla_flags))
        if missing:
            xla_of = str(release.environment_release.version)
            return Run(release=str(release.version), number=number, status="failed",
                       error="; ".join(self.unknown_text(xla_of, n) for n in missing))
        return self.lab.run(release, backend, question, number, timeout=timeout)

    def unknown_text(self, version: str, name: str) -> str:
        """``XLA of jax X does not know --name``, with the ends whose XLA does."""
        knowing = [e for e in self.ends if e != version and name in self.known.get(e, ())]
        text = f"XLA of jax {version} does not know --{name}"
        if not knowing:
            return text
        owners = " and ".join(f"{e}'s" for e in knowing)
        return f"{text} (jax {owners} {'does' if len(knowing) == 1 else 'do'})"

    def document(self, asked: Asked) -> list[dict]:
        """Each asked flag that some release checked does not know: the releases whose XLA
        knows it and those whose XLA does not (``xla_flags_known`` of the report)."""
        out = []
        for option, value in asked:
            for name in dict.fromkeys(flag_names(value)):
                without = sorted((v for v, s in self.unknown.items() if name in s), key=_order)
                if without:
                    out.append({"flag": f"--{name}", "option": option,
                                "known": sorted((v for v, s in self.known.items() if name in s),
                                                key=_order),
                                "unknown": without})
        return out


def _order(version: str):
    from packaging.version import Version

    return Version(version)


def known_line(entry: dict) -> str:
    """One sentence on a flag some releases' XLA does not know."""
    known = ", ".join(f"jax {v}" for v in entry["known"]) or "none of the releases checked"
    return (f"{entry['flag']} ({entry['option']}) is known to XLA in {known}, not in "
            f"{', '.join(f'jax {v}' for v in entry['unknown'])}: a release whose XLA does not "
            f"know it cannot be asked the question as posed, so it is left without a figure "
            f"(a skip), not measured.")
