"""jax.remat around lax.scan blocks stops bounding memory: compiled temp bytes grow ~5x in 0.5.1.

Upstream: https://github.com/jax-ml/jax/issues/27748
("Different checkpoint behaviors in different version of JAX and CUDA").

The report: `value_and_grad` of a function that runs `num_blocks` remat-wrapped `lax.scan`
blocks over a (30000, 100) carry, each step itself `jax.remat`-ed, fits on a GPU with
jax 0.4.13 and runs out of memory with 0.5.3 ("rematerialization no longer reduces memory").
This case is the report's program with the carry as an argument and smaller sizes; it is
measured compile-only (`memory` = output + temp bytes of `memory_analysis()`), so it needs
no device memory.

Measured here on 2026-09 (CPU, 2 cores) with the defaults (rows=1000, cols=100,
block_size=100, num_blocks=10; one measurement ≈ 4 s including the jax import):

    0.4.29 … 0.4.34   84,802,112 bytes
    0.4.35 … 0.5.0    84,802,880 bytes
    0.5.1 … 0.10.2    441,208,256 bytes   (5.2x: about one carry per scan step, 1000 steps)

(jaxlib < 0.4.29 reports all-zero sizes on CPU: not measured.) The change falls cleanly
between 0.5.0 and 0.5.1 (jaxlib 0.5.0 → 0.5.1). With the report's own sizes scaled to
rows=3000 it is 242.6 MiB → 1262.3 MiB.
"""

import jax
import jax.numpy as jnp
from jax import lax

METRIC = "memory"
FIXED = ("num_blocks",)

ANSWER = {
    "metric": "memory",
    "from": "0.4.38",
    "to": "0.5.2",
    "last_old": "0.5.0",
    "first_new": "0.5.1",
    "direction": "regression",
    "old": 84802880,
    "new": 441208256,
    "unit": "bytes",
}


def case(rows=1000, cols=100, block_size=100, num_blocks=10):
    """(fn, args): value_and_grad over ``num_blocks`` remat'd scans of ``block_size`` steps."""

    @jax.remat
    def step_fn(carry, x_t):
        x0, params = carry
        a = jnp.sin(params * x0)
        b = jnp.cos(params * a)
        return (x0 + a + b, params), None

    def loss(params, init_x):
        carry = (init_x, params)
        for ii in range(num_blocks):
            indices = jnp.arange(ii * block_size + 1, (ii + 1) * block_size + 1)
            carry, _ = jax.remat(lambda c: lax.scan(step_fn, c, indices))(carry)  # noqa: B023
        return jnp.sum(carry[0])

    args = (jax.ShapeDtypeStruct((), jnp.float32),
            jax.ShapeDtypeStruct((rows, cols), jnp.float32))
    return jax.jit(jax.value_and_grad(loss)), args
