"""Where a case's change lies: JAX's lowering, XLA's HLO passes, or below HLO.

The two releases either side of the change each write the case's lowered module and XLA's
optimized HLO (``python -m repro --case … --hlo-out DIR``). Lowered modules that differ put the
change in JAX; the same lowering with a different optimized module puts it in XLA's HLO passes;
both identical put it below HLO (XLA's code generation or its runtime).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from .cases import Question
from .catalogue import Release
from .environments import ensure_environment
from .errors import InstallFailed
from .evidence.commits import commit_range
from .evidence.lowering import compare_lowering
from .evidence.passes import normalize_hlo
from .files import cache_dir
from .metric_bisect import MetricBisection
from .probe import HarnessFailed, run_repro

Say = Callable[[str], None]
_METADATA = re.compile(r",?\s*metadata=\{[^{}]*\}")
WORDS = {
    "jax": "the lowered modules differ: the change is in JAX (its lowering to StableHLO)",
    "xla": "the lowered modules are identical but XLA's optimized HLO differs: the change is "
           "in XLA's HLO passes (inside jaxlib)",
    "below-hlo": "the lowered modules and XLA's optimized HLO are both identical: the change "
                 "is below HLO (XLA's code generation or its runtime, inside jaxlib)",
    "unknown": "the modules could not be compared",
}


def normalize_optimized(text: str) -> list[str]:
    """Optimized HLO without what differs for the same program: names, numbering and the
    ``metadata={…}`` (source lines and op names, which JAX spells differently by release)."""
    return normalize_hlo(_METADATA.sub("", text))


def hlo_texts(release: Release, backend: str, question: Question, *, timeout: float,
              remeasure: bool, say: Say) -> dict:
    """The case's lowered and optimized modules under ``release`` (stored once written)."""
    folder = (cache_dir() / "results" / backend / f"jax-{release.version}"
              / f"hlo-{question.key()}")
    done = folder / ".complete"
    if remeasure or not done.exists():
        env = ensure_environment(release, backend, progress=say)
        say(f"jax {release.version}: lowering and compiling {question.label} for the modules")
        argv = [a for a in question.harness_argv() if a != "--json"]
        metric = argv.index("--metric")
        argv[metric + 1] = "error" if not question.target else "memory"
        run_repro(env, ["--json", *argv, "--hlo-out", str(folder)], timeout, answers=(0, 125))
        done.write_text("")
    read = {}
    for name in ("lowered", "optimized"):
        path = folder / f"{name}.txt"
        read[name] = path.read_text(encoding="utf-8") if path.exists() else None
    return read


def attribution(b: MetricBisection, say: Say, *, jax_repo: Path | None = None) -> dict:
    """``lowering`` and ``optimized_hlo`` (identical | changed/differs | unknown), the
    ``culprit`` (jax | xla | below-hlo | unknown) in words, and the commit range."""
    q = b.request.question
    old, new = b.pair
    s = b.search
    docs = [next((r.document for r in s.placed[i].runs if r.document), None)
            for i in (s.result.last_old, s.result.first_new)]
    commits = commit_range(*[{**d, "status": "ok"} if d else None for d in docs],
                           jax_repo=jax_repo)
    if q.case is None:
        return {"lowering": "unknown", "optimized_hlo": None, "culprit": "unknown",
                "text": "a command's program is not known to the toolkit: its modules were "
                        "not compared", **commits}
    try:
        texts = [hlo_texts(r, b.request.backend, q, timeout=b.request.timeout,
                           remeasure=b.request.remeasure, say=say) for r in (old, new)]
    except (InstallFailed, HarnessFailed) as exc:
        return {"lowering": "unknown", "optimized_hlo": None, "culprit": "unknown",
                "text": f"the modules could not be made: {exc}", **commits}
    lowering = compare_lowering(texts[0]["lowered"], texts[1]["lowered"])
    optimized = None
    if lowering["lowering"] == "identical":
        a, z = (t["optimized"] for t in texts)
        optimized = ("unknown" if not a or not z
                     else "identical" if normalize_optimized(a) == normalize_optimized(z)
                     else "differs")
    culprit = ({"changed": "jax"}.get(lowering["lowering"])
               or {"differs": "xla", "identical": "below-hlo"}.get(optimized or "", "unknown"))
    return {"lowering": lowering["lowering"], "optimized_hlo": optimized, "culprit": culprit,
            "text": WORDS[culprit], "diff": lowering["diff"],
            "diff_truncated": lowering["diff_truncated"], **commits}
