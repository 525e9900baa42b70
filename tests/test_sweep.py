"""The one sweep (``nox -s repro``, ``repro_release``, ``repro_range``): every release measured
and labelled as a bisection measures and places its probes. Pure logic with injected runs;
the command line in a fake lab of recorded documents (tests/fake_lab.py); real runs at small
sizes into a temporary reports folder; every kind of bad input or fault as one line with
nothing measured lost."""

from __future__ import annotations

import errno
import json
import os
import random
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from fake_lab import FakeLab, recorded, recorded_documents
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from jaxbisect import sweep
from jaxbisect.lab import backends
from jaxbisect.report import sweep_summary
from jaxbisect.search.classify import noisy
from jaxbisect.search.comparing import every_sample
from jaxbisect.search.metric_search import search_metric
from jaxbisect.search.placing import Shown
from jaxbisect.search.question import Run
from jaxbisect.sweep import label_of, place_every

REPO = Path(__file__).resolve().parent.parent
REMAT = str(REPO / "repro" / "cases" / "remat_scan_memory.py")
SMALL = ["--n-res", "16", "--n-inner", "10", "--n-outer", "1", "3", "6"]
DEAD_PROXY = {"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9",
              "HTTP_PROXY": "http://127.0.0.1:9", "http_proxy": "http://127.0.0.1:9",
              "NO_PROXY": "", "no_proxy": ""}


def run_sweep(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxbisect.sweep", *args], cwd=REPO,
                          check=False, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})})


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("python -m jaxbisect.sweep: error: ")
    return lines[0]


def results(folder: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted(folder.glob("jax-*.json"))}


# --- placing every release as a bisection places a probe -------------------------------------

CENTRES = {"old": 10.0, "new": 30.0, "third": 3000.0}


def noisy_runner(history: list[str], seed: int, calls: list):
    """Run k of release i: the same figure every time it is asked (as the store gives)."""
    def run_at(i: int, number: int) -> Run:
        calls.append((i, number))
        rng = random.Random(f"{seed}-{i}-{number}")
        value = CENTRES[history[i]] * (1 + rng.uniform(-0.08, 0.08))
        return Run(release=str(i), number=number, status="ok", samples=(value,))
    return run_at


@st.composite
def histories(draw):
    n = draw(st.integers(2, 9))
    change = draw(st.integers(1, n - 1))
    history = ["old" if i < change else "new" for i in range(n)]
    for i in range(1, n - 1):
        history[i] = draw(st.sampled_from([history[i]] * 3 + ["third"]))
    if draw(st.booleans()):
        history = ["old"] * n  # ends alike
    return history, draw(st.integers(0, 10_000))


@settings(max_examples=60, deadline=None)
@given(histories())
@example((["old"] * 9, 796))  # ends alike, called apart: the test's own error rate
def test_the_ends_are_measured_as_the_bisection_measured_them(drawn):
    history, seed = drawn
    bisected, swept = [], []
    s = search_metric(len(history), noisy_runner(history, seed, bisected), noisy,
                      noisy_metric=True, batch=5, max_runs=10)
    placed, ends = place_every(len(history), noisy_runner(history, seed, swept), noisy,
                               noisy_metric=True, batch=5, max_runs=10, reduce=every_sample)
    for i in (0, len(history) - 1):
        # The same pairs of the ends, then fresh runs beside each release it visits: the
        # runs both made are the same runs (the store's), so the same figures.
        a, b = placed[i].runs, s.placed[i].runs
        assert a[:min(len(a), len(b))] == b[:min(len(a), len(b))]
        assert [r.number for r in a] == list(range(1, len(a) + 1))
    assert ends.distinct == s.ends.distinct and s.status in ("found", "alike", "undecided")
    # Ends alike called apart is the paired test's own error, at its stated rate (1 in ~700
    # here; measured over simulated populations in test_paired_noise.py): what is checked
    # here is what follows from the ends' verdict, not that verdict.
    assume(not (ends.distinct and history[0] == history[-1]))
    labels = [label_of(p, ends) for p in placed]
    assert all(label in ("old", "new", "ambiguous", "third behaviour", Shown.LIKE_THE_ENDS,
                         "measured") for label in labels)
    for i, truth in enumerate(history):
        assert 5 <= len(placed[i].runs)
        if 0 < i < len(history) - 1:
            assert len(placed[i].runs) <= 10            # rounds of a release: the cap
        if labels[i] in ("old", "new"):
            assert truth == labels[i]                      # a confident label is the truth
        if truth == "third" and ends.distinct:
            assert labels[i] in ("third behaviour", "ambiguous")


def test_an_end_without_a_figure_leaves_every_release_unlabelled():
    def run_at(i, number):
        if i == 0:
            return Run(release="0", number=number, status="hung", error="hangs past 120 s")
        return Run(release=str(i), number=number, status="ok", samples=(1.0,))

    placed, ends = place_every(3, run_at, noisy, noisy_metric=True, batch=5, max_runs=10,
                               reduce=every_sample)
    assert ends is None and placed[1] is None
    assert label_of(placed[0], ends) == "no figure"
    assert label_of(placed[2], ends) == "measured"  # the end that measured


def test_one_release_is_measured_once_a_run_and_not_placed():
    calls: list = []
    placed, ends = place_every(1, noisy_runner(["old"], 1, calls), noisy, noisy_metric=True,
                               batch=5, max_runs=10, reduce=every_sample)
    assert calls == [(0, k) for k in range(1, 6)] and ends is None
    assert label_of(placed[0], ends) == "measured"


# --- the command line in a lab of recorded documents ----------------------------------------

REMAT_VERSIONS = ["0.4.35", "0.4.36", "0.4.37", "0.4.38", "0.5.0", "0.5.1"]
SCAN_VERSIONS = ["0.4.20", "0.5.0", "0.5.1"]


def remat_lab(**more) -> FakeLab:
    return FakeLab(recorded(recorded_documents("remat_scan_memory-jax-*.json")), **more)


def scan_lab(**more) -> FakeLab:
    """The scan case at its defaults, v0 and its COMPARE programs v1 and v2, as jax 0.4.20
    (no compiled statistics: a real run's peaks), 0.5.0 and 0.5.1 answered on the CPU."""
    return FakeLab(recorded(recorded_documents("scan_growth-*.json")), **more)


def test_a_case_sweep_labels_every_release_in_a_lab(recorded_catalogue, tmp_path, capsys):
    lab = remat_lab()
    reports = tmp_path / "reports"
    assert sweep.main(["--release", *REMAT_VERSIONS, "--backend", "cpu", "--case", REMAT,
                       "--reports", str(reports), "--jobs", "3"], lab=lab) == 0
    docs = {d["release"]: d for d in results(reports).values()}
    assert {v: d["label"] for v, d in docs.items()} == {
        **{v: "old" for v in REMAT_VERSIONS[:-1]}, "0.5.1": "new"}
    assert docs["0.5.0"]["runs"][0]["samples"] == [84802880]
    assert docs["0.5.1"]["figure"]["median"] == 441208256
    assert docs["0.5.1"]["schema"] == sweep.SCHEMA and docs["0.5.1"]["case"]["name"] == \
        "remat_scan_memory"
    assert sorted(lab.versions_asked) == sorted(REMAT_VERSIONS)
    summary = (reports / "README.md").read_text()
    assert summary.count("| old ") == 5 and summary.count("| new ") == 1
    assert "remat_scan_memory: memory by jax release" in summary


def test_no_case_is_the_scan_case_with_its_shape_and_compare_programs(recorded_catalogue,
                                                                      tmp_path, capsys):
    """nox -s repro's question: v0's memory over n_outer with v1 and v2 beside it; 0.4.20's
    compiled statistics are empty, so its figures are a real run's peaks (at n_res 32)."""
    reports = tmp_path / "repro"
    assert sweep.main(["--release", *SCAN_VERSIONS, "--backend", "cpu", "--reports",
                       str(reports)], lab=scan_lab()) == 0
    docs = {d["release"]: d for d in results(reports).values()}
    assert [docs[v]["series"]["status"] for v in SCAN_VERSIONS] == \
        ["constant", "constant", "grows"]
    assert [docs[v]["label"] for v in SCAN_VERSIONS] == ["old", "old", "new"]
    assert docs["0.5.1"]["series"]["figures"] == {
        "1": 3264000132, "2": 6464000260, "5": 16064000644, "10": 32064001284,
        "15": 48064001924}
    assert docs["0.5.1"]["series"]["growth"] == 1.0
    assert {round(f / 1024**2, 2) for f in docs["0.5.1"]["compare"]["v1"]["figures"].values()} \
        == {30.52}
    assert sorted(docs["0.5.1"]["compare"]["v2"]["figures"]) == ["1", "2"]
    fallback = docs["0.4.20"]["series"]["fallback"]
    assert fallback["metric"] == "peak_memory" and "0 bytes" in fallback["reason"]
    assert docs["0.4.20"]["series"]["params"]["n_res"] == 32
    headers, rows = sweep_summary.results_rows(list(docs.values()))
    assert headers[:4] == ["jax", "jaxlib", "label", "mode"] and headers[-4:-2] == \
        ["v1 (MiB)", "v2 (MiB)"]
    by_release = {row[0]: dict(zip(headers, row)) for row in rows}
    assert by_release["0.5.1"]["n_outer=10 (MiB)"] == "30578.61"
    assert by_release["0.5.0"]["n_outer=10 (MiB)"] == "6164.55"
    assert by_release["0.5.1"]["v1 (MiB)"] == "30.52"
    assert by_release["0.5.1"]["v2 (MiB)"] == "30.52 (n_outer 1, 2 only)"
    assert by_release["0.4.20"]["mode"] == "a run's peak, n_res 32"
    assert by_release["0.4.20"]["n_outer=15 (MiB)"] == "–"


def test_one_release_swept_alone_keeps_the_label_a_whole_sweep_gave_it(recorded_catalogue,
                                                                       tmp_path):
    """nox -s repro_release after nox -s repro: the same figures, nothing to label the
    release against: its file stays as the whole sweep wrote it."""
    reports = tmp_path / "repro"
    as_nox = ["--backend", "cpu", "--reports", str(reports), "--command", "nox -s repro", "-q"]
    assert sweep.main(["--release", *SCAN_VERSIONS, *as_nox], lab=scan_lab()) == 0
    before = {p.name: p.read_bytes() for p in reports.iterdir()}
    assert sweep.main(["--release", "0.5.0", *as_nox], lab=scan_lab()) == 0
    assert {p.name: p.read_bytes() for p in reports.iterdir()} == before
    assert json.loads(before["jax-0.5.0-cpu.json"])["label"] == "old"
    alone = tmp_path / "alone"
    assert sweep.main(["--release", "0.5.0", "--backend", "cpu", "--reports", str(alone),
                       "-q"], lab=scan_lab()) == 0
    assert json.loads((alone / "jax-0.5.0-cpu.json").read_text())["label"] == "measured"


def test_a_target_beside_the_backend_is_one_pool_and_one_summary(recorded_catalogue, tmp_path):
    """--also-target a6000 (nox -s repro): the releases only a real GPU compiles for are
    listed as such, beside the backend's rows, never measured."""
    cpu = recorded(recorded_documents("scan_growth-*.json"))
    documents = {d["jax"]: d for d in recorded_documents("scan_growth-*.json")}

    def answer(version, question, number):
        """The CPU's figures, as if compiled for the A6000, the COMPARE programs in the same
        process: v2 at n_outer 1 only, as the harness compiles it for a target (its GPU
        compile takes minutes from 2 on)."""
        if not question.target:
            return cpu(version, question, number)
        assert question.compare and question.over
        doc = documents[version]
        v2 = doc["compare"]["v2"]
        v2 = {**v2, "over": {"name": "n_outer", "values": [1]}, "points": v2["points"][:1]}
        return {**doc, "compare": {**doc["compare"], "v2": v2},
                "device": "NVIDIA RTX A6000", "deviceless": True}

    lab = FakeLab(answer)
    reports = tmp_path / "repro"
    assert sweep.main(["--release", "0.4.20", "0.5.0", "0.5.1", "--if-installable",
                       "--backend", "cpu", "--also-target", "a6000", "--reports", str(reports),
                       "-q"], lab=lab) == 0
    docs = results(reports)
    assert docs["jax-0.4.20-a6000.json"]["label"] == "skipped"
    assert docs["jax-0.4.20-a6000.json"]["skipped"].startswith("needs a real GPU")
    assert docs["jax-0.5.1-a6000.json"]["series"]["status"] == "grows"
    assert docs["jax-0.5.1-a6000.json"]["target"] == "a6000"
    assert docs["jax-0.5.1-a6000.json"]["compare"]["v2"]["figures"] == {"1": 32000000}
    assert docs["jax-0.5.1-cpu.json"]["compare"]["v2"]["figures"] == {"1": 32000000,
                                                                    "2": 32000000}
    summary = (reports / "README.md").read_text()
    assert "skipped" in summary and "needs a real GPU" in summary
    assert "A6000, compiled without the GPU" in summary


def test_releases_are_measured_side_by_side(recorded_catalogue, tmp_path):
    """--jobs 2: a deterministic metric's runs of two releases overlap."""
    import time

    from in_flight import InFlight

    inner = recorded(recorded_documents("remat_scan_memory-jax-*.json"))
    live = InFlight()

    def answer(version, question, number):
        with live:
            time.sleep(0.05)
        return inner(version, question, number)

    args = ["--release", *REMAT_VERSIONS, "--backend", "cpu", "--case", REMAT, "-q"]
    assert sweep.main([*args, "--jobs", "2", "--reports", str(tmp_path / "a")],
                      lab=FakeLab(answer)) == 0
    assert live.most == 2
    live.most = 0
    assert sweep.main([*args, "--jobs", "1", "--reports", str(tmp_path / "b")],
                      lab=FakeLab(answer)) == 0
    assert live.most == 1
    assert results(tmp_path / "a") == results(tmp_path / "b")


# --- faults: nothing already measured is lost ------------------------------------------------


def _lab_sweep(reports: Path, lab, *more: str) -> int:
    return sweep.main(["--release", "0.5.0", "0.5.1", "--backend", "cpu", "--case", REMAT,
                       "--reports", str(reports), "-q", *more], lab=lab)


@pytest.mark.parametrize("fault, status", [
    (Run(release="0.5.1", number=1, status="failed",
         error="installing jax 0.5.1 (cpu) failed: Failed to fetch: `https://pypi.org/…`"), 2),
    (KeyboardInterrupt(), 130),
])
def test_a_failed_or_interrupted_release_keeps_the_earlier_result(recorded_catalogue, tmp_path,
                                                                  capsys, fault, status):
    reports = tmp_path / "reports"
    assert _lab_sweep(reports, remat_lab()) == 0
    before = {p.name: p.read_bytes() for p in reports.iterdir()}
    good = recorded(recorded_documents("remat_scan_memory-jax-*.json"))

    def answer(version, question, number):
        if version != "0.5.1":
            return good(version, question, number)
        if isinstance(fault, BaseException):
            raise fault
        return fault

    capsys.readouterr()
    assert _lab_sweep(reports, FakeLab(answer)) == status
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert ("Failed to fetch" if status == 2 else "interrupted") in err
    after = {p.name: p.read_bytes() for p in reports.iterdir()}
    assert after["jax-0.5.1-cpu.json"] == before["jax-0.5.1-cpu.json"]


def test_a_full_disk_while_writing_is_one_line(recorded_catalogue, tmp_path, monkeypatch,
                                               capsys):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x.json"))

    monkeypatch.setattr(sweep, "write_json_if_changed", full)
    assert _lab_sweep(tmp_path, remat_lab()) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [(f"python -m jaxbisect.sweep: error: cannot write (No space left on "
                    f"device: {tmp_path / 'x.json'}); 0 releases written are kept in "
                    f"{tmp_path}/")]


def test_a_result_without_a_figure_never_replaces_one_with_it(tmp_path):
    good = {"kind": "sweep-result", "release": "0.5.0", "figure": {"median": 1, "n": 1}}
    failed = {**good, "figure": {"n": 0}, "error": "the harness failed: boom"}
    assert sweep.write_result(tmp_path, good, "cpu", print) == tmp_path / "jax-0.5.0-cpu.json"
    assert sweep.write_result(tmp_path, failed, "cpu", lambda m: None) is None
    assert sweep_summary.read_result(tmp_path / "jax-0.5.0-cpu.json") == good
    fresh = tmp_path / "elsewhere"
    assert sweep.write_result(fresh, failed, "cpu", print) == fresh / "jax-0.5.0-cpu.json"


def _another_machines_run(document: dict) -> dict:
    """The same figures as another machine writes them: other timings, kernel, host and
    interpreter build, run there by a cluster's scheduler."""
    doc = json.loads(json.dumps(document))
    doc["environment"] = (doc["environment"] or "").replace("node=", "node=laptop") + "\nelse"
    doc["seconds"] += 5
    for run in doc["runs"]:
        run["seconds"] = 99.0
        run["ran_on"] = {"node": "gpu7", "job": "18", "step": None, "submitted": 1796255921.15}
    return doc


def test_a_rerun_elsewhere_with_the_same_figures_leaves_the_tracked_results(tmp_path):
    """Issue 17, item 4: a clone's Quick start on another machine changes no result file and,
    in the summary, nothing (the date line is not compared either)."""
    reports = tmp_path / "repro"
    reports.mkdir()
    for path in (REPO / "reports" / "repro").iterdir():
        (reports / path.name).write_bytes(path.read_bytes())
    sweep_summary.write_summary(reports, "nox -s repro", machine=lambda: "platform: This")
    assert "deviceless" not in (reports / "README.md").read_text()  # issue 17, item 10
    assert not sweep_summary.load_results(reports)[1]  # every file there is a result
    before = {p.name: p.read_bytes() for p in reports.iterdir()}
    for name, where in (("jax-0.5.0-cpu.json", "cpu"), ("jax-0.5.1-a6000.json", "a6000")):
        again = _another_machines_run(json.loads((reports / name).read_text()))
        assert sweep.write_result(reports, again, where, print) == reports / name
    sweep_summary.write_summary(reports, "nox -s repro",
                        machine=lambda: "platform: Other\ncores: 64\ntoolkit commit: 0000000")
    assert {p.name: p.read_bytes() for p in reports.iterdir()} == before
    # A figure that changed is written, and the summary with it.
    doc = _another_machines_run(json.loads((reports / "jax-0.5.0-cpu.json").read_text()))
    doc["series"]["figures"]["1"] += 1
    sweep.write_result(reports, doc, "cpu", print)
    assert json.loads((reports / "jax-0.5.0-cpu.json").read_text())["series"] == doc["series"]
    sweep_summary.write_summary(reports, "nox -s repro", machine=lambda: "platform: Other")
    assert "platform: Other" in (reports / "README.md").read_text()


# --- bad input: one line, exit 2, nothing written -------------------------------------------


@pytest.mark.parametrize("release, needle", [
    ("9.9.9", "jax 9.9.9 was never released; nearest releases: "),
    ("0.4.32", "jax 0.4.32 was yanked; nearest releases: 0.4.31, 0.4.33 (--allow-yanked"),
    ("0.11.0", "jax 0.11.0 cannot be installed here (cpu): requires Python >=3.12"),
    ("0.4.16", "jax 0.4.16 cannot be installed here (cpu): its jaxlib 0.4.13 was uploaded"),
    ("banana", "'banana' is not a version number"),
])
def test_a_release_that_cannot_be_measured_is_one_line_and_exit_2(recorded_catalogue, release,
                                                                   needle, tmp_path):
    reports = tmp_path / "reports"  # tmp_path also holds the recorded catalogue's cache
    reports.mkdir()
    done = run_sweep("--release", "0.5.0", release, "--backend", "cpu",
                     "--reports", str(reports))
    assert needle in one_line_error(done)
    assert not list(reports.iterdir())  # checked before anything is installed or written


@pytest.mark.parametrize("args, needle", [
    ([], "name the releases"),
    (["--release", "0.5.0", "--from", "0.4.30"], "either --release or --from/--to"),
    (["--release", "0.5.0", "--n-outer", "0"], "must be at least 1"),
    (["--release", "0.5.0", "--n-res", "16", "--case", REMAT], "size the scan case"),
    (["--release", "0.5.0", "--n-outer", "2", "--over", "n_outer=2,3"], "give one of them"),
    (["--release", "0.5.0", "--backend", "metal"], "unknown backend 'metal'"),
    (["--release", "0.5.0", "--param", "colour=red"], "scan_growth has no parameter"),
    (["--release", "0.5.0", "--metric", "run_time", "--target", "a6000"], "without the GPU"),
    (["--release", "0.5.0", "--target", "a6000", "--also-target", "h100"], "not with --target"),
    (["--from", "0.5.0", "--to", "0.4.30"], "empty range"),
    (["--release", "0.5.0", "--timeout", "0"], "must be more than 0"),
    (["--release", "0.5.0", "--threshold", "1.5"], "and below 1"),
])
def test_bad_arguments_are_one_line_and_exit_2(recorded_catalogue, args, needle, tmp_path):
    done = run_sweep(*args, "--reports", str(tmp_path))
    assert needle in one_line_error(done)


def test_the_scan_case_sizes_are_its_over_and_params():
    """The sweep reads the sizes as python -m bisect does (the option table's words)."""
    args = sweep.parse_args(["--release", "0.5.0", "--n-outer", "5,1", "2", "--n-res", "16",
                             "--param", "n_inner=10"])
    assert args.over == "n_outer=1,2,5" and args.param == ["n_res=16", "n_inner=10"]
    plain = sweep.parse_args(["--release", "0.5.0"])
    assert plain.over is None and plain.param == [] and plain.backend == "auto"


def test_no_network_and_no_catalogue_is_one_line(tmp_path):
    done = run_sweep("--release", "0.5.0", "--backend", "cpu", "--reports", str(tmp_path),
                     env={"JAX_SCAN_REPRO_CACHE": str(tmp_path / "empty"), **DEAD_PROXY})
    assert "cannot install jax 0.5.0 here: no package index is reachable" in (
        one_line_error(done))


def test_a_range_lists_what_cannot_be_installed_with_the_reason(recorded_catalogue):
    catalogue = recorded_catalogue
    args = sweep.parse_args(["--from", "0.4.16", "--to", "0.4.19"])
    planned = sweep.select(catalogue, args, backends.get("cpu"))
    assert [str(p.release.version) for p in planned] == ["0.4.16", "0.4.17", "0.4.18", "0.4.19"]
    assert [bool(p.skip) for p in planned] == [True, True, False, False]
    assert "long after the release" in planned[0].skip
    yanked_inside = sweep.select(catalogue, sweep.parse_args(["--from", "0.4.31", "--to",
                                                              "0.4.33"]), backends.get("cpu"))
    assert [str(t.release.version) for t in yanked_inside] == ["0.4.31", "0.4.33"]


def test_the_default_set_skips_what_cannot_be_installed_here(recorded_catalogue, tmp_path):
    """nox -s repro names releases that may need a Python this machine lacks (0.12.0.1 needs
    3.12): with --if-installable they are listed with the reason, and the run succeeds."""
    done = run_sweep("--release", "0.12.0.1", "--if-installable", "--backend", "cpu",
                     "--reports", str(tmp_path))
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "jax-0.12.0.1-cpu.json").read_text())
    assert document["label"] == "skipped" and "figure" not in document
    assert document["skipped"].startswith("requires Python >=3.12")
    assert "not installable here: requires Python" in (tmp_path / "README.md").read_text()


def test_the_callers_xla_flags_are_named_as_ignored(recorded_catalogue, tmp_path):
    done = run_sweep("--release", "9.9.9", "--backend", "cpu", "--reports", str(tmp_path),
                     env={"XLA_FLAGS": "--xla_foo=1"})
    assert done.returncode == 2
    note, error = done.stderr.strip().splitlines()
    assert "--xla_foo=1" in note and "--xla-flags" in note and "never released" in error


def test_an_unwritable_reports_folder_is_refused_first(recorded_catalogue, tmp_path):
    (tmp_path / "file").write_text("")
    line = one_line_error(run_sweep("--release", "0.5.0", "--backend", "cpu", "--reports",
                                    str(tmp_path / "file" / "reports")))
    assert "--reports" in line and "cannot write there" in line


# --- real releases at small sizes -----------------------------------------------------------


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """Two real releases swept one after the other into one reports folder."""
    reports = tmp_path_factory.mktemp("reports")
    for release in ("0.10.2", "0.5.0"):
        done = run_sweep("--release", release, "--backend", "cpu", "--reports", str(reports),
                         *SMALL)
        assert done.returncode == 0, done.stderr
        assert f"jax {release} (cpu): measured, " in done.stderr  # progress names the release
    return reports


@pytest.mark.jax
def test_each_release_is_written_whole_with_its_shape(swept):
    for release, shape in (("0.10.2", "grows"), ("0.5.0", "constant")):
        document = json.loads((swept / f"jax-{release}-cpu.json").read_text())
        assert document["release"] == release and document["backend"] == "cpu"
        assert document["case"]["params"]["n_res"] == 16
        assert document["over"] == ["n_outer", [1, 3, 6]]
        assert document["jaxlib"] == release and document["runs"][0]["installed"]["jax"] == release
        assert document["series"]["status"] == shape
        assert set(document["compare"]) == {"v1", "v2"}
    assert not list(swept.glob(".*.tmp"))  # no half-written file left behind


@pytest.mark.jax
def test_the_summary_is_regenerated_from_every_result(swept):
    summary = (swept / "README.md").read_text()
    table_rows = [line for line in summary.splitlines() if line.startswith("| 0.")]
    assert [row.split("|")[1].strip() for row in table_rows] == ["0.5.0", "0.10.2"]
    assert "- Command: `python -m jaxbisect.sweep --release 0.5.0" in summary
    assert "n_res=16" in summary and "<details><summary>Machine</summary>" in summary
    assert "jax.print_environment_info()" in summary and "jaxlib: 0.10.2" in summary


@pytest.mark.jax
def test_a_rerun_says_there_is_nothing_to_measure_and_changes_no_byte(swept):
    """Stored: nothing measured and no file touched. Measured again (--remeasure): the same
    figures with other timings, and still no file touched."""
    args = ["--release", "0.5.0", "--backend", "cpu", "--reports", str(swept), *SMALL]
    command = shlex.join(["python", "-m", "jaxbisect.sweep", *args])  # as the fixture ran it
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in swept.iterdir()}
    done = run_sweep(*args, "--command", command)
    assert done.returncode == 0, done.stderr
    assert "nothing to measure on cpu, 1 release stored from earlier runs" in done.stderr
    assert "1 release to measure" not in done.stderr
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in swept.iterdir()} == before
    again = run_sweep(*args, "--remeasure", "--command", command)
    assert again.returncode == 0, again.stderr
    assert "1 release to measure on cpu" in again.stderr
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in swept.iterdir()} == before


@pytest.mark.jax
def test_without_network_what_is_stored_still_answers(swept, tmp_path):
    done = run_sweep("--release", "0.10.2", "--backend", "cpu", "--reports", str(tmp_path),
                     *SMALL, env=DEAD_PROXY)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "jax-0.10.2-cpu.json").exists()


def test_a_case_sweep_goes_to_the_cluster_as_the_scan_case_does(recorded_catalogue, tmp_path):
    """One sweep: --executor slurm is the lab's for any question (checked before anything
    runs: here no scheduler is on PATH), never refused for a --case."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for case in ([], ["--case", REMAT]):
        done = run_sweep("--release", "0.5.0", "--backend", "cpu", *case, "--executor",
                         "slurm", "--reports", str(tmp_path / "r"), env={"PATH": str(bare)})
        assert "sbatch, srun, squeue, scancel, scontrol not found on PATH" in \
            one_line_error(done)


def test_the_driver_reaches_no_command_line_of_the_harness():
    """The library side of the driver (every jaxbisect module) imports no command line of
    repro/: the scan case's path lives with the cases (repro.case), not in repro.cli."""
    code = ("import importlib, pkgutil, sys, jaxbisect\n"
            "for m in pkgutil.walk_packages(jaxbisect.__path__, 'jaxbisect.'):\n"
            "    if m.name != 'jaxbisect.__main__':\n"
            "        importlib.import_module(m.name)\n"
            "print(sorted(k for k in sys.modules if k.startswith('repro')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                          text=True, check=True)
    loaded = json.loads(done.stdout.replace("'", '"'))
    assert "repro.case" in loaded and "repro.cli" not in loaded


def test_render_rewrites_a_summary_from_its_results_alone(tmp_path):
    """``--render DIR``: the README remade from the JSON results beside it, measuring nothing;
    the command, date and machine of the run that measured them carried, so a second render
    of the same results leaves the file as it was."""
    reports = tmp_path / "a6000"
    reports.mkdir()
    for path in (REPO / "reports" / "a6000").glob("jax-*.json"):
        (reports / path.name).write_bytes(path.read_bytes())
    old = "\n".join([
        "# scan_growth: memory by jax release", "", "Written by an older renderer.", "",
        "- Command: `nox -s repro_range -- --from 0.4.34 --to 0.12.0.1 --target a6000`",
        "- Updated: 2026-12-03 15:46 UTC", "- Label: each release as a bisection places a "
        "probe, by the classifier", "", "| jax | n_outer=1 (MB) |", "|---|---|", "",
        sweep_summary.MACHINE_SUMMARY, "", "```text", "platform: The measuring one",
        "cores: 2", "```", "", "</details>", ""])
    (reports / "README.md").write_text(old)
    done = run_sweep("--render", str(reports), env={"HTTPS_PROXY": "http://127.0.0.1:9"})
    assert done.returncode == 0, done.stderr
    text = (reports / "README.md").read_text()
    assert text != old
    assert sweep_summary.recorded(text) == sweep_summary.recorded(old)
    command, updated, machine = sweep_summary.recorded(text)
    assert command.startswith("nox -s repro_range") and machine.endswith("cores: 2")
    assert f"{updated:%Y-%m-%d %H:%M}" == "2026-12-03 15:46"
    results, _ = sweep_summary.load_results(reports)
    assert sweep_summary.results_table(results) in text  # the table is the results'
    header = next(line for line in text.splitlines() if line.startswith("| jax"))
    assert "(MiB)" in header and "(MB)" not in header
    assert sweep_summary.LABEL_LINE in text
    assert not any(w in text for w in ("probe", "classifier"))
    again = run_sweep("--render", str(reports))
    assert again.returncode == 0, again.stderr
    assert (reports / "README.md").read_text() == text
    # Bad input: one line, exit 2, nothing written.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no sweep results" in one_line_error(run_sweep("--render", str(empty)))
    (reports / "README.md").unlink()
    assert "no summary to take" in one_line_error(run_sweep("--render", str(reports)))
    assert not (reports / "README.md").exists()
    assert "takes no releases" in one_line_error(run_sweep("--render", str(reports),
                                                           "--release", "0.5.0"))


def test_a_sweep_records_its_run_beside_its_results_and_renders_from_it(tmp_path):
    """The summary's command, date and machine are the run's own record (sweep.json), written
    with the summary; a render reads them from it, and a rerun with the same figures changes
    neither."""
    reports = tmp_path / "one"
    reports.mkdir()
    for path in (REPO / "reports" / "a6000").glob("jax-0.5.*.json"):
        (reports / path.name).write_bytes(path.read_bytes())
    sweep_summary.write_summary(reports, "nox -s repro_range -- --from 0.5.0", lambda: "box")
    record = json.loads((reports / sweep_summary.RUN_RECORD).read_text())
    assert (record["kind"], record["command"], record["machine"]) == (
        sweep_summary.RUN_KIND, "nox -s repro_range -- --from 0.5.0", "box")
    text = (reports / sweep_summary.SUMMARY).read_text()
    assert sweep_summary.recorded(text) == sweep_summary.run_record(reports)
    assert sweep_summary.RUN_RECORD not in sweep_summary.load_results(reports)[1]
    files = {p.name: p.read_bytes() for p in reports.iterdir()}
    sweep_summary.write_summary(reports, "nox -s repro_range -- --from 0.5.0", lambda: "other")
    assert {p.name: p.read_bytes() for p in reports.iterdir()} == files
    (reports / sweep_summary.SUMMARY).write_text("stale\n" + text)
    sweep_summary.render_summary(reports)
    assert (reports / sweep_summary.SUMMARY).read_text() == text


def test_a_label_the_classifier_could_not_place_reads_cannot_tell():
    doc = json.loads((REPO / "reports" / "a6000" / "jax-0.5.0-a6000.json").read_text())
    headers, rows = sweep_summary.results_rows([{**doc, "label": "ambiguous"}])
    assert rows[0][headers.index("label")] == "cannot tell"


@pytest.mark.parametrize("folder", ["a6000", "repro"])
def test_every_shipped_sweep_summary_is_its_results_rendered(folder):
    """A change to the summary's words regenerates the shipped READMEs (``--render``) in its
    commit, as a renderer change does the bisection reports."""
    reports = REPO / "reports" / folder
    text = (reports / sweep_summary.SUMMARY).read_text()
    command, updated, machine = sweep_summary.recorded(text)
    # what the page says of the run is its record's (sweep.json), not the page's own
    assert sweep_summary.run_record(reports) == (command, updated, machine)
    results, unreadable = sweep_summary.load_results(reports)
    assert results and not unreadable
    assert sweep_summary.summary_text(results, unreadable, command, updated,
                                      lambda: machine) == text


SWEEP_FOLDERS = [p.parent for p in sorted(
    (Path(__file__).resolve().parent.parent / "reports").glob("*/README.md"))
    if any(p.parent.glob("jax-*.json"))]


@pytest.mark.parametrize("folder", SWEEP_FOLDERS, ids=lambda p: p.name)
def test_a_sweep_readme_s_machine_block_names_the_machines_its_rows_record(folder):
    import re

    text = (folder / "README.md").read_text()
    block = text.split(sweep_summary.MACHINE_SUMMARY, 1)[1].split("</details>", 1)[0]
    measured = block.split(sweep_summary.SWEEP_RAN, 1)[0]
    results, _ = sweep_summary.load_results(folder)
    for d in results:
        if d.get("skipped"):
            continue
        kernel = re.search(r"release='([^']+)'", d.get("environment") or "")
        if kernel:  # the kernel its own record names, on the line that lists its release
            line = next(ln for ln in measured.splitlines() if kernel[1] in ln)
            assert f"{d['release']} (" in line, (d["release"], kernel[1])
    assert "measured on" in measured


def test_rows_from_two_machines_name_both_not_the_renderer():
    def result(release, kernel):
        return {"release": release, "backend": "cpu", "environment":
                f"python: 3.11.7 (main)\nplatform: uname_result(system='Linux', node='vm', "
                f"release='{kernel}', version='#1', machine='x86_64')"}

    lines = sweep_summary.measured_on([result("0.5.0", "6.1-a"), result("0.5.1", "6.1-b")])
    assert any("6.1-a" in ln and "0.5.0 (" in ln and "0.5.1" not in ln for ln in lines)
    assert any("6.1-b" in ln and "0.5.1 (" in ln for ln in lines)
    one = json.loads(next(p for f in SWEEP_FOLDERS for p in f.glob("jax-*-cpu.json")).read_text())
    one["environment"] = result("0.5.0", "6.1-a")["environment"]
    one.pop("skipped", None)
    text = sweep_summary.summary_text([one], [], "nox -s repro",
                                      sweep_summary.datetime.now(sweep_summary.UTC),
                                      lambda: "platform: Renderer")
    block = text.split(sweep_summary.MACHINE_SUMMARY)[1]
    assert block.index("6.1-a") < block.index(sweep_summary.SWEEP_RAN) < block.index("Renderer")
