"""``python -m repro.xla_passes``: the module v0 after every HLO pass that changed it, as JSON.

Compiles v0 once with ``--xla_dump_hlo_pass_re=.*``: XLA dumps the module after each pass that
changed it, in files named ``module_N.jit_outer_loop.SSSS.<pipeline>.after_<pass>.before_<next>
.txt``. The names say which passes ran; the texts (metadata dropped) let two releases be
compared pass by pass. Needs only jax and the standard library; XLA reads its flags once, so
this runs as its own process.
"""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata
from pathlib import Path

from . import SCHEMA
from .options import OneLineParser, add_size_options
from .process import (
    PLATFORMS,
    configure_for_target,
    configure_this_process,
    dump_folder,
    enable_x64,
    pass_dump_flags,
    stdout_to_stderr,
)

MAX_TEXT_CHARS = 200_000
_METADATA = re.compile(r',? metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
_PASS_DUMP = re.compile(r"^module_\d+\.jit_outer_loop\.\d{4}\..+\.txt$")


def pass_dumps(dump_dir: Path) -> list[dict]:
    """Each per-pass dump of v0's module, in the order XLA wrote them."""
    names = sorted(p.name for p in dump_dir.iterdir() if _PASS_DUMP.match(p.name))
    return [{"file": name, "text": _METADATA.sub("", (dump_dir / name).read_text(
        errors="replace"))[:MAX_TEXT_CHARS]} for name in names]


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m repro.xla_passes", description=__doc__.splitlines()[0])
    add_size_options(p, n_outer=3, n_res=32)
    p.add_argument("--backend", choices=sorted(PLATFORMS), default="cpu")
    p.add_argument("--xla-flags", default="", metavar="FLAGS")
    p.add_argument("--target", metavar="NAME|FILE",
                   help="compile for this NVIDIA GPU without one (as python -m repro --target)")
    p.add_argument("--json", action="store_true", help="print the JSON document (always)")
    args = p.parse_args(argv)
    target = None
    if args.target:
        from . import target as targets

        try:
            target = targets.load(args.target)
        except targets.TargetError as exc:
            p.error(str(exc))
        configure_for_target(None)
        args.backend = "auto"  # the CUDA plugin must load: no JAX_PLATFORMS
    document = {"schema": SCHEMA, "kind": "xla_passes", "status": "ok", "error": None,
                "jax": None, "jaxlib": None, "xla_flags": args.xla_flags,
                "deviceless": target is not None, "target": None, "dumps": []}
    with dump_folder("repro-passes-") as dump_dir:
        _compile_and_read(args, target, dump_dir, document)
    print(json.dumps(document, indent=1))
    return 0 if document["status"] == "ok" else 2


def _compile_and_read(args, target, dump_dir: Path, document: dict) -> None:
    try:
        configure_this_process(args.backend, f"{args.xla_flags} {pass_dump_flags(dump_dir)}")
        enable_x64(args.dtype)
        with stdout_to_stderr():  # stdout: the JSON document only
            for name in ("jax", "jaxlib"):
                document[name] = metadata.version(name)
            import jax.numpy as jnp

            from .measure import Compiler
            from .variants import outer_loop

            compiler = Compiler(target)
            document["target"] = compiler.describe()  # the spec, plugins and ptxas used
            arg = compiler.struct((args.n_res,) * 3, jnp.dtype(args.dtype))
            outer_loop.lower(arg, args.n_outer, args.n_inner, 0).compile()
            document["dumps"] = pass_dumps(dump_dir)
            if not document["dumps"]:
                document.update(status="unavailable", error="XLA wrote no per-pass dumps")
    except Exception as exc:
        from .measure import error_line

        document.update(status="error", error=error_line(exc))


if __name__ == "__main__":
    sys.exit(main())
