"""A jitted function called with a keyword argument named `f` raises a TypeError in jax 0.4.36.

Upstream: https://github.com/jax-ml/jax/issues/25329
("Jitted functions can't take keyword arguments named `f` in v0.4.36").

The report: `jax.jit(myfun)(1.0, f=2.0)` with `def myfun(x, f)` raises "TypeError:
result_paths() got multiple values for argument 'f'" under jax 0.4.36 (an internal wrapper
of jit's tracing took its own first parameter as `f`); 0.4.35 returns 2.0. jax 0.4.37, a
patch release of jax alone (on jaxlib 0.4.36), fixed it (its changelog: "Fixed a bug where
`jit` would error if an argument was named `f` (#25329)"). A change that came and went: over
0.4.35 … 0.4.38 the ends agree, and bisection alone sees no change.

A case's function is called with positional arguments, so the keyword call is made inside
an outer jit (the same error, raised while tracing it). Measured by hand here on 2026-12-03
(CPU, 2 cores; uv environments resolved as of each release date; ≈ 1.5 s a run):

    0.4.35 (jaxlib 0.4.35)   2.0
    0.4.36 (jaxlib 0.4.36)   TypeError: result_paths() got multiple values for argument 'f'
    0.4.37 (jaxlib 0.4.36)   2.0   (fixed in jax alone)
    0.4.38 (jaxlib 0.4.38)   2.0

The report's own call (`jax.jit(myfun)(1.0, f=2.0)`, no outer jit) gives the same four.
"""

import jax
import jax.numpy as jnp

METRIC = "error"
FIXED = ()

EXPECT = "no error"  # a keyword argument named f is a keyword argument

ANSWER = {
    "metric": "error",
    "from": "0.4.35",
    "to": "0.4.36",
    "came_and_went": ["0.4.35", "0.4.38"],  # no error at both: bisection sees no change there
    "last_old": "0.4.35",
    "first_new": "0.4.36",
    "went": ["0.4.36", "0.4.37"],  # the last release that raises, the first that no longer does
    "direction": "changed",
    "old": "no error",
    "new": "TypeError: result_paths() got multiple values for argument 'f'",
    "unit": "message",
}


def case(x=1.0, f=2.0):
    """(fn, args): jit of a call to jit(myfun) with its argument `f` given by keyword."""

    def myfun(x, f):
        return x * f

    inner = jax.jit(myfun)
    return jax.jit(lambda x, y: inner(x, f=y)), (jnp.float32(x), jnp.float32(f))
