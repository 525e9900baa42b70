"""The three loop variants of the upstream report, verbatim in substance.

Only the parameters are lifted out (n_outer, n_inner and the variant are static
arguments of the jitted outer loop, exactly as in the report).
"""

import jax
import jax.numpy as jnp


def inner_loop_v0(x, N):
    def body_fun(x1, _):
        x1 = 1 + jnp.cos(x1**2)
        return x1, x1

    _, x_out = jax.lax.scan(body_fun, x, None, N)
    return x_out[-1]


def inner_loop_v1(x, N):
    def body_fun(x1, x2):
        x1 = 1 + jnp.cos(x1**2)
        return x1, None

    x_out, _ = jax.lax.scan(body_fun, x, None, N)
    return x_out


def inner_loop_v2(x, N):
    x_list = []
    for _ in range(N):
        x = 1 + jnp.cos(x**2)
        x_list.append(x)
    return x_list[-1]


def outer_loop(x, N_outer, N_inner, mode):
    for _ in range(N_outer):
        if mode == 0:
            x = inner_loop_v0(x, N_inner)
        elif mode == 1:
            x = inner_loop_v1(x, N_inner)
        elif mode == 2:
            x = inner_loop_v2(x, N_inner)
        else:
            raise NotImplementedError
    return x


outer_loop = jax.jit(outer_loop, static_argnums=(1, 2, 3))
