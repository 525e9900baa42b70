"""Is v0's memory constant in n_outer? Pure arithmetic, no jax.

The growth is the least-squares slope of memory against n_outer, expressed in stacked buffers
(n_inner copies of the array): the report's bug keeps one more stacked buffer alive per outer
iteration, a growth of about 1.0 whatever the array size, so the verdict does not depend on n_res.
"""

from __future__ import annotations

import statistics

GROWS_AT = 0.5  # stacked buffers per extra outer iteration; the bug gives ~1.0, a fixed plan ~0.0
FITTED_FROM = 2  # the least n_outer a shape is fitted at (n_outer 1 keeps nothing across steps)

def stacked_buffer_bytes(n_inner: int, n_res: int, itemsize: int) -> int:
    return n_inner * n_res**3 * itemsize


ITEMSIZES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
XLA_MAX_BYTES = 2**63 - 1  # XLA counts shapes' and plans' sizes in signed 64-bit integers


def size_problem(n_outer: int, n_inner: int, n_res: int, dtype: str) -> str | None:
    """Why these sizes cannot be compiled, in one line (None if they can): v0's plan at the
    largest n_outer holds up to n_outer stacked buffers, whose size in bytes XLA must count."""
    itemsize = ITEMSIZES[dtype]
    need = n_outer * stacked_buffer_bytes(n_inner, n_res, itemsize)
    if need <= XLA_MAX_BYTES:
        return None
    cubes = XLA_MAX_BYTES // (n_outer * stacked_buffer_bytes(n_inner, 1, itemsize))
    if not cubes:
        return (f"--n-inner {n_inner} at n_outer {n_outer} needs more bytes than XLA counts "
                f"({XLA_MAX_BYTES:.2e}) at any n_res")
    largest = round(cubes ** (1 / 3))  # the largest n_res that fits: cubes' integer cube root
    largest -= largest**3 > cubes  # (the float root is within a half of it)
    return (f"--n-res {n_res} needs {need:.2e} bytes for v0 at n_outer {n_outer} "
            f"({n_outer} × n_inner {n_inner} × n_res³ × {itemsize} bytes); XLA counts sizes "
            f"up to {XLA_MAX_BYTES:.2e} bytes: use --n-res {largest} or less")


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of y against x."""
    return statistics.linear_regression(*zip(*points)).slope


def verdict(points: list[tuple[int, int | None]], unit_bytes: int) -> dict:
    """Verdict over (n_outer, bytes) points; bytes None or 0 means "not measured".

    "unavailable" unless at least two distinct n_outer values were measured with non-zero
    memory: zero is what old releases report when they measure nothing, and it must never read
    as "constant"."""
    def answer(reason: str | None, status: str = "unavailable", growth=None) -> dict:
        return {"status": status, "growth_per_outer": growth, "unit_bytes": unit_bytes,
                "points": len(points), "reason": reason}

    if unit_bytes <= 0:
        return answer("the stacked buffer has no size")
    missing = [n for n, b in points if b is None]
    if missing:
        return answer(f"no measurement at n_outer {', '.join(map(str, missing))}")
    zeros = [n for n, b in points if b == 0]
    if zeros:
        return answer(f"memory reported as 0 bytes at n_outer {', '.join(map(str, zeros))} "
                      "(this release does not measure it)")
    # n_outer = 1 sits below even a constant plan: one stacked buffer and nothing to keep
    # across outer iterations (jax 0.5.0 on the CPU: 1 buffer at n_outer 1, 2 at every
    # n_outer after). So 1 vs 2 cannot tell the bug from a fixed plan: fit n_outer >= 2 only.
    fitted = [(n, b) for n, b in points if n >= FITTED_FROM]
    if len({n for n, _ in fitted}) < 2:
        return answer("needs at least two n_outer values of 2 or more")
    growth = round(slope([(n, b / unit_bytes) for n, b in fitted]), 4)
    return answer(None, "grows" if growth >= GROWS_AT else "constant", growth)


RATE_FACTOR = 2.0  # two growing (or shrinking) shapes are alike while their rates are this close


def shapes_alike(a, b) -> bool:
    """Two shapes as a bisection compares them, ``[status, rate]`` each: the same status and,
    for "grows" or "shrinks", rates within a factor of RATE_FACTOR (scale-free: +9 % and
    +594 % over the same values are two behaviours; +1.00 and +0.98 per outer one)."""
    if a[0] != b[0]:
        return False
    if a[0] in ("constant", "unavailable") or a[1] is None or b[1] is None:
        return True
    low, high = sorted((abs(a[1]), abs(b[1])))
    return high <= RATE_FACTOR * low


def shape_label(shape: dict, per: str) -> str:
    """``constant (+0.00/outer)``: the status and its growth, as the reports show it."""
    growth = shape.get("growth_per_outer")
    return shape["status"] if growth is None else f"{shape['status']} ({growth:+.2f}/{per})"


RELATIVE_AT = 0.01  # a generic series is constant while it moves less than this over its range


def relative_shape(name: str, points: list[tuple[object, float | None]]) -> dict:
    """The shape of any series of positive figures over parameter ``name``: the fitted
    change across the values, relative to the first figure (scale-free, as the scan verdict
    is): "constant" within RELATIVE_AT, else "grows" or "shrinks"; "unavailable" where a
    figure is missing or zero. A value that is not a number counts as its position."""
    gone = [str(x) for x, y in points if y is None or y == 0]
    if gone:
        return {"status": "unavailable", "change": None, "points": len(points),
                "reason": f"no figure at {name} {', '.join(gone)}", "label": "unavailable"}
    xs = [x if isinstance(x, (int, float)) and not isinstance(x, bool) else i
          for i, (x, _) in enumerate(points)]
    first = points[0][1]
    change = round(slope([(x, y / first) for x, (_, y) in zip(xs, points)])
                   * (max(xs) - min(xs)), 4)
    status = "constant" if abs(change) < RELATIVE_AT else "grows" if change > 0 else "shrinks"
    label = status if status == "constant" else \
        f"{status} ({change:+.1%} over {name} {points[0][0]} … {points[-1][0]})"
    return {"status": status, "change": change, "rate": change, "points": len(points),
            "reason": None, "label": label}
