"""``--error-match REGEX`` and a case's ``ERROR``: bad input is one line and exit 2, before any
run (real subprocesses of ``python -m bisect``, nothing installed)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

from jaxbisect.errors import UserError
from jaxbisect.search.question import question_from
from repro.case import CaseError, read_case

CASE = REPO / "tests" / "data" / "errors" / "pallas_vmem_limit.py"


def bisect(*args: str, tmp_path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "JAX_SCAN_REPRO_CACHE": str(tmp_path / "cache"),
           "HOME": str(tmp_path)}
    return subprocess.run([sys.executable, "-m", "bisect", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_bad_regex_is_one_line_and_exit_2(tmp_path):
    done = bisect("--from", "0.8.0", "--to", "0.8.1", "--case", str(CASE), "--error-match",
                  "vmem[", tmp_path=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert "--error-match" in done.stderr and "not a regular expression" in done.stderr


def test_error_match_names_an_error_metric_only():
    with pytest.raises(UserError, match="--error-match"):
        question_from("memory", str(CASE), [], (), error_match="vmem")
    q = question_from(None, str(CASE), [], (), error_match="vmem")
    assert (q.metric, q.error_match) == ("error", "vmem")


def test_a_case_declares_the_error_it_means(tmp_path):
    case = tmp_path / "c.py"
    case.write_text(CASE.read_text() + '\nERROR = r"memory space vmem"\n')
    assert read_case(case).error == "memory space vmem"
    assert question_from(None, str(case), [], ()).error_match == "memory space vmem"
    assert question_from(None, str(case), [], (), error_match="other").error_match == "other"
    case.write_text(CASE.read_text() + '\nERROR = r"vmem["\n')
    with pytest.raises(CaseError, match="ERROR"):
        read_case(case)
