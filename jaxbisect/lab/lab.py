"""The lab: all the metric pipeline asks of JAX releases.

A release's environment (installed, or repaired, when it needs to be), one run of a question
in it, the store of what releases answered, and whether a run would cost little (stored
already, or its environment installed: the search prefers such probes). The bisection, the
explanation, the minimizer and the sweep take a lab; the command line builds the real one
once, from the request's executor and ``--remeasure``. Tests pass a lab of recorded runs
(tests/fake_lab.py) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.environments import Environment, ensure_environment, is_installed
from jaxbisect.lab.executors import LOCAL, Executor
from jaxbisect.lab.locks import KeyedLocks
from jaxbisect.lab.runs import measure_run, question_key, store_key
from jaxbisect.lab.store import STORE, Store
from jaxbisect.search.question import Question, Run

Say = Callable[[str], None]


class Made:
    """Each key's value made once, however many threads ask for it at once: the others wait
    for the first (a run begun ahead of the answer, then asked for by the answer's step)."""

    def __init__(self):
        self.values: dict = {}
        self._making = KeyedLocks()

    def get(self, key, make: Callable[[], object]):
        with self._making(key):
            if key not in self.values:
                self.values[key] = make()
        return self.values[key]


class Lab(Protocol):
    @property
    def store(self) -> Store:
        """Where what releases answered is kept (runs, modules, flag lists)."""

    @property
    def remeasure(self) -> bool:
        """Measure again whatever is stored (``--remeasure``)."""

    def environment(self, release: Release, backend: str) -> Environment:
        """``release``'s environment, installed (or repaired) first where it needs to be."""

    def run(self, release: Release, backend: str, question: Question, number: int, *,
            timeout: float) -> Run:
        """Run ``number`` of ``question`` under ``release``: stored, or made now."""

    def cheap(self, release: Release, backend: str, question: Question) -> int:
        """How little a run of ``question`` under ``release`` would cost: 0 a real run, 1 its
        environment is there, 2 it is stored (search.Cheap)."""


@dataclass(frozen=True)
class RealLab:
    """Real releases: environments by uv, runs as processes (through ``executor``), kept in
    ``store``."""

    say: Say
    remeasure: bool = False
    executor: Executor = field(default=LOCAL, compare=False)
    store: Store = STORE
    made: Made = field(default_factory=Made, compare=False)  # this invocation's runs

    def environment(self, release: Release, backend: str) -> Environment:
        env = ensure_environment(release, backend, progress=self.say, verify=self.remeasure)
        release.prepare(env.python)  # asked ahead of its probe: a commit's checkout made ready
        return env

    def run(self, release: Release, backend: str, question: Question, number: int, *,
            timeout: float) -> Run:
        # Asked twice (the ends, then beside the search), a run is made once: under
        # --remeasure too, which measures again what earlier invocations stored.
        return self.made.get((release.identity, backend, question_key(question), number), lambda: (
            measure_run(release, backend, question, number, timeout=timeout,
                        remeasure=self.remeasure, say=self.say, store=self.store,
                        executor=self.executor)))

    def cheap(self, release: Release, backend: str, question: Question) -> int:
        if self.remeasure:
            return 0
        if self.store.path(store_key(question, release, backend, "metric", run=1)).is_file():
            return 2
        # A commit's environment is its release's, installed for all of them: not the cost.
        return int(release.level == "release" and is_installed(release, backend))
