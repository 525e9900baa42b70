"""The bisection over jax releases: probes, the fallback to runtime mode, the answer.

Policy and I/O around the pure search of ``search.py``: which releases are candidates,
what one probe does (install, measure, or run the user's command), and what the answer is.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .catalogue import DEVICELESS, Catalogue, Release, needs_a_gpu
from .environments import ensure_environment, environment_path
from .errors import InstallFailed, UserError
from .files import cache_dir, write_json
from .probe import DEFAULT_TIMEOUT, HarnessOptions, Measurement, cached_measurement, measure_release
from .search import Outcome, SearchResult, find_change

Say = Callable[[str], None]


@dataclass(frozen=True)
class Request:
    start: str
    end: str
    backend: str                      # resolved: cpu, cuda12, or cuda12-deviceless (a target)
    options: HarnessOptions
    command: tuple[str, ...] = ()     # bisect with this command instead of the built-in check
    timeout: float = DEFAULT_TIMEOUT
    remeasure: bool = False           # ignore stored results (they are replaced)


@dataclass(frozen=True)
class Probe:
    """What one release answered, and how."""

    release: Release
    verdict: str                      # constant / grows / unavailable, or old / new / skip
    mode: str                         # compiled / runtime / command
    reason: str | None
    cached: bool
    seconds: float
    measurement: Measurement | None = None   # the harness's document (built-in check)
    unavailable_compiled: Measurement | None = None  # the compiled try a fallback replaced
    exit_status: int | None = None    # the command's (command probes)
    installed: dict = field(default_factory=dict)

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
        if hi != self.request.end:
            parts.append((hi, self.request.end))
        return parts

    def probe_of(self, index: int) -> Probe:
        release = self.candidates[index]
        return next(p for p in self.probes if p.release is release)

    @property
    def last_old(self) -> Probe | None:
        return None if self.result.last_old is None else self.probe_of(self.result.last_old)

    @property
    def first_new(self) -> Probe | None:
        return None if self.result.first_new is None else self.probe_of(self.result.first_new)

    @property
    def direction(self) -> str | None:
        """regression (v0 started to grow), fix (it stopped), or None for commands/no answer."""
        if self.result.status != "found" or self.request.command:
            return None
        return "regression" if self.probe_of(0).verdict == "constant" else "fix"


def candidates_for(catalogue: Catalogue, request: Request
                   ) -> tuple[list[Release], list[tuple[Release, str]]]:
    """The installable releases from start to end; bad or empty ranges are UserErrors."""
    start, end = catalogue.get(request.start), catalogue.get(request.end)
    if start.version == end.version:
        raise UserError(f"--from and --to are the same release ({start.version}): "
                        "nothing to bisect")
    if start.version > end.version:
        raise UserError(f"--from {start.version} is newer than --to {end.version}; "
                        "swap them (the search works in both directions of change)")
    for end_release in (start, end):
        if end_release.yanked:
            raise UserError(f"jax {end_release.version} was yanked; pick a neighbouring release "
                            f"as the end of the range")
    usable, unusable = catalogue.between(request.start, request.end, request.backend)
    for end_release in (start, end):
        why = dict((r.version, w) for r, w in unusable).get(end_release.version)
        # A target's end that only a real GPU can compile for narrows the range to the part
        # that can be measured here; the report names the rest and the command for it.
        if why and not (request.backend == DEVICELESS and needs_a_gpu(why)):
            raise UserError(f"jax {end_release.version} cannot be installed here for "
                            f"{request.backend}: {why}")
    if len(usable) < 2:
        if request.backend == DEVICELESS:
            raise UserError(f"no two releases in jax {start.version} … {end.version} can compile "
                            f"for --target {request.options.target} without a GPU (jax 0.4.34 "
                            f"on, less 0.4.36 and 0.4.37); on a machine with an NVIDIA GPU: "
                            f"python -m bisect --from {start.version} --to {end.version} "
                            f"--backend cuda12")
        raise UserError(f"no installable releases between {start.version} and {end.version}")
    return usable, unusable


def check_release(release: Release, request: Request, say: Say) -> Probe:
    """The built-in check: v0's verdict, falling back to a real run where the compiled
    statistics of the release are empty (jaxlib < 0.4.29 on the CPU)."""
    started = time.perf_counter()
    compiled = measure_release(release, request.backend, request.options, progress=say,
                               timeout=request.timeout, use_cache=not request.remeasure)
    chosen, replaced = compiled, None
    if compiled.stats_empty and not request.options.target:  # a target has no real run
        fallback = request.options.runtime_fallback()
        say(f"jax {release.version}: compiled statistics are empty "
            f"({compiled.reason}); its verdict comes from a real run at n_res {fallback.n_res}")
        chosen = measure_release(release, request.backend, fallback, progress=say,
                                 timeout=request.timeout, use_cache=not request.remeasure)
        replaced = compiled
    cached = compiled.cached and (replaced is None or chosen.cached)
    return Probe(release=release, verdict=chosen.verdict, mode=chosen.options.mode,
                 reason=chosen.reason, cached=cached,
                 seconds=0.0 if cached else round(time.perf_counter() - started, 2),
                 measurement=chosen, unavailable_compiled=replaced,
                 installed=chosen.installed or compiled.installed)


def _command_key(command: tuple[str, ...]) -> str:
    """The command and the content of any file it names: an edited script is a new command."""
    digest = hashlib.sha256(json.dumps([os.getcwd(), *command]).encode())
    for arg in command:
        if os.path.isfile(arg):
            digest.update(Path(arg).read_bytes())
    return digest.hexdigest()[:16]


def run_command(release: Release, request: Request, say: Say) -> Probe:
    """The user's command inside the release's environment, with git bisect run's codes."""
    store = (cache_dir() / "results" / request.backend / f"jax-{release.version}"
             / f"command-{_command_key(request.command)}.json")
    try:
        if request.remeasure:
            raise OSError("asked to measure again")
        stored = json.loads(store.read_text())
        return Probe(release=release, verdict=stored["verdict"], mode="command",
                     reason=stored["reason"], cached=True, seconds=0.0,
                     exit_status=stored["exit_status"], installed=stored["installed"])
    except (OSError, ValueError, KeyError):
        pass
    started = time.perf_counter()
    try:
        env = ensure_environment(release, request.backend, progress=say)
    except InstallFailed as exc:
        return Probe(release=release, verdict="skip", mode="command", reason=str(exc),
                     cached=False, seconds=round(time.perf_counter() - started, 2))
    child_env = dict(os.environ, VIRTUAL_ENV=str(env.path),
                     PATH=os.pathsep.join([str(env.python.parent), os.environ.get("PATH", "")]),
                     JAX_BISECT_RELEASE=str(release.version))
    child_env.pop("PYTHONHOME", None)
    say(f"jax {release.version}: running {' '.join(request.command)}")
    try:
        done = subprocess.run(list(request.command), env=child_env, timeout=request.timeout)
        code = done.returncode
    except subprocess.TimeoutExpired:
        code = None
    except OSError as exc:
        raise UserError(f"cannot run {request.command[0]!r}: {exc.strerror}") from None
    if code is None:
        verdict, reason = "skip", f"timed out after {request.timeout:.0f} s"
    elif code == 0:
        verdict, reason = "old", None
    elif code == 125:
        verdict, reason = "skip", "the command exited 125 (cannot test)"
    elif 0 < code < 128:
        verdict, reason = "new", None
    else:
        verdict, reason = "skip", f"the command died (exit status {code})"
    probe = Probe(release=release, verdict=verdict, mode="command", reason=reason,
                  cached=False, seconds=round(time.perf_counter() - started, 2),
                  exit_status=code, installed=dict(env.installed))
    if code is not None:
        write_json(store, {"verdict": verdict, "reason": reason, "exit_status": code,
                           "installed": probe.installed})
    return probe


def is_cached(release: Release, request: Request) -> bool:
    """A probe of this release costs little: its result is stored or its environment exists."""
    if request.remeasure:
        return (environment_path(release, request.backend) / ".complete.json").exists()
    if not request.command and cached_measurement(release, request.backend, request.options):
        return True
    return (environment_path(release, request.backend) / ".complete.json").exists()


def bisect_releases(catalogue: Catalogue, request: Request, say: Say) -> Bisection:
    candidates, unusable = candidates_for(catalogue, request)
    for release, why in unusable:
        say(f"leaving out jax {release.version}: {why}")
    names = [str(r.version) for r in candidates]
    if (names[0], names[-1]) != (request.start, request.end):
        say(f"measuring the part jax {names[0]} … {names[-1]} that compiles without a GPU; "
            f"the rest of jax {request.start} … {request.end} needs a real one")
    say(f"bisecting {len(candidates)} releases, jax {names[0]} … {names[-1]} "
        f"({request.backend}); at most {2 + (len(candidates) - 1).bit_length()} probes")
    probes: list[Probe] = []
    probe_one = run_command if request.command else check_release

    def probe(index: int) -> Outcome:
        release = candidates[index]
        say(f"probe {len(probes) + 1}: jax {release.version}")
        made = probe_one(release, request, say)
        probes.append(made)
        shown = made.verdict + (f" ({made.mode})" if made.mode != "compiled" else "")
        say(f"jax {release.version}: {shown}" + (" [stored]" if made.cached else "")
            + (f" — {made.reason}" if made.reason and made.outcome is Outcome.SKIP else ""))
        return made.outcome

    def narrowed(lo: int, hi: int, steps_left: int) -> None:
        between = hi - lo - 1
        say(f"narrowed to jax {names[lo]} … {names[hi]} ({between} "
            f"release{'' if between == 1 else 's'} between, "
            f"~{steps_left} steps left)")

    everything = [r.version for r in catalogue.releases if not r.yanked]
    offset = everything.index(candidates[0].version)
    result = find_change(len(candidates), probe,
                         cached=lambda i: is_cached(candidates[i], request),
                         on_step=narrowed, offset=offset)
    return Bisection(request=request, candidates=tuple(candidates), unusable=tuple(unusable),
                     probes=tuple(probes), result=result)
