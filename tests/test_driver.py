"""The driver's policy around the search, with the harness replaced by scripted answers.

Real bisections run in test_bisect.py; these cover what real releases here cannot show on
demand: a crash next to the change (an inexact answer), a fix rather than a regression, and
the fallback to a real run, on the recorded PyPI catalogue.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxbisect import cli, driver, report
from jaxbisect.harness import HarnessOptions
from jaxbisect.measurements import Measurement
from jaxbisect.report import (
    answer_line,
    document,
    probe_table,
    render,
    report_stem,
    reproduce_command,
    write_report,
)
from jaxbisect.search import Outcome

MB = 1024**2
UNIT = 100 * 16**3 * 4


@pytest.fixture
def catalogue(recorded_catalogue):
    return recorded_catalogue


def harness_document(version: str, status: str, mode: str = "compiled") -> dict:
    """What ``python -m repro --json`` prints, for a scripted verdict."""
    n_outer = [1, 3, 6]
    buffers = {"grows": lambda n: n, "constant": lambda n: min(n, 2), "zeros": lambda n: 0}
    cases = [{"variant": "v0", "n_outer": n, "mode": mode,
              "status": "unavailable" if status == "zeros" else "ok",
              "error": "memory_analysis() reports 0 bytes" if status == "zeros" else None,
              "total_bytes": buffers[status](n) * UNIT} for n in n_outer]
    verdict = ({"status": "unavailable", "growth_per_outer": None, "unit_bytes": UNIT,
                "reason": "memory_analysis() reports 0 bytes"} if status == "zeros" else
               {"status": status, "growth_per_outer": 1.0 if status == "grows" else 0.0,
                "unit_bytes": UNIT, "reason": None})
    return {"schema": 1, "jax": version, "jaxlib": version, "backend": "cpu", "device": "cpu",
            "mode": mode, "environment": f"jax: {version}", "xla_flags": "",
            "params": {"n_outer": n_outer, "n_inner": 100, "n_res": 16, "dtype": "float32",
                       "variants": [0]},
            "cases": cases, "verdict": verdict}


def script(monkeypatch, answers: dict[str, str | dict[str, str]]):
    """Each release answers its scripted verdict; "crash" gives no document at all.

    An answer may be a dict by mode ({"compiled": "zeros", "runtime": "constant"})."""
    calls = []

    def measure_release(release, backend, options, **_):
        version = str(release.version)
        calls.append((version, options.mode, "full" if 1 in options.n_outer else "search"))
        answer = answers[version]
        if isinstance(answer, dict):
            answer = answer[options.mode]
        if answer == "crash":
            return Measurement(version, backend, options, None,
                               "the harness failed: Segmentation fault", 1.0,
                               installed={"jax": version, "jaxlib": version})
        return Measurement(version, backend, options,
                           harness_document(version, answer, options.mode), None, 1.0,
                           installed={"jax": version, "jaxlib": version, "numpy": "1.26.4"})

    monkeypatch.setattr(driver, "measure_release", measure_release)
    monkeypatch.setattr(driver, "is_cheap", lambda release, request: False)
    return calls


def bisect(catalogue, start, end, jobs=1):
    request = driver.Request(start=start, end=end, backend="cpu",
                             options=HarnessOptions(n_outer=(1, 3, 6), n_res=16), jobs=jobs)
    return driver.bisect_releases(catalogue, request, say=lambda message: None)


def searched(calls, kind="search"):
    return [(version, mode) for version, mode, what in calls if what == kind]


def test_a_crash_next_to_the_change_gives_the_range_that_holds_it(catalogue, monkeypatch):
    script(monkeypatch, {"0.5.0": "constant", "0.5.1": "crash", "0.5.2": "grows",
                         "0.5.3": "grows", "0.6.0": "grows"})
    b = bisect(catalogue, "0.5.0", "0.6.0")
    assert b.result.status == "found" and not b.result.exact
    assert (str(b.last_old.release.version), str(b.first_new.release.version)) == \
        ("0.5.0", "0.5.2")
    line = answer_line(b)
    assert "jax 0.5.1 in between could not be measured" in line
    assert "the change is in one of them or in jax 0.5.2" in line
    doc = document(b, None)
    assert doc["exact"] is False
    assert {"jax": "0.5.1", "reason": "the harness failed: Segmentation fault"} in doc["skipped"]
    text = render(b)
    assert "skipped: the harness failed: Segmentation fault" in text  # the crashed row
    assert "- jax 0.5.1: the harness failed: Segmentation fault" in text


def test_a_fix_is_found_and_named_as_one(catalogue, monkeypatch):
    script(monkeypatch, {"0.5.0": "grows", "0.5.1": "grows", "0.5.2": "grows",
                         "0.5.3": "constant", "0.6.0": "constant"})
    b = bisect(catalogue, "0.5.0", "0.6.0")
    assert b.direction == "fix" and b.result.exact
    assert str(b.first_new.release.version) == "0.5.3"
    assert answer_line(b).startswith("**Fix (cpu) between jax 0.5.2")
    assert "growing with n_outer up to jax 0.5.2 and constant in n_outer from jax 0.5.3" \
        in answer_line(b)
    assert len(b.probes) <= 2 + 3


def test_empty_compiled_stats_are_measured_for_real(catalogue, monkeypatch):
    calls = script(monkeypatch, {"0.4.25": {"compiled": "zeros", "runtime": "constant"},
                                 "0.4.26": {"compiled": "zeros", "runtime": "grows"}})
    b = bisect(catalogue, "0.4.25", "0.4.26")
    assert [p.mode for p in b.probes] == ["runtime", "runtime"]
    both = [("0.4.25", "compiled"), ("0.4.25", "runtime"), ("0.4.26", "compiled"),
            ("0.4.26", "runtime")]
    assert searched(calls) == both
    assert sorted(searched(calls, "full")) == both  # the ends' full tables fall back too
    assert all(p.full_table and p.mode == "runtime" for p in b.probes)
    assert b.result.status == "found" and b.direction == "regression"
    assert "compiled stats empty: a real run at n_res" in render(b)


def test_an_end_that_cannot_be_measured_stops_the_search(catalogue, monkeypatch):
    script(monkeypatch, {"0.5.0": "crash", "0.5.1": "grows", "0.5.2": "grows",
                         "0.5.3": "grows", "0.6.0": "grows"})
    b = bisect(catalogue, "0.5.0", "0.6.0")
    assert b.result.status == "unmeasurable" and len(b.probes) == 2
    assert b.probes[0].outcome is Outcome.SKIP
    assert "an end of the range could not be measured" in answer_line(b)
    assert "Segmentation fault" in answer_line(b)


FIVE = {"0.5.0": "constant", "0.5.1": "constant", "0.5.2": "grows", "0.5.3": "grows",
        "0.6.0": "grows"}


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_search_probes_measure_v0_and_the_report_gets_the_full_table(catalogue, monkeypatch,
                                                                     jobs):
    options = []
    script(monkeypatch, FIVE)
    measure = driver.measure_release

    def spy(release, backend, opts, **kwargs):
        options.append((str(release.version), opts))
        return measure(release, backend, opts, **kwargs)

    monkeypatch.setattr(driver, "measure_release", spy)
    b = bisect(catalogue, "0.5.0", "0.6.0", jobs=jobs)
    assert (str(b.last_old.release.version), str(b.first_new.release.version)) == \
        ("0.5.1", "0.5.2")
    search = HarnessOptions(n_outer=(3, 6), n_res=16, variants=(0,))
    full = HarnessOptions(n_outer=(1, 3, 6), n_res=16)
    probed = [str(p.release.version) for p in b.probes]
    assert sorted(v for v, o in options if o == search) == sorted(probed)  # once, v0 only
    assert sorted(v for v, o in options if o == full) == ["0.5.0", "0.5.1", "0.5.2", "0.6.0"]
    assert len(options) == len(probed) + 4
    assert {str(p.release.version) for p in b.probes if p.full_table} == \
        {"0.5.0", "0.5.1", "0.5.2", "0.6.0"}
    assert all(p.measurement.options == (full if p.full_table else search) for p in b.probes)
    assert all(len(r) <= jobs for r in b.result.rounds)
    assert len(b.result.rounds) <= b.limit[1] and len(b.probes) <= b.limit[0]
    doc = document(b, None)
    assert (doc["search"]["probes"], doc["search"]["rounds"]) == \
        (len(b.probes), len(b.result.rounds))
    assert doc["search"]["by_round"][0] == (["0.5.0", "0.6.0"] if jobs > 1 else ["0.5.0"])
    assert sum(not p["full_table"] for p in doc["probes"]) == len(b.probes) - 4
    if len(b.probes) > 4:  # the table's row says what a search probe measured
        assert "search probe: v0 at n_outer 3, 6" in render(b)


def test_stored_full_tables_answer_search_probes(catalogue, monkeypatch):
    calls = script(monkeypatch, FIVE)
    full = HarnessOptions(n_outer=(1, 3, 6), n_res=16)
    stored = {version: Measurement(version, "cpu", full, harness_document(version, verdict),
                                   None, 2.0, cached=True,
                                   installed={"jax": version, "jaxlib": version})
              for version, verdict in FIVE.items() if version in ("0.5.0", "0.6.0", "0.5.2")}

    def stored_measurement(release, backend, options):
        return stored.get(str(release.version)) if options == full else None

    monkeypatch.setattr(driver, "stored_measurement", stored_measurement)
    b = bisect(catalogue, "0.5.0", "0.6.0")
    assert b.result.status == "found" and str(b.first_new.release.version) == "0.5.2"
    measured = {version for version, _, _ in calls}
    assert not measured & set(stored)  # a stored full table is neither searched nor redone
    assert all(p.full_table for p in b.probes if str(p.release.version) in stored)
    assert b.probe_of(0).cached and b.probe_of(0).seconds == 0.0


def test_installs_run_one_round_ahead(catalogue, monkeypatch):
    script(monkeypatch, FIVE)
    installed, queued = [], []
    monkeypatch.setattr(driver, "ensure_environment",
                        lambda release, backend, **_: installed.append(str(release.version)))
    queue = driver.Workers.install_ahead
    monkeypatch.setattr(driver.Workers, "install_ahead",
                        lambda self, indices, install: (queued.append(list(indices)),
                                                        queue(self, indices, install)))
    b = bisect(catalogue, "0.5.0", "0.6.0")
    rounds = b.result.rounds
    assert len(queued) == len(rounds)
    for ahead, following in zip(queued, rounds[1:]):
        assert set(following) <= set(ahead)  # nothing is cached here: all were queued
    assert set(installed) <= {str(r.version) for r in b.candidates}


def test_a_failed_full_table_keeps_the_search_row(catalogue, monkeypatch):
    answers = dict(FIVE)
    script(monkeypatch, answers)
    measure = driver.measure_release

    def full_crashes(release, backend, options, **kwargs):
        if options.variants != (0,) and str(release.version) == "0.6.0":
            return Measurement(str(release.version), backend, options, None,
                               "the harness failed: v2 crashed", 1.0)
        return measure(release, backend, options, **kwargs)

    monkeypatch.setattr(driver, "measure_release", full_crashes)
    b = bisect(catalogue, "0.5.0", "0.6.0")
    end = b.probe_of(len(b.candidates) - 1)
    assert not end.full_table and end.full_error == "the harness failed: v2 crashed"
    assert end.verdict == "grows" and b.result.status == "found"
    assert "full table failed: the harness failed: v2 crashed" in render(b)
# -- the report: its Reproduce line, its name, what it replaces, its tables ------------------

# Any text, but "--" alone: argparse drops that value, and it is no XLA flag anyway.
flag_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                    max_size=30).filter(lambda text: text != "--")


@settings(max_examples=200, deadline=None)
@given(n_outer=st.lists(st.integers(2, 40), min_size=2, max_size=5, unique=True),
       n_inner=st.integers(1, 500), n_res=st.integers(1, 400),
       dtype=st.sampled_from(["float32", "float64", "float16", "bfloat16"]),
       xla_flags=st.one_of(st.just("--xla_cpu_enable_concurrency_optimized_scheduler=false"),
                           st.just("--bogus=1 --other='a b'"), flag_text),
       try_xla_flags=st.lists(st.one_of(st.just("--xla_foo=true"), flag_text), max_size=3),
       command=st.one_of(st.just(()), st.lists(flag_text, min_size=1, max_size=4).map(tuple)))
def test_the_reproduce_line_parses_back_into_the_same_request(n_outer, n_inner, n_res, dtype,
                                                              xla_flags, try_xla_flags, command):
    request = driver.Request(
        start="0.5.0", end="0.10.2", backend="cpu",
        options=HarnessOptions(n_outer=tuple(sorted(n_outer)), n_inner=n_inner, n_res=n_res,
                               dtype=dtype, xla_flags=xla_flags).for_bisection(),
        command=command, try_xla_flags=tuple(try_xla_flags))
    line = reproduce_command(SimpleNamespace(request=request))
    argv = shlex.split(line)
    assert argv[:3] == ["python", "-m", "bisect"]
    args, parsed_command = cli.parse(argv[3:])
    assert cli.request_from(args, parsed_command) == request


def test_the_reproduce_line_carries_the_flags_in_a_form_a_shell_pastes_back():
    request = driver.Request(start="0.5.0", end="0.10.2", backend="cpu",
                             options=HarnessOptions(xla_flags="--bogus=1"),
                             try_xla_flags=("--xla_cpu_enable_fast_math=false",))
    assert reproduce_command(SimpleNamespace(request=request)) == (
        "python -m bisect --from 0.5.0 --to 0.10.2 --backend cpu --xla-flags=--bogus=1 "
        "--try-xla-flags=--xla_cpu_enable_fast_math=false")


def test_reports_of_different_questions_have_different_names():
    def stem(**changes):
        options = {k: changes.pop(k) for k in list(changes) if k in HarnessOptions.__annotations__}
        request = driver.Request(start="0.5.0", end="0.10.2", backend="cpu",
                                 options=HarnessOptions(**options), **changes)
        return report_stem(SimpleNamespace(request=request))

    plain = stem()
    assert plain == "bisect-0.5.0-0.10.2-cpu"
    assert stem(timeout=5.0, remeasure=True) == plain  # how it ran, not what it asked
    others = [stem(xla_flags="--bogus=1"), stem(xla_flags="--other=1"), stem(n_res=64),
              stem(n_outer=(2, 5)), stem(try_xla_flags=("--a=1",)), stem(command=("true",)),
              stem(command=("false",))]
    assert len({plain, *others}) == 1 + len(others)


def test_a_run_with_no_answer_never_replaces_a_report_that_has_one(catalogue, monkeypatch,
                                                                     tmp_path):
    tmp_path = tmp_path / "reports"
    script(monkeypatch, {"0.5.0": "constant", "0.5.1": "grows"})
    found = bisect(catalogue, "0.5.0", "0.5.1")
    path, _, kept = write_report(found, tmp_path)
    assert not kept
    good = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    script(monkeypatch, {"0.5.0": "crash", "0.5.1": "grows"})
    failed = bisect(catalogue, "0.5.0", "0.5.1")
    assert failed.result.status == "unmeasurable"
    again, doc, kept = write_report(failed, tmp_path)
    assert kept and again == path and doc["status"] == "unmeasurable"
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == good


def test_a_chart_the_new_report_does_not_show_is_removed(catalogue, monkeypatch, tmp_path):
    script(monkeypatch, {"0.5.0": "constant", "0.5.1": "grows"})
    b = bisect(catalogue, "0.5.0", "0.5.1")
    chart = tmp_path / f"{report_stem(b)}.png"
    chart.write_bytes(b"an earlier run's chart")
    write_report(b, tmp_path, f"## Evidence\n\n![v0]({chart.name})\n")
    assert chart.exists()
    write_report(b, tmp_path)  # --no-evidence: no chart in the report
    assert not chart.exists()


def test_a_rewrite_that_changes_only_timings_and_the_date_leaves_the_files(
        catalogue, monkeypatch, tmp_path):
    tmp_path = tmp_path / "reports"
    script(monkeypatch, {"0.5.0": "constant", "0.5.1": "grows"})
    b = bisect(catalogue, "0.5.0", "0.5.1")
    monkeypatch.setattr(report, "machine_description",
                        lambda dated=False: "date: 2026-01-01 10:00 UTC\ntoolkit commit: abc")
    write_report(b, tmp_path)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    stored = replace(b, probes=tuple(replace(p, cached=True, seconds=0.0) for p in b.probes))
    monkeypatch.setattr(report, "machine_description",
                        lambda dated=False: "date: 2026-02-02 11:11 UTC\ntoolkit commit: def")
    write_report(stored, tmp_path)
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()} == before
    script(monkeypatch, {"0.5.0": "constant", "0.5.1": "constant"})
    write_report(bisect(catalogue, "0.5.0", "0.5.1"), tmp_path)  # a real change is written
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} != \
        {name: data for name, (data, _) in before.items()}


def wide_document(version: str, status: str) -> dict:
    """A harness document at the report's five n_outer values."""
    doc = harness_document(version, status)
    grow = status == "grows"
    doc["params"]["n_outer"] = [1, 2, 5, 10, 15]
    doc["cases"] = [{"variant": v, "n_outer": n, "mode": "compiled", "status": "ok",
                     "error": None, "total_bytes": (n if grow and v == "v0" else 1) * UNIT}
                    for v in ("v0", "v1", "v2") for n in doc["params"]["n_outer"]]
    return doc


def table_widths(markdown: str) -> list[int]:
    return [line.count("|") - 1 for line in markdown.splitlines() if line.startswith("|")]


def test_the_probe_table_fits_a_github_comment(catalogue, monkeypatch):
    script(monkeypatch, {"0.5.0": "constant", "0.5.1": "grows"})
    b = bisect(catalogue, "0.5.0", "0.5.1")
    wide = replace(b, probes=tuple(
        replace(p, measurement=replace(p.measurement, document=wide_document(
            str(p.release.version), p.verdict))) for p in b.probes))
    table = probe_table(wide)
    shown, _, hidden = table.partition("<details>")
    assert set(table_widths(shown)) == {10}
    assert "v0 n_outer=1 (MB)" in shown and "v0 n_outer=15 (MB)" in shown
    assert "verdict" in shown and "probe #" in shown
    assert "v1, any n_outer (MB)" not in shown and "v1, any n_outer (MB)" in hidden
    header = shown.splitlines()[0]
    assert "note" not in header  # empty everywhere: no column
    assert "backend" not in header and "device" not in header  # "cpu | cpu" says nothing
    assert table.count("<details>") == table.count("</details>") == 1


def test_a_command_table_has_no_empty_note_and_no_backend(catalogue, monkeypatch, tmp_path):
    codes = {"0.5.0": 0, "0.5.1": 1}

    def run_command(release, request, say):
        code = codes[str(release.version)]
        return driver.Probe(release=release, verdict="old" if code == 0 else "new",
                            mode="command", reason=None, cached=False, seconds=0.1,
                            exit_status=code, installed={"jax": str(release.version)})

    monkeypatch.setattr(driver, "run_command", run_command)
    monkeypatch.setattr(driver, "is_cheap", lambda release, request: False)
    request = driver.Request(start="0.5.0", end="0.5.1", backend="cpu",
                             options=HarnessOptions(), command=("python", "check.py"))
    b = driver.bisect_releases(catalogue, request, say=lambda message: None)
    header = probe_table(b).splitlines()[0]
    assert "note" not in header and "backend" not in header and "exit status" in header


def test_progress_says_one_step_not_one_steps(catalogue, monkeypatch):
    script(monkeypatch, {v: "constant" if v in ("0.5.0", "0.5.1") else "grows"
                         for v in ("0.5.0", "0.5.1", "0.5.2", "0.5.3")})
    said = []
    request = driver.Request(start="0.5.0", end="0.5.3", backend="cpu",
                             options=HarnessOptions(n_outer=(1, 3, 6), n_res=16))
    driver.bisect_releases(catalogue, request, say=said.append)
    narrowed = [line for line in said if line.startswith("narrowed")]
    assert not any("~1 steps" in line for line in narrowed), narrowed
    assert any(re.search(r"~1 step left\)$", line) for line in narrowed), narrowed


def target_bisect(catalogue, start, end, target="a6000", **options):
    request = driver.Request(start=start, end=end, backend="cuda12-deviceless",
                             options=HarnessOptions(n_outer=(1, 3, 6), n_res=16, target=target,
                                                    **options))
    return driver.bisect_releases(catalogue, request, say=lambda message: None)


def test_a_target_change_next_to_releases_only_a_gpu_can_compile_is_not_exact(
        catalogue, monkeypatch):
    """jax 0.4.36 and 0.4.37 cannot compile without a GPU: a change seen between 0.4.35 and
    0.4.38 may be in either of them, and the report says so, with the real-GPU command."""
    script(monkeypatch, {"0.4.35": "grows", "0.4.38": "constant"})
    b = target_bisect(catalogue, "0.4.35", "0.4.38")
    assert [str(r.version) for r in b.candidates] == ["0.4.35", "0.4.38"]
    assert b.result.status == "found" and b.result.exact and not b.exact
    assert [str(r.version) for r in b.gpu_only_between] == ["0.4.36", "0.4.37"]
    line = answer_line(b)
    assert "jax 0.4.36, 0.4.37 in between cannot be compiled without a GPU" in line
    assert "the change is in one of them or in jax 0.4.38" in line
    doc = document(b, None)
    assert doc["exact"] is False
    assert doc["needs_a_gpu"] == [{"from": "0.4.35", "to": "0.4.38", "command":
                                   "python -m bisect --from 0.4.35 --to 0.4.38 --backend cuda12 "
                                   "--n-outer 1 3 6 --n-res 16"}]


def test_a_target_range_is_narrowed_to_what_compiles_and_the_rest_keeps_the_options(
        catalogue, monkeypatch):
    """An end before 0.4.34 (whatever else is wrong with it: 0.4.16's jaxlib is dated years
    later) narrows the range; the command for the rest asks the same question on a GPU."""
    script(monkeypatch, {"0.4.34": "grows", "0.4.35": "grows", "0.4.38": "grows",
                         "0.5.0": "grows"})
    b = target_bisect(catalogue, "0.4.16", "0.5.0", n_inner=50, xla_flags="--xla_foo=1")
    assert b.measured_part == ("0.4.34", "0.5.0") and b.result.status == "alike"
    [command] = report.gpu_commands(b)
    assert shlex.split(command) == ["python", "-m", "bisect", "--from", "0.4.16", "--to",
                                    "0.4.34", "--backend", "cuda12", "--n-outer", "1", "3", "6",
                                    "--n-inner", "50", "--n-res", "16", "--xla-flags=--xla_foo=1"]
    assert "**Measured part: jax 0.4.34 … 0.5.0.**" in render(b)


def test_search_probes_at_a_small_size_fall_back_when_an_end_disagrees(catalogue,
                                                                       monkeypatch):
    """At n_res 32 release 0.5.0 looks grown, at the full size constant: the search is made
    again at the full size and the report says so; where both agree, small probes stand."""
    sizes = []

    def answer(version, options):
        sizes.append((version, options.n_res, 1 in options.n_outer))
        if version == "0.5.0" and options.n_res == 32 and not small_agrees:
            return "grows"
        return "constant" if version in ("0.5.0", "0.5.1") else "grows"

    def measure_release(release, backend, options, **_):
        version = str(release.version)
        return Measurement(version, backend, options,
                           harness_document(version, answer(version, options)), None, 1.0,
                           installed={"jax": version, "jaxlib": version})

    monkeypatch.setattr(driver, "measure_release", measure_release)
    monkeypatch.setattr(driver, "is_cheap", lambda release, request: False)
    request = driver.Request(start="0.5.0", end="0.6.0", backend="cpu",
                             options=HarnessOptions(n_outer=(1, 3, 6), n_res=200))
    small_agrees = True
    b = driver.bisect_releases(catalogue, request, say=lambda m: None)
    assert b.search_note is None and b.search_n_res == 32
    assert str(b.first_new.release.version) == "0.5.2"
    assert {n for v, n, full in sizes if not full} == {32}
    assert document(b, None)["search"]["n_res"] == 32
    sizes.clear()
    small_agrees = False
    b = driver.bisect_releases(catalogue, request, say=lambda m: None)
    assert "searched again at n_res 200" in b.search_note
    assert b.search_n_res == 200 and str(b.first_new.release.version) == "0.5.2"
    assert document(b, None)["search"]["note"] == b.search_note


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # read-only catalogue
@given(n_outer=st.lists(st.integers(2, 40), min_size=2, max_size=5, unique=True),
       n_res=st.integers(1, 400),
       xla_flags=st.one_of(st.just("--xla_cpu_enable_concurrency_optimized_scheduler=false"),
                           flag_text),
       target=st.sampled_from(["", "a6000"]))
def test_the_next_step_asks_the_same_question_over_the_wider_range(recorded_catalogue, n_outer,
                                                                    n_res, xla_flags, target):
    """Issue 17, item 1: the "Next step" command keeps every option that shaped the answer."""
    catalogue = recorded_catalogue
    request = driver.Request(
        start="0.4.30", end="0.4.38", backend="cuda12-deviceless" if target else "cpu",
        options=HarnessOptions(n_outer=tuple(sorted(n_outer)), n_res=n_res,
                               xla_flags=xla_flags, target=target).for_bisection())
    step = cli.wider_range_hint(catalogue, request, "constant")
    argv = shlex.split(step.command)
    assert argv[:3] == ["python", "-m", "bisect"]
    args, command = cli.parse(argv[3:])
    asked = cli.request_from(args, command)
    assert asked == replace(request, start="0.4.38", end=asked.end, backend=asked.backend)
    assert (asked.backend if not target else asked.options.target) == (target or "cpu")
    assert asked.end != "0.4.38"


def test_the_report_carries_what_reruns_it_without_the_toolkit(catalogue, monkeypatch,
                                                                tmp_path):
    """Issue 17, item 5: the program, at the report's sizes, and a plain pip + python line
    for each release either side of the change."""
    script(monkeypatch, {"0.5.0": "constant", "0.5.1": "grows"})
    b = bisect(catalogue, "0.5.0", "0.5.1")
    _, doc, _ = write_report(b, tmp_path)
    alone = doc["reproduce_standalone"]
    assert "N_INNER, N_RES, DTYPE = 100, 16, jnp.float32" in alone["program"]
    assert "def inner_loop_v0(x, N):" in alone["program"]
    assert [shlex.split(line)[6:9] for line in alone["commands"]] == [
        ["install", "jax==0.5.0", "jaxlib==0.5.0"], ["install", "jax==0.5.1", "jaxlib==0.5.1"]]
    markdown = (tmp_path / f"{report_stem(b)}.md").read_text()
    assert alone["program"].rstrip() in markdown


def test_a_spec_file_target_is_named_embedded_and_reproduced_by_its_name(
        catalogue, monkeypatch, tmp_path):
    """Issue 17, item 6: the user's spec (an A6000's with compute capability 99) is named as
    theirs with the capability it gives, travels in the report, and the Reproduce line names
    it as the file the report holds, not a path on this machine."""
    spec = tmp_path / "cc99.txtpb"
    built_in = (Path(report.__file__).parent.parent / "repro" / "targets" / "a6000.txtpb")
    spec.write_text(built_in.read_text().replace("major: 8", "major: 99"))
    script(monkeypatch, {"0.4.35": "grows", "0.4.38": "grows"})
    b = target_bisect(catalogue, "0.4.35", "0.4.38", target=str(spec))
    doc = document(b, None)
    assert "cc99.txtpb" in doc["measured"] and "compute capability 99.6" in doc["measured"]
    assert doc["target_spec"]["text"] == spec.read_text()
    assert "--target=cc99.txtpb" in shlex.split(doc["reproduce"])
    assert str(tmp_path) not in doc["reproduce"]
    assert spec.read_text().rstrip() in render(b)


def test_a_row_measured_at_other_sizes_says_so_in_the_row(catalogue, monkeypatch):
    """Issue 17, item 13: a real run's row (the fallback's n_res) beside compiled ones, in a
    table wide enough to be narrowed, shows its mode and size in its own cells."""
    script(monkeypatch, {"0.4.20": {"compiled": "zeros", "runtime": "constant"},
                         "0.5.0": "constant"})
    b = bisect(catalogue, "0.4.20", "0.5.0")
    wide = replace(b, probes=tuple(
        replace(p, measurement=replace(p.measurement, document={
            **wide_document(str(p.release.version), "constant"), "mode": p.mode}))
        for p in b.probes))
    shown = probe_table(wide).partition("<details>")[0]
    rows = [[c.strip() for c in line.strip("|").split("|")]
            for line in shown.splitlines() if line.startswith("|")]
    header, body = rows[0], rows[2:]
    assert set(table_widths(shown)) == {10}
    real = b.probe_of(0).measurement.options
    mode = {row[0]: row[header.index("mode")] for row in body}
    assert mode == {"0.4.20": f"runtime, n_res {real.n_res}", "0.5.0": "compiled"}


def test_reports_and_lines_never_show_the_internal_backend_name_nor_private_paths(
        catalogue, monkeypatch, tmp_path):
    """Issue 17, item 10: a target's report (its name, its text, its JSON, the next step) says
    "A6000, compiled without the GPU", never ``cuda12-deviceless``; a spec file's report is
    named after the spec; paths under HOME or the cache are shown from there."""
    import json

    from jaxbisect import environments, files

    script(monkeypatch, {"0.4.35": "grows", "0.4.38": "grows"})
    b = target_bisect(catalogue, "0.4.35", "0.4.38")
    step = cli.wider_range_hint(catalogue, b.request, "grows")
    assert step.on.startswith("A6000, compiled without the GPU")
    hint = report.next_step_markdown(step)
    spec = tmp_path / "mine.txtpb"
    spec.write_text((Path(report.__file__).parent.parent / "repro" / "targets" / "a6000.txtpb")
                    .read_text())
    mine = target_bisect(catalogue, "0.4.35", "0.4.38", target=str(spec))
    assert report_stem(mine).startswith("bisect-0.4.35-0.4.38-mine-")
    for one in (b, mine):
        doc = document(one, None)
        for text in (render(one), report_stem(one), hint):  # the JSON keeps its backend key
            assert "deviceless" not in text
        assert str(tmp_path) not in render(one) + json.dumps(doc)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(home / ".cache" / "jax-scan-repro"))
    assert files.shown_path(home / ".cache" / "jax-scan-repro" / "envs") == \
        "~/.cache/jax-scan-repro/envs"
    assert "~/.cache/jax-scan-repro " in environments._disk_full("jax 0.5.0")
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "elsewhere"))
    assert files.shown_path(tmp_path / "elsewhere" / "envs" / "x") == \
        "$JAX_SCAN_REPRO_CACHE/envs/x"


def test_the_pair_is_announced_once_before_its_tables_are_measured(catalogue, monkeypatch):
    """on_change gets the search's pair as soon as it is found, so that what needs only the
    pair (the evidence) starts beside the full tables rather than after them."""
    calls = script(monkeypatch, {"0.4.36": "constant", "0.4.37": "constant",
                                 "0.4.38": "constant", "0.5.0": "constant", "0.5.1": "grows",
                                 "0.5.2": "grows", "0.5.3": "grows", "0.6.0": "grows"})
    seen = []

    def on_change(found):
        seen.append(((str(found.last_old.release.version),
                      str(found.first_new.release.version)), set(searched(calls, "full"))))

    request = driver.Request(start="0.4.36", end="0.6.0", backend="cpu",
                             options=HarnessOptions(n_outer=(1, 3, 6), n_res=16))
    b = driver.bisect_releases(catalogue, request, say=lambda message: None,
                               on_change=on_change)
    assert [pair for pair, _ in seen] == [("0.5.0", "0.5.1")]
    assert (str(b.last_old.release.version), str(b.first_new.release.version)) == seen[0][0]
    tables_then = {version for version, _ in seen[0][1]}
    assert not tables_then & {"0.5.0", "0.5.1"}
    assert {version for version, _ in searched(calls, "full")} == \
        {"0.4.36", "0.5.0", "0.5.1", "0.6.0"}


def _sleeper(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in for an environment's python whose import takes 60 s; it writes its pid."""
    pid_file = tmp_path / "pid"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 60\n")
    python.chmod(0o755)
    return python, pid_file


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _started(pid_file: Path) -> int:
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text().strip():
            return int(pid_file.read_text())
        time.sleep(0.05)
    raise AssertionError("the warm-up never started")


@pytest.mark.parametrize("how", ["close", "no longer ahead"])
def test_a_warm_up_is_never_waited_for(tmp_path, how):
    """A warm-up import is a head start only: closing the workers, or the search moving past
    its release, stops it rather than waiting its 60 s out."""
    python, pid_file = _sleeper(tmp_path)
    workers = driver.Workers(1)
    try:
        workers.install_ahead([3], lambda i: None)
        workers.warm(3, python)
        pid = _started(pid_file)
        assert _alive(pid)
        if how == "close":
            workers.close()
        else:
            workers.install_ahead([5], lambda i: None)
        for _ in range(100):
            if not _alive(pid):
                break
            time.sleep(0.05)
        assert not _alive(pid)
    finally:
        workers.close()


def test_no_warm_up_for_a_release_whose_probe_has_begun(tmp_path):
    """An install ahead that finishes after its release's probe began starts no warm-up: the
    probe writes the bytecode itself, and a second import beside it would only cost CPU."""
    python, pid_file = _sleeper(tmp_path)
    workers = driver.Workers(1)
    try:
        workers.install_ahead([5, 6], lambda i: None)  # the round that probes 3 began
        workers.warm(3, python)
        time.sleep(0.5)
        assert not pid_file.exists()
    finally:
        workers.close()
