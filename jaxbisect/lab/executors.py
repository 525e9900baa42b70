"""Where a probe's process runs: here (``Executor``, the default) or on a SLURM cluster.

Every probe of a JAX environment is one process (the harness, a case's run, the user's
command). An executor runs it and hands back what a finished ``subprocess.run`` would: the
exit status and the output, plus ``where`` (empty here; on a cluster the node, job and step
ids, the GPU as ``nvidia-smi`` names it there, and the submit/start/end times). Its contract,
whatever the backend (a Kubernetes Indexed Job or Ray would be one more class):

- ``run(argv, env=, cwd=, timeout=, stdout=, stderr=)`` blocks until the probe is done; it
  raises ``subprocess.TimeoutExpired`` past ``timeout`` (the process stopped), ``OSError``
  where it cannot start, ``ProbeLost`` where the scheduler ended it twice (cancelled from
  outside, preempted, its time limit, a node failure: submitted once more, then given up),
  and ``KeyboardInterrupt`` once ``cancel_all`` was called.
- ``cancel_all()`` stops everything it started; ``interruptible()`` makes Ctrl-C (and
  SIGTERM) do that before the interrupt unwinds the bisection.

The SLURM executor builds no environment: the driver builds them before it submits (on the
login node, in the shared cache; see docs/cluster.md) and a probe only runs their Python.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from jaxbisect.errors import UserError
from jaxbisect.files import cache_dir

PIPE = subprocess.PIPE
Output = int | IO | None  # as subprocess takes it: PIPE, a file descriptor or file, or inherit

# How the scheduler ends a job that was not the probe's doing: worth one more submission.
LOST_STATES = ("CANCELLED", "PREEMPTED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "DEADLINE",
               "REVOKED")
DONE_STATES = ("COMPLETED", "FAILED", "OUT_OF_MEMORY") + LOST_STATES
SCHEDULER_COMMANDS = ("sbatch", "srun", "squeue", "scancel", "scontrol")



@contextmanager
def stopped_by(stop) -> Iterator[None]:
    """``stop`` handles Ctrl-C and SIGTERM while the block runs; the handlers before it are
    put back after."""
    before = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)

class ProbeLost(Exception):
    """The scheduler ended the probe's job (or step) twice: the probe is a skip, and why."""


@dataclass(frozen=True)
class Finished:
    """A probe's process, done: what ``subprocess.run`` returns, and where it ran."""

    args: list[str]
    returncode: int
    stdout: str | None
    stderr: str | None
    where: dict = field(default_factory=dict)  # {} when it ran here


class Executor:
    """Where probes run; this base runs each as a child process of this one, exactly as
    ``subprocess.run`` runs it (the default). Other executors override all three methods."""

    name = "local"
    GRACE = 1.0  # seconds a child has to end on Ctrl-C before it is killed

    def __init__(self):
        self.children: set[subprocess.Popen] = set()
        self.stopping = False
        self._stopped, self._leaving = threading.Event(), False

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | Path | None = None,
            timeout: float, stdout: Output = PIPE, stderr: Output = PIPE) -> Finished:
        if self.stopping:
            raise KeyboardInterrupt
        with subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=stdout, stderr=stderr,
                              text=True) as process:
            self.children.add(process)
            try:
                if self.stopping:  # Ctrl-C came as it started: cancel_all may not have seen it
                    process.kill()
                out, err = process.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.communicate()
                raise subprocess.TimeoutExpired(list(argv), timeout) from None
            except BaseException:  # Ctrl-C in this thread: the child goes with it
                process.kill()
                raise
            finally:
                self.children.discard(process)
        if self.stopping:  # a child that Ctrl-C ended (or we killed) says nothing of a release
            raise KeyboardInterrupt
        return Finished(list(argv), process.returncode, out, err)

    def cancel_all(self) -> None:
        """Every child this executor started: interrupted (the terminal's Ctrl-C reached them
        already through the process group; ``kill -INT`` of this process alone did not); the
        watchdog of ``interruptible`` kills them after ``GRACE`` seconds. A compile holds a
        child's Python (its handler runs only once XLA returns), and the probes' threads wait
        for their child: without the kill a run ended seconds after Ctrl-C. The probes
        waiting raise KeyboardInterrupt. Called from a signal handler: it takes no lock and
        starts no thread (the interrupted code may hold threading's own locks)."""
        self.stopping = True
        for child in list(self.children):
            with suppress(OSError):
                child.send_signal(signal.SIGINT)
        self._stopped.set()

    def _kill_late(self) -> None:
        """The watchdog: once stopped, every child still alive ``GRACE`` seconds later is
        killed."""
        self._stopped.wait()
        if self._leaving:
            return
        time.sleep(self.GRACE)
        for child in list(self.children):
            if child.poll() is None:
                with suppress(OSError):
                    child.kill()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Ctrl-C and SIGTERM stop every child first, then interrupt as usual. Installed
        whatever this process inherited: a shell that starts a job in the background ignores
        SIGINT for it, and the harness's children take Ctrl-C all the same (repro's own
        handler), so a run would stop at some moments and go on at others."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop(signum, frame):
            self.cancel_all()
            raise KeyboardInterrupt

        self._stopped, self._leaving = threading.Event(), False
        watchdog = threading.Thread(target=self._kill_late, name="kill-late", daemon=True)
        watchdog.start()
        try:
            with stopped_by(stop):
                yield
        finally:
            if not self.stopping:  # a run that ended: the watchdog ends too
                self._leaving = True
                self._stopped.set()
            self.stopping = False


LOCAL = Executor()

# The probe's wrapper, run by the job or step: it says where it runs before it starts the
# probe (so that a step can be cancelled by its id) and writes the probe's exit status last.
WRAPPER = """#!/bin/bash
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1 | tr -d '"\\\\')
printf '{{"node": "%s", "job": "%s", "step": "%s", "gpu": "%s", "started": %s}}\\n' \\
  "$(hostname -s)" "${{SLURM_JOB_ID:-}}" "${{SLURM_STEP_ID:-}}" "$gpu" "$(date +%s.%N)" \\
  > {folder}/where.tmp && mv {folder}/where.tmp {folder}/where.json
cd {cwd} || exit 125
env -i {env} {argv}
rc=$?
echo "$rc $(date +%s.%N)" > {folder}/rc.tmp && mv {folder}/rc.tmp {folder}/rc
exit $rc
"""


def _quiet(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    """A scheduler command in its own session: Ctrl-C at the terminal must not kill an
    ``sbatch`` half way (a job submitted whose id we never read)."""
    return subprocess.run(argv, capture_output=True, text=True, start_new_session=True,
                          **kwargs)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


class SlurmExecutor(Executor):
    """Each probe a SLURM job (``sbatch``, polled with ``scontrol``), or inside an allocation
    (``SLURM_JOB_ID`` set: ``salloc``, a batch job) a job step (``srun --exclusive``).

    ``slurm_args``: passed to every ``sbatch``/``srun`` as given (``--partition=gpu
    --gres=gpu:1 --time=20:00``). ``folder``: where each probe's wrapper, output and exit
    status go; every node must see it (the shared cache, by default)."""

    name = "slurm"

    def __init__(self, slurm_args: Sequence[str] = (), *, folder: Path | None = None,
                 environ: Mapping[str, str] | None = None, poll: float = 0.5,
                 say: Callable[[str], None] = lambda message: None):
        environ = os.environ if environ is None else environ
        self.slurm_args = list(slurm_args)
        self.allocation = environ.get("SLURM_JOB_ID") or None
        self.tag = f"jax-bisect-{uuid.uuid4().hex[:8]}"  # every job's name: scancel --name
        self.folder = (folder or cache_dir() / "slurm") / self.tag
        self.poll = poll
        self.say = say
        self.lock = threading.Lock()
        self.stopping = False
        self.jobs: set[str] = set()                       # job ids, or job.step ids, alive
        self.steps: dict[int, subprocess.Popen] = {}      # srun clients alive
        self.count = 0
        self.journal: list[dict] = []                     # every attempt, in order of its end

    @property
    def mode(self) -> str:
        return "step" if self.allocation else "job"

    def check(self) -> None:
        """Refuse, before anything runs, what cannot work: no scheduler on PATH, a partition
        that does not exist, options ``sbatch`` refuses (one line each, a UserError)."""
        missing = [c for c in SCHEDULER_COMMANDS if not shutil.which(c)]
        if missing:
            raise UserError(f"--executor slurm: {', '.join(missing)} not found on PATH "
                            f"(run from a SLURM login node, or use --executor local)")
        test = (["srun", "--test-only", "-N1", "-n1", *self.slurm_args, "true"] if self.allocation
                else ["sbatch", "--test-only", f"--job-name={self.tag}",
                      "--output=/dev/null", *self.slurm_args, "--wrap=true"])
        try:
            done = _quiet(test, timeout=60)
        except subprocess.TimeoutExpired:
            raise UserError(f"--executor slurm: {test[0]} --test-only did not answer in 60 s "
                            f"(is slurmctld up? sinfo)") from None
        if done.returncode != 0:
            said = [line for line in done.stderr.splitlines()
                    if line.strip() and not line.startswith("Try ")]
            why = next((line for line in said if "error" in line.lower()),
                       said[0] if said else f"exit status {done.returncode}")
            raise UserError(f"--slurm-args {shlex.join(self.slurm_args) or '(none)'}: "
                            f"{test[0]} refuses them: {why.strip()}")

    # --- one probe ------------------------------------------------------------------------

    def run(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | Path | None = None,
            timeout: float, stdout: Output = PIPE, stderr: Output = PIPE) -> Finished:
        tries: list[str] = []
        while True:
            done, lost = self._attempt(list(argv), env, cwd, timeout)
            with self.lock:
                self.journal.append({"what": _what(argv), **(done.where if done else {}),
                                     **({"lost": lost} if lost else {})})
            if lost is None:
                break
            tries.append(lost)
            if len(tries) == 2:
                raise ProbeLost(f"the scheduler ended it twice: {'; then '.join(tries)}")
            self.say(f"{lost}: submitting it once more")
        if tries:
            done.where["lost"] = tries
        return Finished(done.args, done.returncode, _hand(done.stdout, stdout, sys.stdout),
                        _hand(done.stderr, stderr, sys.stderr), done.where)

    def _attempt(self, argv: list[str], env: Mapping[str, str], cwd, timeout: float
                 ) -> tuple[Finished | None, str | None]:
        with self.lock:
            if self.stopping:
                raise KeyboardInterrupt
            self.count += 1
            folder = self.folder / str(self.count)
        folder.mkdir(parents=True, exist_ok=True)
        script = folder / "probe.sh"
        script.write_text(WRAPPER.format(
            folder=shlex.quote(str(folder)), cwd=shlex.quote(str(cwd or os.getcwd())),
            env=" ".join(shlex.quote(f"{k}={v}") for k, v in env.items()),
            argv=shlex.join(argv)))
        try:
            if self.allocation:
                return self._step(argv, folder, script, timeout)
            return self._job(argv, folder, script, timeout)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def _job(self, argv: list[str], folder: Path, script: Path, timeout: float
             ) -> tuple[Finished | None, str | None]:
        submitted = time.time()
        with self.lock:  # registered before anyone may cancel: nothing is ever orphaned
            if self.stopping:
                raise KeyboardInterrupt
            done = _quiet(["sbatch", "--parsable", f"--job-name={self.tag}",
                           f"--output={folder}/stdout", f"--error={folder}/stderr",
                           f"--chdir={folder}", *self.slurm_args, str(script)])
            if done.returncode != 0:
                raise OSError(f"sbatch failed: {_last_line(done.stderr)}")
            job = done.stdout.strip().split(";")[0]
            self.jobs.add(job)
        try:
            state, info, running_since = "PENDING", {}, None
            while True:
                rc = _read(folder / "rc")
                if rc is not None:
                    break
                info = job_info(job)
                state = info.get("JobState", state)
                if state == "RUNNING" and running_since is None:
                    running_since = time.monotonic()
                if state in DONE_STATES:
                    rc = _wait_for(folder / "rc", 3.0)  # a shared filesystem may lag
                    break
                if running_since is not None and time.monotonic() - running_since > timeout:
                    _quiet(["scancel", job])
                    raise subprocess.TimeoutExpired(argv, timeout)
                time.sleep(self.poll)
            where = {"node": info.get("NodeList"),
                     **self._ended(folder, submitted), "job": job, "step": None}
            if rc is None:
                info = job_info(job) or info
                state = info.get("JobState", state)
                if state in LOST_STATES or state not in DONE_STATES:
                    reason = info.get("Reason", "None")
                    lost = (f"SLURM job {job} on {info.get('NodeList', '?')} ended {state}"
                            + (f" ({reason})" if reason != "None" else ""))
                    return Finished(argv, -1, "", "", where), lost
                rc = _exit_code(info.get("ExitCode", "1:0"))
            return _output(argv, rc, folder, where), None
        finally:
            with self.lock:
                self.jobs.discard(job)

    def _step(self, argv: list[str], folder: Path, script: Path, timeout: float
              ) -> tuple[Finished | None, str | None]:
        submitted = time.time()
        with self.lock:
            if self.stopping:
                raise KeyboardInterrupt
            client = subprocess.Popen(
                ["srun", "--exclusive", "-N1", "-n1", f"--job-name={self.tag}",
                 f"--output={folder}/stdout", f"--error={folder}/stderr", *self.slurm_args,
                 "bash", str(script)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                start_new_session=True)  # Ctrl-C is ours to pass on (scancel), not srun's
            self.steps[client.pid] = client
        step_id = None
        try:
            running_since = None
            while client.poll() is None:
                if running_since is None and (folder / "where.json").exists():
                    running_since = time.monotonic()
                    step_id = f"{self.allocation}.{_where(folder).get('step')}"
                    with self.lock:
                        self.jobs.add(step_id)
                if running_since is not None and time.monotonic() - running_since > timeout:
                    _quiet(["scancel", step_id])
                    client.terminate()
                    client.wait()
                    raise subprocess.TimeoutExpired(argv, timeout)
                time.sleep(self.poll / 5)
            said = client.stderr.read()
            rc = _wait_for(folder / "rc", 1.0)
            where = {**self._ended(folder, submitted), "job": self.allocation}
            if rc is None:
                why = next((line for line in said.splitlines()
                            if any(s in line for s in LOST_STATES)), _last_line(said))
                lost = (f"SLURM step {step_id or self.allocation} ended without an exit status "
                        f"({why or f'srun exit {client.returncode}'})")
                return Finished(argv, -1, "", "", where), lost
            return _output(argv, rc, folder, where), None
        finally:
            with self.lock:
                self.steps.pop(client.pid, None)
                if step_id:
                    self.jobs.discard(step_id)
            if client.poll() is None:
                client.kill()
                client.wait()

    def _ended(self, folder: Path, submitted: float) -> dict:
        """Where and when a probe's process ran, once it ended (the wrapper's where.json)."""
        ended = time.time()
        if self.stopping:
            raise KeyboardInterrupt
        return {**_where(folder), "submitted": round(submitted, 3),
                "finished": _read(folder / "rc", 1, float), "ended": round(ended, 3)}

    # --- faults ---------------------------------------------------------------------------

    def cancel_all(self) -> None:
        """scancel every job and step this executor started; the probes waiting on them
        raise KeyboardInterrupt. Jobs are also cancelled by their name, so one whose
        ``sbatch`` was cut short is not left behind."""
        with self.lock:
            self.stopping = True
            ids, clients = sorted(self.jobs), list(self.steps.values())
        if ids:
            _quiet(["scancel", *ids])
        if not self.allocation:
            _quiet(["scancel", f"--name={self.tag}"])
        for client in clients:
            if client.poll() is None:
                client.terminate()

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """Ctrl-C and SIGTERM cancel every job first, then interrupt as usual."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop(signum, frame):
            # In a thread: the main thread may be inside a submission that holds the lock.
            threading.Thread(target=self.cancel_all, daemon=False).start()
            raise KeyboardInterrupt

        try:
            with stopped_by(stop):
                yield
        finally:
            with suppress(OSError):  # each probe's files went once read; a probe still
                self.folder.rmdir()  # cancelled keeps the folder until its thread is done


def _what(argv: Sequence[str]) -> str:
    """A probe in a word: the release environment its Python is in, else the program."""
    parent = Path(argv[0]).parent
    return parent.parent.name if parent.name == "bin" and parent.parent.name.startswith(
        "jax-") else Path(argv[0]).name


def job_info(job: str) -> dict[str, str]:
    """``scontrol show job -o JOB`` as a dict ({} once the controller has forgotten it)."""
    done = _quiet(["scontrol", "show", "job", "-o", job])
    if done.returncode != 0:
        return {}
    info = {}
    for name, _, value in (word.partition("=") for word in done.stdout.split()):
        info.setdefault(name, value)
    return info


def _exit_code(text: str) -> int:
    """scontrol's ExitCode ``status:signal`` as a returncode (a signal is negative)."""
    status, _, sig = text.partition(":")
    return -int(sig) if sig and int(sig) else int(status)


def _read(path: Path, word: int = 0, kind: type = int):
    """A word of the wrapper's rc file: its exit status (0), when its process ended (1, a
    float); None while it is not written."""
    try:
        return kind(path.read_text().split()[word])
    except (OSError, ValueError, IndexError):
        return None


def _wait_for(path: Path, seconds: float) -> int | None:
    deadline = time.monotonic() + seconds
    while True:
        value = _read(path)
        if value is not None or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def _output(argv: list[str], returncode: int, folder: Path, where: dict) -> Finished:
    """The probe's end as ``subprocess.run`` gives it, its output read from ``folder``."""
    def text(name: str) -> str:
        with suppress(OSError):
            return (folder / name).read_text(errors="replace")
        return ""

    return Finished(argv, returncode, text("stdout"), text("stderr"), where)


def _where(folder: Path) -> dict:
    try:
        where = json.loads((folder / "where.json").read_text())
    except (OSError, ValueError):
        return {}
    return {k: (v or None) for k, v in where.items()}


def _hand(text: str, wanted: Output, inherit: IO) -> str | None:
    """The output as ``subprocess.run`` would give it: captured (PIPE), or written where the
    caller sent it (a descriptor, a file, or ours when None)."""
    if wanted == PIPE:
        return text
    if wanted == subprocess.DEVNULL or not text:
        return None
    if isinstance(wanted, int):
        os.write(wanted, text.encode())
    else:
        (wanted or inherit).write(text)
        (wanted or inherit).flush()
    return None


def add_executor_options(parser) -> None:
    """``--executor`` and ``--slurm-args``, as python -m bisect and the sweep take them."""
    cluster = parser.add_argument_group(
        "where probes run (docs/cluster.md)",
        "each probe a SLURM job, or inside an allocation (salloc, sbatch) a job step")
    cluster.add_argument("--executor", choices=("local", "slurm"), default="local",
                         help="local: child processes here (default); slurm: through the "
                              "scheduler, the environments built here in the shared cache")
    cluster.add_argument("--slurm-args", metavar="ARGS", default=None,
                         help="options for every sbatch/srun, as one string: "
                              "\"--partition=gpu --gres=gpu:1 --time=20:00\"")


def executor_from(name: str, slurm_args: str | None, say: Callable[[str], None]) -> Executor:
    """``--executor`` and ``--slurm-args`` as an executor, checked before anything runs."""
    if name == "local":
        if slurm_args:
            raise UserError("--slurm-args needs --executor slurm")
        return LOCAL
    try:
        args = shlex.split(slurm_args or "")
    except ValueError as exc:
        raise UserError(f"--slurm-args: {exc}") from None
    executor = SlurmExecutor(args, say=say)
    executor.check()
    return executor


def cluster_document(executor: Executor) -> dict | None:
    """Where this run's probes ran, for the report's JSON: every job or step in order, its
    times in seconds from the first submit, and the scheduler's overhead (submit to start,
    and the process's end to the driver seeing it). None when they ran here."""
    journal = getattr(executor, "journal", None)
    if journal is None:
        return None
    placed = [w for w in journal if w.get("submitted")]
    zero = min((w["submitted"] for w in placed), default=0.0)

    def at(value) -> float | None:
        return None if value is None else round(float(value) - zero, 2)

    runs = []
    for w in placed:
        run = {key: w.get(key) for key in ("what", "node", "gpu", "job", "step", "lost")}
        run.update({key: at(w.get(key)) for key in ("submitted", "started", "finished", "ended")})
        if run["started"] is not None and run["finished"] is not None:
            run["overhead"] = round((run["started"] - run["submitted"])
                                    + (run["ended"] - run["finished"]), 2)
        runs.append(run)
    overheads = [r["overhead"] for r in runs if "overhead" in r]
    return {"executor": executor.name, "mode": executor.mode,
            "slurm_args": executor.slurm_args, "allocation": executor.allocation,
            "nodes": sorted({r["node"] for r in runs if r["node"]}),
            "gpus": sorted({r["gpu"] for r in runs if r["gpu"]}),
            "jobs": sorted({r["job"] for r in runs if r["job"]}, key=_number),
            "runs": runs,
            "overhead": {"total": round(sum(overheads), 2),
                         "mean": round(sum(overheads) / len(overheads), 2) if overheads
                         else None}}


def _number(text: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in str(text).split("."))


def cluster_markdown(cluster: dict | None) -> str:
    """The report's section on where the probes ran (empty when they ran here)."""
    if not cluster:
        return ""
    from tabulate import tabulate

    rows = [[r["what"], r["node"] or "?", r["gpu"] or "none", r["job"],
             "" if r["step"] is None else r["step"], r["submitted"], r["started"],
             r["ended"], r.get("overhead", ""), r["lost"] or ""] for r in cluster["runs"]]
    how = ("job steps of allocation " + cluster["allocation"] if cluster["mode"] == "step"
           else "one SLURM job each")
    args = " ".join(cluster["slurm_args"]) or "(none)"
    mean = cluster["overhead"]["mean"]
    return "\n".join([
        "## Where the probes ran", "",
        f"Through SLURM, {how} (--slurm-args `{args}`): "
        f"{len(cluster['runs'])} processes on {', '.join(cluster['nodes']) or '?'}; GPU as "
        f"nvidia-smi names it there: {', '.join(cluster['gpus']) or 'none'}. Stored results "
        "were not run again and are not listed. Seconds from the first submit; overhead: "
        "submit to start plus the process's end to its result being read"
        + (f" ({cluster['overhead']['total']} s in all, {mean} s a process)."
           if mean is not None else "."), "",
        tabulate(rows, headers=["probe", "node", "GPU", "job", "step", "submitted", "started",
                                "ended", "overhead (s)", "lost"], tablefmt="github",
                 disable_numparse=True), ""])
