"""Two of issue 57's must-show items, read from the shipped reports' JSON documents (what the
toolkit wrote from real runs, compiled for a TPU v5e without a chip) and their first screens:
a change that needs a newer jaxlib and a newer libtpu says "needs both", by the swaps; a release
whose compile without a chip fails for the Mosaic serialisation version is a named skip."""

from __future__ import annotations

import json
from pathlib import Path

CASES = Path(__file__).resolve().parent.parent / "reports" / "cases"
NEEDS_BOTH = CASES / "bisect-0.7.0-0.8.1-v5e-pallas_fused_matmul_vmem-error"
SKIP_071 = CASES / "bisect-0.7.0-0.7.2-v5e-pallas_bf16_batched_matvec-error"


def text(stem: Path, suffix: str) -> str:
    return stem.with_name(stem.name + suffix).read_text()  # the names hold dots: 0.7.0


def shipped(stem: Path) -> tuple[dict, str]:
    markdown = text(stem, ".md")
    return json.loads(text(stem, ".json")), markdown[:markdown.find("<details>")]


def test_the_fused_matmul_over_its_scoped_vmem_needs_both():
    doc, screen = shipped(NEEDS_BOTH)
    assert (doc["status"], doc["exact"], doc["target"]) == ("found", True, "v5e")
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.8.0", "0.8.1")
    part = doc["libtpu"]
    assert part["part"] == "needs both"
    # the swaps: each release's jax and jaxlib with the other's libtpu, both seen as the old end
    assert sorted((s["jax"], s["libtpu"], s["seen"]) for s in part["swaps"]) == [
        ("0.8.0", "0.0.30", "old"), ("0.8.1", "0.0.24", "old")]
    # narrowed with the new jax and jaxlib held, over every libtpu on PyPI between the pins
    narrowed = part["narrowed"]
    assert narrowed["held"] == {"jax": "0.8.1", "jaxlib": "0.8.1"}
    assert narrowed["candidates"] == ["0.0.24", "0.0.27", "0.0.29", "0.0.30"]
    assert (narrowed["last_old"], narrowed["first_new"], narrowed["exact"]) == (
        "0.0.29", "0.0.30", True)
    assert "**Which part:** needs both" in screen and "libtpu 0.0.30" in screen
    assert "GPU" not in screen


def test_jax_0_7_1_compiled_without_a_chip_is_a_named_skip_not_a_behaviour():
    doc, screen = shipped(SKIP_071)
    probes = {p["jax"]: p for p in doc["probes"]}
    skip = probes["0.7.1"]
    assert skip["label"] == "skip" and not skip["third"] and skip["figure"]["n"] == 0
    assert skip["reason"].startswith("cannot tell here: compiled without a chip")
    assert "Mosaic version 8" in skip["reason"]
    assert doc["third_behaviour"] in ([], None)
    # the pair is the releases either side of it, not exact, with 0.7.1 named between them
    assert (doc["status"], doc["exact"]) == ("found", False)
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.7.0", "0.7.2")
    assert doc["unplaced_between"] == ["0.7.1"]
    assert "jax 0.7.1 in between, which gave no figure here" in screen
    assert "- jax 0.7.1: cannot tell here: compiled without a chip" in text(SKIP_071, ".md")
