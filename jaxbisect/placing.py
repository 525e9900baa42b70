"""A search's candidates as placed: each one's runs, what the classifier saw of them and where it
put it, and the search's answer over them. Shared by the search (bisection.py) and the look
inside a range whose ends agree (interior.py), which both build on these records.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .classify import Classifier, Ends, Label, Placement
from .question import Run
from .search import Outcome, SearchResult

Say = Callable[[str], None]
RunAt = Callable[[int, int], Run]                  # (candidate index, run number) -> Run
MakeClassifier = Callable[[Sequence, Sequence], Classifier]


@dataclass(frozen=True)
class Placed:
    """One release: its runs, what the classifier saw of them, and where it put it."""

    index: int
    runs: tuple[Run, ...]
    placement: Placement | None = None
    values: tuple = ()               # the classifier's samples (a noisy metric: one a run)
    # A noisy metric's release between the ends: its rounds, (old, it, new) figures each,
    # measured one after the other.
    rounds: tuple[tuple[float, float, float], ...] = ()

    @property
    def samples(self) -> tuple:
        """Every sample of every run that gave some (a run_time run: each call)."""
        return tuple(s for r in self.runs if r.status == "ok" for s in r.samples)

    @property
    def failure(self) -> Run | None:
        """The run that gave no samples (install, crash, timeout, the program raising)."""
        return next((r for r in self.runs if r.status != "ok"), None)

    @property
    def outcome(self) -> Outcome:
        label = self.placement and self.placement.label
        return {Label.OLD: Outcome.OLD, Label.NEW: Outcome.NEW}.get(label, Outcome.SKIP)

    @property
    def cached(self) -> bool:
        return all(r.cached for r in self.runs)


@dataclass(frozen=True)
class MetricSearch:
    status: str                      # found | alike | undecided | unmeasurable
    result: SearchResult | None      # None when the search never ran (alike, undecided, …)
    placed: dict                     # index -> Placed, in the order first measured
    ends: Ends | None
    reason: str | None = None        # unmeasurable: why
    remeasures: int = 0
    thirds: tuple[int, ...] = ()     # indices far outside both ends
    # A noisy metric: the machine's noise from the first pairs of the ends, and what it lets
    # the runs allowed resolve (see paired_calibration).
    calibration: dict | None = None
    max_runs: int | None = None      # the cap the search ran under (a noisy metric: rounds)
    # index -> (began, ended): seconds since the search began, so that probes made at once
    # (--jobs) are seen to overlap
    spans: dict = field(default_factory=dict)

    def overlapped(self) -> list[tuple[int, int]]:
        """The pairs of probes (indices, in order) that were being measured at the same time."""
        ordered = sorted(self.spans.items())
        return [(i, j) for k, (i, (a, b)) in enumerate(ordered) for j, (c, d) in ordered[k + 1:]
                if a < d and c < b]

    @property
    def runs(self) -> int:
        """Runs made (or taken from the store) in all, the ends' included (a crash rate's
        runs each)."""
        return sum((r.crash_rate or {}).get("runs", 1) for p in self.placed.values()
                   for r in p.runs)


Reduce = Callable[[Run], tuple]


def no_figure(runs: Sequence[Run]) -> Placement:
    """A release that gave nothing to place (failed, or the program raised): a skip, with its
    failed run's error."""
    failure = Placed(0, tuple(runs)).failure
    return Placement(Label.SKIP, None, reason=failure.error if failure else "no samples")


def run_figure(run: Run, reduce: Reduce) -> float | None:
    """A noisy run as one figure: its reduced samples' low quantile (most often its one
    figure already), None when it gave none."""
    if run.status != "ok":
        return None
    numbers = [v for v in reduce(run) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return next(iter(_quantile(numbers, 0.25)), None)


def values_of(runs: Sequence[Run], reduce: Reduce) -> tuple:
    """What the classifier sees of ``runs``: the ones that gave samples, reduced."""
    return tuple(v for run in runs if run.status == "ok" for v in reduce(run))


def _quantile(values: list, q: float) -> tuple:
    ordered = sorted(values)
    if not ordered:
        return ()
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return (ordered[low] + (ordered[high] - ordered[low]) * (position - low),)
