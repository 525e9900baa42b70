"""The toolkit's command-line options, declared once.

``OPTIONS`` is the one table of them: each option's flag, how argparse reads it, its help, the
entry points that take it (``bisect``: ``python -m bisect``; ``repro``: ``python -m repro``),
whether it shapes the answer (every command a report suggests carries it) and whether the
harness takes it (a run depends on it: it is part of the stored run's key). The parsers
(:func:`add_options`) and every command line the toolkit writes (:func:`command_line`: the
harness's argv, the report's Reproduce and Next-step lines) are derived from it, so that a
suggested command carries every option that shaped the answer by construction.

Standard library only (no jax): the harness and the driver (``jaxbisect``) both build on it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .case import METRICS, SCAN_CASE, regex_problem
from .target import PLATFORMS, TargetError, built_in
from .target import load as load_target
from .verdict import size_problem

DTYPES = ("float32", "float64", "float16", "bfloat16")

# Options whose value is itself a list of flags ("--xla_foo=true"): argparse would read such
# a value as an option of ours and say "expected one argument".
FLAG_VALUED = ("--xla-flags", "--try-xla-flags")


def glue_flag_values(argv: list[str], options: tuple[str, ...] = FLAG_VALUED) -> list[str]:
    """``--xla-flags VALUE`` becomes ``--xla-flags=VALUE``, whatever VALUE starts with."""
    out: list[str] = []
    words = iter(argv)
    for word in words:
        if word == "--":
            return [*out, word, *words]
        value = next(words, None) if word in options else None
        out += [word] if value is None else [f"{word}={value}"]
    return out


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad input in one line (exit 2), without the usage dump, and
    takes ``--xla-flags "--xla_foo=true"`` as people type it."""

    def error(self, message: str):  # one line, exit 2, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        known = tuple(o for o in FLAG_VALUED if o in self._option_string_actions)
        return super().parse_known_args(glue_flag_values(args, known), namespace)


def _number(kind: type, text: str, fits: Callable, must: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not {'an integer' if kind is int else 'a number'}: {text!r}") from None
    if not fits(value):
        raise argparse.ArgumentTypeError(f"must be {must}, got {text}")
    return value


def positive_int(text: str) -> int:
    return _number(int, text, lambda value: value >= 1, "at least 1")


def seconds(text: str) -> float:
    return _number(float, text, lambda value: value > 0, "more than 0")


def seconds_or_off(text: str) -> float:
    return _number(float, text, lambda value: value >= 0, "0 (off) or more")


def fraction(text: str) -> float:
    return _number(float, text, lambda value: 0 < value < 1,
                   "more than 0 and below 1 (a share of the value)")


def error_regex(text: str) -> str:
    if (problem := regex_problem(text)) is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def n_outer_list(text: str) -> list[int]:
    return [positive_int(part) for part in text.replace(",", " ").split()]


def variant_number(text: str) -> int:
    key = text.lower().lstrip("v")
    if key not in {"0", "1", "2"}:
        raise argparse.ArgumentTypeError(f"unknown variant {text!r} (choose v0, v1 or v2)")
    return int(key)


BISECT, REPRO = "bisect", "repro"  # the entry points: python -m bisect, python -m repro


@dataclass(frozen=True)
class Option:
    """One option of the command line, as argparse reads it (``settings``: its keywords)."""

    flag: str
    help: str | Mapping[str, str]  # one text, or a text an entry point
    entries: tuple[str, ...] = (BISECT, REPRO)
    shapes: bool = False   # the answer depends on it: every command a report suggests has it
    harness: bool = False  # the harness takes it: a stored run depends on it (its key)
    # A folder of this machine's that the answer was read from (a clone): in every command
    # printed here, never in a report (a report is the same from any clone).
    local: bool = False
    group: str = ""        # the help's group, as the entry point names its groups
    settings: Mapping = field(default_factory=dict)
    short: str = ""

    @property
    def dest(self) -> str:
        return self.settings.get("dest") or self.flag[2:].replace("-", "_")

    def help_for(self, entry: str, **fill) -> str | None:
        """The help ``entry`` shows, with the values it names ({targets}, …) filled in."""
        text = self.help.get(entry) if isinstance(self.help, Mapping) else self.help
        return text.format(**{"targets": ", ".join(built_in()), "backends": "auto", **fill}) \
            if text else None

    def words(self, value) -> list[str]:
        """The arguments that give this option ``value`` (one of an append's values)."""
        if isinstance(value, (list, tuple)):  # nargs: each value, a list one comma-joined
            return [self.flag, *(",".join(map(str, v)) if isinstance(v, list) else str(v)
                                 for v in value)]
        if value is True:
            return [self.flag]
        # A flag list ("--xla_foo=true") glued, so that no parser reads it as an option.
        return [f"{self.flag}={value}"] if self.flag in FLAG_VALUED else [self.flag, str(value)]


def _option(flag: str, help, **settings) -> Option:
    fields = {k: settings.pop(k) for k in ("entries", "shapes", "harness", "group", "short",
                                           "local")
              if k in settings}
    return Option(flag, help, settings=settings, **fields)


# The table, in the order every command line is written: what is measured and where (the
# harness's part first), then how the answer is decided, then what only this run uses.
OPTIONS: tuple[Option, ...] = (
    _option("--from", "a jax release with the old behaviour, e.g. 0.4.20", dest="start",
            metavar="RELEASE", entries=(BISECT,), shapes=True),
    _option("--to", "a later jax release, e.g. 0.5.0", dest="end", metavar="RELEASE",
            entries=(BISECT,), shapes=True),
    _option("--explain", "no bisection: which HLO passes, turned off, change the case's metric "
            "under this one release (default: v0's growth), instead of --from/--to",
            metavar="RELEASE", entries=(BISECT,), shapes=True),
    # The driver's backends are its own (jaxbisect/lab/backends/): it fills in their names and
    # checks the one given.
    _option("--backend", "where the probes run: {backends}", metavar="NAME",
            default="auto", entries=(BISECT,), shapes=True),
    _option("--backend", "JAX platform to use (default: whatever JAX picks)",
            choices=tuple(PLATFORMS), default="auto", entries=(REPRO,)),
    _option("--target", {
        BISECT: "bisect XLA's plan for this accelerator, compiled without one: {targets}, or "
                "a GPU spec file (which releases can: docs/targets.md)",
        REPRO: "compile for this accelerator without one: {targets}, or a "
               "GpuTargetConfigProto spec file (GPUs: jax >= 0.4.34 with the CUDA 12 plugin; "
               "the others: jax with the runtime it pins; memory, compile_time or error)"},
            metavar="NAME|FILE", shapes=True, harness=True),
    _option("--case", "a Python file defining case(**params) -> (fn, args) (default: the "
            "report's, repro/cases/scan_growth.py)", metavar="FILE", group="case", shapes=True,
            harness=True),
    _option("--metric", {
        BISECT: "for a case: memory, compile_time, run_time, peak_memory, output or error "
                "(default: the case's METRIC, else memory); for a command: the numeric field "
                "of its JSON to compare, or error (default: its exit status, exit_code)"},
            metavar="NAME", entries=(BISECT,), group="case", shapes=True),
    _option("--error-match", "--metric error: a regular expression (Python's re.search) for "
            "the error meant; a run is then \"the error\" or \"not the error\" (as "
            "cargo-bisect-rustc's --regress), whatever else it says (default: the case's ERROR; "
            "without either, errors are compared by their signature: type, status, words and "
            "figures)", type=error_regex, metavar="REGEX", entries=(BISECT,), group="case",
            shapes=True),
    _option("--metric", "what to measure (default: the case's METRIC, else memory)",
            choices=METRICS, entries=(REPRO,), group="case", harness=True),
    _option("--param", "override a parameter of case() (repeatable)", action="append",
            default=[], metavar="NAME=VALUE", group="case", shapes=True, harness=True),
    _option("--over", {
        BISECT: "bisect by the shape of the metric over these values of a parameter "
                "(constant, grows, ...; default: the case's OVER; none: one figure)",
        REPRO: "measure the metric at each of these values of a parameter and classify the "
               "series' shape (default: the case's OVER; none: one figure)"},
            metavar="NAME=V1,V2,...", group="case", shapes=True, harness=True),
    _option("--xla-flags", {
        BISECT: "XLA_FLAGS for every probe; the report says which were in force",
        REPRO: "extra XLA_FLAGS, e.g. '--xla_cpu_enable_fast_math=false'"},
            default="", metavar="FLAGS", shapes=True, harness=True),
    _option("--devices", "devices the program needs: CPU host devices (jax starts one; what "
            "--xla_force_host_platform_device_count=N in XLA_FLAGS gives a script), or under a "
            "TPU target the chips of the smallest slice that has them (default: the case's "
            "DEVICES, else what the case itself sets)", type=positive_int,
            metavar="N", group="case", shapes=True, harness=True),
    _option("--samples", {
        BISECT: "samples a harness run takes of a noisy metric (default 5)",
        REPRO: "samples of a noisy metric (run_time: calls, at least; compile_time: "
               "compiles; peak_memory: fresh processes)"},
            type=positive_int, metavar="N", group="case", shapes=True, harness=True),
    _option("--metric-kind", "auto: times and peaks are noisy, a command's field too",
            choices=("auto", "deterministic", "noisy"), default="auto", entries=(BISECT,),
            group="case", shapes=True),
    _option("--threshold", "ends closer than this share of their value mean no change "
            "(default 0.01 for deterministic metrics, 0.10 for noisy ones; output: the "
            "relative tolerance, default 1e-5)", type=fraction, metavar="FRACTION",
            entries=(BISECT,), group="case", shapes=True),
    _option("--runs", "a noisy metric: pairs of the ends (rounds of a release) before the "
            "sequential test first looks (default 4 pairs, 3 rounds); each run is one figure",
            type=positive_int, metavar="N", entries=(BISECT,), group="case", shapes=True),
    _option("--max-runs", "a noisy metric: pairs of the ends, and rounds of each release "
            "beside both ends, at most before the answer is undecided or the release a skip "
            "(default 10)", type=positive_int, metavar="N", entries=(BISECT,), group="case",
            shapes=True),
    _option("--include-yanked", "measure the yanked releases inside the range as candidates "
            "too (every report names them either way)", action="store_true",
            entries=(BISECT,), shapes=True),
    _option("--try-xla-flags", "after a change is found, measure the first new release with "
            "these XLA_FLAGS too and report whether they bring the old behaviour back "
            "(repeatable)", action="append", default=[], metavar="FLAGS", entries=(BISECT,),
            shapes=True),
    _option("--commits", "once the pair of releases is found, bisect jax's commits between "
            "them, each as jax's Python on the older release's environment: the first bad "
            "commit, or that the change came with the newer jaxlib (reads --jax-repo, else a "
            "clone kept in the cache, made once from GitHub: about 300 MB)",
            action="store_true", entries=(BISECT,), shapes=True),
    _option("--minimize", "once the change is found, shrink the case's integer parameters "
            "(the scan case's n_outer, n_inner and n_res) while the two releases still behave "
            "apart: the minimal reproducer", action="store_true", entries=(BISECT,),
            group="case", shapes=True),
    _option("--minimize-budget", "the most --minimize may spend measuring (default 600)",
            type=seconds, default=600.0, metavar="SECONDS", entries=(BISECT,), group="case"),
    # The scan case's own words: spellings of its --over n_outer=… and --param NAME=VALUE.
    _option("--n-outer", {
        BISECT: "the scan case's --over n_outer=…: outer loop counts the verdict is fitted "
                "over, two distinct values of 2 or more at least (default: 1 2 5 10 15)",
        REPRO: "--over n_outer=…: outer loop counts, e.g. 1 2 5 10 15 or 1,2,5 (default: the "
               "report's)"}, type=n_outer_list, nargs="+", metavar="N", group="scan"),
    _option("--n-inner", "--param n_inner=N: the inner scan's length (default 100, the "
            "report's)", type=positive_int, metavar="N", group="scan"),
    _option("--n-res", "--param n_res=N: the array is n_res³ values (default 200, the "
            "report's)", type=positive_int, metavar="N", group="scan"),
    _option("--dtype", "--param dtype=NAME: the array's element type (default float32)",
            choices=DTYPES, group="scan"),
    _option("--variants", "--param variant=V, the others measured beside it: v0 v1 v2 "
            "(default: all three)", type=variant_number, nargs="+", metavar="V",
            entries=(REPRO,), group="scan"),
    _option("--mode", "compiled: memory_analysis() of the plan (default); runtime: real peak "
            "of each program in a fresh process (--metric peak_memory --samples 1)",
            choices=("compiled", "runtime"), entries=(REPRO,), group="scan"),
    _option("--v2-up-to", "measure v2 only at n_outer <= N (v2 unrolls 100 x n_outer ops: "
            "minutes a case for a GPU target; default 1 with --target, all otherwise)",
            type=positive_int, metavar="N", entries=(REPRO,), group="scan"),
    _option("--write-target-spec", "on a machine with a GPU: write its target spec to FILE "
            "(for --target) and exit", type=Path, metavar="FILE", entries=(REPRO,), group="scan"),
    _option("--hlo-out", "also write the lowered module and XLA's optimized HLO there",
            type=Path, metavar="DIR", entries=(REPRO,), group="case"),
    _option("--compare", "also measure the case's COMPARE programs beside it, over the same "
            "values (a table: a row a program)", action="store_true", entries=(REPRO,),
            harness=True, group="case"),
    _option("--sizes-from", "memory: auto: memory_analysis(), XLA's buffer-assignment dump "
            "where it answers None; dump: always the dump (to check that both agree)",
            choices=("auto", "dump"), default="auto", entries=(REPRO,)),
    _option("--pass-dumps", "also have XLA dump the module after every HLO pass that changes "
            "it there", type=Path, metavar="DIR", entries=(REPRO,),
            group="case"),
    _option("--timeout", "per run (default: from the ends' own times, see --explain-budget's "
            "group)", type=seconds, metavar="SECONDS", entries=(BISECT,)),
    _option("--reports", "where the markdown report and its JSON go (default: reports/)",
            type=Path, default=Path("reports"), metavar="DIR", entries=(BISECT,)),
    _option("--jax-repo", "a local clone of jax: the commits --commits searches, and the "
            "XLA commits each release pins (an XLA compare link); it needs jax's jax-v* tags "
            "(without it, --commits clones jax from GitHub into the cache once, about 300 MB)",
            type=Path, metavar="PATH", entries=(BISECT,), local=True),
    _option("--xla-repo", "a local clone of openxla/xla: list the commits between the two "
            "releases' XLA pins that touch the culprit flag or pass", type=Path, metavar="PATH",
            entries=(BISECT,), local=True),
    _option("--jobs", "probe up to N releases at once, splitting the window into N+1 parts, "
            "and once the answer is found run up to N processes of its evidence at once "
            "(default here: {jobs} probes and {cores} processes, from the cores and memory; 1 "
            "for a timing metric, whose runs would load each other)", type=positive_int,
            metavar="N", entries=(BISECT,)),
    _option("--hlo-releases", "below jaxlib, which jaxlibs compile the HLO module alone: pair "
            "(the last good and first bad, and releases already measured; the default), "
            "installed (every release of the range whose environment exists), or releases "
            "of the range, comma-separated", default="pair", metavar="WHICH",
            entries=(BISECT,)),
    _option("--remeasure", "measure every probe again instead of reusing stored results",
            action="store_true", entries=(BISECT,)),
    _option("--no-evidence", "skip the JAX-or-XLA attribution and the buffer evidence",
            action="store_true", entries=(BISECT,)),
    _option("--refresh-catalogue", "fetch the release catalogue from PyPI now, however fresh "
            "the cached one", action="store_true", entries=(BISECT,)),
    _option("--explain-budget", "the most the explanation (XLA flags, then HLO passes) may "
            "spend measuring; what is left is reported as not tested (default {budget:.0f})",
            type=seconds, metavar="SECONDS", entries=(BISECT,), group="limits"),
    _option("--interior-budget", "where the ends agree, the most measuring the releases "
            "inside may take, estimated from the ends' own run times (default {interior:.0f}); "
            "over it (or at 0: off), the report gives the sweep's command instead",
            type=seconds_or_off,
            metavar="SECONDS", entries=(BISECT,), group="limits", shapes=True),
    _option("--json", "print one JSON document", action="store_true", group="output"),
    _option("--render", "no run: rewrite the markdown report beside FILE (a report's JSON "
            "document) with this toolkit's renderer", metavar="FILE", entries=(BISECT,),
            group="output"),
    _option("--check", "git bisect run's codes: exit 0 when the figure (or the shape) is "
            "nearer OLD, 1 when nearer NEW (a ratio for positive figures), 125 when it cannot "
            "be measured; for --metric error, OLD and NEW are messages; alone, a shape's "
            "'constant grows' (v0 constant / v0 grows)", nargs="*", metavar="OLD NEW",
            entries=(REPRO,), group="output"),
    _option("--quiet", "no progress lines on stderr", action="store_true", entries=(REPRO,),
            short="-q"),
)


def options_of(entry: str) -> tuple[Option, ...]:
    return tuple(o for o in OPTIONS if entry in o.entries)


def add_options(parser: argparse.ArgumentParser, entry: str,
                groups: Mapping[str, tuple[str, str | None]] = {}, exclusive: tuple = (),
                only: tuple[str, ...] | None = None, **fill) -> None:
    """``entry``'s options of the table (``only`` these flags, if given) on ``parser``; an
    option of a group named in ``groups`` (name -> title, description) goes under it, one of
    a group in ``exclusive`` into a mutually exclusive group; ``fill``: the values help texts
    name ({targets}…)."""
    made: dict = {}
    for option in options_of(entry):
        if only is not None and option.flag not in only:
            continue
        if option.group not in made:
            made[option.group] = (
                parser.add_mutually_exclusive_group() if option.group in exclusive else
                parser.add_argument_group(*groups[option.group]) if option.group in groups
                else parser)
        made[option.group].add_argument(*((option.short,) if option.short else ()), option.flag,
                                        help=option.help_for(entry, **fill), **option.settings)


def command_line(entry: str, values: Mapping[str, object],
                 keep: Callable[[Option], bool] = lambda option: True) -> list[str]:
    """The arguments that give ``entry``'s parser ``values`` (by dest), in the table's order;
    an option absent, None, "" or at its default is left out, as is one ``keep`` refuses."""
    argv: list[str] = []
    for option in options_of(entry):
        value = values.get(option.dest)
        if value is None or value == "" or not keep(option) or (
                value == option.settings.get("default") and option.settings.get("nargs") != "*"):
            continue
        if option.settings.get("action") == "append":
            argv += [word for one in value for word in option.words(one)]
        elif value is not False and (value != [] or option.settings.get("nargs") == "*"):
            argv += option.words(value)
    return argv


SIZES = ("n_inner", "n_res", "dtype")  # the scan case's parameters that have their own option


def read_sizes(p: argparse.ArgumentParser, args: argparse.Namespace) -> list[int]:
    """The scan case's words as the case's own options: ``--n-outer`` as ``--over
    n_outer=…``, ``--n-inner/--n-res/--dtype`` as ``--param``s (before the user's own); for
    the scan case, a size too big to compile anywhere is the parser's one-line error, not a
    failure after a compile. The n_outer values asked, sorted (none: [])."""
    n_outer = sorted({n for values in args.n_outer or () for n in values})
    if n_outer:
        if args.over is not None:
            p.error("--n-outer is --over n_outer=…: give one of them")
        args.over = "n_outer=" + ",".join(map(str, n_outer))
    args.param = [*(f"{name}={getattr(args, name)}" for name in SIZES
                    if getattr(args, name) is not None), *args.param]
    if args.case is not None and Path(args.case).resolve() == SCAN_CASE:
        too_big = size_problem(max(n_outer or [15]), args.n_inner or 100, args.n_res or 200,
                               args.dtype or "float32")
        if too_big:
            p.error(too_big)
    return n_outer


def target_argument(p: argparse.ArgumentParser, text: str, backend: str):
    """``--target NAME|FILE`` loaded as a Target (repro/target.py); a backend of another
    platform than the target's, or a target that cannot be used, is the parser's one-line
    error."""
    try:
        target = load_target(text)
    except TargetError as exc:
        p.error(str(exc))
    if PLATFORMS[backend] not in (None, target.platform):
        p.error(f"--target {target.name} compiles for {target.description}; --backend "
                f"{backend} contradicts it")
    return target
