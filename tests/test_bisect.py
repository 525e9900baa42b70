"""The bisect driver end to end: real releases, real environments, real subprocesses."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TEST_CACHE, cache_sharing_environments

from jaxbisect import cli as cli_module
from jaxbisect.lab import backends

CPU = backends.get("cpu")

SMALL = ["--n-res", "16", "--n-inner", "10", "--n-outer", "1", "3", "6"]


def bisect(*args: str, module: str = "jaxbisect", env: dict | None = None, timeout=900):
    return subprocess.run([sys.executable, "-m", module, *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def one_line_error(done: subprocess.CompletedProcess, status: int = 2) -> str:
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.jax
# Its probes of 0.5.0 and 0.5.1 are the ones test_slurm's local run compares the cluster's
# with: on that worker, before it, that run reads them from the store (paid once).
@pytest.mark.xdist_group("slurm")
def test_finds_the_cpu_regression_and_reruns_from_the_store(tmp_path, jax_python):
    """0.5.0 is constant on the CPU, 0.5.1 grows: with no --case, the scan case by its shape
    over n_outer; the first run measures, the rerun not."""
    # Every release's environment first: the search prefers probes that are cheap (stored or
    # installed), and other tests install environments meanwhile; with all of them there,
    # both runs take the same path.
    for version in ("0.5.0", "0.5.1", "0.5.2", "0.5.3"):
        jax_python(version)
    args = ["--from", "0.5.0", "--to", "0.5.3", "--backend", "cpu", *SMALL, "--no-evidence",
            "--reports", str(tmp_path), "--json"]
    first = bisect(*args)
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert (doc["schema"], doc["kind"]) == (2, "metric")
    assert doc["status"] == "found" and doc["exact"] and doc["direction"] == "regression"
    assert doc["case"]["path"] == "repro/cases/scan_growth.py"
    assert doc["over"] == {"name": "n_outer", "values": [1, 3, 6]}
    assert doc["last_old"] == {"jax": "0.5.0", "jaxlib": "0.5.0"}
    assert doc["first_new"] == {"jax": "0.5.1", "jaxlib": "0.5.1"}
    shapes = {p["jax"]: p["series"]["status"] for p in doc["probes"]}
    assert (shapes["0.5.0"], shapes["0.5.1"]) == ("constant", "grows")
    probed = [p["jax"] for p in doc["probes"]]
    assert probed[:2] == ["0.5.0", "0.5.3"] and len(probed) <= 2 + 2
    assert doc["compare"].endswith("compare/jax-v0.5.0...jax-v0.5.1")
    assert doc["search_size"] is None  # n_res 16 is below the case's search size already
    # v1 beside it at every n_outer, v2 (the unrolled control) at COMPARE's n_outer 1 and 2
    # (its compile grows with the unrolled length), at the ends and the pair.
    shown = {"0.5.0", "0.5.3", "0.5.1"}  # the ends and the pair (0.5.0 is both)
    for p in doc["probes"]:
        if p["jax"] not in shown:
            assert p["compare"] == {}  # a search probe between: the search's question only
            continue
        assert set(p["compare"]["v1"]["figures"]) == {"1", "3", "6"}
        assert set(p["compare"]["v2"]["figures"]) == {"1", "2"}
    assert (doc["from"], doc["to"], doc["backend"]) == ("0.5.0", "0.5.3", "cpu")
    again_args, _ = cli_module.parse(shlex.split(doc["reproduce"])[3:])
    asked, _ = cli_module.parse(args)
    assert (Path(REPO, again_args.case).resolve(), sorted(again_args.param), again_args.over) \
        == (Path(asked.case), sorted(asked.param), asked.over)
    report = Path(doc["report"]).read_text()
    assert doc["reproduce"] in report and "| jax " in report
    assert "<details><summary>The machine that measured</summary>" in report

    again = bisect(*args)  # how fast this is belongs to `nox -s bench`, not to a test
    redo = json.loads(again.stdout)
    cached = {p["jax"]: (p["cached"], [r["cached"] for r in p["runs"]],
                         {k: c.get("cached") for k, c in p["compare"].items()})
              for p in redo["probes"]}
    assert all(p["cached"] for p in redo["probes"]), (cached, again.stderr[-3000:])
    assert [p["jax"] for p in redo["probes"]] == probed
    assert (redo["last_old"], redo["first_new"]) == (doc["last_old"], doc["first_new"])


@pytest.mark.jax
@pytest.mark.full  # real runs at RUNTIME_PARAMS; the harness's fallback: test_repro
def test_empty_compiled_stats_fall_back_to_a_real_run(tmp_path):
    """jaxlib 0.4.28 reports zeros on the CPU: its shape comes from a real run instead (at
    the scan case's RUNTIME_PARAMS, over the n_outer values both allow: 1, 2, 5)."""
    done = bisect("--from", "0.4.28", "--to", "0.4.29", "--backend", "cpu", "--n-res", "16",
                  "--n-inner", "10", "--n-outer", "1", "2", "5", "--reports", str(tmp_path),
                  "--json")
    doc = json.loads(done.stdout)
    old, new = doc["probes"][0], doc["probes"][1]
    assert old["jax"] == "0.4.28" and old["series"]["fallback"]
    assert old["series"]["metric"] == "peak_memory" and old["series"]["status"] == "constant"
    assert new["series"]["fallback"] is None and new["series"]["status"] == "constant"
    assert doc["status"] == "alike" and done.returncode == 1
    assert Path(doc["report"]).is_file()
    # Where the range holds no change: the same question up to the newest release.
    step = shlex.split(doc["next_step"]["command"])
    assert step[:7] == ["python", "-m", "bisect", "--from", "0.4.29", "--to",
                        doc["next_step"]["newest"]]
    assert "--over" in step and "n_outer=1,2,5" in step


@pytest.mark.jax
@pytest.mark.full  # exit codes: the --commits history's release ends, test_crash_releases
def test_bisects_with_a_command(tmp_path):
    """git bisect run's contract: 0 old, 1-127 new, run inside each release's environment."""
    check = ("import jax, sys; "
             "sys.exit(tuple(map(int, jax.__version__.split('.'))) >= (0, 4, 34))")
    done = bisect("--from", "0.4.30", "--to", "0.4.35", "--backend", "cpu", "--reports",
                  str(tmp_path), "--json", "--", "python", "-c", check)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["last_old"]["jax"] == "0.4.33" and doc["first_new"]["jax"] == "0.4.34"
    assert doc["metric"]["name"] == "exit_code" and doc["metric"]["kind"] == "deterministic"
    assert doc["direction"] == "changed"
    assert "0.4.32" not in [p["jax"] for p in doc["probes"]]  # yanked: left out, not skipped
    exits = {p["jax"]: p["runs"][0]["samples"] for p in doc["probes"]}
    assert (exits["0.4.33"], exits["0.4.34"]) == ([0], [1])


@pytest.mark.jax
def test_a_command_sees_xla_flags_and_never_the_callers(tmp_path):
    """An exit-code command and a metric command get --xla-flags in XLA_FLAGS, and the
    caller's own XLA_FLAGS never: the report's "not passed to the probes" holds for both."""
    seen = tmp_path / "seen"
    check = ("import os, sys, jax; "
             f"open({str(seen)!r} + '-' + jax.__version__, 'w')"
             ".write(os.environ.get('XLA_FLAGS', '')); "
             "sys.exit(0)")
    caller = {"XLA_FLAGS": "--xla_dump_to=/nonexistent/callers"}
    done = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--reports",
                  str(tmp_path), "--json", "--xla-flags", "--xla_cpu_enable_fast_math=false",
                  "--", "python", "-c", check, env=caller)
    assert done.returncode == 1, done.stderr           # both exit 0: no change
    doc = json.loads(done.stdout)
    assert doc["status"] == "alike"
    assert {p["jax"] for p in doc["probes"]} == {"0.5.0", "0.5.1"}
    for version in ("0.5.0", "0.5.1"):
        assert Path(f"{seen}-{version}").read_text() == "--xla_cpu_enable_fast_math=false"
    # Without --xla-flags, the command sees none (not the caller's), and is run again: the
    # flags are part of what a stored answer answered.
    done = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--reports",
                  str(tmp_path), "--json", "--", "python", "-c", check, env=caller)
    assert not any(p["cached"] for p in json.loads(done.stdout)["probes"])
    for version in ("0.5.0", "0.5.1"):
        assert Path(f"{seen}-{version}").read_text() == ""


@pytest.mark.jax
def test_ctrl_c_loses_nothing_and_the_rerun_resumes(tmp_path):
    # The two ends alone: the rerun's search goes on from the one stored.
    args = ["--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--n-res", "15",
            "--n-inner", "10", "--n-outer", "1", "3", "6", "--no-evidence", "--reports",
            str(tmp_path), "--json"]
    env = cache_sharing_environments(tmp_path / "cache")
    # A runner that started us in the background may have us ignore SIGINT, and a child
    # inherits that: give it the terminal's Ctrl-C back, as a user's shell would.
    child = subprocess.Popen([sys.executable, "-m", "jaxbisect", *args], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    for line in child.stderr:
        seen.append(line)
        if line.startswith("jax 0.5.1: "):  # the first end's run is stored
            child.send_signal(signal.SIGINT)
            break
    rest = child.stderr.read()
    assert child.wait(timeout=120) == 130, "".join(seen) + rest
    assert "rerun to resume" in rest and "Traceback" not in rest
    again = subprocess.run([sys.executable, "-m", "jaxbisect", *args], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=900)
    doc = json.loads(again.stdout)
    assert doc["probes"][0]["jax"] == "0.5.0" and doc["probes"][0]["cached"] is True
    assert doc["first_new"]["jax"] == "0.5.1"


@pytest.mark.parametrize("args,needle", [
    (["--from", "0.5.0", "--to", "0.5.0"], "same release"),
    (["--from", "0.5.0", "--to", "0.4.30"], "newer than"),
    (["--from", "0.4.32", "--to", "0.5.0"], "yanked"),
    (["--from", "0.4.99", "--to", "0.5.0"], "never released"),
    (["--from", "banana", "--to", "0.5.0"], "not a version"),
    (["--from", "0.10.2", "--to", "0.12.0"], "requires Python"),
    (["--from", "0.4.30", "--to", "0.5.0", "--n-outer", "0"], "at least 1"),
    (["--from", "0.4.30", "--to", "0.5.0", "--n-outer", "5"], "two distinct values"),
    # Issue 17, item 7: refused up front, not after a run that ends in "No answer" or in
    # XLA's "invalid shape".
    (["--from", "0.4.30", "--to", "0.5.0", "--n-outer", "2", "2"], "two distinct values"),
    (["--from", "0.4.30", "--to", "0.5.0", "--n-res", "10000000"], "use --n-res 115410 or less"),
    (["--from", "0.4.30", "--to", "0.5.0", "--backend", "metal"], "unknown backend 'metal'"),
    (["--from", "0.4.30", "--to", "0.5.0", "--"], "nothing after"),
    (["--to", "0.5.0"], "--from"),
    (["--from", "0.4.30", "--to", "0.5.0", "--n-outer", "1", "2", "5", "--over",
      "n_outer=1,2"], "--n-outer is --over"),
    (["--from", "0.4.30", "--to", "0.5.0", "--n-res", "16", "--", "true"], "no sizes"),
    (["--from", "0.4.30", "--to", "0.5.0", "--metric", "exit_code"], "give the command"),
    (["--from", "0.4.30", "--to", "0.5.0", "--n-outer", "1", "2", "5", "--param",
      "n_outer=3"], "--param n_outer"),
])
def test_bad_input_is_one_line_and_exit_2(recorded_catalogue, tmp_path, args, needle):
    # Its own reports folder: were the input taken, nothing may land in the clone's reports/.
    assert needle in one_line_error(bisect("--reports", str(tmp_path / "reports"), *args))
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


def test_no_network_and_no_cache_is_one_line(tmp_path):
    done = bisect("--from", "0.4.30", "--to", "0.5.0",
                  env={"JAX_SCAN_REPRO_CACHE": str(tmp_path), "HTTPS_PROXY": "http://127.0.0.1:9",
                       "https_proxy": "http://127.0.0.1:9"})
    assert "cannot install jax 0.4.30 … 0.5.0 here: no package index is reachable" in (
        one_line_error(done))


@pytest.mark.jax
def test_a_command_that_does_not_exist_is_one_line(tmp_path):
    done = bisect("--from", "0.4.30", "--to", "0.4.31", "--backend", "cpu", "--reports",
                  str(tmp_path), "--", "no-such-command-here")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("python -m bisect: error: cannot run")
    assert "Traceback" not in done.stderr


def _startup_imports_bisect(python: str) -> bool:
    out = subprocess.run([python, "-c", "import sys; print('bisect' in sys.modules)"],
                         capture_output=True, text=True, cwd="/")
    return out.stdout.strip() == "True"


def test_python_m_bisect_is_our_driver():
    if _startup_imports_bisect(sys.executable):
        pytest.skip("this interpreter imports bisect at start-up (a site hook); "
                    "the README's project environment does not")
    done = bisect("--help", module="bisect")
    assert done.returncode == 0 and "--from RELEASE" in done.stdout


def test_console_script_cannot_be_shadowed(tmp_path):
    script = Path(sys.executable).parent / "jax-bisect"
    if not script.exists():
        pytest.skip("the project is not installed in this interpreter's environment")
    done = subprocess.run([str(script), "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0 and "--from RELEASE" in done.stdout


DEAD_PROXY = {"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
              "NO_PROXY": "", "no_proxy": ""}


@pytest.mark.jax
def test_json_stdout_is_only_json_whatever_the_command_prints(tmp_path):
    check = ("import jax, sys; print('noise from', jax.__version__); "
             "sys.exit(jax.__version__ != '0.5.0')")
    done = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--reports",
                  str(tmp_path), "--json", "--remeasure", "--", "python", "-c", check)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)  # nothing but the one document
    assert doc["first_new"]["jax"] == "0.5.1"
    assert "noise from 0.5.0" in done.stderr and "noise from 0.5.1" in done.stderr


@pytest.mark.parametrize("module, args, needle", [
    ("jaxbisect", ["--from", "0.5.0", "--to", "0.5.0", "--xla-flags", "--xla_foo=true",
                   "--try-xla-flags", "--xla_bar=1", "--try-xla-flags", "--xla_baz=2"],
     "same release"),
    ("jaxbisect.sweep", ["--release", "0.5.0", "--xla-flags", "--xla_foo=true", "--timeout",
                         "0"], "--timeout: must be more than 0"),
])
def test_flag_values_starting_with_dashes_are_taken(recorded_catalogue, module, args, needle):
    """As docs/bisect.md shows them: `--xla-flags "--xla_foo=true"` is one option and its value."""
    done = bisect(*args, module=module)
    line = one_line_error(done)
    assert needle in line and "expected one argument" not in line


def test_flag_values_reach_the_request():
    args, command = cli_module.parse(["--from", "0.5.0", "--to", "0.5.1", "--xla-flags",
                                      "--xla_foo=true --xla_bar=2", "--try-xla-flags", "--a=1",
                                      "--try-xla-flags", "--b", "--", "echo", "--xla-flags"])
    assert args.xla_flags == "--xla_foo=true --xla_bar=2"
    assert args.try_xla_flags == ["--a=1", "--b"]
    assert command == ("echo", "--xla-flags")


def test_no_case_is_the_scan_case_and_the_sizes_are_its_options():
    """The scan report is a case like any other: --n-outer is its --over, the other sizes
    its --param; a command without --metric is bisected by its exit status."""
    from jaxbisect.cli import EXIT_CODE_METRIC, SCAN_CASE

    plain, _ = cli_module.parse(["--from", "0.5.0", "--to", "0.5.1"])
    assert (plain.case, plain.over, plain.param, plain.metric) == (str(SCAN_CASE), None, [],
                                                                   None)
    sized, _ = cli_module.parse(["--from", "0.5.0", "--to", "0.5.1", *SMALL, "--dtype",
                                 "float16", "--param", "variant=1"])
    assert sized.over == "n_outer=1,3,6"
    assert sized.param == ["n_inner=10", "n_res=16", "dtype=float16", "variant=1"]
    explain, _ = cli_module.parse(["--explain", "0.5.1", "--n-outer", "2", "5"])
    assert (explain.case, explain.over) == (str(SCAN_CASE), "n_outer=2,5")
    command, cmd = cli_module.parse(["--from", "0.5.0", "--to", "0.5.1", "--", "true"])
    assert (command.case, command.metric, cmd) == (None, EXIT_CODE_METRIC, ("true",))
    field, _ = cli_module.parse(["--from", "0.5.0", "--to", "0.5.1", "--metric", "t", "--",
                                 "true"])
    assert field.metric == "t"


def test_the_callers_xla_flags_are_named_as_ignored(recorded_catalogue):
    done = bisect("--from", "0.5.0", "--to", "0.5.0", env={"XLA_FLAGS": "--xla_foo=1"})
    assert done.returncode == 2, done.stderr
    note, error = done.stderr.strip().splitlines()
    assert "XLA_FLAGS" in note and "--xla_foo=1" in note and "--xla-flags" in note
    assert "same release" in error
    quiet = bisect("--from", "0.5.0", "--to", "0.5.0", env={"XLA_FLAGS": ""})
    assert "XLA_FLAGS" not in quiet.stderr


def test_an_unwritable_reports_folder_is_refused_before_any_probe(recorded_catalogue,
                                                                   tmp_path):
    not_a_folder = tmp_path / "reports"
    not_a_folder.write_text("a file")
    done = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", "--reports",
                  str(not_a_folder))
    line = one_line_error(done)
    assert "--reports" in line and str(not_a_folder) in line


def test_refresh_catalogue_asks_pypi_however_fresh_the_cache(recorded_catalogue):
    args = ["--from", "0.5.0", "--to", "0.5.0"]
    plain = bisect(*args, env=DEAD_PROXY)
    assert "same release" in one_line_error(plain)  # the fresh cache answers, PyPI not asked
    refreshed = bisect(*args, "--refresh-catalogue", env=DEAD_PROXY)
    assert refreshed.returncode == 2
    warning, error = refreshed.stderr.strip().splitlines()
    assert "cannot reach PyPI" in warning and "same release" in error


def test_a_damaged_catalogue_offline_is_one_line_naming_it(recorded_catalogue):
    path = Path(os.environ["JAX_SCAN_REPRO_CACHE"]) / "catalogue" / "jax.json"
    path.write_text(json.dumps({"fetched_at": "2026-11-30T00:00:00Z", "pypi": None}))
    line = one_line_error(bisect("--from", "0.5.0", "--to", "0.5.1", env=DEAD_PROXY))
    assert str(path) in line and "damaged" in line


@pytest.mark.jax
def test_nothing_is_written_into_home_or_the_users_cache(tmp_path):
    from jaxbisect.files import cache_dir
    from jaxbisect.lab.catalogue import load_catalogue
    from jaxbisect.lab.environments import ensure_environment

    assert cache_dir() == TEST_CACHE and TEST_CACHE.is_relative_to(REPO)
    ignored = subprocess.run(["git", "check-ignore", "-q", str(TEST_CACHE)], cwd=REPO)
    assert ignored.returncode == 0, "the tests' cache must be ignored by git"
    catalogue = load_catalogue()
    for version in ("0.5.0", "0.5.1"):  # installed here, as every other test would
        ensure_environment(catalogue.get(version), CPU)
    home, xdg = tmp_path / "home", tmp_path / "xdg"
    home.mkdir()
    xdg.mkdir()
    done = bisect("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu", *SMALL,
                  "--no-evidence", "--reports", str(tmp_path / "reports"), "--json",
                  env={"HOME": str(home), "XDG_CACHE_HOME": str(xdg)})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["first_new"]["jax"] == "0.5.1"
    assert [p for p in home.rglob("*")] == [] and [p for p in xdg.rglob("*")] == []


def test_jax_bisect_names_itself_in_its_errors(recorded_catalogue):
    script = Path(sys.executable).parent / "jax-bisect"
    if not script.exists():
        pytest.skip("the project is not installed in this interpreter's environment")
    for args, needle in ((["--to", "0.5.0"], "--from"),
                         (["--from", "0.5.0", "--to", "0.5.0"], "same release")):
        done = subprocess.run([str(script), *args], cwd=REPO, capture_output=True, text=True)
        line = one_line_error(done)
        assert line.startswith("jax-bisect: error: ") and needle in line


def test_help_explains_every_option_and_the_exit_statuses():
    """Issue 17, item 8: no option without a line of help; the exit statuses are listed."""
    from jaxbisect import cli

    p = cli.parser()
    assert [a.option_strings for a in p._actions if not a.help] == []
    text = p.format_help()
    for status in ("0", "1", "2", "130"):
        assert re.search(rf"^\s+{status}\s+\S", text, re.M), status
