"""vmap of a shard_map whose body calls psum (check_vma=True): TypeError in jax 0.8.1.

Upstream: https://github.com/jax-ml/jax/issues/34249
("[bug] vmap(shard_map(psum)) leads to unexpected argument error since v0.8.1", domichbt,
2026-01-09).

The report: a `jax.shard_map(..., in_specs=P("x"), out_specs=P(None), check_vma=True)` whose
body is `jax.lax.psum(value, axis_name=mesh.axis_names)` runs when called directly, but
`jax.vmap` of it raises "TypeError: _psum_invariant_abstract_eval() got an unexpected keyword
argument 'axis_index_groups'" from jax 0.8.1 on (with check_vma=False it does not). jax 0.8.1's
commit 49984173be ("Remove axis_index_groups from psum_invariant_p and pvary_p primitives",
2025-11-13) dropped the parameter from psum_invariant_p, but the collectives' batching rule
(jax/_src/lax/parallel.py, `_reduction_with_positional_batcher` and `_constant_reduction`)
still binds every reduction primitive with `axis_index_groups=`. Fixed by 09c3f1c923 ("Don't
pass axis_index_groups to prim.bind in psum batching rule if primitive is psum_invariant_p",
2026-01-09), first released in jax 0.9.0; 0.8.2 and 0.8.3 still raise (0.8.3, a patch
release from the 0.8 branch, came out on 2026-01-28, after 0.9.0 of 2026-01-20, without the
fix). The cause is in jax's Python (the batching rule), but jax 0.8.1's Python cannot be
run on jaxlib 0.8.0 to show it: its version check refuses ("RuntimeError: jaxlib is version
0.8.0, but this version of jax requires version >= 0.8.1.").

The report used 4 forced CPU host devices; one device (a mesh of shape (1,)) gives the same
error, so this case needs none. The mesh is passed to shard_map explicitly (the report sets it
with `jax.set_mesh`) and the vmapped call is inside `jax.jit` (the same error, raised while
tracing). The APIs used (`jax.shard_map` with `mesh=`/`check_vma=`, `jax.make_mesh(...,
axis_types=...)`) are in jax 0.7.0's source (read, not run); releases before 0.7 were not
checked and may lack them (the case would then fail everywhere there, not measure a change).

Measured by hand here on 2026-12-04 (CPU, 2 cores, Python 3.11; uv environments resolved as of
each release date; about 2 s a run including the jax import; report's script and this case
give the same lines):

    0.8.0 (jaxlib 0.8.0)   no error (shape (2, 400), all 1.0)
    0.8.1 (jaxlib 0.8.1)   TypeError: _psum_invariant_abstract_eval() got an unexpected
                           keyword argument 'axis_index_groups'
    0.8.2 (jaxlib 0.8.2)   the same TypeError
    0.8.3 (jaxlib 0.8.3)   the same TypeError
    0.9.0 (jaxlib 0.9.0)   no error (fixed)
    jax 0.8.1 on jaxlib 0.8.0: refused at import (RuntimeError, minimum jaxlib 0.8.1)
"""

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P

METRIC = "error"
FIXED = ()

ANSWER = {
    "metric": "error",
    "from": "0.8.0",
    "to": "0.8.1",
    "came_and_went": ["0.8.0", "0.9.0"],  # no error at both ends: bisection there sees no change
    "last_old": "0.8.0",
    "first_new": "0.8.1",
    "went": ["0.8.3", "0.9.0"],  # the last release that raises, the first that no longer does
    "direction": "changed",
    "old": "no error",
    "new": "TypeError: _psum_invariant_abstract_eval() got an unexpected keyword argument "
           "'axis_index_groups'",
    "unit": "error",
    # The first bad commit, named from jax's history before the toolkit's --commits found it
    # (2026-12-04: 10 commit probes of 592), and the fix, from the history only.
    "first_bad_commit": "49984173bedd270da859dbf733e939d9fccb5d9c",
    "fix_commit": "09c3f1c9238cd66b1b49cad2525daaf8c5f7de69",
}


def case(n=400, batch=2):
    """(fn, args): jit of vmap over a shard_map (one-device mesh) whose body psums its block."""
    mesh = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))

    def count(value):
        return jax.lax.psum(value, axis_name=mesh.axis_names)

    smapped = jax.shard_map(count, mesh=mesh, in_specs=P("x"), out_specs=P(None),
                            check_vma=True)
    return jax.jit(jax.vmap(smapped)), (jnp.ones((batch, n), dtype=jnp.float32),)
