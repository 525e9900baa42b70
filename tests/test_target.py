"""``--target``: XLA's plan for an NVIDIA GPU, compiled on a machine without one.

Real releases in real compile-only CUDA environments (no GPU here); the GPU itself is out of
reach, so what a real GPU would print is only ever a recorded document in these tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import conftest
import pytest
from conftest import REPO, SYSTEM_PYTHON, run_repro
from packaging.version import Version

from jaxbisect.lab.backends.cuda12 import CUDA12_COMPILE_ONLY, compile_only_reason
from jaxbisect.lab.environments import install_plan
from repro import gpu_target
from repro import target as targets
from repro.measure import sizes_from_buffer_assignment

MB = 1024**2
SMALL = ("--n-res", "16", "--n-inner", "10", "--n-outer", "2", "3", "5", "--variants", "v0", "v1")


repro_json = conftest.repro_json


def cases(document):
    """The scan case's figures: (variant, n_outer) -> the point's fields, total, status,
    source and error (v0's series, the other --variants beside it)."""
    m = document["metric"]
    programs = {f"v{document['case']['params']['variant']}": m, **document.get("compare", {})}
    return {(label, p["at"]): {**p.get("fields", {}), "total_bytes": p["value"],
                               "status": p["status"], "source": p.get("source"),
                               "error": p["error"]}
            for label, got in programs.items() for p in got.get("points", [])}


# -- the specs ----------------------------------------------------------------------------

def test_built_in_targets_are_the_report_gpu_and_the_common_ones():
    assert {"a6000", "a100", "h100", "h200"} == set(targets.built_in("gpu"))
    assert set(targets.built_in("gpu")) < set(targets.built_in())  # and the other kinds'
    a6000 = targets.load("A6000")
    assert a6000.description == "NVIDIA RTX A6000"
    assert a6000.source == "built in: repro/targets/a6000.txtpb"
    for name in targets.built_in("gpu"):
        text = targets.load(name).text
        assert "Apache License, Version 2.0" in text and "openxla/xla/blob/" in text
        fields = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        # Trimmed so that old jaxlibs parse it (jaxlib 0.5.0 rejects feature_extension).
        for newer in ("feature_extension", "dnn_version:", "thread_dim_limit", "rate_infos"):
            assert newer not in fields, (name, newer)


def test_a_spec_file_path_works_and_bad_ones_say_why(tmp_path):
    spec = tmp_path / "mine.txtpb"
    spec.write_text(targets.load("h100").text.replace("H100 80GB HBM3", "H100 (mine)"))
    mine = targets.load(str(spec))
    assert (mine.name, mine.description, mine.source) == ("mine", "NVIDIA H100 (mine)",
                                                          str(spec))
    with pytest.raises(targets.TargetError, match="unknown target 'b999'.*a6000"):
        targets.load("b999")
    with pytest.raises(targets.TargetError, match="cannot read"):
        targets.load(str(tmp_path / "missing.txtpb"))
    (tmp_path / "junk.txtpb").write_text("hello")
    with pytest.raises(targets.TargetError, match="not a GPU target spec"):
        targets.load(str(tmp_path / "junk.txtpb"))


# -- which releases, which packages ---------------------------------------------------------

@pytest.mark.parametrize("version, can", [("0.4.20", False), ("0.4.33", False), ("0.4.34", True),
                                          ("0.4.35", True), ("0.4.36", False),
                                          ("0.4.37", False), ("0.4.38", True), ("0.5.0", True),
                                          ("0.10.2", True)])
def test_which_releases_compile_without_a_gpu(version, can):
    why = compile_only_reason(Version(version))
    assert (why is None) is can
    assert can or CUDA12_COMPILE_ONLY.needs_device(why)


def test_the_small_install(recorded_catalogue):
    plan = install_plan(recorded_catalogue.get("0.5.0"), CUDA12_COMPILE_ONLY)
    assert plan.requirements == ("jax==0.5.0", "jaxlib==0.5.0", "jax-cuda12-plugin==0.5.0",
                                 "jax-cuda12-pjrt==0.5.0", "nvidia-cuda-nvcc-cu12")
    assert plan.exclude_newer is not None and plan.find_links is None
    assert not any("with_cuda" in r or "[cuda12]" in r for r in plan.requirements)


# -- the dump reader ------------------------------------------------------------------------

def test_buffer_assignment_sizes_follow_memory_analysis_rules():
    text = "\n".join([
        "allocation 0: size 32000000, output shape is |f32[200,200,200]|, maybe-live-out:",
        " value: <1 x @0> (size=32000000,offset=0): f32[200,200,200]{2,1,0}",
        "allocation 1: size 32000000, parameter 0, shape |f32[200,200,200]| at ShapeIndex {}:",
        "allocation 2: size 4, constant:",
        "allocation 3: size 64, thread-local:",
        "allocation 4: size 16000001537, preallocated-temp:",
        "allocation 5: size 128:"])
    assert sizes_from_buffer_assignment(text) == {
        "argument_bytes": 32000000, "output_bytes": 32000000, "temp_bytes": 16000001537 + 128}
    with pytest.raises(ValueError):
        sizes_from_buffer_assignment("no allocations here")


# -- real releases --------------------------------------------------------------------------

def test_report_figures_for_the_a6000_under_0_5_0(target_python):
    """The upstream report's own numbers, to the hundredth of a MB, on a machine with no GPU:
    jax 0.5.0's memory_analysis() is None for a compile-only GPU, so they come from XLA's
    buffer-assignment dump."""
    doc = repro_json(target_python("0.5.0"), "--target", "a6000", "--n-outer", "5", "10", "15",
                     "--variants", "v0", "v1")
    found = cases(doc)
    assert [round(found["v0", n]["total_bytes"] / MB, 2) for n in (5, 10, 15)] == \
        [15289.31, 30548.10, 45806.89]
    assert {round(found["v1", n]["total_bytes"] / MB, 2) for n in (5, 10, 15)} == {30.52}
    assert {c["source"] for c in cases(doc).values()} == {"XLA buffer-assignment dump"}
    # Nothing a tool reads (backend, device) says "gpu" or the GPU's bare name: a real run on
    # an A6000 says that, and this is not one.
    assert doc["deviceless"] is True and doc["backend"] == "gpu (compile-only)"
    assert doc["device"] == "NVIDIA RTX A6000, compiled without the GPU"
    target = doc["target"]
    assert (target["name"], target["source"]) == ("a6000", "built in: repro/targets/a6000.txtpb")
    assert target["plugins"]["jax-cuda12-plugin"] == "0.5.0"
    assert target["plugins"]["nvidia-cuda-nvcc-cu12"]
    assert target["ptxas"]["from"] == "nvidia-cuda-nvcc-cu12 wheel"
    assert "cuda_12" in target["ptxas"]["version"]


@pytest.mark.full
def test_a_spec_with_a_compute_capability_no_ptxas_knows_is_said_in_its_words(target_python,
                                                                               tmp_path):
    """Issue 17, item 6: an A6000 spec edited to compute capability 99 ends in one line about
    the spec, not XLA's raw "ptxas too old" (with the path of the environment's ptxas)."""
    spec = tmp_path / "cc99.txtpb"
    spec.write_text(targets.load("a6000").text.replace("major: 8", "major: 99"))
    assert targets.load(str(spec)).compute_capability == "99.6"
    done = run_repro(target_python("0.10.2"), "--json", "--quiet", "--target", str(spec),
                     "--n-res", "16", "--n-inner", "10", "--n-outer", "2", "3",
                     "--variants", "v0")
    doc = json.loads(done.stdout)
    errors = {c["error"] for c in cases(doc).values()}
    assert len(errors) == 1 and "ptxas too old" not in errors.pop()
    assert "compute capability 99.6" in doc["metric"]["error"]
    assert "cc99.txtpb" in doc["metric"]["error"]
    # Issue 17, item 10: the document travels in reports: the spec by its name, not its path.
    assert doc["target"]["source"] == "spec file cc99.txtpb"
    assert str(tmp_path) not in json.dumps(doc)


@pytest.mark.parametrize("where", ["cpu", pytest.param("target", marks=pytest.mark.full)])
def test_dump_and_memory_analysis_agree(jax_python, target_python, where):
    """Where both exist (jax 0.10.2, on the CPU and for the A6000 target), XLA's
    buffer-assignment dump gives memory_analysis()'s sizes byte for byte."""
    if where == "cpu":
        python, extra = jax_python("0.10.2"), ()
    else:
        python, extra = target_python("0.10.2"), ("--target", "a6000")
    analysis = repro_json(python, *SMALL, *extra)
    dump = repro_json(python, *SMALL, *extra, "--sizes-from", "dump")
    assert {c["source"] for c in cases(analysis).values()} == {"memory_analysis()"}
    # The harness's own flags (a temporary dump folder, this machine's paths) stay out of
    # what is recorded: a result reads the same wherever it was measured.
    assert "repro-xla-dump" not in analysis["environment"] + analysis["xla_flags"]
    if where == "target":
        assert analysis["target"]["ptxas"]["path"].startswith("$ENV/")
    assert {c["source"] for c in cases(dump).values()} == {"XLA buffer-assignment dump"}
    for key, case in cases(analysis).items():
        other = cases(dump)[key]
        for field in ("output_bytes", "temp_bytes", "argument_bytes", "total_bytes"):
            assert case[field] == other[field] > 0, (key, field)
    assert analysis["metric"]["shape"] == dump["metric"]["shape"]


@pytest.mark.full  # v2's kernels compiled twice
def test_ptxas_optimizations_change_no_size(target_python):
    """The harness compiles for a target with ptxas at -O0 (minutes saved in a sweep): every
    size, v2's many kernels included, is the same as with ptxas's default, asked for through
    XLA_FLAGS, and each document says which it was."""
    sizes = ("--n-res", "16", "--n-inner", "20", "--n-outer", "2", "3", "--variants", "v0",
             "v1", "v2", "--v2-up-to", "3", "--target", "a6000")
    python = target_python("0.10.2")
    fast = repro_json(python, *sizes)
    default = repro_json(python, *sizes, "--xla-flags",
                         "--xla_gpu_disable_gpuasm_optimizations=false")
    assert fast["target"]["ptxas"]["optimizations"].startswith("off (-O0)")
    assert default["target"]["ptxas"]["optimizations"] == "on (ptxas's default)"
    assert default["xla_flags"] == "--xla_gpu_disable_gpuasm_optimizations=false"
    assert fast["xla_flags"] == ""  # the harness's own flag is not one the user asked for
    assert len(cases(fast)) == 6
    for key, case in cases(fast).items():
        other = cases(default)[key]
        assert case["total_bytes"] > 0
        for field in ("output_bytes", "temp_bytes", "argument_bytes", "total_bytes"):
            assert case[field] == other[field], (key, field)


@pytest.mark.full  # the pass dumps for a target: the last test here
def test_pass_dumps_for_a_target_say_what_they_were_compiled_for(target_python):
    """``python -m repro.xla_passes --target``: the per-pass dumps the explanation compares,
    in a document that says it is a compile-only plan and for which GPU (stdout: JSON only)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "JAX_PLATFORMS")}
    done = subprocess.run([str(target_python("0.10.2")), "-m", "repro.xla_passes", "--target",
                           "a6000", "--param", "n_res=8", "--param", "n_inner=5",
                           "--param", "n_outer=2"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert (doc["status"], doc["deviceless"]) == ("ok", True)
    assert (doc["target"]["name"], doc["target"]["description"]) == ("a6000", "NVIDIA RTX A6000")
    assert doc["target"]["ptxas"]["from"] == "nvidia-cuda-nvcc-cu12 wheel"
    assert any("copy-insertion" in d["file"] for d in doc["dumps"])


@pytest.mark.full  # every spec on two releases
def test_every_built_in_spec_compiles_on_the_oldest_and_newest_releases(target_python):
    """The trimmed specs parse from the first release that can compile without a GPU (0.4.34,
    with the harness's one workaround) to the newest on this Python."""
    for version in ("0.4.34", "0.10.2"):
        for name in targets.built_in("gpu"):
            doc = repro_json(target_python(version), "--target", name, "--n-res", "8",
                             "--n-inner", "4", "--n-outer", "2", "3", "--variants", "v0")
            assert doc["device"] == gpu_target.device_label(targets.load(name).description)
            assert all(c["status"] == "ok" for c in cases(doc).values()), (version, name, doc)


@pytest.mark.full
def test_summary_says_compiled_without_the_gpu(target_python):
    done = run_repro(target_python("0.10.2"), "--target", "h100", *SMALL)
    assert done.returncode == 0, done.stderr
    assert "compiled for NVIDIA H100 80GB HBM3, without the GPU (target h100" in done.stdout


def test_bad_target_input_is_one_line(jax_python, tmp_path):
    for args in (["--target", "nosuch"], ["--target", "a6000", "--mode", "runtime"],
                 ["--target", "a6000", "--backend", "cpu"]):
        done = run_repro(jax_python("0.10.2"), *args)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    offline = {**os.environ, "HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy":
               "http://127.0.0.1:9", "JAX_SCAN_REPRO_CACHE": str(tmp_path)}
    for args, said in ((["--target", "nosuch"], "unknown target 'nosuch'"),
                       (["--target", ""], "--target needs a name"),
                       (["--target", "a6000", "--", "true"], "cannot run there"),
                       (["--target", "a6000", "--backend", "cpu"], "contradicts it")):
        # Checked before anything else: offline, with no catalogue cached, the same line.
        env = offline if "contradicts" not in said else os.environ
        done = subprocess.run([sys.executable, "-m", "jaxbisect", "--from", "0.5.0", "--to",
                               "0.5.1", *args], cwd=REPO, capture_output=True, text=True,
                              env=env)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
        assert said in done.stderr, done.stderr


def test_write_target_spec_needs_a_gpu(jax_python, tmp_path):
    done = run_repro(jax_python("0.10.2"), "--write-target-spec", str(tmp_path / "mine.txtpb"))
    assert done.returncode == 2 and "no GPU is visible" in done.stderr
    assert not (tmp_path / "mine.txtpb").exists()


@pytest.mark.full
def test_users_range_on_the_a6000_measures_what_it_can(target_python, tmp_path):
    """jax 0.4.20 … 0.5.0 for the A6000 on a CPU-only machine: the part from 0.4.34 is
    measured and answered, the rest is named with the command for a real GPU; exit 1."""
    done = subprocess.run([sys.executable, "-m", "jaxbisect", "--from", "0.4.20", "--to",
                           "0.5.0", "--target", "a6000", "--json", "--reports", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["measured_part"] == ["0.4.34", "0.5.0"]
    assert doc["measured"] == "compiled for NVIDIA RTX A6000, without the GPU"
    command = ("python -m bisect --from 0.4.20 --to 0.4.34 --backend cuda12 --case "
               "repro/cases/scan_growth.py --metric memory")
    assert doc["needs_a_gpu"] == [{"from": "0.4.20", "to": "0.4.34", "command": command}]
    assert doc["status"] == "alike"
    assert {p["series"]["status"] for p in doc["probes"]} == {"grows"}
    assert "Traceback" not in done.stderr
    report = Path(doc["report"]).read_text()
    assert "**Measured part: jax 0.4.34 … 0.5.0.**" in report
    assert command in report
    assert "jax 0.4.36 … 0.4.37 (2 releases): not installable here" in report


def test_a_real_gpu_is_never_labelled_deviceless():
    from repro.cli import device_line

    real = {"backend": "gpu", "device": "NVIDIA RTX A6000", "target": None, "deviceless": False}
    assert device_line(real) == "gpu (NVIDIA RTX A6000)"
    planned = {**real, "deviceless": True, "target": {
        "name": "a6000", "description": "NVIDIA RTX A6000",
        "source": "built in: repro/targets/a6000.txtpb"}}
    assert device_line(planned).startswith("compiled for NVIDIA RTX A6000, without the GPU")


def test_system_python_has_no_jax():
    """The driver side of these tests never imports jax (the boundary is a subprocess)."""
    done = subprocess.run([str(SYSTEM_PYTHON), "-c", "import jaxbisect.cli, repro.target, sys; "
                           "print('jax' in sys.modules)"], cwd=REPO, capture_output=True,
                          text=True)
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.full  # an environment of its own (0.6.1)
def test_json_stdout_stays_one_document_where_the_plugin_prints(target_python):
    """jax 0.6.1's CUDA plugin prints a line to stdout when its constraints check is skipped:
    the harness keeps stdout for its JSON document alone (the line goes to stderr)."""
    done = run_repro(target_python("0.6.1"), "--json", "--quiet", "--target", "a6000", *SMALL)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["deviceless"] is True
    assert "Skipped CUDA versions constraints check" in done.stderr


@pytest.mark.full  # an environment of its own (0.8.2)
def test_releases_that_cannot_describe_a_compile_only_output_are_read_from_the_dump(
        target_python):
    """jax 0.8.2 compiles for the target, then fails describing the outputs of a device that
    lists no memory kinds: the plan was made, and XLA's dump of it gives the sizes."""
    doc = repro_json(target_python("0.8.2"), "--target", "a6000", *SMALL)
    assert {c["source"] for c in cases(doc).values()} == {"XLA buffer-assignment dump"}
    assert all(c["status"] == "ok" for c in cases(doc).values())
    assert doc["metric"]["shape"]["status"] == "grows"


@pytest.mark.parametrize("target, values", [(["--target", "a6000"], (1,)), ([], (1, 2))])
def test_a_compare_program_limited_in_the_series_is_compiled_for_a_target_at_its_first_value(
        target, values):
    """The scan case's v2 (an unrolled loop, COMPARE n_outer 1 and 2) beside v0 in one
    process: for a compile-only GPU target at n_outer 1 only (minutes a compile from 2 on)."""
    from repro import cli as repro_cli
    from repro.case import series_at

    args = repro_cli.parse_args(["--case", str(REPO / "repro/cases/scan_growth.py"), "--compare",
                                 *target])
    beside = {label: series_at(args.over, {**args.params, **params})
              for label, params in args.compare.items()}
    assert beside["v2"] == ({"variant": 2}, values)
    assert beside["v1"] == ({"variant": 1}, (1, 2, 5, 10, 15))


def test_a_target_dumps_the_module_after_each_pass_for_the_pass_search(target_python,
                                                                       tmp_path):
    """``python -m repro --target … --pass-dumps DIR``: XLA has one dump folder, the
    target's (its buffer assignment gives the sizes before jax 0.6.1); the module after each
    pass is moved out of it into DIR, where the pass search reads which passes changed it."""
    from jaxbisect.evidence.passes import passes_that_changed

    done = run_repro(target_python("0.5.0"), "--case", "repro/cases/scan_growth.py",
                     "--target", "a6000", "--param", "n_res=8", "--param", "n_inner=5",
                     "--over", "n_outer=2,3", "--json", "--hlo-out", str(tmp_path),
                     "--pass-dumps", str(tmp_path))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["metric"]["status"] == "ok" and doc["metric"]["value"].startswith("grows")
    assert {p["source"] for p in doc["metric"]["points"]} == {"XLA buffer-assignment dump"}
    changed = passes_that_changed([p.name for p in tmp_path.iterdir()])
    assert {"copy-insertion", "copy_fusion"} <= set(changed)
    assert (tmp_path / "lowered.txt").is_file() and (tmp_path / "optimized.txt").is_file()
