"""A report's Reproduce section stands alone (issue 17, item 5): the program it carries, run
with plain ``pip install jax==X jaxlib==Y`` and ``python``, prints the harness's figures."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
from conftest import repro_json

from jaxbisect import standalone
from jaxbisect.harness import HarnessOptions
from jaxbisect.measurements import report_document

SMALL = HarnessOptions(n_outer=(1, 3, 6), n_inner=10, n_res=16)


def test_the_commands_are_plain_pip_and_python_under_each_release():
    lines = standalone.commands([("0.5.0", "0.5.0"), ("0.5.1", "0.5.1")],
                                HarnessOptions(xla_flags="--a=1 --b=2"))
    assert len(lines) == 2
    words = shlex.split(lines[1])
    assert words[words.index("install") + 1:][:2] == ["jax==0.5.1", "jaxlib==0.5.1"]
    assert "XLA_FLAGS=--a=1 --b=2" in words and words[-2:] == ["jax-0.5.1/bin/python",
                                                        "scan_memory.py"]
    gpu = standalone.commands([("0.5.0", "0.5.0")], SMALL, gpu=True)[0]
    assert "'jax[cuda12]==0.5.0'" in gpu


@pytest.mark.jax
def test_the_program_prints_the_harness_figures(jax_python, tmp_path):
    python = jax_python("0.5.1")
    script = tmp_path / standalone.PROGRAM_NAME
    script.write_text(standalone.program(SMALL))
    done = subprocess.run([str(python), str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={"JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr
    printed = {(f"v{v}", int(n)): float(mb) for v, n, mb in
               re.findall(r"^v(\d) n_outer=(\d+): ([\d.]+) MB$", done.stdout, re.M)}
    doc = repro_json(python, "--n-outer", "1", "3", "6", "--n-inner", "10", "--n-res", "16")
    harness = {(c["variant"], c["n_outer"]): round(c["total_bytes"] / 1024**2, 2)
               for c in report_document(doc)["cases"]}
    assert printed == harness and len(printed) == 9
