"""The devices of a multi-device case: ``devices(n)``, the one way a case reaches them.

A case that needs N devices (``DEVICES = N``) builds its mesh over ``devices(N)`` and gives
its arguments shardings over that mesh (``jax.ShapeDtypeStruct(shape, dtype,
sharding=NamedSharding(mesh, spec))``); the harness keeps those shardings. The same file runs
unchanged everywhere (docs/cases.md, "Several devices"):

- on CPU host devices (``DEVICES = N`` makes the harness start N of them): the first N of
  ``jax.devices()``;
- under a TPU target (``python -m repro --target v5e``, no chip needed): the N chips of the
  smallest slice of that topology that has them (``v5e:2x2`` has 4), compile-only devices
  from libtpu's description of the slice; the harness says which slice in the environment
  variable ``REPRO_TPU_SLICE`` before jax starts (repro/tpu_target.py);
- on the chips themselves (``--backend tpu``): the first N of ``jax.devices()``.

Fewer than N there is :class:`NotEnoughDevices`: the harness cannot measure the program here
(its JSON says ``"status": "harness_error"``), never a behaviour of the program.

jax and the standard library only; nothing is imported until a case calls it. A program a
report ships defines its own ``devices(n)`` with the same meaning (``HOST_SOURCE`` here,
``repro.tpu_target.deviceless_prelude`` for a TPU target), so it needs no toolkit.
"""

from __future__ import annotations

import os


class NotEnoughDevices(RuntimeError):
    """The process has fewer devices than the case asks for: the harness's set-up, not the
    program's behaviour."""


def devices(n: int | None = None) -> list:
    """The first ``n`` devices of this run (all of them where ``n`` is None)."""
    from .tpu_target import SLICE_VARIABLE, slice_devices

    topology = os.environ.get(SLICE_VARIABLE)
    if topology:

        found, where = slice_devices(topology), f"the TPU slice {topology} (compile-only)"
    else:
        import jax

        found = jax.devices()
        where = f"this process ({found[0].platform} devices)" if found else "this process"
    if n is not None and len(found) < n:
        hint = (" (on the CPU: DEVICES = N in the case, or --devices N, starts N host devices)"
                if not topology and found and found[0].platform == "cpu" else "")
        raise NotEnoughDevices(f"the case needs {n} devices and {where} has {len(found)}"
                               f"{hint}")
    return list(found if n is None else found[:n])


# What a standalone program defines instead of importing this module, on CPU host devices or
# a machine's own chips (the XLA_FLAGS of DEVICES = N go in front of its command).
HOST_SOURCE = '''\
def devices(n):
    found = jax.devices()
    if len(found) < n:
        raise RuntimeError(f"this program needs {n} devices, this machine has {len(found)}")
    return found[:n]
'''
