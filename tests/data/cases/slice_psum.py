"""A data-parallel step over four devices (shard_map, psum, NamedSharding): one program for
CPU host devices, a TPU v5e slice without its chips, and the chips themselves.

Not an upstream report: the multi-device program the harness's device API is tested with
(docs/cases.md, "Several devices"; tests/test_tpu_slice.py). It builds its mesh over
``repro.devices.devices(4)`` and gives its argument a NamedSharding over that mesh, so that
under ``--target v5e`` it compiles for the four chips of a ``v5e:2x2`` slice (an all-reduce
across them in the compiled module) and on the CPU for four host devices (``DEVICES = 4``
starts them).

Measured by hand (2026-12-05): no error at every release below, CPU and TPU alike.
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from repro.devices import devices

try:
    from jax import shard_map  # jax 0.6.1 on
except ImportError:
    from jax.experimental.shard_map import shard_map

METRIC = "error"
FIXED = ()
DEVICES = 4


def case(n=1024, count=4):
    """(fn, args): each of ``count`` devices sums its block of x, psum over the mesh, x scaled
    by the total."""
    mesh = Mesh(np.array(devices(count)), ("x",))

    def step(x):
        total = jax.lax.psum(jnp.sum(x), "x")
        return x / total

    fn = jax.jit(shard_map(step, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    x = jax.ShapeDtypeStruct((n,), jnp.float32, sharding=NamedSharding(mesh, P("x")))
    return fn, (x,)
