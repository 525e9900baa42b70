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
    held = {n for p in doc["probes"] for n in (p.get("installed") or {}) if n.startswith("nvidia-")}
    assert held  # the record holds nvcc's wheel
    text = pins_said(doc)
    assert all(f"`{n}`" in text for n in held) and "are pinned" in text, text
    assert "which that environment (compiled without the GPU) did not hold" not in text, text
    for p in [*doc["probes"], *(doc.get("interior") or ())]:  # none held: the old words, the wheels left to pip
        p["installed"] = {n: v for n, v in (p.get("installed") or {}).items()
                          if not n.startswith("nvidia-")}
    assert "did not hold: pip picks their versions" in pins_said(doc)
