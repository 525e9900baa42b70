"""Merging results from many machines: a real CPU measurement and the same result as if measured
on an H200 (cuda12), downloaded as CI artifacts in nested folders, become one table."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from jaxbisect import merge
from jaxbisect.catalogue import load_catalogue
from jaxbisect.harness import HarnessOptions
from jaxbisect.measurements import measure_release

REPO = Path(__file__).resolve().parent.parent
SMALL = HarnessOptions(n_outer=(1, 3, 6), n_inner=10, n_res=16)


@pytest.fixture(scope="module")
def cpu_result() -> dict:
    """A real measurement of jax 0.10.2 on this machine's CPU (stored after the first run)."""
    m = measure_release(load_catalogue().get("0.10.2"), "cpu", SMALL, progress=lambda _: None)
    assert m.document is not None, m.error
    return m.as_json()


def as_if_on_h200(result: dict) -> dict:
    gpu = copy.deepcopy(result)
    gpu["backend"] = "cuda12"
    gpu["document"].update(backend="gpu", device="NVIDIA H200")
    gpu["installed"]["jax-cuda12-plugin"] = gpu["installed"]["jaxlib"]
    return gpu


@pytest.fixture
def artifacts(tmp_path, cpu_result) -> Path:
    """What the workflow's merge job downloads: one folder per artifact."""
    root = tmp_path / "artifacts"
    files = {
        "repro-jax-0.10.2-0/jax-0.10.2-cpu.json": cpu_result,
        "repro-jax-0.10.2-1/jax-0.10.2-cuda12.json": as_if_on_h200(cpu_result),
        "again/nested/jax-0.10.2-cpu.json": cpu_result,  # the same result uploaded twice
    }
    for name, document in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(document))
    (root / "repro-jax-0.10.2-1" / "unrelated.json").write_text('{"hello": 1}')
    return root


@pytest.mark.jax
def test_two_machines_merge_into_one_table(artifacts, tmp_path, capsys):
    out = tmp_path / "merged.md"
    assert merge.main([str(artifacts), "--out", str(out)]) == 0
    text = out.read_text()
    rows = [line for line in text.split("## All results")[1].splitlines()
            if line.startswith("| 0.10.2")]
    assert len(rows) == 2  # the duplicate upload counted once
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    assert [(c[2], c[3]) for c in cells] == [("cpu", "cpu"), ("gpu", "NVIDIA H200")]
    assert all(c[-1].startswith("grows") for c in cells)
    grid = text.split("## Verdicts side by side")[1].split("##")[0]
    assert "| jax    | cpu · cpu" in grid and "cuda12 · NVIDIA H200" in grid
    assert "Groups (backend · device): cpu · cpu, cuda12 · NVIDIA H200" in text
    assert "unrelated.json: not a sweep result" in text
    assert "merged 2 result(s) in 2 group(s)" in capsys.readouterr().err


@pytest.mark.jax
def test_a_failed_machine_and_different_sizes_are_shown_apart(artifacts, tmp_path, cpu_result):
    failed = as_if_on_h200(cpu_result)
    failed.update(release="0.5.0", document=None, installed={},
                  error="installing jax 0.5.0 (cuda12) failed: no wheels")
    bigger = copy.deepcopy(cpu_result)
    bigger["options"]["n_res"] = 32
    bigger["document"]["verdict"]["growth_per_outer"] = 0.25
    bigger["document"]["verdict"]["status"] = "constant"
    (artifacts / "x").mkdir()
    (artifacts / "x" / "jax-0.5.0-cuda12.json").write_text(json.dumps(failed))
    (artifacts / "x" / "jax-0.10.2-cpu.json").write_text(json.dumps(bigger))
    out = tmp_path / "merged.md"
    assert merge.main([str(artifacts), "--out", str(out)]) == 0
    text = out.read_text()
    assert "cuda12 · (not measured)" in text
    assert "skipped: installing jax 0.5.0 (cuda12) failed: no wheels" in text
    assert "n_res 16, n_inner 10, float32, compiled" in text and "n_res 32" in text
    assert "Harness options differ between results" in text


def test_nothing_to_merge_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert merge.main([str(tmp_path / "empty"), "--out", str(tmp_path / "m.md")]) == 2
    assert merge.main([str(tmp_path / "missing"), "--out", str(tmp_path / "m.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("python -m jaxbisect.merge: error:")
                                 for line in err)
    assert not (tmp_path / "m.md").exists()


@pytest.mark.jax
def test_the_merge_session_writes_the_table(artifacts, tmp_path):
    out = tmp_path / "merged.md"
    done = subprocess.run([sys.executable, "-m", "nox", "-s", "merge", "--",
                           str(artifacts), "--out", str(out)], cwd=REPO, check=False,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NVIDIA H200" in out.read_text()
