"""``python -m bisect --explain RELEASE``: one release, no bisection, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bisect import bisect, one_line_error


@pytest.mark.jax
def test_explains_one_release_by_its_passes_and_reruns_from_the_store(tmp_path):
    args = ["--explain", "0.5.1", "--backend", "cpu", "--n-inner", "10", "--reports",
            str(tmp_path), "--json"]
    first = bisect(*args)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    explanation = doc["explanation"]
    assert explanation["releases"] == ["0.5.1"]
    tests = {t["xla_flags"]: t["verdict"] for t in explanation["tests"]}
    assert tests[""] == "grows" and tests["--xla_disable_hlo_passes=copy-insertion"] == "constant"
    assert len(tests) >= 5 and "--xla_disable_hlo_passes=fusion" in tests
    assert explanation["culprit"]["kind"] == "pass"
    assert {"release": "0.5.1", "xla_flags": "--xla_disable_hlo_passes=copy-insertion",
            "verdict": "constant", "safe": False} in explanation["workarounds"]
    report = (tmp_path / "explain-0.5.1-cpu.md").read_text()
    assert report.index("### Why: jax 0.5.1") < report.index("Diagnostic only")
    assert "python -m bisect --explain 0.5.1 --backend cpu --n-inner 10" in report
    again = bisect(*args)
    assert json.loads(again.stdout)["explanation"] == explanation
    assert "stored" in again.stderr and "measuring" not in again.stderr


@pytest.mark.parametrize("args, needle", [
    (["--explain", "0.5.1", "--from", "0.5.0"], "--explain takes one release"),
    (["--to", "0.5.1"], "give --from and --to (or --explain RELEASE)"),
])
def test_explain_bad_input_is_one_line(args, needle):
    assert needle in one_line_error(bisect(*args))


@pytest.mark.jax
def test_a_found_change_is_explained_first_in_the_evidence(tmp_path):
    """No hint: the bisection's evidence names the CPU flag, before the raw evidence."""
    done = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--n-res", "16",
                  "--n-inner", "10", "--n-outer", "1", "3", "6", "--reports", str(tmp_path),
                  "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    culprit = doc["explanation"]["culprit"]
    flag = "--xla_cpu_enable_concurrency_optimized_scheduler"
    assert (culprit["kind"], culprit["name"]) == ("flag", flag)
    report = Path(doc["report"]).read_text()  # named with a digest of the smaller sizes
    why, where = report.index("### Why: jax 0.5.0 → jax 0.5.1"), report.index("### Where and what")
    assert why < report.index(f"**The change follows the XLA flag `{flag}`") < where
    skipped = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--n-res", "16",
                     "--n-inner", "10", "--n-outer", "1", "3", "6", "--reports", str(tmp_path),
                     "--json", "--no-evidence")
    assert "explanation" not in json.loads(skipped.stdout)
