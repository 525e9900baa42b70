"""Function and command cases on real releases: the harness's metrics, and the bisect driver
by a metric, end to end (real environments, real subprocesses)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, cache_sharing_environments, repro_json, run_repro

SCAN = str(REPO / "repro" / "cases" / "scan_growth.py")
SMALL = ["--param", "n_res=32", "--param", "n_outer=3", "--over", "none"]


def write_case(tmp_path: Path, body: str, name: str = "mine.py") -> str:
    path = tmp_path / name
    path.write_text("import jax\nimport jax.numpy as jnp\n\n" + body)
    return str(path)


def bisect(*args: str, timeout: float = 900, env: dict | None = None
           ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxbisect", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.full  # one pipeline: test_repro's built-in options spell the case harness
def test_case_memory_is_the_builtin_harness_figure(jax_python):
    """The scan report as a case gives v0's figure of the built-in harness, byte for byte."""
    for version in ("0.5.0", "0.5.1"):
        case = repro_json(jax_python(version), "--case", SCAN, "--metric", "memory", *SMALL)
        builtin = repro_json(jax_python(version), "--n-res", "32", "--n-outer", "3", "5",
                             "--variants", "v0")
        assert case["metric"]["status"] == "ok" and case["metric"]["kind"] == "deterministic"
        assert case["metric"]["samples"] == [builtin["metric"]["points"][0]["value"]]
        assert case["case"]["params"]["n_outer"] == 3 and case["jax"] == version


def test_a_target_case_reads_the_plan_from_the_dump(target_python):
    """jax 0.5.0 has no memory_analysis() for a compile-only GPU: the case's figure comes from
    XLA's buffer-assignment dump, the same as the built-in harness's (the report's A6000)."""
    python = target_python("0.5.0")
    case = repro_json(python, "--case", SCAN, "--metric", "memory", "--target", "a6000",
                      "--param", "n_outer=5", "--over", "none")
    builtin = repro_json(python, "--target", "a6000", "--variants", "v0", "--n-outer", "5", "10")
    metric = case["metric"]
    assert metric["source"] == "XLA buffer-assignment dump" and case["deviceless"]
    assert metric["samples"] == [builtin["metric"]["points"][0]["value"]]
    assert round(metric["value"] / 1024**2, 2) == 15289.31  # the upstream report's figure


def test_timing_output_error_and_peak_metrics(jax_python, tmp_path):
    python = jax_python("0.10.2")
    path = write_case(tmp_path, '''
def case(n=256, fail=False):
    @jax.jit
    def f(x):
        if fail:
            raise ValueError("boom at 0x7f00aa")
        return jnp.sin(x) @ x
    return f, (jax.ShapeDtypeStruct((n, n), jnp.float32),)
''')
    run_time = repro_json(python, "--case", path, "--metric", "run_time")["metric"]
    assert run_time["kind"] == "noisy" and len(run_time["samples"]) >= 5
    assert all(s > 0 for s in run_time["samples"]) and run_time["warmup"]
    assert run_time["min"] <= run_time["value"] <= run_time["max"]
    compile_time = repro_json(python, "--case", path, "--metric", "compile_time",
                              "--samples", "2")["metric"]
    assert len(compile_time["samples"]) == 2
    outputs = [repro_json(python, "--case", path, "--metric", "output")["metric"]
               for _ in range(2)]
    assert outputs[0]["samples"] == outputs[1]["samples"]  # seeded data: the same digest
    assert outputs[0]["value"]["shapes"] == [[[256, 256], "float32"]]
    ok = repro_json(python, "--case", path, "--metric", "error")["metric"]
    assert ok["samples"] == ["no error"]
    raised = repro_json(python, "--case", path, "--metric", "error", "--param",
                        "fail=true")["metric"]
    assert raised["status"] == "ok" and raised["samples"] == ["ValueError: boom at 0x…"]
    # For any other metric a program that raises is measured as such: status error, exit 125.
    done = run_repro(python, "--json", "--quiet", "--case", path, "--metric", "memory",
                     "--param", "fail=true")
    assert done.returncode == 125
    assert json.loads(done.stdout)["metric"]["error"].startswith("ValueError: boom")
    big = write_case(tmp_path, '''
def case(mb=64):
    n = mb * 1024 * 1024 // 4
    return jax.jit(lambda x: (x + 1.0) * 2.0), (jax.ShapeDtypeStruct((n,), jnp.float32),)
''', "big.py")
    peak = repro_json(python, "--case", big, "--metric", "peak_memory", "--samples",
                      "2")["metric"]
    assert len(peak["samples"]) == 2 and min(peak["samples"]) >= 60 * 1024**2


@pytest.mark.parametrize("args, words", [
    (["--case", "/nonexistent/case.py"], "no case file"),
    (["--case", SCAN, "--param", "n_res=big"], "is an int"),
    (["--case", SCAN, "--param", "colour=red"], "no parameter"),
    (["--case", SCAN, "--metric", "speed"], "invalid choice"),
    (["--case", SCAN, "--metric", "run_time", "--target", "a6000"], "without the GPU"),
])
def test_harness_bad_input_is_one_line(args, words):
    done = subprocess.run([sys.executable, "-m", "repro", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr


def results_files(cache: Path) -> set[Path]:
    return set((cache / "results").rglob("metric-*.json"))


@pytest.mark.jax
def test_bisects_a_case_by_memory_and_reruns_from_the_store(tmp_path, jax_python):
    for version in ("0.5.0", "0.5.1", "0.5.2"):
        jax_python(version)
    args = ["--from", "0.5.0", "--to", "0.5.2", "--backend", "cpu", "--case", SCAN, *SMALL,
            "--reports", str(tmp_path), "--json"]
    # A store of its own: the rerun must read back exactly what the first run stored, while
    # other workers' tests may store the same runs meanwhile (with their own seconds).
    env = cache_sharing_environments(tmp_path / "cache")
    first = bisect(*args, env=env)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert (doc["kind"], doc["status"], doc["direction"], doc["exact"]) == (
        "metric", "found", "regression", True)
    assert doc["last_old"]["jax"] == "0.5.0" and doc["first_new"]["jax"] == "0.5.1"
    assert doc["metric"] == {"name": "memory", "unit": "bytes", "kind": "deterministic",
                             "threshold": None, "tolerance": {"relative": 0.01}}
    assert doc["case"]["params"]["n_res"] == 32 and "def case(" in doc["case"]["source"]
    labels = {p["jax"]: p["label"] for p in doc["probes"]}
    assert labels == {"0.5.0": "old", "0.5.1": "new", "0.5.2": "new"}
    a = doc["attribution"]
    assert (a["lowering"], a["optimized_hlo"], a["culprit"]) == ("identical", "differs", "xla")
    # Offline, the XLA pins from the shipped table, and the hand-off below the release with
    # the case's own check as the test.
    assert a["xla_commits"]["old"] and a["xla_commits"]["new"]
    test = a["triage"]["test"]
    assert test[:3] == ["python", "-m", "repro"] and "--check" in test
    old_figure, new_figure = test[-2:]
    for version, status in (("0.5.0", 0), ("0.5.1", 1)):
        done = run_repro(jax_python(version), *test[3:], "-q")
        assert done.returncode == status, done.stderr
    # The flag behind it, proven both ways with the case's own metric and classifier.
    why = doc["explanation"]["culprit"]
    assert (why["kind"], why["name"]) == (
        "flag", "--xla_cpu_enable_concurrency_optimized_scheduler")
    behaviour = {(t["release"], t["xla_flags"]): t["behaviour"] for t in why["tests"]}
    assert behaviour[("0.5.1", "--xla_cpu_enable_concurrency_optimized_scheduler=false")] == "old"
    assert behaviour[("0.5.0", "--xla_cpu_enable_concurrency_optimized_scheduler=true")] == "new"
    # The buffers at the peak: one more stacked buffer live under the new release.
    buffers = doc["evidence"]["releases"]
    assert (buffers["old"]["stacked"]["slots"], buffers["new"]["stacked"]["slots"]) == (2, 3)
    assert doc["evidence"]["new_at_peak"][0]["shape"] == "f32[100,32,32,32]"
    assert "--case" in doc["reproduce"] and "--param n_res=32" in doc["reproduce"]
    report = Path(doc["report"]).read_text()
    assert "```python" in report and "pip install jax==0.5.1 jaxlib==0.5.1" in report
    again = json.loads(bisect(*args, env=env).stdout)
    assert all(p["cached"] for p in again["probes"])
    assert again["evidence"] == doc["evidence"]  # read back from the store
    assert again["probes"] == [dict(p, runs=[dict(r, cached=True) for r in p["runs"]],
                                    cached=True) for p in doc["probes"]]


@pytest.mark.jax
def test_bisects_a_command_by_a_field_of_its_json(tmp_path, jax_python):
    for version in ("0.5.0", "0.5.1", "0.5.2"):
        jax_python(version)
    done = bisect("--from", "0.5.0", "--to", "0.5.2", "--backend", "cpu", "--metric", "bytes",
                  "--metric-kind", "deterministic", "--reports", str(tmp_path), "--json",
                  "--remeasure", "--",
                  "python", str(REPO / "tests" / "data" / "scan_memory_command.py"))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["status"] == "found" and doc["first_new"]["jax"] == "0.5.1"
    assert doc["metric"]["kind"] == "deterministic" and doc["case"] is None
    assert "measured with jax 0.5.1" in done.stderr  # the command's output, on stderr


@pytest.mark.jax
def test_a_command_without_the_field_is_bad_input_and_stores_nothing(tmp_path, jax_python):
    jax_python("0.5.0")
    # A store of its own: other workers' tests write to the shared one meanwhile.
    cache = tmp_path / "cache"
    env = cache_sharing_environments(cache)
    before = results_files(cache)
    done = bisect("--from", "0.5.0", "--to", "0.5.2", "--backend", "cpu", "--metric", "speed",
                  "--reports", str(tmp_path / "reports"), "--", "python",
                  str(REPO / "tests" / "data" / "scan_memory_command.py"), env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no field 'speed'" in done.stderr.strip().splitlines()[-1]
    assert results_files(cache) == before


@pytest.mark.parametrize("args, words", [
    (["--case", "/nonexistent.py"], "no case file"),
    (["--case", SCAN, "--param", "n_res=x"], "is an int"),
    (["--case", SCAN, "--metric", "speed"], "one of"),
    # No --case is the scan case: its metrics and its parameters.
    (["--metric", "t"], "a case measures one of"),
    (["--param", "n=1"], "scan_growth has no parameter 'n'"),
])
def test_driver_bad_input_is_one_line_and_fetches_nothing(args, words, tmp_path):
    done = bisect("--from", "0.5.0", "--to", "0.5.2", "--reports", str(tmp_path), *args,
                  timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and words in done.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.jax
@pytest.mark.full  # the sweep on real releases: test_sweep
def test_sweeps_a_case_over_releases(tmp_path, jax_python):
    """Every release's figure, where bisection would only see the ends."""
    for version in ("0.5.0", "0.5.1"):
        jax_python(version)
    done = subprocess.run([sys.executable, "-m", "jaxbisect.sweep", "--release", "0.5.0",
                           "0.5.1", "--backend", "cpu", "--case", SCAN, *SMALL,
                           "--reports", str(tmp_path)], cwd=REPO, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    folder = tmp_path  # --reports: where the results go
    results = {p.name: json.loads(p.read_text()) for p in folder.glob("jax-*.json")}
    assert set(results) == {"jax-0.5.0-cpu.json", "jax-0.5.1-cpu.json"}
    old, new = (results[f"jax-{v}-cpu.json"] for v in ("0.5.0", "0.5.1"))
    assert new["figure"]["median"] > old["figure"]["median"] * 1.4
    assert new["runs"][0]["samples"] == [new["figure"]["median"]]  # one run: memory is exact
    assert (old["label"], new["label"]) == ("old", "new")  # labelled as a bisection's ends
    table = (folder / "README.md").read_text()
    assert table.count("| old ") == 1 and table.count("| new ") == 1


@pytest.mark.jax
@pytest.mark.full  # 17+ trials
def test_minimize_shrinks_a_case_and_the_pair_still_tells_apart(tmp_path, jax_python):
    for version in ("0.5.0", "0.5.1"):
        jax_python(version)
    given = {"n_outer": 3, "n_inner": 4, "n_res": 4}
    args = ["--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--case", SCAN,
            *[a for k, v in given.items() for a in ("--param", f"{k}={v}")], "--over", "none",
            "--no-evidence", "--json", "--reports", str(tmp_path)]
    done = bisect(*args, "--minimize")
    assert done.returncode == 0, done.stderr
    minimal = json.loads(done.stdout)["minimal"]
    assert minimal["kept_at_start"] and minimal["complete"]
    assert all(minimal["params"][k] <= v for k, v in given.items())
    assert any(minimal["params"][k] < v for k, v in given.items())
    assert minimal["params"]["variant"] == 0  # FIXED in the case
    assert f"def case(n_outer={minimal['params']['n_outer']}" in minimal["program"]
    # The pair at the minimal parameters: the same answer.
    rerun = [a for a in args if a not in ("--param",) and "=" not in a]
    rerun += [a for k in given for a in ("--param", f"{k}={minimal['params'][k]}")]
    again = json.loads(bisect(*rerun).stdout)
    assert (again["status"], again["direction"]) == ("found", "regression")
    assert (again["last_old"]["jax"], again["first_new"]["jax"]) == ("0.5.0", "0.5.1")


@pytest.mark.jax
@pytest.mark.full  # every pass's run; the pipeline's explanation: the memory bisection above
def test_explain_one_release_names_the_passes_that_shape_a_case(tmp_path, jax_python):
    jax_python("0.5.1")
    done = bisect("--explain", "0.5.1", "--backend", "cpu", "--case", SCAN, *SMALL, "--json",
                  "--reports", str(tmp_path))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    e = doc["explanation"]
    assert doc["kind"] == "metric-explain" and e["release"] == "0.5.1"
    assert e["culprit"]["kind"] == "pass" and e["culprit"]["name"] in e["passes_changed"]
    named = [t for t in e["tests"] if t["changes"]]
    assert named and all(t["figure"] != e["baseline"] for t in named)
    assert doc["reproduce"].startswith("python -m bisect --explain 0.5.1 --backend cpu --case")


def test_a_case_raising_and_a_compile_error_exit_alike(jax_python, tmp_path):
    """Inside case() or in compiling its function: no figure, 125; under the error metric
    both are measured (exit 0, the error is the value); under --check, 125 (docs/cases.md)."""
    raises = write_case(tmp_path, "def case(n=4):\n    raise ValueError('no such size')\n",
                        "raises.py")
    bad = write_case(tmp_path, "def case(n=4):\n    return jax.jit(lambda x: jnp.dot(x, "
                               "jnp.ones((n + 1, 3)))), (jnp.ones((2, n)),)\n", "bad.py")
    python = jax_python("0.5.3")
    for case in (raises, bad):
        codes = [run_repro(python, "--case", case, "--metric", metric, "-q", *more).returncode
                 for metric, more in (("memory", ()), ("error", ()),
                                      ("memory", ("--check", "1", "2")))]
        assert codes == [125, 0, 125], case


def test_a_hanging_case_hangs_once_an_end_and_answers(jax_python, tmp_path):
    """A while_loop that never ends: each end's first run stops at the limit and is not run
    again; the answer says it hangs."""
    jax_python("0.5.2"), jax_python("0.5.3")  # releases other tests install anyway
    hanging = str(REPO / "tests" / "data" / "cases" / "hanging_while_loop.py")
    # 2 s: any limit ends it (a run is hung past it, whatever the machine's speed)
    done = bisect("--from", "0.5.2", "--to", "0.5.3", "--case", hanging, "--timeout", "2",
                  "--reports", str(tmp_path), "--json", timeout=300)
    assert done.returncode == 125, done.stderr[-2000:]   # cannot measure
    doc = json.loads(done.stdout)
    assert doc["status"] == "unmeasurable" and "hangs past 2 s" in doc["reason"]
    assert doc["time_limit"] == {"seconds": 2.0, "why": "--timeout", "explicit": True}
    for probe in doc["probes"]:
        assert [r["status"] for r in probe["runs"]] in (["hung"], [])


@pytest.mark.full  # the case's full sizes; small: test_bisect
def test_the_scan_case_bisects_by_its_shape_with_the_builtin_figures(tmp_path, jax_python):
    """No --over: the case's own (n_outer 1 … 15, searched at n_res 32, v1 and v2 beside):
    the built-in report's answer and MB figures (reports/bisect-0.5.0-0.5.1-cpu.md)."""
    for version in ("0.5.0", "0.5.1"):
        jax_python(version)
    done = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--case", SCAN,
                  "--no-evidence", "--json", "--reports", str(tmp_path))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["status"], doc["direction"]) == ("found", "regression")
    assert doc["search_size"]["agreed"] and doc["search_size"]["params"] == {"n_res": 32}
    assert doc["search_size"]["over"] == [2, 5]
    old, new = (p["series"] for p in doc["probes"])
    assert (old["shape"], new["shape"]) == ("constant (+0.00/outer)", "grows (+1.00/outer)")
    assert [round(f / 1024**2, 2) for f in new["figures"].values()] == [
        3112.79, 6164.55, 15319.82, 30578.61, 45837.40]
    for probe in doc["probes"]:
        for label in ("v1", "v2"):
            assert {round(f / 1024**2, 2) for f in probe["compare"][label]["figures"].values()} \
                == {30.52}


@pytest.mark.full  # real runs' peaks; test_repro's fallback is full too
def test_empty_compiled_statistics_fall_back_to_a_real_runs_peak(jax_python):
    """jaxlib < 0.4.29 on the CPU reports 0 bytes: the shape comes from a real run's peak RSS
    at the case's RUNTIME_PARAMS, and is still "constant"."""
    doc = repro_json(jax_python("0.4.20"), "--case", SCAN, "--param", "n_res=16")
    metric = doc["metric"]
    assert metric["fallback"]["metric"] == "peak_memory"
    # The columns asked for stay (a table's); what the real runs measured is the fallback's.
    assert metric["over"]["values"] == [1, 2, 5, 10, 15]
    assert metric["fallback"]["values"] == [1, 2, 5, 10] and metric["samples"][0][0] == "constant"
    assert all(p["source"].startswith("process peak RSS") for p in metric["points"])
