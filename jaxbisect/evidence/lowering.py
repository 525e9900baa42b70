"""Where: the lowered modules of two releases, compared once what always differs is gone.

Identical modules put a change in the XLA compiler inside jaxlib; different ones in JAX's
lowering.
"""

from __future__ import annotations

import difflib
import re

from jaxbisect.evidence.common import QUOTED, balanced_end, shortened, split_top_level

MAX_DIFF_LINES = 60

_LOC_DEFINITION = re.compile(r"^\s*#loc\d*\s*=")
_LOC_START = re.compile(r"(?<![\w.@#%$])loc\(")
_ATTR_DICT = re.compile(r'\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}')
_ATTR_ENTRY = re.compile(r'^\s*([\w.$]+)\s*=\s*(.*?)\s*$', re.DOTALL)
_SSA = re.compile(r"%[\w$.\-]+")
_SSA_DEFINED = re.compile(r"(?::\d+)?\s*=(?!=)|:\s")  # `%x =`, `%x:2 =`, `%arg0: tensor`
_PRIVATE_FUNC = re.compile(r"func\.func\s+private\s+@([\w$.\-]+)")
_MODULE_NAME = re.compile(r"^(\s*module\s+)@[\w$.\-]+")
_EMPTIED = "\x00"

# Attributes whose value differs between releases for the same program and never reaches the
# compiled code. Each entry: attribute -> the values that are noise (None: any value).
NOISE_ATTRIBUTES: dict[str, frozenset[str] | None] = {
    # The pytree path of each result, for error messages and export; "" became "result".
    "jax.result_info": None,
    "jax.arg_info": None,
    # Older releases spell out that a one-device argument is replicated; newer ones omit it.
    # Any other sharding changes the partitioning and is kept.
    "mhlo.sharding": frozenset({'"{replicated}"'}),
    # Some releases print the default layout explicitly; a non-default layout is kept.
    "mhlo.layout_mode": frozenset({'"default"'}),
}
# Kept on purpose: mhlo.num_partitions / mhlo.num_replicas (they change what XLA compiles),
# mhlo.frontend_attributes (they carry compiler hints such as host offloading), donation.


def _outside_quotes(line: str, edit) -> str:
    """Apply ``edit`` to the parts of ``line`` outside string literals."""
    out, last = [], 0
    for match in QUOTED.finditer(line):
        out.append(edit(line[last:match.start()]))
        out.append(match.group())
        last = match.end()
    out.append(edit(line[last:]))
    return "".join(out)


def _strip_locations(line: str) -> str:
    """Remove every ``loc(...)`` (balanced, quotes respected): source locations differ with
    the path the program was run from and with JAX's traceback filtering."""
    while (match := _LOC_START.search(line)) is not None:
        line = line[:match.start()].rstrip() + line[balanced_end(line, match.end() - 1):]
    return line


def _drop_noise_attributes(line: str) -> str:
    def clean(match: re.Match) -> str:
        entries = split_top_level(match.group(1))
        parsed = [_ATTR_ENTRY.match(entry) for entry in entries]
        if not all(parsed):  # not an attribute dictionary (a region, a dense literal, ...)
            return match.group()
        kept = [entry.strip() for entry, m in zip(entries, parsed)
                if not (m.group(1) in NOISE_ATTRIBUTES
                        and (NOISE_ATTRIBUTES[m.group(1)] is None
                             or m.group(2) in NOISE_ATTRIBUTES[m.group(1)]))]
        return "{" + ", ".join(kept) + "}" if kept else _EMPTIED

    line = _ATTR_DICT.sub(clean, line)
    return re.sub(r"\s*" + _EMPTIED, "", line)  # a dictionary left empty goes altogether


def _renumber_values(lines: list[str]) -> list[str]:
    """SSA names (``%0``, ``%cst_3``, ``%iterArg_8``) -> ``%v<N>`` in order of definition.

    Printers name values differently across releases (``%0`` became ``%cst``/``%c``, region
    values restart their numbering), but the program is the same whenever the definitions come
    in the same order and every use refers to the same definition. Sibling regions may reuse a
    name, so a use refers to the latest definition of its name.
    """
    current: dict[str, str] = {}
    counter = 0

    def rename(match: re.Match) -> str:
        nonlocal counter
        name = match.group()
        if _SSA_DEFINED.match(match.string, match.end()) or name not in current:
            current[name] = f"%v{counter}"
            counter += 1
        return current[name]

    return [_outside_quotes(line, lambda part: _SSA.sub(rename, part)) for line in lines]


def _rename_private_functions(text: str) -> str:
    """Private functions get their names from Python objects and counters (``@None_0``,
    ``@closed_call_5``) that vary by release; rename them in order of definition."""
    names = {name: f"@private_{i}" for i, name in enumerate(dict.fromkeys(
        _PRIVATE_FUNC.findall(text)))}
    if not names:
        return text
    return re.sub(r"@([\w$.\-]+)", lambda m: names.get(m.group(1), m.group()), text)


def normalize_lowered(text: str) -> str:
    """The lowered module without what differs between releases for the same program:
    source locations, the module's name, private function names, SSA value names, the
    attributes in ``NOISE_ATTRIBUTES`` and whitespace. Everything that reaches XLA stays."""
    lines = []
    for raw in text.splitlines():
        if _LOC_DEFINITION.match(raw):
            continue
        line = _strip_locations(raw)
        line = _drop_noise_attributes(line)
        line = _MODULE_NAME.sub(r"\1@module", line)
        # Printers changed spacing (`compare  LT,` -> `compare LT,`); strings keep theirs.
        line = _outside_quotes(line, lambda part: re.sub(r"\s+", " ", part)).strip()
        if line:
            lines.append(line)
    return "\n".join(_renumber_values(_rename_private_functions("\n".join(lines)).splitlines()))


def meaningful_diff(old: list[str], new: list[str], context: int = 1) -> list[str]:
    """A unified diff of normalised modules, aligned with value names masked, each side
    numbered as it is: context lines are the new module's.

    One inserted definition renumbers every later ``%vN``; aligning on lines with the names
    masked keeps those renumbered-but-equal lines out of the diff. A masked-equal line whose
    values are not the aligned ones (``return %v18`` where the new module returns the
    inserted ``%v19``) is a change and shows as one. When the modules differ only in how
    values connect, the masked lines are all equal: then a plain diff.
    """
    masked_old = [_SSA.sub("%_", line) for line in old]
    masked_new = [_SSA.sub("%_", line) for line in new]
    matcher = difflib.SequenceMatcher(None, masked_old, masked_new, autojunk=False)
    if matcher.ratio() == 1.0:
        return list(difflib.unified_diff(old, new, "old", "new", n=context, lineterm=""))
    codes = _values_checked(matcher.get_opcodes(), old, new)
    matcher.get_opcodes = lambda: codes  # grouped below as difflib groups its own
    out = ["--- old", "+++ new"]
    for group in matcher.get_grouped_opcodes(context):
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        out.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in new[b1:b2]]
                continue
            out += ["-" + line for line in old[a1:a2]]
            out += ["+" + line for line in new[b1:b2]]
    return out


def _values_checked(codes: list[tuple], old: list[str], new: list[str]) -> list[tuple]:
    """Split each equal run where an aligned line's values are not the aligned ones: the
    first appearance of an old value pairs it with the new value in its place; a later one
    that meets another new value (or a new value already paired) is a changed line."""
    pairs: dict[str, str] = {}
    taken: set[str] = set()

    def same_values(a: str, b: str) -> bool:
        ok = True
        for x, y in zip(_SSA.findall(a), _SSA.findall(b)):
            if x in pairs:
                ok = ok and pairs[x] == y
            elif y in taken:
                ok = False
            else:
                pairs[x] = y
                taken.add(y)
        return ok

    out: list[tuple] = []
    for tag, a1, a2, b1, b2 in codes:
        if tag != "equal":
            out.append((tag, a1, a2, b1, b2))
            continue
        for k in range(a2 - a1):
            kind = "equal" if same_values(old[a1 + k], new[b1 + k]) else "replace"
            last = out[-1] if out else None
            if last and last[0] == kind and last[2] == a1 + k and last[4] == b1 + k:
                out[-1] = (kind, last[1], a1 + k + 1, last[3], b1 + k + 1)
            else:
                out.append((kind, a1 + k, a1 + k + 1, b1 + k, b1 + k + 1))
    return out


def compare_lowering(old_text: str | None, new_text: str | None) -> dict:
    """identical / changed / unknown, and the meaningful diff (normalised, trimmed)."""
    same = {"lowering": "identical", "diff": [], "diff_truncated": False, "added": 0,
            "removed": 0, "reason": None}
    if not old_text or not new_text:
        return {**same, "lowering": "unknown", "reason": "no lowered module from " + " and ".join(
            side for side, t in (("the old release", old_text), ("the new release", new_text))
            if not t)}
    old, new = normalize_lowered(old_text), normalize_lowered(new_text)
    if old == new:
        return same
    diff = meaningful_diff(old.splitlines(), new.splitlines())
    return {**same, "lowering": "changed", "diff": shortened(diff, MAX_DIFF_LINES),
            "diff_truncated": len(diff) > MAX_DIFF_LINES,
            "added": sum(d.startswith("+") and not d.startswith("+++") for d in diff),
            "removed": sum(d.startswith("-") and not d.startswith("---") for d in diff)}

