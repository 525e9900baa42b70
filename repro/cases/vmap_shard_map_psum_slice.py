"""jax#34249's program over four devices: on a TPU v5e:2x2 slice (compiled without its chips),
on four CPU host devices, or on four chips. vmap of a shard_map whose body psums (check_vma):
no error in jax 0.8.0, TypeError in 0.8.1, no error again in 0.9.0.

Upstream: https://github.com/jax-ml/jax/issues/34249 ("[bug] vmap(shard_map(psum)) leads to
unexpected argument error since v0.8.1", domichbt, 2026-01-09). The report ran on 4 forced CPU
host devices; vmap_shard_map_psum.py is the same bug on a one-device mesh. Here the mesh is
the report's four devices, reached the one way a case reaches several (repro/devices.py:
`devices(4)`), and the argument carries its NamedSharding over that mesh (the batch axis
whole, the data axis split four ways), so that `--target v5e` compiles it for the four chips
of a v5e:2x2 slice and `DEVICES = 4` gives it four CPU host devices elsewhere. The cause and
the fix are in jax's Python (vmap_shard_map_psum.py's docstring: commits 49984173be and
09c3f1c923): the error is raised while tracing, before any compiler sees the program, so the
TPU and the CPU agree.

Measured by hand on 2026-12-05 with the harness (`python -m repro --case THIS --target v5e
--metric error`, plain environments `jax==V jaxlib==V libtpu==PIN`, a CPU machine with no
TPU; and `--backend cpu` in the same environments, four host devices):

    0.8.0   no error (v5e:2x2: the compiled module all-reduces over 4 partitions)
    0.8.1   TypeError: _psum_invariant_abstract_eval() got an unexpected keyword argument
            'axis_index_groups'
    0.8.2   the same TypeError
    0.8.3   the same TypeError
    0.9.0   no error
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from repro.devices import devices

METRIC = "error"
FIXED = ()
DEVICES = 4

ANSWER = {
    "metric": "error",
    "target": "v5e",  # a v5e:2x2 slice without its chips; the CPU (DEVICES = 4) agrees
    "from": "0.8.0",
    "to": "0.8.1",
    "came_and_went": ["0.8.0", "0.9.0"],  # no error at both ends
    "last_old": "0.8.0",
    "first_new": "0.8.1",
    "went": ["0.8.3", "0.9.0"],
    "direction": "changed",
    "old": "no error",
    "new": "TypeError: _psum_invariant_abstract_eval() got an unexpected keyword argument "
           "'axis_index_groups'",
    "unit": "message",
}


def case(n=400, batch=2):
    """(fn, args): jit of vmap over a shard_map on four devices whose body psums its block."""
    mesh = Mesh(np.array(devices(4)), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

    def count(value):
        return jax.lax.psum(value, axis_name=mesh.axis_names)

    smapped = jax.shard_map(count, mesh=mesh, in_specs=P("x"), out_specs=P(None),
                            check_vma=True)
    x = jax.ShapeDtypeStruct((batch, n), jnp.float32, sharding=NamedSharding(mesh, P(None, "x")))
    return jax.jit(jax.vmap(smapped)), (x,)
