"""A Pallas TPU kernel with a batched dot_general of batch 1 and a transposed left operand:
"ValueError: Incompatible shapes for broadcasting" in jax 0.6.2, compiles in jax 0.7.0.

Upstream: https://github.com/jax-ml/jax/issues/29698 ("Pallas tpu batched dot_general tries to
broadcast lhs and output", sssshhhhhh, 2025-06-24, on a TPU v3 with jax 0.6.2: the Mosaic
lowering of dot_general took a [1,k,m]@[1,k,n] product with a transposed lhs for a
matrix-vector one; "It works fine when batch >1 or with interpret").

The report's kernel and shapes, compiled for a TPU v5e without one (`--target v5e`; nothing
runs). The fix came with jax/jaxlib, not libtpu: jax 0.6.2 with libtpu 0.0.19.1 (0.7.0's)
still raises; the error is raised by jax's Pallas lowering, before libtpu sees the kernel
(jax 0.7.0 with libtpu 0.0.17.1 cannot tell: "Failed to deserialize the Mosaic module:
INTERNAL: Unsupported version: expected <= 4 but got 7").

Measured by hand on 2026-12-05 with the harness (`python -m repro --case THIS --target v5e
--metric error`, a CPU machine with no TPU, plain environments `jax==V jaxlib==V
libtpu==PIN`):

    0.4.36 … 0.5.2   LoweringException: NotImplementedError: Only 2D tensors supported in
                     dot; received: [ShapedArray(float32[1,64,128]), ShapedArray(float32[1,64,256])]
    0.5.3, 0.6.0     LoweringException: ValueError: Incompatible shapes for broadcasting:
                     shapes=[(1, 64, 128), (1, 128, 256)]
    0.6.1, 0.6.2     ValueError: Incompatible shapes for broadcasting: shapes=[(1, 64, 128),
                     (1, 128, 256)]   (the same failure, no longer wrapped)
    0.7.0            no error
    0.7.1            XlaRuntimeError: INTERNAL: Failed to deserialize the Mosaic module:
                     INTERNAL: Unsupported version: expected <= 7 but got 8 (a compile without
                     a chip only: tpu-facts.md)
    0.7.2 … 0.10.2   no error

On the chip (a TPU v5e, jax 0.10.2 + libtpu 0.0.42.1, 2026-12-05, `python -m repro --case THIS
--backend tpu --metric error`, the harness of the project's main checkout): "error: no error",
the kernel run on the chip (`--metric run_time`: median 0.000573 s, 100 samples), as compiled
without it at 0.10.2; `--target v5e` on the chip's machine: "error: no error".
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

METRIC = "error"
FIXED = ("b",)  # batch 1 is the report's point: b=2 compiles at 0.6.2 (measured)

ANSWER = {
    "metric": "error",
    "target": "v5e",  # compiled for a TPU v5e without one
    "from": "0.6.1",
    "to": "0.7.0",
    "last_old": "0.6.2",
    "first_new": "0.7.0",
    "direction": "changed",  # the error goes
    "old": "ValueError: Incompatible shapes for broadcasting: shapes=[(1, 64, 128), "
           "(1, 128, 256)]",
    "new": "no error",
    "unit": "message",
    "came_with": "jax/jaxlib",  # jax 0.6.2 + libtpu 0.0.19.1 still raises
}


def kernel(x, y, z):
    z[...] = jax.lax.dot_general(x[...], y[...], (((1,), (1,)), ((0,), (0,))),
                                 preferred_element_type=jnp.float32)


def case(b=1, k=64, m=128, n=256):
    """(fn, args): x[b, k, m] and y[b, k, n] contracted over k, batched over b."""
    x = jax.ShapeDtypeStruct((b, k, m), jnp.float32)
    y = jax.ShapeDtypeStruct((b, k, n), jnp.float32)

    def f(x, y):
        return pl.pallas_call(
            kernel, grid=(),
            in_specs=(pl.BlockSpec(x.shape, lambda: (0, 0, 0)),
                      pl.BlockSpec(y.shape, lambda: (0, 0, 0))),
            out_specs=pl.BlockSpec((b, m, n), lambda: (0, 0, 0)),
            out_shape=jax.ShapeDtypeStruct((b, m, n), jnp.float32))(x, y)

    return jax.jit(f), (x, y)
