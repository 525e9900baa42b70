"""jax#32991's kernel (https://github.com/jax-ml/jax/issues/32991): cumsum inside a Pallas TPU
kernel, not lowered at any release 0.4.36 … 0.10.2 ("Unimplemented primitive in Pallas TPU
lowering … cumsum", worded four ways). From jax 0.9.2 Pallas asks jax's default device for its
TPU generation while lowering: compiled without a chip, that device must be the target's
(on the CPU it fails "ValueError: Unsupported TPU device kind: cpu", the harness's doing)."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

METRIC = "error"


def case(n=4):
    def kernel(x_ref, o_ref):
        o_ref[...] = jax.lax.slice(jnp.cumsum(x_ref[...]), (0,), (2,))

    def call_kernel(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct((2,), x.dtype))(x)

    return jax.jit(call_kernel), (jax.ShapeDtypeStruct((n,), jnp.int32),)
