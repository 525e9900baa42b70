"""A Pallas TPU kernel (fused matmul + ReLU, float32 8192x8192, blocks of 128 rows of A by
all of K and all of K by 128 columns of B) over the 16 MiB of scoped VMEM a v5e allows by
default: compiles in jax 0.8.0, fails from jax 0.8.1 "RESOURCE_EXHAUSTED: Ran out of memory in
memory space vmem … Scoped allocation with size 16.12M and limit 16.00M exceeded scoped vmem
limit by 128.0K". The change needs both parts: jax/jaxlib 0.8.1 and libtpu 0.0.30.

Upstream: https://github.com/keras-team/keras-io/pull/2284 ("Fix VMEM OOM and benchmark issue
in Pallas guide", jeffcarp, 2026-02-07: "Running the custom kernel guide as-is on TPU v5e will
encounter a VMEM compiler OOM in newer versions of JAX … The guide was rendered with an older
version of JAX so it didn't hit this issue"; the PR puts it down to Pallas "in JAX >0.8.0").
The kernel, its tiles and N = 8192 are the guide's own (guides/define_custom_kernel.py as
first published, 2025-12-18, `fused_matmul`), compiled for a TPU v5e without one
(`--target v5e`; nothing runs). Two blocks of 4 MiB and one of 64 KiB, each double-buffered:
16.125 MiB, 128 KiB over the limit.

Measured by hand on 2026-12-06 (a CPU machine with no TPU, plain environments `jax==V
jaxlib==V libtpu==PIN` made with uv, the kernel in a plain script compiled for one device of a
`v5e:2x2` topology, `TPU_SKIP_MDS_QUERY=true TPU_ACCELERATOR_TYPE=v5litepod-4
JAX_PLATFORMS=cpu`, one fresh process each; the loaded libtpu read from /proc/self/maps):

    0.7.0 (libtpu 0.0.19.1)   no error
    0.7.1 (0.0.20)            XlaRuntimeError: INTERNAL: Failed to deserialize the Mosaic
                              module: INTERNAL: Unsupported version: expected <= 7 but got 8
                              (a compile without a chip only: docs/targets.md)
    0.7.2 (0.0.23)            no error
    0.8.0 (0.0.24)            no error
    0.8.1 (0.0.30)            JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory
                              space vmem while allocating on stack for %fused_matmul.1 = … .
                              Scoped allocation with size 16.12M and limit 16.00M exceeded
                              scoped vmem limit by 128.0K. …

    libtpu swaps (`TPU_LIBRARY_PATH` at `pip install --target DIR --no-deps libtpu==X`):
    jax 0.8.0 with libtpu 0.0.24, 0.0.27, 0.0.29 or 0.0.30: no error;
    jax 0.8.1 with libtpu 0.0.24, 0.0.27 or 0.0.29: no error; with 0.0.30: the VMEM error.
    Neither new part alone shows it: it needs both (jax/jaxlib 0.8.1 and libtpu 0.0.30, the
    first libtpu on PyPI after 0.0.29 that shows it with jax 0.8.1 held).

On the chip (a TPU v5e, jax 0.10.2 + libtpu 0.0.42.1, 2026-12-06, `python3 -m repro --case
THIS --metric error`, the harness of the project's main checkout at e7be690, this file's code
without its docstring): `--backend tpu`: "error: JaxRuntimeError: RESOURCE_EXHAUSTED: E1001:
CompileTimeScopedVmemOom: Ran out of memory in memory space vmem … Scoped allocation with size
16.12M and limit 16.00M exceeded scoped vmem limit by 128.0K." (libtpu 0.0.4x puts the error
code first), and the same with `--target v5e` on the chip's machine; `--param n=4096` (blocks
of 8.06 MiB): "error: no error", the kernel run on the chip (`--metric run_time`: median
0.0038058 s, 79 samples).
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

METRIC = "error"
FIXED = ("n", "tile")  # the guide's sizes: the blocks' 16.125 MiB against 16 MiB is the point

ANSWER = {
    "metric": "error",
    "target": "v5e",  # compiled for a TPU v5e without one
    "from": "0.7.0",
    "to": "0.8.1",
    "last_old": "0.8.0",
    "first_new": "0.8.1",
    "direction": "changed",  # the error comes
    "old": "no error",
    # the error's core (jaxbisect.search.error_signature.core): its words and figures, the
    # quoted instruction (which names this file's path and lines) shown as "…"
    "new": "JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while "
           "allocating on stack for …. Scoped allocation with size 16.12M and limit 16.00M "
           "exceeded scoped vmem limit by 128.0K.",
    "unit": "message",
    "came_with": "needs both",  # jax 0.8.0 + libtpu 0.0.30 and jax 0.8.1 + 0.0.29 compile
    "first_libtpu": "0.0.30",  # with jax 0.8.1 held
}


def matmul_relu_kernel(a_ref, b_ref, c_ref):
    """The guide's kernel: the tile's matmul and its ReLU, fused."""
    acc = pl.dot(a_ref[...], b_ref[...])
    c_ref[...] = jnp.maximum(acc, 0)


def case(n=8192, tile=128):
    """(fn, args): the guide's `fused_matmul` of two float32 [n, n] matrices."""

    def fused_matmul(a, b):
        m, k = a.shape
        _, nn = b.shape
        return pl.pallas_call(
            matmul_relu_kernel,
            out_shape=jax.ShapeDtypeStruct((m, nn), a.dtype),
            in_specs=[pl.BlockSpec(index_map=lambda i, j: (i, 0), block_shape=(tile, k)),
                      pl.BlockSpec(index_map=lambda i, j: (0, j), block_shape=(k, tile))],
            out_specs=pl.BlockSpec(index_map=lambda i, j: (i, j), block_shape=(tile, tile)),
            grid=(m // tile, nn // tile))(a, b)

    x = jax.ShapeDtypeStruct((n, n), jnp.float32)
    return jax.jit(fused_matmul), (x, x)
