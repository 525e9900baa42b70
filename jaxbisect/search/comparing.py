"""How a question's figures are compared, at either level and in every module that places:
what the classifier sees of a run (``reduce_for``), how many runs a candidate is measured
with at a time (``batch_size``), the classifier a metric calls for (``classifier_for``), the
paired test a noisy metric uses (``paired_test``), and two settings of one question compared
(``compare_settings``: two releases, or one release with and without a flag).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from jaxbisect.search.classify import (
    RECOMMENDED_REMEASURES,
    Classifier,
    Ends,
    Paired,
    matching,
    noisy,
    outputs,
    vectors_close,
)
from jaxbisect.search.classify import deterministic as deterministic_classifier
from jaxbisect.search.error_signature import is_the_error, same_error
from jaxbisect.search.placing import (
    MakeClassifier,
    Reduce,
    Verdict,
    _quantile,
    run_figure,
    values_of,
)
from jaxbisect.search.question import Question, Run

OUTPUT_TOLERANCE = 1e-5  # an output's relative tolerance, unless --threshold sets one
RUNS_NOISY = 5           # runs (processes) a noisy metric measures a release with, at a time
RUNS_OUTPUT = 2          # an output's: two that differ say it is nondeterministic
# At most: the first batch and the re-measures the classifier's simulations were made with.
MAX_RUNS_NOISY = RUNS_NOISY * (1 + RECOMMENDED_REMEASURES)

def every_sample(run: Run) -> tuple:
    return run.samples


def low_quantile(run: Run, q: float = 0.25) -> tuple:
    """A noisy run as one sample: its 25th percentile. Calls within one process share its
    load, so they are one observation, not many (docs/timing.md)."""
    return _quantile([v for v in run.samples if isinstance(v, (int, float))], q)


def paired_test(threshold: float | None) -> Paired:
    """The paired test a noisy metric's bisection (and its sweep) uses: ``--threshold``'s."""
    return Paired() if threshold is None else Paired(threshold=threshold)


@dataclass(frozen=True)
class Compared:
    """Two settings of one question (two releases, or one release with and without a flag)
    compared: ``verdict`` changed | same | cannot tell (a noisy metric the paired test left
    undecided: never "same") | no figure; ``ends`` what the test said; ``a``, ``b`` the
    figures either side; ``runs`` the runs made."""

    verdict: str
    ends: Ends | None
    a: tuple = ()
    b: tuple = ()
    runs: int = 0
    b_runs: tuple[Run, ...] = ()  # the second setting's runs (their documents: the series)


def compare_settings(run_a: Callable[[int], Run], run_b: Callable[[int], Run],
                     question: Question, threshold: float | None, *, batch: int,
                     max_runs: int | None, reduce: Reduce) -> Compared:
    """``run_a(k)`` against ``run_b(k)`` as the search tells its ends apart: a noisy metric
    by :func:`paired_test` on interleaved pairs (a, b; the order alternating), one pair at a
    time until it decides or ``max_runs`` pairs are spent; anything else by its classifier
    on a batch of each."""
    if not question.noisy:
        made = [[run(k) for k in range(1, batch + 1)] for run in (run_a, run_b)]
        a, b = (values_of(runs, reduce) for runs in made)
        if not a or not b:
            return Compared(Verdict.NO_FIGURE, None, a, b, 2 * batch, tuple(made[1]))
        ends = classifier_for(question, threshold)(a, b).ends()
        return Compared(Verdict.CHANGED if ends.distinct else Verdict.SAME, ends, a, b, 2 * batch,
                        tuple(made[1]))
    test = paired_test(threshold)
    runs: dict[int, list[Run]] = {0: [], 1: []}
    pairs: list[tuple[float, float]] = []
    verdict = test.ends(pairs)
    for k in range(1, max(max_runs or MAX_RUNS_NOISY, test.first_look) + 1):
        order = [(0, run_a), (1, run_b)]
        for side, run in (order if k % 2 else order[::-1]):  # a steady drift falls on both
            runs[side].append(run(k))
        a, b = (run_figure(runs[side][-1], reduce) for side in (0, 1))
        if a is not None and b is not None:
            pairs.append((a, b))
        if k >= test.first_look and not pairs:
            break
        verdict = test.ends(pairs)
        if verdict.decided:
            break
    a, b = (values_of(runs[side], reduce) for side in (0, 1))
    made = len(runs[0]) + len(runs[1])
    if not pairs:
        return Compared(Verdict.NO_FIGURE, None, a, b, made, tuple(runs[1]))
    word = ((Verdict.CHANGED if verdict.ends.distinct else Verdict.SAME) if verdict.decided
            else Verdict.CANNOT_TELL)
    return Compared(word, verdict.ends, a, b, made, tuple(runs[1]))


def reduce_for(question: Question) -> Reduce:
    """What the classifier sees of a run: a noisy function case's run as one figure (its low
    quantile); an output digest made comparable; anything else as it is."""
    if question.metric == "output":
        return lambda run: tuple(comparable("output", s) for s in run.samples)
    if question.noisy and question.case is not None:
        return low_quantile
    return every_sample


def batch_size(question: Question, runs: int | None = None) -> int:
    """Runs a release is measured with at a time: ``runs``, else five for a noisy metric,
    two for an output (runs that differ: nondeterministic), one for anything else."""
    return runs or (RUNS_NOISY if question.noisy else
                    RUNS_OUTPUT if question.metric == "output" else 1)


def middle(values: Sequence):
    """The middle figure of ``values`` (a number's median, else the first value), or None."""
    numbers = sorted(v for v in values if isinstance(v, (int, float)))
    return numbers[len(numbers) // 2] if numbers else (values[0] if values else None)


def comparable(metric: str, sample):
    """A sample as the classifier compares it: an output digest as (shapes, values) with
    non-finite values back as floats."""
    if metric == "output" and isinstance(sample, dict):
        return (tuple(tuple((tuple(s[0]), s[1])) for s in sample["shapes"]),
                tuple(float(v) for v in sample["values"]))
    return sample


def errors_alike(pattern: str = "") -> Callable[[object, object], bool]:
    """Two ``error`` figures one behaviour: both the error ``pattern`` names or both not
    (``--error-match``, a case's ERROR), else one signature (search/error_signature.py)."""
    if pattern:
        return lambda a, b: is_the_error(pattern, a) == is_the_error(pattern, b)
    return lambda a, b: a == b or (isinstance(a, str) and isinstance(b, str)
                                   and same_error(a, b))


def output_atol(rtol: float) -> float:
    """An output's absolute tolerance beside its relative one (for values near zero)."""
    return rtol * 1e-3


def outputs_close(rtol: float) -> Callable[[object, object], bool]:
    close = vectors_close(rtol=rtol, atol=output_atol(rtol))
    return lambda a, b: a[0] == b[0] and close(list(a[1]), list(b[1]))


def classifier_for(question: Question, threshold: float | None) -> MakeClassifier:
    """The classifier a question's metric calls for."""
    metric, given = question.metric, {} if threshold is None else {"threshold": threshold}

    def make(old: Sequence, new: Sequence) -> Classifier:
        if metric == "exit_code":  # git bisect run's: 0 is one behaviour, 1-127 the other
            return matching(list(old), list(new), lambda a, b: (a == 0) == (b == 0))
        if question.over:  # the shape: [status, rate] ("constant", "grows")
            from repro.verdict import shapes_alike

            return matching(list(old), list(new), shapes_alike)
        if metric == "output":  # a release whose runs differ: nondeterministic
            return outputs(list(old), list(new),
                           outputs_close(given.get("threshold", OUTPUT_TOLERANCE)))
        if metric == "error":
            return matching(list(old), list(new), errors_alike(question.error_match))
        return (noisy if question.noisy else deterministic_classifier)(old, new, **given)

    return make


