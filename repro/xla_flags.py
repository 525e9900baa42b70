"""``python -m repro.xla_flags``: every XLA flag this jaxlib knows, with its default, as JSON.

``XLA_FLAGS=--help`` makes XLA print ``--name=default<TAB>type<TAB>help`` for each flag on
stderr and then abort, so a child process does it. Needs only jax and the standard library.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

from . import SCHEMA
from .options import OneLineParser
from .process import child_environ
from .target import PLATFORMS


def parse_flag_help(text: str) -> list[dict]:
    """XLA's ``--help`` text -> ``[{"name", "default", "type", "help"}]`` in its order.

    A string default is printed quoted (``--xla_dump_to=""``); the quotes are dropped, so
    ``default`` is the value to pass back. Help texts may run over several lines.
    """
    flags: list[dict] = []
    for line in text.splitlines():
        if line.startswith("\t--") and "=" in line:
            name, rest = line[3:].split("=", 1)
            cells = rest.split("\t", 2)
            if len(cells) < 2 or not name.replace("_", "").isalnum():
                continue
            default, kind = cells[0].strip(), cells[1].strip()
            if kind == "string" and len(default) >= 2 and default[0] == default[-1] == '"':
                default = default[1:-1]
            flags.append({"name": name, "default": default, "type": kind,
                          "help": cells[2].strip() if len(cells) > 2 else ""})
        elif flags and line.strip() and not line.startswith(("\t--", "Flags:", "usage:")):
            flags[-1]["help"] = (flags[-1]["help"] + " " + line.strip()).strip()
    return flags


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def list_flags(backend: str = "cpu", timeout: float = 300) -> dict:
    """The document: this environment's versions and its XLA flags (status, error)."""
    document = {"schema": SCHEMA, "kind": "xla_flags", "status": "ok", "error": None,
                "jax": _version("jax"), "jaxlib": _version("jaxlib"), "backend": backend,
                "flags": []}
    try:  # XLA lists its flags where XLA_FLAGS asks for help, as its backend starts
        done = subprocess.run([sys.executable, "-c", "import jax; jax.devices()"],
                              env={**child_environ(backend), "XLA_FLAGS": "--help"},
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        document.update(status="error", error=f"XLA_FLAGS=--help timed out after {timeout} s")
        return document
    document["flags"] = parse_flag_help(done.stderr)
    if not document["flags"]:
        tail = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        document.update(status="unavailable",
                        error=f"XLA_FLAGS=--help listed no flags: {tail[:300]}")
    return document


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m repro.xla_flags", description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=sorted(PLATFORMS), default="cpu")
    p.add_argument("--json", action="store_true", help="print the JSON document (always)")
    args = p.parse_args(argv)
    document = list_flags(args.backend)
    print(json.dumps(document, indent=1))
    return 0 if document["status"] == "ok" else 2


if __name__ == "__main__":
    sys.exit(main())
