"""The per-release sweep behind ``nox -s repro``: real runs at small sizes into a temporary
reports folder (environments and stored results from the real cache, so warm runs are quick),
and every kind of bad input or fault as one line with nothing measured lost."""

from __future__ import annotations

import errno
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from jaxbisect import sweep
from jaxbisect.errors import InstallFailed
from jaxbisect.lab import RealLab
from jaxbisect.measurements import Measurement

REPO = Path(__file__).resolve().parent.parent
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


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> Path:
    """Two real releases swept one after the other into one reports folder."""
    reports = tmp_path_factory.mktemp("reports")
    for release in ("0.10.2", "0.5.0"):
        done = run_sweep("--release", release, "--backend", "cpu", "--reports", str(reports),
                         *SMALL)
        assert done.returncode == 0, done.stderr
        assert f"jax {release} (cpu): " in done.stderr  # progress names the release
    return reports


@pytest.mark.jax
def test_each_release_is_written_whole_as_its_measurement(swept):
    for release, verdict in (("0.10.2", "grows"), ("0.5.0", "constant")):
        document = json.loads((swept / f"jax-{release}-cpu.json").read_text())
        measurement = Measurement.from_json(document)
        assert measurement.release == release and measurement.backend == "cpu"
        assert measurement.options.n_res == 16 and measurement.options.n_outer == (1, 3, 6)
        assert measurement.document["jax"] == release
        assert measurement.installed["jax"] == release
        assert document["cached"] is False  # stable content, whether stored or measured now
        assert measurement.verdict == verdict
    assert not list(swept.glob(".*.tmp"))  # no half-written file left behind


@pytest.mark.jax
def test_the_summary_is_regenerated_from_every_result(swept):
    summary = (swept / "README.md").read_text()
    table_rows = [line for line in summary.splitlines() if line.startswith("| 0.")]
    assert [row.split("|")[1].strip() for row in table_rows] == ["0.5.0", "0.10.2"]
    assert "- Command: `python -m jaxbisect.sweep --release 0.5.0" in summary
    assert "--n-res 16" in summary and "<details><summary>Machine</summary>" in summary
    assert "jax.print_environment_info()" in summary and "jaxlib: 0.10.2" in summary


@pytest.mark.jax
def test_a_rerun_measures_nothing_and_leaves_the_files_alone(swept):
    before = {p.name: p.read_text() for p in swept.iterdir()}
    done = run_sweep("--release", "0.5.0", "--backend", "cpu", "--reports", str(swept), *SMALL)
    assert done.returncode == 0, done.stderr
    assert "stored result from an earlier run" in done.stderr
    after = {p.name: p.read_text() for p in swept.iterdir()}
    assert after["jax-0.5.0-cpu.json"] == before["jax-0.5.0-cpu.json"]
    assert sweep._undated(after["README.md"]) == sweep._undated(before["README.md"])


@pytest.mark.jax
def test_without_network_what_is_stored_still_answers(swept, tmp_path):
    done = run_sweep("--release", "0.10.2", "--backend", "cpu", "--reports", str(tmp_path),
                     *SMALL, env=DEAD_PROXY)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "jax-0.10.2-cpu.json").exists()


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
    (["--release", "0.5.0", "--variants", "v1"], "must include v0"),
    (["--release", "0.5.0", "--backend", "tpu"], "invalid choice: 'tpu'"),
    (["--from", "0.5.0", "--to", "0.4.30"], "empty range"),
])
def test_bad_arguments_are_one_line_and_exit_2(recorded_catalogue, args, needle, tmp_path):
    done = run_sweep(*args, "--reports", str(tmp_path))
    assert needle in one_line_error(done)


def test_no_network_and_no_catalogue_is_one_line(tmp_path):
    done = run_sweep("--release", "0.5.0", "--backend", "cpu", "--reports", str(tmp_path),
                     env={"JAX_SCAN_REPRO_CACHE": str(tmp_path / "empty"), **DEAD_PROXY})
    assert "cannot reach PyPI" in one_line_error(done)


def test_a_range_lists_what_cannot_be_installed_with_the_reason(recorded_catalogue):
    catalogue = recorded_catalogue
    args = sweep.parse_args(["--from", "0.4.16", "--to", "0.4.19"])
    planned = sweep.select(catalogue, args, "cpu")
    assert [str(p.release.version) for p in planned] == ["0.4.16", "0.4.17", "0.4.18", "0.4.19"]
    assert [bool(p.skip) for p in planned] == [True, True, False, False]
    assert "long after the release" in planned[0].skip
    yanked_inside = sweep.select(catalogue, sweep.parse_args(["--from", "0.4.31", "--to",
                                                              "0.4.33"]), "cpu")
    assert [str(t.release.version) for t in yanked_inside] == ["0.4.31", "0.4.33"]


# --- faults: nothing already measured is lost ------------------------------------------------


@pytest.fixture
def measured(swept, tmp_path) -> Path:
    """A reports folder holding one real result (a copy), and the stored result store bypassed."""
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "jax-0.10.2-cpu.json").write_text((swept / "jax-0.10.2-cpu.json").read_text())
    return reports


@dataclass(frozen=True)
class LabWhoseInstallsFail(RealLab):
    """Real releases, but installing (or reusing) any environment raises ``fault``."""

    fault: BaseException = InstallFailed("no install")

    def environment(self, release, backend):
        raise self.fault


def _sweep_main(reports: Path, *releases: str, lab=None) -> int:
    return sweep.main(["--release", *releases, "--backend", "cpu", "--reports", str(reports),
                       *SMALL, "-q"], lab=lab)


@pytest.mark.jax
@pytest.mark.parametrize("fault, status, needle", [
    (InstallFailed("installing jax 0.10.2 (cpu) failed: Failed to fetch: `https://pypi.org/…`"),
     2, "Failed to fetch"),
    (InstallFailed("installing jax 0.10.2 (cpu): no space left on the disk holding /x"),
     2, "no space left"),
    (KeyboardInterrupt(), 130, "interrupted during jax 0.10.2"),
])
def test_an_install_that_fails_keeps_the_earlier_result(fault, status, needle, measured,
                                                        capsys):
    before = (measured / "jax-0.10.2-cpu.json").read_text()
    lab = LabWhoseInstallsFail(lambda line: None, remeasure=True, fault=fault)
    assert _sweep_main(measured, "0.10.2", lab=lab) == status
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert (measured / "jax-0.10.2-cpu.json").read_text() == before


@pytest.mark.jax
def test_a_full_disk_while_writing_is_one_line(measured, monkeypatch, capsys):
    before = (measured / "jax-0.10.2-cpu.json").read_text()

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(measured / "x.json"))

    monkeypatch.setattr(sweep, "write_json_if_changed", full)
    assert _sweep_main(measured, "0.10.2") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [(f"python -m jaxbisect.sweep: error: jax 0.10.2: cannot write (No space "
                    f"left on device: {measured / 'x.json'}); 0 releases done are kept in "
                    f"{measured}/")]
    assert (measured / "jax-0.10.2-cpu.json").read_text() == before


@pytest.mark.jax
def test_a_failed_harness_never_replaces_a_result(measured):
    good = Measurement.from_json(json.loads((measured / "jax-0.10.2-cpu.json").read_text()))
    failed = replace(good, document=None, error="the harness failed: boom")
    assert sweep._write_result(measured, failed, lambda m: None) is None
    assert Measurement.from_json(
        json.loads((measured / "jax-0.10.2-cpu.json").read_text())).document is not None
    fresh = measured / "elsewhere"
    assert sweep._write_result(fresh, failed, lambda m: None) == fresh / "jax-0.10.2-cpu.json"


def test_the_default_set_skips_what_cannot_be_installed_here(recorded_catalogue, tmp_path):
    """nox -s repro names releases that may need a Python this machine lacks (0.12.0.1 needs
    3.12): with --if-installable they are listed with the reason, and the run succeeds."""
    done = run_sweep("--release", "0.12.0.1", "--if-installable", "--backend", "cpu",
                     "--reports", str(tmp_path))
    assert done.returncode == 0, done.stderr
    document = json.loads((tmp_path / "jax-0.12.0.1-cpu.json").read_text())
    assert document["document"] is None
    assert document["error"].startswith("not installable here: requires Python >=3.12")
    assert "skipped: not installable here" in (tmp_path / "README.md").read_text()


@pytest.mark.jax
def test_releases_measured_side_by_side_give_the_same_results(swept, tmp_path):
    done = run_sweep("--release", "0.10.2", "0.5.0", "--jobs", "2", "--remeasure",
                     "--backend", "cpu", "--reports", str(tmp_path), *SMALL)
    assert done.returncode == 0, done.stderr
    assert "[1/2] jax 0.10.2 (cpu): " in done.stderr and "[2/2] jax 0.5.0 (cpu): " in done.stderr
    for name in ("jax-0.10.2-cpu.json", "jax-0.5.0-cpu.json"):
        one, both = (json.loads((folder / name).read_text()) for folder in (swept, tmp_path))
        assert [(c["variant"], c["n_outer"], c["total_bytes"]) for c in both["document"]["cases"]] \
            == [(c["variant"], c["n_outer"], c["total_bytes"]) for c in one["document"]["cases"]]
        assert both["document"]["verdict"] == one["document"]["verdict"]
    summary = (tmp_path / "README.md").read_text()
    assert "| 0.10.2 " in summary and "| 0.5.0 " in summary


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
    assert "release(s)" not in done.stderr and "1 release to measure" not in done.stderr
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in swept.iterdir()} == before
    again = run_sweep(*args, "--remeasure", "--command", command)
    assert again.returncode == 0, again.stderr
    assert "1 release to measure on cpu" in again.stderr
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in swept.iterdir()} == before


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


def _another_machines_run(document: dict) -> dict:
    """The same figures as another machine writes them: other timings, kernel, host,
    interpreter build and generated-code sizes."""
    doc = json.loads(json.dumps(document))
    doc["environment"] = doc["environment"].replace("node='vm'", "node='laptop'") + "\nelse"
    doc["python"] = "3.11.99"
    for case in doc["cases"]:
        case["compile_seconds"] = 99.0
        for key in ("generated_code_bytes", "host_generated_code_bytes"):
            if key in case:
                case[key] += 4096
    return doc


def test_a_rerun_elsewhere_with_the_same_figures_leaves_the_tracked_results(tmp_path):
    """Issue 17, item 4: a clone's Quick start on another machine changes no result file and,
    in the summary, nothing (the date line is not compared either)."""
    reports = tmp_path / "repro"
    reports.mkdir()
    for path in (REPO / "reports" / "repro").iterdir():
        (reports / path.name).write_bytes(path.read_bytes())
    sweep.write_summary(reports, "nox -s repro", machine=lambda: "platform: This")
    assert "deviceless" not in (reports / "README.md").read_text()  # issue 17, item 10
    before = {p.name: p.read_bytes() for p in reports.iterdir()}
    for name in ("jax-0.5.0-cpu.json", "jax-0.5.1-a6000.json"):
        m = Measurement.from_json(json.loads((reports / name).read_text()))
        again = replace(m, seconds=m.seconds + 5, document=_another_machines_run(m.document))
        assert sweep._write_result(reports, again, lambda line: None) == reports / name
    sweep.write_summary(reports, "nox -s repro",
                        machine=lambda: "platform: Other\ncores: 64\ntoolkit commit: 0000000")
    assert {p.name: p.read_bytes() for p in reports.iterdir()} == before
    # A figure that changed is written, and the summary with it.
    m = Measurement.from_json(json.loads((reports / "jax-0.5.0-cpu.json").read_text()))
    doc = _another_machines_run(m.document)
    doc["cases"][0]["temp_bytes"] += 1
    sweep._write_result(reports, replace(m, document=doc), lambda line: None)
    assert json.loads((reports / "jax-0.5.0-cpu.json").read_text())["document"] == doc
    sweep.write_summary(reports, "nox -s repro", machine=lambda: "platform: Other")
    assert "platform: Other" in (reports / "README.md").read_text()


# --- the built-in report's results, read from the scan case's documents ---------------------

SHAPES = REPO / "tests" / "data" / "shape"


def _recorded(name: str) -> dict:
    return json.loads((SHAPES / f"{name}.json").read_text())


def test_the_scan_cases_document_reads_as_the_stored_result():
    """A case document (recorded under jax 0.5.1, full size) read by report_document gives
    v0's figures and verdict as reports/repro/jax-0.5.1-cpu.json holds them, the old
    harness's own document."""
    from jaxbisect.measurements import report_document

    stored = json.loads((REPO / "reports" / "repro" / "jax-0.5.1-cpu.json").read_text())
    doc = _recorded("scan_growth-0.5.1")
    read = report_document({**doc, "compare": {"v1": doc["metric"]}})
    v0 = [(c["n_outer"], c["total_bytes"], c["output_bytes"], c["temp_bytes"])
          for c in read["cases"] if c["variant"] == "v0"]
    assert v0 == [(c["n_outer"], c["total_bytes"], c["output_bytes"], c["temp_bytes"])
                  for c in stored["document"]["cases"] if c["variant"] == "v0"]
    assert read["verdict"] == stored["document"]["verdict"]
    assert read["params"] == {**stored["document"]["params"], "variants": [0, 1]}
    assert [c["variant"] for c in read["cases"]] == ["v0"] * 5 + ["v1"] * 5
    assert report_document(read) is read  # a built-in document is read as it is


def test_a_release_without_compiled_sizes_reads_as_unavailable_and_its_real_run():
    from jaxbisect.measurements import report_document

    doc = _recorded("scan_growth-0.4.20")
    compiled = report_document(doc)
    assert compiled["mode"] == "compiled" and compiled["verdict"]["status"] == "unavailable"
    assert "0 bytes" in compiled["verdict"]["reason"]
    assert compiled["verdict"]["unit_bytes"] == 100 * 200**3 * 4  # the sizes asked
    real = report_document(doc, fallback=True)
    assert real["mode"] == "runtime" and real["verdict"]["status"] == "constant"
    assert real["params"]["n_res"] == 32 and real["params"]["n_outer"] == [1, 2, 5, 10]
    assert [c["total_bytes"] for c in real["cases"]] == \
        [p["value"] for p in doc["metric"]["points"]]


def test_the_built_in_options_are_the_scan_cases_questions():
    from jaxbisect.harness import HarnessOptions

    question, beside = sweep.scan_questions(HarnessOptions())
    assert question.case.name == "scan_growth" and question.metric == "memory"
    assert question.over == ("n_outer", (1, 2, 5, 10, 15))
    assert question.params == {"n_inner": 100, "n_res": 200, "dtype": "float32", "variant": 0}
    assert {label: (q.params["variant"], q.over) for label, q in beside.items()} == {
        "v1": (1, ("n_outer", (1, 2, 5, 10, 15))), "v2": (2, ("n_outer", (1, 2, 5, 10, 15)))}
    runtime, _ = sweep.scan_questions(HarnessOptions(mode="runtime", n_res=32))
    assert runtime.metric == "peak_memory"
    # For a GPU target v2 is compiled at n_outer 1 only (its unrolled loop takes minutes):
    # one figure, no shape.
    _, target = sweep.scan_questions(HarnessOptions(target="a6000", variants=(0, 2)))
    assert target["v2"].over == () and target["v2"].params["n_outer"] == 1


@dataclass(frozen=True)
class RecordedLab:
    """Every run answers with one recorded harness document."""

    document: dict
    remeasure: bool = False

    def run(self, release, backend, question, number, *, timeout):
        from jaxbisect.question import run_of_document

        return run_of_document(self.document, str(release.version), number)


def test_a_release_is_measured_as_the_scan_case_through_the_lab(recorded_catalogue):
    from jaxbisect.harness import HarnessOptions

    release = recorded_catalogue.get("0.4.20")
    found = sweep.measure_scan(RecordedLab(_recorded("scan_growth-0.4.20")), release, "cpu",
                               HarnessOptions(), timeout=60)
    compiled, real = found
    assert compiled.options == HarnessOptions() and compiled.verdict == "unavailable"
    values = len(_recorded("scan_growth-0.4.20")["metric"]["over"]["values"])
    assert [c["variant"] for c in compiled.document["cases"]] == \
        ["v0"] * values + ["v1"] * values + ["v2"] * values
    assert real.options == HarnessOptions(mode="runtime", n_res=32, n_outer=(1, 2, 5, 10),
                                          variants=(0,))
    assert real.verdict == "constant" and real.document["mode"] == "runtime"
