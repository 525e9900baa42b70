"""jax#29002: a batched bf16 matvec in a Pallas kernel, compiled for a TPU v5e without a chip.
At jax 0.8.3 (libtpu 0.0.32.1) it compiles; at 0.9.0 (libtpu 0.0.34) Mosaic fails ("unsupported
shape cast"). The swaps (tests/data/lab/pallas_bf16_batched_matvec-swaps.json) put the change in
libtpu alone, first at 0.0.33. Program: the research notes' case, as measured (2026-12-05)."""
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

METRIC = "error"
FIXED = ()

def bcast_matvec(a, b):
    assert a.ndim == b.ndim - 1
    pet = dict(preferred_element_type="float32")
    if b.shape[-3] == 1:
        return jnp.matmul(a, jnp.squeeze(b, -3), **pet)
    return jnp.squeeze(jnp.matmul(jnp.expand_dims(a, -2), b, **pet), -2)

def kernel(a, b, c, out):
    p1 = bcast_matvec(a[...], b[...])
    p2 = bcast_matvec(p1.astype(a.dtype), c[...])
    out[...] = p2.astype(a.dtype)

def linear_block(_shape):
    shape = list(_shape)
    shape[0] = None

    def index_map(j):
        return tuple([j] + ([0] * (len(shape) - 1)))

    return pl.BlockSpec(shape, index_map)

def case(n=8, bc=2, k=128, h=4, o=128, dtype="bfloat16"):
    dt = jnp.dtype(dtype)
    a = jax.ShapeDtypeStruct((n, bc, k), dt)
    b = jax.ShapeDtypeStruct((n, bc, k, h), dt)
    c = jax.ShapeDtypeStruct((n, bc, h, o), dt)
    def f(a, b, c):
        return pl.pallas_call(kernel, grid=(n,),
            in_specs=[linear_block(a.shape), linear_block(b.shape), linear_block(c.shape)],
            out_specs=linear_block((n, bc, o)),
            out_shape=jax.ShapeDtypeStruct((n, bc, o), a.dtype))(a, b, c)
    return jax.jit(f), (a, b, c)
