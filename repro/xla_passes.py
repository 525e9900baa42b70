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

import json
import re
import sys
from importlib import metadata
from pathlib import Path

from . import SCHEMA
from .case import SCAN_CASE, build
from .dumps import METADATA, MODULE_NAME, case_evidence_hook, parse_args
from .process import (
    configure_for_target,
    configure_this_process,
    dump_folder,
    enable_x64,
    join_flags,
    pass_dump_flags,
    stdout_to_stderr,
)

MAX_TEXT_CHARS = 200_000
_PASS_DUMP = re.compile(r"^module_\d+\.(?P<module>[\w.\-]+?)\.\d{4}\..+\.txt$")


def pass_dumps(dump_dir: Path, module: str) -> list[dict]:
    """Each per-pass dump of ``module``, in the order XLA wrote them."""
    names = sorted(p.name for p in dump_dir.iterdir()
                   if (m := _PASS_DUMP.match(p.name)) and m.group("module") == module)
    return [{"file": name, "text": METADATA.sub("", (dump_dir / name).read_text(
        errors="replace"))[:MAX_TEXT_CHARS]} for name in names]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv, prog="python -m repro.xla_passes",
                      description=__doc__.splitlines()[0], case=str(SCAN_CASE))
    document = {"schema": SCHEMA, "kind": "xla_passes", "status": "ok", "error": None,
                "jax": None, "jaxlib": None, "xla_flags": args.xla_flags,
                "deviceless": args.target is not None, "target": None, "case": None,
                "module": None, "dumps": []}
    with dump_folder("repro-passes-") as dump_dir:
        configure_this_process(args.backend if args.target is None else "auto", join_flags(args.xla_flags, pass_dump_flags(dump_dir)))
        if args.target is not None:
            configure_for_target(None)  # the CUDA plugin must load: no JAX_PLATFORMS
        if "float64" in args.params.values():  # a case's dtype parameter, as jax needs it
            enable_x64("float64")
        with stdout_to_stderr():  # stdout: the JSON document only
            _compile_and_read(args, dump_dir, document)
    print(json.dumps(document, indent=1))
    return 0 if document["status"] == "ok" else 2


def _compile_and_read(args, dump_dir: Path, document: dict) -> None:
    from .measure import Compiler, error_line
    from .metrics import shape_structs

    try:
        for name in ("jax", "jaxlib"):
            document[name] = metadata.version(name)
        compiler = Compiler(args.target)
        document["target"] = compiler.describe()  # the spec, plugins and ptxas used
        more, _ = case_evidence_hook(args.case, args.params)
        params = {**more, **args.params}
        document["case"] = args.case.as_json(params)
        fn, fn_args = build(args.case, params)
        lowered = fn.lower(*shape_structs(fn_args, compiler))
        found = MODULE_NAME.search(lowered.as_text())
        document["module"] = found.group(1) if found else None
        lowered.compile()
        document["dumps"] = pass_dumps(dump_dir, document["module"])
        if not document["dumps"]:
            document.update(status="unavailable", error="XLA wrote no per-pass dumps")
    except Exception as exc:
        document.update(status="error", error=error_line(exc))


if __name__ == "__main__":
    sys.exit(main())
