"""The standalone reproducer's stage: once a bisection found its pair, the plain program
(program.py) at the sizes the answer used, run as pasted in each end's environment.

Each end runs it (a stored run each, like a probe's: a rerun measures nothing) in a folder
of its own with nothing of the toolkit on its path (harness.run_script): twice where two runs
can print different things (an output, an error: is it nondeterministic? a time: the quicker
of two), once for a compiled plan's memory, one figure however often it is compiled, as the
search measures it. The part it gives the bisection's document (``reproducer``,
docs/schema.md): the program, each end's pip line pinning what its environment held, the
command, the output and the exit status, whether the outputs differ the way the answer says
(``shows_change``, measured) and whether an end's two runs printed different things
(``nondeterministic``; null where each end ran once).
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

from packaging.version import Version

from jaxbisect.errors import InstallFailed, UserError
from jaxbisect.lab.catalogue import Release
from jaxbisect.lab.executors import LOCAL
from jaxbisect.lab.harness import HarnessFailed, run_script
from jaxbisect.lab.store import Key
from jaxbisect.search.classify import Direction
from jaxbisect.search.crashes import crash_of
from jaxbisect.search.rounds import Status
from jaxbisect.stages.program import FILE, Program, needs_its_gpu, why_not, write_program
from repro.verdict import relative_shape, shapes_alike

RUNS = 2  # each end's runs: two that disagree make its output nondeterministic
ONCE = ("memory",)  # a compiled plan's memory: one figure, run once (the search's too)
FIRST = ("jax", "jaxlib")  # an install line's first pins; then the rest by name
LIKE, UNLIKE = "like the ends", "unlike the ends"  # a came-and-went pair's roles
SHAPE_ORDER = {"shrinks": -1, "constant": 0, "grows": 1}
Say = Callable[[str], None]


@dataclass(frozen=True)
class ProgramRun:
    """One run of the program in one release's environment."""

    release: str
    number: int
    output: str          # what it printed (stdout), or its error line where it failed
    exit: int | None     # None: it never ran to an end (an install failed, a timeout)
    installed: dict
    seconds: float = 0.0
    cached: bool = False

    def as_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "cached"}

    @classmethod
    def from_json(cls, d: dict) -> ProgramRun:
        return cls(**d, cached=True)


_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_RAISED = re.compile(r"^(?:[A-Za-z_][\w]*\.)*([A-Za-z_]\w*(?:Error|Exception|Exit|Warning|"
                     r"Interrupt)?)(?::\s*(.*))?$")


MESSAGE_CHARS = 4000  # an error's whole message: its figures may come lines after its quote
_MESSAGE_ENDS = ("-" * 20, "Traceback (most recent", "The above exception",
                 "During handling of the above")


def error_line(stderr: str) -> str:
    """The exception a Python traceback ends with, as the ``error`` metric keeps it: its type
    without the module and its whole message (the lines after it up to jax's note on removed
    frames; XLA and libtpu put an error's figures there), addresses masked; else the last line
    of ``stderr``."""
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    first = starts[-1] + 1 if starts else len(lines)
    for at, line in enumerate(lines[first:], first):
        if line and not line[0].isspace() and (match := _RAISED.match(line.strip())):
            rest = []
            for more in lines[at + 1:]:
                if more.startswith(_MESSAGE_ENDS):
                    break
                rest.append(more.rstrip())
            text = "\n".join([f"{match[1]}: {match[2] or ''}".strip(": "), *rest]).rstrip()
            return _masked(text)[:MESSAGE_CHARS]
    last = next((line.strip() for line in reversed(lines) if line.strip()), "")
    return _masked(last)[:MESSAGE_CHARS]


# A file's path as the machine that ran it holds it (the program's own run folder, an
# environment's site-packages), in a message that quotes its source: its name alone.
_PATH = re.compile(r"(?<![\w.])/(?:[^\s\"'/]+/)+([^\s\"'/]+\.py)\b")


def _masked(text: str) -> str:
    """A message without this machine's addresses and paths (two runs, or two machines, of one
    error print the same)."""
    return _PATH.sub(r"\1", _ADDRESS.sub("0x…", text))


def same_output(metric: str, a: str, b: str) -> bool:
    """Two runs printed the same: an error by its signature (one error however worded)."""
    if metric == "error" and a != b:
        from jaxbisect.search.error_signature import same_error

        return same_error(a, b)
    return a == b


def install_line(installed: dict) -> str:
    """``pip install`` of exactly what an environment held (its record: jax, jaxlib and
    their dependencies), so that a fresh machine gets the same."""
    names = [*(n for n in FIRST if n in installed),
             *sorted(n for n in installed if n not in FIRST and n != "jax_commit")]
    return "pip install " + " ".join(shlex.quote(f"{n}=={installed[n]}") for n in names)


def run_program(lab, release: Release, backend: str, program: Program, number: int, *,
                timeout: float, say: Say) -> ProgramRun:
    """Run ``number`` of ``program`` under ``release``: stored, or made now and stored (a
    timeout, an install that failed: not stored, tried again next time)."""
    version = str(release.version)
    key = Key(version, backend, "program",
              {"program": hashlib.sha256(program.text.encode()).hexdigest(),
               "xla_flags": program.xla_flags, "run": number})
    kept = [True]

    def made() -> ProgramRun:
        try:
            env = lab.environment(release, backend)
        except (InstallFailed, UserError) as exc:
            kept[0] = False
            return ProgramRun(version, number, f"not installed: {exc}", None, {})
        say(f"jax {version}: the standalone program ({FILE}), run {number}")
        try:
            done = run_script(env.python, FILE, program.text, timeout,
                              xla_flags=program.xla_flags,
                              executor=getattr(lab, "executor", LOCAL))
        except HarnessFailed as exc:
            kept[0] = exc.lasting
            return ProgramRun(version, number, str(exc), None, dict(env.installed))
        if done.returncode == 0:
            output = "\n".join(line.rstrip() for line in (done.stdout or "").splitlines()
                               if line.strip())
        else:
            output = crash_of(done.returncode, done.stderr or "") \
                or error_line(done.stderr or "")
        return ProgramRun(version, number, output, done.returncode, dict(env.installed))

    return lab.store.get_or_run(key, made, remeasure=lab.remeasure, keep=lambda _: kept[0],
                                encode=ProgramRun.as_json, decode=ProgramRun.from_json)


_NUMBER = re.compile(r"[-+]?(?:nan|inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", re.IGNORECASE)


def numbers(line: str) -> list[float]:
    """The numbers a printed line holds (``nan`` and ``inf`` included), in order."""
    return [float(x) for x in _NUMBER.findall(line)]


def figures(program: Program, output: str) -> list[float] | None:
    """What the program printed as the bisection's figures: a figure a line (a shape: one a
    value), or an output's values; None where it printed something else."""
    lines = output.splitlines()
    if program.metric == "output":
        return [x for line in lines for x in numbers(line)]
    got = []
    for line in lines:
        _, sep, rest = line.partition(": ")
        found = numbers(rest) if sep else []
        if not found:
            return None
        got.append(found[0])
    return got or None


def _close(a: float, b: float, rtol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= rtol * max(abs(a), abs(b))


def shows(program: Program, direction: Direction | None, old: ProgramRun, new: ProgramRun, *,
          threshold: float | None = None) -> bool:
    """The two runs' outputs differ as the answer says: an error line that changes (and
    appears or goes where the answer's did), values that differ, a figure that moves by more
    than the threshold the answer's way, a shape that changes."""
    metric = program.metric
    if metric == "error":
        return old.output != new.output
    if old.exit != 0 or new.exit != 0:
        return False  # the figure's program raised: it shows nothing of the figure
    a, b = figures(program, old.output), figures(program, new.output)
    if a is None or b is None:
        return False
    if metric == "output":
        from jaxbisect.search.comparing import OUTPUT_TOLERANCE

        rtol = threshold or OUTPUT_TOLERANCE
        if _NUMBER.sub("#", old.output) != _NUMBER.sub("#", new.output):
            return True  # a shape, a dtype or a structure that changed, whatever the values
        return len(a) != len(b) or not all(_close(x, y, rtol) for x, y in zip(a, b))
    if program.over:
        values = program.over[1]
        if len(a) != len(values) or len(b) != len(values):
            return False
        before, after = (relative_shape(program.over[0], list(zip(values, f))) for f in (a, b))
        if "unavailable" in (before["status"], after["status"]):
            return False  # a figure it printed is 0 (a minimal case's, at 2 decimals): no shape
        if shapes_alike([before["status"], before["rate"]], [after["status"], after["rate"]]):
            return False
        order = (SHAPE_ORDER.get(before["status"]), SHAPE_ORDER.get(after["status"]))
        if None in order or order[0] == order[1]:  # both grow: faster is the regression
            order = (abs(before["rate"] or 0), abs(after["rate"] or 0))
        went = (Direction.REGRESSION if order[1] > order[0] else
                Direction.FIX if order[1] < order[0] else None)
        return went is not None and direction in (None, went)
    default = 0.01 if metric == "memory" else 0.10  # classify's thresholds
    t = threshold or default
    if len(a) != 1 or len(b) != 1 or a[0] <= 0 or b[0] <= 0:
        return False
    ratio = b[0] / a[0]
    if direction is None:  # a change inside alike ends: either way
        return ratio > 1 + t or ratio < 1 / (1 + t)
    return ratio > 1 + t if direction == Direction.REGRESSION else ratio < 1 / (1 + t)


def end_part(release: Release, role: str, runs: list[ProgramRun], program: Program) -> dict:
    first = runs[0]
    part = {"jax": str(release.version),
            "jaxlib": first.installed.get("jaxlib") or str(release.jaxlib or ""),
            "role": role, "install": install_line(first.installed) if first.installed else None,
            "installed": dict(first.installed),
            "command": program.command, "output": first.output, "exit": first.exit}
    if any(not same_output(program.metric, first.output, r.output) for r in runs[1:]):
        part["outputs"] = [r.output for r in runs]
    return part


def deterministic_output(metric: str) -> bool:
    """Whether two runs of one release must print the same (a time never does)."""
    return metric in ("memory", "output", "error")


def runs_of(metric: str) -> int:
    """How many times each end runs the program: once for a compiled plan's memory, else
    RUNS."""
    return 1 if metric in ONCE else RUNS


def reproducer(program: Program, ends: list[tuple[Release, str]], backend: str, lab, *,
               direction: Direction | None, timeout: float, say: Say,
               threshold: float | None = None, jobs: int = 1) -> dict:
    """The ``reproducer`` part: ``program`` run ``runs_of`` its metric times at each of
    ``ends`` (release, role), old end first; ``jobs`` runs at once."""
    asked = [(release, k) for release, _ in ends for k in range(1, runs_of(program.metric) + 1)]
    with ThreadPoolExecutor(max(1, min(jobs, len(asked))), thread_name_prefix="program") as pool:
        made = list(pool.map(lambda a: run_program(lab, a[0], backend, program, a[1],
                                                   timeout=timeout, say=say), asked))
    runs = [[run for (release, _), run in zip(asked, made) if release == end]
            for end, _ in ends]
    ran = all(r.exit is not None for made in runs for r in made)
    shows_change = None
    if ran:
        old, new = runs
        if program.metric in ("run_time", "compile_time"):  # each end's quickest run
            old, new = ([min(made, key=lambda r: (figures(program, r.output) or [math.inf])[0])]
                        for made in (old, new))
        shows_change = all(shows(program, direction, a, b, threshold=threshold)
                           for a in old for b in new)
    nondeterministic = None if runs_of(program.metric) == 1 else (
        deterministic_output(program.metric) and any(
            any(not same_output(program.metric, done[0].output, r.output) for r in done[1:])
            for done in ([r for r in made if r.exit is not None] for made in runs) if done))
    return {"file": FILE, "program": program.text, "lines": program.lines,
            "ends": [end_part(release, role, made, program)
                     for (release, role), made in zip(ends, runs)],
            "shows_change": shows_change, "nondeterministic": nondeterministic,
            "why_not": None}


def not_written(why: str, program: Program | None = None) -> dict:
    """No program run: ``why``; a program written all the same (for a GPU the answer was
    compiled for without one) is recorded, as the report shows it, with no end run."""
    return {"file": FILE if program else None, "program": program and program.text,
            "lines": program.lines if program else 0, "ends": [], "shows_change": None,
            "nondeterministic": False, "why_not": why}


def sizes(b, minimal: dict | None = None) -> tuple[dict, tuple]:
    """The parameters and the shape's values the answer used: the minimizer's where it shrank
    the case, else the search's (a shape searched at a smaller size: that size)."""
    q = b.searched  # a shape's values: the search's (scale-free), the minimizer's sizes or not
    if minimal and minimal.get("kept_at_start") and minimal.get("params"):
        return {**b.request.question.params, **minimal["params"]}, q.over
    return dict(q.params), q.over


def reproducer_of(b, lab, say: Say, minimal: dict | None = None, *,
                  jobs: int = 1) -> dict | None:
    """The ``reproducer`` part of a bisection that found its pair, or of a change that came
    and went inside alike ends (None where there is neither): the program written from the
    case and run where the behaviour differs (``jobs`` runs at once), or why there is none."""
    came_and_went = b.search.status == Status.ALIKE and getattr(b, "came_and_went", False)
    if not came_and_went and b.search.status == Status.ALIKE:
        return alike_peak_part(b, lab, say, jobs=jobs)
    if not came_and_went and (b.search.status != Status.FOUND or b.pair is None):
        return None
    q = b.request.question
    why = why_not(q.metric, case=q.case, target=q.target)
    params, over = sizes(b, minimal)
    if why:
        return not_written(why, write_program(q.case, q.metric, params, over,
                                              xla_flags=q.xla_flags, target=q.target)
                           if needs_its_gpu(q.metric, case=q.case, target=q.target) else None)
    program = write_program(q.case, q.metric, params, over, xla_flags=q.xla_flags,
                            target=q.target)
    if came_and_went:
        return came_and_went_part(b, program, lab, say, jobs)
    old_role, new_role = b.pair_roles  # the answer's words for the pair
    old, new = sorted(b.pair, key=lambda r: Version(str(r.version)))
    say(f"the standalone program: {program.lines} lines, run "
        f"{'once' if runs_of(q.metric) == 1 else 'twice'} at jax {old.version} and "
        f"{new.version}")
    return reproducer(program, [(old, old_role), (new, new_role)], b.request.backend, lab,
                      direction=b.direction, timeout=b.timeout, say=say,
                      threshold=b.request.threshold, jobs=jobs)


def came_and_went_part(b, program: Program, lab, say: Say, jobs: int = 1) -> dict:
    """The program where the first change inside alike ends came (``ends``) and where it went
    (``went``): the releases either side of each, no direction (the ends agree)."""
    change = b.interior.changes[0]
    came, went = ([b.candidates[i] for i in pair] for pair in (change.came, change.went))
    say(f"the standalone program: {program.lines} lines, run twice at jax "
        f"{', '.join(str(r.version) for r in [*came, went[1]])}")
    part = reproducer(program, [(came[0], LIKE), (came[1], UNLIKE)], b.request.backend,
                      lab, direction=None, timeout=b.timeout, say=say,
                      threshold=b.request.threshold, jobs=jobs)
    gone = reproducer(program, [(went[0], UNLIKE), (went[1], LIKE)], b.request.backend, lab,
                      direction=None, timeout=b.timeout, say=say,
                      threshold=b.request.threshold, jobs=jobs)
    part["went"] = {k: gone[k] for k in ("ends", "shows_change", "nondeterministic")}
    return part


def end_fallback(b) -> dict | None:
    """Where an end's compiled statistics were empty (0 bytes: jaxlib < 0.4.29 on the CPU),
    what the harness measured there instead: ``{metric, params, reason, values}``."""
    from jaxbisect.search.question import series_of

    if b.sized and b.sized.fallback:  # every release searched by a run's peak (one_quantity)
        return b.sized.fallback
    for index in (0, len(b.candidates) - 1):
        series = series_of(b.full_run(index)) or {}
        if series.get("fallback"):
            return series["fallback"]
    return None


def alike_peak_part(b, lab, say: Say, *, jobs: int = 1) -> dict | None:
    """Alike ends of a memory question where one end has no compiled statistics: the two ends
    hold no figure of one quantity, so the program measures the one both can print, a run's
    peak (at the sizes the harness ran it at, ``RUNTIME_PARAMS``), at both ends
    (``quantity``: what it prints; ``instead_of``: why). None where the ends need no
    such program."""
    q = b.request.question
    if q.metric != "memory" or q.case is None or q.target or not q.over:
        return None
    fallback = end_fallback(b)
    if fallback is None:
        return None
    params = {**b.searched.params, **(fallback.get("params") or {})}
    over = (q.over[0], tuple(fallback.get("values") or q.over[1]))
    program = write_program(q.case, "memory", params, over, xla_flags=q.xla_flags, peak=True)
    first, last = b.candidates[0], b.candidates[-1]
    say(f"the standalone program: {program.lines} lines, a run's peak at jax {first.version} "
        f"and {last.version} (compiled statistics empty at one end)")
    part = reproducer(program, [(first, "first end"), (last, "last end")], b.request.backend,
                      lab, direction=None, timeout=b.timeout, say=say,
                      threshold=b.request.threshold, jobs=jobs)
    runs = [end.get("output") or "" for end in part["ends"]]
    ran = all(end.get("exit") == 0 for end in part["ends"])
    part["shows_change"] = None  # the ends agree: there is no change to show
    part["agrees"] = (None if not ran else
                      not shows(program, None, *(ProgramRun(e["jax"], 1, o, 0, {})
                                                 for e, o in zip(part["ends"], runs))))
    part["quantity"] = "peak"
    part["instead_of"] = fallback.get("reason") or "compiled statistics empty"
    return part
