"""A release's TPU environment for the tests marked ``tpu`` (jax, jaxlib and the libtpu it
pins: 0.7–1.2 GB each): the toolkit's own (jaxbisect.lab.environments, the tests' cache), or
where ``JAX_SCAN_REPRO_TPU_ENVS`` names a folder of plain ones (``jax-<V>/bin/python``), that
one."""

from __future__ import annotations

import os
from pathlib import Path


def tpu_python(version: str) -> Path:
    root = os.environ.get("JAX_SCAN_REPRO_TPU_ENVS")
    if root and (Path(root) / f"jax-{version}" / "bin" / "python").exists():
        return Path(root) / f"jax-{version}" / "bin" / "python"
    from jaxbisect.lab.backends import get as backend
    from jaxbisect.lab.catalogue import load_catalogue
    from jaxbisect.lab.environments import ensure_environment

    return ensure_environment(load_catalogue().get(version), backend("tpu")).python
