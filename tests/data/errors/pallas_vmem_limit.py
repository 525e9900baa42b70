"""A Pallas copy-and-scale kernel whose blocks need more scoped VMEM than the 32 MiB it allows
(rows 4096 of 1024 float32, grid 4), compiled for a TPU v5e without a chip: it compiles up to
jax 0.8.0 (libtpu 0.0.24) and fails from 0.8.1 (libtpu 0.0.30), "Scoped allocation with size
64.00M and limit 32.00M", worded three ways by 0.8.1 … 0.10.2 (the quoted instruction, the error
code libtpu 0.0.3x puts first). Measured by hand, 2026-12-05 (tests/data/lab/README.md)."""

import jax
import jax.numpy as jnp

METRIC = "error"


def case(rows: int = 4096, limit_mib: int = 32):
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    params = getattr(pltpu, "CompilerParams", None) or pltpu.TPUCompilerParams

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    def f(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(4,), in_specs=[pl.BlockSpec((rows, 1024), lambda i: (i, 0))],
                              out_specs=pl.BlockSpec((rows, 1024), lambda i: (i, 0)),
                              compiler_params=params(vmem_limit_bytes=limit_mib * 2**20))(x)

    return jax.jit(f), (jax.ShapeDtypeStruct((4 * rows, 1024), jnp.float32),)
