"""The shipped Pallas-on-TPU cases (repro/cases/pallas_*.py), compiled for a TPU v5e without
one at their recorded pair with a real libtpu (marked ``tpu``: one 0.7–1.2 GB environment a
release), by the harness and by the standalone program a report ships (item 5 of issue 57:
the deviceless recipe inside it, run in a bare environment with no toolkit on its path)."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from conftest import REPO, run_repro
from tpu_envs import tpu_python

from jaxbisect.search.error_signature import core
from repro.case import read_case

PALLAS = sorted((REPO / "repro" / "cases").glob("pallas_*.py"))


def test_each_pallas_case_records_a_tpu_answer():
    assert len(PALLAS) >= 2
    for path in PALLAS:
        case = read_case(path)
        answer = case.answer
        assert answer["target"] == "v5e" and case.metric == answer["metric"] == "error"
        # the upstream report: the JAX issue tracker's, or a project's report of a JAX
        # release (keras-io's Pallas guide: pallas_fused_matmul_vmem)
        assert re.search(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", case.doc)
        assert "no error" in (answer["old"], answer["new"]) and answer["old"] != answer["new"]


def ends(path):
    answer = read_case(path).answer
    return [(answer["last_old"], answer["old"]), (answer["first_new"], answer["new"])]


@pytest.mark.tpu
@pytest.mark.parametrize("path", PALLAS, ids=lambda p: p.stem)
def test_the_harness_measures_each_end_of_the_recorded_pair(path):
    for version, expected in ends(path):
        done = run_repro(tpu_python(version), "--json", "--quiet", "--case", str(path),
                         "--target", "v5e", "--metric", "error")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert (doc["jax"], doc["deviceless"], doc["target"]["name"]) == (version, True, "v5e")
        # ANSWER holds the figure whole, or its core where the message quotes the program
        # (the case file's own path and lines in an HLO instruction's metadata)
        value = doc["metric"]["value"]
        assert doc["metric"]["status"] == "ok", version
        assert expected in (value, core(value)), (version, value)


def the_error(line: str, expected: str) -> bool:
    """A line of a traceback is the exception ANSWER records: its own line (a MosaicError's
    message runs on over more lines), whole, or as its core (ANSWER's, as above)."""
    kind, message = expected.split(": ", 1)
    name, _, rest = line.partition(": ")
    name = name.split(".")[-1]
    return name.startswith(kind) and (line.endswith(message) or core(rest, name) == expected)


@pytest.mark.tpu
@pytest.mark.parametrize("path", PALLAS, ids=lambda p: p.stem)
def test_the_standalone_program_compiles_for_the_tpu_without_one(path, tmp_path):
    """The program (repro.tpu_target.deviceless_program over the case cut as the report's
    writer cuts it) in a bare environment: "no error" at one end, the error's line at the
    other."""
    from jaxbisect.stages.program import case_source
    from repro.tpu_target import TARGETS, deviceless_program

    case = read_case(path)
    program = tmp_path / "repro.py"
    program.write_text(deviceless_program(TARGETS["v5e"], case_source(case.source),
                                          n=case.devices))
    for version, expected in ends(path):
        done = subprocess.run([str(tpu_python(version)), str(program)], cwd=tmp_path,
                              env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                   "HOME": str(tmp_path)},
                              capture_output=True, text=True, timeout=600)
        if expected == "no error":
            assert (done.returncode, done.stdout.strip()) == (0, "no error"), done.stderr
        else:
            # The exception's own line (a MosaicError's message runs on over more lines).
            assert done.returncode == 1 and any(
                the_error(line, expected) for line in done.stderr.splitlines()
            ), done.stderr[-2000:]


@pytest.mark.tpu
def test_a_kernel_is_lowered_with_the_target_s_device_as_jax_s_default():
    """jax 0.10.2's Pallas asks the default device for its TPU generation: the harness lowers
    with the target's first device as the default, so the kernel's own error is measured, not
    "Unsupported TPU device kind: cpu" (what the harness measured before)."""
    done = run_repro(tpu_python("0.10.2"), "--json", "--quiet", "--case",
                     str(REPO / "tests" / "data" / "cases" / "pallas_cumsum.py"), "--target",
                     "v5e", "--metric", "error")
    metric = json.loads(done.stdout)["metric"]
    assert metric["status"] == "ok" and metric["value"].startswith(
        "NotImplementedError: Unimplemented primitive in Pallas TPU lowering"), metric
