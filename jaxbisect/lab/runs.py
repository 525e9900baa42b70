"""One run of a question in one release's environment, and the key it is stored under.

Runs are stored as they land, keyed by release, backend, question, harness source and run
number, so a rerun reads them back in the same order and measures nothing.
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
from dataclasses import replace
from functools import partial
from pathlib import Path

from jaxbisect.errors import InstallFailed, UserError
from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.environments import ensure_environment
from jaxbisect.lab.executors import LOCAL, Executor, ProbeLost
from jaxbisect.lab.harness import (
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
from jaxbisect.lab.store import STORE, Key, Store
from jaxbisect.search.crashes import crash_of, mask
from jaxbisect.search.placing import cannot_measure
from jaxbisect.search.question import Question, Run, crashed_run
from jaxbisect.search.without_chip import cannot_tell_here, tpu_without_chip
from repro.options import OPTIONS

Say = Callable[[str], None]


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


def key_fields(question: Question) -> dict:
    """Everything a run of ``question`` depends on but the harness: the program (its content),
    the metric and every option."""
    what = {field: value(question) for field, value in
            (KEYED[option.dest] for option in OPTIONS if option.harness)}
    what["command"] = list(question.command)
    if not question.over:  # as keys were before --over: runs stored then are still found
        del what["over"]
    if not question.compare:  # as keys were before COMPARE beside it
        del what["compare"]
    if question.devices is None:  # as keys were before --devices
        del what["devices"]
    if question.command:
        what["cwd"] = os.getcwd()
        what["files"] = [hashlib.sha256(Path(arg).read_bytes()).hexdigest()
                         for arg in question.command if os.path.isfile(arg)]
    return what


def question_key(question: Question) -> str:
    """A digest of everything a run's answer depends on, the harness's source included."""
    return hashlib.sha256(json.dumps([key_fields(question), harness_digest(question)],
                                     sort_keys=True).encode()).hexdigest()[:16]


def harness_digest(question: Question) -> str:
    """The harness's digest where the question runs it (function cases), else ""."""
    return harness_id() if question.case else ""


def store_key(question: Question, release: Release, backend: str, kind: str,
              **more: object) -> Key:
    """The store's key for a result of ``kind`` about this question under ``release`` (a
    commit's: on the release whose environment it runs in)."""
    more = {**more, **release.key_fields}
    return Key(str(release.version), backend, kind, {**key_fields(question), **more},
               harness_digest(question))


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
            if release.environ:  # another libtpu: installed alone before it is loaded
                release.prepare(env.python)
            with release.source() as source:
                run = (_harness_run if question.case is not None else _command_run)(
                    env, version, question, number, timeout, executor, source,
                    release.environ)
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

    return store.get_or_run(store_key(question, release, backend, "metric", run=number),
                            measure, remeasure=remeasure, keep=lambda _: kept[-1],
                            encode=Run.as_json, decode=Run.from_json)


def _harness_run(env, version: str, question: Question, number: int,
                 timeout: float, executor: Executor = LOCAL,
                 source: Path | None = None, environ: dict | None = None) -> Run:
    document = run_repro(env, question.harness_argv() + platform_args(env.backend,
                                                                      question.target), timeout,
                         answers=(0, 125), executor=executor, jax_source=source,
                         environ=environ)
    return run_of_document(document, version, number)


# The harness's metric status where its own set-up left the program unable to run (repro/
# metrics.py HARNESS_ERROR): that release cannot be measured here, a named skip.
HARNESS_ERROR = "harness_error"


def run_of_document(document: dict, version: str, number: int) -> Run:
    """Run ``number`` of a release as the harness's ``document`` answers it: a harness error
    is a skip whose error is "cannot measure here: " and the harness's one line."""
    metric = document.get("metric") or {}
    run = partial(Run, release=version, number=number, document=document,
                  ran_on=document.get("ran_on", {}))
    if metric.get("status") == HARNESS_ERROR:  # the harness's set-up, not the program's answer
        return run(status="failed", error=cannot_measure(metric.get("error")))
    said = ((metric.get("samples") or [None])[0] if metric.get("status") == "ok"
            else metric.get("error"))
    if why := cannot_tell_here(said, tpu_without_chip(document)):
        return run(status="failed", error=why)
    if metric.get("status") == "ok":
        return run(status="ok", samples=tuple(metric["samples"]))
    return run(status="raised" if metric.get("status") == "error" else "failed",
               error=metric.get("error") or "no answer")


def _command_run(env, version: str, question: Question, number: int,
                 timeout: float, executor: Executor = LOCAL,
                 source: Path | None = None, environ: dict | None = None) -> Run:
    """The user's command in the environment; its last stdout line is a JSON object whose
    ``question.metric`` field is the sample (for ``--metric error``: ``no error``, how it
    exited, or how it crashed). Its output is copied to our stderr."""
    try:
        done = executor.run(list(question.command),
                            env={**command_environ(env, question.xla_flags, source),
                                 "JAX_BISECT_RELEASE": version, **(environ or {})},
                            timeout=timeout)
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
