"""The scan report as a case: "Unexpectedly high memory consumption in jax.lax.scan".

Inside ``jax.jit``, a Python loop calls an inner ``jax.lax.scan`` ``n_outer`` times. When the
scan stacks its outputs and only ``x_out[-1]`` is used (``variant=0``), the compiled plan's
memory grows by one stacked buffer (n_inner x n_res^3 values) per outer iteration; the
carry-only scan (``variant=1``) and the unrolled loop (``variant=2``) stay at 30.52 MiB.

Measured on the CPU (2 cores, 2026-12), metric ``memory`` (output + temp of the compiled plan),
at the defaults below (n_outer 10): jax 0.5.0 6164.55 MiB, jax 0.5.1 30578.61 MiB (the CPU change:
XLA's concurrency-optimized scheduler, on by default from jaxlib 0.5.1).
"""

import jax
import jax.numpy as jnp

METRIC = "memory"
FIXED = ("variant",)  # which loop, not a size
# The report's question: the shape of v0's memory over n_outer ("constant" / "grows"), searched
# at n_res 32 and n_outer 2 and 5 (the two its growth needs) where both ends agree with the full
# size (the verdict is scale-free), with v1 and v2 (v2 only to n_outer 2: its compile grows with
# the unrolled length) measured beside it.
OVER = {"n_outer": (1, 2, 5, 10, 15)}
SEARCH_PARAMS = {"n_res": 32, "n_outer": (2, 5)}
# Where a release's compiled statistics are empty (jaxlib < 0.4.29 on the CPU), a real run's
# peak: one stacked buffer (n_res 32: 12.5 MiB) stands out of the RSS, n_outer 10 at most fits.
RUNTIME_PARAMS = {"n_res": 32, "n_outer": (1, 2, 5, 10)}
COMPARE = {"v1": {"variant": 1}, "v2": {"variant": 2, "n_outer": (1, 2)}}
ANSWER = {"metric": "memory", "from": "0.5.0", "to": "0.5.2", "last_old": "0.5.0",
          "first_new": "0.5.1", "direction": "regression", "old": 6464000772,
          "new": 32064001284, "unit": "bytes"}


def inner_loop_v0(x, n):
    def body_fun(x1, _):
        x1 = 1 + jnp.cos(x1**2)
        return x1, x1

    _, x_out = jax.lax.scan(body_fun, x, None, n)
    return x_out[-1]


def inner_loop_v1(x, n):
    def body_fun(x1, _):
        x1 = 1 + jnp.cos(x1**2)
        return x1, None

    x_out, _ = jax.lax.scan(body_fun, x, None, n)
    return x_out


def inner_loop_v2(x, n):
    for _ in range(n):
        x = 1 + jnp.cos(x**2)
    return x


def case(n_outer=10, n_inner=100, n_res=200, variant=0, dtype="float32"):
    inner = (inner_loop_v0, inner_loop_v1, inner_loop_v2)[variant]

    @jax.jit
    def outer_loop(x):
        for _ in range(n_outer):
            x = inner(x, n_inner)
        return x

    return outer_loop, (jax.ShapeDtypeStruct((n_res,) * 3, jnp.dtype(dtype)),)


def shape(name, points, params):
    """v0's memory over n_outer in stacked buffers (n_inner x n_res^3) per outer iteration:
    "constant" (~0) or "grows" (~1, the report's bug), whatever the size (repro/verdict.py)."""
    from repro.verdict import ITEMSIZES, relative_shape, shape_label, stacked_buffer_bytes, verdict

    if name != "n_outer":
        return relative_shape(name, points)
    unit = stacked_buffer_bytes(params["n_inner"], params["n_res"], ITEMSIZES[params["dtype"]])
    found = verdict(points, unit)
    return {**found, "label": shape_label(found, "outer"), "rate": found["growth_per_outer"]}


def evidence(params):
    """What the bisection's evidence dumps (repro/dumps.py): v0 at n_outer 3, where the ends
    differ first (2 stacked buffers live against 3), and the stacked buffer to follow."""
    return {"params": {"n_outer": 3},
            "stacked": (params["n_inner"], params["n_res"], params["n_res"], params["n_res"])}
