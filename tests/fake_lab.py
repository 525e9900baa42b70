"""A lab (jaxbisect/lab/lab.py) of recorded runs, for tests: nothing is installed or run.

``FakeLab(answer)``: run k of a question under a release is ``answer(version, question, k)``,
a Run or a harness document (turned into its run as the real lab turns one). ``recorded``
answers from harness documents recorded from real runs (tests/data/lab/): each is found by
what it says it measured (release, case, parameters, XLA flags, metric), its k-th recording
being run k. A run the lab does not hold is a ``MissingRun`` naming it, never a guess.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from jaxbisect.errors import InstallFailed
from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.lab import Made
from jaxbisect.lab.runs import question_key, run_of_document, store_key
from jaxbisect.lab.store import COMPLETE, Store
from jaxbisect.search.question import Question, Run

RECORDED = Path(__file__).resolve().parent / "data" / "lab"

Answer = Callable[[str, Question, int], "Run | dict | None"]


@dataclass(frozen=True)
class _Version:
    """What a store key needs of a release: its version (and that it is no jax commit)."""

    version: str
    commit: None = None
    key_fields = {}  # a release adds nothing to a key (catalogue.Release.key_fields)


class MissingRun(LookupError):
    """The test asked for a run the fake lab holds no answer for."""


def asked_for(version: str, question: Question, number: int) -> str:
    what = question.label
    if question.case is not None:
        what += f" at {question.case.resolve(question.params)}"
    if question.xla_flags:
        what += f" with XLA_FLAGS {question.xla_flags}"
    return f"run {number} of {question.metric} of {what} under jax {version}"


@dataclass
class FakeLab:
    answer: Answer
    store: Store = field(default_factory=Store)  # what the explanation keeps: modules, flags
    installed: frozenset[str] = frozenset()   # versions whose environment counts as built
    remeasure: bool = False
    # A jax commit's runs: answered as ``answer("VERSION@RELEASE", …)``, RELEASE the one whose
    # environment (jaxlib) it runs on, where the test tells the two sides apart.
    by_jaxlib: bool = False
    asked: list[tuple[str, int, float]] = field(default_factory=list)  # version, run, timeout
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _made: Made = field(default_factory=Made, repr=False)

    def environment(self, release: Release, backend: str):
        raise InstallFailed(f"the fake lab installs nothing (jax {release.version})")

    def run(self, release: Release, backend: str, question: Question, number: int, *,
            timeout: float) -> Run:
        # As the real lab: a run asked for again (or while it is made) is made once.
        return self._made.get((getattr(release, "identity", str(release.version)), backend,
                               question_key(question), number),
                              lambda: self._run(release, question, number, timeout))

    def _run(self, release: Release, question: Question, number: int, timeout: float) -> Run:
        version = str(release.version)
        asked = (f"{version}@{release.runs_on}" if self.by_jaxlib and release.level == "commit"
                 else version)
        with self._lock:
            self.asked.append((asked, number, timeout))
        got = self.answer(asked, question, number)
        if got is None:
            raise MissingRun(f"the fake lab holds no {asked_for(version, question, number)}")
        if isinstance(got, dict):
            return Run(**{**run_of_document(got, version, number).__dict__,
                          "installed": {"jax": got.get("jax"), "jaxlib": got.get("jaxlib")}})
        return got

    def cheap(self, release: Release, backend: str, question: Question) -> bool:
        return str(release.version) in self.installed

    def hold_modules(self, version: str, backend: str, question: Question, lowered: str,
                     optimized: str) -> None:
        """Keep a release's lowered and optimized modules in the store, as the explanation
        finds them once made (explain.hlo_texts)."""
        folder = self.store.folder(store_key(question, _Version(version), backend, "hlo"))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "lowered.txt").write_text(lowered)
        (folder / "optimized.txt").write_text(optimized)
        (folder / COMPLETE).write_text("")

    @property
    def versions_asked(self) -> list[str]:
        """The releases run, each once, in the order first asked for."""
        return list(dict.fromkeys(v for v, _, _ in self.asked))


def document_key(version: str, case: str, params: dict, xla_flags: str, metric: str) -> str:
    return json.dumps([version, case, params, xla_flags, metric], sort_keys=True)


def recorded(documents: Iterable[dict]) -> Answer:
    """``FakeLab``'s answer from recorded harness documents."""
    held: dict[str, list[dict]] = {}
    for doc in documents:
        key = document_key(doc["jax"], doc["case"]["name"], doc["case"]["params"],
                           doc.get("xla_flags") or "", doc["metric"]["name"])
        held.setdefault(key, []).append(doc)

    def answer(version: str, question: Question, number: int) -> dict | None:
        key = document_key(version, question.case.name, question.case.resolve(question.params),
                           question.xla_flags, question.metric)
        runs = held.get(key, [])
        return runs[number - 1] if number <= len(runs) else None

    return answer


def recorded_documents(pattern: str) -> list[dict]:
    """The documents under tests/data/lab/ whose names match ``pattern``."""
    return [json.loads(p.read_text()) for p in sorted(RECORDED.glob(pattern))]


def scripted(figure: Callable[[str, int], object], *, seconds: float = 0.0) -> Answer:
    """An answer from ``figure(version, run number)``: a number, or (a str) the error the
    program raised."""
    def answer(version: str, question: Question, number: int) -> Run:
        value = figure(version, number)
        if isinstance(value, str) and question.metric != "error":
            return Run(release=version, number=number, status="raised", error=value,
                       seconds=seconds)
        return Run(release=version, number=number, status="ok", samples=(value,),
                   seconds=seconds)

    return answer
