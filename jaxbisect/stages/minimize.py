"""The minimal reproducer: shrink a case's sizes while two releases still behave apart.

``shrink`` is pure: it takes the starting parameters, the names it may shrink and a test that
says whether the change still shows at given parameters, and searches deterministically (for
each parameter in turn: halve toward its floor while the change shows, then a binary tighten
between the last value that lost the change and the last that kept it; rounds over all
parameters until none moves or the budget is spent). ``minimize`` wires the test to two real
releases, the case's metric and the bisection's classifier.
"""

from __future__ import annotations

import ast
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial

from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.lab import Lab, Say
from jaxbisect.search.comparing import batch_size, compare_settings, middle, reduce_for
from jaxbisect.search.placing import Verdict
from jaxbisect.search.question import Question, with_compare

FLOOR = 1
DEFAULT_BUDGET = 600.0   # seconds a minimization may spend measuring


@dataclass(frozen=True)
class Trial:
    params: dict
    kept: bool               # the two releases still behave apart, in the same direction
    old: object = None       # the figures either side (what the report shows)
    new: object = None
    reason: str = ""
    # kept | lost | cannot tell (a noisy metric the paired test left undecided: not kept,
    # and never "the change is gone")
    verdict: str = ""


@dataclass(frozen=True)
class Shrunk:
    params: dict             # the smallest parameters found that keep the change
    trials: tuple[Trial, ...]
    complete: bool           # False when the budget ran out before the search settled


def shrink(start: dict, names: Sequence[str], test: Callable[[dict], Trial], *,
           floor: int = FLOOR, spent: Callable[[], bool] = lambda: False) -> Shrunk:
    """The smallest values of ``names`` (integers, each ≥ ``floor``) at which ``test`` still
    keeps the change, starting from ``start`` (which must keep it). Each parameter set is
    tested once."""
    tried: dict[tuple, Trial] = {}
    order: list[Trial] = []

    def keeps(params: dict) -> bool:
        key = tuple(sorted(params.items()))
        if key not in tried:
            tried[key] = test(dict(params))
            order.append(tried[key])
        return tried[key].kept

    best, complete, moved = dict(start), True, True
    while moved and complete:
        moved = False
        for name in names:
            if spent():
                complete = False
                break
            value = best[name]
            lost = None                      # the largest value known to lose the change
            while value > floor and not spent():   # halving
                candidate = max(floor, value // 2)
                if keeps({**best, name: candidate}):
                    value = candidate
                else:
                    lost = candidate
                    break
            if lost is not None:             # binary tighten in (lost, value)
                low, high = lost, value
                while high - low > 1 and not spent():
                    middle = (low + high) // 2
                    if keeps({**best, name: middle}):
                        high = middle
                    else:
                        low = middle
                value = high
            if spent():
                complete = False
            if value != best[name]:
                best[name] = value
                moved = True
    return Shrunk(best, tuple(order), complete)


def shrinkable(question: Question) -> list[str]:
    """The case's integer parameters its author did not mark FIXED (nor the one a shape is
    measured over), in their order."""
    case = question.case
    return [name for name, default in case.defaults.items()
            if isinstance(default, int) and not isinstance(default, bool)
            and name not in case.fixed and name not in question.over[:1]]


def minimize(old: Release, new: Release, backend: str, question: Question, lab: Lab,
             say: Say, *, threshold: float | None = None, timeout: float = 1800.0,
             runs: int | None = None, max_runs: int | None = None,
             budget: float = DEFAULT_BUDGET) -> tuple[Shrunk, Trial, list[str]]:
    """Shrink ``question``'s case while ``old`` and ``new`` still classify apart in the same
    direction, told apart as the search tells its ends apart (a noisy metric: the paired test
    on interleaved runs); the result, the trial at the starting parameters and the names
    shrunk."""
    reduce, batch = reduce_for(question), batch_size(question, runs)
    started = time.monotonic()

    def judge(params: dict, direction: tuple | None) -> tuple[Trial, tuple]:
        # At the start: the bisection's own full-size question, as the runs beside its
        # search asked it (found in the store), not the same sizes under another key.
        asked = with_compare(question) if params == start else replace(question, params=params)
        say("minimizing: " + ", ".join(f"{k}={v}" for k, v in params.items()))
        if question.noisy:  # interleaved: one run of each release after the other
            c = compare_settings(*(partial(lab.run, r, backend, asked, timeout=timeout)
                                   for r in (old, new)), question, threshold, batch=batch,
                                 max_runs=max_runs, reduce=reduce)
        else:  # both releases at once: the figure does not depend on the machine's load
            with ThreadPoolExecutor(max_workers=2) as pool:
                done = dict(zip((old, new), pool.map(lambda release: [
                    lab.run(release, backend, asked, k, timeout=timeout)
                    for k in range(1, batch + 1)], (old, new))))
            c = compare_settings(*(lambda k, r=r: done[r][k - 1] for r in (old, new)),
                                 question, threshold, batch=batch, max_runs=max_runs,
                                 reduce=reduce)
        if c.verdict == Verdict.NO_FIGURE:
            return Trial(params, False, reason="no figure at one end", verdict="lost"), None
        reason = c.ends.reason if c.ends else ""
        if c.verdict == Verdict.CANNOT_TELL:
            return (Trial(params, False, middle(c.a), middle(c.b), reason, Verdict.CANNOT_TELL),
                    None)
        # A shape keeps each side's own word ("constant" → "grows"): two growths at a size
        # too small for a stacked buffer to show are not the change.
        words = tuple(v[0][0] for v in (c.a, c.b)) if question.over else ()
        kept = c.verdict == Verdict.CHANGED and direction in (None, (c.ends.direction, words))
        return (Trial(params, kept, middle(c.a), middle(c.b), reason,
                      "kept" if kept else "lost"), (c.ends.direction, words))

    start = {k: v for k, v in question.case.resolve(question.params).items()
             if k not in question.over[:1]}
    names = shrinkable(question)
    first, direction = judge(start, None)
    if not first.kept:
        return Shrunk(start, (first,), True), first, names
    shrunk = shrink(start, names, lambda params: judge(params, direction)[0],
                    spent=lambda: time.monotonic() - started > budget)
    return shrunk, first, names


def with_defaults(source: str, params: dict) -> str:
    """The case's source with ``case()``'s defaults set to ``params``: the minimal program,
    ready to paste. Only the default literals change."""
    tree = ast.parse(source)
    fn = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "case"][-1]
    a = fn.args
    pairs = [*zip(a.args[len(a.args) - len(a.defaults):], a.defaults),
             *zip(a.kwonlyargs, a.kw_defaults)]
    edits = sorted(((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset,
                     repr(params[arg.arg]))
                    for arg, node in pairs if arg.arg in params), reverse=True)
    lines = source.splitlines(keepends=True)
    for line, col, end_line, end_col, text in edits:
        if line != end_line:
            continue  # a default spread over lines: left as it is
        raw = lines[line - 1].encode()  # ast counts columns in UTF-8 bytes
        lines[line - 1] = (raw[:col] + text.encode() + raw[end_col:]).decode()
    return "".join(lines)


def minimal_document(shrunk: Shrunk, first: Trial, names: list[str], question: Question,
                     old: Release, new: Release, unit: str) -> dict:
    """``minimal`` in the JSON: the smallest parameters found and the figures there."""
    at = next((t for t in reversed(shrunk.trials) if t.kept and t.params == shrunk.params),
              first)
    return {"params": shrunk.params, "old_value": at.old, "new_value": at.new,
            "old": str(old.version), "new": str(new.version), "metric": question.metric,
            "unit": unit, "shrunk": names, "fixed": list(question.case.fixed),
            "started_from": first.params, "kept_at_start": first.kept,
            "at_start": first.verdict,
            "complete": shrunk.complete, "trials": len(shrunk.trials) + 1,
            "program": with_defaults(question.case.source, shrunk.params)}

