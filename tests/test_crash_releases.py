"""Crashes on real releases (real environments, real subprocesses): a case and a command that
kill themselves with SIGSEGV under some releases only, bisected by the error metric and by
run_time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO

# Crashes only where jax is one of CRASHING: the crash comes with a release.
SEGFAULT_CASE = '''"""Dies of SIGSEGV under some releases (the crash tests' case)."""
import os
import signal

import jax
import jax.numpy as jnp

CRASHING = {crashing!r}


def case(n=64):
    @jax.jit
    def f(x):
        return jnp.sin(x) @ x

    if jax.__version__ in CRASHING:
        os.kill(os.getpid(), signal.SIGSEGV)
    return f, (jax.ShapeDtypeStruct((n, n), jnp.float32),)
'''

# A command that does not import jax: it reads the release from JAX_BISECT_RELEASE, and under
# 0.5.1 crashes on odd-numbered runs only (a counter file beside it).
FLAKY_COMMAND = '''import os, signal, sys
from pathlib import Path
counter = Path(sys.argv[1])
runs = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(runs))
if os.environ["JAX_BISECT_RELEASE"] == "0.5.1" and runs % 2 == 1:
    os.kill(os.getpid(), signal.SIGSEGV)
'''


def bisect(tmp_path: Path, *args: str, command: tuple[str, ...] = ()
           ) -> tuple[subprocess.CompletedProcess, dict]:
    done = subprocess.run([sys.executable, "-m", "jaxbisect", *args, "--backend", "cpu",
                           "--reports", str(tmp_path / "reports"), "--json",
                           *(("--", *command) if command else ())], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.stdout, done.stderr
    return done, json.loads(done.stdout)


def write_case(tmp_path: Path, crashing: tuple[str, ...]) -> str:
    path = tmp_path / "segfault_case.py"
    path.write_text(SEGFAULT_CASE.format(crashing=crashing))
    return str(path)


def test_a_segfault_a_release_brought_is_found_by_the_error_metric(tmp_path, jax_python):
    for version in ("0.5.0", "0.5.1", "0.5.2"):
        jax_python(version)
    case = write_case(tmp_path, ("0.5.1", "0.5.2"))
    done, doc = bisect(tmp_path, "--from", "0.5.0", "--to", "0.5.2", "--case", case,
                       "--metric", "error")
    assert done.returncode == 0, done.stderr
    assert doc["status"] == "found" and doc["direction"] == "changed"
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.5.0", "0.5.1")
    probes = {p["jax"]: p for p in doc["probes"]}
    assert probes["0.5.0"]["classified"] == ["no error"]
    assert probes["0.5.1"]["classified"] == ["crashed: SIGSEGV"]
    assert probes["0.5.1"]["label"] == "new" and probes["0.5.2"]["label"] == "new"
    crashes = {c["jax"]: c for c in doc["crashes"]}
    assert set(crashes) == {"0.5.1", "0.5.2"}
    assert crashes["0.5.1"] == {"jax": "0.5.1", "crash": "crashed: SIGSEGV", "crashed": 3,
                                "runs": 3, "rate": 1.0}
    assert doc["crash_hint"] is None  # the error metric is the hint


def test_under_run_time_the_crashing_release_is_named_with_the_error_hint(tmp_path,
                                                                           jax_python):
    for version in ("0.5.0", "0.5.1"):
        jax_python(version)
    case = write_case(tmp_path, ("0.5.1",))
    done, doc = bisect(tmp_path, "--from", "0.5.0", "--to", "0.5.1", "--case", case,
                       "--metric", "run_time", "--runs", "2", "--max-runs", "2")
    assert doc["status"] == "unmeasurable" and "crashed: SIGSEGV" in doc["reason"]
    probes = {p["jax"]: p for p in doc["probes"]}
    assert probes["0.5.0"]["label"] == "measured"      # not a skip
    assert all(r["status"] == "ok" for r in probes["0.5.0"]["runs"])
    assert [r["status"] for r in probes["0.5.1"]["runs"]] == ["crashed", "crashed"]
    assert doc["crashes"] == [{"jax": "0.5.1", "crash": "crashed: SIGSEGV", "crashed": 2,
                               "runs": 2, "rate": 1.0}]
    hint = doc["crash_hint"].split()
    assert hint[hint.index("--metric") + 1] == "error"
    assert hint[hint.index("--case") + 1].endswith("segfault_case.py")
    assert "--runs" in hint  # every option that shaped the answer is kept


def test_a_flaky_crash_of_a_command_is_its_rate(tmp_path, jax_python):
    for version in ("0.5.0", "0.5.1"):
        jax_python(version)
    script = tmp_path / "flaky.py"
    script.write_text(FLAKY_COMMAND)
    done, doc = bisect(tmp_path, "--from", "0.5.0", "--to", "0.5.1", "--metric", "error",
                       command=("python", str(script), str(tmp_path / "runs-count")))
    assert doc["status"] == "found" and doc["metric"]["kind"] == "deterministic"
    probes = {p["jax"]: p for p in doc["probes"]}
    assert probes["0.5.0"]["classified"] == ["no error"]
    # Runs 4 … 6 of the counter are 0.5.1's (the old end's three come first): 4 and 6 are fine.
    assert probes["0.5.1"]["classified"] == [
        "crashed: SIGSEGV in 1 of 3 runs (otherwise: no error)"]
    assert doc["crashes"] == [{"jax": "0.5.1", "crash": "crashed: SIGSEGV", "crashed": 1,
                               "runs": 3, "rate": 0.333}]


def test_the_commit_level_check_of_a_crash_answers_git_bisect_run_s_codes(tmp_path,
                                                                            jax_python):
    """A crashed process cannot answer --check, and git bisect run stops at 128 or more: the
    hand-off's check reads the crash in a shell and exits 0 (old) or 1 (new)."""
    import os

    from jaxbisect.evidence.explain import check_argv
    from jaxbisect.lab.catalogue import load_catalogue
    from jaxbisect.search.placing import MetricSearch, Placed
    from jaxbisect.search.question import Question, Run, question_from
    from jaxbisect.search.rounds import SearchResult
    from jaxbisect.stages.releases import MetricBisection, MetricRequest

    case = write_case(tmp_path, ("0.5.1",))
    q: Question = question_from("error", case, [], ())
    figures = {"0.5.0": "no error", "0.5.1": "crashed: SIGSEGV"}
    catalogue = load_catalogue()
    releases = tuple(catalogue.get(v) for v in figures)
    placed = {i: Placed(i, (Run(release=v, number=1, status="ok", samples=(f,)),), values=(f,))
              for i, (v, f) in enumerate(figures.items())}
    b = MetricBisection(MetricRequest("0.5.0", "0.5.1", "cpu", q), releases, (),
                        MetricSearch("found", SearchResult("found", 0, 1, True, (0, 1), ()),
                                     placed, None))
    check = check_argv(b)
    assert check[:2] == ["sh", "-c"]
    for version, wanted in (("0.5.0", 0), ("0.5.1", 1)):
        python = jax_python(version)
        env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}",
               "PYTHONPATH": str(REPO)}
        # A case outside the clone is named by its file name: run where it was saved.
        done = subprocess.run(check, cwd=tmp_path, env=env, capture_output=True, timeout=300)
        assert done.returncode == wanted, (version, done.stderr)
