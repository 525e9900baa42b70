"""Every ``pip install`` line a report prints, written one way: what the release's environment
held when it was measured (its record, ``installed``), pinned, so that a fresh machine installs
what was measured and not today's packages (jax 0.4.20 under today's numpy does not import).

A release the document holds no record of gets jax and jaxlib only; ``pinned`` says whether a
line pins all of jax's requirements (tests hold every shipped report's lines to it)."""

from __future__ import annotations

import re
import shlex

from packaging.version import InvalidVersion, Version

from jaxbisect.lab import backends
from jaxbisect.lab.backends import PINNED_DEPS, pinned_fully


def installed_at(doc: dict, jax: str) -> dict | None:
    """What the environment of ``jax`` held, from the document's records: its probe, a release
    inside measured, or a program's run there (its install line, parsed back)."""
    for row in [*(doc.get("probes") or ()), *(doc.get("interior") or ())]:
        if row.get("jax") == jax and row.get("installed"):
            return row["installed"]
    r = doc.get("reproducer") or {}
    for end in [*(r.get("ends") or ()), *((r.get("went") or {}).get("ends") or ())]:
        if end.get("jax") == jax and end.get("installed"):
            return end["installed"]
        if end.get("jax") == jax and end.get("install"):
            held = parsed(end["install"])
            if held.get("jax") == jax:
                return held
    return None


def parsed(line: str) -> dict:
    """``{name: version}`` of a ``pip install a==1 b==2`` line (extras dropped)."""
    out = {}
    for word in shlex.split(line):
        if "==" in word:
            name, version = word.split("==", 1)
            out[re.sub(r"\[.*\]$", "", name)] = version
    return out


PY312_FROM = Version("0.11")  # jax 0.11 and later: Requires-Python >= 3.12 (PyPI)


def python_of(jax: str, doc: dict | None = None) -> str | None:
    """The Python (``3.11``, ``3.12``) of a release's environment: as the document records it
    ran (``python`` of its probe), else by the releases' Requires-Python; None for no
    release."""
    recorded = next((row.get("python") for row in (doc or {}).get("probes") or ()
                     if row.get("jax") == jax and row.get("python")), None)
    if recorded:
        return ".".join(recorded.split(".")[:2])
    try:
        return "3.12" if Version(jax) >= PY312_FROM else "3.11"
    except InvalidVersion:
        return None


def python_needed(jax: str, doc: dict | None = None) -> str | None:
    """The Python a release needs beyond what a plain ``python3`` may be ("3.12"), or None."""
    python = python_of(jax, doc)
    return python if python and Version(python) >= Version("3.12") else None


def venv_python(jax: str, doc: dict | None = None) -> str:
    """The interpreter a ``-m venv`` line for ``jax`` names, by its version (``python3.11``):
    a bare ``python3`` may be older than the pinned packages allow."""
    python = python_of(jax, doc)
    return f"python{python}" if python else "python3"


def python_note(jax: str, doc: dict | None = None) -> str:
    """A comment closing an install line whose release needs a newer Python than 3.11."""
    need = python_needed(jax, doc)
    return f"   # Python {need} or newer" if need else ""


def pip_words(doc: dict, jax: str, jaxlib: str | None = None) -> str:
    """The packages of ``pip install`` for ``jax`` as this document's backend installs it, and
    every other package its environment's record holds (an nvcc wheel, CUDA's), pinned."""
    held = installed_at(doc, jax)
    jaxlib = jaxlib or (held or {}).get("jaxlib")
    if not jaxlib:
        return f"jax=={jax}"
    words = backends.get(doc["backend"]).pip_words(jax, jaxlib, held)
    named = set(parsed(words))
    rest = [shlex.quote(f"{n}=={v}") for n, v in sorted((held or {}).items())
            if n not in named and n not in ("jax", "jaxlib") and v]
    return " ".join([words, *rest])


def pip_install(doc: dict, jax: str, jaxlib: str | None = None) -> str:
    return f"pip install {pip_words(doc, jax, jaxlib)}"


def install_line(doc: dict, jax: str, jaxlib: str | None = None) -> str:
    """A pasted ``pip install`` line, with the Python it needs said on it where that is 3.12."""
    return pip_install(doc, jax, jaxlib) + python_note(jax, doc)


def pinned(line: str) -> bool:
    """Whether a printed install line pins jax, jaxlib and all of jax's requirements."""
    held = parsed(line)
    return "jax" in held and "jaxlib" in held and pinned_fully(held)


__all__ = ["PINNED_DEPS", "PY312_FROM", "install_line", "installed_at", "parsed", "pinned",
           "pip_install", "pip_words", "python_needed", "python_note", "venv_python"]
