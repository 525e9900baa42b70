"""Where the toolkit keeps its cache, and writing files so a crash never leaves half of one."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from jaxbisect.errors import UserError


def cache_dir() -> Path:
    """Root of everything cached between runs (catalogue, environments, probe results):
    ``JAX_SCAN_REPRO_CACHE``, else ``$XDG_CACHE_HOME/jax-scan-repro``."""
    if explicit := os.environ.get("JAX_SCAN_REPRO_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jax-scan-repro"


def shown_path(path: Path | str) -> str:
    """A path as error lines and reports show it: under HOME as ``~/…``, under a cache set
    outside HOME as ``$JAX_SCAN_REPRO_CACHE/…``; never the user's private folders in full."""
    path, home = Path(path), Path(os.path.expanduser("~"))
    explicit = os.environ.get("JAX_SCAN_REPRO_CACHE")
    bases = [(home, "~")]
    if explicit and home not in Path(explicit).parents:  # a cache inside HOME: ~ says more
        bases.insert(0, (Path(explicit), "$JAX_SCAN_REPRO_CACHE"))
    for base, label in bases:
        if path.is_relative_to(base):
            rest = path.relative_to(base)
            return label if rest == Path() else f"{label}/{rest}"
    return str(path)


def _read_umask() -> int:
    umask = os.umask(0)  # the only way to read it is to set it: once, at import, before any
    os.umask(umask)      # thread of ours runs (sweeps write reports from several threads)
    return umask


_UMASK = _read_umask()


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole: a temporary file beside it, then ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp's 0600 is for secrets, not for reports
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, document: object) -> None:
    write_atomic(path, json.dumps(document, indent=2, sort_keys=True) + "\n")


# What differs between two runs that measured the same thing: timings, whether a result came
# from the store, when and from which commit. A rerun that changes only these writes nothing.
VOLATILE_KEYS = frozenset({"seconds", "compile_seconds", "cached", "created_at", "spans",
                           "overlapped", "spent", "time_limit", "estimate", "per_release"})
VOLATILE_LINES = ("date: ", "toolkit commit: ")
# A duration in the markdown's prose ("about 4 s", "Time limit of a run: 30 s"): a timing.
DURATION = re.compile(r"\b\d+(?:\.\d+)? s\b")


# What another machine (or another run there) writes differently beside the same figures: the
# interpreter's patch release and build, the kernel and host (jax.print_environment_info()),
# the size of the generated machine code, the node and job a scheduler ran it in. A tracked
# result is not rewritten for these alone.
RUN_DEPENDENT_KEYS = frozenset({"environment", "python", "ran_on", "generated_code_bytes",
                                "host_generated_code_bytes"})


def steady(value: object, ignore: frozenset[str] = VOLATILE_KEYS) -> object:
    """``value`` without the keys in ``ignore``, at every depth (and a machine's description
    without its volatile lines: the date, the toolkit's commit)."""
    if isinstance(value, dict):
        return {k: (_steady_lines(v) if k == "machine" and isinstance(v, str)
                    else steady(v, ignore)) for k, v in value.items() if k not in ignore}
    if isinstance(value, list):
        return [steady(v, ignore) for v in value]
    return value


def _steady_lines(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.startswith(VOLATILE_LINES))


def _write_if_changed(path: Path, same: Callable[[str], bool], write: Callable[[], None]) -> bool:
    """``write()`` unless ``path`` holds a text that ``same`` finds alike."""
    try:
        if same(Path(path).read_text(encoding="utf-8")):
            return False
    except (OSError, ValueError):  # unreadable: written anew
        pass
    write()
    return True


def write_json_if_changed(path: Path, document: object,
                          also_ignore: frozenset[str] = frozenset()) -> bool:
    """``write_json`` unless ``path`` holds the same document up to its volatile fields (and
    the keys in ``also_ignore``)."""
    ignore = VOLATILE_KEYS | also_ignore
    new = steady(json.loads(json.dumps(document)), ignore)
    return _write_if_changed(path, lambda old: steady(json.loads(old), ignore) == new,
                             lambda: write_json(path, document))


def _lines(text: str) -> list[str]:
    return [DURATION.sub("… s", line) for line in text.splitlines()
            if not line.startswith(VOLATILE_LINES)]


def texts_of(paths: list[Path]) -> dict[Path, str]:
    """The texts of those of ``paths`` that exist, to compare with what a run writes later."""
    return {p: p.read_text(encoding="utf-8") for p in paths if p.is_file()}


def keep_if_steady(before: dict[Path, str]) -> None:
    """The files of ``before`` (``texts_of``) put back as they were where they now differ
    only in volatile parts (all of them, or none: a report's markdown and JSON say the same):
    a rerun with the same figures must leave them as they were."""
    news = {}
    for path, old in before.items():
        try:
            new = path.read_text(encoding="utf-8")
            alike = (steady(json.loads(old)) == steady(json.loads(new))
                     if path.suffix == ".json" else _lines(old) == _lines(new))
        except (OSError, ValueError):
            return
        if not alike:
            return
        news[path] = new
    for path, old in before.items():
        if news[path] != old:
            write_atomic(path, old)


def check_reports_folder(folder: Path) -> None:
    """Before any measuring: the reports folder exists (or can be made) and takes files."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise UserError(f"--reports {folder}: cannot write there "
                        f"({exc.strerror or exc})") from None


CLONE = Path(__file__).resolve().parent.parent  # the toolkit's own clone


def display_path(path: str, clone: Path = CLONE) -> str:
    """A case's path as a maintainer would type it: relative to the toolkit's clone where it
    lies inside it; elsewhere (the user's own folder) its file name, which the report's
    Reproduce section says to save the program under."""
    try:
        return str(Path(path).resolve().relative_to(clone))
    except ValueError:
        return Path(path).name


def inside_clone(path: str, clone: Path = CLONE) -> bool:
    return Path(path).resolve().is_relative_to(clone)
