"""Pieces the evidence modules share: sizes and the shapes of XLA's text."""

from __future__ import annotations

import re
from collections.abc import Sequence

MB = 1024**2
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_ARRAY_SHAPE = re.compile(r"^([a-zA-Z]\w*)\[([^\]]*)\]")
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
MAX_LINE_CHARS = 200


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
    """At most ``most`` of ``lines``, each cut to ``MAX_LINE_CHARS``."""
    return [line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS - 1] + "…"
            for line in lines[:most]]


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
