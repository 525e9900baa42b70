"""``python -m jaxbisect.merge``: results from many machines in one table, ``reports/merged.md``.

Takes folders (searched recursively, such as a CI run's downloaded artifacts) and result files.
Every JSON that is a sweep result (a Measurement) is read; exact duplicates (the same result
uploaded twice) are dropped; rows are grouped by backend and device, releases in order.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from packaging.version import InvalidVersion, Version
from tabulate import tabulate

from .errors import UserError
from .files import write_atomic
from .measurements import Measurement
from .tables import results_table

PROG = "python -m jaxbisect.merge"
DEFAULT_OUT = Path("reports") / "merged.md"
NOT_MEASURED = "(not measured)"


@dataclass(frozen=True)
class Result:
    source: Path
    measurement: Measurement

    @property
    def device(self) -> str:
        d = self.measurement.document
        return str(d.get("device") or "?") if d else NOT_MEASURED

    @property
    def group(self) -> tuple[str, str]:
        """Where a row belongs: the environment's backend (cpu, cuda12) and the device."""
        return self.measurement.backend, self.device

    def identity(self) -> str:
        """Equal for the same result uploaded twice, different for any other."""
        m = self.measurement
        d = m.document and {k: m.document.get(k) for k in ("jax", "jaxlib", "backend", "device")}
        if d:  # how long a compile took is the machine's, not the result's
            d["cases"] = [{k: v for k, v in c.items() if k != "compile_seconds"}
                          for c in m.document.get("cases") or []]
        return json.dumps([m.release, m.backend, m.options.argv(), m.error, d],
                          sort_keys=True, default=str)


def find_results(paths: Iterable[Path]) -> tuple[list[Result], list[str]]:
    """Every sweep result under ``paths`` (files, or folders searched recursively).

    Returns the results (exact duplicates dropped) and one line per JSON file skipped.
    """
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.json") if p.is_file())
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"no such file or folder: {path}")
    results, skipped, seen = [], [], set()
    for file in files:
        try:
            measurement = Measurement.from_json(json.loads(file.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            skipped.append(f"{file}: not a sweep result ({type(exc).__name__})")
            continue
        result = Result(file, measurement)
        if result.identity() in seen:
            continue
        seen.add(result.identity())
        results.append(result)
    return sorted(results, key=_order), skipped


def _order(result: Result):
    return (*result.group, _version_key(result.measurement.release), str(result.source))


def _version_key(text: str):
    try:
        return (0, Version(text))
    except InvalidVersion:
        return (1, text)


def disagreements(results: list[Result]) -> list[str]:
    """Releases that one group measured differently on two machines (same options)."""
    by_key: dict[tuple, list[Result]] = {}
    for r in results:
        m = r.measurement
        by_key.setdefault((*r.group, m.release, m.options), []).append(r)
    return [f"jax {key[2]} on {key[0]} / {key[1]}: {len(rs)} different results "
            f"({', '.join(str(r.source) for r in rs)})"
            for key, rs in by_key.items() if len(rs) > 1]


def _sizes(options) -> str:
    return (f"n_res {options.n_res}, n_inner {options.n_inner}, {options.dtype}, {options.mode}"
            + (f", {options.xla_flags}" if options.xla_flags else ""))


def verdict_grid(results: list[Result]) -> str:
    """Release by release, each group's verdict side by side (and each size, if they differ)."""
    sizes = {_sizes(r.measurement.options) for r in results}

    def column(r: Result) -> tuple[str, ...]:
        return (*r.group, _sizes(r.measurement.options)) if len(sizes) > 1 else r.group

    columns = sorted({column(r) for r in results})
    releases = sorted({r.measurement.release for r in results}, key=_version_key)
    cells: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for r in results:
        m = r.measurement
        shown = m.verdict
        if m.document and m.document["verdict"].get("growth_per_outer") is not None:
            shown += f" ({m.document['verdict']['growth_per_outer']:+.2f})"
        elif m.document is None:
            shown = "skipped"
        cells.setdefault((m.release, column(r)), []).append(shown)
    headers = ["jax"] + [" · ".join(c) for c in columns]
    rows = [[release] + [" / ".join(cells.get((release, c), ["–"])) for c in columns]
            for release in releases]
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def merged_text(results: list[Result], skipped: list[str], inputs: list[Path],
                now: datetime) -> str:
    groups = sorted({r.group for r in results})
    lines = [
        "# jax.lax.scan memory growth on every machine measured",
        "",
        ("Written by `nox -s merge` (`jaxbisect.merge`) from the sweep results of each "
         "machine; do not edit by hand."),
        "",
        (f"- Merged: {now:%Y-%m-%d %H:%M} UTC, {len(results)} result(s) from "
         f"{', '.join(f'`{p}`' for p in inputs)}"),
        f"- Groups (backend · device): {', '.join(f'{b} · {d}' for b, d in groups)}",
        "",
        "## Verdicts side by side",
        "",
        verdict_grid(results),
        "",
        "## All results, grouped by backend and device",
        "",
        results_table([r.measurement for r in results]),
        "",
    ]
    option_sets = sorted({shlex.join(r.measurement.options.argv()) for r in results})
    if len(option_sets) > 1:
        lines += ["Harness options differ between results (compare MB only within one set): "
                  + "; ".join(f"`{o}`" for o in option_sets), ""]
    conflicts = disagreements(results)
    if conflicts:
        lines += ["Measured differently on two machines of one group:", ""]
        lines += [f"- {c}" for c in conflicts] + [""]
    lines += ["<details><summary>Sources</summary>", ""]
    lines += [f"- `{r.source}`: jax {r.measurement.release}, {r.group[0]} · {r.group[1]}"
              for r in results]
    lines += [f"- skipped `{s}`" for s in skipped]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", type=Path, default=[Path("reports") / "repro"],
                   metavar="PATH", help="folders (searched recursively) or result JSON files "
                   "(default: reports/repro)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT,
                   help=f"the merged report (default: {DEFAULT_OUT})")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        results, skipped = find_results(args.paths)
        if not results:
            raise UserError("no sweep results (jax-<release>-<backend>.json) under "
                            + ", ".join(map(str, args.paths)))
        text = merged_text(results, skipped, args.paths, datetime.now(UTC))
        write_atomic(args.out, text)
    except UserError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except OSError as exc:
        print(f"{PROG}: error: cannot write {args.out} ({exc.strerror or exc})", file=sys.stderr)
        return 2
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    groups = len({r.group for r in results})
    print(f"merged {len(results)} result(s) in {groups} group(s) into {args.out}",
          file=sys.stderr)
    print(verdict_grid(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
