"""The one test that compiles for a TPU with a real libtpu, on a machine without one: jax
0.5.0's TPU environment (jax, jaxlib, libtpu 0.0.8: about 0.7 GB), ``python -m repro --target
v5e`` in it. Slow and large, so outside ``nox -s tests`` (CI): ``nox -s tests_tpu`` runs it."""

from __future__ import annotations

import json

import pytest
from conftest import run_repro

pytestmark = pytest.mark.tpu


@pytest.fixture(scope="module")
def tpu_python():
    from jaxbisect.lab.backends import get as backend
    from jaxbisect.lab.catalogue import load_catalogue
    from jaxbisect.lab.environments import ensure_environment

    return ensure_environment(load_catalogue().get("0.5.0"), backend("tpu")).python


def test_the_scan_case_compiles_for_a_v5e_without_one(tpu_python):
    done = run_repro(tpu_python, "--json", "--quiet", "--target", "v5e", "--n-res", "32",
                     "--n-outer", "1", "2", "5")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["backend"], doc["host_backend"], doc["deviceless"]) == (
        "tpu (compile-only)", "cpu", True)
    assert doc["device"] == "TPU v5e, XLA's plan, not a measurement on one"
    target = doc["target"]
    assert {k: target[k] for k in ("name", "kind", "description", "source", "topology",
                                   "device_kind", "libtpu")} == {
        "name": "v5e", "kind": "tpu", "description": "TPU v5e",
        "source": "built in: topology v5e:2x2", "topology": "v5e:2x2",
        "device_kind": "TPU v5 lite", "libtpu": "0.0.8"}
    metric = doc["metric"]
    # The scan report's growth does not happen on a TPU: v0's plan is constant in n_outer.
    assert metric["status"] == "ok" and metric["value"].startswith("constant")
    figures = [p["value"] for p in metric["points"]]
    assert figures[0] >= 32**3 * 4 and max(figures) - min(figures) < 0.01 * figures[0]
    assert [p["at"] for p in doc["compare"]["v2"]["points"]] == [1]  # v2 at n_outer 1 only
    # A plan over the chip's HBM fails at compile (libtpu 0.0.8's words: "Allocation
    # (size=18923520000) would exceed memory (size=17179869184)"; 0.0.42.1's: "… exceeds
    # available HBM (15.75G)").
    done = run_repro(tpu_python, "--json", "--quiet", "--target", "v5e", "--n-res", "350",
                     "--n-outer", "1", "2", "--variants", "v0")
    over = json.loads(done.stdout)["metric"]["points"][0]
    said = json.dumps(over)
    assert over["status"] != "ok" and ("RESOURCE_EXHAUSTED" in said or "HBM" in said), over
