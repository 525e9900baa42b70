"""A real one-node SLURM cluster for the tests: Debian's munged, slurmctld and slurmd, root.

Everything it writes lives in one folder (its own slurm.conf, munge socket, spool, logs, pid
files), reached through SLURM_CONF, and it listens on ports of its own, so it never touches
/etc/slurm or a cluster already on the machine. ``python tests/slurm_cluster.py start DIR``
starts one by hand (and prints the SLURM_CONF to export); ``stop DIR`` stops it by its pids.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("slurmd", "slurmctld", "munged")  # stopped in this order
NEEDED = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scancel", "sinfo",
          "scontrol")


class CannotStart(Exception):
    """Why the cluster cannot run here (not root, packages missing, a daemon failed)."""


def _which(name: str) -> str | None:
    return shutil.which(name) or next((str(p) for p in (Path("/usr/sbin") / name,)
                                       if p.exists()), None)


def _conf(root: Path, host: str, port: int) -> str:
    cpus = os.cpu_count() or 1
    return f"""\
ClusterName=jaxtests
SlurmctldHost={host}
SlurmctldPort={port}
SlurmdPort={port + 1}
AuthType=auth/munge
AuthInfo=socket={root}/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmdSpoolDir={root}/spool-slurmd
StateSaveLocation={root}/spool-slurmctld
SlurmUser=root
ReturnToService=2
MinJobAge=3600
KillWait=2
SchedulerParameters=sched_interval=1
MessageTimeout=10
NodeName={host} CPUs={cpus} RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:{cpus * 4}
"""  # noqa: E501


def free_port_pair() -> int:
    """A port p with p and p + 1 free (slurmctld's and slurmd's)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("", 0))
            port = probe.getsockname()[1]
        if port < 65535:
            with socket.socket() as second:
                try:
                    second.bind(("", port + 1))
                    return port
                except OSError:
                    continue
    raise CannotStart("no two free ports in a row")


def start(root: Path, port: int | None = None, timeout: float = 60) -> dict[str, str]:
    """Start the cluster under ``root``; the environment variables its clients need."""
    if os.geteuid() != 0:
        raise CannotStart("the one-node cluster needs root (slurmd runs jobs as any user)")
    missing = [name for name in NEEDED if not _which(name)]
    if missing:
        raise CannotStart(f"{', '.join(missing)} not installed (apt-get install slurmd "
                          f"slurmctld slurm-client munge)")
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        raise CannotStart("no /etc/munge/munge.key (mungekey -c)")
    stop(root)
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for sub in ("spool-slurmd", "spool-slurmctld"):
        (root / sub).mkdir()
    os.chmod(root, 0o755)
    host = socket.gethostname().split(".")[0]
    (root / "slurm.conf").write_text(_conf(root, host, port or free_port_pair()))
    env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
    for var in [v for v in env if v.startswith(("SLURM_JOB", "SLURM_STEP", "SBATCH_",
                                                 "SALLOC_", "SRUN_"))]:
        del env[var]
    _daemon([_which("munged"), "--force", f"--socket={root}/munge.socket",
             f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log",
             f"--seed-file={root}/munged.seed", f"--key-file={key}"], env, root, "munged")
    _daemon([_which("slurmctld"), "-f", str(root / "slurm.conf")], env, root, "slurmctld")
    _daemon([_which("slurmd"), "-f", str(root / "slurm.conf")], env, root, "slurmd")
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        done = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True,
                              text=True)
        state = done.stdout.strip() or done.stderr.strip()
        if state == "idle":
            return {"SLURM_CONF": env["SLURM_CONF"]}
        time.sleep(0.5)
    logs = "; ".join(f"{n}: {_tail(root / f'{n}.log')}" for n in ("slurmctld", "slurmd"))
    stop(root)
    raise CannotStart(f"the node did not come up idle in {timeout:.0f} s ({state}); {logs}")


def _daemon(argv: list, env: dict, root: Path, name: str) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    pid_file = root / f"{name}.pid"
    for _ in range(50):
        if pid_file.exists() and pid_file.read_text().strip():
            return
        time.sleep(0.1)
    raise CannotStart(f"{name} did not start: {(done.stderr or done.stdout).strip()[-300:]} "
                      f"{_tail(root / f'{name}.log')}")


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip().splitlines()[-1][:300]
    except (OSError, IndexError):
        return "(no log)"


def stop(root: Path) -> None:
    """Stop the daemons started under ``root`` by their pid files; waits until they are gone."""
    for name in DAEMONS:
        pid_file = root / f"{name}.pid"
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        pid_file.unlink(missing_ok=True)


if __name__ == "__main__":
    action, folder = sys.argv[1], Path(sys.argv[2]).resolve()
    if action == "start":
        try:
            print(f"export SLURM_CONF={start(folder)['SLURM_CONF']}")
        except CannotStart as exc:
            sys.exit(f"cannot start the cluster: {exc}")
    else:
        stop(folder)
