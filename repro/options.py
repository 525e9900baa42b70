"""Command-line pieces every parser of the toolkit shares: argument types, the one-line
parser, and the one group of size options (``--n-outer/--n-inner/--n-res/--dtype``).

Standard library only (no jax): the harness's command lines and the driver's
(``jaxbisect``) both build on it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping

DTYPES = ("float32", "float64", "float16", "bfloat16")

# Options whose value is itself a list of flags ("--xla_foo=true"): argparse would read such
# a value as an option of ours and say "expected one argument".
FLAG_VALUED = ("--xla-flags", "--try-xla-flags")


def glue_flag_values(argv: list[str], options: tuple[str, ...] = FLAG_VALUED) -> list[str]:
    """``--xla-flags VALUE`` becomes ``--xla-flags=VALUE``, whatever VALUE starts with."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--":
            return out + argv[i:]
        if argv[i] in options and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
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


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def n_outer_list(text: str) -> list[int]:
    return [positive_int(part) for part in text.replace(",", " ").split()]


def variant_number(text: str) -> int:
    key = text.lower().lstrip("v")
    if key not in {"0", "1", "2"}:
        raise argparse.ArgumentTypeError(f"unknown variant {text!r} (choose v0, v1 or v2)")
    return int(key)


def add_size_options(group, *, n_outer=None, n_outer_type: Callable = positive_int,
                     many: bool = False, n_inner: int = 100, n_res: int = 200,
                     dtype: str = "float32", helps: Mapping[str, str] | None = None) -> None:
    """``--n-outer``, ``--n-inner``, ``--n-res`` and ``--dtype`` on ``group`` (a parser or an
    argument group): the size of the report's program, declared once for every parser.

    ``many``: ``--n-outer`` takes several values (``nargs="+"``); ``n_outer_type``
    :func:`n_outer_list` also reads ``1,2,5`` (each value then parses to a list); ``helps``:
    each option's help by its dest (``n_outer``, ``n_inner``, ``n_res``, ``dtype``)."""
    helps = dict(helps or {})
    many_args = {"nargs": "+", "metavar": "N"} if many else {}
    group.add_argument("--n-outer", type=n_outer_type, default=n_outer,
                       help=helps.get("n_outer"), **many_args)
    group.add_argument("--n-inner", type=positive_int, default=n_inner,
                       help=helps.get("n_inner"))
    group.add_argument("--n-res", type=positive_int, default=n_res, help=helps.get("n_res"))
    group.add_argument("--dtype", choices=DTYPES, default=dtype, help=helps.get("dtype"))


def target_argument(p: argparse.ArgumentParser, text: str, backend: str):
    """``--target NAME|FILE`` loaded as a Target; a backend that is not CUDA, or a spec that
    cannot be used, is the parser's one-line error."""
    from . import target as targets
    from .process import PLATFORMS

    if PLATFORMS[backend] not in (None, "cuda"):
        p.error(f"--target compiles for a CUDA GPU; --backend {backend} contradicts it")
    try:
        return targets.load(text)
    except targets.TargetError as exc:
        p.error(str(exc))
