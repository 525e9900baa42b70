"""A process that crashed: by a signal, for memory, or by an uncaught C++ error.

A crash is the release's behaviour, not the toolkit's failure: for the ``error`` metric it is
the figure (``crashed: SIGSEGV`` and the last fatal log line, addresses and ids masked),
compared by equality like any error line; for every other metric it is named in the answer
with the ``--metric error`` bisection that finds it. Every runner passes its finished
process's exit status and stderr through ``crash_of``.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from dataclasses import dataclass

# The signals a crashing program dies of; SIGKILL is the kernel's OOM killer (our own timeout
# is told apart before this is asked).
CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGILL, signal.SIGFPE,
                 signal.SIGKILL}
SHELL_SIGNALLED = 128  # a shell reports a child killed by signal N as 128 + N
CRASH_RUNS = 3         # runs of a release whose error figure is a crash: its rate is the figure

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# Ids that change from run to run; other numbers (sizes, shapes, a failed check's operands)
# are the crash's own and kept.
_IDS = re.compile(r"\b(pid|tid|thread|process|Thread)([ =:#]+)\d+")
# A line that says why a process died, newest first: an abseil/TSL fatal line (F…] text),
# an uncaught C++ exception, a fatal Python error, an allocator giving up.
# An abseil/TSL log line of severity F (fatal), with or without the date in front:
# "2026-11-30 13:35:40.341465: F external/xla/xla/parse_flags_from_env.cc:226] Unknown flags …"
# "F1130 13:35:40.341465    6172 parse_flags_from_env.cc:226] Unknown flags …"
FATAL_LOG = re.compile(r"(?:^|\s)F(?:\d{4} [\d:.]+ +\d+)? *[\w./-]+:\d+\] (.+)$")
_FATAL = [
    FATAL_LOG,
    re.compile(r"(terminate called .+)$"),
    re.compile(r"^\s*(what\(\): .+)$"),
    re.compile(r"(Fatal Python error: .+)$"),
    re.compile(r"(RESOURCE_EXHAUSTED: .+)$"),
    re.compile(r"((?:std::)?bad_alloc.*)$"),
    re.compile(r"(Out of memory.*)$", re.IGNORECASE),
]


def mask(text: str) -> str:
    """``text`` with what changes from run to run (addresses, pids, thread ids) masked."""
    return _IDS.sub(r"\1\2N", _ADDRESS.sub("0x…", text)).strip()[:300]


def fatal_line(stderr: str) -> str | None:
    """The last line of ``stderr`` that says why the process died, masked; else None."""
    for line in reversed(stderr.splitlines()):
        for pattern in _FATAL:
            if match := pattern.search(line.strip()):
                return mask(match.group(1))
    return None


def signal_of(returncode: int, *, shell: bool = False) -> int | None:
    """The crash signal that ended a process: ``-N`` from subprocess, or ``128 + N`` from a
    shell (``shell``: the process may have been a shell's child); else None."""
    number = -returncode if returncode < 0 else (
        returncode - SHELL_SIGNALLED if shell and returncode > SHELL_SIGNALLED else None)
    return signal.Signals(number) if number in CRASH_SIGNALS else None


def crash_of(returncode: int, stderr: str, *, shell: bool = False) -> str | None:
    """What a finished process's crash was, as the ``error`` metric compares it: ``crashed:
    SIGSEGV`` and the last fatal log line (``crashed: SIGKILL (out of memory?)`` without one),
    or None where it did not crash (it exited, or was interrupted)."""
    sig = signal_of(returncode, shell=shell)
    line = fatal_line(stderr)
    if sig is None:  # an uncaught C++ error or a failed check that exited rather than aborting
        return f"crashed: {line}" if returncode > 0 and line and _C_LEVEL(line) else None
    head = f"crashed: {sig.name}"
    if line:
        return f"{head}: {line}"
    return f"{head} (out of memory?)" if sig == signal.SIGKILL else head


def _C_LEVEL(line: str) -> bool:
    return line.startswith(("terminate called", "what(): ", "Fatal Python error", "bad_alloc",
                            "std::bad_alloc")) or "Check failed" in line


def is_crash(text: object) -> bool:
    return isinstance(text, str) and text.startswith("crashed: ")


@dataclass(frozen=True)
class CrashRate:
    """How often a release's runs crashed, and the figure the classifier compares."""

    crash: str           # the commonest crash line
    crashed: int         # runs that crashed
    runs: int            # runs measured

    def figure(self, others: Sequence[str]) -> str:
        """All runs alike: the crash itself; else the crash with its rate (and what the other
        runs gave), so that a release crashing in 1 of 3 runs is neither end's figure."""
        if self.crashed == self.runs:
            return self.crash
        rest = sorted(set(others))
        return (f"{self.crash} in {self.crashed} of {self.runs} runs"
                + (f" (otherwise: {'; '.join(rest)})" if rest else ""))

    def as_json(self) -> dict:
        return {"crash": self.crash, "crashed": self.crashed, "runs": self.runs,
                "rate": round(self.crashed / self.runs, 3) if self.runs else None}


def rate_of(figures: Sequence[str]) -> CrashRate | None:
    """The crash rate of one release's run figures (None where none crashed)."""
    crashes = [f for f in figures if is_crash(f)]
    if not crashes:
        return None
    commonest = max(sorted(set(crashes)), key=crashes.count)
    return CrashRate(commonest, len(crashes), len(figures))
