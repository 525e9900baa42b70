"""``python -m repro.xla_passes``: a case's module after every HLO pass that changed it, as JSON.

Compiles the case (the scan case repro/cases/scan_growth.py unless ``--case FILE``) once with
``--xla_dump_hlo_pass_re=.*``: XLA dumps the module after each pass that changed it, in files
named ``module_N.<module>.SSSS.<pipeline>.after_<pass>.before_<next>.txt``. The names say which
passes ran; the texts (metadata dropped) let two releases be compared pass by pass. The size is
the one the case's ``evidence(params)`` dumps at, as ``python -m repro.dumps`` (``--param``
overrides it). Needs only jax and the standard library; XLA reads its flags once, so this runs
as its own process.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from . import SCHEMA
from .case import build
from .dumps import METADATA, MODULE_NAME, case_evidence_hook, parse_args, run_with_dumps
from .measure import Compiler, error_text
from .process import PASS_DUMP, PASSES

MAX_TEXT_CHARS = 200_000


def pass_dumps(dump_dir: Path, module: str | None,
               max_chars: int | None = MAX_TEXT_CHARS) -> list[dict]:
    """Each per-pass dump of ``module`` (metadata left out, at most ``max_chars`` of each),
    in the order XLA wrote them; the driver reads its stored ones with this too."""
    names = sorted(p.name for p in dump_dir.iterdir()
                   if (m := PASS_DUMP.match(p.name)) and m.group("module") == module)
    return [{"file": name, "text": METADATA.sub("", (dump_dir / name).read_text(
        errors="replace"))[:max_chars]} for name in names]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, prog="python -m repro.xla_passes", description=__doc__.splitlines()[0])
    return run_with_dumps(args, "repro-passes-", PASSES, gather)


def gather(args, dump_dir: Path) -> dict:
    document = {"schema": SCHEMA, "kind": "xla_passes", "status": "ok", "error": None,
                "jax": None, "jaxlib": None, "xla_flags": args.xla_flags,
                "deviceless": args.target is not None, "target": None, "case": None,
                "module": None, "dumps": []}
    try:
        for name in ("jax", "jaxlib"):
            document[name] = metadata.version(name)
        compiler = Compiler(args.target)
        document["target"] = compiler.describe()  # the spec, plugins and ptxas used
        more, _ = case_evidence_hook(args.case, args.params)
        params = {**more, **args.params}
        document["case"] = args.case.as_json(params)
        fn, fn_args = build(args.case, params)
        with compiler.lowering():
            lowered = fn.lower(*compiler.structs(fn_args))
            found = MODULE_NAME.search(lowered.as_text())
            document["module"] = found.group(1) if found else None
            lowered.compile()
        document["dumps"] = pass_dumps(dump_dir, document["module"])
        if not document["dumps"]:
            document.update(status="unavailable", error="XLA wrote no per-pass dumps")
    except Exception as exc:
        document.update(status="error", error=error_text(exc))
    return document


if __name__ == "__main__":
    sys.exit(main())
