"""A case that never returns: a jitted lax.while_loop whose condition never turns false.

A test fixture (not a shipped case): the bisection's time limits must end it, once per end.
"""

import jax
import jax.numpy as jnp
from jax import lax

METRIC = "run_time"


def case(n=8):
    """(fn, args): a loop counting modulo 7 while the count is non-negative: for ever."""
    def forever(x):
        return lax.while_loop(lambda c: c[0] >= 0, lambda c: ((c[0] + 1) % 7, c[1] * 1.0001),
                              (jnp.int32(0), x))[1]

    return jax.jit(forever), (jnp.ones(n, jnp.float32),)
