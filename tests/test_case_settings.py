"""A case runs as its script would: what a case file sets at module level (XLA_FLAGS for host
devices, jax.config.update) takes effect, as do its DEVICES and --devices; real harness runs
in the environments of a 0.4.3x release and of 0.10.2, asserted on the JSON document."""

from __future__ import annotations

import pytest
from conftest import repro_json

from repro.case import CaseError, read_case

# The output is jax's device count times a sum over a mesh of every device: it says how many
# devices the program ran on. A mesh of all devices: one, unless something asks for more.
PROGRAM = '''
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

METRIC = "output"


def case(n=12):
    mesh = Mesh(np.array(jax.devices()), ("x",))
    x = jax.device_put(jnp.arange(n, dtype=jnp.float32), NamedSharding(mesh, P("x")))
    count = jax.device_count()
    return jax.jit(lambda a: (a.sum() * count).astype(jnp.float32)), (x,)
'''
AT_THE_TOP = '''import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
print("set up as a script")  # printed at import: never in the JSON
'''
X64 = """import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
METRIC = "output"


def case():
    return jax.jit(lambda a: a * 2), (jnp.ones(2),)
"""
SUM = sum(range(12))


def devices_used(python, path, *more: str) -> int:
    doc = repro_json(python, "--case", str(path), *more)
    assert doc["metric"]["status"] == "ok", doc["metric"]
    value = doc["metric"]["samples"][0]["values"][0]
    return round(value / SUM)


@pytest.mark.jax
@pytest.mark.parametrize("version", [pytest.param("0.4.36", marks=pytest.mark.full), "0.10.2"])
def test_a_case_runs_as_its_script_would(jax_python, tmp_path, version):
    python = jax_python(version)
    plain = tmp_path / "plain.py"
    plain.write_text(PROGRAM)
    top = tmp_path / "top.py"
    top.write_text(AT_THE_TOP + PROGRAM)
    declared = tmp_path / "declared.py"
    declared.write_text(PROGRAM + "\nDEVICES = 3\n")
    assert devices_used(python, plain) == 1
    assert devices_used(python, top) == 4           # its own XLA_FLAGS, no option
    assert devices_used(python, declared) == 3      # DEVICES
    assert devices_used(python, declared, "--devices", "2") == 2  # the user's word last
    assert devices_used(python, top, "--xla-flags", "--xla_cpu_enable_fast_math=false") == 4
    wide = tmp_path / "wide.py"
    wide.write_text(X64)
    doc = repro_json(python, "--case", str(wide))
    assert doc["metric"]["samples"][0]["shapes"] == [[[2], "float64"]]  # its config.update


def test_devices_is_a_positive_integer(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(PROGRAM + "\nDEVICES = 0\n")
    with pytest.raises(CaseError, match="DEVICES"):
        read_case(bad)
    good = tmp_path / "good.py"
    good.write_text(PROGRAM + "\nDEVICES = 4\n")
    assert read_case(good).devices == 4
