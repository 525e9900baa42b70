"""Probes through a real one-node SLURM cluster (the ``slurm_cluster`` fixture): jobs, steps
inside an allocation, Ctrl-C, a job cancelled from outside, bad scheduler options."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import REPO, TEST_CACHE, cache_sharing_environments

from jaxbisect.errors import UserError
from jaxbisect.lab.executors import ProbeLost, SlurmExecutor, cluster_document, job_info

# One cluster for the session: its tests on one xdist worker (--dist loadgroup).
pytestmark = [pytest.mark.slurm, pytest.mark.xdist_group("slurm")]
ENV = {"PATH": "/usr/bin:/bin", "GREETING": "hello there"}


def queue(tag: str) -> list[str]:
    done = subprocess.run(["squeue", "-h", "-n", tag, "-o", "%i %T"], capture_output=True,
                          text=True, check=True)
    return done.stdout.split("\n")[:-1]


def test_a_probe_is_a_job_with_its_own_environment_and_output(slurm_cluster, tmp_path):
    ex = SlurmExecutor(folder=tmp_path)
    ex.check()
    done = ex.run(["sh", "-c", 'echo "$GREETING from $(pwd)"; echo oops >&2; exit 3'],
                  env=ENV, cwd=tmp_path, timeout=60)
    assert done.returncode == 3
    assert done.stdout == f"hello there from {tmp_path}\n" and done.stderr == "oops\n"
    job = done.where["job"]
    for _ in range(50):  # the controller may still be closing the job (COMPLETING)
        info = job_info(job)
        if info["JobState"] != "COMPLETING":
            break
        time.sleep(0.2)
    assert info["JobName"] == ex.tag and info["JobState"] == "FAILED"
    assert info["ExitCode"] == "3:0"
    assert done.where["node"] == info["NodeList"] and done.where["step"] is None
    cluster = cluster_document(ex)
    assert cluster["jobs"] == [job] and cluster["mode"] == "job"
    run = cluster["runs"][0]
    assert run["submitted"] == 0 and run["submitted"] <= run["started"] <= run["ended"]
    assert run["overhead"] >= 0
    assert list(tmp_path.iterdir()) == [tmp_path / ex.tag]  # each probe's files removed


def test_probes_inside_an_allocation_are_steps(slurm_cluster, tmp_path):
    script = tmp_path / "two_steps.py"
    script.write_text(textwrap.dedent(f"""
        import json, os, sys, threading
        sys.path.insert(0, {str(REPO)!r})
        from jaxbisect.lab.executors import SlurmExecutor
        ex = SlurmExecutor(folder=__import__("pathlib").Path({str(tmp_path)!r}))
        ex.check()
        out = [None, None]
        def one(i):
            out[i] = ex.run(["sh", "-c", f"sleep 1; echo {{i}}"], env={{"PATH": "/usr/bin:/bin"}},
                            timeout=60)
        threads = [threading.Thread(target=one, args=(i,)) for i in range(2)]
        [t.start() for t in threads]; [t.join() for t in threads]
        print(json.dumps({{"job": os.environ["SLURM_JOB_ID"],
                          "runs": [[d.stdout, d.where] for d in out]}}))
    """))
    done = subprocess.run(["salloc", "-N1", "-n2", sys.executable, str(script)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout.strip().splitlines()[-1])
    (out0, where0), (out1, where1) = doc["runs"]
    assert (out0, out1) == ("0\n", "1\n")
    assert where0["job"] == where1["job"] == doc["job"]
    assert {where0["step"], where1["step"]} == {"0", "1"}  # two steps, side by side


def test_a_job_cancelled_from_outside_is_submitted_once_more(slurm_cluster, tmp_path):
    said = []
    ex = SlurmExecutor(folder=tmp_path, say=said.append)
    cancelled = []
    go = tmp_path / "go"  # the job answers only once the first one was cancelled: no race

    def cancel_first_job() -> None:
        try:
            for _ in range(300):
                running = [line.split()[0] for line in queue(ex.tag)
                           if line.endswith("RUNNING")]
                if running:
                    subprocess.run(["scancel", running[0]], check=True)
                    cancelled.append(running[0])
                    return
                time.sleep(0.1)
        finally:
            go.touch()

    outsider = threading.Thread(target=cancel_first_job)
    outsider.start()
    done = ex.run(["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.1; done; echo answer"],
                  env=ENV, timeout=60)
    outsider.join()
    assert done.returncode == 0 and done.stdout == "answer\n"
    assert cancelled and done.where["job"] != cancelled[0]
    assert len(done.where["lost"]) == 1 and "CANCELLED" in done.where["lost"][0]
    assert said and cancelled[0] in said[0]
    assert job_info(cancelled[0])["JobState"] == "CANCELLED"


def test_a_job_lost_twice_is_given_up_with_the_schedulers_reason(slurm_cluster, tmp_path):
    ex = SlurmExecutor(folder=tmp_path)
    cancelled = []

    def cancel_twice() -> None:
        while len(cancelled) < 2:
            for job in [line.split()[0] for line in queue(ex.tag) if line.endswith("RUNNING")]:
                if job not in cancelled:
                    subprocess.run(["scancel", job], check=True)
                    cancelled.append(job)
            time.sleep(0.1)

    outsider = threading.Thread(target=cancel_twice, daemon=True)
    outsider.start()
    with pytest.raises(ProbeLost) as lost:
        ex.run(["sleep", "600"], env=ENV, timeout=600)
    assert str(lost.value).count("CANCELLED") == 2
    assert all(job in str(lost.value) for job in cancelled)
    assert queue(ex.tag) == []


def test_a_probe_past_its_timeout_is_stopped(slurm_cluster, tmp_path):
    ex = SlurmExecutor(folder=tmp_path)
    with pytest.raises(subprocess.TimeoutExpired):
        ex.run(["sleep", "600"], env=ENV, timeout=1)
    for _ in range(50):
        if not queue(ex.tag):
            break
        time.sleep(0.2)
    assert queue(ex.tag) == []


CTRL_C = """
import json, sys, threading
sys.path.insert(0, {repo!r})
from pathlib import Path
from jaxbisect.lab.executors import SlurmExecutor
ex = SlurmExecutor(folder=Path({folder!r}))
print(ex.tag, flush=True)
with ex.interruptible():
    threads = [threading.Thread(target=ex.run, args=(["sleep", "600"],),
                                kwargs=dict(env={{"PATH": "/usr/bin:/bin"}}, timeout=900))
               for _ in range(3)]
    [t.start() for t in threads]
    try:
        [t.join() for t in threads]
    except KeyboardInterrupt:
        [t.join() for t in threads]
        sys.exit(130)
"""


@pytest.mark.parametrize("inside", [False, True], ids=["jobs", "steps"])
def test_ctrl_c_leaves_nothing_in_the_queue(slurm_cluster, tmp_path, inside):
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C.format(repo=str(REPO), folder=str(tmp_path)))
    argv = [sys.executable, str(script)]
    if inside:  # the driver in an allocation of two tasks: two steps run, the third waits
        argv = ["salloc", "-N1", "-n2", *argv]
    driver = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True)
    tag = driver.stdout.readline().strip()
    for _ in range(300):
        if inside:  # two steps of the allocation run (named by the tag), the third waits
            running = subprocess.run(["squeue", "-h", "-s", "-o", "%i %j"], capture_output=True,
                                     text=True).stdout.split("\n")[:-1]
            if sum(tag in line for line in running) >= 2:
                break
        else:
            running = queue(tag)
            if sum(line.endswith("RUNNING") for line in running) >= 3:
                break
        time.sleep(0.1)
    else:
        pytest.fail(f"the probes never ran: {running}")
    if inside:
        python = next(int(p) for p in os.listdir("/proc") if p.isdigit()
                      and _parent(int(p)) == driver.pid)
        os.kill(python, signal.SIGINT)
    else:
        os.kill(driver.pid, signal.SIGINT)
    interrupted = time.monotonic()
    left = None
    while time.monotonic() - interrupted < 10:
        left = subprocess.run(["squeue", "-h", "-s", "-o", "%i %j"], capture_output=True,
                              text=True).stdout.split("\n")[:-1]
        left = [line for line in left if tag in line or (inside and ".extern" not in line
                                                         and "." in line.split()[0])]
        if not left:
            break
        time.sleep(0.2)
    assert left == [], f"still queued {time.monotonic() - interrupted:.1f} s after Ctrl-C"
    assert driver.wait(30) == 130, driver.stderr.read()
    for _ in range(50):  # and the allocation, once the driver is out of it
        if not subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout:
            break
        time.sleep(0.2)
    assert subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout == ""


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def test_bad_scheduler_options_are_one_line_before_anything_runs(slurm_cluster):
    with pytest.raises(UserError, match="invalid partition specified: nope"):
        SlurmExecutor(["--partition=nope"]).check()
    done = subprocess.run([sys.executable, "-m", "bisect", "--from", "0.4.30", "--to", "0.4.31",
                           "--executor", "slurm", "--slurm-args", "--partition=nope"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "python -m bisect: error: --slurm-args --partition=nope: sbatch refuses them: "
        "sbatch: error: invalid partition specified: nope"]


def test_no_scheduler_on_path_is_one_line(tmp_path):
    bare = tmp_path / "bin"  # a PATH with nothing on it
    bare.mkdir()
    done = subprocess.run([sys.executable, "-m", "bisect", "--from", "0.4.30", "--to",
                           "0.4.31", "--executor", "slurm"], cwd=REPO, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PATH": str(bare)})
    assert done.returncode == 2, done.stderr
    line, = done.stderr.strip().splitlines()
    assert "--executor slurm: sbatch, srun, squeue, scancel, scontrol not found on PATH" in line


@pytest.mark.jax
def test_a_bisection_through_slurm_answers_as_locally(slurm_cluster, tmp_path):
    """Real releases (0.5.0 constant, 0.5.1 grows on the CPU): every probe a job, the same
    answer and figures as the local run, and the report names the jobs. The two ends only,
    as two jobs at once (--jobs 2): the search over a middle release is the same code with
    either executor (tests/test_bisect.py). The local figures are the tests' store's, where
    test_bisect measured the same probes just before (its xdist group); the cluster measures
    every one into a store of its own (no other test's run is measured again)."""
    args = ["--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--n-res", "16",
            "--n-inner", "10", "--n-outer", "1", "3", "6", "--no-evidence", "--json",
            "--jobs", "2"]
    stores = {"local": {**os.environ, "JAX_SCAN_REPRO_CACHE": str(TEST_CACHE)},
              "slurm": cache_sharing_environments(tmp_path / "cache")}
    docs = {}
    for executor in ("local", "slurm"):
        done = subprocess.run([sys.executable, "-m", "bisect", *args, "--executor", executor,
                               "--reports", str(tmp_path / executor)], cwd=REPO,
                              capture_output=True, text=True, timeout=900,
                              env=stores[executor])
        assert done.returncode == 0, done.stderr
        docs[executor] = json.loads(done.stdout)
    local, slurm = docs["local"], docs["slurm"]
    assert (slurm["last_old"], slurm["first_new"]) == (local["last_old"], local["first_new"])

    def figures(doc):
        return [(p["jax"], p["series"]["figures"],
                 {label: c["figures"] for label, c in p["compare"].items()})
                for p in doc["probes"]]

    assert figures(slurm) == figures(local)
    assert "cluster" not in local
    assert not any(p["cached"] for p in slurm["probes"])
    ran = [r["ran_on"] for p in slurm["probes"] for r in p["runs"]]
    assert all(r["job"] and r["node"] for r in ran)
    assert {r["job"] for r in ran} <= set(slurm["cluster"]["jobs"])
    markdown = (tmp_path / "slurm" / Path(slurm["report"]).name).read_text()
    assert "## Where the probes ran" in markdown
