"""``python -m jaxbisect.merge``: results from many machines in one table, ``reports/merged.md``.

Takes folders (searched recursively, such as a CI run's downloaded artifacts) and result files.
Every JSON that is a sweep result (jaxbisect/sweep.py) is read; exact duplicates (the same
result uploaded twice) are dropped; rows are grouped by backend and device, releases in order.
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

from tabulate import tabulate

from jaxbisect.errors import UserError
from jaxbisect.files import RUN_DEPENDENT_KEYS, VOLATILE_KEYS, steady, write_atomic
from jaxbisect.report.sweep_summary import (
    RUN_RECORD,
    read_result,
    result_order,
    results_table,
    version_key,
)
from repro.options import OneLineParser

PROG = "python -m jaxbisect.merge"
DEFAULT_OUT = Path("reports") / "merged.md"
NOT_MEASURED = "(not measured)"


@dataclass(frozen=True)
class Result:
    source: Path
    document: dict

    @property
    def group(self) -> tuple[str, str]:
        """Where a row belongs: the environment's backend, or the target compiled for, and
        the device."""
        d = self.document
        return (d.get("target") or d["backend"],
                NOT_MEASURED if d.get("skipped") else str(d.get("device") or "?"))

    def identity(self) -> str:
        """Equal for the same result uploaded twice (however long each run took, whatever
        the kernel of the machine), different for any other."""
        return json.dumps(steady(self.document, VOLATILE_KEYS | RUN_DEPENDENT_KEYS),
                          sort_keys=True, default=str)


def question(document: dict) -> str:
    """What a result asked, wherever it ran (its options less ``--backend``/``--target``)."""
    return shlex.join(document["asked"][2:])


def find_results(paths: Iterable[Path]) -> tuple[list[Result], list[str]]:
    """Every sweep result under ``paths`` (files, or folders searched recursively), exact
    duplicates dropped, and one line per JSON file skipped."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*.json")
                            if p.is_file() and p.name != RUN_RECORD)  # a run's, not a result
        elif path.is_file():
            files.append(path)
        else:
            raise UserError(f"no such file or folder: {path}")
    unique: dict[str, Result] = {}  # the first of each identity
    skipped = []
    for file in files:
        if (document := read_result(file)) is None:
            skipped.append(f"{file}: not a sweep result")
        else:
            result = Result(file, document)
            unique.setdefault(result.identity(), result)
    return sorted(unique.values(), key=lambda r: (*r.group, *result_order(r.document),
                                                  str(r.source))), skipped


def disagreements(results: list[Result]) -> list[str]:
    """Releases that one group measured differently on two machines (the same question)."""
    by_key: dict[tuple, list[Result]] = {}
    for r in results:
        by_key.setdefault((*r.group, r.document["release"], question(r.document)),
                          []).append(r)
    return [f"jax {key[2]} on {key[0]} / {key[1]}: {len(rs)} different results "
            f"({', '.join(str(r.source) for r in rs)})"
            for key, rs in by_key.items() if len(rs) > 1]


def verdict_grid(results: list[Result]) -> str:
    """Release by release, each group's answer side by side (and each question, if they
    differ): a shape's word and rate, else the label."""
    asked = {question(r.document) for r in results}

    def column(r: Result) -> tuple[str, ...]:
        return (*r.group, question(r.document)) if len(asked) > 1 else r.group

    columns = sorted({column(r) for r in results})
    releases = sorted({r.document["release"] for r in results}, key=version_key)
    cells: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for r in results:
        d = r.document
        shown = "skipped" if d.get("skipped") else \
            (d.get("series") or {}).get("shape") or d["label"]
        cells.setdefault((d["release"], column(r)), []).append(shown)
    headers = ["jax"] + [" · ".join(c) for c in columns]
    rows = [[release] + [" / ".join(cells.get((release, c), ["–"])) for c in columns]
            for release in releases]
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def merged_text(results: list[Result], skipped: list[str], inputs: list[Path],
                now: datetime) -> str:
    groups = sorted({r.group for r in results})
    lines = [
        "# Sweep results on every machine measured",
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
        results_table([r.document for r in results]),
        "",
    ]
    asked = sorted({question(r.document) for r in results if not r.document.get("skipped")})
    if len(asked) > 1:
        lines += ["Questions differ between results (compare figures only within one): "
                  + "; ".join(f"`{a}`" for a in asked), ""]
    conflicts = disagreements(results)
    if conflicts:
        lines += ["Measured differently on two machines of one group:", ""]
        lines += [f"- {c}" for c in conflicts] + [""]
    lines += ["<details><summary>Sources</summary>", ""]
    lines += [f"- `{r.source}`: jax {r.document['release']}, {r.group[0]} · {r.group[1]}"
              for r in results]
    lines += [f"- skipped `{s}`" for s in skipped]
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
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
