"""What a metric bisection asks: a question (a metric of a program) and one run's answer.

A *question* is a metric of a program: a function case (``--case FILE``, run by ``python -m
repro --case``) or a command that prints a JSON object as its last stdout line (``--metric NAME
-- CMD``). A *run* is one process in one release's environment; a noisy metric's samples
accumulate over runs. These are values: running a question is the lab's (``lab.runs``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from jaxbisect.errors import UserError
from repro.case import (
    COMPILE_ONLY_METRICS,
    METRICS,
    NOISY_METRICS,
    CaseError,
    CaseFile,
    parse_over,
    parse_params,
    read_case,
    series_at,
)
from repro.options import REPRO, command_line

Say = Callable[[str], None]


@dataclass(frozen=True)
class Question:
    metric: str                          # memory, run_time, …, or a command's field
    case: CaseFile | None = None         # a function case …
    params: dict = field(default_factory=dict)   # … with these overrides
    command: tuple[str, ...] = ()        # … or a command
    target: str = ""                     # a compile-only GPU target (function cases)
    xla_flags: str = ""
    samples: int | None = None           # the harness's samples per run (noisy metrics)
    kind: str = "auto"                   # deterministic | noisy | auto (from the metric)
    over: tuple = ()                     # (parameter, values): the metric's shape over them
    compare: bool = False                # the case's COMPARE programs beside it, one process
    devices: int | None = None           # --devices: CPU host devices (else the case's DEVICES)
    error_match: str = ""                # --error-match (else the case's ERROR): the error meant

    @property
    def noisy(self) -> bool:
        if self.over:  # the shape's status word, compared by equality
            return False
        if self.kind != "auto":
            return self.kind == "noisy"
        if self.metric in ("error", "exit_code"):  # compared by equality, or 0 / not 0
            return False
        return self.command != () or self.metric in NOISY_METRICS

    @property
    def label(self) -> str:
        """The program's name in the user's words: the case's, or the command's."""
        return self.case.name if self.case else " ".join(self.command)

    def harness_argv(self) -> list[str]:
        """``python -m repro``'s arguments for one run: the options the harness takes."""
        values = {"case": self.case.path, "metric": self.metric, "target": self.target,
                  "param": [f"{name}={value}" for name, value in self.params.items()],
                  "over": over_text(self.over) if self.over or self.case.over else None,
                  "compare": self.compare,
                  # peak_memory: one fresh process a run, the run is the sample
                  "samples": 1 if self.samples is None and self.metric == "peak_memory"
                  else self.samples, "xla_flags": self.xla_flags, "devices": self.devices}
        return ["--json", *command_line(REPRO, values, lambda option: option.harness)]


def over_text(over: tuple) -> str:
    """``--over``'s value for ``over``: ``NAME=V1,V2,...``, or ``none``."""
    return f"{over[0]}={','.join(map(str, over[1]))}" if over else "none"


def with_compare(question: Question) -> Question:
    """``question`` with the case's COMPARE programs measured in the same process (the
    harness's ``--compare``: one jax start a release, which needs a series); else as asked."""
    together = question.over and question.case and question.case.compare
    return replace(question, compare=True) if together else question


def compared_runs(run: Run | None) -> dict[str, Run]:
    """Each COMPARE program's run out of a run of ``with_compare``'s question."""
    document = (run.document if run else None) or {}
    return {label: replace(run, document={"metric": metric})
            for label, metric in (document.get("compare") or {}).items()}


def with_params(question: Question, params: dict) -> Question:
    """``question`` at other parameters; one that names the over parameter with a tuple of
    its values measures the series there (the case's SEARCH_PARAMS, COMPARE)."""
    if not question.over:
        return replace(question, params={**question.params, **params})
    rest, values = series_at(question.over, {**question.params, **params})
    return replace(question, params=rest, over=(question.over[0], values))


def question_from(metric: str | None, case_path: str | None, params: list[str],
                  command: tuple[str, ...], *, target: str = "", xla_flags: str = "",
                  samples: int | None = None, kind: str = "auto",
                  over: str | None = None, devices: int | None = None,
                  error_match: str | None = None) -> Question:
    """The question the command line asks; bad input is a UserError (one line, exit 2)."""
    if case_path is not None:
        try:
            case = read_case(case_path)
            overrides = parse_params(case, params)
            shape = case.over if over is None else parse_over(case, over)
        except CaseError as exc:
            raise UserError(str(exc)) from None
        metric = metric or case.metric or "memory"
        if metric not in METRICS:
            raise UserError(f"--metric {metric}: a case measures one of {', '.join(METRICS)}")
        if shape and metric in ("output", "error"):
            raise UserError(f"--over: the shape of a series of numbers; --metric {metric} is "
                            f"not one (use --over none)")
        if shape and shape[0] in overrides:
            raise UserError(f"--param {shape[0]}: the metric is measured over {shape[0]} "
                            f"(--over {over_text(shape)}); give its values with --over, or "
                            f"--over none for one figure")
        if error_match is not None and metric != "error":
            raise UserError(f"--error-match names the error --metric error bisects; --metric "
                            f"{metric} measures no error")
        if target and metric not in COMPILE_ONLY_METRICS:
            raise UserError(f"--target compiles without the GPU: --metric {metric} needs a "
                            f"run (use memory, compile_time or error)")
        meant = error_match or (case.error if metric == "error" else None) or ""
        return Question(metric=metric, case=case, params=overrides, target=target,
                        xla_flags=xla_flags, samples=samples, kind=kind, over=shape,
                        devices=devices, error_match=meant)
    if over is not None:
        raise UserError("--over measures a --case FILE over a parameter; there is none")
    if devices is not None:
        raise UserError("--devices gives a --case FILE CPU host devices; a command after `--` "
                        "sets its own (XLA_FLAGS=--xla_force_host_platform_device_count=N, or "
                        "--xla-flags)")
    if params:
        raise UserError("--param sets a parameter of a --case file; there is none")
    if not command or metric is None:
        raise UserError("a metric bisection needs --case FILE or --metric NAME -- CMD")
    if target:
        raise UserError("--target compiles a --case for a GPU without one; a command after "
                        "`--` cannot run there: drop one of them")
    if error_match is not None and metric != "error":
        raise UserError(f"--error-match names the error --metric error bisects; --metric "
                        f"{metric} measures no error")
    return Question(metric=metric, command=command, xla_flags=xla_flags, kind=kind,
                    error_match=error_match or "")


@dataclass(frozen=True)
class Run:
    """One process of one release: its samples, or why there are none."""

    release: str
    number: int                  # the k-th run of this release for this question
    status: str                  # ok | raised (the program raised) | crashed | failed (skip)
    #                              | hung (past its time limit; never stored)
    samples: tuple = ()
    error: str | None = None
    document: dict | None = None  # the harness's document (function cases)
    installed: dict = field(default_factory=dict)
    seconds: float = 0.0
    cached: bool = False
    crash: str | None = None     # how the process crashed (crashes.crash_of), if it did
    crash_rate: dict | None = None  # the error metric: its runs' crash rate (CrashRate)
    ran_on: dict = field(default_factory=dict)  # the node and job where it ran ({}: here)

    def as_json(self) -> dict:
        return {"release": self.release, "number": self.number, "status": self.status,
                "samples": list(self.samples), "error": self.error, "document": self.document,
                "installed": self.installed, "seconds": self.seconds, "crash": self.crash,
                "crash_rate": self.crash_rate, **({"ran_on": self.ran_on} if self.ran_on else {})}

    @classmethod
    def from_json(cls, d: dict) -> Run:
        return cls(**{**d, "samples": tuple(d["samples"]), "cached": True})


def crashed_run(question: Question, version: str, number: int, crash: str) -> Run:
    """A run whose process crashed: the ``error`` metric's figure, any other metric's
    failure to measure (named in the answer, with the ``--metric error`` bisection)."""
    if question.metric == "error":
        return Run(release=version, number=number, status="ok", samples=(crash,), crash=crash)
    return Run(release=version, number=number, status="crashed", error=crash, crash=crash)


def series_of(run) -> dict | None:
    """A run's series (the metric over a parameter) as the report and the JSON give it:
    the figure at each value, the shape, the size it was measured at, the fallback if any."""
    metric = ((run.document or {}).get("metric") or {}) if run else {}
    if "over" not in metric:
        return None
    shape = metric.get("shape") or {}
    return {"over": metric["over"]["name"], "params": metric.get("params"),
            "figures": {str(p["at"]): p["value"] if p["status"] == "ok" else None
                        for p in metric["points"]},
            "errors": {str(p["at"]): p["error"] for p in metric["points"] if p["error"]},
            "status": shape.get("status"), "growth": shape.get("growth_per_outer",
                                                              shape.get("change")),
            "shape": metric.get("value") or metric.get("error") or shape.get("status"),
            "metric": (metric.get("fallback") or {}).get("metric") or metric["name"],
            "fallback": metric.get("fallback")}
