"""A command case: prints the scan report's v0 plan size as a JSON object on its last line."""
import json

import jax
import jax.numpy as jnp


def inner(x):
    def body(c, _):
        c = 1 + jnp.cos(c**2)
        return c, c
    return jax.lax.scan(body, x, None, 100)[1][-1]


@jax.jit
def outer(x):
    for _ in range(3):
        x = inner(x)
    return x


stats = outer.lower(jax.ShapeDtypeStruct((32, 32, 32), jnp.float32)).compile().memory_analysis()
print("measured with jax", jax.__version__)
print(json.dumps({"bytes": stats.output_size_in_bytes + stats.temp_size_in_bytes,
                  "jax": jax.__version__}))
