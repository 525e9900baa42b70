"""lax.scan over a pytree node whose flatten and flatten_with_keys give different aux data
raises an IndexError in 0.4.36.

Upstream: https://github.com/jax-ml/jax/issues/25332
('"IndexError: list index out of range" raised by _check_carry_type in
lax/control_flow/loops.py'; fixed by https://github.com/jax-ml/jax/pull/25355 in 0.4.37).

The report's program scans over a `chex.dataclass` (which registers a node whose two
flattenings give different aux data); this case registers such a node itself, as the fix's
test does, so that it needs only jax. The carry check compares the input's and the output's
tree structures, finds them unequal by aux data alone, lists no difference, and indexes the
empty list.

It needs both a jax commit and jaxlib 0.4.36: jax commit a1dfdc1d61 ("C++ tree with path
API") passes flatten_with_keys to jaxlib's C++ registry only where
`xla_extension_version >= 299` (jaxlib 0.4.35 is 293, 0.4.36 is 299). Measured by hand on
2026-12 (CPU, uv environments as of each release date; a sparse checkout of jax's Python on
the path for a commit):

    jax 0.4.35 (jaxlib 0.4.35)                     no error
    jax 0.4.36 (jaxlib 0.4.36)                     IndexError: list index out of range
    jax 0.4.37 (jaxlib 0.4.36)                     no error (the fix, in jax's Python)
    a1dfdc1d61 on jaxlib 0.4.36                    IndexError: list index out of range
    a1dfdc1d61's parent db4b3f2922 on 0.4.36       no error
    a1dfdc1d61 and db4b3f2922 on jaxlib 0.4.35     no error
"""

import jax
import jax.numpy as jnp
from jax import lax, tree_util

METRIC = "error"

ANSWER = {
    "metric": "error",
    "from": "0.4.35",
    "to": "0.4.36",
    "last_old": "0.4.35",
    "first_new": "0.4.36",
    "direction": "changed",  # an error appears
    "old": "no error",
    "new": "IndexError: list index out of range",
    "commits": {"came_with": "both", "first_bad": "a1dfdc1d61",
                "jaxlib_gate": "xla_extension_version >= 299"},
}


class Node:
    def __init__(self, x, y):
        self.x, self.y = x, y


tree_util.register_pytree_with_keys(
    Node,
    lambda o: ((("x", o.x), ("y", o.y)), "with_keys"),   # flatten_with_keys
    lambda _, xy: Node(xy[0], xy[1]),                   # unflatten
    lambda o: ((o.x, o.y), "without_keys"),             # flatten: other aux data
)


def case(length=10):
    """(fn, args): a scan whose carry is the node."""
    def f(x):
        def step(carry, _):
            return Node(carry.x + 1.0, carry.y), None
        out, _ = lax.scan(step, Node(x, x), None, length=length)
        return out.x + out.y

    return jax.jit(f), (jnp.float32(1.0),)
