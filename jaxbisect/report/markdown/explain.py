"""An explanation's report (``--explain``): which HLO passes shape a case's figure under one
release, from its document alone."""

from __future__ import annotations

import contextlib
import re

from jaxbisect.evidence.explain import baseline_shape_words
from jaxbisect.report.figures import figure_cell, shown
from jaxbisect.report.markdown.answer import setting_kind
from jaxbisect.report.markdown.bisection import within_limit
from jaxbisect.report.markdown.words import IN_THE_CLONE, details, params_text, table
from jaxbisect.search.classify import Direction
from jaxbisect.search.placing import Verdict
from jaxbisect.stages.program import case_source
from repro.target import TargetError
from repro.target import load as load_target


def place_words(doc: dict) -> str:
    """Where the explanation measured, as the bisections' reports say it: a target's own
    words ("compiled for NVIDIA RTX A6000, without the GPU"), never its key ("a6000")."""
    place = doc.get("place") or doc.get("target") or doc["backend"]
    if doc.get("target"):
        with contextlib.suppress(TargetError, OSError, ValueError, KeyError):
            return load_target(doc["target"]).plan_words
    if "/" in place:  # a spec file's path: its name
        place = place.rsplit("/", 1)[-1].removesuffix(".json")
    return place


def no_figure_words(t: dict) -> str:
    """A setting's verdict where it gave no figure: with its recorded reason (the crash's first
    line), or saying none was recorded (an explanation from before reasons were kept)."""
    verdict = t.get("verdict", "")
    if verdict != "no figure":
        return verdict
    if not t.get("reason"):
        return "no figure (no reason was recorded)"
    return f"no figure{reason_words(t['reason'])}"


# "raised: at n_outer 2: XlaRuntimeError: INTERNAL: msg": where, and XLA's message alone
_RAISED_AT = re.compile(r"^raised: (?:(?P<at>at [^:]+): )?(?:\w+(?:Error|Exception): )?"
                        r"(?:[A-Z_]+: )?(?P<message>.*)$", re.DOTALL)
_TEMP_FILE = re.compile(r"(?<![\w.])/tmp/\S+?(?=[,;:\s]|$)")


def reason_words(reason: str) -> str:
    """Why a setting gave no figure, as the page says it: where (``at n_outer 2``) and XLA's
    message without the exception's class or this machine's temporary files."""
    reason = _TEMP_FILE.sub("(a temporary file)", reason)
    if match := re.match(r"crashed: (SIG\w+): (.*)$", reason, re.DOTALL):
        return f": crashed ({match[1]}): {match[2]}"
    if match := _RAISED_AT.match(reason):
        return f"{' ' + match['at'] if match['at'] else ''}: {match['message']}"
    return f": {reason}"


def render_explain(doc: dict) -> str:
    explanation, metric = doc["explanation"], doc["metric"]["name"]
    unit, case, release = doc["metric"]["unit"], doc["case"], doc["explain"]
    over = doc.get("over") or {}
    place = place_words(doc)

    def cell(t: dict) -> str:  # a shape's word, and its figures at each value where known
        word = figure_cell(metric, unit, t["figure"])
        series = t.get("series") or {}
        if not series or None in series.values():
            return word
        figures = " / ".join(shown(metric, unit, v).removesuffix(" MiB")
                             for v in series.values())
        name = over.get("name") or "each value"
        return (f"{word} ({figures}{' MiB' if unit == 'bytes' else ''} at {name} "
                f"{' / '.join(series)})")

    rows = [[t["xla_flags"].split("=", 1)[1], cell(t),
             f"{t['ratio']:.2f}×" if t["ratio"] else "",
             {Direction.FIX: "lower", Direction.REGRESSION: "higher",
              Direction.CHANGED: "different"}.get(t["direction"], "the same")
             if t.get("verdict") in (Verdict.CHANGED, Verdict.SAME)
             else no_figure_words(t)] for t in explanation["tests"]]
    found = explanation.get("workarounds", [])
    ways = [f"- jax {w['release']} with `XLA_FLAGS=\"{w['xla_flags']}\"`: "
            + figure_cell(metric, unit, w["figure"]) + f" ({setting_kind(doc, w)}"
            + (": correctness depends on this pass; never a fix" if not w["safe"] else
               f": compiled for {load_target(doc['target']).description} without one, never "
               f"run" if doc.get("target") else ": never run"
               if setting_kind(doc, w) == "diagnostic" else "") + ")"
            for w in found]
    base = explanation["baseline"]
    params = {k: v for k, v in case["params"].items() if case["defaults"].get(k) != v}
    parts = [
        f"# {case['name']}: which HLO passes shape its {metric} under jax {release} ({place})",
        "", culprit_words(explanation["culprit"]["text"]) + ". Only HLO passes are turned off "
        "here, so a pass named here shapes the plan, which is not to say it is why a release "
        "changed it: an XLA flag whose default changed between two releases is tried by "
        "`python -m bisect --from A --to B` over them (in its report's *Why* section), not by "
        "`--explain`.", "",
        f"Baseline (every pass on): "
        f"{cell({'figure': base, 'series': explanation.get('baseline_series')})}"
        + (f" ({params_text(params)})" if params else "") + ".", "",
        f"Reproduce with this toolkit ({IN_THE_CLONE}):",
        "", "```sh",
        doc["reproduce"], "```", "", "## Details", "",
        *(details("Each setting that changed it", ways) if ways else []),
        *details("Every pass turned off", [
            table(["pass turned off", metric, "ratio to the baseline",
                   "its shape against the baseline's" if over else "against the baseline"],
                  rows) if rows else "_No pass was turned off._"]),
        *(details(f"The program: {case['path']}, cut to what `case()` needs (the whole file "
                  f"is in this toolkit's clone)", [case_source(case["source"]).rstrip()],
                  "python") if case.get("shipped", "/" in case.get("path", "/")) else
          details(f"The program: {case['path']}", [case["source"].rstrip()], "python"))]
    if doc.get("machine"):
        parts += details("The machine that measured", [doc["machine"]], "text")
    return within_limit(parts)


# A document written before the baseline's bracket was said as the baseline: "(grows with
# every pass)" read as the passes' effect, against the list of passes that make it constant.
_OLD_BASELINE = re.compile(r"\((\w+) with every pass\)")


def culprit_words(text: str) -> str:
    """The explanation's sentence, its baseline's bracket said as the baseline."""
    return _OLD_BASELINE.sub(lambda m: f"({baseline_shape_words(m[1])})", text)
