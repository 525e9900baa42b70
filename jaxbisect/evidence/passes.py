"""Which HLO passes matter: the passes that ran, whether turning one off helps, where two
releases' modules first part.

Pure logic on what ``python -m repro.xla_passes`` reports: the per-pass dumps XLA writes with
``--xla_dump_hlo_pass_re=.*`` (``module_N.jit_outer_loop.SSSS.<pipeline>.after_<pass>
.before_<next>.txt``, one after each pass that changed the module).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from jaxbisect.evidence.where import normalize_optimized

# Passes a correct program depends on (buffers that must not alias, layouts the code generator
# needs, calls it cannot emit): turning one off may hide the growth, but only as a diagnosis.
DIAGNOSTIC_ONLY = frozenset({
    "copy-insertion", "layout-assignment", "flatten-call-graph", "sharding-remover",
    "sub-byte-size-setter", "call-inliner", "cpu-layout-assignment", "gpu-layout-assignment",
    "add-original-value", "hlo-verifier", "while-loop-trip-count-annotator",
})
_PSEUDO = {"pipeline-start", "pipeline-end"}
_DUMP_NAME = re.compile(r"^module_\d+\.(?P<module>[\w\-]+)\.(?P<order>\d{4})\."
                        r"(?P<rest>.+)\.txt$")


@dataclass(frozen=True)
class PassDump:
    order: int
    pipeline: str
    after: str             # the pass that changed the module (pipeline-start: the input)
    before: str | None     # the pass that runs next (None: a pass's own stage dump)


def parse_dump_name(name: str) -> PassDump | None:
    """``module_0001.jit_outer_loop.0004.HLO_passes_through_layout_assignment.after_call-
    inliner.before_batch-dot-simplification.txt`` -> its pipeline and passes."""
    m = _DUMP_NAME.match(name)
    if not m:
        return None
    rest = m.group("rest")
    pipeline, sep, tail = rest.partition(".after_")
    if not sep:
        return None
    after, sep, before = tail.partition(".before_")
    return PassDump(int(m.group("order")), pipeline, after, before if sep else None)


def passes_that_changed(names: list[str]) -> list[str]:
    """The passes that changed the module, in the order they first did: the ones whose
    removal can change anything."""
    out: list[str] = []
    for dump in filter(None, map(parse_dump_name, names)):
        if dump.before is not None and dump.after not in _PSEUDO and dump.after not in out:
            out.append(dump.after)
    return out


def is_safe(pass_name: str) -> bool:
    """Whether correctness does not depend on the pass, so that turning it off may be offered
    as a workaround where it was measured running (never for DIAGNOSTIC_ONLY)."""
    return pass_name not in DIAGNOSTIC_ONLY


def setting_kind(xla_flags: str, safe: bool = True, compiled_only: bool = False) -> str:
    """What a setting that brings the other release's behaviour back is, in a maintainer's
    words: "workaround" where it keeps results right and is a user's option where it was
    measured: a flag set back to its old value, or a pass correctness does not depend on
    (``safe``) turned off on the backend the program ran on; "diagnostic" for a pass
    correctness depends on, and for a pass turned off on a target compiled without it
    (``compiled_only``: the plan changed, nothing ran there): it shows where the change is."""
    if not safe or (compiled_only and "xla_disable_hlo_passes" in xla_flags):
        return "diagnostic"
    return "workaround"


SETTING_WORDS = {
    "workaround": "a user's setting that brings the other release's behaviour back: a flag "
                  "set to its old default, or turning off a pass that XLA's results do not "
                  "depend on",
    "diagnostic": "it shows where the change is, it is not a fix",
}


def first_difference(old: list[dict], new: list[dict], context: int = 1,
                     max_lines: int = 40) -> dict:
    """Walk two releases' per-pass dumps (``{"file", "text"}``) in order, paired by pipeline
    and pass; the first pass after which the modules differ. Where the releases run different
    passes (a pass added, renamed or moved), the modules are compared after that stretch: the
    difference is named there only if they differ by then, so new passes that change nothing
    between them do not hide where the programs part. ``{"status": "same"|"differ", "pass",
    "pipeline", "how", "diff", "old_passes", "new_passes", ...}``; ``old_passes`` and
    ``new_passes``: ``(pipeline, pass)`` pairs only one release ran in that stretch."""
    def keyed(dumps):
        return [((parsed.pipeline, parsed.after), d) for d in dumps
                if (parsed := parse_dump_name(d["file"]))]

    def differ(where, last_a, last_b, how, old_passes=(), new_passes=()):
        la, lb = (last_a[1] if last_a else []), (last_b[1] if last_b else [])
        diff = list(difflib.unified_diff(la, lb, "old", "new", n=context, lineterm=""))
        return {"status": "differ", "pipeline": where[0], "pass": where[1],
                "old_file": last_a[0]["file"] if last_a else None,
                "new_file": last_b[0]["file"] if last_b else None,
                "how": how, "old_passes": [list(p) for p in old_passes],
                "new_passes": [list(p) for p in new_passes],
                "diff": diff[:max_lines], "diff_truncated": len(diff) > max_lines}

    a, b = keyed(old), keyed(new)
    matcher = difflib.SequenceMatcher(None, [k for k, _ in a], [k for k, _ in b],
                                      autojunk=False)
    last_a = last_b = None  # the module of each release so far: (dump, normalized lines)
    old_run: list = []      # passes only one release ran since the modules were last compared
    new_run: list = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for (key, da), (_, db) in zip(a[i1:i2], b[j1:j2]):
                last_a, last_b = (da, normalized(da["text"])), (db, normalized(db["text"]))
                if last_a[1] != last_b[1]:
                    return differ(key, last_a, last_b, "the module differs")
                old_run, new_run = [], []
            continue
        if i2 > i1:
            last_a = (a[i2 - 1][1], normalized(a[i2 - 1][1]["text"]))
        if j2 > j1:
            last_b = (b[j2 - 1][1], normalized(b[j2 - 1][1]["text"]))
        old_run += _changed_only_here(a[i1:i2], b[j1:j2])
        new_run += _changed_only_here(b[j1:j2], a[i1:i2])
        if last_a is None or last_b is None:
            continue  # one release has no module yet: compare once both have
        if last_a[1] == last_b[1]:
            old_run, new_run = [], []
            continue  # different passes, the same module after them
        where = (new_run or old_run or [_first_pass(a[i1:i2] + b[j1:j2])])[0]
        how = ("the releases run different passes here and the module differs after them"
               if old_run or new_run else
               "both releases run these passes, in another order, and the module differs "
               "after them")
        return differ(where, last_a, last_b, how, old_run, new_run)
    if (last_a is None) != (last_b is None):
        where = (new_run or old_run or [_first_pass(a + b)])[0]
        return differ(where, last_a, last_b, "only one release's module was dumped",
                      old_run, new_run)
    return {"status": "same", "pipeline": None, "pass": None, "old_file": None,
            "new_file": None, "how": "the module is the same after every pass", "diff": [],
            "old_passes": [], "new_passes": [], "diff_truncated": False}


def normalized(text: str) -> list[str]:
    """A per-pass dump as the attribution compares modules, without ``backend_config``:
    printers differ on whether they show it (0.5.1's short form leaves it out)."""
    return normalize_optimized(text, backend_config=False)


def _changed_only_here(stretch: list, other: list) -> list[tuple[str, str]]:
    """``(pipeline, pass)`` of the passes that changed the module in ``stretch`` and nowhere
    in ``other``, in order."""
    theirs = {key[1] for key, _ in other}
    out: list[tuple[str, str]] = []
    for key, _ in stretch:
        if key[1] not in _PSEUDO and key[1] not in theirs and key not in out:
            out.append(key)
    return out


def _first_pass(stretch: list) -> tuple[str, str]:
    """The first real pass of a stretch (its first dump's, if it holds only pipeline starts)."""
    return next((key for key, _ in stretch if key[1] not in _PSEUDO), stretch[0][0])
