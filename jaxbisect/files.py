"""Where the toolkit keeps its cache, and writing files so a crash never leaves half of one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def cache_dir() -> Path:
    """Root of everything cached between runs (catalogue, environments, probe results).

    ``JAX_SCAN_REPRO_CACHE`` overrides it; otherwise ``$XDG_CACHE_HOME/jax-scan-repro``.
    """
    explicit = os.environ.get("JAX_SCAN_REPRO_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jax-scan-repro"


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole: a temporary file beside it, then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 is for secrets, not for reports
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_json(path: Path, document: object) -> None:
    write_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")
