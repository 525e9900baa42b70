"""How long a run may take, from what was measured (docs/cases.md, "Time limits").

A metric bisection knows nothing of its program's time until the ends have run once: their
first runs are bounded by ``FIRST_RUN_LIMIT``; every later run by ``RUN_FACTOR`` times the
slower end's first run, never under ``RUN_FLOOR``. A run past its limit *hangs*: a behaviour,
recorded once per release (the rest of its batch is not run). The explanation's tests are
bounded by ``TEST_FACTOR`` times the new release's own runs (``TEST_FLOOR`` at least), and the
whole explanation by ``EXPLAIN_BUDGET``. An explicit ``--timeout`` wins over every derived limit.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

FIRST_RUN_LIMIT = 120.0   # an end's first run, before any time of the program is known
RUN_FACTOR = 20.0         # a later run: this many times the slower end's first run …
RUN_FLOOR = 60.0          # … and never less than this
TEST_FACTOR = 10.0        # an explanation's run: this many times the release's own run …
TEST_FLOOR = 30.0         # … and never less than this
EXPLAIN_BUDGET = 600.0    # the whole explanation (flags and passes), by default
INTERIOR_BUDGET = 600.0   # ends alike: the releases inside (interior.py), by default
HANGS = "hangs"           # the error metric's value of a run past its limit


@dataclass(frozen=True)
class TimeLimit:
    """A run's time limit and where it came from, in the user's words."""

    seconds: float
    why: str

    def as_json(self) -> dict:
        return {"seconds": round(self.seconds, 1), "why": self.why}


def run_limit(explicit: float | None, first_runs: Sequence[float | None],
              first: float = FIRST_RUN_LIMIT) -> TimeLimit:
    """The limit of the next run of a bisection. ``first_runs``: each end's first run, its
    seconds (``math.inf`` where it hung, None where it has not run yet); ``first``: an end's
    first run's (a backend whose compiles are known to take minutes allows more:
    backends.Backend.first_run_limit)."""
    if explicit is not None:
        return TimeLimit(explicit, "--timeout")
    finished = [s for s in first_runs if s is not None and math.isfinite(s)]
    if not finished:
        return TimeLimit(first, "an end's first run, before any time is known")
    slower = max(finished)
    if any(s is None for s in first_runs):  # the other end's first run is still ahead
        return _scaled(RUN_FACTOR, "the other end's", slower, first, "an end's first run: ")
    return _scaled(RUN_FACTOR, "the slower end's first run", slower, RUN_FLOOR)


def _scaled(factor: float, what: str, seconds: float, floor: float, head: str = "") -> TimeLimit:
    """``factor`` times ``what`` took (``seconds``), ``floor`` at least."""
    return TimeLimit(max(floor, factor * seconds),
                     f"{head}{factor:g}× {what} ({seconds:.1f} s), {floor:g} s at least")


def explain_limit(explicit: float | None, baseline: Sequence[float]) -> TimeLimit:
    """The limit of one run of an explanation's test: ``TEST_FACTOR`` times the median of
    the release's own runs (``baseline``, seconds), ``TEST_FLOOR`` at least."""
    if explicit is not None:
        return TimeLimit(explicit, "--timeout")
    if not baseline:
        return TimeLimit(RUN_FLOOR, "no run of the release to go by")
    return _scaled(TEST_FACTOR, "the release's own run", statistics.median(baseline), TEST_FLOOR)


class EndsTimer:
    """A bisection's ``run_at`` with its time limits: each run bounded by ``run_limit`` of
    the ends' first runs; a release that hung once is not run again (its hung run is
    returned). ``measure(index, number, seconds)`` makes one run; ``ends`` are the two
    indices whose first runs set the limit; ``hang_is_value``: the error metric, where a
    hang is the run's answer (the sample ``HANGS``), not a missing figure."""

    def __init__(self, measure: Callable, ends: tuple[int, int], explicit: float | None,
                 *, hang_is_value: bool = False, say: Callable[[str], None] = lambda m: None,
                 first: float = FIRST_RUN_LIMIT):
        self.measure, self.ends, self.explicit, self.say = measure, ends, explicit, say
        self.hang_is_value, self.first_limit = hang_is_value, first
        self.first: dict[int, float] = {}
        self.hung: dict[int, object] = {}

    @property
    def limit(self) -> TimeLimit:
        return run_limit(self.explicit, [self.first.get(i) for i in self.ends],
                         self.first_limit)

    def __call__(self, index: int, number: int):
        if index in self.hung:
            return self.hung[index]
        limit = self.limit
        run = self.measure(index, number, limit.seconds)
        hung = run.status == "hung"
        if hung:
            run = replace(run, error=f"hangs past {limit.seconds:.0f} s ({limit.why})")
            self.say(f"jax {run.release}: {run.error}; not run again")
            if self.hang_is_value:
                run = replace(run, status="ok", samples=(HANGS,))
            self.hung[index] = run
        if index in self.ends and index not in self.first:
            self.first[index] = math.inf if hung else run.seconds
        return run


class Deadline:
    """A budget of seconds from now (``clock``: injected by tests)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic):
        self.seconds, self.clock = seconds, clock
        self.started = clock()

    @property
    def left(self) -> float:
        return self.seconds - (self.clock() - self.started)

    @property
    def spent(self) -> bool:
        return self.left <= 0
