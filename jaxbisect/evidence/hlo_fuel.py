"""XLA's fuel (``--xla_fuel=PASS=N``): the first rewrite of a pass that changes the figure.

A pass that consumes fuel makes only its first N rewrites; when the fuel runs out XLA logs the
one it refused ("Out of fuel for "priority-fusion": Not fusing producer … with consumer …").
Where fuel 0 measures like the pass turned off (old) and enough fuel like the pass on (new),
the smallest N that gives the new figure names the rewrite: the one refused at N - 1. Fuel 0
is not always the pass off (a loop of the pass that is not fuel-guarded), so the caller checks
that first, measured (docs/hlo.md). Pure logic here; the runs are the caller's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Passes that consume fuel in released jaxlibs (XLA's ConsumeFuel calls); others ignore it.
FUEL_PASSES = ("fusion", "multi_output_fusion", "priority-fusion", "reshape-mover",
               "conditional_code_motion", "space-to-batch-converter",
               "memory_space_assignment", "cudnn-fused-convolution-rewriter")
MOST_FUEL = 1 << 14  # rewrites of one pass tried at most (a module's fusions: far fewer)


@dataclass(frozen=True)
class FuelSearch:
    """``first_new``: the least fuel measured to give the new behaviour with ``last_old`` =
    first_new - 1 giving the old (None where none was found); ``tried``: (fuel, behaviour)
    in the order measured; ``why``: why it stopped without one."""

    first_new: int | None
    last_old: int | None
    tried: tuple[tuple[int, str], ...]
    why: str | None = None


def first_rewrite(behaviour: Callable[[int], str], most: int = MOST_FUEL) -> FuelSearch:
    """The least N at which ``behaviour(N)`` is "new" next to an N - 1 that is "old", from
    fuel 0 (the caller measured it old): doubling to the first new, then halving the gap. Any
    other answer (an error, a third behaviour) stops the search there: it cannot tell."""
    tried: list[tuple[int, str]] = []

    def ask(n: int) -> str:
        said = behaviour(n)
        tried.append((n, said))
        return said

    low, high = 0, 1
    while True:
        said = ask(high)
        if said == "new":
            break
        if said != "old":
            return FuelSearch(None, None, tuple(tried), f"fuel {high}: {said}")
        if high >= most:
            return FuelSearch(None, None, tuple(tried),
                              f"still the old behaviour with fuel {most}")
        low, high = high, min(high * 2, most)
    while high - low > 1:
        middle = (low + high) // 2
        said = ask(middle)
        if said == "old":
            low = middle
        elif said == "new":
            high = middle
        else:
            return FuelSearch(None, None, tuple(tried), f"fuel {middle}: {said}")
    return FuelSearch(high, low, tuple(tried))
