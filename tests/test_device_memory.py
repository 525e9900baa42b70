"""What a real device holds for a run, against XLA's plan (repro/measure.py, repro/metrics.py,
repro/cli.py): a TPU's reserved temporaries counted, its code beside its buffers, an out-of-memory
program said as a behaviour with its figures. The fixtures are a real TPU v5e's own answers
(jax 0.10.2, libtpu 0.0.42.1: tests/data/tpu-v5e-peak-memory-0.10.2.json, the scan case at
n_res 200); the chip test at the end runs only where a TPU is here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from repro.cli import as_device_run, device_beside, gap, plan_beside, plan_gaps, summary
from repro.measure import device_peak, error_text, out_of_memory
from repro.metrics import run_plan
from repro.tpu_target import accelerator_files, chips

DATA = Path(__file__).parent / "data"
# The chip's document as the harness wrote it then (its plan: output + temp), each plan then
# read as the harness reads it now (run_plan: + the generated code the chip holds).
RAW = json.loads((DATA / "tpu-v5e-peak-memory-0.10.2.json").read_text())


def _now(metric: dict) -> dict:
    return {**metric, "points": [{**p, "plan": run_plan(p["plan"]["fields"])}
                                 for p in metric["points"]]}


CHIP = {**RAW, "metric": _now(RAW["metric"]),
        "compare": {name: _now(got) for name, got in RAW["compare"].items()}}

# memory_stats() of the TPU v5e before and after the scan case's v0 ran (n_outer 1, n_res 200).
BEFORE = {"bytes_in_use": 40986624, "peak_bytes_in_use": 40986624, "bytes_reserved": 4096065536,
          "peak_bytes_reserved": 4096065536, "bytes_limit": 16909336064}
AFTER = {"bytes_in_use": 41331200, "peak_bytes_in_use": 82291200, "bytes_reserved": 4096065536,
         "peak_bytes_reserved": 4096065536, "bytes_limit": 16909336064}
HBM = ("RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO "
       "temporaries (17.98G) exceeds available HBM (15.75G).")


def test_a_tpu_peak_counts_reserved_temporaries():
    """In use alone misses the 3.8 GiB of temporaries the chip reserved: 98% of the run."""
    peak = device_peak(BEFORE, AFTER)
    held = peak["peak_bytes"] - peak["baseline_bytes"]
    assert held == 82291200 + 4096065536 - 40986624
    in_use_only = AFTER["peak_bytes_in_use"] - BEFORE["bytes_in_use"]
    assert in_use_only / held < 0.02
    assert "peak_bytes_reserved" in peak["source"]
    assert peak["device_stats"]["peak_bytes_reserved"] == 4096065536


def test_a_device_that_reserves_nothing_reads_as_before():
    """A GPU's BFC allocator (no reserved bytes, or none reported): in use is the peak."""
    gpu = {"bytes_in_use": 1000, "peak_bytes_in_use": 5000}
    assert device_peak(gpu, gpu) == {"source": "device memory_stats peak_bytes_in_use",
                                     "baseline_bytes": 1000, "peak_bytes": 5000,
                                     "device_stats": gpu}
    assert device_peak(gpu, {**gpu, "peak_bytes_reserved": 0})["peak_bytes"] == 5000


def test_the_chip_agrees_with_the_plan_once_its_code_is_counted():
    """Every program of the chip's document within 0.01% of XLA's plan (output + temp + the
    generated code the chip loads into HBM); without the code, v1 is 3.9% off at n_outer 5."""
    gaps = plan_gaps(CHIP, "v0")
    assert {(name, at) for name, at, *_ in gaps} == {("v0", 1), ("v0", 5), ("v1", 1), ("v1", 5)}
    for name, at, measured, planned in gaps:
        assert abs(measured - planned) / planned < 1e-4, (name, at)
    v1 = next(p for p in RAW["compare"]["v1"]["points"] if p["at"] == 5)
    assert (v1["value"] - v1["plan"]["bytes"]) / v1["plan"]["bytes"] > 0.03
    assert plan_beside(CHIP, "v0").count("n_outer=5") == 2  # its table and the farthest


def test_no_plan_beside_a_figure_that_is_not_a_real_peak():
    compiled = {**CHIP, "metric": {**CHIP["metric"], "name": "memory"}}
    assert plan_gaps(compiled, "v0") == [] and plan_beside(compiled, "v0") == ""
    # A real run's points name their device's kind (jaxlib < 0.4.29's memory read from real
    # peaks, the fallback): no device's own figures beside a plan, and the summary says so
    # (it raised AttributeError on the string).
    fallback = {**compiled, "metric": {**compiled["metric"], "points": [
        {**p, "device": "cpu"} for p in compiled["metric"]["points"]]}}
    assert device_beside(fallback, "v0") == ""
    assert "v0" in summary(fallback, "v0")
    bare = {**CHIP, "compare": {}, "metric": {**CHIP["metric"], "points": [
        {k: v for k, v in p.items() if k != "plan"} for p in CHIP["metric"]["points"]]}}
    assert plan_beside(bare, "v0") == ""
    assert "XLA's plan" not in summary(bare, "v0")


@given(st.floats(1, 1e12), st.floats(1, 1e12))
def test_gap_says_the_side_and_the_size(measured, planned):
    words = gap(measured, planned)
    share = (measured - planned) / planned * 100
    if abs(share) < 0.005:
        assert words == "agrees with it to under 0.01%"
    else:
        assert ("above" if share > 0 else "below") in words
        assert f"{abs(share):.2f}%" in words


def test_out_of_hbm_is_a_behaviour_with_its_figures():
    found = out_of_memory(HBM)
    assert {k: found[k] for k in ("needed", "available", "memory", "what")} == {
        "needed": "17.98G", "available": "15.75G", "memory": "HBM", "what": "HLO temporaries"}

    class JaxRuntimeError(Exception):
        pass

    assert error_text(JaxRuntimeError(HBM + "\nmore")) == found["words"]
    assert out_of_memory("RESOURCE_EXHAUSTED: Out of memory while trying to allocate") is None
    assert error_text(ValueError("at 0x7f3a")) == "ValueError: at 0x…"


@given(st.decimals(0, 999, places=2), st.decimals(0, 999, places=2), st.sampled_from("KMGT"))
def test_out_of_memory_keeps_the_figures_as_xla_wrote_them(needed, available, scale):
    text = (f"RESOURCE_EXHAUSTED: Ran out of memory on HBM, the total memory required for HLO "
            f"temporaries ({needed}{scale}) exceeds available HBM ({available}{scale}).")
    found = out_of_memory(text)
    assert (found["needed"], found["available"]) == (f"{needed}{scale}", f"{available}{scale}")


def _tpu_here() -> bool:
    """A TPU VM's chips, seen without opening them (opening one here would hold it)."""
    return bool(chips() or accelerator_files())


def _repro_on_the_chip(*args: str) -> dict:
    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(repo), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "repro", *args, "--n-res", "100", "--n-outer",
                           "1", "2", "--variants", "v0", "v1", "--json", "--quiet"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 125), done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.skipif(not _tpu_here(), reason="needs a TPU chip (none is visible here)")
def test_on_the_chip_peak_memory_agrees_with_the_plan():
    """Run where a TPU is: the harness measures in fresh processes that each open the chip
    (its own process never touches it first) and agrees with the plan within 1%."""
    document = _repro_on_the_chip("--backend", "tpu", "--metric", "peak_memory",
                                  "--samples", "1")
    assert document["backend"] == "tpu"
    gaps = plan_gaps(document, "v0")
    assert len(gaps) == 4
    assert all(abs(m - p) / p < 0.01 for _, _, m, p in gaps), gaps


@pytest.mark.skipif("v5e" not in chips(), reason="needs a TPU v5e chip (none is visible here)")
def test_on_the_chip_a_v5e_target_measures_the_chip_beside_its_plan():
    document = _repro_on_the_chip("--target", "v5e")
    assert document["deviceless"] is True
    gaps = plan_gaps(as_device_run(document), "v0")
    assert len(gaps) == 4
    assert all(abs(m - p) / p < 0.01 for _, _, m, p in gaps), gaps


def _target_document(device: dict | None) -> dict:
    """A v5e target's plan of the scan case's v0 (n_res 200, n_outer 1), as compiled without
    the chip on the chip's own machine, with the chip's run beside it where given."""
    fields = {"output_bytes": 40960000, "temp_bytes": 4096129536,
              "generated_code_bytes": 344576, "argument_bytes": 40960000}
    point = {"at": 1, "name": "memory", "status": "ok", "value": 4137089536,
             "fields": fields, "source": "memory_analysis()",
             **({"device": device} if device else {})}
    return {"jax": "0.10.2", "jaxlib": "0.10.2", "backend": "tpu (compile-only)",
            "device": "TPU v5e, XLA's plan, not a measurement on one",
            "target": {"name": "v5e", "kind": "tpu", "description": "TPU v5e",
                       "source": "built in: topology v5e:2x2"},
            "case": {"name": "scan_growth", "params": {"n_res": 200}},
            "metric": {"name": "memory", "unit": "bytes", "kind": "deterministic",
                       "status": "ok", "value": "constant", "samples": [["constant", 0.0]],
                       "over": {"name": "n_outer", "values": [1]}, "points": [point]}}


def test_a_target_whose_chip_is_here_shows_the_chip_beside_the_plan():
    """python -m repro --target v5e run on the chip's own machine (n_res 200): the plan
    compiled without the chip, each point's chip run beside it, within 0.01%."""
    document = json.loads((DATA / "tpu-v5e-target-on-chip-0.10.2.json").read_text())
    assert document["deviceless"] is True and document["target"]["name"] == "v5e"
    gaps = plan_gaps(as_device_run(document), "v0")
    assert {(name, at) for name, at, *_ in gaps} == {
        (v, n) for v in ("v0", "v1") for n in (1, 2, 5)}
    for name, at, measured, planned in gaps:
        assert abs(measured - planned) / planned < 1e-4, (name, at)
    v0 = document["metric"]["points"][0]
    assert planned_without_chip(v0) == v0["device"]["plan"]["bytes"]  # one compiler, one plan
    assert device_beside(document, "v0").count("n_outer=5") == 2  # its table and the farthest


def planned_without_chip(point: dict) -> int:
    return run_plan(point["fields"])["bytes"]


def test_a_target_without_its_chip_says_nothing_of_one():
    assert device_beside(_target_document(None), "v0") == ""
    failed = _target_document({"error": "out of device memory: needs 17.98G of HBM for HLO "
                                        "temporaries, the device has 15.75G"})
    assert plan_gaps(as_device_run(failed), "v0") == []
    assert "17.98G" in device_beside(failed, "v0")
