"""Multi-device cases (repro/devices.py): ``devices(n)`` on CPU host devices (a real CPU
jax), on a TPU slice without its chips (marked ``tpu``: a real libtpu), and the harness's own
placement of arguments a program cannot use as its own status, never the program's error."""

from __future__ import annotations

import json
import re

import pytest
from conftest import REPO, run_repro
from tpu_envs import tpu_python

SLICE_CASE = REPO / "tests" / "data" / "cases" / "slice_psum.py"  # DEVICES = 4, devices(4)
CPU_MESH_CASE = REPO / "repro" / "cases" / "shard_map_kwarg_named_f.py"  # jax.devices() mesh
# An absolute path of a machine (a home, the cache, a checkout, a temporary folder).
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:home|root|tmp|work|Users|var)/")


def test_a_case_of_n_devices_compiles_for_the_smallest_slice_that_has_them():
    from repro.tpu_target import SLICE_VARIABLE, TARGETS

    v5e = TARGETS["v5e"]
    assert [v5e.for_devices(n).topology for n in (None, 1, 4, 5, 8, 9, 16)] == [
        "v5e:2x2", "v5e:2x2", "v5e:2x2", "v5e:2x4", "v5e:2x4", "v5e:4x4", "v5e:4x4"]
    assert v5e.for_devices(17).topology == "v5e:2x2"  # none has them: devices(17) says so
    assert v5e.for_devices(8).slice_environ() == {SLICE_VARIABLE: "v5e:2x4"}
    assert v5e.for_devices(8).sha256 != v5e.sha256  # a stored result depends on the slice


def test_no_path_of_this_machine_in_an_error_the_harness_reports(monkeypatch, tmp_path):
    from repro import metrics

    cache = tmp_path / "cache"
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(cache))
    said = (f"ValueError: Received incompatible devices for jitted computation at "
            f"{cache}/envs/jax-0.10.2-tpu-py311/lib/python3.11/site-packages/jax/_src/pjit.py:12"
            f" and {metrics._CHECKOUT}/repro/measure.py:141:24 (Compiler.compile), from "
            f"{cache}/cases/0a1b/my_case.py:3")
    out = metrics.without_local_paths(said)
    assert out == ("ValueError: Received incompatible devices for jitted computation at "
                   "jax/_src/pjit.py:12 and repro/measure.py:141:24 (Compiler.compile), "
                   "from my_case.py:3")
    # A file of the machine's own (libtpu's lock file) is the same everywhere: kept.
    held = 'ABORTED: Internal error when accessing libtpu multi-process lockfile. Run "$ sudo rm ' \
        '/tmp/libtpu_lockfile"'
    assert metrics.without_local_paths(held) == held


@pytest.mark.jax
def test_devices_are_the_cpu_host_devices_where_there_is_no_target(jax_python):
    """DEVICES = 4 starts four host devices; devices(4) are they, and the argument's
    NamedSharding over them is kept: each device sums its block and the psum adds the four,
    so the output sums to 1 (4 where the psum saw one device's block)."""
    python = jax_python("0.5.0")
    done = run_repro(python, "--json", "--quiet", "--case", str(SLICE_CASE), "--metric",
                     "output")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["device_count"] == 4 and doc["metric"]["status"] == "ok"
    assert doc["metric"]["value"]["shapes"] == [[[1024], "float32"]]
    assert abs(doc["metric"]["value"]["values"][-2] - 1.0) < 1e-4
    # Fewer devices than the case asks for: the harness cannot measure it (exit 125), and
    # says so in its own status, never as the program's error.
    done = run_repro(python, "--json", "--quiet", "--case", str(SLICE_CASE), "--devices", "2")
    assert done.returncode == 125, done.stderr
    metric = json.loads(done.stdout)["metric"]
    assert (metric["status"], metric["harness_error"]["kind"], metric["samples"]) == (
        "harness_error", "devices", [])
    assert "needs 4 devices" in metric["error"] and "has 2" in metric["error"]


@pytest.mark.tpu
@pytest.mark.parametrize("version", ["0.4.36", "0.10.2"])
def test_a_slice_program_compiles_for_the_four_chips_of_a_v5e_2x2(version, tmp_path):
    """The same case file under --target v5e: its mesh is the four chips of a v5e:2x2 slice
    (compile-only), its argument keeps its NamedSharding, and the compiled module reduces
    across them."""
    python = tpu_python(version)
    done = run_repro(python, "--json", "--quiet", "--case", str(SLICE_CASE), "--target", "v5e",
                     "--metric", "memory", "--hlo-out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["metric"]["status"] == "ok" and doc["metric"]["value"] > 0
    assert (doc["target"]["topology"], doc["target"]["slice_devices"]) == ("v5e:2x2", 4)
    optimized = (tmp_path / "optimized.txt").read_text()
    assert "all-reduce" in optimized and "num_partitions=4" in optimized
    # Eight devices asked: the smallest slice that has them (the case's mesh is its first 4).
    done = run_repro(python, "--json", "--quiet", "--case", str(SLICE_CASE), "--target", "v5e",
                     "--devices", "8")
    doc = json.loads(done.stdout)
    assert (doc["target"]["topology"], doc["target"]["slice_devices"]) == ("v5e:2x4", 8)
    assert doc["metric"]["value"] == "no error"
    # More devices than any slice listed has: the case cannot have them here, in one line.
    done = run_repro(python, "--json", "--quiet", "--case", str(SLICE_CASE), "--target", "v5e",
                     "--devices", "32", "--param", "count=32", "--metric", "memory")
    assert done.returncode == 125, done.stderr
    metric = json.loads(done.stdout)["metric"]
    assert (metric["status"], metric["harness_error"]["kind"], metric["error"]) == (
        "harness_error", "devices",
        "the case needs 32 devices and the TPU slice v5e:2x2 (compile-only) has 4")


@pytest.mark.tpu
def test_the_harness_placement_is_its_own_status_never_the_program_s_error():
    """A case whose mesh is over jax.devices() (CPU host devices under a target): the harness
    places its argument on the slice's first device, jax refuses ("Received incompatible
    devices …"), and that is status harness_error (exit 125), with no path of this machine:
    before, it was the program's error value, carrying this checkout's path."""
    done = run_repro(tpu_python("0.4.38"), "--json", "--quiet", "--case", str(CPU_MESH_CASE),
                     "--target", "v5e", "--metric", "error")
    assert done.returncode == 125, done.stderr
    metric = json.loads(done.stdout)["metric"]
    assert (metric["status"], metric["samples"], metric["value"]) == ("harness_error", [], None)
    assert metric["harness_error"]["kind"] == "placement"
    assert "incompatible devices" in metric["harness_error"]["said"]
    assert "\n" not in metric["error"] and "repro.devices" in metric["error"]
    assert not MACHINE_PATH.search(json.dumps(metric)), metric


def test_the_harness_process_says_which_slice_its_devices_are(monkeypatch):
    """Before jax starts: the target's variables and the slice a case's devices(n) returns;
    without a target, no slice (devices(n) are jax.devices())."""
    import os

    from repro.process import configure_this_process
    from repro.tpu_target import SLICE_VARIABLE, TARGETS

    monkeypatch.setattr(os, "environ", {"PATH": "/usr/bin", SLICE_VARIABLE: "stale"})
    configure_this_process(target=TARGETS["v5e"].for_devices(8))
    assert (os.environ[SLICE_VARIABLE], os.environ["JAX_PLATFORMS"],
            os.environ["TPU_ACCELERATOR_TYPE"]) == ("v5e:2x4", "cpu", "v5litepod-4")
    monkeypatch.setattr(os, "environ", {"PATH": "/usr/bin", SLICE_VARIABLE: "v5e:2x2"})
    configure_this_process("cpu")
    assert SLICE_VARIABLE not in os.environ


MULTI_CASE = REPO / "repro" / "cases" / "vmap_shard_map_psum_slice.py"


def pair_of(path):
    from repro.case import read_case

    answer = read_case(path).answer
    return [(answer["last_old"], answer["old"]), (answer["first_new"], answer["new"])]


@pytest.mark.tpu
def test_a_real_multi_device_program_changes_at_its_pair_on_a_v5e_slice():
    """jax#34249 over the four chips of a v5e:2x2 slice (devices(4), a NamedSharding argument):
    no error at 0.8.0, the TypeError at 0.8.1, measured by the harness, not its placement."""
    for version, expected in pair_of(MULTI_CASE):
        done = run_repro(tpu_python(version), "--json", "--quiet", "--case", str(MULTI_CASE),
                         "--target", "v5e", "--metric", "error")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert (doc["jax"], doc["target"]["topology"], doc["metric"]["status"],
                doc["metric"]["value"]) == (version, "v5e:2x2", "ok", expected)


@pytest.mark.jax
@pytest.mark.full  # two more CPU environments; the TPU test above shows the same pair
def test_the_same_multi_device_file_changes_at_its_pair_on_cpu_host_devices(jax_python):
    for version, expected in pair_of(MULTI_CASE):
        done = run_repro(jax_python(version), "--json", "--quiet", "--case", str(MULTI_CASE),
                         "--metric", "error")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert (doc["device_count"], doc["metric"]["value"]) == (4, expected)
