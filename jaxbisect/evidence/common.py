"""Pieces the evidence modules share: sizes and the shapes of XLA's text."""

from __future__ import annotations

import re
from collections.abc import Sequence

MB = 1024**2
UNITS = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_HUMAN_SIZE = re.compile(r"^\s*([\d.]+)\s*(B|KiB|MiB|GiB|TiB)\s*$")
_ARRAY_SHAPE = re.compile(r"^([a-zA-Z]\w*)\[([^\]]*)\]")


def pass_names(passes: Sequence) -> str:
    """The pass names of ``(pipeline, pass)`` pairs, each in code quotes, comma-separated."""
    return ", ".join(f"`{name}`" for _, name in passes)


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



def human_bytes(text: str) -> int | None:
    """``2.1KiB`` -> 2150 (XLA's report rounds, so this is approximate); ``768`` -> 768."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    match = _HUMAN_SIZE.match(text)
    return round(float(match.group(1)) * UNITS[match.group(2)]) if match else None


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
