"""The bisection over jax releases: probes, the fallback to runtime mode, the answer.

Policy and I/O around the pure search of ``search.py``: which releases are candidates,
what one probe does (install, measure, or run the user's command), and what the answer is.

A search probe measures only what v0's verdict needs (``HarnessOptions.for_search``); the
releases the report shows in full (``search.full_table``: the ends and both sides of the
change) are then measured with every variant at every n_outer, the ends' already while the
search goes on. While a round of probes runs, the environments that the next round could need
are built (``search.prefetch_order``).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path

from .catalogue import DEVICELESS, Catalogue, Release, backend_words, needs_a_gpu
from .environments import ensure_environment, environment_path
from .errors import InstallFailed, UserError
from .executors import LOCAL, Executor, ProbeLost
from .harness import DEFAULT_TIMEOUT, HarnessOptions, command_environ
from .measurements import Measurement, measure_release, stored_measurement
from .search import (
    Outcome,
    SearchResult,
    find_change,
    full_table,
    prefetch_order,
    probe_limit,
)
from .store import STORE, Key, Store

Say = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    start: str
    end: str
    backend: str                      # resolved: cpu, cuda12, or cuda12-deviceless (a target)
    options: HarnessOptions
    command: tuple[str, ...] = ()     # bisect with this command instead of the built-in check
    try_xla_flags: tuple[str, ...] = ()  # measured as workarounds once a change is found
    timeout: float = DEFAULT_TIMEOUT
    remeasure: bool = False           # ignore stored results (they are replaced)
    jobs: int = 1                     # candidates probed at once, per round
    minimize: bool = False            # shrink the case once the change is found
    small_search: bool = True         # search probes at a small size (checked at the ends)
    include_yanked: bool = False      # yanked releases inside the range are candidates too
    executor: Executor = field(default=LOCAL, compare=False)  # where probes run (executors.py)

    # How a run is carried out, not what it answers: left out of report names and of the
    # Reproduce line. Every other field (and every field of ``options``) changes the result.
    NOT_RESULT = ("start", "end", "backend", "options", "timeout", "remeasure", "jobs",
                  "small_search", "executor")
    # Of ``options``: what every bisection sets from the rest (HarnessOptions.for_bisection),
    # so no command line gives it.
    DERIVED = ("v2_up_to",)

    def result_options(self) -> dict[str, object]:
        """Every option that changes the result and differs from its default, by field name."""
        changed = {}
        for owner in (self.options, self):
            for spec in fields(owner):
                if spec.name in (self.NOT_RESULT if owner is self else self.DERIVED):
                    continue
                default = (spec.default_factory() if spec.default_factory is not MISSING
                           else spec.default)
                value = getattr(owner, spec.name)
                if value != default:
                    changed[spec.name] = value
        return changed


@dataclass(frozen=True)
class Probe:
    """What one release answered, and how."""

    release: Release
    verdict: str                      # constant / grows / unavailable, or old / new / skip
    mode: str                         # compiled / runtime / command
    reason: str | None
    cached: bool                      # the search's answer was stored (measured nothing)
    seconds: float                    # spent measuring, the full table's included
    measurement: Measurement | None = None   # the harness's document (built-in check)
    unavailable_compiled: Measurement | None = None  # the compiled try a fallback replaced
    exit_status: int | None = None    # the command's (command probes)
    installed: dict = field(default_factory=dict)
    full_table: bool = False          # measurement holds every variant at every n_outer
    full_error: str | None = None     # why the full table could not be measured
    ran_on: dict = field(default_factory=dict)  # a command's node and job ({}: here)

    @property
    def table_verdict(self) -> str:
        """The verdict of what the table shows: the full table's where it was measured."""
        return self.measurement.verdict if self.measurement else self.verdict

    @property
    def outcome(self) -> Outcome:
        return OUTCOMES.get(self.verdict, Outcome.SKIP)

    @property
    def jaxlib(self) -> str:
        if self.measurement and self.measurement.document:
            return self.measurement.document["jaxlib"]
        return self.installed.get("jaxlib") or str(self.release.jaxlib or "?")


OUTCOMES = {"constant": Outcome.OLD, "grows": Outcome.NEW, "old": Outcome.OLD,
            "new": Outcome.NEW}


@dataclass(frozen=True)
class Bisection:
    request: Request
    candidates: tuple[Release, ...]
    unusable: tuple[tuple[Release, str], ...]
    probes: tuple[Probe, ...]         # in the order they were made
    result: SearchResult
    jobs: int = 1
    search_note: str | None = None    # why the search fell back to the full size, if it did
    yanked: tuple[Release, ...] = ()  # the yanked releases inside the range (measured or not)

    @property
    def search_n_res(self) -> int:
        """The array side the search's probes measured at."""
        return self.request.options.for_search(self.request.small_search).n_res

    @property
    def limit(self) -> tuple[int, int]:
        """At most (probes, rounds) the search needs over these candidates, nothing skipped."""
        return probe_limit(len(self.candidates), self.jobs)

    @property
    def measured_part(self) -> tuple[str, str]:
        """The first and last release the search covered (narrower than the range asked for
        when a target's end cannot compile without a GPU)."""
        return str(self.candidates[0].version), str(self.candidates[-1].version)

    @property
    def needs_a_gpu(self) -> list[tuple[str, str]]:
        """(from, to) of each part of the asked range that only a real GPU can measure."""
        lo, hi = self.measured_part
        parts = []
        if lo != self.request.start:
            parts.append((self.request.start, lo))
        if self.gpu_only_between:  # the answer's pair has releases between it never saw
            parts.append((str(self.last_old.release.version),
                          str(self.first_new.release.version)))
        if hi != self.request.end:
            parts.append((hi, self.request.end))
        return parts

    @property
    def gpu_only_between(self) -> list[Release]:
        """Releases strictly between the answer's two that only a real GPU can measure (jax
        0.4.36 and 0.4.37 for a target): the change may be in one of them."""
        if self.result.status != "found":
            return []
        old, new = self.last_old.release.version, self.first_new.release.version
        return [r for r, why in self.unusable if needs_a_gpu(why) and old < r.version < new]

    @property
    def exact(self) -> bool:
        return self.result.exact and not self.gpu_only_between

    def probe_of(self, index: int) -> Probe:
        release = self.candidates[index]
        return next(p for p in self.probes if p.release is release)

    @property
    def last_old(self) -> Probe | None:
        return None if self.result.last_old is None else self.probe_of(self.result.last_old)

    @property
    def first_new(self) -> Probe | None:
        return None if self.result.first_new is None else self.probe_of(self.result.first_new)

    def fully_measured(self) -> Bisection:
        """The same bisection with only the probes that carry the full table (and the two
        either side of the change): what a chart of v0 against every n_outer draws."""
        keep = {id(p) for p in (self.last_old, self.first_new) if p is not None}
        return replace(self, probes=tuple(p for p in self.probes
                                          if p.full_table or id(p) in keep))

    @property
    def direction(self) -> str | None:
        """regression (v0 started to grow), fix (it stopped), or None for commands/no answer."""
        if self.result.status != "found" or self.request.command:
            return None
        return "regression" if self.probe_of(0).verdict == "constant" else "fix"


def candidates_for(catalogue: Catalogue, request: Request
                   ) -> tuple[list[Release], list[tuple[Release, str]]]:
    """The installable releases from start to end; bad or empty ranges are UserErrors."""
    return releases_between(catalogue, request.start, request.end, request.backend,
                            request.options.target, include_yanked=request.include_yanked)


def check_release(release: Release, request: Request, say: Say,
                  options: HarnessOptions | None = None) -> Probe:
    """The built-in check with ``options`` (default: the request's, the full table): v0's
    verdict, falling back to a real run where the compiled statistics of the release are empty
    (jaxlib < 0.4.29 on the CPU)."""
    options = options or request.options
    started = time.perf_counter()
    compiled = measure_release(release, request.backend, options, progress=say,
                               timeout=request.timeout, use_cache=not request.remeasure,
                               executor=request.executor)
    chosen, replaced = compiled, None
    if compiled.stats_empty and not options.target:  # a target has no real run
        fallback = options.runtime_fallback()
        say(f"jax {release.version}: compiled statistics are empty "
            f"({compiled.reason}); its verdict comes from a real run at n_res {fallback.n_res}")
        chosen = measure_release(release, request.backend, fallback, progress=say,
                                 timeout=request.timeout, use_cache=not request.remeasure,
                                 executor=request.executor)
        replaced = compiled
    cached = compiled.cached and (replaced is None or chosen.cached)
    return Probe(release=release, verdict=chosen.verdict, mode=chosen.options.mode,
                 reason=chosen.reason, cached=cached,
                 seconds=0.0 if cached else round(time.perf_counter() - started, 2),
                 measurement=chosen, unavailable_compiled=replaced,
                 installed=chosen.installed or compiled.installed,
                 full_table=options == request.options)


def stored_full(release: Release, request: Request) -> Probe | None:
    """The full table's answer where it is stored already (an earlier bisection, ``nox -s
    repro``): it holds every case a search probe needs."""
    if request.remeasure:
        return None
    full = stored_measurement(release, request.backend, request.options)
    if full is None or full.document is None:
        return None
    replaced = None
    if full.stats_empty and not request.options.target:
        replaced = full
        full = stored_measurement(release, request.backend, request.options.runtime_fallback())
        if full is None or full.document is None:
            return None
    return Probe(release=release, verdict=full.verdict, mode=full.options.mode,
                 reason=full.reason, cached=True, seconds=0.0, measurement=full,
                 unavailable_compiled=replaced, installed=full.installed, full_table=True)


def search_release(release: Release, request: Request, say: Say) -> Probe:
    """A search probe: a stored full table where there is one, else v0 at the sizes its
    verdict needs."""
    return stored_full(release, request) or check_release(
        release, request, say, request.options.for_search(request.small_search))


def complete_table(probe: Probe, request: Request, say: Say) -> Probe:
    """``probe`` with the full table (every variant, every n_outer) measured for the report.

    A release whose search probe failed (no document) gets none; a full run that fails keeps
    the search's row and says why."""
    if probe.full_table or probe.measurement is None or probe.measurement.document is None:
        return probe
    say(f"jax {probe.release.version}: measuring the full table for the report")
    full = check_release(probe.release, request, say)
    if full.measurement.document is None:
        return replace(probe, full_error=full.reason, seconds=probe.seconds + full.seconds)
    return replace(probe, measurement=full.measurement,
                   unavailable_compiled=full.unavailable_compiled, full_table=True,
                   seconds=probe.seconds + full.seconds,
                   installed=full.installed or probe.installed)

def command_key(release: Release, request: Request) -> Key:
    """The command, the folder it runs in and the content of any file it names (an edited
    script is a new command); commands do not run the harness."""
    files = [hashlib.sha256(Path(arg).read_bytes()).hexdigest()
             for arg in request.command if os.path.isfile(arg)]
    return Key(str(release.version), request.backend, "command",
               {"cwd": os.getcwd(), "command": list(request.command), "files": files,
                **({"xla_flags": request.options.xla_flags} if request.options.xla_flags
                   else {})})


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by something without a file
        return 2


def run_command(release: Release, request: Request, say: Say, *,
                store: Store = STORE) -> Probe:
    """The user's command inside the release's environment, with git bisect run's codes.
    Its answer is stored unless it may go away (a failed install, a timeout)."""
    def stored(d: dict) -> Probe:
        return Probe(release=release, verdict=d["verdict"], mode="command",
                     reason=d["reason"], cached=True, seconds=0.0,
                     exit_status=d["exit_status"], installed=d["installed"],
                     ran_on=d.get("ran_on", {}))

    def as_json(probe: Probe) -> dict:
        return {"verdict": probe.verdict, "reason": probe.reason,
                "exit_status": probe.exit_status, "installed": probe.installed,
                **({"ran_on": probe.ran_on} if probe.ran_on else {})}

    return store.get_or_run(command_key(release, request),
                            lambda: _run_command(release, request, say),
                            remeasure=request.remeasure,
                            keep=lambda probe: probe.exit_status is not None,
                            encode=as_json, decode=stored)


def _run_command(release: Release, request: Request, say: Say) -> Probe:
    started = time.perf_counter()
    try:
        env = ensure_environment(release, request.backend, progress=say,
                                 verify=request.remeasure)
    except InstallFailed as exc:
        return Probe(release=release, verdict="skip", mode="command", reason=str(exc),
                     cached=False, seconds=round(time.perf_counter() - started, 2))
    child_env = command_environ(env, request.options.xla_flags)
    say(f"jax {release.version}: running {' '.join(request.command)}")
    lost, ran_on = None, {}
    try:
        # Our stdout carries only the answer (one JSON document under --json): the
        # command's own output goes to stderr, beside the progress lines.
        done = request.executor.run(list(request.command), env=child_env,
                                    timeout=request.timeout, stdout=_stderr_fd(), stderr=None)
        code, ran_on = done.returncode, done.where
    except subprocess.TimeoutExpired:
        code = None
    except ProbeLost as exc:
        code, lost = None, str(exc)
    except OSError as exc:
        raise UserError(f"cannot run {request.command[0]!r}: {exc.strerror}") from None
    if lost:
        verdict, reason = "skip", lost
    elif code is None:
        verdict, reason = "skip", f"timed out after {request.timeout:.0f} s"
    elif code == 0:
        verdict, reason = "old", None
    elif code == 125:
        verdict, reason = "skip", "the command exited 125 (cannot test)"
    elif 0 < code < 128:
        verdict, reason = "new", None
    else:
        verdict, reason = "skip", f"the command died (exit status {code})"
    return Probe(release=release, verdict=verdict, mode="command", reason=reason,
                 cached=False, seconds=round(time.perf_counter() - started, 2),
                 exit_status=code, installed=dict(env.installed), ran_on=ran_on)


def is_stored(release: Release, request: Request) -> bool:
    """A probe of this release would measure nothing: its answer is stored."""
    if request.remeasure or request.command:
        return False
    return any(stored_measurement(release, request.backend, options)
               for options in (request.options.for_search(request.small_search),
                               request.options))


def is_cheap(release: Release, request: Request) -> bool:
    """A probe of this release costs little: its result is stored or its environment exists."""
    return (is_stored(release, request)
            or (environment_path(release, request.backend) / ".complete.json").exists())


class Workers:
    """The threads a bisection keeps busy: the round's probes, the full tables behind them,
    and the installs ahead of them. Each runs subprocesses, so threads are enough."""

    def __init__(self, jobs: int):
        self.probes = ThreadPoolExecutor(jobs, thread_name_prefix="probe")
        # One more than the probes: once the search is over, its cores measure tables too.
        self.tables = ThreadPoolExecutor(jobs + 1, thread_name_prefix="table")
        self.installs = ThreadPoolExecutor(max(2, jobs), thread_name_prefix="install")
        self.warming = ThreadPoolExecutor(max(2, jobs), thread_name_prefix="warm")
        self.warm_ups: dict[int, tuple[Future, list[subprocess.Popen]]] = {}
        self.closed = False
        self.wanted: set[int] = set()  # what the last round asked to have ahead
        self.ahead: dict[int, Future] = {}
        self.lock = threading.Lock()

    def warm(self, i: int, python: Path) -> None:
        """Import jax once under ``python`` (candidate ``i``, just installed ahead), at the
        lowest priority and never waited for: a first import writes the bytecode, 1.3 s of a
        first probe's 2.1 s here, which the probe that comes then finds written. Stopped once
        ``i`` is no longer ahead (probed, or on the side the search left)."""
        started: list[subprocess.Popen] = []

        def run() -> None:
            with self.lock:
                if self.closed or i not in self.warm_ups:
                    return
                started.append(subprocess.Popen([str(python), "-I", "-c", "import jax"],
                                                stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL))
            try:
                os.setpriority(os.PRIO_PROCESS, started[0].pid, 19)
            except OSError:  # it has finished already
                pass
            started[0].wait()

        with self.lock:  # not when its probe has begun meanwhile: that writes it anyway
            if not self.closed and i in self.wanted:
                self.warm_ups[i] = (self.warming.submit(run), started)

    def _stop_warm_ups(self, keep: list[int]) -> None:  # under the lock
        for i, (future, started) in list(self.warm_ups.items()):
            if i not in keep:
                future.cancel()
                for process in started:
                    if process.poll() is None:
                        process.kill()
                del self.warm_ups[i]

    def install_ahead(self, indices: list[int], install: Callable[[int], object]) -> None:
        """Queue installs for ``indices`` in that order; queued ones no longer named are
        dropped (one already installing finishes: the lock of ensure_environment holds), and
        so are the warm-ups of the others."""
        with self.lock:
            self.wanted = set(indices)
            self._stop_warm_ups(indices)
            for i, future in list(self.ahead.items()):
                if i not in indices and future.cancel():
                    del self.ahead[i]
            for i in indices:
                if i not in self.ahead:
                    self.ahead[i] = self.installs.submit(install, i)

    def installed(self, i: int) -> None:
        """Wait for an install of ``i`` that is under way, so that the probe finds it ready."""
        with self.lock:
            future = self.ahead.get(i)
        if future is not None and not future.cancel():
            future.exception()  # a failed install is the probe's to report

    def close(self) -> None:
        with self.lock:  # a warm-up is only ever a head start: never waited for
            self.closed = True
            self._stop_warm_ups([])
        for pool in (self.installs, self.probes, self.tables, self.warming):
            pool.shutdown(wait=True, cancel_futures=True)


def bisect_releases(catalogue: Catalogue, request: Request, say: Say,
                    on_change: Callable[[Bisection], object] | None = None) -> Bisection:
    """The bisection; its search probes at a small size where that is shown to keep the
    verdict: at both ends of the range the small probe must agree with the full table, else
    the search is made again at the full size (and the report says so).

    ``on_change``: called with the bisection as the search leaves it (no full tables yet)
    once it has found a pair, so that what needs only the pair starts beside the tables."""
    bisection = _bisect_releases(catalogue, request, say, on_change)
    small = request.options.for_search(True).n_res
    if request.command or not request.small_search or small == request.options.n_res:
        return bisection
    ends = [bisection.probe_of(i) for i in (0, len(bisection.candidates) - 1)]
    wrong = [p for p in ends if p.full_table and p.measurement and p.measurement.document
             and p.verdict != p.table_verdict]
    if not wrong:
        return bisection
    note = (f"at n_res {small} the search's verdict differs from the full size's at jax "
            + ", ".join(f"{p.release.version} ({p.verdict} against {p.table_verdict})"
                        for p in wrong)
            + f": searched again at n_res {request.options.n_res}")
    say(note)
    again = _bisect_releases(catalogue, replace(request, small_search=False), say, on_change)
    return replace(again, search_note=note)


def _bisect_releases(catalogue: Catalogue, request: Request, say: Say,
                     on_change: Callable[[Bisection], object] | None = None) -> Bisection:
    candidates, unusable = candidates_for(catalogue, request)
    for release, why in unusable:
        say(f"leaving out jax {release.version}: {why}")
    n = len(candidates)
    names = [str(r.version) for r in candidates]
    if (names[0], names[-1]) != (request.start, request.end):
        say(f"measuring the part jax {names[0]} … {names[-1]} that compiles without a GPU; "
            f"the rest of jax {request.start} … {request.end} needs a real one")
    most_probes, most_rounds = probe_limit(n, request.jobs)
    say(f"bisecting {n} releases, jax {names[0]} … {names[-1]} "
        f"({backend_words(request.backend, request.options.target)}); at most {most_probes} probes"
        + (f" in {most_rounds} rounds of up to {request.jobs}" if request.jobs > 1 else ""))
    made: dict[int, Probe] = {}
    seen: dict[int, Outcome] = {}
    tables: dict[int, Future] = {}
    probe_one = run_command if request.command else search_release
    everything = [r.version for r in catalogue.releases
                  if not r.yanked or request.include_yanked]
    offset = everything.index(candidates[0].version)

    def cheap(i: int) -> bool:
        return is_cheap(candidates[i], request)

    def install(i: int) -> None:
        release = candidates[i]
        try:
            env = ensure_environment(
                release, request.backend,
                progress=lambda m: say(f"ahead, jax {release.version}: {m}"))
        except InstallFailed:
            return  # the probe, if it comes, says why
        if not env.reused:
            workers.warm(i, env.python)

    def probe_at(i: int) -> Probe:
        workers.installed(i)
        return probe_one(candidates[i], request, say)

    def full_table_of(i: int) -> None:
        if not request.command and i not in tables:
            tables[i] = workers.tables.submit(complete_table, made[i], request, say)

    def probe_round(indices: tuple[int, ...]) -> list[Outcome]:
        ahead = prefetch_order(n, seen, indices, jobs=request.jobs, cheap=cheap,
                               offset=offset)
        workers.install_ahead([i for i in ahead
                               if not is_cheap(candidates[i], request)], install)
        first = len(made) + 1
        if len(indices) == 1:
            say(f"probe {first}: jax {names[indices[0]]}")
        else:
            say(f"probes {first}–{first + len(indices) - 1}: jax "
                + ", ".join(names[i] for i in indices))
        answers = [f.result() for f in [workers.probes.submit(probe_at, i) for i in indices]]
        for i, probe in zip(indices, answers):
            made[i] = probe
            seen[i] = probe.outcome
            shown = probe.verdict + (f" ({probe.mode})" if probe.mode != "compiled" else "")
            say(f"jax {names[i]}: {shown}" + (" [stored]" if probe.cached else "")
                + (f" — {probe.reason}" if probe.reason and probe.outcome is Outcome.SKIP
                   else ""))
            if i in (0, n - 1):  # the ends always get the full table: start it now
                full_table_of(i)
        return [made[i].outcome for i in indices]

    def narrowed(lo: int, hi: int, steps_left: int) -> None:
        between = hi - lo - 1
        say(f"narrowed to jax {names[lo]} … {names[hi]} ({between} "
            f"release{'' if between == 1 else 's'} between, "
            f"~{steps_left} step{'' if steps_left == 1 else 's'} left)")

    def bisection_of(result: SearchResult) -> Bisection:
        return Bisection(request=request, candidates=tuple(candidates),
                         unusable=tuple(unusable), probes=tuple(made[i] for i in result.probes),
                         result=result, jobs=request.jobs,
                         yanked=tuple(catalogue.yanked_between(request.start, request.end)))

    workers = Workers(request.jobs)
    try:
        result = find_change(n, probe_round=probe_round, jobs=request.jobs, cheap=cheap,
                             on_step=narrowed, offset=offset)
        yanked = tuple(i for i in range(1, n - 1) if candidates[i].yanked)
        if result.status == "alike" and yanked:
            # The ends agree, so the search probed nothing between them; a yanked release
            # asked for (--include-yanked) is the one people reported from: probed anyway.
            for i in yanked:
                probe_round((i,))
            result = replace(result, probes=result.probes + yanked)
        if on_change is not None and result.status == "found":
            on_change(bisection_of(result))
        for i in full_table(n, result):
            full_table_of(i)
        for i, future in tables.items():
            made[i] = future.result()
    finally:
        workers.close()
    return bisection_of(result)
