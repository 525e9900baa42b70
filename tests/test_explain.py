"""The scan case explained, end to end on real releases: ``--explain RELEASE`` (one release,
no bisection: the passes) and a found change's explanation (the flag, both ways)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_bisect import SMALL, bisect, one_line_error

CPU_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler"


@pytest.mark.jax
@pytest.mark.full  # a run a pass; the pipeline's explanation: test_case_releases
def test_explains_one_release_by_its_passes_and_reruns_from_the_store(tmp_path):
    args = ["--explain", "0.5.1", "--backend", "cpu", "--n-inner", "10", "--reports",
            str(tmp_path), "--json"]
    first = bisect(*args)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert (doc["schema"], doc["kind"], doc["case"]["name"]) == (2, "metric-explain",
                                                                 "scan_growth")
    explanation = doc["explanation"]
    assert explanation["release"] == "0.5.1" and explanation["baseline"][0] == "grows"
    tests = {t["xla_flags"]: t for t in explanation["tests"]}
    copies = tests["--xla_disable_hlo_passes=copy-insertion"]
    assert copies["figure"][0] == "constant" and copies["changes"] and not copies["safe"]
    assert copies["verdict"] == "changed" and set(copies["series"]) == {"2", "5"}
    assert all(v > 0 for v in copies["series"].values())  # the bytes behind the word
    assert {"release": "0.5.1", "xla_flags": "--xla_disable_hlo_passes=copy-insertion",
            "figure": copies["figure"], "safe": False} in explanation["workarounds"]
    assert len(tests) >= 5 and "--xla_disable_hlo_passes=fusion" in tests
    assert (explanation["culprit"]["kind"], explanation["culprit"]["name"]) \
        == ("pass", "copy-insertion")
    # Explained at the case's search size (n_res 32), which the rerun line carries.
    assert "--param n_inner=10 --param n_res=32" in doc["reproduce"]
    report = Path(doc["report"]).read_text()
    assert doc["reproduce"] in report
    again = bisect(*args)
    assert json.loads(again.stdout)["explanation"] == explanation
    assert "dumping" not in again.stderr  # the dumps and every run read back from the store


@pytest.mark.parametrize("args, needle", [
    (["--explain", "0.5.1", "--from", "0.5.0"], "--explain takes one release"),
    (["--to", "0.5.1"], "give --from and --to (or --explain RELEASE)"),
])
def test_explain_bad_input_is_one_line(args, needle):
    assert needle in one_line_error(bisect(*args))


@pytest.mark.jax
# the flag search both ways and --try-xla-flags: test_case_releases's bisection shows the flag
@pytest.mark.full
def test_a_found_change_is_explained_by_the_flag_both_ways(tmp_path):
    """0.5.0 -> 0.5.1 on the CPU with no hint: the concurrency-optimised scheduler, proven
    both ways; --try-xla-flags says it restores the old shape; a rerun measures nothing."""
    args = ["--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", *SMALL, "--reports",
            str(tmp_path), "--json", "--try-xla-flags", f"{CPU_FLAG}=false",
            "--try-xla-flags", "--xla_cpu_enable_fast_math=false"]
    done = bisect(*args)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["attribution"]["culprit"] == "xla"
    culprit = doc["explanation"]["culprit"]
    assert (culprit["kind"], culprit["name"]) == ("flag", CPU_FLAG)
    behaviours = {(t["release"], t["xla_flags"]): t["behaviour"]
                  for t in doc["explanation"]["culprit"]["tests"]}
    assert behaviours[("0.5.1", f"{CPU_FLAG}=false")] == "old"
    assert behaviours[("0.5.0", f"{CPU_FLAG}=true")] == "new"
    tried = {t["xla_flags"]: (t["behaviour"], t["restores"]) for t in doc["try_xla_flags"]}
    assert tried == {f"{CPU_FLAG}=false": ("old", True),
                     "--xla_cpu_enable_fast_math=false": ("new", False)}
    assert f"--try-xla-flags={CPU_FLAG}=false" in doc["reproduce"]
    report = Path(doc["report"]).read_text()
    assert "## XLA flags tried under jax 0.5.1 (--try-xla-flags)" in report
    # XLA's side: the HLO module alone reproduces it (docs/hlo.md), its bundle beside the report
    assert doc["hlo_module"]["reproduces"] is True
    assert (tmp_path / doc["hlo_module"]["bundle"] / "compile_hlo.py").is_file()

    def files() -> dict:
        return {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*")
                if p.is_file()}

    written = files()
    again = bisect(*args)
    redo = json.loads(again.stdout)
    # The same figures: the report (written again in steps) and the bundle are left as they were.
    assert files() == written
    assert redo["explanation"]["culprit"] == culprit  # its budget's seconds aside
    assert redo["try_xla_flags"] == doc["try_xla_flags"]
    assert all(p["cached"] for p in redo["probes"])
    skipped = bisect(*args[:-4], "--no-evidence")
    assert "explanation" not in json.loads(skipped.stdout)
