"""What the Reproduce and Without-the-toolkit blocks say, held to the record they are rendered
from (a fresh reader's review of the shipped reports)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from jaxbisect.report.markdown.reproduce import pins_said

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "reports"
A6000 = REPORTS / "bisect-0.4.20-0.5.0-a6000-scan_growth-memory.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_cuda_wheels_an_environment_held_are_said_pinned_not_left_to_pip():
    doc = load(A6000)
    held = {n for p in doc["probes"] for n in (p.get("installed") or {})
            if n.startswith("nvidia-")}
    assert held  # the record holds nvcc's wheel
    text = pins_said(doc)
    assert all(f"`{n}`" in text for n in held) and "are pinned" in text, text
    assert "which that environment (compiled without the GPU) did not hold" not in text, text
    # none held: the old words, the wheels left to pip
    for p in [*doc["probes"], *(doc.get("interior") or ())]:
        p["installed"] = {n: v for n, v in (p.get("installed") or {}).items()
                          if not n.startswith("nvidia-")}
    assert "did not hold: pip picks their versions" in pins_said(doc)


def test_every_printed_output_in_a_reproduce_block_is_a_recorded_run():
    """A ``# jax X … / pip install … / python repro.py # prints: Y`` block claims a run of the
    program at X: the record holds it, in ``reproducer.ends`` or (a change that came and went)
    ``reproducer.went.ends``, with that output."""
    checked = 0
    for md in [*REPORTS.glob("bisect-*.md"), *(REPORTS / "cases").glob("*.md")]:
        doc = load(md.with_suffix(".json"))
        r = doc.get("reproducer") or {}
        went = (r.get("went") or {}).get("ends") or ()
        runs = {e["jax"]: e for e in [*(r.get("ends") or ()), *went]}
        lines = md.read_text().splitlines()
        for i, line in enumerate(lines):
            said = re.match(r"\w+/bin/python repro\.py\s+# prints(?: \(in short\))?: (.*)", line)
            head = next((h for h in reversed(lines[max(0, i - 3):i])
                         if h.startswith("# jax ")), None)
            if not said or not head:
                continue
            jax = re.match(r"# jax ([^\s,(]+)", head)[1]
            assert jax in runs, (md.name, jax)
            run = runs[jax]
            outputs = run.get("outputs") or [run.get("output")]
            # a many-line output: " | "; a long error: its opening
            first = [o.splitlines()[0][:40] for o in outputs if o]
            assert any(o in said[1] for o in first), (md.name, jax, said[1], outputs)
            checked += 1
    assert checked


def test_measure_py_holds_only_the_helpers_its_metric_uses():
    import ast

    from jaxbisect.report.markdown.reproduce import standalone_script

    memory = standalone_script(load(REPORTS / "bisect-0.5.0-0.10.2-v5e-scan_growth-memory.json"))
    ast.parse(memory)
    measuring = memory[memory.index("# --- measuring"):]
    assert "import statistics" not in measuring and "def concrete" not in measuring, measuring
    assert "import numpy" not in measuring and "(jax only)" in measuring, measuring
    timed = standalone_script(load(REPORTS / "cases" /
                                   "bisect-0.4.30-0.4.33-cpu-while_loop_cpu_slowdown-run_time.json"))
    ast.parse(timed)
    measuring = timed[timed.index("# --- measuring"):]
    # a run's time: its data (concrete) and the quartile (statistics, time) are used
    for used in ("import statistics, time", "def concrete(args)", "concrete(args)",
                 "statistics.quantiles", "time.perf_counter"):
        assert used in measuring, used
