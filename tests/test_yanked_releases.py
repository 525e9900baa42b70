"""Yanked releases on real releases (real environments, real subprocesses): jax 0.4.32, yanked
from PyPI, between 0.4.31 and 0.4.33, through a command bisected by its exit status."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import REPO

# Exits 1 (the new behaviour) under the yanked release only, 0 under its neighbours.
CHECK = "import os, sys; sys.exit(os.environ['JAX_BISECT_RELEASE'] == '0.4.32')"


def bisect(tmp_path, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "jaxbisect", "--from", "0.4.31", "--to",
                           "0.4.33", "--backend", "cpu", "--reports", str(tmp_path), "--json",
                           *args, "--", "python", "-c", CHECK],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


@pytest.mark.jax
def test_a_command_names_the_yanked_release_and_measures_it_when_asked(tmp_path):
    left_out = bisect(tmp_path)
    assert left_out["status"] == "alike"
    assert [p["jax"] for p in left_out["probes"]] == ["0.4.31", "0.4.33"]
    assert left_out["yanked"] == [{"jax": "0.4.32", "jaxlib": "0.4.32", "reason": None,
                                   "candidate": False, "probed": False}]
    included = bisect(tmp_path, "--include-yanked")
    exits = {p["jax"]: p["runs"][0]["samples"][0] for p in included["probes"]}
    assert exits == {"0.4.31": 0, "0.4.33": 0, "0.4.32": 1}   # installed by its == pin
    assert included["yanked"] == [{"jax": "0.4.32", "jaxlib": "0.4.32", "reason": None,
                                   "candidate": True, "probed": True}]
    installed = next(p for p in included["probes"] if p["jax"] == "0.4.32")
    assert "--include-yanked" in included["reproduce"]
    # Both ends exit 0: the yanked release's 1 is a third behaviour, like neither end.
    assert installed["third"] and included["third_behaviour"] == ["0.4.32"]
