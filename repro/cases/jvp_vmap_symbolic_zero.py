"""jvp(vmap(jit(f))) of a custom_jvp f whose rule returns a symbolic zero: TypeError in 0.6.0.

Upstream: https://github.com/jax-ml/jax/issues/28144
("Crash on jvp-vmap-jit with `SymbolicZero`", patrick-kidger, 2025-04-21; x-ref
https://github.com/patrick-kidger/optimistix/issues/129).

The report: a `jax.custom_jvp` function whose JVP rule returns
`jax.custom_derivatives.zero_from_primal(x, symbolic_zeros=True)` as its tangent, differentiated
as `jax.jvp(jax.vmap(jax.jit(f)), ...)`, works with jax 0.5.3 and raises with 0.6.0:
"TypeError: Argument 'Zero(ShapedArray(float32[3]))' of type '<class
'jax._src.ad_util.Zero'>' is not a valid JAX type". The cause is in jax's Python (the
tracing machinery), not in jaxlib: jax 0.6.0's Python raises it on jaxlib 0.5.3 too.
This case is the report's program inside one outer `jax.jit` (the error is the same).

Measured here on 2026-12-03 (CPU, 2 cores; one run about 3-5 s including the jax import):

    0.5.3   no error ((1, 2, 3), tangent (0, 0, 0))
    0.6.0   TypeError: Argument 'Zero(ShapedArray(float32[3]))' of type
            '<class 'jax._src.ad_util.Zero'>' is not a valid JAX type
    0.6.1   no error (gone again)
"""

import jax
import jax.custom_derivatives
import jax.numpy as jnp

METRIC = "error"
FIXED = ()

ANSWER = {
    "metric": "error",
    "from": "0.5.3",
    "to": "0.6.0",
    "came_and_went": ["0.5.3", "0.6.1"],  # no error at both: 0.5.3 -> 0.6.1 sees no change
    "last_old": "0.5.3",
    "first_new": "0.6.0",
    "direction": "changed",  # an error line changes (here: an error appears)
    "old": "no error",
    "new": "TypeError: Argument 'Zero(ShapedArray(float32[3]))' of type "
           "'<class 'jax._src.ad_util.Zero'>' is not a valid JAX type",
    "unit": "error",
    # Below the release (python -m bisect … --commits), verified by hand: its parent
    # 2863b48801 gives no error and it raises, both on jaxlib 0.5.3 (docs/findings.md).
    "first_bad_commit": "c418495b13525525aa3966bf6ef8a971b73c9f3f",  # PR #27886, a merge
    "last_good_commit": "2863b488010e23b69c0db1118846c3459021615b",
}


def case(n=3):
    """(fn, args): jvp(vmap(jit(f))) of a custom_jvp ``f`` whose tangent is a symbolic zero."""

    @jax.custom_jvp
    def f(x):
        return x + 1

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,) = primals
        return f(x), jax.custom_derivatives.zero_from_primal(x, symbolic_zeros=True)

    @jax.jit
    def jvp_of_vmap(x, t):
        return jax.jvp(jax.vmap(jax.jit(f)), (x,), (t,))

    return jvp_of_vmap, (jnp.arange(n, dtype=jnp.float32), jnp.arange(n, dtype=jnp.float32))
