"""The standalone reproducer: a case file made into a plain-JAX program a maintainer can run.

Pure text work, no jax: the case's source is read with ``ast`` and cut down to what
``case()`` needs (its imports, module-level settings such as ``jax.config.update``, the
functions it calls), less the toolkit's parts (docstrings, ANSWER and the other constants,
``shape()``, ``evidence()``), and a few lines after it print the figure the bisection
measured the way the harness measures it (repro/metrics.py): compiled memory as output + temp
of ``memory_analysis()`` in MiB (repro/units.py's form), a run time as the 25th percentile
of calls in ms (a run's figure, jaxbisect/search/comparing.py), a compile time as the median
of compiles, an output as its values, an error by raising it.
jaxbisect/stages/program_runs.py runs it at each end.
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass

from repro.case import CONSTANTS, CaseFile
from repro.devices import HOST_SOURCE
from repro.target import load as load_target
from repro.tpu_target import DEVICES_IMPORT
from repro.units import KIB_TEXT, plan_lines, printed_mib
from repro.verdict import FITTED_FROM

FILE = "repro.py"
MAX_LINES = 40
# Figures a program measures the way the harness does (repro/metrics.py's SAMPLES).
WRITTEN = ("memory", "compile_time", "run_time", "output", "error")
CALLS = 5           # a time's calls at least (repro.metrics.Sampling: 5 and 0.3 s) …
SECONDS = 0.3
MAX_CALLS = 100     # … and at most
SERIES_VALUES = 3   # a shape's values the program measures at most


@dataclass(frozen=True)
class Program:
    """A plain-JAX program and what it prints: ``metric`` at ``params`` (over ``over``'s
    values where the answer is a shape); run as ``command`` (XLA_FLAGS in front where the
    question set them)."""

    text: str
    metric: str
    params: dict
    over: tuple = ()
    xla_flags: str = ""

    @property
    def lines(self) -> int:
        return len(self.text.splitlines())

    @property
    def command(self) -> str:
        flags = f"XLA_FLAGS={shlex.quote(self.xla_flags)} " if self.xla_flags.strip() else ""
        return f"{flags}python {FILE}"


def why_not(metric: str, *, case: CaseFile | None, target: str = "") -> str | None:
    """One line on why a question has no plain program, or None where it has one."""
    if case is None:
        return "the question is a command: the command is its own reproducer"
    if target:
        described = load_target(target)
        if described.kind == "tpu":  # compiled without the chip by the program itself
            return None if metric in ("error", "memory") else (
                f"{metric} under a {described.description} target: nothing runs without the "
                f"chip (a plain program prints an error or a compiled memory figure)")
        if described.kind != "gpu":
            return (f"compiled for a {described.description} without one (--target): a plain "
                    f"program needs one to run")
        return ("compiled for a GPU without one (--target): a plain program needs that GPU "
                "to run")
    if metric not in WRITTEN:
        return (f"{metric} is measured in fresh processes by the harness (a process's peak); "
                f"no short program prints the same figure")
    return None


def needs_its_gpu(metric: str, *, case: CaseFile | None, target: str = "") -> bool:
    """Whether a plain program is written though it cannot run here: a GPU the answer was
    compiled for without one (the program runs on that GPU)."""
    return (case is not None and bool(target) and metric in WRITTEN
            and load_target(target).kind == "gpu")


def _names(node: ast.AST) -> set[str]:
    """The names ``node`` reads (an attribute chain's first name: ``jax`` of jax.numpy.x)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _bound(node: ast.stmt) -> set[str]:
    """The module-level names a statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return set()


def _is_docstring(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def _is_main_block(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and "__name__" in _names(node.test)


def case_source(source: str) -> str:
    """The case's source cut to what ``case()`` needs: the imports it uses, the module's
    settings (statements that bind nothing, such as ``jax.config.update``), the definitions
    ``case`` reaches; without docstrings, comment lines, the toolkit's constants, hooks or a
    ``__main__`` block."""
    tree = ast.parse(source)
    body = [n for n in tree.body if not _is_docstring(n) and not _is_main_block(n)
            and not (_bound(n) & set(CONSTANTS))]
    settings = [n for n in body if not _bound(n)]
    definitions = {name: n for n in body for name in _bound(n)
                   if not isinstance(n, (ast.Import, ast.ImportFrom))}
    wanted, todo = set(), ["case", *(name for n in settings for name in _names(n))]
    while todo:
        name = todo.pop()
        if name in wanted:
            continue
        wanted.add(name)
        if name in definitions:
            todo.extend(_names(definitions[name]))
    kept = [n for n in body if n in settings or (_bound(n) & wanted)]
    lines = source.splitlines()
    dropped: set[int] = set()  # line numbers (1-based) of docstrings inside what is kept
    for node in kept:
        for inner in ast.walk(node):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and inner.body and _is_docstring(inner.body[0]):
                doc = inner.body[0]
                end = doc.end_lineno
                while end < len(lines) and not lines[end].strip():  # the blank line after it
                    end += 1
                dropped.update(range(doc.lineno, end + 1))
    out: list[str] = []
    for node in kept:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        block = [line for k, line in enumerate(lines[first - 1:node.end_lineno], start=first)
                 if k not in dropped and not line.lstrip().startswith("#")]
        definition = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if out and (definition or out[-1] is DEFINITION_END):
            out.append("")
        out.extend(block)
        if definition:
            out.append(DEFINITION_END)
    return "\n".join(line for line in out if line is not DEFINITION_END)


DEFINITION_END = "\0"  # a marker: a definition ended here (a blank line before what follows)


def _call(params: dict, defaults: dict, over_name: str | None = None) -> str:
    """``case(...)`` with the parameters that differ from the case's defaults."""
    given = [f"{k}={v!r}" for k, v in params.items()
             if k != over_name and defaults.get(k, object()) != v]
    if over_name is not None:
        given.append(f"{over_name}=value")
    return f"case({', '.join(given)})"


def series_values(values: tuple) -> tuple:
    """At most SERIES_VALUES of a shape's values: the first, the middle and the last, of those
    the shape is fitted at (from FITTED_FROM on) where two or more are: a program that prints
    n_outer 1 beside 5 shows a step the shape's verdict leaves out."""
    fitted = tuple(v for v in values if not isinstance(v, (int, float)) or v >= FITTED_FROM)
    values = fitted if len(fitted) >= 2 else tuple(values)
    if len(values) <= SERIES_VALUES:
        return tuple(values)
    return (values[0], values[len(values) // 2], values[-1])


def _concrete(case: CaseFile) -> list[str]:
    """Arguments for a run where the case may give shapes (``jax.ShapeDtypeStruct``): the
    harness's seeded data (repro.metrics.concrete) for float and integer arrays."""
    if "ShapeDtypeStruct" not in case.source:
        return []
    return ["rng = numpy.random.RandomState(0)",
            "args = [(rng.randint(0, 10, a.shape) if numpy.issubdtype(a.dtype, numpy.integer)"
            " else rng.standard_normal(a.shape)).astype(a.dtype)",
            "        if isinstance(a, jax.ShapeDtypeStruct) else a for a in args]"]


PEAK = [  # a run's peak resident memory above what was resident before it (Linux)
    "x = [jax.numpy.zeros(a.shape, a.dtype) for a in args]",
    "f = fn.lower(*x).compile()",
    "open(\"/proc/self/clear_refs\", \"w\").write(\"5\")  # reset the peak-RSS mark",
    "kib = lambda k: int(next(l for l in open(\"/proc/self/status\") if l.startswith(k))"
    ".split()[1])",
    "base = kib(\"VmRSS\")",
    "jax.block_until_ready(f(*x))"]
PEAK_SIZE = printed_mib("kib('VmHWM') - base", KIB_TEXT)  # the kernel's KiB, in MiB


def footer(case: CaseFile, metric: str, params: dict, over: tuple,
           peak: bool = False) -> tuple[list[str], list[str]]:
    """The imports the measuring lines need and the lines, for ``metric`` at ``params``
    (``peak``: memory as a run's peak, where a release's compiled statistics are empty)."""
    call = _call(params, case.defaults)
    concrete = _concrete(case)
    needs = ["numpy"] if concrete and metric in ("run_time", "output", "error") else []
    if metric == "memory" and peak:
        said = f"{PEAK_SIZE}, a run's peak"
        if over:  # each value in a process of its own: pages an earlier value left
            name, values = over  # resident would not count as the next one's peak
            return [*needs, "json", "subprocess", "sys"], [
                f"if len(sys.argv) > 1:  # one {name} a process: its peak is its own",
                "    value = json.loads(sys.argv[1])",
                f"    fn, args = {_call(params, case.defaults, name)}",
                *(f"    {line}" for line in PEAK),
                f"    print(f\"{name}={{value}}: {said}\")",
                "else:",
                f"    for value in {series_values(values)!r}:",
                "        subprocess.run([sys.executable, sys.argv[0], json.dumps(value)], "
                "check=True)"]
        return needs, [f"fn, args = {call}", *PEAK, f"print(f\"memory: {said}\")"]
    if metric == "memory":
        compiled = "fn.lower(*args).compile()"
        if over:
            name, values = over
            return needs, [f"for value in {series_values(values)!r}:",
                           f"    fn, args = {_call(params, case.defaults, name)}",
                           *(f"    {line}" for line in plan_lines(compiled, f"{name}={{value}}"))]
        return needs, [f"fn, args = {call}", *plan_lines(compiled)]
    if metric == "compile_time":
        return ["statistics", "time"], [
            f"fn, args = {call}", "", "", "def compile_ms():", "    jax.clear_caches()",
            "    start = time.perf_counter()", "    fn.lower(*args).compile()",
            "    return (time.perf_counter() - start) * 1e3", "", "",
            "compile_ms()  # the backend's own start-up",
            f"print(f\"compile_time: {{statistics.median(compile_ms() for _ in range({CALLS})):"
            f".3f}} ms\")"]
    run = [f"fn, args = {call}", *(concrete if needs else [])]
    if metric == "run_time":
        return ["statistics", "time", *needs], [
            *run, "jax.block_until_ready(fn(*args))  # compiles, then runs once", "times = []",
            f"while len(times) < {CALLS} or sum(times) < {SECONDS} and len(times) < "
            f"{MAX_CALLS}:",
            "    start = time.perf_counter()", "    jax.block_until_ready(fn(*args))",
            "    times.append(time.perf_counter() - start)",
            "# the 25th percentile of the calls, as the bisection takes a run's figure",
            "quartile = statistics.quantiles(times, n=4, method=\"inclusive\")[0]",
            "print(f\"run_time: {quartile * 1e3:.3f} ms (the 25th percentile of {len(times)} "
            "calls)\")"]
    if metric == "output":  # each leaf on a line: its path, dtype, shape and first values
        return sorted({*needs, "numpy"}), [
            *run, "for path, leaf in jax.tree_util.tree_flatten_with_path(fn(*args))[0]:",
            "    a = numpy.asarray(leaf)",
            "    print(f\"{jax.tree_util.keystr(path) or 'output'}: {a.dtype}{list(a.shape)} "
            "{a.ravel()[:8].tolist()}\")"]
    return needs, [*run, "jax.block_until_ready(fn(*args))", "print(\"no error\")"]


def write_program(case: CaseFile, metric: str, params: dict, over: tuple = (),
                  xla_flags: str = "", peak: bool = False, target: str = "") -> Program:
    """The plain program printing ``metric`` of ``case`` at ``params`` (a shape: at up to
    three of ``over``'s values); ``peak``: memory as a run's peak resident memory, the one
    quantity every release prints (a compiled plan's statistics are 0 bytes before jaxlib
    0.4.29 on the CPU)."""
    params = case.resolve(params)
    if target and load_target(target).kind == "tpu":
        # the deviceless recipe inside it: any machine with the pasted install lines runs it
        from repro.tpu_target import deviceless_program

        text = deviceless_program(load_target(target), case_source(case.source),
                                  call=_call(params, case.defaults), metric=metric,
                                  n=case.devices)
        return Program(text=text, metric=metric, params=params, over=over, xla_flags="")
    modules, lines = footer(case, metric, params, over, peak)
    source = case_source(case.source)
    if DEVICES_IMPORT in source.splitlines():  # a plain program never imports the toolkit
        source = source.replace(DEVICES_IMPORT, HOST_SOURCE.rstrip())
    # the names an import binds (``import numpy as np`` binds np, not numpy)
    imported = {a.asname or a.name for n in ast.parse(source).body
                if isinstance(n, ast.Import) for a in n.names}
    missing = [m for m in modules if m not in imported]
    head = [f"import {', '.join(missing)}"] if missing else []
    text = "\n".join([*head, source, "", *lines]) + "\n"
    return Program(text=text, metric=metric, params=params, over=over, xla_flags=xla_flags)
