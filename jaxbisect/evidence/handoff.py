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


