"""The GitHub workflow: valid against GitHub's schema (offline, check-jsonschema's vendored copy),
and its matrix command really lists the repro parametrizations that nox has."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "repro.yml"
README = REPO / "README.md"
OFFLINE = {"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
           "HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
           "NO_PROXY": "", "no_proxy": ""}


def load_workflow() -> dict:
    from ruamel.yaml import YAML  # check-jsonschema's YAML parser

    return YAML(typ="safe").load(WORKFLOW.read_text())


def check_jsonschema(path: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("check_jsonschema")
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                           "vendor.github-workflows", str(path)], check=False,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, **OFFLINE})


def test_the_workflow_is_valid_offline():
    done = check_jsonschema(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok -- validation done" in done.stdout


def test_the_validator_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on: ${{ matrix.runner }}",
                                                   "runs_on: ${{ matrix.runner }}"))
    done = check_jsonschema(broken)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "runs_on" in done.stdout


def nox_list(*args: str) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "nox", "-l", "--json", *args], cwd=REPO,
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_plain_nox_runs_the_repro_parametrizations():
    assert [s["session"] for s in nox_list()] == ["repro"]  # the whole default set at once
    listed = nox_list("-s", "repro_release")
    sessions = [s["session"] for s in listed]
    assert "repro_release(release='0.5.0')" in sessions
    assert "repro_release(release='0.10.2')" in sessions
    assert all(s["session"] == f"repro_release(release='{s['call_spec']['release']}')"
               for s in listed)
    names = {s["name"] for s in nox_list("-s", "repro_range", "merge", "bench", "tests", "lint")}
    assert names == {"repro_range", "merge", "bench", "tests", "lint"}


def list_step() -> dict:
    steps = load_workflow()["jobs"]["sessions"]["steps"]
    return next(step for step in steps if step.get("id") == "list")


@pytest.mark.parametrize("runners, expected", [
    ('["gpu-h200", "gpu-a6000"]', ["gpu-h200", "gpu-a6000"]),
    ("gpu-h200", ["gpu-h200"]),
    ('[["self-hosted", "a100"], "ubuntu-latest"]', [["self-hosted", "a100"], "ubuntu-latest"]),
])
def test_the_matrix_step_lists_every_repro_session(runners, expected, tmp_path):
    """Runs the workflow's own listing script, as the first job does."""
    output = tmp_path / "github_output"
    bindir = str(Path(sys.executable).parent)  # this interpreter's python and nox come first
    env = {**os.environ, "RUNNERS": runners, "GITHUB_OUTPUT": str(output),
           "TARGETS": '["a6000", "h100"]',
           "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run(["bash", "-c", list_step()["run"]], cwd=tmp_path, env=env,
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "noxfile" in (done.stdout + done.stderr).lower(), \
        "outside the repo there is no noxfile: the step must fail, not list nothing"
    output.unlink(missing_ok=True)
    done = subprocess.run(["bash", "-c", list_step()["run"]], cwd=REPO, env=env,
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    sessions = json.loads(outputs["sessions"])
    assert sessions == [{"session": s["session"], "release": s["call_spec"]["release"]}
                        for s in nox_list("-s", "repro_release")]
    assert {"session": "repro_release(release='0.5.0')", "release": "0.5.0"} in sessions
    assert json.loads(outputs["runners"]) == expected
    assert json.loads(outputs["targets"]) == ["a6000", "h100"]


def test_the_jobs_fit_together():
    jobs = load_workflow()["jobs"]
    measure, merge_job = jobs["measure"], jobs["merge"]
    assert measure["runs-on"] == "${{ matrix.runner }}"
    assert measure["strategy"]["fail-fast"] is False
    run = next(s["run"] for s in measure["steps"] if "nox -s" in s.get("run", ""))
    assert '--backend "$BACKEND"' in run and "--reports ci-results" in run
    upload = next(s for s in measure["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["path"] == "ci-results/*.json" and upload["if"] == "always()"
    assert upload["with"]["name"].startswith("repro-jax-")
    download = next(s for s in merge_job["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["with"] == {"pattern": "repro-jax-*", "path": "artifacts"}
    assert any(s.get("run") == "nox -s merge -- artifacts" for s in merge_job["steps"])
    assert "measure" in merge_job["needs"] and "always()" in merge_job["if"]


def test_targets_fan_out_on_plain_cpu_runners():
    """XLA's plan for each GPU target needs no GPU: one CPU job per release and target,
    merged with the rest."""
    jobs = load_workflow()["jobs"]
    target = jobs["target"]
    assert target["runs-on"] == "ubuntu-latest"
    assert set(target["strategy"]["matrix"]) == {"repro", "target"}
    run = next(s["run"] for s in target["steps"] if "nox -s" in s.get("run", ""))
    assert '--target "$TARGET"' in run and "--reports ci-results" in run
    upload = next(s for s in target["steps"] if "upload-artifact" in s.get("uses", ""))
    assert upload["with"]["name"].startswith("repro-jax-")  # the merge job's pattern
    assert "target" in jobs["merge"]["needs"]


def test_the_readme_installs_only_what_the_main_job_needs():
    quick_start = README.read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    assert "pip install -e . &&" in quick_start and "[test]" not in quick_start
    assert quick_start.strip().endswith("nox -s repro")


@pytest.mark.jax  # needs PyPI or a warm uv cache
def test_the_project_alone_brings_nox(tmp_path):
    """`pip install -e .` and nothing else: `nox -s repro` must find nox and the noxfile."""
    from uv import find_uv_bin

    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    for args in (["venv", "--quiet", "--python", sys.executable, str(venv)],
                 ["pip", "install", "--quiet", "--python", str(venv / "bin" / "python"),
                  "-e", str(REPO)]):
        done = subprocess.run([find_uv_bin(), *args], capture_output=True, text=True, env=env,
                              timeout=600)
        assert done.returncode == 0, done.stderr
    listed = subprocess.run([str(venv / "bin" / "nox"), "-l", "--json"], cwd=REPO,
                            capture_output=True, text=True, env=env, timeout=120)
    assert listed.returncode == 0, listed.stderr
    sessions = {s["name"] for s in json.loads(listed.stdout)}
    assert sessions == {"repro"}  # the default sessions: the main job
