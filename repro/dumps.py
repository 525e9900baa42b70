"""``python -m repro.dumps [--case FILE]``: XLA's own account of a case's compiled plan.

Runs inside one release's JAX environment (jax and the standard library only) and prints one
JSON document: the case's lowered module, its optimized HLO, the plan's bytes, and the files
``--xla_dump_to`` writes for it (memory-usage report, buffer assignment, the scheduled entry
computation), trimmed to what the driver reads (jaxbisect/evidence/release.py).

A case may name the buffer worth following (``stacked``) and the size to dump at with a
module function ``evidence(params)`` returning ``{"params": {...}, "stacked": (dims...)}``
(docs/cases.md). XLA reads ``XLA_FLAGS`` once, when the backend starts, so the dump is
configured before the first ``import jax``: this module must be its own process. Nothing here
raises for what a release lacks; the section says "unavailable" and why.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from . import SCHEMA
from .case import SCAN_CASE, CaseError, build, load_module, parse_params, read_case
from .measure import NOT_MEASURED, Compiler, Unmeasured, error_text, plan_bytes
from .options import REPRO, OneLineParser, add_options, target_argument
from .process import (
    TEXT,
    configure_this_process,
    dump_flags,
    dump_folder,
    join_flags,
    stdout_to_stderr,
)

MAX_FILE_CHARS = 600_000  # per dump file kept; far above what the shipped cases produce
METADATA = re.compile(r',? metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
MODULE_NAME = re.compile(r"^module @([\w.\-]+)", re.M)


def parse_args(argv: list[str] | None, *, prog: str = "python -m repro.dumps",
               description: str = __doc__.splitlines()[0]):
    """A case (the scan case without ``--case``) and where to compile it: ``python -m
    repro.dumps``'s and ``repro.xla_passes``'s options, the table's."""
    p = OneLineParser(prog=prog, description=description)
    add_options(p, REPRO, only=("--case", "--param", "--backend", "--xla-flags", "--target",
                                "--json"))
    p.add_argument("--modules", metavar='["NAME=VALUE", ...]',
                   help="also the lowered module and XLA's optimized HLO at these parameters "
                        "(the harness's --hlo-out), in this process")
    args = p.parse_args(argv)
    try:
        args.case = read_case(args.case or SCAN_CASE)
        args.params = parse_params(args.case, args.param)
        args.modules = None if args.modules is None else parse_params(
            args.case, _items(args.modules))
    except CaseError as exc:
        p.error(str(exc))
    if args.target is not None:
        args.target = target_argument(p, args.target, args.backend)
    return args


def _items(text: str) -> list[str]:
    try:
        items = json.loads(text)
    except ValueError:
        items = None
    if not isinstance(items, list):
        raise CaseError(f"--modules {text!r}: write '[\"NAME=VALUE\", ...]'")
    return items


# -- XLA's dump ---------------------------------------------------------------------------

DUMP_FILES = {  # key in the document -> how XLA names the file (CPU: cpu_…, GPU: …gpu_…)
    "memory_usage_report": "after_optimizations-memory-usage-report.txt",
    "buffer_assignment": "after_optimizations-buffer-assignment.txt",
    "after_optimizations": "after_optimizations.txt",
}


def _no_dump(status: str, error: str) -> dict:
    return {"status": status, "error": error, "module": None, "files": {},
            "missing": list(DUMP_FILES)}


def find_dump(dump_dir: Path, module: str) -> dict:
    """The files of the last dumped module whose name contains ``module``."""
    scheduled = sorted(p.name for p in dump_dir.glob(f"module_*{module}*")
                       if p.name.endswith(DUMP_FILES["after_optimizations"]))
    if not scheduled:
        listed = sorted(p.name for p in dump_dir.iterdir())[:20]
        return _no_dump("unavailable", f"XLA wrote no *after_optimizations.txt for {module} "
                        f"(files: {', '.join(listed) or 'none'})")
    prefix = scheduled[-1].split(".", 1)[0]  # module_0001: XLA numbers modules as it dumps
    files, missing = {}, []
    for key, suffix in DUMP_FILES.items():
        matches = sorted(p for p in dump_dir.glob(f"{prefix}.*") if p.name.endswith(suffix))
        if matches:
            files[key] = TRIMMERS[key](matches[0].read_text(errors="replace"))[:MAX_FILE_CHARS]
        else:
            missing.append(key)
    return {"status": "ok", "error": None, "module": prefix, "files": files, "missing": missing}


def trim_buffer_assignment(text: str) -> str:
    """The allocations and their values, up to "Total bytes used"; the per-value use lists and
    live ranges after it grow with the program and the parser does not read them."""
    kept = []
    for line in text.splitlines():
        kept.append(line)
        if line.startswith("Total bytes used"):
            break
        if line.startswith("Used values:"):  # releases without the total line
            kept.pop()
            break
    return "\n".join(kept) + "\n"


def trim_after_optimizations(text: str) -> str:
    """The HloModule line and the ENTRY computation, without metadata (source locations)."""
    lines = text.splitlines()
    header = [line for line in lines[:1] if line.startswith("HloModule")]
    entry: list[str] = []
    for line in lines:
        if line.startswith("ENTRY"):
            entry = [line]
        elif entry:
            entry.append(line)
            if line.startswith("}"):
                break
    return "\n".join(header + [""] + [METADATA.sub("", line) for line in entry]) + "\n"


TRIMMERS = {"memory_usage_report": lambda text: text,
            "buffer_assignment": trim_buffer_assignment,
            "after_optimizations": trim_after_optimizations}


# -- the case -------------------------------------------------------------------------------

def case_evidence_hook(case, params: dict) -> tuple[dict, list[int] | None]:
    """The case's own ``evidence(params)``: the parameters to dump at (over ``params``) and
    the dims of the buffer it names "stacked"; ({}, None) where it has none."""
    hook = getattr(load_module(case), "evidence", None)
    if hook is None:
        return {}, None
    named = hook(case.resolve(params)) or {}
    stacked = named.get("stacked")
    return dict(named.get("params") or {}), list(stacked) if stacked else None


def lower_and_dump(fn, args, compiler, dump_dir: Path) -> tuple[dict, dict, dict]:
    """Lower the case (its text), compile it (the dump lands in ``dump_dir``), read the dump."""
    lowered_doc = {"status": "ok", "error": None, "text": None}
    compiled_doc = {"status": "ok", "error": None, "total_bytes": None, "source": None,
                    "hlo": None}
    try:
        with compiler.lowering():
            lowered = fn.lower(*compiler.structs(args))
        lowered_doc["text"] = lowered.as_text()
    except Exception as exc:
        error = error_text(exc)
        lowered_doc.update(status="error", error=error)
        compiled_doc.update(status="error", error=f"not lowered: {error}")
        return lowered_doc, compiled_doc, _no_dump("unavailable", "not lowered")
    found = MODULE_NAME.search(lowered_doc["text"] or "")
    module = found.group(1) if found else "jit_"
    try:
        with compiler.lowering():
            compiled, _ = compiler.compile(lambda: lowered)
        try:  # the whole optimized module, for telling XLA's passes from what lies below
            compiled_doc["hlo"] = (compiled.as_text() or "")[:MAX_FILE_CHARS] or None
        except Exception:
            pass
    except Exception as exc:
        compiled_doc.update(status="error", error=error_text(exc))
    try:
        dump = find_dump(dump_dir, module)
    except Exception as exc:
        dump = _no_dump("error", error_text(exc))
    if compiled_doc["status"] == "ok":
        try:
            fields, source = compiler.sizes(compiled, dump["files"].get("buffer_assignment"))
        except Unmeasured as exc:
            fields, source = {}, None
            compiled_doc["error"] = error_text(exc)
        total = plan_bytes(fields)
        compiled_doc.update(total_bytes=total or None, source=source,
                            status="ok" if total else "unavailable")
        if not total and not compiled_doc["error"]:  # jaxlib < 0.4.29 on the CPU
            compiled_doc["error"] = NOT_MEASURED
    return lowered_doc, compiled_doc, dump


def gather(args, dump_dir: Path) -> dict:
    from .cli import describe_environment

    document: dict = {"schema": SCHEMA, "kind": "evidence", "status": "ok", "error": None,
                      "xla_flags": args.xla_flags.strip()}
    try:
        compiler = Compiler(args.target, None)
        document.update(describe_environment(compiler, args.xla_flags.strip()),
                        xla_flags=args.xla_flags.strip())  # never the dump's own flags
        more, stacked = case_evidence_hook(args.case, args.params)
        params = {**args.params, **more}
        document["case"] = args.case.as_json(params)
        document["stacked_shape"] = stacked
        fn, fn_args = build(args.case, params)
    except Exception as exc:  # no usable jax here, or a case that does not build
        document.update(status="error", error=f"cannot build the case here: {error_text(exc)}")
        return document
    at = args.case.resolve(args.modules) if args.modules is not None else None
    if at is not None and at != document["case"]["params"]:
        # First: the dump read below is of the last module XLA dumped, the plan's.
        document["modules"] = modules_at(args.case, at, compiler)
    document["lowered"], document["compiled"], document["dump"] = lower_and_dump(
        fn, fn_args, compiler, dump_dir)
    if at is not None and at == document["case"]["params"]:
        document["modules"] = {"params": at, "lowered": document["lowered"]["text"],
                               "optimized": document["compiled"]["hlo"],
                               "error": document["compiled"]["error"]}
    return document


def modules_at(case, params: dict, compiler) -> dict:
    """The case's lowered module and XLA's optimized HLO at ``params``, as the harness's
    ``--hlo-out`` writes them (metrics.write_hlo)."""
    part = {"params": params, "lowered": None, "optimized": None, "error": None}
    try:
        fn, fn_args = build(case, params)
        with compiler.lowering():
            lowered = fn.lower(*compiler.structs(fn_args))
            part["lowered"] = lowered.as_text()
            part["optimized"] = lowered.compile().as_text() or ""
    except Exception as exc:
        part["error"] = error_text(exc)
    return part


def run_with_dumps(args, prefix: str, what: str, gather) -> int:
    """``gather(args, dump_dir)`` in this process, set up as ``args`` say with XLA dumping
    ``what`` (process.TEXT, PASSES) before the first ``import jax``; its document printed
    (stdout: the JSON document only), exit 0 where it is ok, 2 otherwise."""
    with dump_folder(prefix) as dump_dir:
        configure_this_process(args.backend, join_flags(args.xla_flags, dump_flags(dump_dir, what)),
                               target=args.target, params=args.params)
        with stdout_to_stderr():
            document = gather(args, dump_dir)
    print(json.dumps(document, indent=1))
    return 0 if document["status"] == "ok" else 2


def main(argv: list[str] | None = None) -> int:
    return run_with_dumps(parse_args(argv), "repro-evidence-", TEXT, gather)


if __name__ == "__main__":
    sys.exit(main())
