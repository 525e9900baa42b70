"""``python -m repro.hlo``: a case's HLO module before XLA's optimisations, and its figure
measured from that module alone (no jax tracing), for an XLA maintainer (docs/hlo.md).

``dump --out DIR``: the case at ``--param`` lowered and compiled once with XLA dumping the
module it was handed (``--xla_dump_hlo_as_proto``): ``DIR/module.pb`` (the HloModuleProto, the
form every jaxlib from 0.4.30 to 0.12 reads) and ``DIR/module.txt`` (its text, for reading).
``dump --point '["NAME=VALUE", ...]=DIR' …``: the same for each point, in this one process.

``measure --module AT=PATH …``: each module compiled by ``hlo_compile.py`` (the plain script the
bundle ships), ``--xla-flags`` as its XLA_FLAGS, and the figures read as a metric's series
(``--over``, the case's own shape) or one figure: every module in this one process (XLA reads
its flags once a process, and they are the same for each), or each in its own where the flags
hold fuel (one pool a process, whose "Out of fuel" lines are a module's own), for a
compile-only GPU (its dump of the buffer assignment), or with ``--apart``. jax and the
standard library only; one JSON document on stdout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from . import SCHEMA
from .case import SCAN_CASE, CaseError, build, load_module, parse_over, parse_params, read_case
from .gpu_target import TARGETS_DIR
from .measure import Compiler, error_text, plan_bytes
from .options import OneLineParser
from .process import configure_this_process, dump_folder, join_flags, stdout_to_stderr
from .target import TargetError
from .target import load as load_target
from .verdict import relative_shape

COMPILE_SCRIPT = Path(__file__).resolve().parent / "hlo_compile.py"
BEFORE = ".before_optimizations"
OUT_OF_FUEL = "Out of fuel"
FATAL = re.compile(r"^F\d{4} ")  # absl's FATAL log line: XLA aborted


def parse_args(argv: list[str] | None):
    p = OneLineParser(prog="python -m repro.hlo", description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("dump", "measure"))
    p.add_argument("--case", default=str(SCAN_CASE))
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--over", default="none", metavar="NAME=V1,V2,...")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--xla-flags", default="")
    p.add_argument("--target", default="", metavar="NAME_OR_SPEC")
    p.add_argument("--out", metavar="DIR")
    p.add_argument("--point", action="append", default=[], metavar="PARAMS=DIR")
    p.add_argument("--module", action="append", default=[], metavar="AT=PATH")
    p.add_argument("--apart", action="store_true", help="each module in its own process")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        args.case = read_case(args.case)
        args.params = parse_params(args.case, args.param)
        args.over = parse_over(args.case, args.over)
        args.points = [_point(args.case, text) for text in args.point]
    except CaseError as exc:
        p.error(str(exc))
    if args.action == "dump" and not (args.out or args.points):
        p.error("dump needs --out DIR or --point PARAMS=DIR")
    return args


def _point(case, text: str) -> tuple[dict, Path]:
    """``--point '["NAME=VALUE", ...]=DIR'``: the case's parameters there, and its folder."""
    end = text.find("]=")
    try:
        items = json.loads(text[:end + 1]) if end >= 0 else None
    except ValueError:
        items = None
    if not isinstance(items, list):
        raise CaseError(f"--point {text!r}: write '[\"NAME=VALUE\", ...]=DIR'")
    return parse_params(case, items), Path(text[end + 2:])


# -- the module ---------------------------------------------------------------------------

def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def proto_field(data: bytes, number: int) -> bytes:
    """The bytes of length-delimited field ``number`` of a serialized protobuf message (the
    standard library has no protobuf: the wire format read by hand)."""
    for field, kind, _, payload in _fields(data):
        if field == number and kind == 2:
            return payload
    raise ValueError(f"no field {number} in the dumped HloProto")


def _fields(data: bytes):
    """Each field of a serialized message: (number, wire type, its encoded bytes, its payload
    where length-delimited)."""
    i = 0
    while i < len(data):
        start = i
        tag, i = _varint(data, i)
        kind, payload = tag & 7, None
        if kind == 2:
            size, i = _varint(data, i)
            payload, i = data[i:i + size], i + size
        elif kind == 0:
            _, i = _varint(data, i)
        elif kind in (1, 5):
            i += 8 if kind == 1 else 4
        else:
            raise ValueError(f"wire type {kind} in the dumped HloProto")
        yield tag >> 3, kind, data[start:i], payload


def _encoded(number: int, payload: bytes) -> bytes:
    out, value = bytearray(), (number << 3) | 2
    for n in (value, len(payload)):
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                break
    return bytes(out) + payload


# HloModuleProto: computations = 3, stack_frame_index = 17; HloComputationProto: instructions
# = 2; HloInstructionProto: metadata = 7 (xla/service/hlo.proto).
def without_sources(module: bytes) -> bytes:
    """The module without its source locations (each instruction's metadata, the stack frame
    index): they name files of the machine that dumped it, and change nothing XLA does."""
    def strip(data: bytes, keep) -> bytes:
        return b"".join(keep(number, whole, payload)
                        for number, _, whole, payload in _fields(data))

    def instruction(number, whole, payload):
        return b"" if number == 7 else whole

    def computation(number, whole, payload):
        return _encoded(2, strip(payload, instruction)) if number == 2 else whole

    def top(number, whole, payload):
        if number == 17:
            return b""
        return _encoded(3, strip(payload, computation)) if number == 3 else whole

    return strip(module, top)


MODULE_ID = 5  # HloModuleProto.id: XLA's count of modules made in this process


def with_id_of(module: bytes, first: bytes) -> bytes:
    """``module`` with ``first``'s id: a module dumped after others in one process carries a
    later count, and would differ in that alone from the same module dumped on its own."""
    ids = [whole for number, _, whole, _ in _fields(first) if number == MODULE_ID]
    return b"".join((ids[0] if ids else b"") if number == MODULE_ID else whole
                    for number, _, whole, _ in _fields(module))


def module_files(dump_dir: Path, made: list[Path] | None = None) -> tuple[Path, Path]:
    """The last jitted module XLA dumped before its optimisations (of the files ``made``,
    where given: one compile's): its proto and its text."""
    protos = sorted(p for p in (dump_dir.iterdir() if made is None else made)
                    if p.match(f"module_*.jit_*{BEFORE}.hlo.pb"))
    if not protos:
        listed = ", ".join(sorted(p.name for p in dump_dir.iterdir())[:10]) or "none"
        raise RuntimeError(f"XLA dumped no *{BEFORE}.hlo.pb (files: {listed})")
    proto = protos[-1]
    return proto, proto.with_name(proto.name.replace(".hlo.pb", ".txt"))


def dump(args) -> dict:
    points = args.points or [(args.params, Path(args.out))]
    first = {**args.params, **points[0][0]}
    documents = [{"schema": SCHEMA, "kind": "hlo-module", "status": "ok", "error": None,
                  "params": args.case.resolve({**args.params, **params})}
                 for params, _ in points]
    with dump_folder("repro-hlo-") as dump_dir:
        configure_this_process(args.backend, join_flags(
            args.xla_flags, f'--xla_dump_to="{dump_dir}" --xla_dump_hlo_as_proto '
                            f'--xla_dump_hlo_as_text --xla_dump_disable_metadata=true'),
            target=load_target(args.target) if args.target else None,
            params=first)
        with stdout_to_stderr():
            compiler, first = None, None
            for document, (params, out) in zip(documents, points):
                try:
                    import jax

                    document.update(jax=jax.__version__, jaxlib=_jaxlib())
                    fn, fn_args = build(args.case, {**args.params, **params})
                    compiler = compiler or Compiler(load_target(args.target) if args.target
                                                    else None)
                    before = set(dump_dir.iterdir())
                    with compiler.lowering():
                        compiled, _ = compiler.compile(fn, *compiler.structs(fn_args))
                    made = [p for p in dump_dir.iterdir() if p not in before]
                    assignment = sorted(p for p in made
                                        if p.match("module_*.jit_*buffer-assignment.txt"))
                    document["jax_bytes"] = plan_bytes(compiler.sizes(
                        compiled, assignment[-1].read_text() if assignment else None)[0])
                    proto, text = module_files(dump_dir, made)
                    module = without_sources(proto_field(proto.read_bytes(), 1))
                    first = first or module
                    out.mkdir(parents=True, exist_ok=True)
                    (out / "module.pb").write_bytes(with_id_of(module, first))
                    (out / "module.txt").write_text(text.read_text(errors="replace"))
                    document.update(name=proto.name.split(".")[1],
                                    files=["module.pb", "module.txt"])
                except Exception as exc:
                    document.update(status="error", error=error_text(exc))
    if not args.points:
        return documents[0]
    failed = next((d for d in documents if d["status"] != "ok"), None)
    return {"schema": SCHEMA, "kind": "hlo-modules", "status": "error" if failed else "ok",
            "error": failed["error"] if failed else None, "points": documents}


def _jaxlib() -> str:
    from importlib.metadata import version

    return version("jaxlib")


# -- its figure, from the module alone -------------------------------------------------------

def compile_one(path: str, xla_flags: str, target: str = "") -> tuple[dict, list[str]]:
    """``hlo_compile.py --json PATH`` in a fresh process: its answer and XLA's "Out of fuel"
    lines (which rewrite the fuel refused first)."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    if xla_flags.strip():
        env["XLA_FLAGS"] = xla_flags.strip()
    if target:  # the CUDA plugin must load: every platform
        env.pop("JAX_PLATFORMS", None)
    else:
        env.setdefault("JAX_PLATFORMS", "cpu")
    spec = ["--target", str(target_spec(target))] if target else []
    done = subprocess.run([sys.executable, str(COMPILE_SCRIPT), "--json", path, *spec],
                          env=env, capture_output=True, text=True)
    fuel = [line.split("] ", 1)[-1].strip() for line in done.stderr.splitlines()
            if OUT_OF_FUEL in line]
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        said = done.stderr.strip().splitlines()
        answer = {"module": path, "error": (said[-1][:300] if said else
                                            f"exit status {done.returncode}")}
    if done.returncode < 0 or (done.returncode and "error" not in answer):
        answer["error"] = f"the compile aborted (exit status {done.returncode})" + (
            f": {_fatal(done.stderr)}" if _fatal(done.stderr) else "")
    return answer, fuel


def compile_here(path: str, xla_flags: str) -> tuple[dict, list[str]]:
    """``hlo_compile.py``'s compile of ``path`` in this process (its first call sets the
    process up: the CPU, ``xla_flags`` as XLA_FLAGS): its answer, and no fuel lines."""
    if "jax" not in sys.modules:
        configure_this_process("cpu", xla_flags)
    from . import hlo_compile

    with stdout_to_stderr():
        try:
            return hlo_compile.compile_module(path), []
        except Exception as exc:
            return {"module": path, "error": f"{type(exc).__name__}: {exc}".splitlines()[0]}, []


def target_spec(target: str) -> Path:
    """The spec file of a GPU target: a built-in's in repro/targets/, or the path given."""
    loaded = load_target(target)
    if loaded.kind != "gpu":
        raise TargetError(f"the module alone compiles for the CPU or a GPU target's spec; "
                          f"{loaded.description} has no spec file")
    return (TARGETS_DIR / f"{loaded.name}.txtpb") if loaded.built_in else Path(loaded.source)


def _fatal(stderr: str) -> str | None:
    return next((line.split("] ", 1)[-1].strip()[:300] for line in stderr.splitlines()
                 if "Check failed" in line or FATAL.match(line)), None)


def measure(args) -> dict:
    modules = [m.partition("=") for m in args.module]
    document = {"schema": SCHEMA, "kind": "hlo-measure", "status": "ok", "error": None,
                "xla_flags": args.xla_flags.strip(), "compiled": [], "out_of_fuel": []}
    points = []
    together = not (args.apart or args.target or "--xla_fuel" in args.xla_flags)
    for at, _, path in modules:
        answer, fuel = (compile_here(path, args.xla_flags) if together else
                        compile_one(path, args.xla_flags, args.target))
        document["compiled"].append({"at": at, **answer})
        document["out_of_fuel"] += fuel
        points.append(answer)
    document.update(jax=_version("jax"), jaxlib=_version("jaxlib"))
    failed = next((p for p in points if "error" in p), None)
    if failed is not None:
        document.update(status="error", error=failed["error"],
                        metric={"name": "memory", "status": "error", "error": failed["error"],
                                "samples": [], "value": None})
        return document
    if not args.over:
        figure = points[0]["bytes"]
        document["metric"] = {"name": "memory", "status": "ok", "samples": [figure],
                              "value": figure}
        return document
    name, _ = args.over
    figures = [(type(args.case.defaults[name])(at), p["bytes"])
               for (at, _, _), p in zip(modules, points)]
    try:
        hook = getattr(load_module(args.case), "shape", None)
        rest = {k: v for k, v in args.params.items() if k != name}
        shape = (hook(name, figures, args.case.resolve(rest)) if hook is not None
                 else relative_shape(name, figures))
    except Exception as exc:
        document.update(status="error", error=f"the case's shape(): {error_text(exc)}")
        return document
    document["metric"] = {"name": "memory", "status": "ok", "shape": shape,
                          "points": [{"at": at, "value": v} for at, v in figures],
                          "samples": [[shape["status"], shape.get("rate")]],
                          "value": shape.get("label") or shape["status"]}
    return document


def _version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    document = dump(args) if args.action == "dump" else measure(args)
    print(json.dumps(document, indent=1))
    return 0 if document["status"] == "ok" else 2


if __name__ == "__main__":
    sys.exit(main())
