"""A Pallas TPU kernel of two bfloat16 batched mat-vecs: compiles with libtpu 0.0.32.1 (jax
0.8.3), fails "Mosaic failed to compile TPU kernel: infer-vector-layout: unsupported shape
cast" with libtpu 0.0.34 (jax 0.9.0), compiles again with libtpu 0.0.37 (jax 0.9.2).

Upstream: https://github.com/jax-ml/jax/issues/29002 ("pallas compile fails with bfloat16 but
works with float32", eamartin, 2025-05-25; the reporter's error: "Mosaic failed to compile TPU
kernel: Only 32-bit types supported").

The report's kernel (`bcast_matvec` twice, blocks squeezed on the grid's axis), compiled for a
TPU v5e without one (`--target v5e`; nothing runs). The change at 0.8.3 → 0.9.0 and back at
0.9.1 → 0.9.2 came with libtpu alone (jax and jaxlib held, libtpu swapped both ways), so the
lowered module says nothing of it.

Measured by hand on 2026-12-05 (a CPU machine with no TPU, plain environments `jax==V
jaxlib==V libtpu==PIN`, compiled for one device of a `v5e:2x2` topology with it as jax's
default device, the defaults below; the harness, `python -m repro --case THIS --target v5e
--metric error`, gave the same lines at 0.8.3, 0.9.0, 0.9.1, 0.9.2 and 0.10.2, and at the
swaps 0.8.3 + libtpu 0.0.33 and 0.9.0 + 0.0.32.1 through TPU_LIBRARY_PATH):

    0.4.36 … 0.5.2   LoweringException: NotImplementedError: Only 2D tensors supported in
                     dot; received: [ShapedArray(bfloat16[2,1,128]), ShapedArray(bfloat16[2,128,4])]
    0.5.3 … 0.6.1    MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: unsupported
                     shape cast
    0.6.2            … infer-vector-layout: unsupported shape cast (libtpu 0.0.17.1)
    0.7.0            … Only 32-bit types supported (libtpu 0.0.19.1; the reporter's error)
    0.7.1            XlaRuntimeError: INTERNAL: Failed to deserialize the Mosaic module:
                     INTERNAL: Unsupported version: expected <= 7 but got 8 (a compile without
                     a chip only: tpu-facts.md)
    0.7.2 … 0.8.3    no error (output 4,096 bytes, temp 0)
    0.9.0 … 0.9.1    MosaicError: INTERNAL: Mosaic failed to compile TPU kernel:
                     infer-vector-layout: unsupported shape cast
    0.9.2 … 0.10.2   no error

    libtpu swaps (jax+jaxlib held): 0.8.3 + libtpu 0.0.33 or 0.0.34 fails, 0.9.0 + 0.0.32.1
    compiles; 0.9.1 + 0.0.36 fails, 0.9.1 + 0.0.37 compiles, 0.9.2 + 0.0.35 fails.

On the chip (a TPU v5e, jax 0.10.2 + libtpu 0.0.42.1, 2026-12-05, `python -m repro --case THIS
--backend tpu --metric error`, the harness of the project's main checkout): "error: no error",
the kernel run on the chip (`--metric run_time`: median 0.0005946 s, 100 samples), as compiled
without it at 0.10.2; `--target v5e` on the chip's machine: "error: no error".
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

METRIC = "error"
FIXED = ("dtype",)  # float32 compiles at every release: the report's point

ANSWER = {
    "metric": "error",
    "target": "v5e",  # compiled for a TPU v5e without one
    "from": "0.8.0",
    "to": "0.9.1",
    "last_old": "0.8.3",
    "first_new": "0.9.0",
    "went": ["0.9.1", "0.9.2"],  # the last release that fails, the first that compiles again
    "direction": "changed",
    "old": "no error",
    "new": "MosaicError: INTERNAL: Mosaic failed to compile TPU kernel: infer-vector-layout: "
           "unsupported shape cast",
    "unit": "message",
    "came_with": "libtpu",  # 0.0.33 is the first libtpu that fails with jax 0.8.3 held
    "first_libtpu": "0.0.33",
}


def bcast_matvec(a, b):
    if b.shape[-3] == 1:
        return jnp.matmul(a, jnp.squeeze(b, -3), preferred_element_type="float32")
    return jnp.squeeze(jnp.matmul(jnp.expand_dims(a, -2), b, preferred_element_type="float32"),
                       -2)


def kernel(a, b, c, out):
    p1 = bcast_matvec(a[...], b[...])
    p2 = bcast_matvec(p1.astype(a.dtype), c[...])
    out[...] = p2.astype(a.dtype)


def linear_block(shape):
    shape = [None, *shape[1:]]  # the grid's axis squeezed
    return pl.BlockSpec(shape, lambda j: (j, *([0] * (len(shape) - 1))))


def case(n=8, bc=2, k=128, h=4, o=128, dtype="bfloat16"):
    """(fn, args): the report's kernel over a grid of n blocks."""
    dt = jnp.dtype(dtype)
    a, b, c = (jax.ShapeDtypeStruct(s, dt) for s in ((n, bc, k), (n, bc, k, h), (n, bc, h, o)))

    def f(a, b, c):
        return pl.pallas_call(
            kernel, grid=(n,),
            in_specs=[linear_block(a.shape), linear_block(b.shape), linear_block(c.shape)],
            out_specs=linear_block((n, bc, o)),
            out_shape=jax.ShapeDtypeStruct((n, bc, o), a.dtype))(a, b, c)

    return jax.jit(f), (a, b, c)
