"""Classifiers for metric bisection: does a release behave like the OLD end or the NEW end?

Pure decision logic (stdlib only, no I/O): the driver measures a metric for the two ends of
a release range and for each release it probes, and asks a :class:`Classifier` to place the
release. Three kinds, by what the metric is (docs/classification.md has the model, the
defaults and what the simulations in tests/test_classify.py showed):

- :func:`deterministic` -- one exact scalar per release (compiled memory bytes). A release
  matches an end when within a relative ``threshold`` of it; a value matching neither end is
  a *third* behaviour (``Placement(SKIP, third=True)``), whether it lies between the ends or
  outside them: a deterministic figure between the ends is a different program, not a noisy
  reading of either end.
- :func:`matching` -- non-ordered deterministic values (output digest vectors, error
  strings) compared with a ``same(a, b)`` predicate (:func:`vectors_close`, ``==``).
- :func:`noisy` -- positive, noisy scalars (compile/run seconds, peak bytes). A robust
  two-population model in log space, learned from the ends and updated by ``learn()``.

Classifiers are frozen: ``learn()`` returns a new classifier and ``__call__`` never changes
one, so a placement can be recomputed and a re-measured release asked again.
"""

from __future__ import annotations

import bisect
import enum
import functools
import math
import operator
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

# Deterministic scalars: ends closer than 1 % are the same behaviour, and a release matches an
# end within 1 %. Compiled-memory figures are exact for one build, but releases move them by
# small amounts for reasons unrelated to a bug (buffer alignment, a changed constant, one more
# small temporary): a bug worth bisecting moves them by far more than 1 %, and a tolerance much
# wider would start calling a partial fix "the old behaviour".
DEFAULT_THRESHOLD = 0.01
# Noisy scalars: ends whose typical values differ by less than 10 % are not told apart. Timings
# on a shared machine drift by several per cent between runs even when their spread looks
# small (clock, cache and neighbour effects that a single run's samples do not show), so a
# smaller difference is not worth a bisection whatever a rank test says.
DEFAULT_NOISY_THRESHOLD = 0.10
# A noisy release more than 3x beyond the outer end (slower than the slower end x3, or faster
# than the faster end /3) is a third behaviour.
DEFAULT_THIRD_FACTOR = 3.0
DEFAULT_CONFIDENCE = 0.99
# The low quantile that locates a noisy sample set (in log space): it resists load from other
# processes (which only ever slows a run) and slow outliers, at a small cost in efficiency
# against symmetric noise (see docs/classification.md).
DEFAULT_QUANTILE = 0.25
# The spread assumed at least, relative (2 %): a handful of samples that happen to agree
# closely must not make the model think the metric is exact.
DEFAULT_MIN_SPREAD = 0.02
# Degrees of freedom of the Student-t likelihood that compares a release with each end: heavy
# tails, so a release far from both ends is not confidently put with the nearer one on the
# strength of a normal tail, and a mis-estimated scale from a few samples does not over-claim.
DEFAULT_DF = 4.0
# A re-measure cap the driver should use (documented here, applied by the driver): one more
# batch of samples when a release is AMBIGUOUS, then it is skipped.
RECOMMENDED_REMEASURES = 1


class Label(enum.StrEnum):
    """Where a classifier puts a release (the strings are the reports' JSON's)."""

    OLD = "old"
    NEW = "new"
    AMBIGUOUS = "ambiguous"
    SKIP = "skip"


@dataclass(frozen=True)
class Placement:
    label: Label
    confidence: float | None  # model probability of `label` (None: deterministic metric)
    third: bool = False  # far outside both ends: a third behaviour (label is SKIP then)
    reason: str | None = None  # one line for reports


class Direction(enum.StrEnum):
    """Which way the ends differ (the strings are the reports' JSON's)."""

    REGRESSION = "regression"  # the new end bigger or slower
    FIX = "fix"                # smaller or faster
    CHANGED = "changed"        # a metric without an order (an output, an error)


@dataclass(frozen=True)
class Ends:
    distinct: bool  # the two ends can be told apart
    direction: Direction | None  # None when not distinct
    ratio: float | None  # typical(new)/typical(old) for scalar metrics, else None
    reason: str  # one line: why distinct or not


class Classifier(Protocol):
    def ends(self) -> Ends: ...

    def __call__(self, samples: Sequence) -> Placement: ...

    def learn(self, samples: Sequence, label: Label) -> Classifier: ...


def _g(x: float) -> str:
    return f"{x:.4g}"


def _check_label(label: Label) -> Label:
    label = Label(label)
    if label not in (Label.OLD, Label.NEW):
        raise ValueError(f"learn() takes Label.OLD or Label.NEW, not {label!r}")
    return label


# --------------------------------------------------------------------------------------------
# Deterministic values: non-ordered ones (matching) and exact scalars (deterministic)


def vectors_close(rtol: float = 1e-5, atol: float = 1e-8) -> Callable[[object, object], bool]:
    """``same(a, b)`` for sequences of floats: equal length and every pair close.

    Close means ``|a - b| <= atol + rtol * max(|a|, |b|)`` (symmetric, unlike numpy's
    ``isclose``), NaN equals NaN at the same position, infinities equal only themselves.
    """

    def close(x: float, y: float) -> bool:
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        if math.isinf(x) or math.isinf(y):
            return x == y
        return abs(x - y) <= atol + rtol * max(abs(x), abs(y))

    def same(a: object, b: object) -> bool:
        try:
            xs, ys = list(a), list(b)  # type: ignore[call-overload]
        except TypeError:
            return False
        return len(xs) == len(ys) and all(close(float(x), float(y)) for x, y in zip(xs, ys))

    return same


@dataclass(frozen=True)
class _Matching:
    """A release is the behaviour of the end whose value it is ``same`` as; both ends: it
    cannot tell; neither: a third behaviour. Nothing to learn: the ends' values define the
    behaviours. :class:`_Deterministic` changes only the hooks (a value, an end's, words)."""

    old: tuple
    new: tuple
    same: Callable[[object, object], bool]

    def value(self, samples: Sequence) -> tuple[object, str | None]:
        """The value a sample set stands for, or None and why not."""
        if not samples:
            return None, "no value"
        if not all(self.same(samples[0], s) for s in samples[1:]):
            return None, "its values disagree"
        return samples[0], None

    def end(self, values: tuple) -> object:
        return values[0] if values else None

    def said(self, value: object) -> str:
        return "same as"

    def neither(self, old: object, new: object) -> str:
        return ""

    def ends(self) -> Ends:
        if not self.old or not self.new:
            return Ends(False, None, None, f"{'old' if not self.old else 'new'} end: no value")
        if self.same(self.old[0], self.new[0]):
            return Ends(False, None, None, "the ends give the same value")
        return Ends(True, Direction.CHANGED, None, "the ends give different values")

    def __call__(self, samples: Sequence) -> Placement:
        v, why = self.value(samples)
        if why is not None:
            return Placement(Label.SKIP, None, reason=why)
        o, n = self.end(self.old), self.end(self.new)
        like_old = o is not None and self.same(v, o)
        like_new = n is not None and self.same(v, n)
        label = {(True, True): Label.AMBIGUOUS, (True, False): Label.OLD,
                 (False, True): Label.NEW}.get((like_old, like_new))
        if label is not None:
            which = "both ends" if label is Label.AMBIGUOUS else f"the {label.value} end"
            return Placement(label, None, reason=f"{self.said(v)} {which}")
        if o is None or n is None:
            return Placement(Label.SKIP, None, reason="an end has no value")
        return Placement(Label.SKIP, None, third=True,
                         reason=f"{self.said(v)} neither end{self.neither(o, n)}")

    def learn(self, samples: Sequence, label: Label) -> _Matching:
        # (Widening an end by each matched value would let a chain of 1 % steps drift.)
        _check_label(label)
        return self


def matching(
    old: Sequence, new: Sequence, same: Callable[[object, object], bool] = operator.eq
) -> Classifier:
    """A classifier for non-ordered values; ``same`` defaults to ``==`` (error strings)."""
    return _Matching(tuple(old), tuple(new), same)


NONDETERMINISTIC = "nondeterministic"  # a release whose runs' outputs differ: no one value


@dataclass(frozen=True)
class _Outputs(_Matching):
    """Output values. A release whose runs disagree has no value to compare: its behaviour
    is ``NONDETERMINISTIC`` (like any other such release's, unlike any value), so an output
    that reads uninitialised memory is said to be one and is never taken for a new value."""

    def value(self, samples: Sequence) -> tuple[object, str | None]:
        if not samples:
            return None, "no value"
        if not all(self.same(samples[0], s) for s in samples[1:]):
            return NONDETERMINISTIC, None
        return samples[0], None

    def end(self, values: tuple) -> object:
        return self.value(values)[0]

    def said(self, value: object) -> str:
        return ("nondeterministic (its runs' outputs differ), as" if value == NONDETERMINISTIC
                else "same as")

    def ends(self) -> Ends:
        o, n = self.end(self.old), self.end(self.new)
        if o is None or n is None:
            return Ends(False, None, None, f"{'old' if o is None else 'new'} end: no value")
        if self.same(o, n):
            return Ends(False, None, None, "both ends' outputs differ between runs"
                        if o == NONDETERMINISTIC else "the ends give the same value")
        which = "old" if o == NONDETERMINISTIC else "new" if n == NONDETERMINISTIC else None
        return Ends(True, Direction.CHANGED, None,
                    f"the {which} end's output differs between runs, the other's does not"
                    if which else "the ends give different values")


def outputs(old: Sequence, new: Sequence, same: Callable[[object, object], bool]) -> Classifier:
    """A classifier for output values compared by ``same`` (:func:`vectors_close`), where a
    release measured in several runs whose outputs differ is nondeterministic."""

    def either(a: object, b: object) -> bool:
        if NONDETERMINISTIC in (a, b):
            return a == b
        return same(a, b)

    return _Outputs(tuple(old), tuple(new), either)


def _close(a: float, b: float, threshold: float) -> bool:
    """Within ``threshold`` of each other, relative to the larger magnitude (symmetric)."""
    return abs(a - b) <= threshold * max(abs(a), abs(b))


@dataclass(frozen=True)
class _Deterministic(_Matching):
    """An exact scalar: a sample set stands for its median when its values agree, and
    ``same`` is within ``threshold``; the ends are ordered (regression or fix)."""

    threshold: float = DEFAULT_THRESHOLD

    def value(self, samples: Sequence) -> tuple[float | None, str | None]:
        vals = [float(v) for v in samples]
        if not vals:
            return None, "no value"
        if any(math.isnan(v) for v in vals):
            return None, "value is NaN"
        if not _close(min(vals), max(vals), self.threshold):
            return None, f"its values disagree ({_g(min(vals))} .. {_g(max(vals))})"
        return statistics.median(vals), None

    def end(self, values: tuple) -> float | None:
        return self.value(values)[0]

    def said(self, value: float) -> str:
        return f"{_g(value)} matches"

    def neither(self, old: float, new: float) -> str:
        return f" ({_g(old)}, {_g(new)}) within {self.threshold:.0%}"

    def ends(self) -> Ends:
        (o, why_o), (n, why_n) = self.value(self.old), self.value(self.new)
        if o is None or n is None:
            return Ends(False, None, None,
                        f"old end: {why_o}" if o is None else f"new end: {why_n}")
        ratio = n / o if o != 0 else None
        shown = f"{_g(o)} vs {_g(n)}" + (f", {ratio:.3g}x" if ratio is not None else "")
        if self.same(o, n):
            return Ends(False, None, ratio, f"{shown}: within {self.threshold:.0%}")
        direction = Direction.REGRESSION if n > o else Direction.FIX
        return Ends(True, direction, ratio, f"{shown}: differ by more than {self.threshold:.0%}")


def deterministic(
    old: Sequence[float], new: Sequence[float], threshold: float = DEFAULT_THRESHOLD
) -> Classifier:
    """A classifier for an exact scalar (memory bytes); ``threshold`` is relative."""
    if not 0 <= threshold < 1:
        raise ValueError(f"threshold must be in [0, 1), not {threshold}")
    return _Deterministic(tuple(map(float, old)), tuple(map(float, new)),
                          functools.partial(_close, threshold=threshold), threshold)

# --------------------------------------------------------------------------------------------
# Noisy positive scalars

_NORMAL = statistics.NormalDist()
_MAD_TO_SIGMA = 1.0 / _NORMAL.inv_cdf(0.75)  # 1.4826


def _logs(samples: Sequence) -> tuple[float, ...]:
    """Log of the usable samples: positive finite numbers (others are dropped)."""
    out = []
    for s in samples:
        try:
            x = float(s)
        except (TypeError, ValueError):
            continue
        if math.isfinite(x) and x > 0:
            out.append(math.log(x))
    return tuple(out)


def _quantile(ys: Sequence[float], q: float) -> float:
    """The q-quantile with linear interpolation between order statistics (R's type 7)."""
    s = sorted(ys)
    if len(s) == 1:
        return s[0]
    h = (len(s) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (h - lo) * (s[hi] - s[lo])


def _mad_sigma(ys: Sequence[float]) -> float:
    m = statistics.median(ys)
    return _MAD_TO_SIGMA * statistics.median(abs(y - m) for y in ys)


def _t_logpdf(z: float, df: float) -> float:
    """Log density of Student's t (unit scale), without the constant shared by all calls."""
    return -(df + 1) / 2 * math.log1p(z * z / df)


def rank_sum_p(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney / Wilcoxon rank-sum test.

    Exact (the permutation distribution of the mid-rank sum, ties included) for up to 60
    values in all; above that the normal approximation with the tie correction.
    """
    n1, n2 = len(xs), len(ys)
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = sorted([(x, 0) for x in xs] + [(y, 1) for y in ys])
    values = [v for v, _ in pooled]
    n = n1 + n2
    # Doubled mid-ranks (integers): tied values share the mean of their ranks (the first
    # tied one's index + the last's + 2).
    ranks2 = [bisect.bisect_left(values, v) + bisect.bisect_right(values, v) + 1 for v in values]
    ties = Counter(values).values()
    w2 = sum(r for r, (_, g) in zip(ranks2, pooled) if g == 0)
    mean2 = n1 * (n + 1)  # E[2W]
    dev = abs(w2 - mean2)
    if len(ties) == n:  # no ties: U's exact distribution is a Gaussian binomial coefficient
        counts = _u_counts(n1, n2)
        u2 = w2 - n1 * (n1 + 1)  # 2U
        dev_u = abs(u2 - n1 * n2)  # |2U - 2 E[U]|
        extreme = sum(c for u, c in enumerate(counts) if abs(2 * u - n1 * n2) >= dev_u)
        return min(1.0, extreme / math.comb(n, n1))
    if n <= 40:
        # counts[j][s]: ways to choose j of the values seen so far with doubled-rank sum s.
        tied: list[dict[int, int]] = [dict() for _ in range(n1 + 1)]
        tied[0][0] = 1
        for r in ranks2:
            for j in range(n1 - 1, -1, -1):
                up = tied[j + 1]
                for s, c in tied[j].items():
                    up[s + r] = up.get(s + r, 0) + c
        extreme = sum(c for s, c in tied[n1].items() if abs(s - mean2) >= dev)
        return min(1.0, extreme / math.comb(n, n1))
    var = n1 * n2 / 12 * ((n + 1) - sum(t**3 - t for t in ties) / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = max(0.0, dev / 2 - 0.5) / math.sqrt(var)
    return min(1.0, 2 * (1 - _NORMAL.cdf(z)))


@functools.lru_cache(maxsize=256)
def _u_counts(n1: int, n2: int) -> tuple[int, ...]:
    """How many orderings give each Mann-Whitney U (0 .. n1*n2) without ties.

    The coefficients of the Gaussian binomial [n1+n2 choose n1]_q, built as the product of
    (1 - q^(n2+i)) / (1 - q^i) for i = 1 .. n1 in exact integers.
    """
    size = n1 * n2 + n1 + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n1 + 1):
        a = n2 + i
        for j in range(size - 1, a - 1, -1):  # times (1 - q^a)
            poly[j] -= poly[j - a]
        for j in range(i, size):  # divided by (1 - q^i)
            poly[j] += poly[j - i]
    return tuple(poly[: n1 * n2 + 1])


@dataclass(frozen=True)
class _Noisy:
    # Log samples: the ends as given, and each population (end + learned releases).
    end_old: tuple[float, ...]
    end_new: tuple[float, ...]
    pop_old: tuple[float, ...]
    pop_new: tuple[float, ...]
    # The posterior a label needs (and 1 - confidence the rank test's level for the ends).
    confidence: float = DEFAULT_CONFIDENCE
    threshold: float = DEFAULT_NOISY_THRESHOLD  # the ends closer than this are not told apart
    third_factor: float = DEFAULT_THIRD_FACTOR  # how far beyond the outer end is a third one
    quantile: float = DEFAULT_QUANTILE  # the location estimator
    min_spread: float = DEFAULT_MIN_SPREAD  # the relative spread assumed at least
    df: float = DEFAULT_DF  # the t likelihood's tails

    def __post_init__(self) -> None:
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0.5, 1), not {self.confidence}")
        if not 0 < self.quantile < 1:
            raise ValueError(f"quantile must be in (0, 1), not {self.quantile}")
        if self.third_factor <= 1:
            raise ValueError(f"third_factor must be > 1, not {self.third_factor}")

    @functools.cached_property
    def _efficiency(self) -> float:
        """How much wider than sigma/sqrt(n) the spread of the location estimator is (normal
        theory for the chosen quantile: 1.25 for the median, 1.36 for the 25th percentile)."""
        q = self.quantile
        return math.sqrt(q * (1 - q)) / _NORMAL.pdf(_NORMAL.inv_cdf(q))

    # -- model pieces
    def _loc(self, ys: Sequence[float]) -> float:
        return _quantile(ys, self.quantile)

    def _sigma(self, *pops: tuple[float, ...]) -> float:
        """Pooled robust spread (log space) of the given populations, floored."""
        parts = [(len(p), _mad_sigma(p)) for p in pops if len(p) >= 2]
        floor = math.log1p(self.min_spread)
        if not parts:
            return floor
        dof = sum(n - 1 for n, _ in parts)
        pooled = math.sqrt(sum((n - 1) * s * s for n, s in parts) / dof)
        return max(pooled, floor)

    def _trimmed(self, ys: tuple[float, ...]) -> list[float]:
        """The samples within 3 robust sigmas of their median: what the rank test compares.

        One-sided load and slow outliers put a few samples of the faster end among the
        slower end's; the location model shrugs them off, a rank test on all samples does not.
        """
        m = statistics.median(ys)
        cut = 3 * max(_mad_sigma(ys), math.log1p(self.min_spread))
        return [y for y in ys if abs(y - m) <= cut]

    def ends(self) -> Ends:
        """From the ends' own samples (learned releases do not change it)."""
        return self._ends

    @functools.cached_property
    def _ends(self) -> Ends:
        for name, ys in (("old", self.end_old), ("new", self.end_new)):
            if len(ys) < 2:
                return Ends(False, None, None,
                            f"{name} end: {len(ys)} usable sample(s), at least 2 needed")
        lo, ln = self._loc(self.end_old), self._loc(self.end_new)
        ratio = math.exp(ln - lo)
        p = rank_sum_p(self._trimmed(self.end_old), self._trimmed(self.end_new))
        shown = (f"p{round(self.quantile * 100)} {_g(math.exp(lo))} vs {_g(math.exp(ln))}, "
                 f"{ratio:.3g}x; rank test p={p:.2g} (n={len(self.end_old)}+{len(self.end_new)})")
        if abs(ln - lo) < math.log1p(self.threshold):
            return Ends(False, None, ratio, f"{shown}: closer than {self.threshold:.0%}")
        se = (self._efficiency * self._sigma(self.end_old, self.end_new)
              * math.sqrt(1 / len(self.end_old) + 1 / len(self.end_new)))
        t = abs(ln - lo) / se
        need = t_critical((1 - self.confidence) / 2, self.df)
        shown += f"; {t:.3g} standard errors apart"
        if t < need:
            return Ends(False, None, ratio, f"{shown}: overlap (fewer than {need:.3g})")
        alpha = 1 - self.confidence
        if p >= alpha:
            return Ends(False, None, ratio, f"{shown}: overlap (rank test p >= {alpha:.2g})")
        direction = Direction.REGRESSION if ln > lo else Direction.FIX
        return Ends(True, direction, ratio, shown)

    def __call__(self, samples: Sequence) -> Placement:
        ys = _logs(samples)
        if not ys:
            return Placement(Label.SKIP, None, reason="no usable samples")
        ends = self.ends()
        if not ends.distinct:
            return Placement(Label.AMBIGUOUS, None, reason=f"ends not distinct: {ends.reason}")
        m = self._loc(ys)
        lo, ln = self._loc(self.pop_old), self._loc(self.pop_new)
        sigma = self._sigma(self.pop_old, self.pop_new)
        se_r = self._efficiency * sigma / math.sqrt(len(ys))
        here = f"p{round(self.quantile * 100)} {_g(math.exp(m))} (n={len(ys)})"

        # Third behaviour: far beyond the outer end, beyond doubt.
        z = _NORMAL.inv_cdf(self.confidence)
        margin = math.log(self.third_factor)
        top, bottom = max(lo, ln), min(lo, ln)
        for beyond, edge, words in ((m - top, top, "slower/larger than either end"),
                                    (bottom - m, bottom, "of the faster/smaller end")):
            if beyond - margin > z * se_r:
                return Placement(Label.SKIP, None, third=True,
                                 reason=f"{here}: {math.exp(m - edge):.3g}x {words}")

        def loglik(pop: tuple[float, ...], loc: float) -> float:
            scale = math.sqrt(se_r**2 + (self._efficiency * sigma) ** 2 / len(pop))
            return _t_logpdf((m - loc) / scale, self.df) - math.log(scale)

        d = loglik(self.pop_new, ln) - loglik(self.pop_old, lo)  # log odds new : old
        p_new = 1 / (1 + math.exp(-d)) if d > -700 else 0.0
        p_old = 1 - p_new
        where = f"{here}: {math.exp(m - lo):.3g}x old, {math.exp(m - ln):.3g}x new"
        if p_old >= self.confidence:
            return Placement(Label.OLD, p_old, reason=f"{where}; P(old)={p_old:.4g}")
        if p_new >= self.confidence:
            return Placement(Label.NEW, p_new, reason=f"{where}; P(new)={p_new:.4g}")
        return Placement(Label.AMBIGUOUS, max(p_old, p_new),
                         reason=f"{where}; P(old)={p_old:.3g} < {self.confidence}")

    def learn(self, samples: Sequence, label: Label) -> _Noisy:
        label = _check_label(label)
        ys = _logs(samples)
        if not ys:
            return self
        if label is Label.OLD:
            return replace(self, pop_old=self.pop_old + ys)
        return replace(self, pop_new=self.pop_new + ys)


def noisy(old: Sequence[float], new: Sequence[float], **settings: float) -> Classifier:
    """A classifier for positive noisy scalars (seconds, peak bytes); see the module doc.
    Non-positive and non-finite samples are dropped; ``settings``: the model's, by name
    (``threshold``, ``confidence``, ``third_factor``, ``quantile``, ``min_spread``, ``df``)."""
    lo, ln = _logs(old), _logs(new)
    return _Noisy(lo, ln, lo, ln, **settings)


# --------------------------------------------------------------------------------------------
# Paired noisy scalars: the ends measured in pairs, a release in triplets beside both ends


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` (a whole number of) degrees of freedom: the finite
    series in θ = atan(|t| / √df) for P(|T| < |t|) (Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    if df < 1 or df != int(df):
        raise ValueError(f"degrees of freedom must be a whole number >= 1, not {df}")
    theta = math.atan(abs(t) / math.sqrt(df))
    cos2, term, total = math.cos(theta) ** 2, 1.0, 1.0
    odd = int(df) % 2
    for j in range(1, (int(df) - 1) // 2 if odd else int(df) // 2):
        term *= cos2 * (2 * j if odd else 2 * j - 1) / (2 * j + 1 if odd else 2 * j)
        total += term
    if odd:  # 1 degree of freedom: the Cauchy's 2θ/π alone
        inside = 2 / math.pi * (theta + (math.sin(theta) * math.cos(theta) * total
                                         if df > 1 else 0.0))
    else:
        inside = math.sin(theta) * total
    return (1 - inside) / 2 if t >= 0 else (1 + inside) / 2


@functools.lru_cache(maxsize=1024)
def t_critical(alpha: float, df: float) -> float:
    """The t with P(T > t) = ``alpha`` (one-sided upper critical value), by bisection."""
    lo, hi = 0.0, 1.0
    while t_sf(hi, df) > alpha:
        lo, hi = hi, hi * 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_sf(mid, df) > alpha else (lo, mid)
        if hi - lo < 1e-9 * hi:
            break
    return (lo + hi) / 2


def look_alpha(alpha: float, look: int) -> float:
    """The error a sequential test may spend at its ``look``-th look (1, 2, …): alpha · 6 /
    (π² look²). The looks together never spend more than ``alpha``, however many there are,
    and the first looks get most of it: a large change is decided in few runs."""
    return alpha * 6 / (math.pi**2 * look**2)


@dataclass(frozen=True)
class Mean:
    """The mean of within-round log ratios, with its standard error (floored) and count."""

    mean: float
    se: float
    sd: float
    n: int

    def bound(self, alpha: float) -> tuple[float, float]:
        """The one-sided (1 - alpha) lower and upper confidence bounds of the mean."""
        half = t_critical(alpha, self.n - 1) * self.se
        return self.mean - half, self.mean + half


def mean_of(xs: Sequence[float], floor: float) -> Mean:
    n = len(xs)
    m = statistics.fmean(xs)
    sd = statistics.stdev(xs) if n >= 2 else 0.0
    return Mean(m, max(sd, floor) / math.sqrt(n), sd, n)


@dataclass(frozen=True)
class EndsVerdict:
    """What the pairs of the ends say so far: ``ends`` (distinct, direction, ratio, reason)
    and ``decided`` (False: measure another pair, or at the cap the answer is undecided)."""

    ends: Ends
    decided: bool
    pairs: int
    spread: float | None  # the sd of the pairs' log ratios (the machine's noise, paired)


@dataclass(frozen=True)
class Paired:
    """A sequential test on interleaved runs (docs/classification.md, "Paired runs").

    The ends: each pair (old run k, new run k, made one after the other) gives d = log(new /
    old), in which the load of that moment cancels. After ``first_look`` pairs and at every pair
    after it (look 1, 2, …, each spending :func:`look_alpha`), the ends are **distinct** when
    a t test on the d's rejects no change (two-sided) and the estimated change is at least
    ``threshold``; **alike** when both one-sided tests of an equivalence test (TOST) put the
    change within ``threshold``; else undecided. A release between them is measured in rounds
    (old, release, new) and placed from u = 2 log(release) - log(old) - log(new), in which a
    linear drift across the round cancels: -δ for the old behaviour, +δ for the new."""

    threshold: float = DEFAULT_NOISY_THRESHOLD
    confidence: float = DEFAULT_CONFIDENCE
    third_factor: float = DEFAULT_THIRD_FACTOR
    min_spread: float = DEFAULT_MIN_SPREAD
    # Pairs of the ends before their first look: three slow runs of one end in a row must
    # not decide the direction.
    first_look: int = 4
    # Rounds before a release's first look (with the machine's spread): one slow run in k
    # rounds of the release must not place it, so at least 3, and its rounds must agree (at
    # most one in five against it).
    first_place: int = 3

    def __post_init__(self) -> None:
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0.5, 1), not {self.confidence}")
        if self.first_look < 2:
            raise ValueError(f"first_look must be at least 2, not {self.first_look}")

    @property
    def alpha(self) -> float:
        return 1 - self.confidence

    def look(self, n: int) -> int:
        """Which look ``n`` rounds are (1 at ``first_look``), or 0 before it."""
        return max(0, n - self.first_look + 1)

    def _floor(self, terms: int) -> float:
        # The least spread a log ratio of ``terms`` runs' logs is taken to have (each run at
        # least min_spread): a few rounds that happen to agree must not look exact.
        return math.sqrt(terms) * math.log1p(self.min_spread)

    def ends(self, pairs: Sequence[tuple[float, float]]) -> EndsVerdict:
        d = [math.log(n / o) for o, n in _positive(pairs)]
        band = math.log1p(self.threshold)
        if not d:
            return EndsVerdict(Ends(False, None, None, "no pair of figures yet"), False, 0, None)
        m = mean_of(d, self._floor(2))
        ratio = math.exp(m.mean)
        above = sum(x > 0 for x in d)
        shown = (f"last/first end {ratio:.3g}x over {m.n} interleaved pairs ({above} of "
                 f"{m.n} higher at the last end), pair spread ±{math.expm1(m.sd):.1%}")

        def verdict(decided: bool, reason: str, direction: Direction | None = None) -> EndsVerdict:
            return EndsVerdict(Ends(direction is not None, direction, ratio, reason), decided,
                               m.n, m.sd)

        look = self.look(m.n)
        if look == 0:
            return verdict(False, f"{shown}: {self.first_look} pairs needed before a look")
        a = look_alpha(self.alpha, look)
        lo2, hi2 = m.bound(a / 2)
        lo, hi = m.bound(a)
        shown += (f"; change {math.exp(lo2):.3g}x … {math.exp(hi2):.3g}x at {1 - a:.4g} "
                  f"(look {look})")
        if (lo2 > 0 or hi2 < 0) and abs(m.mean) >= band:
            return verdict(True, shown, Direction.REGRESSION if m.mean > 0 else Direction.FIX)
        if lo > -band and hi < band:
            return verdict(True, f"{shown}: confidently within {self.threshold:.0%} "
                                 "(equivalence test)")
        return verdict(False, f"{shown}: neither a change of at least {self.threshold:.0%} "
                              "nor within it yet")

    def resolvable(self, spread: float, rounds: int) -> float:
        """The smallest new/old ratio (> 1) that ``rounds`` pairs with this pair spread tell
        from no change at the last look (the threshold at least)."""
        n = max(rounds, self.first_look)
        a = look_alpha(self.alpha, self.look(n))
        se = max(spread, self._floor(2)) / math.sqrt(n)
        return max(math.exp(t_critical(a / 2, n - 1) * se), 1 + self.threshold)

    def place(self, rounds: Sequence[tuple[float, float, float]], direction: Direction,
              machine: tuple[float, int] | None = None,
              change: float | None = None, *, cap: int | None = None) -> Placement:
        """A release from rounds (old, release, new) of one moment each; ``direction`` the
        ends' (regression: new slower/bigger); ``machine`` the machine's spread of u so far
        as (sum of squares, degrees of freedom); ``change`` the ends' new/old ratio. A release
        is OLD (NEW) when u is confidently on that end's side, its rounds agree (at most one in
        five against it), and it is within half the change of that end's runs beside it;
        AMBIGUOUS until a look decides.

        The spread of u is taken as the larger of the release's own and what the ends' pairs
        say of the machine (var u = 3 var d for independent run noise), with the ends' degrees
        of freedom: two rounds can then place a release where the machine is steady, and a
        release whose rounds disagree more than the machine's pairs waits for more."""
        good = _positive(rounds)
        if not good:
            return Placement(Label.SKIP, None, reason="no usable round")
        s = 1 if direction == Direction.REGRESSION else -1
        to_old = [math.log(r / o) for o, r, n in good]
        to_new = [math.log(r / n) for o, r, n in good]
        us = [s * (a + b) for a, b in zip(to_old, to_new)]
        u = mean_of(us, self._floor(6))
        if machine is not None and machine[1] >= 1:
            ss, dof = machine[0] + u.sd**2 * (u.n - 1), machine[1] + u.n - 1
            sd = max(math.sqrt(ss / dof), u.sd, self._floor(6))
            u = Mean(u.mean, sd / math.sqrt(u.n), u.sd, u.n)
        else:
            dof = u.n - 1
        here = (f"{math.exp(statistics.fmean(to_old)):.3g}x the old end, "
                f"{math.exp(statistics.fmean(to_new)):.3g}x the new end beside it "
                f"({u.n} rounds)")
        look = max(0, u.n - self.first_place + 1) if machine is not None else self.look(u.n)
        if look == 0:
            return Placement(Label.AMBIGUOUS, None, reason=f"{here}: too few rounds")
        # With a cap on the rounds the looks are few and known: each may spend an equal share
        # of the error (their sum is alpha), where the open-ended series leaves the late
        # looks almost nothing.
        looks = cap - self.first_place + 1 if cap is not None else 0
        a = self.alpha / looks if looks >= 1 else look_alpha(self.alpha, look)
        margin = math.log(self.third_factor)
        # Beyond the outer end (slower than the slower end x3 for a regression) or the inner.
        for beyond, words in (([s * x for x in to_new], "beyond the new end"),
                              ([-s * x for x in to_old], "beyond the old end")):
            if mean_of(beyond, self._floor(2)).bound(a / 2)[0] > margin:
                return Placement(Label.SKIP, None, third=True,
                                 reason=f"{here}: more than {self.third_factor:g}x {words}")
        # One-sided on each side: a release of the old behaviour is misplaced only when u
        # comes out confidently above 0, an error of at most ``a`` over the looks.
        half = t_critical(a, dof) * u.se
        lo, hi = u.mean - half, u.mean + half
        # A burst can put one round on the wrong side: up to one round in five may disagree
        # (none in the first four), never more.
        against = min(sum(x > 0 for x in us), sum(x < 0 for x in us))
        if against > len(us) // 5 and (hi < 0 or lo > 0):
            return Placement(Label.AMBIGUOUS, None, reason=f"{here}: its rounds disagree on "
                                                          "the nearer end")
        # And like that end: within half the change of the runs of it beside it (a burst on
        # the other end's runs must not make a release look nearer to this one).
        half_change = abs(math.log(change)) / 2 if change else math.inf

        def matches(xs: list[float]) -> bool:
            m = mean_of(xs, self._floor(2))
            width = t_critical(0.05, dof) * max(m.sd, u.se * math.sqrt(u.n / 3)) / math.sqrt(m.n)
            return abs(m.mean) + width < half_change

        if hi < 0 and matches(to_old):
            return Placement(Label.OLD, 1 - a, reason=f"{here}: the old behaviour at {1 - a:.4g}")
        if lo > 0 and matches(to_new):
            return Placement(Label.NEW, 1 - a, reason=f"{here}: the new behaviour at {1 - a:.4g}")
        return Placement(Label.AMBIGUOUS, None, reason=f"{here}: nearer neither end at "
                                                      f"{1 - a:.4g} (look {look})")


def _positive(rows: Sequence[tuple]) -> list[tuple]:
    """The rows (pairs, rounds) whose figures are all positive finite numbers."""
    return [row for row in rows
            if all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in row)]
