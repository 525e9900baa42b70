"""exp(x * nan) under jit returns a tiny garbage number instead of nan on CPU in jax 0.6.2.

Upstream: https://github.com/jax-ml/jax/issues/29537
("[regression] JAX 0.6.2 breaks `xp.exp(x * xp.nan)` inside jax.jit").

The report: with x64 on, `jnp.exp(x * jnp.nan)` for a float64 scalar is nan eagerly but
`jax.jit` of it returns 4.8463733244814e-310 with jax/jaxlib 0.6.2; 0.6.1 was right (it broke
`scipy.stats.gstd` under jit). This case is the report's program.

Measured here on 2026-09 (CPU, 2 cores; one measurement ≈ 1.5 s including the jax import):

    0.4.30, 0.5.3, 0.6.0, 0.6.1   nan   (right)
    0.6.2                         3.16e-322, 4.675e-310, 5.563e-310, 6.913e-310 in four
                                  fresh processes: never nan, and a different value each
                                  time (it reads memory that was never written)
    0.7.0, 0.7.2, 0.8.0, 0.10.2   nan   (fixed)

An output comparison must therefore ask "is it nan?", not compare the wrong value: the
old figure is nan and the new one is any finite number. Regression 0.6.1 → 0.6.2, fixed in
0.7.0; x=5.0 behaves the same.
"""

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

METRIC = "output"
FIXED = ()

EXPECT = "nan"  # exp(x * nan) is nan, as it is eagerly

ANSWER = {
    "metric": "output",
    "from": "0.6.0",
    "to": "0.6.2",
    "came_and_went": ["0.6.0", "0.7.0"],  # nan at both: bisection sees no change there
    "last_old": "0.6.1",
    "first_new": "0.6.2",
    "direction": "changed",  # an output changes; which one is right is for people to say
    "old": "nan",
    "new": "finite, ~1e-310 (uninitialised memory; differs per process)",
    "unit": "value",
}


def case(x=0.123):
    """(fn, args): jit(exp(x * nan)) on a float64 scalar."""

    def f(x):
        return jnp.exp(x * jnp.nan)

    return jax.jit(f), (jnp.asarray(x, dtype=jnp.float64),)
