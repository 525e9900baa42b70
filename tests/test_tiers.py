"""What ``nox -s tests`` (the tier CI runs, ``-m "not full"``) must keep: a real end-to-end
bisection per metric kind, --commits on a real jax history, SLURM, Ctrl-C and resume. A test
moved to ``nox -s tests_full`` (``@pytest.mark.full``) that one of these needs fails here,
by name, instead of leaving the tier quietly (docs/benchmarks.md, "The tiers")."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

SHIPPED = "tests/test_shipped_cases.py::test_the_toolkit_finds_each_recorded_answer"
KEPT = {
    "memory: the scan case's bisection, stored and rerun":
        ["tests/test_bisect.py::test_finds_the_cpu_regression_and_reruns_from_the_store"],
    "memory: a case's bisection with its evidence":
        ["tests/test_case_releases.py::test_bisects_a_case_by_memory_and_reruns_from_the_store"],
    "run_time": [f"{SHIPPED}[while_loop_cpu_slowdown]"],
    "output": [f"{SHIPPED}[exp_nan_under_jit]"],
    "error": [f"{SHIPPED}[scan_pytree_aux_data]",
              "tests/test_crash_releases.py::"
              "test_a_segfault_a_release_brought_is_found_by_the_error_metric"],
    "--commits on a real jax history":
        ["tests/test_commit_bisection.py::"
         "test_a_real_history_gives_its_first_bad_commit_and_names_the_skips"],
    "SLURM": ["tests/test_slurm.py::test_a_bisection_through_slurm_answers_as_locally",
              "tests/test_slurm.py::test_ctrl_c_leaves_nothing_in_the_queue[jobs]",
              "tests/test_slurm.py::test_a_job_cancelled_from_outside_is_submitted_once_more"],
    "Ctrl-C and resume":
        ["tests/test_bisect.py::test_ctrl_c_loses_nothing_and_the_rerun_resumes",
         "tests/test_stopping.py::test_ctrl_c_at_any_moment_exits_130_at_once_and_a_rerun_resumes",
         "tests/test_stopping.py::"
         "test_a_refused_or_interrupted_commit_stage_leaves_the_finished_report",
         "tests/test_probe.py::test_ctrl_c_in_the_harness_says_interrupted_and_nothing_else[1.0]"],
}


def collected(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p",
                           "no:xdist", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {line for line in done.stdout.splitlines() if "::" in line}


def test_the_ci_tier_keeps_every_behaviour_it_must_show():
    tier, every = collected("-m", "not full"), collected()
    missing = {what: [t for t in tests if t not in tier] for what, tests in KEPT.items()}
    assert not any(missing.values()), missing
    assert all(t in every for tests in KEPT.values() for t in tests)
    # Every SLURM test runs in the tier (one cluster for the session; none of them full).
    assert {t for t in every if t.startswith("tests/test_slurm.py")} <= tier
