"""The user's XLA flags against each release's own flag list (jaxbisect/lab/known_flags.py).

Pure parts against an oracle; a bisection in a lab of scripted runs where some releases' XLA
does not know a flag; and the command line with real releases: a flag no end knows is one line
and exit 2 with nothing measured, one that an end does not know is a fact in the report.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, TEST_CACHE, cache_sharing_environments
from fake_lab import FakeLab, scripted
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxbisect.errors import UserError
from jaxbisect.lab import backends
from jaxbisect.lab.known_flags import FlagCheckedLab, flag_names, nearest, unknown_at_both
from jaxbisect.lab.store import Store
from jaxbisect.report.document import document
from jaxbisect.search.question import question_from
from jaxbisect.stages.releases import MetricRequest, bisect_metric
from repro.xla_flags import parse_flag_help

CPU = backends.get("cpu")

DATA = Path(__file__).parent / "data" / "xla-flags"


def names_of(version: str) -> set[str]:
    """The flag names of a real ``XLA_FLAGS=--help`` (jaxlib 0.5.0 or 0.5.1, CPU)."""
    return {f["name"] for f in parse_flag_help((DATA / f"jax-{version}-cpu-help.txt").read_text())}


# -- reading XLA_FLAGS as XLA reads it ----------------------------------------------------------

NAME = st.from_regex(r"[a-z][a-z0-9_]{0,30}", fullmatch=True)
VALUE = st.one_of(st.none(), st.sampled_from(["true", "false", "1", "0.5", ""]),
                  st.text("abc xyz/-=", max_size=12).map(lambda v: shlex.quote(v)))


@given(st.lists(st.tuples(NAME, VALUE), min_size=1, max_size=6), st.sampled_from([" ", "  ", "\t"]))
def test_flag_names_are_the_names_set_in_order(flags, blank):
    """``--name`` and ``--name=value`` (a value quoted where it holds blanks) joined by any
    blanks: the names, in order, whatever the values hold."""
    text = blank.join(f"--{n}" if v is None else f"--{n}={v}" for n, v in flags)
    assert flag_names(text) == [n for n, _ in flags]


def test_words_xla_knows_no_flag_by_are_kept_whole():
    """Measured with jaxlib 0.5.1: ``-name`` and ``--noname`` are unknown flags to XLA."""
    assert flag_names("--xla_a=1 -xla_b=true --noxla_c") == ["xla_a", "-xla_b=true", "noxla_c"]
    assert flag_names("") == flag_names("   ") == []
    assert flag_names('--xla_dump_to="a b" --xla_x') == ["xla_dump_to", "xla_x"]
    assert flag_names("-xla_a") == ["-xla_a"]


@pytest.mark.parametrize("bad", ["xla_cpu_use_thunk_runtime=true", "flags.txt"])
def test_a_value_xla_would_read_as_a_file_of_flags_is_refused(bad):
    """Measured with jaxlib 0.5.1: a value not beginning with ``-`` is opened as a file."""
    with pytest.raises(UserError, match="file of flags"):
        flag_names(bad)


def test_quotes_that_do_not_close_are_words_at_blanks():
    assert flag_names("--xla_dump_to='a b --xla_x=\\") == ["xla_dump_to", "b", "xla_x"]


@settings(deadline=None)
@given(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=30))
def test_nearest_names_are_difflibs_best(name):
    known = sorted(names_of("0.5.1"))
    got = nearest(name, known)
    assert len(got) == 3 and set(got) <= set(known)
    ratio = {k: difflib.SequenceMatcher(None, k, name).ratio() for k in known}
    # difflib's own choice: no name left out is more alike than one named
    assert min(ratio[k] for k in got) >= max(ratio[k] for k in set(known) - set(got))


def test_a_typo_names_the_flag_meant():
    assert nearest("xla_dump_hlo_as_txt", names_of("0.5.1"))[0] == "xla_dump_hlo_as_text"


def test_only_a_flag_that_no_end_knows_is_refused():
    old, new = names_of("0.5.0"), names_of("0.5.1")
    only_new = "xla_ignore_channel_id"          # renamed in 0.5.1 from the one below
    assert only_new in new - old and "xla_experimental_ignore_channel_id" in old - new
    ends = ["0.5.0", "0.5.1"]
    assert unknown_at_both([("--xla-flags", f"--{only_new}=true")], [old, new], ends) is None
    line = unknown_at_both([("--xla-flags", "--xla_dump_to=x --bogus_flag_xyz=1"),
                            ("--try-xla-flags", "--xla_cpu_use_thunk_runtim=false")],
                           [old, new], ends)
    assert "\n" not in line
    first, second = line.split("; ")
    assert first.startswith("--xla-flags: XLA knows no flag --bogus_flag_xyz in jax 0.5.0 or "
                            "jax 0.5.1 (nearest: --")
    assert second.startswith("--try-xla-flags: XLA knows no flag --xla_cpu_use_thunk_runtim ")
    assert "(nearest: --xla_cpu_use_thunk_runtime," in second


# -- a bisection where some releases' XLA does not know a flag ----------------------------------

FLAG = "--xla_new_flag=true"


def flagged_lab(tmp_path, knows: set[str]) -> tuple[FakeLab, FlagCheckedLab]:
    """A lab whose runs give 1 before jax 0.5.0 and 2 from it on, and whose releases in
    ``knows`` list ``xla_new_flag`` among their XLA flags."""
    inner = FakeLab(scripted(lambda v, k: 1 if v < "0.5.0" else 2), Store(tmp_path / "store"))
    listed = {"xla_dump_to"}
    return inner, FlagCheckedLab(
        inner, lambda r, backend: listed | ({"xla_new_flag"} if str(r.version) in knows
                                            else set()))


def bisected(catalogue, lab, start="0.4.35", end="0.5.1"):
    question = question_from("value", None, [], ("python", "-c", "pass"), xla_flags=FLAG)
    request = MetricRequest(start=start, end=end, backend="cpu", question=question)
    return bisect_metric(catalogue, request, lab, lambda m: None)


def test_a_release_whose_xla_does_not_know_the_flag_is_a_skip_never_run(recorded_catalogue,
                                                                          tmp_path):
    every = ["0.4.35", "0.4.36", "0.4.37", "0.4.38", "0.5.0", "0.5.1"]
    inner, lab = flagged_lab(tmp_path, set(every) - {"0.5.0"})
    doc = document(bisected(recorded_catalogue, lab), None)
    assert "0.5.0" not in inner.versions_asked            # never run
    probe = next(p for p in doc["probes"] if p["jax"] == "0.5.0")
    assert probe["label"] == "skip" and probe["runs"][0]["status"] == "failed"
    assert probe["reason"] == "XLA of jax 0.5.0 does not know --xla_new_flag"
    assert doc["crashes"] == [] and doc["crash_hint"] is None
    assert doc["status"] == "found" and doc["first_new"]["jax"] == "0.5.1"  # 0.5.0 unplaced
    assert lab.document([("--xla-flags", FLAG)]) == [
        {"flag": "--xla_new_flag", "option": "--xla-flags",
         "known": sorted(set(inner.versions_asked), key=lambda v: tuple(map(int, v.split(".")))),
         "unknown": ["0.5.0"]}]


def test_an_end_whose_xla_does_not_know_the_flag_leaves_no_answer_and_no_crash(
        recorded_catalogue, tmp_path):
    inner, lab = flagged_lab(tmp_path, {"0.5.1"})
    lab.check_at_ends([("--xla-flags", FLAG)], [recorded_catalogue.get(v)
                                                for v in ("0.5.0", "0.5.1")], CPU)
    doc = document(bisected(recorded_catalogue, lab, "0.5.0", "0.5.1"), None)
    assert inner.versions_asked == ["0.5.1"]
    assert doc["status"] == "unmeasurable" and doc["crashes"] == []
    assert doc["reason"] == ("the first release gives no figure: XLA of jax 0.5.0 does not "
                             "know --xla_new_flag (jax 0.5.1's does)")
    assert lab.document([("--xla-flags", FLAG)]) == [{
        "flag": "--xla_new_flag", "option": "--xla-flags", "known": ["0.5.1"],
        "unknown": ["0.5.0"]}]


def test_no_end_knowing_a_flag_is_refused_before_any_run(recorded_catalogue, tmp_path):
    inner, lab = flagged_lab(tmp_path, set())
    with pytest.raises(UserError, match=r"^--xla-flags: XLA knows no flag --xla_new_flag in "
                                        r"jax 0\.5\.0 or jax 0\.5\.1 \(nearest: --xla_dump_to\)$"):
        lab.check_at_ends([("--xla-flags", FLAG)], [recorded_catalogue.get(v)
                                                    for v in ("0.5.0", "0.5.1")], CPU)
    assert inner.asked == []


# -- the command line, real releases ------------------------------------------------------------

def bisect(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "jaxbisect", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=900,
                          env=env or dict(os.environ))


def metric_runs(version: str, cache: Path = TEST_CACHE) -> set[Path]:
    """The stored runs (everything but flag lists) of a release in a store."""
    folder = cache / "results" / "cpu" / f"jax-{version}"
    return {p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("xla-flags")}


@pytest.mark.jax
def test_a_flag_no_end_knows_is_one_line_exit_2_and_nothing_measured(jax_python, tmp_path):
    for version in ("0.5.0", "0.5.1"):
        jax_python(version)  # installed: the flag lists are listed, nothing else is made
    # A store of its own: other workers' tests write to the shared one meanwhile.
    cache = tmp_path / "cache"
    env = cache_sharing_environments(cache)
    before = {v: metric_runs(v, cache) for v in ("0.5.0", "0.5.1")}
    reports = tmp_path / "reports"
    done = bisect(REPO, "--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu",
                  "--xla-flags=--bogus_flag_xyz=1", "--reports", str(reports), env=env)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert lines[0].startswith("python -m bisect: error: --xla-flags: XLA knows no flag "
                               "--bogus_flag_xyz in jax 0.5.0 or jax 0.5.1 (nearest: --xla_")
    assert done.stdout == ""
    assert not reports.exists()                                      # no report written
    assert {v: metric_runs(v, cache) for v in ("0.5.0", "0.5.1")} == before  # no run made


@pytest.mark.jax
@pytest.mark.full  # the bisection's check: the tests above
def test_the_sweep_checks_its_flags_as_a_bisection_does(jax_python, tmp_path):
    """``nox -s repro_range -- --xla-flags …`` (jaxbisect.sweep): a flag neither end of the
    releases asked knows is one line, exit 2, nothing written or run; one that an end does not
    know is said in its row, never a crash."""
    for version in ("0.5.0", "0.5.1"):
        jax_python(version)
    cache = tmp_path / "cache"
    env = cache_sharing_environments(cache)
    sweep = [sys.executable, "-m", "jaxbisect.sweep", "--release", "0.5.0", "0.5.1",
             "--backend", "cpu", "--n-res", "16", "--n-inner", "10", "--n-outer", "2", "4"]
    bogus = subprocess.run([*sweep, "--xla-flags=--bogus_flag_xyz=1", "--reports",
                            str(tmp_path / "bogus")], cwd=REPO, capture_output=True, text=True,
                           timeout=900, env=env)
    assert bogus.returncode == 2 and bogus.stdout == "", bogus.stderr
    assert len(bogus.stderr.strip().splitlines()) == 1 and "--bogus_flag_xyz" in bogus.stderr
    assert not (tmp_path / "bogus").exists() and not metric_runs("0.5.0", cache)
    one_end = subprocess.run([*sweep, "--xla-flags=--xla_ignore_channel_id=true",
                              "--reports", str(tmp_path / "one")], cwd=REPO,
                             capture_output=True, text=True, timeout=900, env=env)
    results = {json.loads(p.read_text())["release"]: json.loads(p.read_text())
               for p in (tmp_path / "one").glob("jax-*.json")}
    assert "does not know --xla_ignore_channel_id" in results["0.5.0"]["error"]
    assert "crash" not in results["0.5.0"]["error"].lower()
    assert results["0.5.1"]["series"]["status"] == "grows", one_end.stderr


@pytest.mark.jax
def test_a_flag_one_end_does_not_know_is_said_and_never_called_a_crash(jax_python, tmp_path):
    """``--xla_ignore_channel_id`` is 0.5.1's name for 0.5.0's
    ``--xla_experimental_ignore_channel_id``: jax 0.5.1 is measured, 0.5.0 is not run."""
    done = bisect(REPO, "--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu",
                  "--n-res", "16", "--n-inner", "10", "--n-outer", "2", "4",
                  "--xla-flags=--xla_ignore_channel_id=true", "--no-evidence",
                  "--reports", str(tmp_path), "--json")
    assert done.returncode == 125, done.stderr
    doc = json.loads(done.stdout)
    assert doc["xla_flags_known"] == [{"flag": "--xla_ignore_channel_id",
                                       "option": "--xla-flags", "known": ["0.5.1"],
                                       "unknown": ["0.5.0"]}]
    assert doc["status"] == "unmeasurable" and doc["crashes"] == []
    assert doc["reason"].endswith("XLA of jax 0.5.0 does not know --xla_ignore_channel_id "
                                  "(jax 0.5.1's does)")
    runs = {p["jax"]: p["runs"] for p in doc["probes"]}
    assert [r["status"] for r in runs["0.5.0"]] == ["failed"]
    assert all(r["status"] == "ok" and r["crash"] is None for r in runs["0.5.1"])
    report = Path(doc["report"]).read_text()
    assert "SIGABRT" not in report and "--metric error" not in report
    assert "--xla_ignore_channel_id (--xla-flags) is known to XLA in jax 0.5.1, not in jax " \
           "0.5.0" in report
