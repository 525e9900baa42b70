"""Below the release: the hand-off to JAX-Toolbox's triage tool, and the XLA range in words.

A bisection over releases ends at two wheels. Between them lie the JAX commits and the XLA
commits (between the two pins); JAX-Toolbox's ``jax-toolbox-triage`` bisects those by
rebuilding jax and XLA at each step. This module gives the command that starts it on the pair
found here, with this toolkit's own check as the test (exit 0 for the old behaviour, non-zero
for the new: the tool's "passing" and "failing").

The flags follow the tool's argument rules in NVIDIA/JAX-Toolbox
``.github/triage/jax_toolbox_triage/args.py`` (read at commit 0864b4b8): ``--container-runtime
local`` runs the builds and the test where the tool runs, and then needs both
``--passing-versions`` and ``--failing-versions`` (``jax:<commit>,xla:<commit>``) and no
container-level option; the test command is its positional ``test_command`` (``nargs="+"``),
after ``--`` so that the test's own options are not read as the tool's.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from .commits import XLA_REPO_URL
from .render import details, table

TRIAGE_TOOL = "jax-toolbox-triage"
TRIAGE_ARGS = "NVIDIA/JAX-Toolbox .github/triage/jax_toolbox_triage/args.py"
NEEDS = ("a JAX-Toolbox container (ghcr.io/nvidia/jax: git checkouts of jax and XLA under "
         "/opt with their build scripts) or a machine laid out like one, that can build jax "
         "and XLA with Bazel, run from a clone of this toolkit (the test imports `repro`); "
         "the tool installs with `pip install "
         "'git+https://github.com/NVIDIA/JAX-Toolbox.git#subdirectory=.github/triage'`")


def triage_handoff(attribution: dict, test: Sequence[str]) -> dict | None:
    """The ``jax-toolbox-triage`` command for the two releases' JAX commits and XLA pins,
    ``test`` exiting 0 on the old behaviour (the tool's "passing"); None where a pin or the
    JAX commit it was read at is unknown."""
    xla = attribution.get("xla_commits") or {}
    jax = attribution.get("xla_pin_jax_commits") or {}
    if not all(xla.get(side) and jax.get(side) for side in ("old", "new")):
        return None
    test = list(test)
    argv = [TRIAGE_TOOL, "--container-runtime", "local",
            "--passing-versions", f"jax:{jax['old']},xla:{xla['old']}",
            "--failing-versions", f"jax:{jax['new']},xla:{xla['new']}",
            "--", *test]
    return {"tool": TRIAGE_TOOL, "argv": argv, "command": shlex.join(argv), "test": test,
            "inverted": False, "needs": NEEDS, "flags_checked_against": TRIAGE_ARGS}


def source_words(source: str | None) -> str:
    """Where a pin was read, without the local clone's path (a document from before it was
    left out names it)."""
    if not source:
        return "?"
    path, at, ref = source.rpartition(" at ")
    return f"a jax clone at {ref}" if at and path.startswith(("/", "~", ".")) else source


def render_xla_range(attribution: dict) -> list[str]:
    """Markdown lines: where each XLA pin came from, and the hand-off command."""
    xla, sources = attribution.get("xla_commits") or {}, attribution.get("xla_pin_sources") or {}
    commits = attribution.get("commits") or {}
    out = []
    if xla.get("old") or xla.get("new"):
        out += ["**XLA pins** (the XLA commit each release's jaxlib was built with):", ""]
        for side in ("old", "new"):
            label = f"jax {(commits.get(side) or {}).get('jax') or '?'}"
            out.append(f"- {label}: `{xla[side][:10]}`, from {source_words(sources.get(side))}"
                       if xla.get(side) else f"- {label}: unknown")
        out.append("")
    triage = attribution.get("triage")
    if triage:
        out += ["**Below the release:** JAX-Toolbox's triage tool bisects the JAX and XLA "
                "commits between these pins, rebuilding both at each step, with this "
                "toolkit's check as the test:", "",
                f"```sh\n{triage['command']}\n```", "",
                f"It needs {triage['needs']}.", ""]
    return out


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
