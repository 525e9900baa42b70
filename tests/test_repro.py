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
from repro.case import series_at
from repro.units import MIB

MB = MIB  # repro.units: sizes are shown in MiB
SMALL = ("--n-res", "16", "--n-inner", "10", "--n-outer", "1", "3", "6")



def series(document, variant):
    """The variant's series: v0 is the case's own, v1 and v2 measured beside it."""
    first = f"v{document['case']['params']['variant']}"
    return document["metric"] if variant == first else document["compare"][variant]


def total_mb(document, variant, n_outer):
    point = next(p for p in series(document, variant)["points"] if p["at"] == n_outer)
    assert point["status"] == "ok", point
    return point["value"] / MB


@pytest.mark.full  # the report's sizes; the A6000's report figures: test_target
def test_report_figures_under_0_10_2(jax_python):
    """The upstream report's figures, at its sizes: v0 grows by one stacked buffer per
    outer iteration, v1 and v2 stay at 30.52 MiB."""
    doc = repro_json(jax_python("0.10.2"), "--n-outer", "5", "10", "15")
    for n_outer, expected in [(5, 15320), (10, 30579), (15, 45837)]:
        assert total_mb(doc, "v0", n_outer) == pytest.approx(expected, rel=0.005)
        for variant in ("v1", "v2"):
            assert round(total_mb(doc, variant, n_outer), 2) == 30.52
    shape = doc["metric"]["shape"]
    assert shape["status"] == "grows"
    assert shape["growth_per_outer"] == pytest.approx(1.0, abs=0.02)
    assert shape["unit_bytes"] == 100 * 200**3 * 4


def test_json_document_is_the_scan_cases(jax_python):
    """`python -m repro` is the scan case's harness: its document, the sizes as parameters,
    n_outer as the series, v1 and v2 beside it."""
    doc = repro_json(jax_python("0.10.2"), *SMALL)
    for key in ("schema", "jax", "jaxlib", "numpy", "python", "backend", "device",
                "environment", "xla_flags", "case", "metric", "compare"):
        assert key in doc, key
    assert (doc["jax"], doc["jaxlib"], doc["backend"], doc["device"]) == \
        ("0.10.2", "0.10.2", "cpu", "cpu")
    assert "jaxlib" in doc["environment"]
    assert doc["case"]["name"] == "scan_growth"
    assert doc["case"]["params"] == {"n_outer": 10, "n_inner": 10, "n_res": 16, "variant": 0,
                                     "dtype": "float32"}
    assert doc["metric"]["over"] == {"name": "n_outer", "values": [1, 3, 6]}
    assert (doc["target"], doc["deviceless"]) == (None, False)  # a real run, on this CPU
    assert list(doc["compare"]) == ["v1", "v2"]
    for variant in ("v0", "v1", "v2"):
        points = series(doc, variant)["points"]
        assert [p["at"] for p in points] == [1, 3, 6]
        for p in points:
            assert p["status"] == "ok" and p["source"] == "memory_analysis()"
            assert p["value"] == p["fields"]["output_bytes"] + p["fields"]["temp_bytes"] > 0
    assert set(doc["metric"]["shape"]) >= {"status", "growth_per_outer", "unit_bytes"}


@pytest.mark.full  # n_outer up to 15; --check's codes: test_case_releases
def test_verdict_same_at_small_size_and_check_exit_codes(jax_python):
    """Scale-free: 0.10.2 grows at n_res 32 as at 200; 0.5.0 (CPU) is constant."""
    grows = run_repro(jax_python("0.10.2"), "--check", "--n-res", "32", "--n-outer", "1", "5",
                      "15")
    assert grows.returncode == 1, grows.stderr
    constant = run_repro(jax_python("0.5.0"), "--check", "--n-res", "32", "--n-outer", "1", "5",
                         "15")
    assert constant.returncode == 0, constant.stderr
    doc = repro_json(jax_python("0.10.2"), "--n-res", "32", "--variants", "v0")
    assert doc["metric"]["shape"]["growth_per_outer"] == pytest.approx(1.0, abs=0.02)
    assert "compare" not in doc or doc["compare"] == {}


def test_the_built_in_options_spell_the_case_harness(jax_python):
    """The same question asked both ways gives the same figures (one pipeline)."""
    python = jax_python("0.10.2")
    built_in = repro_json(python, *SMALL, "--variants", "v0")
    case = repro_json(python, "--case", "repro/cases/scan_growth.py", "--over",
                      "n_outer=1,3,6", "--param", "n_res=16", "--param", "n_inner=10")
    assert [p["value"] for p in built_in["metric"]["points"]] == \
        [p["value"] for p in case["metric"]["points"]]
    assert built_in["metric"]["shape"] == case["metric"]["shape"]


@pytest.mark.full  # real runs' peaks at RUNTIME_PARAMS
def test_zero_stats_release_is_unavailable_not_constant(jax_python):
    """jaxlib before 0.4.29 reports all-zero sizes on the CPU: the compiled plan says 0
    bytes (compiled once: the other values would say so again), so v0's shape is a real
    run's peaks at the case's RUNTIME_PARAMS instead, said as such (the fallback), never a
    compiled "constant"."""
    python = jax_python("0.4.25")
    doc = repro_json(python, "--n-res", "16", "--n-outer", "1", "2", "5", "--variants", "v0")
    assert doc["jax"] == "0.4.25"
    fallback = doc["metric"]["fallback"]
    assert fallback["metric"] == "peak_memory" and "0 bytes" in fallback["reason"]
    assert fallback["params"]["n_res"] == 32 and fallback["values"] == [1, 2, 5]
    assert doc["metric"]["shape"]["status"] == "constant"
    assert {p["source"] for p in doc["metric"]["points"]} == {"process peak RSS above baseline"}
    # Too few values where a real run fits: no shape, exit 125 (the document says why).
    done = run_repro(python, "--json", "--quiet", *SMALL, "--variants", "v0")
    assert done.returncode == 125, done.stderr
    assert json.loads(done.stdout)["metric"]["status"] == "unavailable"
    check = run_repro(python, "--check", *SMALL)
    assert check.returncode == 125
    assert "Traceback" not in check.stderr


# 0.4.20 (real runs: its statistics are empty) and 0.4.30: nox -s tests_full
@pytest.mark.parametrize("version", [pytest.param("0.4.20", marks=pytest.mark.full),
                                     pytest.param("0.4.30", marks=pytest.mark.full), "0.5.0"])
def test_runs_cleanly_across_releases(jax_python, version):
    """0.4.20's shape comes from a real run (its compiled statistics are empty): n_outer
    values a real run fits (the case's RUNTIME_PARAMS: 1, 2, 5, 10)."""
    done = run_repro(jax_python(version), "--n-res", "16", "--n-inner", "10", "--n-outer",
                     "1", "2", "5")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"jax {version}" in done.stdout
    assert "shape:" in done.stdout


@pytest.mark.parametrize("version,status", [
    pytest.param("0.5.0", "constant", marks=pytest.mark.full), ("0.10.2", "grows")])
def test_runtime_mode_agrees_with_compiled(jax_python, version, status):
    args = ("--n-res", "24", "--n-inner", "50", "--n-outer", "1", "2", "4", "--variants", "v0")
    compiled = repro_json(jax_python(version), *args)
    runtime = repro_json(jax_python(version), *args, "--mode", "runtime")
    assert compiled["metric"]["shape"]["status"] == runtime["metric"]["shape"]["status"] == status
    assert runtime["metric"]["name"] == "peak_memory"
    point = runtime["metric"]["points"][-1]
    assert point["value"] > 0 and point["source"].startswith("process peak RSS")
    # Each real peak carries the plan of the same program, compiled in the same fresh process:
    # its output + temp is the compiled mode's own figure.
    for planned, ran in zip(compiled["metric"]["points"], runtime["metric"]["points"]):
        fields = ran["plan"]["fields"]
        assert fields["output_bytes"] + fields["temp_bytes"] == planned["value"]
        assert ran["plan"]["bytes"] >= planned["value"]


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
    (["--n-outer", "3"], "two or more values"),
])
def test_bad_arguments_one_line_exit_2(args, needle):
    # Rejected before JAX is imported, so any Python will do.
    done = run_repro(SYSTEM_PYTHON, *args)
    assert done.returncode == 2
    assert needle in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


FAKE_GPU = r"""
import json, jax
from repro.measure import peak_of_run

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
print(json.dumps(peak_of_run(lambda: jax.numpy.zeros(3))))
"""


def test_runtime_mode_reads_device_peaks_where_the_backend_has_them(jax_python):
    """The GPU path's logic on the CPU: a device with memory_stats() is read, not RSS."""
    out = subprocess.run([str(jax_python("0.10.2")), "-c", FAKE_GPU], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    peak = json.loads(out.stdout.strip().splitlines()[-1])
    assert {k: peak[k] for k in ("source", "baseline_bytes", "peak_bytes")} == {
        "source": "device memory_stats peak_bytes_in_use", "baseline_bytes": 1000,
        "peak_bytes": 7000}  # nothing reserved: in use alone
    assert peak["device_stats"]["peak_bytes_in_use"] == 7000


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


def test_help_says_why_an_unmeasurable_answer_exits_125():
    """Issue 17, item 12: the status of a run that cannot measure is explained in --help."""
    done = run_repro(SYSTEM_PYTHON, "--help")
    assert done.returncode == 0
    statuses = done.stdout.split("exit status:", 1)[1]
    assert "unavailable" in statuses and "125" in statuses and "--check" in statuses
    assert "130" in statuses


# -- python -m repro is the scan case's harness: its options are spellings -------------------

SCAN = str(REPO / "repro" / "cases" / "scan_growth.py")


@settings(max_examples=60, deadline=None)
@given(n_outer=st.sets(st.integers(1, 30), min_size=2, max_size=6),
       variants=st.sets(st.sampled_from([0, 1, 2]), min_size=1),
       n_res=st.integers(1, 300), n_inner=st.integers(1, 200),
       dtype=st.sampled_from(["float32", "float64", "bfloat16"]),
       runtime=st.booleans(), up_to=st.one_of(st.none(), st.integers(1, 30)))
def test_the_size_options_spell_the_case_harness(n_outer, variants, n_res, n_inner, dtype,
                                                 runtime, up_to):
    """Whatever the report's words, the harness reads them as the case's question: n_outer
    the series, the sizes the parameters, the first variant the program and the others
    beside it (v2 only to --v2-up-to)."""
    argv = ["--n-outer", *map(str, n_outer), "--n-res", str(n_res), "--n-inner", str(n_inner),
            "--dtype", dtype, "--variants", *(f"v{v}" for v in variants),
            "--mode", "runtime" if runtime else "compiled",
            *(["--v2-up-to", str(up_to)] if up_to else [])]
    args = cli.parse_args(argv)
    first, *others = sorted(variants)
    assert args.over == ("n_outer", tuple(sorted(n_outer)))
    assert args.params == {"n_inner": n_inner, "n_res": n_res, "dtype": dtype,
                           "variant": first}
    assert args.metric == ("peak_memory" if runtime else "memory")
    assert list(args.compare) == [f"v{v}" for v in others]
    for v in others:
        limited = v == 2 and up_to is not None
        assert args.compare[f"v{v}"] == {"variant": v, **(
            {"n_outer": tuple(n for n in sorted(n_outer) if n <= up_to)} if limited else {})}


def test_the_compare_programs_need_a_series(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.parse_args(["--case", SCAN, "--compare", "--over", "none"])
    assert exit_.value.code == 2 and "--compare" in capsys.readouterr().err
    args = cli.parse_args(["--case", SCAN, "--compare"])
    assert args.compare == {"v1": {"variant": 1}, "v2": {"variant": 2, "n_outer": (1, 2)}}
    assert cli.parse_args(["--case", SCAN]).compare == {}
    beside = series_at(args.over, {**args.params, **args.compare["v2"]})
    assert beside == ({"variant": 2}, (1, 2))  # its own values, whichever are asked
    with pytest.raises(SystemExit):
        cli.parse_args(["--case", SCAN, "--metric", "compile_time", "--sizes-from", "dump"])
