"""Pieces the evidence modules share: sizes and the shapes of XLA's text."""

from __future__ import annotations

import re
from collections.abc import Sequence

MB = 1024**2
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_ARRAY_SHAPE = re.compile(r"^([a-zA-Z]\w*)\[([^\]]*)\]")
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
MAX_LINE_CHARS = 280  # most HLO instructions whole: a cut hides operands


def balanced_end(text: str, start: int) -> int:
    """The index just past the bracket group that opens at ``text[start]`` (quoted strings
    skipped); the text's end where it never closes."""
    depth, i = 0, start
    while i < len(text):
        if text[i] == '"':
            quoted = QUOTED.match(text, i)
            i = quoted.end() if quoted else len(text)
            continue
        depth += (text[i] in "([{") - (text[i] in ")]}")
        i += 1
        if depth == 0:
            return i
    return len(text)


def shortened(lines: Sequence[str], most: int) -> list[str]:
    """At most ``most`` of ``lines``, each cut to about ``MAX_LINE_CHARS`` at a token's end."""
    return [line if len(line) <= MAX_LINE_CHARS else
            line[:max(1, token_start(line, MAX_LINE_CHARS - 1))] + "…" for line in lines[:most]]


# A token of HLO or StableHLO text: a name (get-tuple-element.#27, fused_computation.14), a
# number, a word; a line is cut between two of them, never inside one.
_TOKEN = re.compile(r"[\w.#$-]")
ELLIPSIS = "…"


def _inside(text: str, i: int) -> bool:
    """Whether ``i`` falls inside a token of ``text`` (between two of its characters)."""
    return 0 < i < len(text) and bool(_TOKEN.match(text[i - 1]) and _TOKEN.match(text[i]))


def token_start(text: str, i: int) -> int:
    """``i``, or the start of the token it falls inside."""
    i = max(0, min(i, len(text)))
    while _inside(text, i):
        i -= 1
    return i


def token_end(text: str, i: int) -> int:
    """``i``, or the end of the token it falls inside."""
    i = max(0, min(i, len(text)))
    while _inside(text, i):
        i += 1
    return i


def first_differing(a: str, b: str) -> int:
    """The index of the first character at which ``a`` and ``b`` differ (the shorter one's
    length where it is the other's prefix)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def cut_bounds(a: str, b: str, before: int, after: int) -> tuple[int, tuple[int, int]]:
    """Where ``around_pair`` cuts two lines: their shared start, and each one's end."""
    at = first_differing(a, b)
    start = 0
    if at - before > 0:
        start = min(token_end(a, at - before), token_end(b, at - before),
                    token_start(a, at), token_start(b, at))
        start = max(start, at - before)  # the differing token longer than the room: cut in it

    def end_of(text: str) -> int:
        if at + after >= len(text):
            return len(text)
        end = max(token_start(text, at + after), token_end(text, at + 1))
        return min(end, at + after)  # a token longer than the room: cut in it

    return start, (end_of(a), end_of(b))


def around_pair(a: str, b: str, before: int, after: int,
                whole_within: int = 0) -> tuple[str, str]:
    """Two lines that differ, each cut to ``before`` characters ahead of their first
    difference and ``after`` from it, between two tokens (a token longer than that room is
    cut where the room ends), ``…`` where something was left out; both start at the same
    place, so what they share is never all either shows. A line of at most ``whole_within``
    characters stays whole."""
    start, ends = cut_bounds(a, b, before, after)

    def cut(text: str, end: int) -> str:
        if len(text) <= whole_within:
            return text
        return ((ELLIPSIS if start else "") + text[start:end]
                + (ELLIPSIS if end < len(text) else ""))

    return cut(a, ends[0]), cut(b, ends[1])


# An HLO instruction's head: its name, shape and opcode, up to the operands' bracket.
HLO_HEAD = re.compile(r"^(?:ROOT )?[\w.#-]+ = .*?\b[a-z][\w-]*\(")
HEAD_CHARS = 100  # a longer head (a wide tuple's shape) is not kept apart
MIN_AROUND = 40   # the least of a line kept after its head around the difference


def around_keeping_head(a: str, b: str, before: int, after: int,
                        whole_within: int = 0) -> tuple[str, str]:
    """``around_pair``, but where two HLO instructions first differ past their shared head
    (name, shape, opcode), the head is kept first and the rest cut around the difference in
    what room is left: a cut line still says which instruction it is."""
    m = HLO_HEAD.match(a)
    keep = m[0] if m and len(m[0]) <= HEAD_CHARS and b.startswith(m[0]) else ""
    room, at = before + after - len(keep), first_differing(a, b)
    if (not keep or at <= before or at < len(keep) or room < 2 * MIN_AROUND
            or max(len(a), len(b)) <= whole_within):  # nothing of the head would be cut
        return around_pair(a, b, before, after, whole_within=whole_within)
    lead = min(at - len(keep), room // 2)
    cut_a, cut_b = around_pair(a[len(keep):], b[len(keep):], lead, room - lead)
    return keep + cut_a, keep + cut_b


def whole_tokens(line: str) -> str:
    """A diff line an older record cut inside a token (``calls=fused_compu…``,
    ``-…ment.#27, …``): the partial token at each cut dropped, what is left said with ``…``.
    The line's mark (``-``, ``+``, `` ``) stays first; a line that is one token stays."""
    mark, body = line[:1], line[1:]
    if body.endswith(ELLIPSIS):
        kept = body[:-1]
        if kept and _TOKEN.match(kept[-1]):
            start = token_start(kept, len(kept) - 1)
            if kept[:start].strip(ELLIPSIS + " "):
                body = kept[:start] + ELLIPSIS
    if body.startswith(ELLIPSIS):
        rest = body[1:]
        if rest and _TOKEN.match(rest[0]):
            end = token_end(rest, 1)
            if rest[end:].strip(ELLIPSIS + " "):
                body = ELLIPSIS + rest[end:]
    return mark + body


def split_top_level(text: str, sep: str = ",") -> list[str]:
    parts, depth, current, in_string = [], 0, [], False
    for i, char in enumerate(text):
        if in_string:
            in_string = not (char == '"' and text[i - 1] != "\\")
        elif char == '"':
            in_string = True
        elif char in "([{<":
            depth += 1
        elif char in ")]}>" and text[i - 1:i + 1] != "->":  # `->` of a function type
            depth -= 1
        elif char == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def array_dims(shape: str) -> tuple[int, ...] | None:
    """``f32[3,4,4,4]{3,2,1,0}`` -> (3, 4, 4, 4); None for tuples and dynamic shapes."""
    match = _ARRAY_SHAPE.match(shape.strip())
    if not match:
        return None
    dims = [d.strip() for d in match.group(2).split(",") if d.strip()]
    return tuple(int(d) for d in dims) if all(d.isdigit() for d in dims) else None


def is_stacked(shape: str, n_inner: int, array_shape: Sequence[int]) -> bool:
    """The scan's stacked output: ``[n_inner, *array_shape]`` of any element type."""
    return array_dims(shape) == (n_inner, *array_shape)
