"""lax.while_loop on CPU: ~100x slower per iteration from jax 0.4.33, fast again from 0.5.3.

Upstream: https://github.com/jax-ml/jax/issues/25190
("Slowdown of jax::lax::while_loop on CPU between 0.4.31 and 0.4.33").

The report: a `lax.while_loop` that walks an index through `jnp.arange(2**22)` (pmapped over
96 CPU devices) ran in 2 s on jax 0.4.31 and in 42 s on 0.4.33 and later. jaxlib 0.4.32
switched the CPU backend to the new "thunk" runtime, which dispatches every loop iteration
from the host instead of running the loop as one compiled kernel. This case is the same
loop body on one device (no pmap), sized so one call stays far below 0.2 s.

Measured here on 2026-09 (CPU, 2 cores, shared with other jobs; run_time = median of 7
warm calls, three fresh processes each; steps=262144):

    0.4.26 … 0.4.31   0.34 – 0.6 ms
    0.4.33            128 – 152 ms   (first slow release; 0.4.32 is yanked)
    0.4.34 … 0.5.2    15 – 48 ms
    0.5.3 … 0.10.2    0.5 – 1.0 ms   (fixed)

With the default steps=131072 (same machine): 0.4.30 0.18 ms, 0.4.31 0.21 / 0.32 / 0.26 ms
(three processes), 0.4.33 39 / 23 / 24 / 23 ms (four), 0.4.34 9.7 ms, 0.5.2 7.8 ms, 0.5.3
0.34 ms; 0.4.20 0.17 ms. One measurement takes about 2 s including the jax import. Two
clean changes: the regression 0.4.31 → 0.4.33 (≈ 90–180x, recorded in ANSWER) and the
fix 0.5.2 → 0.5.3 (≈ 30x; bisect 0.5.1 … 0.6.0 to find it). The ratio is large enough to
survive a noisy machine; absolute figures are not.
"""

import jax
import jax.numpy as jnp
from jax import lax

METRIC = "run_time"
FIXED = ()

# Over 0.4.30 … 0.4.34 the toolkit names 0.4.33 a third behaviour (~3x slower again than
# 0.4.34, itself ~35x slower than 0.4.31): the pair is then 0.4.31 → 0.4.34 with 0.4.33
# skipped and named (tests/test_shipped_cases.py checks both).
ANSWER = {
    "metric": "run_time",
    "from": "0.4.30",
    "to": "0.4.33",
    "last_old": "0.4.31",
    "first_new": "0.4.33",
    "direction": "regression",
    "old": 0.00026,
    "new": 0.023,
    "unit": "s",
}


def case(steps=131072):
    """(fn, args): a while_loop that scans ``steps`` indices until it reaches the maximum."""
    foo = jnp.arange(steps)

    def episode(foo):
        stop = jnp.max(foo)
        return lax.while_loop(
            lambda u: u[0] < stop,
            lambda u: (jnp.maximum(u[0], foo[u[1]]), u[1] + 1),
            (0, 0),
        )[1]

    return jax.jit(episode), (foo,)
