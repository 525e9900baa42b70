"""Simulated machines for the paired search: a run's figure is its release's true figure times
the load of the moment it ran at, times its own noise. Pure Python, seeded."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from jaxbisect.search.question import Run

Model = Callable[[random.Random], Callable[[int], float]]  # rng -> (run count -> factor)


def iid(rng: random.Random) -> Callable[[int], float]:
    return lambda t: math.exp(rng.gauss(0, 0.10))


def drifting(rng: random.Random) -> Callable[[int], float]:
    """Load that wanders slowly (a random walk in log space, 4 % a run) with 5 % run noise."""
    level = [0.0]

    def factor(t: int) -> float:
        level[0] = min(1.5, max(-0.2, level[0] + rng.gauss(0, 0.04)))
        return math.exp(level[0] + rng.gauss(0, 0.05))
    return factor


def bursts(rng: random.Random) -> Callable[[int], float]:
    """Quiet (5 % noise) but for bursts: one run in ten starts 1-3 runs 1.5-3x slower."""
    left, size = [0], [1.0]

    def factor(t: int) -> float:
        if left[0] == 0 and rng.random() < 0.1:
            left[0], size[0] = rng.randint(1, 3), rng.uniform(1.5, 3.0)
        slow = 1.0
        if left[0]:
            left[0] -= 1
            slow = size[0]
        return slow * math.exp(rng.gauss(0, 0.05))
    return factor


def core_stolen(rng: random.Random) -> Callable[[int], float]:
    """A second process takes a core for a stretch: 2x slower from a random run for 5-30 runs,
    maybe more than once, over 5 % noise."""
    steps: list[tuple[int, int]] = []
    start = 0
    for _ in range(4):
        start += rng.randint(0, 30)
        length = rng.randint(5, 30)
        steps.append((start, start + length))
        start += length

    def factor(t: int) -> float:
        slow = 2.0 if any(a <= t < b for a, b in steps) else 1.0
        return slow * math.exp(rng.gauss(0, 0.05))
    return factor


def heavy_tails(rng: random.Random) -> Callable[[int], float]:
    """Log-t noise (3 degrees of freedom, scale 5 %) and one run in twenty 3x slower."""
    def factor(t: int) -> float:
        z = rng.gauss(0, 1) / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)
        return math.exp(0.05 * z) * (3.0 if rng.random() < 0.05 else 1.0)
    return factor


def modes(rng: random.Random) -> Callable[[int], float]:
    """What this 2-core machine does when quiet: each run (a fresh process) lands in a slow
    mode 1.4x slower about one time in three, over 5 % noise (measured: a run-time case's
    runs at 14.5 or 20.5 ms, either release)."""
    return lambda t: (1.4 if rng.random() < 0.35 else 1.0) * math.exp(rng.gauss(0, 0.05))


MODELS = {"iid": iid, "modes": modes, "drifting": drifting, "bursts": bursts,
          "core_stolen": core_stolen, "heavy_tails": heavy_tails}


def machine(truth: list[float], model: Model, rng: random.Random):
    """run_at for a history of true figures under a model's load; counts the runs."""
    load = model(rng)
    made = [0]

    def run_at(i: int, number: int) -> Run:
        made[0] += 1
        return Run(release=str(i), number=number, status="ok",
                   samples=(truth[i] * load(made[0]),))
    return run_at, made


def simulate(model: Model, ratio: float, rng: random.Random, search) -> tuple[str, int]:
    """One simulated bisection: 3-30 releases, a change of ``ratio`` (half of them fixes) at a
    random place. Its outcome: right (the adjacent pair), inexact (a range that holds the
    change, releases in it skipped), wrong (a pair that does not hold it), or the status
    (alike, undecided); and the runs it took."""
    n = rng.randint(3, 30)
    change = rng.randint(1, n - 1)
    factor = 1 / ratio if rng.random() < 0.5 else ratio
    # The releases between the ends are like their side, not equal to it: 0.92-1.12x (the
    # batched case's middle release: 1.0-1.1x its old end).
    truth = [1e-3 * (factor if i >= change else 1.0)
             * (1.0 if i in (0, n - 1) else rng.uniform(0.92, 1.12)) for i in range(n)]
    run_at, made = machine(truth, model, rng)
    s = search(n, run_at)
    if s.status != "found":
        return s.status, made[0]
    r = s.result
    if ratio == 1.0 or not (r.last_old < change <= r.first_new):
        return "wrong", made[0]
    return ("right" if r.exact else "inexact"), made[0]


def main(argv: list[str]) -> None:
    """``python tests/noise_models.py [N [RATIO …]]``: N bisections a model and ratio."""
    import collections
    import time

    from jaxbisect.search.classify import deterministic
    from jaxbisect.search.metric_search import search_metric

    def search(n, run_at):
        return search_metric(n, run_at, deterministic, noisy_metric=True)

    count = int(argv[0]) if argv else 1000
    ratios = [float(x) for x in argv[1:]] or [2.0, 1.5, 10.0, 1.0]
    print("| change | noise | right | inexact | undecided | alike | wrong | runs a bisection |")
    print("|---|---|---|---|---|---|---|---|")
    for ratio in ratios:
        for name, model in MODELS.items():
            rng = random.Random(f"{name} {ratio}")
            started, seen, runs = time.perf_counter(), collections.Counter(), 0
            for _ in range(count):
                outcome, made = simulate(model, ratio, rng, search)
                seen[outcome] += 1
                runs += made
            share = {k: f"{100 * v / count:.1f} %" for k, v in seen.items()}
            print(f"| {ratio:g}x | {name} | {share.get('right', '0')} | "
                  f"{share.get('inexact', '0')} | {share.get('undecided', '0')} | "
                  f"{share.get('alike', '0')} | {seen['wrong']} | {runs / count:.1f} |  "
                  f"<!-- {time.perf_counter() - started:.1f} s -->")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
