"""The one store of what releases answered, so that a rerun measures nothing twice.

Every result the driver gets from a release's environment (a probe's measurement, a
command's exit status, a case's run, an XLA flag list, per-pass dumps, the evidence and the
explanation built on them) is kept under one key scheme: the release, the backend (a target
is among the options), what was run (``kind``: probe, command, metric, …), its case and
options, and the harness's own digest. The key names a file (or, for results that are
folders of files, a folder) under ``cache_dir()/results/<backend>/jax-<version>/``.

A result is written whole (``files.write_json``) once it is one the release will give again:
a lasting failure is stored like an answer; what may go away (a failed install, a timeout, a
broken environment) is not. ``remeasure`` ignores what is stored and replaces it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from jaxbisect.files import cache_dir, write_json

T = TypeVar("T")
COMPLETE = ".complete"  # a folder-valued result is whole once this marker is in it


@dataclass(frozen=True)
class Key:
    """What a stored result depends on."""

    release: str                   # the jax version
    backend: str                   # backends.Backend.name (a target: in options)
    kind: str                      # what was run: probe, command, metric, xla-flags, …
    options: object = field(default_factory=dict)  # the case and its options (JSON-able)
    harness: str = ""              # the harness's digest ("" for what does not run it)

    @property
    def name(self) -> str:
        text = json.dumps({"options": self.options, "harness": self.harness}, sort_keys=True)
        return f"{self.kind}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"


class Store:
    """Results by Key, under ``root`` (default: ``cache_dir()/results``, read at each use)."""

    def __init__(self, root: Path | None = None):
        self._root = root

    @property
    def root(self) -> Path:
        return self._root if self._root is not None else cache_dir() / "results"

    def path(self, key: Key) -> Path:
        return self.folder(key).with_suffix(".json")

    def folder(self, key: Key) -> Path:
        """Where a folder-valued result of ``key`` lives (beside its release's others)."""
        return self.root / key.backend / f"jax-{key.release}" / key.name

    def read(self, key: Key) -> dict | None:
        """The stored document, or None where there is none (or it does not parse)."""
        try:
            return json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: Key, document: object) -> None:
        write_json(self.path(key), document)

    def get_or_run(self, key: Key, run: Callable[[], T], *, remeasure: bool = False,
                   keep: Callable[[T], bool] = lambda value: True,
                   encode: Callable[[T], object] = lambda value: value,
                   decode: Callable[[dict], T | None] = lambda d: d) -> T:
        """The stored result of ``key``, else ``run()``'s, stored when ``keep`` says it is one
        the release will give again. ``remeasure``: run it whatever is stored."""
        document = None if remeasure else self.read(key)
        if document is not None:
            with suppress(ValueError, KeyError, TypeError):  # unusable: measured again
                if (stored := decode(document)) is not None:
                    return stored
        value = run()
        if keep(value):
            self.put(key, encode(value))
        return value

    def get_or_make_folder(self, key: Key, make: Callable[[Path], object], *,
                           remeasure: bool = False) -> Path:
        """The folder of ``key``, filled by ``make(folder)`` unless it is complete already
        (``remeasure``: made again); marked complete only once ``make`` returned."""
        folder = self.folder(key)
        done = folder / COMPLETE
        if remeasure or not done.exists():
            make(folder)
            folder.mkdir(parents=True, exist_ok=True)
            done.write_text("")
        return folder


STORE = Store()  # the default, under the cache of the moment
