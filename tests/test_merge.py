"""Merging results from many machines: a sweep's CPU result (from a lab of recorded runs) and
the same result as if measured on an H200 (cuda12), downloaded as CI artifacts in nested
folders, become one table."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fake_lab import FakeLab, recorded, recorded_documents

from jaxbisect import merge, sweep

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def cpu_result(recorded_catalogue, tmp_path) -> dict:
    """jax 0.5.1's result on the CPU, as the sweep writes it (the scan case, recorded runs)."""
    lab = FakeLab(recorded(recorded_documents("scan_growth-*.json")))
    assert sweep.main(["--release", "0.5.1", "--backend", "cpu", "--reports",
                       str(tmp_path / "swept"), "-q"], lab=lab) == 0
    return json.loads((tmp_path / "swept" / "jax-0.5.1-cpu.json").read_text())


def as_if_on_h200(result: dict) -> dict:
    gpu = copy.deepcopy(result)
    gpu.update(backend="cuda12", device="NVIDIA H200")
    return gpu


@pytest.fixture
def artifacts(tmp_path, cpu_result) -> Path:
    """What the workflow's merge job downloads: one folder per artifact."""
    root = tmp_path / "artifacts"
    again = copy.deepcopy(cpu_result)
    again["seconds"] += 3  # the same result, measured again elsewhere
    files = {
        "repro-jax-0.5.1-0/jax-0.5.1-cpu.json": cpu_result,
        "repro-jax-0.5.1-1/jax-0.5.1-cuda12.json": as_if_on_h200(cpu_result),
        "again/nested/jax-0.5.1-cpu.json": again,  # the same result uploaded twice
    }
    for name, document in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(document))
    (root / "repro-jax-0.5.1-1" / "unrelated.json").write_text('{"hello": 1}')
    return root


def rows_of(text: str, release: str) -> list[list[str]]:
    table = text.split("## All results")[1]
    header = next(line for line in table.splitlines() if line.startswith("| jax"))
    names = [c.strip() for c in header.strip("|").split("|")]
    return [dict(zip(names, (c.strip() for c in line.strip("|").split("|"))))
            for line in table.splitlines() if line.startswith(f"| {release}")]


def test_two_machines_merge_into_one_table(artifacts, tmp_path, capsys):
    out = tmp_path / "merged.md"
    assert merge.main([str(artifacts), "--out", str(out)]) == 0
    text = out.read_text()
    rows = rows_of(text, "0.5.1")
    assert len(rows) == 2  # the duplicate upload counted once
    assert [(r["backend"], r["device"]) for r in rows] == [("cpu", "cpu"),
                                                           ("cuda12", "NVIDIA H200")]
    assert all(r["shape"].startswith("grows") for r in rows)
    grid = text.split("## Verdicts side by side")[1].split("##")[0]
    assert "| jax   | cpu · cpu" in grid and "cuda12 · NVIDIA H200" in grid
    assert "Groups (backend · device): cpu · cpu, cuda12 · NVIDIA H200" in text
    assert "unrelated.json: not a sweep result" in text
    assert "merged 2 result(s) in 2 group(s)" in capsys.readouterr().err


def test_a_failed_machine_and_different_questions_are_shown_apart(artifacts, tmp_path,
                                                                  cpu_result):
    skipped = as_if_on_h200(cpu_result)
    skipped = {k: skipped[k] for k in ("schema", "kind", "backend", "target", "metric", "unit",
                                       "case", "over", "asked")}
    skipped.update(release="0.5.0", label="skipped", skipped="its jaxlib has no cuda12 wheel",
                   seconds=0.0)
    bigger = copy.deepcopy(cpu_result)
    bigger["asked"] += ["--param", "n_res=32"]
    bigger["series"].update(status="constant", shape="constant (+0.25/outer)")
    (artifacts / "x").mkdir()
    (artifacts / "x" / "jax-0.5.0-cuda12.json").write_text(json.dumps(skipped))
    (artifacts / "x" / "jax-0.5.1-cpu.json").write_text(json.dumps(bigger))
    out = tmp_path / "merged.md"
    assert merge.main([str(artifacts), "--out", str(out)]) == 0
    text = out.read_text()
    assert "cuda12 · (not measured)" in text
    assert "not installable here: its jaxlib has no cuda12 wheel" in text
    assert "n_res=32" in text and "Questions differ between results" in text
    assert "constant (+0.25/outer)" in text


def test_nothing_to_merge_is_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert merge.main([str(tmp_path / "empty"), "--out", str(tmp_path / "m.md")]) == 2
    assert merge.main([str(tmp_path / "missing"), "--out", str(tmp_path / "m.md")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("python -m jaxbisect.merge: error:")
                                 for line in err)
    assert not (tmp_path / "m.md").exists()
    with pytest.raises(SystemExit) as exited:
        merge.main(["--bogus"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "python -m jaxbisect.merge: error: unrecognized arguments: --bogus"]


@pytest.mark.jax
def test_the_merge_session_writes_the_table(artifacts, tmp_path):
    out = tmp_path / "merged.md"
    done = subprocess.run([sys.executable, "-m", "nox", "-s", "merge", "--",
                           str(artifacts), "--out", str(out)], cwd=REPO, check=False,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "NVIDIA H200" in out.read_text()
