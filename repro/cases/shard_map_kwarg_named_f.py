"""A data-parallel step over 4 CPU host devices (shard_map, psum) that calls a jitted helper
with its argument `f` given by keyword: a TypeError in 0.4.36, none in 0.4.37.

Upstream: https://github.com/jax-ml/jax/issues/25329 ("jit fails if an argument is named
f"), the error jit_kwarg_named_f.py bisects on one device; here it is inside a shard_map
over a mesh of 4 host devices, set up as a script sets it up: XLA_FLAGS at the top of the
file, before jax is imported (the harness imports a case before jax's backend starts, so the
case runs as its script would; no --devices or --xla-flags needed).

Measured by hand on 2026-12 (CPU, uv environments as of each release date, `python` on a
copy of this file with `print(case()[0](*case()[1]))`):

    jax 0.4.36 (jaxlib 0.4.36)   TypeError: result_paths() got multiple values for argument 'f'
    jax 0.4.37 (jaxlib 0.4.36)   no error ([2. 2. 2. 2.] … the psum over 4 devices)
    jax 0.4.38 (jaxlib 0.4.38)   no error
    without the XLA_FLAGS line   "ValueError: Number of devices 1 must equal the product of
                                 mesh_shape (4,)" at every release
"""

import os

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"

import jax  # noqa: E402  (after XLA_FLAGS, as the script has it)
import jax.numpy as jnp  # noqa: E402
from jax.experimental import mesh_utils  # noqa: E402
from jax.experimental.shard_map import shard_map  # noqa: E402
from jax.sharding import Mesh  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

METRIC = "error"

ANSWER = {
    "metric": "error",
    "from": "0.4.36",
    "to": "0.4.38",
    "last_old": "0.4.36",
    "first_new": "0.4.37",
    "direction": "changed",  # the error goes
    "old": "TypeError: result_paths() got multiple values for argument 'f'",
    "new": "no error",
    "unit": "message",
}


def case(n=8):
    """(fn, args): per device, a jitted helper called with f= by keyword, then a psum."""
    mesh = Mesh(mesh_utils.create_device_mesh((4,)), ("x",))

    def scale(x, f):
        return x * f

    helper = jax.jit(scale)

    def step(x):
        return jax.lax.psum(helper(x, f=2.0).sum(), "x") * jnp.ones(1)

    fn = jax.jit(shard_map(step, mesh=mesh, in_specs=P("x"), out_specs=P("x")))
    return fn, (jnp.ones(n, jnp.float32) / n,)
