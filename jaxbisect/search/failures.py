"""A program that fails the same way at every release measured: its error, what causes it
where that is recognisable (too few devices, an attribute jax lacks, an import), and how to
fix the case. Pure: error lines in, a record out.

Such a range has no answer to give: the case never ran, so "no change" would be a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from jaxbisect.search.error_signature import signature, split_type

NO_ERROR = "no error"  # the error metric's figure where the program ran (repro/metrics.py)

# jax's words for a program that needs more devices than the process has (a mesh, pmap,
# shard_map, device_put to a sharding): jax 0.4.2x … 0.10.
_TOO_FEW = re.compile(
    r"[Nn]umber of devices \d+ must|requires \d+ (?:logical )?devices?, but only \d+|"
    r"only \d+ (?:XLA |local )?devices? (?:are|is) available|cannot reshape array of size "
    r"\d+ into shape|[Nn]ot enough devices|devices? \(\d+\) (?:is|are) (?:less|fewer) than")
_ATTRIBUTE = re.compile(r"^AttributeError: module '([\w.]+)' has no attribute '(\w+)'")
_IMPORT = re.compile(r"^(?:ImportError|ModuleNotFoundError): (.*)")


@dataclass(frozen=True)
class EverywhereError:
    error: str               # the error line (type: first line)
    cause: str | None        # too_few_devices | missing_attribute | import_error | None
    fix: str | None          # one line: how to fix the case

    def as_json(self) -> dict:
        return {"error": self.error, "cause": self.cause, "fix": self.fix}


def cause_of(error: str) -> tuple[str | None, str | None]:
    """(cause, fix) of an error line where it is recognised, else (None, None)."""
    if _TOO_FEW.search(error):
        return "too_few_devices", (
            "the program needs more devices than the one CPU device jax starts with: declare "
            "DEVICES = N in the case (or pass --devices N), or set os.environ['XLA_FLAGS'] = "
            "'--xla_force_host_platform_device_count=N' at its top, before jax is imported")
    if match := _ATTRIBUTE.match(error):
        module, name = match.groups()
        return "missing_attribute", (
            f"{module}.{name} is not in these releases: use its name in them (or search a range "
            f"where it exists)")
    if match := _IMPORT.match(error):
        return "import_error", (
            f"the case's import fails in every release's environment ({match.group(1)}): a "
            f"case may import only jax and the standard library (and what jax brings: numpy, "
            f"scipy), by names these releases have")
    return None, None


def everywhere_error(errors: Sequence[str | None]) -> EverywhereError | None:
    """The error every release measured gave (``errors``: one a release, None where it gave a
    figure), where there are two or more and they are one error: one signature
    (error_signature.py), or one recognised cause worded differently by different releases."""
    if len(errors) < 2 or any(e is None or e == NO_ERROR for e in errors):
        return None
    causes = {cause_of(e)[0] for e in errors}
    if len({signature(*split_type(e)) for e in errors}) > 1 and (len(causes) > 1
                                                                or None in causes):
        return None
    last = errors[-1]
    return EverywhereError(last, *cause_of(last))
