"""Which XLA flag is behind a change: the defaults two releases disagree on, and the search.

Pure logic, no I/O. A *test* sets some changed flags in one release to the other release's
default and answers v0's verdict. A flag (or a pair) is the culprit when setting it back in
the new release restores the old verdict *and* setting it forward in the old release brings
the new one: proven both ways.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

MAX_PAIRS = 45  # pairs of ten changed flags; beyond that the pair search is left out


@dataclass(frozen=True)
class FlagChange:
    """An XLA flag both releases know, whose default differs between them."""

    name: str
    old: str           # the old release's default
    new: str           # the new release's default
    type: str = ""

    def setting(self, release: str) -> str:
        """The flag as set in ``release`` ("old" or "new") to the *other* release's default."""
        return f"--{self.name}={self.new if release == 'old' else self.old}"


@dataclass(frozen=True)
class FlagTest:
    release: str                       # "old" or "new"
    flags: tuple[FlagChange, ...]      # each set to the other release's default
    verdict: str

    @property
    def xla_flags(self) -> str:
        return " ".join(f.setting(self.release) for f in self.flags)


@dataclass(frozen=True)
class FlagSearch:
    culprit: tuple[FlagChange, ...]                 # () when no flag or pair is proven
    restoring: tuple[tuple[FlagChange, ...], ...]   # sets that bring the old verdict to new
    tests: tuple[FlagTest, ...]                     # in the order they were made


def changed_defaults(old: Iterable[dict], new: Iterable[dict]) -> list[FlagChange]:
    """Flags listed by both releases (``{"name", "default", "type"}``) whose defaults differ,
    by name. A flag only one release knows cannot be set in the other, so it is left out."""
    old_by_name = {f["name"]: f for f in old}
    changes = [FlagChange(f["name"], old_by_name[f["name"]]["default"], f["default"],
                          f.get("type", ""))
               for f in new if f["name"] in old_by_name
               and old_by_name[f["name"]]["default"] != f["default"]]
    return sorted(changes, key=lambda c: c.name)


def relevant_to(backend: str, name: str) -> bool:
    """Whether a flag can matter on ``backend``: CPU flags for the CPU, GPU flags for CUDA,
    the backend-neutral ones for both; never a dump flag (``xla_dump_*`` says what XLA writes
    beside a compile, never what it compiles: jax 0.5.1's ``xla_dump_hlo_as_long_text``
    cost a flag test of its own)."""
    other = "xla_gpu_" if backend == "cpu" else "xla_cpu_"
    return not name.startswith((other, "xla_dump_"))


def search_flags(changes: Sequence[FlagChange], test: Callable[[str, tuple[FlagChange, ...]], str],
                 old_verdict: str, new_verdict: str, max_pairs: int = MAX_PAIRS) -> FlagSearch:
    """One flag per test in the new release; each that restores the old verdict is then set
    forward in the old release; the first that does both is the culprit. Where no single flag
    is, pairs in the same order (at most ``max_pairs``). Each (release, flags) is tested once."""
    tests: list[FlagTest] = []
    made: dict[tuple[str, tuple[str, ...]], str] = {}

    def run(release: str, flags: tuple[FlagChange, ...]) -> str:
        key = (release, tuple(f.name for f in flags))
        if key not in made:
            made[key] = test(release, flags)
            tests.append(FlagTest(release, flags, made[key]))
        return made[key]

    singles = [(c,) for c in changes]
    restoring = [s for s in singles if run("new", s) == old_verdict]
    culprit = next((s for s in restoring if run("old", s) == new_verdict), ())
    pairs = list(combinations(changes, 2))
    if not culprit and len(pairs) <= max_pairs:
        for pair in pairs:
            if run("new", pair) == old_verdict:
                restoring.append(pair)
                if run("old", pair) == new_verdict:
                    culprit = pair
                    break
    return FlagSearch(tuple(culprit), tuple(restoring), tuple(tests))
