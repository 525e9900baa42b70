"""The evidence's paths (repro/dumps.py, repro/xla_passes.py) place a TPU target's arguments as
the harness does (Compiler.structs: a TPU slice keeps the case's shardings over it) and lower
under the target's first device as jax's default (Compiler.lowering): needs-c 6. Before, a
slice case's argument went to one device ("Received incompatible devices for jitted
computation", measured at 0.10.2) and a Pallas kernel met the CPU default device
("Unsupported TPU device kind: cpu"). Real libtpu, no chip (marked ``tpu``)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import REPO
from tpu_envs import tpu_python

SLICE_CASE = REPO / "tests" / "data" / "cases" / "slice_psum.py"  # DEVICES = 4, devices(4)
PALLAS_CASE = REPO / "tests" / "data" / "cases" / "pallas_cumsum.py"  # jax#32991's kernel
HARNESS_WORDS = ("incompatible devices", "Unsupported TPU device kind")


def evidence(module: str, case, version: str = "0.10.2") -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS")}
    done = subprocess.run([str(tpu_python(version)), "-m", module, "--case", str(case),
                           "--target", "v5e", "--json"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    return json.loads(done.stdout)


def errors(doc: dict) -> str:
    return json.dumps([doc.get("error"), (doc.get("lowered") or {}).get("error"),
                       (doc.get("compiled") or {}).get("error")])


@pytest.mark.tpu
def test_the_evidence_of_a_slice_case_keeps_its_sharding_over_the_four_chips():
    doc = evidence("repro.dumps", SLICE_CASE)
    assert doc["lowered"]["status"] == "ok", doc["lowered"]["error"]
    assert "mhlo.num_partitions = 4" in doc["lowered"]["text"]
    assert doc["compiled"]["status"] == "ok" and "num_partitions=4" in doc["compiled"]["hlo"]


@pytest.mark.tpu
@pytest.mark.parametrize("module", ["repro.dumps", "repro.xla_passes"])
@pytest.mark.parametrize("case", [SLICE_CASE, PALLAS_CASE], ids=["slice", "pallas"])
def test_no_evidence_path_fails_by_the_harness_s_own_placement(module, case):
    said = errors(evidence(module, case))
    assert not any(words in said for words in HARNESS_WORDS), said


@pytest.mark.tpu
def test_the_hlo_module_of_a_slice_case_compiles_over_the_slice(tmp_path):
    """repro/hlo.py (the HLO bundle's module): before, "Received incompatible devices"."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS")}
    done = subprocess.run([str(tpu_python("0.10.2")), "-m", "repro.hlo", "dump", "--case",
                           str(SLICE_CASE), "--target", "v5e", "--out", str(tmp_path / "m")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    doc = json.loads(done.stdout)
    assert (doc["status"], doc["error"]) == ("ok", None)
    assert "num_partitions=4" in (tmp_path / "m" / "module.txt").read_text()
