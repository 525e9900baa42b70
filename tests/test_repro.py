"""The harness under real JAX releases on the CPU, run as a maintainer would run it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import REPO, SYSTEM_PYTHON, repro_json, run_repro
from hypothesis import given, settings
from hypothesis import strategies as st

from repro import cli

MB = 1024**2
SMALL = ("--n-res", "16", "--n-inner", "10", "--n-outer", "1", "3", "6")



def total_mb(document, variant, n_outer):
    case = next(c for c in document["cases"]
                if c["variant"] == variant and c["n_outer"] == n_outer)
    assert case["status"] == "ok", case
    return case["total_bytes"] / MB


def test_report_figures_under_0_10_2(jax_python):
    """The upstream report's figures, at its sizes: v0 grows by one stacked buffer per
    outer iteration, v1 and v2 stay at 30.52 MB."""
    doc = repro_json(jax_python("0.10.2"), "--n-outer", "5", "10", "15")
    for n_outer, expected in [(5, 15320), (10, 30579), (15, 45837)]:
        assert total_mb(doc, "v0", n_outer) == pytest.approx(expected, rel=0.005)
        for variant in ("v1", "v2"):
            assert round(total_mb(doc, variant, n_outer), 2) == 30.52
    assert doc["verdict"]["status"] == "grows"
    assert doc["verdict"]["growth_per_outer"] == pytest.approx(1.0, abs=0.02)
    assert doc["verdict"]["unit_bytes"] == 100 * 200**3 * 4


def test_json_document_fields(jax_python):
    doc = repro_json(jax_python("0.10.2"), *SMALL)
    for key in ("schema", "jax", "jaxlib", "numpy", "python", "backend", "device",
                "environment", "xla_flags", "params", "cases", "verdict"):
        assert key in doc, key
    assert doc["schema"] == 1
    assert (doc["jax"], doc["jaxlib"], doc["backend"], doc["device"]) == \
        ("0.10.2", "0.10.2", "cpu", "cpu")
    assert "jaxlib" in doc["environment"]
    assert doc["params"] == {"n_outer": [1, 3, 6], "n_inner": 10, "n_res": 16,
                             "dtype": "float32", "variants": [0, 1, 2], "v2_up_to": None}
    assert (doc["target"], doc["deviceless"]) == (None, False)  # a real run, on this CPU
    assert len(doc["cases"]) == 9
    for case in doc["cases"]:
        assert case["status"] == "ok"
        assert case["total_bytes"] == case["output_bytes"] + case["temp_bytes"] > 0
        assert {"argument_bytes", "alias_bytes", "generated_code_bytes"} <= set(case)
    assert set(doc["verdict"]) >= {"status", "growth_per_outer", "unit_bytes"}


def test_verdict_same_at_small_size_and_check_exit_codes(jax_python):
    """Scale-free: 0.10.2 grows at n_res 32 as at 200; 0.5.0 (CPU) is constant."""
    grows = run_repro(jax_python("0.10.2"), "--check", "--n-res", "32", "--n-outer", "1", "5",
                      "15")
    assert grows.returncode == 1, grows.stderr
    constant = run_repro(jax_python("0.5.0"), "--check", "--n-res", "32", "--n-outer", "1", "5",
                         "15")
    assert constant.returncode == 0, constant.stderr
    doc = repro_json(jax_python("0.10.2"), "--n-res", "32", "--variants", "v0")
    assert doc["verdict"]["growth_per_outer"] == pytest.approx(1.0, abs=0.02)


def test_zero_stats_release_is_unavailable_not_constant(jax_python):
    """jaxlib before 0.4.29 reports all-zero sizes on the CPU: unmeasured, exit 125."""
    python = jax_python("0.4.25")
    doc = repro_json(python, *SMALL)
    assert doc["jax"] == "0.4.25"
    assert doc["verdict"]["status"] == "unavailable"
    assert "0 bytes" in doc["verdict"]["reason"]
    # Every case is unmeasured, each with the reason; only the first is compiled (the rest
    # would spend seconds, v2 most, to say 0 again).
    assert [c["status"] for c in doc["cases"]] == ["unavailable"] * len(doc["cases"]) == \
        ["unavailable"] * 9
    assert doc["cases"][0]["compile_seconds"] is not None
    assert all(c["compile_seconds"] is None and "not compiled again" in c["error"]
               for c in doc["cases"][1:])
    check = run_repro(python, "--check", *SMALL)
    assert check.returncode == 125
    assert "Traceback" not in check.stderr


@pytest.mark.parametrize("version", ["0.4.20", "0.4.30", "0.5.0"])
def test_runs_cleanly_across_releases(jax_python, version):
    done = run_repro(jax_python(version), *SMALL)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"jax {version}" in done.stdout
    assert "verdict:" in done.stdout


@pytest.mark.parametrize("version,status", [("0.5.0", "constant"), ("0.10.2", "grows")])
def test_runtime_mode_agrees_with_compiled(jax_python, version, status):
    args = ("--n-res", "24", "--n-inner", "50", "--n-outer", "1", "2", "4", "--variants", "v0")
    compiled = repro_json(jax_python(version), *args)
    runtime = repro_json(jax_python(version), *args, "--mode", "runtime")
    assert compiled["verdict"]["status"] == runtime["verdict"]["status"] == status
    case = runtime["cases"][-1]
    assert case["mode"] == "runtime" and case["peak_bytes"] > case["baseline_bytes"]
    assert case["source"].startswith("process peak RSS")


def test_runtime_mode_refuses_what_cannot_fit(jax_python):
    done = run_repro(jax_python("0.10.2"), "--mode", "runtime", "--n-res", "2000")
    assert done.returncode == 2
    assert "--n-res" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("args,needle", [
    (["--n-outer", "0"], "at least 1"),
    (["--variants", "v7"], "unknown variant"),
    (["--n-res", "-3"], "at least 1"),
    (["--n-inner", "ten"], "not an integer"),
    (["--mode", "fast"], "invalid choice"),
    (["--n-res", "10000000"], "use --n-res 115410 or less"),  # issue 17, item 7
])
def test_bad_arguments_one_line_exit_2(args, needle):
    # Rejected before JAX is imported, so any Python will do.
    done = run_repro(SYSTEM_PYTHON, *args)
    assert done.returncode == 2
    assert needle in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


FAKE_GPU = r"""
import json, jax
from repro.measure import Params, runtime_child
from repro import core

class FakeGpu:
    # What a GPU's memory_stats() answers: bytes now, the peak so far, the limit.
    device_kind = "NVIDIA H200"
    def __init__(self):
        self.calls = 0
    def memory_stats(self):
        self.calls += 1
        if self.calls == 1:
            return {"bytes_in_use": 1000, "peak_bytes_in_use": 1000, "bytes_limit": 10**9}
        return {"bytes_in_use": 1000, "peak_bytes_in_use": 7000, "bytes_limit": 10**9}

gpu = FakeGpu()
jax.devices = lambda *args: [gpu]
case = runtime_child(0, 2, Params(n_res=8, n_inner=4))
limit = core._available_bytes()
print(json.dumps({"case": case, "limit": limit}))
"""


def test_runtime_mode_reads_device_peaks_where_the_backend_has_them(jax_python):
    """The GPU path's logic on the CPU: a device with memory_stats() is read, not RSS."""
    out = subprocess.run([str(jax_python("0.10.2")), "-c", FAKE_GPU], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    case = result["case"]
    assert case["status"] == "ok", case
    assert case["source"] == "device memory_stats peak_bytes_in_use"
    assert (case["baseline_bytes"], case["peak_bytes"], case["total_bytes"]) == (1000, 7000, 6000)
    assert result["limit"] == 10**9 - 1000


def test_xla_flags_as_people_type_them(jax_python):
    """`--xla-flags "--xla_foo=…"` (a value starting with dashes) reaches XLA_FLAGS; one
    flag alone is the case argparse got wrong (a value with a space never looked like an
    option)."""
    for flags in ("--xla_cpu_enable_fast_math=false",
                  "--xla_cpu_enable_fast_math=false --xla_cpu_use_thunk_runtime=true"):
        doc = repro_json(jax_python("0.5.0"), "--xla-flags", flags, "--n-res", "8",
                         "--n-inner", "10", "--n-outer", "1", "2", "3", "--variants", "v0")
        assert doc["xla_flags"] == flags


@settings(max_examples=200, deadline=None)
@given(value=st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                     max_size=40).filter(lambda text: text != "--"),
       glued=st.booleans())
def test_any_flag_value_parses_either_way(value, glued):
    argv = [f"--xla-flags={value}"] if glued else ["--xla-flags", value]
    assert cli.parse_args([*argv, "--n-res", "8"]).xla_flags == value


def test_the_no_jax_hint_names_the_real_cache(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_SCAN_REPRO_CACHE", "PYTHONPATH")}
    done = subprocess.run([str(SYSTEM_PYTHON), "-m", "repro"], cwd=REPO, capture_output=True,
                          text=True, env={**env, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert done.returncode == 2
    assert f"{tmp_path}/xdg/jax-scan-repro/envs/" in done.stderr
    assert "~/.cache" not in done.stderr


def test_help_says_why_an_unmeasurable_answer_exits_0_and_what_exits_125():
    """Issue 17, item 12: the status of a run that cannot measure is explained in --help."""
    done = run_repro(SYSTEM_PYTHON, "--help")
    assert done.returncode == 0
    statuses = done.stdout.split("exit status:", 1)[1]
    assert "unavailable" in statuses and "125" in statuses and "--check" in statuses
    assert "130" in statuses
