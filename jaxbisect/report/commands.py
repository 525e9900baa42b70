"""The commands a report gives: ``python -m bisect`` asking the same question (every option
that shaped the answer, from ``repro/options.py``'s table), the sweep's, ``--explain``'s, and
files as a maintainer types them."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from jaxbisect.files import CLONE, display_path
from jaxbisect.search.budgets import INTERIOR_BUDGET
from jaxbisect.search.question import over_text
from repro.options import BISECT, command_line

if TYPE_CHECKING:
    from jaxbisect.lab.catalogue import Release
    from jaxbisect.stages.releases import MetricBisection


def question_values(q, backend: str, at: Path | None = None) -> dict:
    """The options that say what is measured and where (by dest): the target or backend, the
    case and its parameters (nothing for a command, which goes after ``--``), the metric, the
    XLA flags, the samples and the metric's kind. ``at``: files as typed in that folder (see
    ``reproduce_argv``)."""
    # A spec file as a maintainer types it: from the clone, or (elsewhere) its name, the
    # report carrying the spec itself (render).
    display = display_path if at is None else (lambda path: typed_path(path, at))
    values = {"target": display(q.target) if "/" in q.target else q.target or None,
              "backend": None if q.target else backend, "metric": q.metric,
              "xla_flags": q.xla_flags, "samples": q.samples, "metric_kind": q.kind,
              "devices": q.devices,
              # a case's own ERROR is not repeated on the line; a given --error-match is
              "error_match": (q.error_match or None) if q.case is None
              or q.error_match != (q.case.error or "") else None}
    if q.case is not None:
        values.update(case=display(q.case.path),
                      param=[f"{name}={value}" for name, value in q.params.items()],
                      over=over_text(q.over) if q.over != q.case.over else None)
    return values


def question_argv(q, backend: str) -> list[str]:
    """The options that say what is measured and where, as ``python -m bisect`` takes them."""
    return command_line(BISECT, question_values(q, backend), lambda o: o.shapes)


def bisect_argv(values: dict, command: tuple[str, ...] = (),
                at: Path | None = None) -> list[str]:
    """``python -m bisect`` with every option of ``values`` that shapes the answer; typed in
    folder ``at`` other than the clone, ``jax-bisect`` (``python -m bisect`` runs the
    standard library's module there)."""
    program = ["python", "-m", "bisect"] if at is None or in_clone(at) else ["jax-bisect"]
    return [*program, *command_line(BISECT, values, lambda o: o.shapes or o.local),
            *(["--", *command] if command else [])]


def reproduce_argv(b: MetricBisection, start: str | None = None, end: str | None = None,
                   minimize: bool = False, at: Path | None = None) -> list[str]:
    """The command that asks the same question: every option that shaped the answer. As the
    report gives it (``at`` None: a maintainer's, the case by its name, run from the clone),
    or as it runs typed in folder ``at`` (the terminal's: the folder the user stands in)."""
    req, q = b.request, b.request.question
    return bisect_argv({"start": start or req.start, "end": end or req.end,
                        **question_values(q, req.backend, at), "threshold": req.threshold,
                        "runs": req.runs, "max_runs": req.max_runs,
                        "include_yanked": req.include_yanked,
                        "try_xla_flags": list(req.try_xla_flags), "minimize": minimize,
                        "commits": req.commits,
                        "interior_budget": (None if req.interior_budget == INTERIOR_BUDGET
                                            else req.interior_budget),
                        # the clones as typed here (a report names none)
                        **({} if at is None else {
                            name: typed_path(str(path), at) for name, path in (
                                ("jax_repo", req.jax_repo), ("xla_repo", req.xla_repo))
                            if path is not None})},
                       q.command, at)


def in_clone(folder: Path, clone: Path = CLONE) -> bool:
    """Whether ``folder`` is the clone's root (where ``python -m bisect`` and ``nox -s``
    run)."""
    return folder.resolve() == clone.resolve()


def typed_path(path: str, at: Path) -> str:
    """``path`` as typed in folder ``at``: relative where it lies under it, else absolute."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(at.resolve()))
    except ValueError:
        return str(resolved)


def sweep_argv(b: MetricBisection, at: Path | None = None) -> list[str]:
    """The command that measures every release of the range (what bisection cannot see),
    as the bisection measured its probes: the same runs, threshold and classifier (the sweep
    takes neither --minimize, --include-yanked, --commits, --try-xla-flags nor
    --interior-budget). Typed in a folder ``at`` other than the clone: nox is given the
    clone's noxfile, and files (nox runs a session in the noxfile's folder) are typed there."""
    argv = reproduce_argv(b, at=at and CLONE)[3:]
    for valued in ("--interior-budget", "--jax-repo", "--xla-repo"):  # (its value follows it)
        if valued in argv:
            cut = argv.index(valued)
            argv = argv[:cut] + argv[cut + 2:]
    nox = ["nox", "-s"] if at is None or in_clone(at) else ["nox", "-f",
                                                             str(CLONE / "noxfile.py"), "-s"]
    return [*nox, "repro_range", "--",
            *[a for a in argv if a not in ("--minimize", "--include-yanked", "--commits")
              and not a.startswith("--try-xla-flags")]]


def explain_argv(release: Release, backend: str, question, *, threshold=None,
                 runs=None) -> list[str]:
    """The command that asks ``--explain`` the same question."""
    return bisect_argv({"explain": str(release.version), **question_values(question, backend),
                        "threshold": threshold, "runs": runs})


def wider_range(catalogue, b, at: Path | None = None) -> dict:
    """Where to look next when the range holds no change: the same question up to the newest
    release installable here ({} where the range already ends there); ``at``: the command as
    typed in that folder (report.reproduce_argv)."""

    req = b.request
    newest = max((r for r in catalogue.releases
                  if catalogue.unusable_reason(r, req.backend) is None),
                 key=lambda r: r.version, default=None)
    if newest is None or newest.version <= catalogue.get(req.end).version:
        return {}
    return {"next_step": {"newest": str(newest.version),
                          "command": shlex.join(reproduce_argv(b, req.end,
                                                               str(newest.version), at=at))}}
