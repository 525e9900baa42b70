"""The scan report as the default case (no --case), through the one pipeline, on the recorded
catalogue and a lab of scripted shapes: what the built-in driver's tests checked, asked of the
case path (the Reproduce and Next-step lines parse back into the same question, every question
its own report name, a fix named as one, a rewrite with the same figures leaves the files)."""

from __future__ import annotations

import shlex
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from fake_lab import FakeLab, scripted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxbisect import cli
from jaxbisect.lab.store import Store
from jaxbisect.pipeline import question_of, request_from
from jaxbisect.report.commands import reproduce_argv, wider_range
from jaxbisect.report.document import document, report_stem, write_report
from jaxbisect.report.markdown import render
from jaxbisect.report.markdown.answer import pair_line
from jaxbisect.report.markdown.reproduce import standalone_lines
from jaxbisect.report.markdown.tables import series_mode
from jaxbisect.search.question import Run
from jaxbisect.stages.releases import MetricRequest, bisect_metric, narrowed_line
from repro.case import SCAN_CASE

REUSE = settings(max_examples=25, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])
flag_text = st.text(st.characters(codec="ascii", exclude_characters="\x00\r\n"),
                    min_size=1, max_size=12).map(lambda t: f"--xla_{t}")
sizes = st.fixed_dictionaries({
    "n_outer": st.lists(st.integers(1, 20), min_size=2, max_size=5, unique=True).filter(
        lambda ns: len([n for n in ns if n >= 2]) >= 2),
    "n_inner": st.integers(1, 100), "n_res": st.integers(1, 64),
    "dtype": st.sampled_from(["float32", "float64", "float16", "bfloat16"])})


def asked(catalogue, argv: list[str]) -> MetricRequest:
    args, command = cli.parse(argv)
    return request_from(args, question_of(args, command), catalogue)


def size_argv(drawn: dict) -> list[str]:
    return ["--n-outer", *map(str, drawn["n_outer"]), "--n-inner", str(drawn["n_inner"]),
            "--n-res", str(drawn["n_res"]), "--dtype", drawn["dtype"]]


def shaped(catalogue, request: MetricRequest, shapes: dict[str, str], tmp_path=None):
    def shape(version: str, number: int):
        return [shapes.get(version, shapes["*"]), 1.0 if shapes.get(version) == "grows"
                else 0.0]

    store = Store(tmp_path / "store") if tmp_path else Store()
    return bisect_metric(catalogue, request, FakeLab(scripted(shape), store), lambda m: None)


@REUSE
@given(drawn=sizes, xla_flags=st.one_of(st.just(""), st.just("--bogus=1 --other='a b'"),
                                        flag_text),
       try_flags=st.lists(st.one_of(st.just("--xla_foo=true"), flag_text), max_size=3),
       command=st.one_of(st.just(()), st.lists(flag_text, min_size=1, max_size=3).map(tuple)))
def test_the_reproduce_line_parses_back_into_the_same_request(recorded_catalogue, drawn,
                                                              xla_flags, try_flags, command):
    argv = ["--from", "0.5.0", "--to", "0.10.2", "--backend", "cpu",
            *([] if command else size_argv(drawn)), f"--xla-flags={xla_flags}",
            *(f"--try-xla-flags={f}" for f in try_flags), *(["--", *command] if command else [])]
    request = asked(recorded_catalogue, argv)
    line = reproduce_argv(SimpleNamespace(request=request))
    assert shlex.split(shlex.join(line)) == line and line[:3] == ["python", "-m", "bisect"]
    again = asked(recorded_catalogue, line[3:])
    assert again.question == request.question
    assert (again.start, again.end, again.backend, again.try_xla_flags) \
        == (request.start, request.end, request.backend, request.try_xla_flags)
    if not command:  # the scan case, by the sizes asked (n_outer: the shape's values)
        assert again.question.case.name == "scan_growth"
        assert again.question.over == ("n_outer", tuple(sorted(drawn["n_outer"])))
        assert {k: again.question.params[k] for k in ("n_inner", "n_res", "dtype")} \
            == {k: drawn[k] for k in ("n_inner", "n_res", "dtype")}


@REUSE
@given(drawn=sizes, xla_flags=st.one_of(st.just(""), flag_text))
def test_the_next_step_asks_the_same_question_over_the_wider_range(recorded_catalogue, drawn,
                                                                    xla_flags):
    request = asked(recorded_catalogue, ["--from", "0.4.30", "--to", "0.4.38", "--backend",
                                         "cpu", *size_argv(drawn), f"--xla-flags={xla_flags}"])
    b = shaped(recorded_catalogue, request, {"*": "constant"})
    assert b.search.status == "alike"
    step = wider_range(recorded_catalogue, b)["next_step"]
    argv = shlex.split(step["command"])
    wider = asked(recorded_catalogue, argv[3:])
    assert wider.question == request.question
    assert (wider.start, wider.end) == ("0.4.38", step["newest"]) and wider.end != "0.4.38"
    at_newest = replace(b, request=replace(request, end=step["newest"]))
    assert wider_range(recorded_catalogue, at_newest) == {}  # nothing newer to look at


def test_reports_of_different_questions_have_different_names(recorded_catalogue):
    def stem(*argv: str) -> str:
        request = asked(recorded_catalogue, ["--from", "0.5.0", "--to", "0.5.1", "--backend",
                                             "cpu", *argv])
        return report_stem(SimpleNamespace(request=request))

    plain = stem()
    assert plain == "bisect-0.5.0-0.5.1-cpu-scan_growth-memory"
    assert stem("--timeout", "5", "--remeasure", "--jobs", "3") == plain  # how, not what
    others = [stem("--xla-flags", "--bogus=1"), stem("--xla-flags", "--other=1"),
              stem("--n-res", "64"), stem("--n-outer", "2", "5"), stem("--", "true"),
              stem("--", "false"), stem("--case", "repro/cases/remat_scan_memory.py"),
              stem("--try-xla-flags", "--a=1")]
    assert len({plain, *others}) == 1 + len(others)


def test_constant_after_growth_is_a_fix(recorded_catalogue):
    request = asked(recorded_catalogue, ["--from", "0.5.0", "--to", "0.5.3", "--backend",
                                         "cpu"])
    doc = document(shaped(recorded_catalogue, request,
                          {"0.5.0": "grows", "0.5.1": "grows", "*": "constant"}), None)
    assert (doc["status"], doc["direction"]) == ("found", "fix")
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.5.1", "0.5.2")


def test_a_rewrite_with_the_same_figures_leaves_the_files(recorded_catalogue, tmp_path):
    request = asked(recorded_catalogue, ["--from", "0.5.0", "--to", "0.5.1", "--backend",
                                         "cpu"])
    reports = tmp_path / "reports"
    reports.mkdir()
    b = shaped(recorded_catalogue, request, {"0.5.0": "constant", "*": "grows"})
    write_report(b, reports)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in reports.iterdir()}
    again = shaped(recorded_catalogue, request, {"0.5.0": "constant", "*": "grows"})
    placed = {i: replace(p, runs=tuple(replace(r, cached=True, seconds=9.9) for r in p.runs))
              for i, p in again.search.placed.items()}
    write_report(replace(again, search=replace(again.search, placed=placed)), reports)
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in reports.iterdir()} == before
    write_report(shaped(recorded_catalogue, request, {"*": "constant"}), reports)
    assert {p.name: p.read_bytes() for p in reports.iterdir()} != \
        {name: data for name, (data, _) in before.items()}
    assert Path(reports / "bisect-0.5.0-0.5.1-cpu-scan_growth-memory.md").is_file()


def test_a_target_range_names_the_part_only_a_real_gpu_measures(recorded_catalogue):
    """--target a6000 over jax 0.4.20 … 0.5.0 on a CPU-only machine: the part from 0.4.34 is
    bisected, the rest named with the command for a real GPU (every other option kept)."""
    request = asked(recorded_catalogue, ["--from", "0.4.20", "--to", "0.5.0", "--target",
                                         "a6000", "--n-res", "64"])
    assert request.backend == "cuda12-deviceless"
    doc = document(shaped(recorded_catalogue, request, {"*": "grows"}), None)
    assert doc["status"] == "alike" and doc["measured_part"] == ["0.4.34", "0.5.0"]
    (part,) = doc["needs_a_gpu"]
    assert (part["from"], part["to"]) == ("0.4.20", "0.4.34")
    args, command = cli.parse(shlex.split(part["command"])[3:])  # no GPU here to resolve it
    assert args.backend == "cuda12" and args.target is None
    assert question_of(args, command) == replace(request.question, target="")


def test_a_row_measured_at_other_sizes_says_so_in_the_row(recorded_catalogue):
    """A real run's row (the fallback at RUNTIME_PARAMS' n_res) says its mode and size."""
    request = asked(recorded_catalogue, ["--from", "0.4.20", "--to", "0.5.0", "--backend",
                                         "cpu"])
    at = request.question.case.resolve(request.question.params)
    doc = {"case": {"params": at}}
    real = {"params": {**at, "n_res": 32}, "fallback": {"metric": "peak_memory"},
            "metric": "peak_memory"}
    assert series_mode(doc, real) == "a run's peak, n_res 32"
    assert series_mode(doc, {"params": at, "fallback": None, "metric": "memory"}) == "compiled plan"


def test_reports_and_lines_never_show_the_internal_backend_name_nor_private_paths(
        recorded_catalogue, tmp_path):
    """A target's report (its name, its text, its JSON's words, the next step) says "compiled
    for NVIDIA RTX A6000, without the GPU", never ``cuda12-deviceless``; a spec file's
    report is named after the spec and its content, never its folder."""
    spec = tmp_path / "mine.txtpb"
    spec.write_text((Path(SCAN_CASE).parents[1] / "targets" / "a6000.txtpb").read_text())
    for target in ("a6000", str(spec)):
        request = asked(recorded_catalogue, ["--from", "0.4.35", "--to", "0.4.38",
                                             "--target", target])
        b = shaped(recorded_catalogue, request, {"*": "grows"})
        doc = document(b, None)
        step = wider_range(recorded_catalogue, b)["next_step"]["command"]
        for text in (render(document(b, None)), report_stem(b), step, doc["reproduce"]):
            assert "deviceless" not in text
        assert str(tmp_path) not in render(document(b, None)) + report_stem(b)
    assert report_stem(b).startswith("bisect-0.4.35-0.4.38-mine-")


def test_progress_says_one_step_not_one_steps():
    assert narrowed_line("0.5.0", "0.5.2", 1, 1) == \
        "narrowed to jax 0.5.0 … 0.5.2 (1 release between, ~1 step left)"
    assert narrowed_line("0.5.0", "0.6.0", 3, 2) == \
        "narrowed to jax 0.5.0 … 0.6.0 (3 releases between, ~2 steps left)"


def test_a_target_change_next_to_releases_only_a_gpu_can_compile_is_not_exact(
        recorded_catalogue):
    """jax 0.4.36 and 0.4.37 cannot compile for a target without a GPU: a change between
    0.4.35 and 0.4.38 may lie in them, and the answer says so (not exact)."""
    request = asked(recorded_catalogue, ["--from", "0.4.35", "--to", "0.4.38", "--target",
                                         "a6000"])
    b = shaped(recorded_catalogue, request, {"0.4.35": "constant", "*": "grows"})
    doc = document(b, None)
    assert (doc["status"], doc["last_old"]["jax"], doc["first_new"]["jax"]) \
        == ("found", "0.4.35", "0.4.38")
    assert not doc["exact"]
    assert doc["left_out_between"] == ["0.4.36", "0.4.37"]
    assert "jax 0.4.36, 0.4.37" in pair_line(doc)


def test_a_full_size_that_gives_no_figure_keeps_the_search_at_the_small_size(
        recorded_catalogue):
    """jax 0.5.1 runs out of memory at the full size, not at the search's n_res 32: the
    search still answers there, and the row at the full size says why it has no figure."""
    request = asked(recorded_catalogue, ["--from", "0.5.0", "--to", "0.5.3", "--backend",
                                         "cpu"])

    def answer(version, question, number):
        small = question.params.get("n_res") == 32
        if version == "0.5.3" and not small and question.params.get("variant", 0) == 0:
            return Run(release=version, number=number, status="raised",
                       error="XlaRuntimeError: RESOURCE_EXHAUSTED: out of memory")
        shape = ["constant", 0.0] if version == "0.5.0" else ["grows", 1.0]
        return Run(release=version, number=number, status="ok", samples=(shape,))

    b = bisect_metric(recorded_catalogue, request, FakeLab(answer), lambda m: None)
    doc = document(b, None)
    assert (doc["status"], doc["first_new"]["jax"]) == ("found", "0.5.1")
    assert doc["search_size"]["params"] == {"n_res": 32}
    assert "no figure at jax 0.5.3: XlaRuntimeError: RESOURCE_EXHAUSTED" \
        in doc["search_size"]["note"]
    assert "RESOURCE_EXHAUSTED" in render(document(b, None))  # beside the search's row


def test_a_chart_the_new_report_does_not_show_is_removed(recorded_catalogue, tmp_path):
    request = asked(recorded_catalogue, ["--from", "0.5.0", "--to", "0.5.1", "--backend",
                                         "cpu"])
    b = shaped(recorded_catalogue, request, {"0.5.0": "constant", "*": "grows"})
    stale = tmp_path / f"{report_stem(b)}.png"
    stale.write_bytes(b"an earlier run's chart")
    path, doc = write_report(b, tmp_path)  # no series figures to draw: no chart
    assert "chart" not in doc and not stale.exists()
    assert ".png" not in path.read_text()


def test_a_target_report_is_checked_by_hand_on_that_gpu_with_the_flags_asked(
        recorded_catalogue):
    """Without the toolkit, a target's answer is rerun on the GPU it was compiled for, with
    jax's CUDA 12 wheels; the question's XLA_FLAGS go with every run (as the deleted
    pipeline's standalone lines did)."""
    request = asked(recorded_catalogue, ["--from", "0.4.35", "--to", "0.4.38", "--target",
                                         "a6000", "--xla-flags=--xla_foo=1 --xla_bar=a"])
    lines = standalone_lines(document(shaped(recorded_catalogue, request, {"*": "grows"}), None))
    assert "on a machine with the GPU (NVIDIA RTX A6000)" in lines[0]
    commands = [line for line in lines if line.startswith(("python3.11 -m venv", "XLA_FLAGS"))]
    assert commands == [
        # jaxlib pinned beside jax (the fake runs record no environment: nothing else)
        "python3.11 -m venv venv-0.4.35 && venv-0.4.35/bin/pip install 'jax[cuda12]==0.4.35' "
        "jaxlib==0.4.35",
        "XLA_FLAGS='--xla_foo=1 --xla_bar=a' venv-0.4.35/bin/python measure.py",
        "python3.11 -m venv venv-0.4.38 && venv-0.4.38/bin/pip install 'jax[cuda12]==0.4.38' "
        "jaxlib==0.4.38",
        "XLA_FLAGS='--xla_foo=1 --xla_bar=a' venv-0.4.38/bin/python measure.py"]
    cpu = asked(recorded_catalogue, ["--from", "0.4.35", "--to", "0.4.38", "--backend", "cpu"])
    plain = standalone_lines(document(shaped(recorded_catalogue, cpu, {"*": "grows"}), None))
    assert "GPU" not in plain[0]
    assert "python3.11 -m venv venv-0.4.35 && venv-0.4.35/bin/pip install jax==0.4.35 " \
           "jaxlib==0.4.35" in plain


def test_the_report_lists_each_probed_environments_packages_oldest_first():
    """As the deleted report did: every package of each probed release's date-resolved
    environment, from the document's probes (a probe with none recorded left out)."""
    from jaxbisect.report.markdown.tables import packages_lines

    probes = [{"jax": "0.10.2", "installed": {"jax": "0.10.2", "jaxlib": "0.10.2",
                                              "numpy": "2.4.6"}},
              {"jax": "0.9.1", "installed": {"jax": "0.9.1", "jaxlib": "0.9.1",
                                             "scipy": "1.17.1"}},
              {"jax": "0.9.2", "installed": {}}]
    text = "\n".join(packages_lines(probes))
    rows = [line for line in text.splitlines() if line.startswith("| 0.")]
    assert [r.split("|")[1].strip() for r in rows] == ["0.9.1", "0.10.2"]
    assert "numpy" in text and "scipy" in text and "0.9.2" not in text
    assert packages_lines([{"jax": "0.9.1", "installed": {}}]) == []
