"""Batched 3x3 jnp.linalg.solve on CPU: ~2x slower per call from jax 0.4.33.

Upstream: https://github.com/jax-ml/jax/issues/36799 (a comment by clemisch, 2026-04-27:
"I see a x2 slowdown between 0.4.31 and 0.4.33 for many small batched solves also on
float32"), in the thread "lax.scan with float64 3×3 matrix carry is ~10× slower on CPU in
JAX 0.4.33 vs 0.4.31". The program is the same author's reproducer of
https://github.com/jax-ml/jax/issues/36927 (`jax.jit(jnp.linalg.solve)` over 182 × 474
symmetric positive definite float32 3x3 systems, each with one right-hand side), which reports
33.3 → 87 ms a call from jax 0.9.2 to 0.10.0 on the reporter's machine. That later change did
not show here (0.9.1 127 ms against 0.10.0 77 ms within interleaved pairs, on a busy machine:
docs/classification.md); the 0.4.31 → 0.4.33 one does. jaxlib 0.4.32 switched the CPU backend
to the "thunk" runtime; the solve's custom calls and their batching run under it from 0.4.33
(0.4.32 is yanked).

Measured here on 2026-12-02 (CPU, 2 cores, shared with other jobs; 25th percentile of at
least 5 warm calls and 0.4 s, one process each, two processes a release, batch=86268):

    0.4.30   20.9 / 20.5 ms
    0.4.31   22.4 / 21.8 ms
    0.4.33   45.3 / 45.2 ms   (first slow release: 2.1x)
    0.4.34   47.0 / 45.2 ms
    0.4.35   49.1 / 46.5 ms
    0.5.0    48.0 / 45.7 ms

One measurement takes about 3 s including the jax import. A change of about 2x: small
enough that a busy machine can hide it from a two-population test, which is what this case
is for (the bisections under load: docs/classification.md).
"""

import jax
import jax.numpy as jnp

METRIC = "run_time"
FIXED = ()

ANSWER = {
    "metric": "run_time",
    "from": "0.4.30",
    "to": "0.4.33",
    "last_old": "0.4.31",
    "first_new": "0.4.33",
    "direction": "regression",
    "old": 0.022,
    "new": 0.045,
    "unit": "s",
}


def case(batch=86268):
    """(fn, args): ``jnp.linalg.solve`` of ``batch`` SPD float32 3x3 systems, upstream's data."""
    a = jax.random.normal(jax.random.PRNGKey(0), (batch, 3, 3), dtype=jnp.float32)
    a = a @ jnp.swapaxes(a, -1, -2) + 1e-2 * jnp.eye(3, dtype=jnp.float32)
    b = jax.random.normal(jax.random.PRNGKey(1), (batch, 3, 1), dtype=jnp.float32)
    return jax.jit(jnp.linalg.solve), (a, b)
