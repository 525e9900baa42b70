"""What a metric bisection measures, and one run of it in one release's environment.

A *question* is a metric of a program: a function case (``--case FILE``, run by ``python -m
repro --case``) or a command that prints a JSON object as its last stdout line (``--metric NAME
-- CMD``). A *run* is one process in one release's environment; a noisy metric's samples
accumulate over runs. Runs are stored as they land, keyed by release, backend, question, harness
source and run number, so a rerun reads them back in the same order and measures nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from repro.case import (
    COMPILE_ONLY_METRICS,
    METRICS,
    NOISY_METRICS,
    CaseError,
    CaseFile,
    parse_over,
    parse_params,
    read_case,
    series_at,
)
from repro.options import OPTIONS, REPRO, command_line

from .catalogue import Release
from .crashes import crash_of, mask
from .environments import ensure_environment
from .errors import InstallFailed, UserError
from .executors import LOCAL, Executor, ProbeLost
from .harness import (
    Crashed,
    EnvironmentBroken,
    HarnessFailed,
    RunTimedOut,
    command_environ,
    harness_id,
    platform_args,
    raise_if_broken,
    run_repro,
    target_key,
)
from .store import STORE, Key, Store

Say = Callable[[str], None]


@dataclass(frozen=True)
class Question:
    metric: str                          # memory, run_time, …, or a command's field
    case: CaseFile | None = None         # a function case …
    params: dict = field(default_factory=dict)   # … with these overrides
    command: tuple[str, ...] = ()        # … or a command
    target: str = ""                     # a compile-only GPU target (function cases)
    xla_flags: str = ""
    samples: int | None = None           # the harness's samples per run (noisy metrics)
    kind: str = "auto"                   # deterministic | noisy | auto (from the metric)
    over: tuple = ()                     # (parameter, values): the metric's shape over them
    compare: bool = False                # the case's COMPARE programs beside it, one process
    devices: int | None = None           # --devices: CPU host devices (else the case's DEVICES)

    @property
    def noisy(self) -> bool:
        if self.over:  # the shape's status word, compared by equality
            return False
        if self.kind != "auto":
            return self.kind == "noisy"
        if self.metric in ("error", "exit_code"):  # compared by equality, or 0 / not 0
            return False
        return self.command != () or self.metric in NOISY_METRICS

    @property
    def label(self) -> str:
        """The program's name in the user's words: the case's, or the command's."""
        return self.case.name if self.case else " ".join(self.command)

    def harness_argv(self) -> list[str]:
        """``python -m repro``'s arguments for one run: the options the harness takes."""
        values = {"case": self.case.path, "metric": self.metric, "target": self.target,
                  "param": [f"{name}={value}" for name, value in self.params.items()],
                  "over": over_text(self.over) if self.over or self.case.over else None,
                  "compare": self.compare,
                  # peak_memory: one fresh process a run, the run is the sample
                  "samples": 1 if self.samples is None and self.metric == "peak_memory"
                  else self.samples, "xla_flags": self.xla_flags, "devices": self.devices}
        return ["--json", *command_line(REPRO, values, lambda option: option.harness)]

    def key_fields(self) -> dict:
        """Everything a run's answer depends on but the harness: the program (its content),
        the metric and every option."""
        what = {field: value(self) for field, value in
                (KEYED[option.dest] for option in OPTIONS if option.harness)}
        what["command"] = list(self.command)
        if not self.over:  # as keys were before --over: runs stored then are still found
            del what["over"]
        if not self.compare:  # as keys were before COMPARE beside it
            del what["compare"]
        if self.devices is None:  # as keys were before --devices
            del what["devices"]
        if self.command:
            what["cwd"] = os.getcwd()
            what["files"] = [hashlib.sha256(Path(arg).read_bytes()).hexdigest()
                             for arg in self.command if os.path.isfile(arg)]
        return what

    def key(self) -> str:
        """A digest of everything a run's answer depends on, the harness's source included."""
        return hashlib.sha256(json.dumps([self.key_fields(), self.harness()],
                                         sort_keys=True).encode()).hexdigest()[:16]

    def harness(self) -> str:
        """The harness's digest where the question runs it (function cases), else ""."""
        return harness_id() if self.case else ""

    def store_key(self, release: Release, backend: str, kind: str, **more: object) -> Key:
        """The store's key for a result of ``kind`` about this question under ``release`` (a
        commit's: on the release whose environment it runs in)."""
        more = {**more, **release.key_fields}
        return Key(str(release.version), backend, kind, {**self.key_fields(), **more},
                   self.harness())


# A stored run's key holds every option the harness takes (repro.options.OPTIONS, harness=True),
# each under its field here: an option added there and not here fails every key (KeyError)
# instead of letting two questions share a stored result.
KEYED: dict[str, tuple[str, Callable[[Question], object]]] = {
    "case": ("case", lambda q: q.case.sha256 if q.case else None),  # its content, not its name
    "metric": ("metric", lambda q: q.metric),
    "param": ("params", lambda q: q.params),
    "over": ("over", lambda q: [q.over[0], list(q.over[1])] if q.over else None),
    "samples": ("samples", lambda q: q.samples),
    "target": ("target", lambda q: target_key(q.target) if q.target else ""),  # the spec's
    "xla_flags": ("xla_flags", lambda q: q.xla_flags),
    "compare": ("compare", lambda q: q.compare),
    "devices": ("devices", lambda q: q.devices),
}


def over_text(over: tuple) -> str:
    """``--over``'s value for ``over``: ``NAME=V1,V2,...``, or ``none``."""
    return f"{over[0]}={','.join(map(str, over[1]))}" if over else "none"


def with_compare(question: Question) -> Question:
    """``question`` with the case's COMPARE programs measured in the same process (the
    harness's ``--compare``: one jax start a release, which needs a series); else as asked."""
    together = question.over and question.case and question.case.compare
    return replace(question, compare=True) if together else question


def compared_runs(run: Run | None) -> dict[str, Run]:
    """Each COMPARE program's run out of a run of ``with_compare``'s question."""
    document = (run.document if run else None) or {}
    return {label: replace(run, document={"metric": metric})
            for label, metric in (document.get("compare") or {}).items()}


def with_params(question: Question, params: dict) -> Question:
    """``question`` at other parameters; one that names the over parameter with a tuple of
    its values measures the series there (the case's SEARCH_PARAMS, COMPARE)."""
    if not question.over:
        return replace(question, params={**question.params, **params})
    rest, values = series_at(question.over, {**question.params, **params})
    return replace(question, params=rest, over=(question.over[0], values))


def question_from(metric: str | None, case_path: str | None, params: list[str],
                  command: tuple[str, ...], *, target: str = "", xla_flags: str = "",
                  samples: int | None = None, kind: str = "auto",
                  over: str | None = None, devices: int | None = None) -> Question:
    """The question the command line asks; bad input is a UserError (one line, exit 2)."""
    if case_path is not None:
        try:
            case = read_case(case_path)
            overrides = parse_params(case, params)
            shape = case.over if over is None else parse_over(case, over)
        except CaseError as exc:
            raise UserError(str(exc)) from None
        metric = metric or case.metric or "memory"
        if metric not in METRICS:
            raise UserError(f"--metric {metric}: a case measures one of {', '.join(METRICS)}")
        if shape and metric in ("output", "error"):
            raise UserError(f"--over: the shape of a series of numbers; --metric {metric} is "
                            f"not one (use --over none)")
        if shape and shape[0] in overrides:
            raise UserError(f"--param {shape[0]}: the metric is measured over {shape[0]} "
                            f"(--over {over_text(shape)}); give its values with --over, or "
                            f"--over none for one figure")
        if target and metric not in COMPILE_ONLY_METRICS:
            raise UserError(f"--target compiles without the GPU: --metric {metric} needs a "
                            f"run (use memory, compile_time or error)")
        return Question(metric=metric, case=case, params=overrides, target=target,
                        xla_flags=xla_flags, samples=samples, kind=kind, over=shape,
                        devices=devices)
    if over is not None:
        raise UserError("--over measures a --case FILE over a parameter; there is none")
    if devices is not None:
        raise UserError("--devices gives a --case FILE CPU host devices; a command after `--` "
                        "sets its own (XLA_FLAGS=--xla_force_host_platform_device_count=N, or "
                        "--xla-flags)")
    if params:
        raise UserError("--param sets a parameter of a --case file; there is none")
    if not command or metric is None:
        raise UserError("a metric bisection needs --case FILE or --metric NAME -- CMD")
    if target:
        raise UserError("--target compiles a --case for a GPU without one; a command after "
                        "`--` cannot run there: drop one of them")
    return Question(metric=metric, command=command, xla_flags=xla_flags, kind=kind)


@dataclass(frozen=True)
class Run:
    """One process of one release: its samples, or why there are none."""

    release: str
    number: int                  # the k-th run of this release for this question
    status: str                  # ok | raised (the program raised) | crashed | failed (skip)
    #                              | hung (past its time limit; never stored)
    samples: tuple = ()
    error: str | None = None
    document: dict | None = None  # the harness's document (function cases)
    installed: dict = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False
    crash: str | None = None     # how the process crashed (crashes.crash_of), if it did
    crash_rate: dict | None = None  # the error metric: its runs' crash rate (CrashRate)
    ran_on: dict = field(default_factory=dict)  # the node and job where it ran ({}: here)

    def as_json(self) -> dict:
        return {"release": self.release, "number": self.number, "status": self.status,
                "samples": list(self.samples), "error": self.error, "document": self.document,
                "installed": self.installed, "seconds": self.seconds, "crash": self.crash,
                "crash_rate": self.crash_rate, **({"ran_on": self.ran_on} if self.ran_on else {})}

    @classmethod
    def from_json(cls, d: dict) -> Run:
        return cls(**{**d, "samples": tuple(d["samples"]), "cached": True})


def crashed_run(question: Question, version: str, number: int, crash: str) -> Run:
    """A run whose process crashed: the ``error`` metric's figure, any other metric's
    failure to measure (named in the answer, with the ``--metric error`` bisection)."""
    if question.metric == "error":
        return Run(release=version, number=number, status="ok", samples=(crash,), crash=crash)
    return Run(release=version, number=number, status="crashed", error=crash, crash=crash)


def measure_run(release: Release, backend: str, question: Question, number: int, *,
                timeout: float, remeasure: bool = False, say: Say,
                store: Store = STORE, executor: Executor = LOCAL) -> Run:
    """Run ``number`` of ``question`` under ``release``: stored, or measured now and stored.

    What the release answers (samples, or the program raising) is stored; what may go away
    (an install that failed, a timeout, a kill) is not. A jax commit (``release.commit``)
    runs in its older release's environment with the commit checked out first on the path."""
    version, kept = str(release.version), []
    failed = partial(Run, release=version, number=number, status="failed")

    def measure(rebuild: bool = False) -> Run:
        try:
            # A case's harness that cannot import jax says so, and its environment is rebuilt
            # below: checked first (0.7 s) only for a command, whose failure could be anything.
            env = ensure_environment(release, backend, progress=say, rebuild=rebuild,
                                     verify=remeasure and question.case is None)
        except InstallFailed as exc:
            kept.append(False)
            return failed(error=str(exc))
        started = time.perf_counter()  # the run's own time, not the install's (its limit)
        say(f"jax {version}: {question.metric} of {question.label}, run {number}")
        keep = True
        try:
            with release.source() as source:
                run = (_harness_run if question.case is not None else _command_run)(
                    env, version, question, number, timeout, executor, source)
        except Crashed as exc:
            run, keep = crashed_run(question, version, number, exc.crash), exc.lasting
        except EnvironmentBroken as exc:
            if not rebuild:  # the environment's fault, not the release's answer: built afresh
                say(f"jax {version}: its environment no longer imports jax ({exc}); "
                    f"rebuilding it")
                return measure(rebuild=True)
            run, keep = failed(error=str(exc)), False
        except HarnessFailed as exc:  # a timeout: "hung" (docs/cases.md, time limits)
            run = failed(status="hung" if isinstance(exc, RunTimedOut) else "failed",
                         error=str(exc))
            keep = exc.lasting
        kept.append(keep)
        installed = {**env.installed, **release.jax_installed}
        return replace(run, installed=installed,
                       seconds=round(time.perf_counter() - started, 2))

    return store.get_or_run(question.store_key(release, backend, "metric", run=number),
                            measure, remeasure=remeasure, keep=lambda _: kept[-1],
                            encode=Run.as_json, decode=Run.from_json)


def _harness_run(env, version: str, question: Question, number: int,
                 timeout: float, executor: Executor = LOCAL,
                 source: Path | None = None) -> Run:
    document = run_repro(env, question.harness_argv() + platform_args(env.backend,
                                                                      question.target), timeout,
                         answers=(0, 125), executor=executor, jax_source=source)
    return run_of_document(document, version, number)


def run_of_document(document: dict, version: str, number: int) -> Run:
    """Run ``number`` of a release as the harness's ``document`` answers it."""
    metric = document.get("metric") or {}
    run = partial(Run, release=version, number=number, document=document,
                  ran_on=document.get("ran_on", {}))
    if metric.get("status") == "ok":
        return run(status="ok", samples=tuple(metric["samples"]))
    return run(status="raised" if metric.get("status") == "error" else "failed",
               error=metric.get("error") or "no answer")


def _command_run(env, version: str, question: Question, number: int,
                 timeout: float, executor: Executor = LOCAL,
                 source: Path | None = None) -> Run:
    """The user's command in the environment; its last stdout line is a JSON object whose
    ``question.metric`` field is the sample (for ``--metric error``: ``no error``, how it
    exited, or how it crashed). Its output is copied to our stderr."""
    try:
        done = executor.run(list(question.command),
                            env={**command_environ(env, question.xla_flags, source),
                                 "JAX_BISECT_RELEASE": version}, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunTimedOut(f"timed out after {timeout:.0f} s") from None
    except ProbeLost as exc:
        raise HarnessFailed(str(exc), lasting=False) from None
    except OSError as exc:
        raise UserError(f"cannot run {question.command[0]!r}: {exc.strerror}") from None
    sys.stderr.write(done.stdout)
    sys.stderr.write(done.stderr)
    if source is not None and done.returncode != 0:  # the command's answer, or the commit's?
        raise_if_broken(env.python, source)
    if question.metric == "exit_code":  # git bisect run's codes
        return exit_status_run(done.returncode, done.stderr, version, number, done.where)
    crash = crash_of(done.returncode, done.stderr, shell=True)
    if crash:
        raise Crashed("the command", crash)
    if done.returncode < 0:
        raise HarnessFailed(f"the command was killed by signal {-done.returncode}",
                            lasting=False)
    run = partial(Run, release=version, number=number, ran_on=done.where)
    if question.metric == "error":
        return run(status="ok", samples=(command_error(done.returncode, done.stderr),))
    if done.returncode != 0:
        return run(status="raised", error=f"the command exited {done.returncode}")
    return run(status="ok", samples=(command_value(done.stdout, question.metric),))


def command_error(returncode: int, stderr: str) -> str:
    """A command's ``error`` figure where it did not crash: ``no error`` for exit 0, else
    its exit status and the last line of its stderr (addresses and ids masked)."""
    return "no error" if returncode == 0 else f"exited {returncode}{_masked_tail(stderr)}"


def _last_line(text: str) -> str:
    """The last line of ``text`` that is not blank ("" if none)."""
    return next((line for line in reversed(text.splitlines()) if line.strip()), "")


def _masked_tail(stderr: str) -> str:
    """``: LAST LINE`` of ``stderr``, addresses and ids masked ("" if it has none)."""
    last = _last_line(stderr)
    return f": {mask(last)}" if last else ""


def command_value(stdout: str, name: str) -> float:
    """Field ``name`` of the JSON object on the last line of ``stdout``; a command that does
    not print one is bad input (UserError)."""
    last = _last_line(stdout)
    try:
        document = json.loads(last) if last else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise UserError(f"--metric {name}: the command must print a JSON object as its last "
                        f"line of output (it printed {last[:80]!r})" if last else
                        f"--metric {name}: the command printed nothing; it must print a JSON "
                        f"object as its last line")
    if name not in document:
        raise UserError(f"--metric {name}: the command's JSON has no field {name!r} "
                        f"(it has {', '.join(sorted(document)) or 'none'})")
    value = document[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UserError(f"--metric {name}: the field is {value!r}, not a number")
    if not math.isfinite(value):
        raise UserError(f"--metric {name}: the field is {value!r}, not a finite number")
    return float(value)


class CommandAborted(UserError):
    """A command exited 128 or more: git bisect run's "stop the bisection" (one line, exit 2)."""


SKIP_STATUS = 125  # git bisect run's "this release cannot be tested"


def exit_status_run(code: int, stderr: str, version: str, number: int,
                    where: dict | None = None) -> Run:
    """A command's run under the exit-code classifier (git bisect run's codes): 0 and
    1-127 are its two behaviours, 125 skips the release, 128 or more (or a signal) stops the
    bisection with one line."""
    if code == SKIP_STATUS:
        return Run(release=version, number=number, status="failed", ran_on=where or {},
                   error=f"the command exited {SKIP_STATUS} (this release cannot be tested)")
    if not 0 <= code < 128:
        raise CommandAborted(
            f"jax {version}: the command exited {code if code >= 0 else 128 - code}, 128 or "
            f"more, which stops the bisection (git bisect run's abort){_masked_tail(stderr)}")
    return Run(release=version, number=number, status="ok", samples=(code,),
               ran_on=where or {})
