"""The XLA range and the culprit commits, rendered for the report (the hand-off to XLA's own
bisection is evidence.handoff's)."""

from __future__ import annotations

import shlex

from jaxbisect.evidence.pin_ranges import XLA_REPO_URL
from jaxbisect.report.markdown.evidence import details, table
from repro.case import UNITS


def source_words(source: str | None) -> str:
    """Where a pin was read, without the local clone's path (a document from before it was
    left out names it)."""
    if not source:
        return "?"
    path, at, ref = source.rpartition(" at ")
    return f"a jax clone at {ref}" if at and path.startswith(("/", "~", ".")) else source


def on_backend(argv: list[str], backend: str) -> list[str]:
    """The triage test with the backend the report measured on named: in NVIDIA's GPU
    containers ``python -m repro`` would run on the GPU otherwise (a CPU report's change)."""
    if backend != "cpu" or "repro" not in argv or "--backend" in argv or "--target" in argv:
        return argv
    at = argv.index("repro") + 1
    return [*argv[:at], "--backend", "cpu", *argv[at:]]


def render_xla_range(attribution: dict, tpu: bool = False, backend: str = "") -> list[str]:
    """Markdown lines: where each XLA pin came from, and the hand-off command (none for a
    TPU: JAX-Toolbox rebuilds jax and XLA in NVIDIA's GPU containers, never libtpu)."""
    xla, sources = attribution.get("xla_commits") or {}, attribution.get("xla_pin_sources") or {}
    commits = attribution.get("commits") or {}
    out = []
    if xla.get("old") or xla.get("new"):
        out += ["**XLA pins** (the XLA commit jax's sources pin for each release's jaxlib, "
                "read where each line says):", ""]
        for side in ("old", "new"):
            label = f"jax {(commits.get(side) or {}).get('jax') or '?'}"
            said = source_words(sources.get(side))
            wheel = (commits.get(side) or {}).get("commit") or ""
            if said.startswith("a jax clone at jax-v") and wheel:  # read at the tag
                said += (f" (the tag's commit; the wheel was built from {wheel[:10]}, where "
                         f"the pin was not read, so this pin and the range below are the tag's)")
            out.append(f"- {label}: `{xla[side][:10]}`, from {said}"
                       if xla.get(side) else f"- {label}: unknown")
        out.append("")
    triage = attribution.get("triage")
    if triage and not tpu:
        argv = triage.get("argv") or []
        command = (shlex.join(on_backend(argv, backend)) if argv and backend == "cpu"
                   else triage["command"])
        out += ["**Below the release:** JAX-Toolbox's triage tool bisects the JAX and XLA "
                "commits between these pins, rebuilding both at each step, with this "
                "toolkit's check as the test:", "",
                f"```sh\n{command}\n```", "",
                f"It needs {triage['needs']}." + check_words(triage.get("argv") or []), ""]
    return out


def check_words(argv: list[str]) -> str:
    """What the check's two figures are: the harness's own unit (seconds, bytes), which the
    report's tables may show in another."""
    if "--check" not in argv or "--metric" not in argv:
        return ""
    at = argv.index("--check")
    old, new = argv[at + 1:at + 3]
    if "--over" in argv:  # a shape's check names its shapes, in words
        return (f" `--check {old} {new}`: the older and the newer release's shape over "
                f"{argv[argv.index('--over') + 1].split('=')[0]}; at each commit the triage "
                f"tool tries, a shape like the older release's passes (exit 0) and one like "
                f"the newer's fails (exit 1).")
    metric = argv[argv.index("--metric") + 1]
    unit = UNITS.get(metric)
    return (f" `--check {old} {new}`: the older and the newer release's {metric} in "
            f"`python -m repro`'s own unit ({unit}), each the figure the table shows for that "
            f"release "
            f"(the median of its runs in the search); at each commit the triage tool tries, "
            f"a figure nearer the older release's passes (exit 0) and one nearer the newer's "
            f"fails (exit 1)." if unit and metric not in ("error", "output") else "")


def render_culprit_commits(info: dict) -> list[str]:
    """Markdown lines: the XLA commits between the pins that touch the culprit
    (``--xla-repo``), the most likely first."""
    if not info["commits"]:
        return [f"_XLA commits touching the culprit: none listed ({info['note']})._", ""]
    likely = info["most_likely"]
    rows = [[f"[`{c['sha'][:10]}`]({XLA_REPO_URL}/commit/{c['sha']})", c["subject"],
             "yes" if c["sets_new_value"] else ""] for c in info["commits"]]
    return [f"**XLA commits between the pins that touch `{info['name']}`** ({len(rows)}); most "
            f"likely [`{likely['sha'][:10]}`]({XLA_REPO_URL}/commit/{likely['sha']}): "
            f"{likely['subject']}", "",
            *details("All of them", [table(["commit", "subject", "sets the new value"], rows)])]
