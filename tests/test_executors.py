"""The executor seam (jaxbisect/lab/executors.py) without a scheduler: the local executor is
subprocess.run, and the cluster's section of a report is computed from what was recorded."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from jaxbisect.errors import UserError
from jaxbisect.lab.executors import (
    LOCAL,
    _exit_code,
    cluster_document,
    cluster_markdown,
    executor_from,
)

ENV = {"PATH": os.environ["PATH"], "WHO": "probe"}


def test_local_run_is_subprocess_run(tmp_path):
    argv = [sys.executable, "-c", "import os,sys; print(os.environ['WHO'], os.getcwd()); "
            "print('e', file=sys.stderr); sys.exit(4)"]
    done = LOCAL.run(argv, env=ENV, cwd=tmp_path, timeout=60)
    same = subprocess.run(argv, env=ENV, cwd=tmp_path, timeout=60, capture_output=True,
                          text=True)
    assert (done.returncode, done.stdout, done.stderr) == (same.returncode, same.stdout,
                                                           same.stderr)
    assert done.returncode == 4 and done.stdout == f"probe {tmp_path}\n"
    assert done.where == {}


def test_local_run_passes_output_on_and_times_out(tmp_path):
    out = tmp_path / "out"
    with open(out, "w") as f:
        done = LOCAL.run(["echo", "to the file"], env=ENV, timeout=60, stdout=f.fileno())
    assert done.stdout is None and out.read_text() == "to the file\n"
    with pytest.raises(subprocess.TimeoutExpired):
        LOCAL.run(["sleep", "30"], env=ENV, timeout=0.2)


def test_scheduler_options_need_the_slurm_executor():
    with pytest.raises(UserError, match="--slurm-args needs --executor slurm"):
        executor_from("local", "--partition=gpu", print)
    assert executor_from("local", None, print) is LOCAL
    with pytest.raises(UserError, match="No closing quotation"):
        executor_from("slurm", "--comment='unclosed", print)


def test_exit_codes_as_scontrol_gives_them():
    assert _exit_code("0:0") == 0
    assert _exit_code("3:0") == 3
    assert _exit_code("0:9") == -9  # killed by a signal, as subprocess says it


def test_the_cluster_section_from_the_journal():
    assert cluster_document(LOCAL) is None and cluster_markdown(None) == ""
    t0 = 1000.0
    journal = [
        {"what": "jax-0.5.0-cpu-py311", "node": "n1", "gpu": "NVIDIA H100", "job": "10",
         "step": None, "submitted": t0, "started": t0 + 1.0, "finished": t0 + 11.0,
         "ended": t0 + 11.5},
        {"what": "jax-0.5.1-cpu-py311", "node": "n2", "gpu": "NVIDIA H100", "job": "9",
         "step": None, "submitted": t0 + 0.5, "started": t0 + 2.0, "finished": t0 + 5.0,
         "ended": t0 + 5.25, "lost": "SLURM job 8 on n2 ended PREEMPTED"},
    ]
    fake = SimpleNamespace(journal=journal, name="slurm", mode="job", slurm_args=["-p", "gpu"],
                           allocation=None)
    doc = cluster_document(fake)
    assert doc["nodes"] == ["n1", "n2"] and doc["gpus"] == ["NVIDIA H100"]
    assert doc["jobs"] == ["9", "10"]  # in number order, not text order
    first, second = doc["runs"]
    assert (first["submitted"], first["started"], first["ended"]) == (0.0, 1.0, 11.5)
    assert first["overhead"] == 1.5 and second["overhead"] == 1.75
    assert doc["overhead"] == {"total": 3.25, "mean": 1.62}
    markdown = cluster_markdown(doc)
    assert "PREEMPTED" in markdown and "NVIDIA H100" in markdown
