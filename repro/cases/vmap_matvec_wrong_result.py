"""jit of a vmapped matrix-vector product + reduction gives a wrong last element on CPU in 0.10.2.

Upstream: https://github.com/jax-ml/jax/issues/39103
("[CPU] jax.jit returns wrong results for vmapped matrix-vector product followed by
reduction").

The report: with x64 on, `jax.vmap(lambda row: jnp.sum((matrix @ row) ** 2))` over the rows
of `stack((arange(n), 0, 0))` with `matrix = eye(3)` returns the right values eagerly but a
wrong one under `jax.jit` with jax/jaxlib 0.10.2 (n=16385 in float64, n=32769 in float32);
0.10.1 is correct. The right answer for the last row is (n-1)**2.

Only the last row (the remainder after the vectorised loop) is wrong, so the case returns
that element, as the report prints it: a digest of the whole vector would move by ~1e-6
relative and could hide inside an output tolerance.

Measured here on 2026-09 (CPU, 2 cores; one measurement ≈ 2 s including the jax import):

    0.4.30, 0.4.38, 0.6.0, 0.8.0, 0.9.2, 0.10.0, 0.10.1   268435456.0   (= 16384**2, right)
    0.10.2                                                 266342400.0   (wrong, -0.78%)
    0.11.0 (Python 3.12)                                   268435456.0   (fixed)

With x64=False, n=32769: 0.10.1 gives 1073741824.0, 0.10.2 gives 1065369600.0. (The
report's wrong figures, 267911424.0 / 1071645696.0, differ from these; the wrong value
depends on the machine, the change does not.)
"""

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)

METRIC = "output"
FIXED = ("n", "x64")

EXPECT = 268435456.0  # (n-1)**2 at n=16385: the last row's right value

ANSWER = {
    "metric": "output",
    "from": "0.9.2",
    "to": "0.10.2",
    "last_old": "0.10.1",
    "first_new": "0.10.2",
    "direction": "changed",  # an output changes; which one is right is for people to say
    "old": 268435456.0,
    "new": 266342400.0,
    "unit": "value",
}


def case(n=16385, x64=True):
    """(fn, args): the last element of vmap(sum((eye(3) @ row) ** 2)) over n rows."""
    dtype = jnp.float64 if x64 else jnp.float32
    i = jnp.arange(n, dtype=dtype)
    x = jnp.stack((i, jnp.zeros_like(i), jnp.zeros_like(i)), axis=1)
    matrix = jnp.eye(3, dtype=dtype)

    def f(x):
        return jax.vmap(lambda row: jnp.sum((matrix @ row) ** 2))(x)[-1]

    return jax.jit(f), (x,)
