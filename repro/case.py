"""A user's own program as a case: a Python file that defines ``case(**params)``.

The protocol (docs/cases.md): ``case()`` returns ``(fn, args)``, ``fn`` a ``jax.jit``-wrapped
function and ``args`` a tuple of arrays or ``jax.ShapeDtypeStruct``s. Its parameters are its
keyword arguments, each with a literal default; ``--param NAME=VALUE`` overrides one, parsed by
the default's type. Optional module constants: ``METRIC`` (the case's own metric), ``FIXED``
(parameters a minimizer never shrinks), ``ANSWER`` (what its author measured), and for the shape
of the metric over a parameter: ``OVER`` (its default ``--over``), ``SEARCH_PARAMS`` (a smaller
size the search may use), ``RUNTIME_PARAMS`` (the size of a real run where a release's compiled
statistics are empty) and ``COMPARE`` (other programs of the case measured beside it at the
answer's releases), ``DEVICES`` (the devices it needs, reached by ``repro.devices.devices(n)``),
``ERROR`` (a regular expression: the error the case means, for ``--metric error``; a run is "the
error" or "not the error", as ``--error-match`` says it), ``EXPECT`` (what the right answer is,
in the metric's own terms, as its author states it: a number, a string such as ``"nan"`` or
``"no error"``, or a list or dict of them; recorded in the case's JSON, never used to place a
run, so that a report can say which end is wrong). A module function ``shape(name, points,
params)`` may classify the series. Module-level settings (XLA_FLAGS, JAX_PLATFORMS,
``jax.config.update``) take effect as when the file runs as a script: the
harness imports it before jax's backend starts (``import_before_backend``).

Reading a case (its parameters, constants, source) needs only the standard library: the
driver reads it with ``ast`` and never imports it (nor jax). Building one imports it, inside a
JAX environment.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

METRICS = ("memory", "compile_time", "run_time", "peak_memory", "output", "error")
# Deterministic metrics give the same value on every run of a release; noisy ones are sampled.
NOISY_METRICS = ("compile_time", "run_time", "peak_memory")
UNITS = {"memory": "bytes", "compile_time": "s", "run_time": "s", "peak_memory": "bytes",
         "output": "values", "error": "message"}
# What a compile-only target can answer: nothing runs there.
COMPILE_ONLY_METRICS = ("memory", "compile_time", "error")
PARAM_TYPES = (bool, int, float, str)
SCAN_CASE = Path(__file__).resolve().parent / "cases" / "scan_growth.py"  # the report's program


class CaseError(ValueError):
    """A case file or parameter that cannot be used (one line for the user)."""


@dataclass(frozen=True)
class CaseFile:
    path: str                       # absolute
    source: str
    sha256: str
    defaults: dict = field(default_factory=dict)   # parameter -> literal default, in order
    metric: str | None = None       # METRIC
    fixed: tuple[str, ...] = ()     # FIXED
    answer: dict | None = None      # ANSWER
    doc: str | None = None
    over: tuple = ()                # OVER: (parameter, its values) the metric's shape is over
    search_params: dict = field(default_factory=dict)    # SEARCH_PARAMS
    runtime_params: dict = field(default_factory=dict)   # RUNTIME_PARAMS
    compare: dict = field(default_factory=dict)          # COMPARE: label -> parameters
    # DEVICES: the devices the program needs (CPU host devices; under a TPU target the chips
    # of a slice)
    devices: int | None = None
    error: str | None = None        # ERROR: a regular expression, the error the case means
    expect: object = None           # EXPECT: what the right answer is (JSON-able), if stated

    @property
    def name(self) -> str:
        return Path(self.path).stem

    def resolve(self, overrides: dict | None = None) -> dict:
        """The parameters a run uses: the defaults with ``overrides`` on top."""
        return {**self.defaults, **(overrides or {})}

    def as_json(self, params: dict | None = None) -> dict:
        return {"name": self.name, "path": self.path, "sha256": self.sha256,
                "params": self.resolve(params), "defaults": dict(self.defaults),
                **({"expect": self.expect} if self.expect is not None else {})}


def _literal(node: ast.AST, what: str, path: Path):
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise CaseError(f"{path}: {what} must be a literal (a number, string, bool, tuple or "
                        f"dict of them)") from None


def read_case(path: str | Path) -> CaseFile:
    """The case file at ``path``, read without running it; a bad one is a CaseError."""
    path = Path(path).expanduser()
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CaseError(f"no case file {path}") from None
    except IsADirectoryError:
        raise CaseError(f"{path} is a folder, not a case file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise CaseError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "case"]
    if not functions:
        raise CaseError(f"{path} defines no case() function (it must return (fn, args); "
                        f"see docs/cases.md)")
    a = functions[-1].args
    if a.vararg or a.kwarg or a.posonlyargs:
        raise CaseError(f"{path}: case() takes keyword parameters with defaults only "
                        f"(no *args, **kwargs or positional-only ones)")
    named = list(zip(a.args[len(a.args) - len(a.defaults):], a.defaults))
    if len(named) != len(a.args) or any(d is None for d in a.kw_defaults):
        raise CaseError(f"{path}: every parameter of case() needs a default")
    named += list(zip(a.kwonlyargs, a.kw_defaults))
    defaults = {}
    for arg, node in named:
        value = _literal(node, f"the default of {arg.arg!r}", path)
        if not isinstance(value, PARAM_TYPES):
            raise CaseError(f"{path}: the default of {arg.arg!r} must be an int, float, bool or "
                            f"str, not {type(value).__name__}")
        defaults[arg.arg] = value
    constants = {node.targets[0].id: _literal(node.value, node.targets[0].id, path)
                 for node in tree.body if isinstance(node, ast.Assign) and len(node.targets) == 1
                 and isinstance(node.targets[0], ast.Name) and node.targets[0].id in CONSTANTS}
    metric = constants.get("METRIC")
    if metric is not None and metric not in METRICS:
        raise CaseError(f"{path}: METRIC = {metric!r} is not one of {', '.join(METRICS)}")
    fixed = tuple(constants.get("FIXED", ()))
    unknown = [name for name in fixed if name not in defaults]
    if unknown:
        raise CaseError(f"{path}: FIXED names {', '.join(unknown)}, not parameters of case()")
    over = ()
    if "OVER" in constants:
        if not (isinstance(constants["OVER"], dict) and len(constants["OVER"]) == 1):
            raise CaseError(f"{path}: OVER is one parameter and its values: "
                            f'{{"n": (1, 2, 4)}}')
        (name, values), = constants["OVER"].items()
        over = over_values(defaults, name, [str(v) for v in values], f"{path}: OVER")
    sized = {constant: sizes_of(defaults, constants.get(constant, {}), over, f"{path}: {constant}")
             for constant in ("SEARCH_PARAMS", "RUNTIME_PARAMS")}
    compare = constants.get("COMPARE", {})
    if not isinstance(compare, dict):
        raise CaseError(f"{path}: COMPARE is a dict of label -> parameters")
    compare = {str(label): sizes_of(defaults, params, over, f"{path}: COMPARE[{label!r}]")
               for label, params in compare.items()}
    devices = constants.get("DEVICES")
    if devices is not None and (isinstance(devices, bool) or not isinstance(devices, int)
                                or devices < 1):
        raise CaseError(f"{path}: DEVICES is the number of devices the program needs (CPU "
                        f"host devices; under a TPU target the chips of a slice), an integer "
                        f"of 1 or more (got {devices!r})")
    error = constants.get("ERROR")
    if error is not None and (problem := regex_problem(error)):
        raise CaseError(f"{path}: ERROR = {error!r}: {problem}")
    expect = constants.get("EXPECT")
    if expect is not None and (problem := expect_problem(expect)):
        raise CaseError(f"{path}: EXPECT = {expect!r}: {problem}")
    return CaseFile(path=str(path.resolve()), source=source,
                    sha256=hashlib.sha256(source.encode()).hexdigest(), defaults=defaults,
                    metric=metric, fixed=fixed, answer=constants.get("ANSWER"),
                    doc=ast.get_docstring(tree), over=over,
                    search_params=sized["SEARCH_PARAMS"], runtime_params=sized["RUNTIME_PARAMS"],
                    compare=compare, devices=devices, error=error,
                    expect=json_value(expect) if expect is not None else None)


def regex_problem(text) -> str | None:
    """Why ``text`` is no regular expression an error can be matched with (None: it is)."""
    if not isinstance(text, str) or not text:
        return "a regular expression (a non-empty string) is needed"
    try:
        re.compile(text)
    except re.error as exc:
        return f"not a regular expression ({exc})"
    return None


def expect_problem(value) -> str | None:
    """Why ``value`` cannot be a case's EXPECT (None: it can): a finite number, a bool, a
    string, or a list, tuple or dict (string keys) of them."""
    if isinstance(value, float) and not math.isfinite(value):
        return 'a number that is not finite is written as a string ("nan", "inf", "-inf")'
    if isinstance(value, (bool, int, float, str)):
        return None
    if isinstance(value, (list, tuple)):
        return next((p for v in value if (p := expect_problem(v))), None)
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return "a dict's keys are strings"
        return next((p for v in value.values() if (p := expect_problem(v))), None)
    return (f"a number, a string, a bool, or a list or dict of them, not "
            f"{type(value).__name__}")


def json_value(value):
    """A checked literal as JSON holds it: tuples as lists."""
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    return value


CONSTANTS = ("METRIC", "FIXED", "ANSWER", "OVER", "SEARCH_PARAMS", "RUNTIME_PARAMS", "COMPARE",
             "DEVICES", "ERROR", "EXPECT")


def over_values(defaults: dict, name: str, texts: list[str], what: str = "--over") -> tuple:
    """``(name, values)``: a parameter of the case and its values (two at least, distinct,
    parsed by its default's type), what the metric's shape is measured over."""
    if name not in defaults:
        raise CaseError(f"{what}: no parameter {name!r} (the parameters: "
                        f"{', '.join(defaults) or 'none'})")
    values = tuple(parse_value(t.strip(), defaults[name], name) for t in texts if t.strip())
    if len(set(values)) < 2 or len(set(values)) != len(values):
        raise CaseError(f"{what}: {name} needs two or more distinct values")
    return name, values


def parse_over(case: CaseFile, text: str) -> tuple:
    """``--over NAME=V1,V2,...`` (``none``: one figure, the case's OVER set aside)."""
    if text.strip().lower() == "none":
        return ()
    name, sep, values = text.partition("=")
    if not sep:
        raise CaseError(f"--over {text!r}: write NAME=V1,V2,... (or none)")
    return over_values(case.defaults, name.strip(), values.split(","))


def sizes_of(defaults: dict, params: dict, over: tuple, what: str) -> dict:
    """Parameters a case constant sets: known names, the default's type; the parameter the
    shape is over may take a tuple of its values (the series measured there)."""
    if not isinstance(params, dict):
        raise CaseError(f"{what} is a dict of parameter -> value")
    out = {}
    for name, value in params.items():
        if name not in defaults:
            raise CaseError(f"{what}: no parameter {name!r}")
        if over and name == over[0] and isinstance(value, tuple):
            value = tuple(parse_value(str(v), defaults[name], name) for v in value)
        elif not isinstance(value, type(defaults[name])):
            raise CaseError(f"{what}: {name} is {type(defaults[name]).__name__}, not {value!r}")
        out[name] = value
    return out


def series_at(over: tuple, params: dict) -> tuple[dict, tuple]:
    """``params`` without the over parameter, and the over values they measure: all of them,
    or the tuple ``params`` gives for it."""
    name, values = over
    rest = {k: v for k, v in params.items() if k != name}
    return rest, tuple(params[name]) if isinstance(params.get(name), tuple) else values


def parse_value(text: str, default, name: str):
    """``text`` as the type of ``default``."""
    kind = type(default)
    if kind is bool:
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise CaseError(f"--param {name}={text}: {name} is a bool (true or false)")
    if kind is str:
        return text
    try:
        value = kind(text)
    except ValueError:
        raise CaseError(f"--param {name}={text}: {name} is {'an' if kind is int else 'a'} "
                        f"{kind.__name__} (its default is {default!r})") from None
    if kind is float and value != value:
        raise CaseError(f"--param {name}={text}: NaN is not a value")
    return value


def parse_params(case: CaseFile, items: list[str] | tuple[str, ...]) -> dict:
    """``--param NAME=VALUE`` items as typed overrides; unknown names are CaseErrors."""
    overrides = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise CaseError(f"--param {item!r}: write NAME=VALUE")
        if name not in case.defaults:
            raise CaseError(f"--param {name}: {case.name} has no parameter {name!r} "
                            f"(its parameters: {', '.join(case.defaults) or 'none'})")
        overrides[name] = parse_value(text, case.defaults[name], name)
    return overrides


def load_module(case: CaseFile):
    """Import the case file as a module (inside a JAX environment: it imports jax)."""
    name = f"repro_case_{case.sha256[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, case.path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def import_before_backend(case: CaseFile) -> None:
    """Import the case before jax's backend starts, so that what it sets at module level
    (``os.environ["XLA_FLAGS"]``, JAX_PLATFORMS, ``jax.config.update``) takes effect as when
    it runs as a script; XLA_FLAGS it sets keep the harness's own (the asked flags, dumps)
    after its. A case that fails to import is left to raise where it is built (its error is
    then the run's answer)."""
    import os

    from .process import join_flags

    before = os.environ.get("XLA_FLAGS", "")
    try:
        load_module(case)
    except Exception:
        return
    after = os.environ.get("XLA_FLAGS", "")
    if after != before and before and before not in after:
        os.environ["XLA_FLAGS"] = join_flags(after, before)


def build(case: CaseFile, params: dict):
    """``case(**params)``: ``(fn, args)``, checked for shape; raises CaseError if malformed."""
    module = load_module(case)
    built = module.case(**case.resolve(params))
    if not (isinstance(built, tuple) and len(built) == 2):
        raise CaseError(f"{case.name}: case() must return (fn, args), got "
                        f"{type(built).__name__}")
    fn, args = built
    if not callable(fn) or not hasattr(fn, "lower"):
        raise CaseError(f"{case.name}: case()'s fn must be a jax.jit-wrapped function")
    if not isinstance(args, (tuple, list)):
        args = (args,)
    return fn, tuple(args)
