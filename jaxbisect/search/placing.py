"""A search's candidates as placed: each one's runs, what the classifier saw of them and where it
put it, and the search's answer over them. Shared by the search (metric_search.py), the look
inside a range whose ends agree (interior.py) and the sweep, which all build on these records;
with the words a report gives a placement, one vocabulary (the search's answer itself:
search.Status; a placement's label: classify.Label).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from jaxbisect.search.classify import Classifier, Ends, Label, Paired, Placement
from jaxbisect.search.question import Run
from jaxbisect.search.rounds import Outcome, SearchResult, Status

Say = Callable[[str], None]
RunAt = Callable[[int, int], Run]                  # (candidate index, run number) -> Run
MakeClassifier = Callable[[Sequence, Sequence], Classifier]


class AgainstEnds(enum.StrEnum):
    """A candidate placed against two ends that agree (:func:`place_against_ends`), as the
    report's interior rows say it."""

    OLD = "old"                    # the ends' behaviour (Label.OLD)
    DIFFERS = "differs"            # a third behaviour, unlike both ends
    CANNOT_TELL = "cannot tell"    # no figure, or not placed within the runs allowed

    @classmethod
    def of(cls, placement: Placement | None) -> AgainstEnds:
        if placement is not None and placement.label is Label.OLD:
            return cls.OLD
        if placement is not None and placement.third:
            return cls.DIFFERS
        return cls.CANNOT_TELL


class Shown(enum.StrEnum):
    """A release's label in a report where the classifier's (classify.Label) does not say it."""

    MEASURED = "measured"               # measured, with nothing to place it against
    NO_FIGURE = "no figure"             # measured, and it gave no figure
    THIRD = "third behaviour"           # the sweep's: like neither end
    LIKE_THE_ENDS = "like the ends"     # the sweep's: ends that agree, and it as they are


class Verdict(enum.StrEnum):
    """Two settings of one question compared (two releases, one with and without a flag)."""

    CHANGED = "changed"
    SAME = "same"
    CANNOT_TELL = "cannot tell"    # a noisy metric the paired test left undecided: never SAME
    NO_FIGURE = "no figure"


class Behaviour(enum.StrEnum):
    """A release under a setting (an XLA flag, a pass turned off), placed against the pair's
    ends by the bisection's classifier, as the explanation's tests say it."""

    OLD = "old"
    NEW = "new"
    THIRD = "third"                # like neither end
    SKIP = "skip"                  # no figure, or not placed
    CANNOT_TELL = "cannot tell"    # a noisy metric the paired test left undecided
    NOT_TESTED = "not tested"      # the explanation's budget ran out first
    MUCH_SLOWER = "much slower"    # a run went past its time limit

    @classmethod
    def of(cls, placement: Placement) -> Behaviour:
        if placement.third:
            return cls.THIRD
        return {Label.OLD: cls.OLD, Label.NEW: cls.NEW}.get(placement.label, cls.SKIP)


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
    status: Status                   # FOUND | ALIKE | UNDECIDED | UNMEASURABLE
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


# A run the harness's own set-up left unable to run the program (its metric's status
# "harness_error": its placement, too few devices): a skip whose error begins so, never a
# behaviour of the release (lab/runs.py run_of_document).
CANNOT_MEASURE = "cannot measure here: "


def cannot_measure(line: str | None) -> str:
    """A harness error's one line as a run's error: "cannot measure here: LINE"."""
    return CANNOT_MEASURE + (line or "the harness could not run the program")


def no_figure(runs: Sequence[Run]) -> Placement:
    """A release that gave nothing to place (failed, or the program raised): a skip, with its
    failed run's error."""
    failure = Placed(0, tuple(runs)).failure
    return Placement(Label.SKIP, None, reason=failure.error if failure else "no samples")


def place_against_ends(runs: Sequence[Run], seen: Sequence, against: Classifier | Paired,
                       rounds: Sequence[tuple[float, float, float]] = ()) -> Placement:
    """A candidate's figures (``seen``, from its ``runs``) placed against two ends that agree:
    Label.OLD (their behaviour), a third behaviour (SKIP, third) or a skip (cannot tell).

    ``against`` a classifier learned from the two ends' figures (a deterministic metric): like
    an end is like both, the ends being alike (OLD, its reason says which); like neither is a
    third behaviour; figures that disagree among themselves are a skip. Or the paired test (a
    noisy metric), on ``rounds`` of (old end, it, new end) figures measured one after the
    other: each round's pair is the ends' geometric mean and the candidate (the test that found
    the ends alike); a skip until it decides. A candidate with no figure: a skip with its
    failed run's error."""
    if not seen:
        return no_figure(runs)
    if isinstance(against, Paired):
        return _place_rounds(rounds, against)
    placement = against(seen)
    if not placement.third and placement.label in (Label.OLD, Label.NEW, Label.AMBIGUOUS):
        placement = replace(placement, label=Label.OLD)
    return placement


def _place_rounds(rounds: Sequence[tuple[float, float, float]], test: Paired) -> Placement:
    if len(rounds) < test.first_look:
        return Placement(Label.SKIP, None, reason=f"cannot be placed after {len(rounds)} rounds")
    verdict = test.ends([(math.sqrt(o * w), r) for o, r, w in rounds])
    words = (verdict.ends.reason.replace("last/first end", "it/the ends", 1)
             .replace("higher at the last end", "higher for it", 1))
    if not verdict.decided:
        return Placement(Label.SKIP, None,
                         reason=f"cannot be placed after {len(rounds)} rounds ({words})")
    if verdict.ends.distinct:
        return Placement(Label.SKIP, None, third=True, reason=f"unlike both ends ({words})")
    return Placement(Label.OLD, None, reason=f"like both ends ({words})")


def beyond_if_hung(placed: Placed) -> Placed:
    """Under a timing metric, a candidate that hung is slower than both ends: a third
    behaviour (left out of the search as the skip it already was), not a missing figure."""
    if placed.values or placed.failure is None or placed.failure.status != "hung":
        return placed
    return replace(placed, placement=Placement(Label.SKIP, None, third=True,
                                               reason=placed.failure.error))


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
