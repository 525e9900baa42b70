"""The steps after the answer, run beside each other: each as soon as the steps it needs have
finished, and at most ``jobs`` processes of theirs at a time (``--jobs``).

``Slots`` is that limit: a process of a step takes a slot while it runs (a harness run, a
dump, a flag list, a module compiled alone); a result read back from the store takes none.
Where several wait, the step with the lowest ``first`` goes first (the pipeline gives it to
the longest chain: where the change lies, the explanation, the module and its culprit).
``SlottedLab`` is a lab whose processes take slots; ``run_stages`` the scheduler. One job
is the order of old: each step in the caller's thread, one after the other.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from jaxbisect.lab.locks import KeyedLocks
from jaxbisect.lab.store import COMPLETE

STEP = threading.local()  # the step a thread runs: its ``first`` (SlottedLab's priority)


class Stopped(BaseException):
    """The steps were stopped (a failure elsewhere, Ctrl-C): no process starts now."""


class Slots:
    """At most ``size`` processes at once. Where several wait, the lowest priority goes
    first, then the first come; and a slot stays free for each step that goes before the
    asker (a lower priority) and is under way between two of its processes, or before its
    first (its next one does not queue behind a later step's that took the slot meanwhile).
    A thread that holds a slot takes none again (a step's process that asks the store for
    another result inside it). Once ``stop``ped,
    a slot asked for is ``Stopped``."""

    def __init__(self, size: int):
        self.size = max(1, size)
        self._stopped = False
        self._waiting: list[tuple[int, int]] = []
        self._order = itertools.count()
        self._condition = threading.Condition()
        self._local = threading.local()
        self.making = KeyedLocks()  # a stored result's lock: asked for by two steps at once,
        # it is made once (the second finds it stored)
        self.made: set[str] = set()  # the stored results made by these steps
        # By priority: the steps under way, the slots they hold, the slots they wait for.
        self._under_way: Counter[int] = Counter()
        self._holding: Counter[int] = Counter()
        self._queued: Counter[int] = Counter()

    def began(self, priority: int) -> None:
        """A step at ``priority`` is under way (until ``ended``)."""
        with self._condition:
            self._under_way[priority] += 1

    def ended(self, priority: int) -> None:
        with self._condition:
            self._under_way[priority] -= 1
            self._condition.notify_all()

    def stop(self) -> None:
        with self._condition:
            self._stopped = True
            self._condition.notify_all()

    def _fits(self, ticket: tuple[int, int]) -> bool:
        priority = ticket[0]
        kept = sum(1 for p, n in self._under_way.items() if p < priority and n > 0
                   and not self._holding[p] and not self._queued[p])
        return self._waiting[0] == ticket and self.size - sum(self._holding.values()) > kept

    @contextmanager
    def slot(self, priority: int = 0) -> Iterator[None]:
        if getattr(self._local, "depth", 0):
            self._local.depth += 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        ticket = (priority, next(self._order))
        with self._condition:
            heapq.heappush(self._waiting, ticket)
            self._queued[priority] += 1
            try:
                while not self._fits(ticket):
                    if self._stopped:
                        raise Stopped("the steps were stopped")
                    self._condition.wait()
                if self._stopped:
                    raise Stopped("the steps were stopped")
            except BaseException:  # stopped while waiting: the queue goes on without it
                self._waiting.remove(ticket)
                heapq.heapify(self._waiting)
                raise
            finally:
                self._queued[priority] -= 1
                self._condition.notify_all()
            heapq.heappop(self._waiting)
            self._holding[priority] += 1
            self._condition.notify_all()  # the next in line may fit too
        self._local.depth = 1
        try:
            yield
        finally:
            self._local.depth = 0
            with self._condition:
                self._holding[priority] -= 1
                self._condition.notify_all()


class SlottedStore:
    """A store whose results made now (a process) each take a slot, at ``priority``; read
    back, none. One result asked for by two steps at once is made once: the second, its
    slot taken, finds it stored."""

    def __init__(self, store, slots: Slots, priority: int = 0):
        self._store, self._slots, self._priority = store, slots, priority

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get_or_run(self, key, run: Callable, *, remeasure: bool = False,
                   keep: Callable = lambda value: True, encode: Callable = lambda value: value,
                   decode: Callable = lambda document: document):
        path = str(self._store.path(key))

        def stored():  # under --remeasure too, what another step made just now
            again = remeasure and path not in self._slots.made
            document = None if again else self._store.read(key)
            if document is not None:
                with suppress(ValueError, KeyError, TypeError):  # unusable: made again
                    return decode(document)
            return None

        if (found := stored()) is not None:
            return found
        # The slot first, then the result's own lock: a step waits on another's result only
        # while that one runs (never for a slot the first cannot get).
        with self._slots.slot(self._priority), self._slots.making(path):
            if (found := stored()) is not None:
                return found
            value = run()
            if keep(value):
                self._store.put(key, encode(value))
                self._slots.made.add(path)
            return value

    def get_or_make_folder(self, key, make: Callable, *, remeasure: bool = False):
        folder = self._store.folder(key)
        if (not remeasure or str(folder) in self._slots.made) and (folder / COMPLETE).exists():
            return folder
        with self._slots.slot(self._priority), self._slots.making(str(folder)):
            made = self._store.get_or_make_folder(
                key, make, remeasure=remeasure and str(folder) not in self._slots.made)
            self._slots.made.add(str(folder))
            return made


class SlottedLab:
    """``lab``, each of whose runs and stored results made now takes one of ``slots``, at
    ``priority`` (its step's: where several wait, the lowest goes first)."""

    def __init__(self, lab, slots: Slots, priority: int = 0):
        self._lab, self.slots, self.priority = lab, slots, priority
        self.store = SlottedStore(lab.store, slots, priority)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._lab, name)

    def run(self, release, backend: str, question, number: int, *, timeout: float):
        with self.slots.slot(self.priority):
            return self._lab.run(release, backend, question, number, timeout=timeout)


@dataclass(frozen=True)
class Step:
    """A step of the pipeline: ``after`` the steps it needs (None: after every step before
    it, in the caller's thread: the searches)."""

    name: str
    asked: Callable[[Any], bool]
    run: Callable[[Any], None]
    after: tuple[str, ...] | None = None
    first: int = 0  # where several wait for a slot, the lowest goes first


@dataclass
class Timing:
    """When a step began (seconds since the pipeline began) and how long it took."""

    began: float
    seconds: float

    def as_json(self) -> dict:
        return {"began": round(self.began, 2), "seconds": round(self.seconds, 2)}


@dataclass
class Timings:
    started: float = field(default_factory=time.perf_counter)
    steps: dict[str, Timing] = field(default_factory=dict)

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        """The block's time under ``name``, where it finished (a failure has none)."""
        began = time.perf_counter()
        yield
        self.steps[name] = Timing(began - self.started, time.perf_counter() - began)

    def as_json(self) -> dict:
        return {"steps": {name: t.as_json() for name, t in self.steps.items()},
                "seconds": round(time.perf_counter() - self.started, 2)}


def run_stages(stages: Sequence[Step], state, *, jobs: int, timings: Timings,
               slots: Slots | None = None) -> None:
    """Every step of ``stages`` that ``state`` asks for: the serial ones in this thread in
    order; with ``jobs`` above one, the others beside each other, each once those it needs
    have finished (a step's ``asked`` read then). The first failure (a refusal, Ctrl-C) is
    raised once the steps under way have stopped; no step starts after it."""
    serial_only = jobs <= 1
    pending: list[Step] = []
    for stage in stages:
        if stage.after is None or serial_only:
            _finish(pending, state, timings, slots)
            pending = []
            if stage.asked(state):
                with timings.timed(stage.name):
                    stage.run(state)
        else:
            pending.append(stage)
    _finish(pending, state, timings, slots)


def _finish(stages: list[Step], state, timings: Timings, slots: Slots | None) -> None:
    if not stages:
        return
    stopped = threading.Event()
    futures: dict[str, Future] = {}
    failures: list[BaseException] = []  # in the order they came
    names = {stage.name for stage in stages}
    # The steps each waits for, of these; a step is under way (for the slots' queue) from
    # the moment the last of them has finished, in the thread that finished it.
    waiting = {stage.name: {n for n in stage.after or () if n in names} for stage in stages}
    lock, begun = threading.Lock(), set()

    def stop() -> None:
        stopped.set()
        if slots is not None:
            slots.stop()

    def begin(stage: Step) -> None:  # under ``lock``
        if slots is not None and stage.name not in begun:
            begun.add(stage.name)
            slots.began(stage.first)

    def finished(name: str) -> None:
        with lock:
            for stage in stages:
                if name in waiting[stage.name]:
                    waiting[stage.name].discard(name)
                    if not waiting[stage.name]:
                        begin(stage)

    ended = {stage.name: threading.Event() for stage in stages}
    raised: dict[str, BaseException] = {}

    def go(stage: Step) -> None:
        try:
            for name in stage.after or ():
                if name in ended:
                    ended[name].wait()
                    if name in raised:  # its failure is this step's too
                        raise raised[name]
            if stopped.is_set():
                raise Stopped("the steps were stopped")
            if not stage.asked(state):
                return
            STEP.first = stage.first
            with timings.timed(stage.name):
                stage.run(state)
        except BaseException as exc:
            raised[stage.name] = exc
            if not isinstance(exc, Stopped):
                failures.append(exc)
                stop()
            raise
        finally:
            finished(stage.name)
            ended[stage.name].set()
            with lock:
                if stage.name in begun:
                    slots.ended(stage.first)

    with lock:  # the steps that begin now, before any of them asks for a slot
        for stage in stages:
            if not waiting[stage.name]:
                begin(stage)
    with ThreadPoolExecutor(len(stages), thread_name_prefix="step") as pool:
        for stage in stages:
            futures[stage.name] = pool.submit(go, stage)
        try:
            wait(futures.values(), return_when=FIRST_EXCEPTION)
        except BaseException:  # Ctrl-C here: the steps stop with their processes
            stop()
            raise
        if failures or any(f.done() and f.exception() for f in futures.values()):
            stop()
            wait(futures.values())
    if failures:
        raise failures[0]
