"""The lab seam (jaxbisect/lab/lab.py): a bisection run in a fake lab of documents recorded from
real runs finds the recorded pair and asks only for what it holds; a run it does not hold is an
error naming the run; what is cheap orders the probes; the real lab's cheapness is the store's
and the environments' own."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_lab import FakeLab, MissingRun, recorded, recorded_documents, scripted

from jaxbisect.lab import backends
from jaxbisect.lab.lab import RealLab
from jaxbisect.lab.runs import store_key
from jaxbisect.lab.store import Store
from jaxbisect.report.document import document
from jaxbisect.search.question import question_from
from jaxbisect.stages.releases import MetricRequest, bisect_metric

CPU = backends.get("cpu")

CASE = str(Path(__file__).resolve().parents[1] / "repro" / "cases" / "remat_scan_memory.py")


def remat_lab(tmp_path, **kw) -> FakeLab:
    return FakeLab(recorded(recorded_documents("remat_scan_memory-jax-*.json")),
                   Store(tmp_path / "store"), **kw)


def bisected(catalogue, lab, start="0.4.35", end="0.5.1"):
    question = question_from("memory", CASE, [], ())
    request = MetricRequest(start=start, end=end, backend="cpu", question=question)
    return bisect_metric(catalogue, request, lab, lambda m: None)


def test_a_bisection_over_recorded_documents_finds_the_recorded_pair(recorded_catalogue,
                                                                     tmp_path):
    lab = remat_lab(tmp_path)
    doc = document(bisected(recorded_catalogue, lab), None)
    assert doc["status"] == "found" and doc["direction"] == "regression"
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.5.0", "0.5.1")
    figures = {p["jax"]: p["runs"][0]["samples"] for p in doc["probes"]}
    assert figures["0.5.0"] == [84802880] and figures["0.5.1"] == [441208256]
    assert set(lab.versions_asked) == set(figures)  # every run asked for is in the report
    assert all(number == 1 for _, number, _ in lab.asked)  # a deterministic metric: one run


def test_a_run_the_lab_does_not_hold_is_an_error_naming_it(recorded_catalogue, tmp_path):
    with pytest.raises(MissingRun, match=r"no run 1 of memory of remat_scan_memory at "
                                         r"\{'rows': 1000.*under jax 0\.5\.2$"):
        bisected(recorded_catalogue, remat_lab(tmp_path), end="0.5.2")
    question = question_from("memory", CASE, [], ())  # one recording: run 1 only
    assert remat_lab(tmp_path).run(recorded_catalogue.get("0.5.0"), "cpu", question, 1,
                                   timeout=60).samples == (84802880,)
    with pytest.raises(MissingRun, match=r"^the fake lab holds no run 2 of memory"):
        remat_lab(tmp_path).run(recorded_catalogue.get("0.5.0"), "cpu", question, 2,
                                timeout=60)


def test_what_is_cheap_is_probed_first_at_no_extra_worst_case(recorded_catalogue, tmp_path):
    plain = remat_lab(tmp_path)
    bisected(recorded_catalogue, plain)
    assert plain.versions_asked == ["0.4.35", "0.5.1", "0.5.0"]
    # 0.4.37 "installed": within the window's cheapest-worst-case choices, it goes first
    cheap = remat_lab(tmp_path, installed=frozenset({"0.4.37"}))
    b = bisected(recorded_catalogue, cheap)
    doc = document(b, None)
    assert (doc["last_old"]["jax"], doc["first_new"]["jax"]) == ("0.5.0", "0.5.1")
    assert cheap.versions_asked == ["0.4.35", "0.5.1", "0.4.37", "0.5.0"]
    assert len(cheap.versions_asked) <= b.limit[0]


def test_the_real_lab_is_cheap_where_a_run_is_stored_and_never_under_remeasure(
        recorded_catalogue, tmp_path):
    question = question_from("memory", CASE, [], ())
    release = recorded_catalogue.get("0.5.0")
    store = Store(tmp_path / "store")
    lab = RealLab(lambda m: None, store=store)
    assert lab.cheap(release, CPU, question) == 0  # no environment in this cache, no run
    store.put(store_key(question, release, "cpu", "metric", run=1), {"stored": True})
    assert lab.cheap(release, CPU, question) == 2  # stored: cheaper than installed (1)
    assert RealLab(lambda m: None, remeasure=True, store=store).cheap(release, CPU,
                                                                      question) == 0
    other = question_from("memory", CASE, ["rows=10"], ())  # another question: not stored
    assert lab.cheap(release, CPU, other) == 0


HLO = Path(__file__).resolve().parent / "data" / "hlo"
SCAN = str(Path(__file__).resolve().parents[1] / "repro" / "cases" / "scan_growth.py")


def test_the_attribution_reads_the_modules_the_lab_holds(recorded_catalogue, tmp_path):
    """The modules recorded at 0.10.1 and 0.10.2 (tests/data/hlo) kept in the lab's store:
    the attribution compares them (below HLO) and installs nothing; a lab without them says
    the modules could not be made, naming the release."""
    from jaxbisect.evidence.explain import attribution

    question = question_from("memory", SCAN, ["n_res=32", "n_outer=3"], (), over="none")
    request = MetricRequest(start="0.10.1", end="0.10.2", backend="cpu", question=question)

    def lab_of(path):
        return FakeLab(scripted(lambda version, number: 2.0 if version == "0.10.2" else 1.0),
                       Store(path))

    lab = lab_of(tmp_path / "with")
    b = bisected_in(recorded_catalogue, request, lab)
    assert [str(r.version) for r in b.pair] == ["0.10.1", "0.10.2"]
    lab.hold_modules("0.10.1", CPU, question, (HLO / "scan_growth-jax-0.10.1-lowered.mlir")
                     .read_text(), (HLO / "scan_growth-jax-0.10.1-optimized.txt").read_text())
    lab.hold_modules("0.10.2", CPU, question,
                     (HLO / "scan_growth-jax-0.10.2-elsewhere-lowered.mlir").read_text(),
                     (HLO / "scan_growth-jax-0.10.2-elsewhere-optimized.txt").read_text())
    where = attribution(b, lab, lambda m: None)
    assert (where["lowering"], where["optimized_hlo"], where["culprit"]) == (
        "identical", "identical", "below-hlo")
    empty = lab_of(tmp_path / "without")
    none = attribution(bisected_in(recorded_catalogue, request, empty), empty, lambda m: None)
    assert none["culprit"] == "unknown"
    assert none["text"] == ("the modules could not be made: the fake lab installs nothing "
                            "(jax 0.10.1)")


def test_a_setting_is_measured_in_the_lab_and_placed_by_the_classifier(recorded_catalogue,
                                                                       tmp_path):
    """The explanation's test of one setting (explain.behaviour_under): measured in
    the lab with the flag added, placed against the ends; a spent budget asks nothing."""
    from jaxbisect.evidence.explain import behaviour_under
    from jaxbisect.search.budgets import Deadline
    from jaxbisect.search.placing import Behaviour

    held = recorded(recorded_documents("remat_scan_memory-jax-*.json"))
    old_figure = held("0.5.0", question_from("memory", CASE, [], ()), 1)

    def answer(version, question, number):
        if question.xla_flags == "--xla_foo=false" and version == "0.5.1":
            return {**old_figure, "jax": "0.5.1", "xla_flags": question.xla_flags}
        return held(version, question, number)

    lab = FakeLab(answer, Store(tmp_path / "store"))
    b = bisected(recorded_catalogue, lab)
    new = b.pair[1]
    before = len(lab.asked)
    test = behaviour_under(b, lab, b.classifier(), new, "--xla_foo=false", lambda m: None)
    assert (test["behaviour"], test["figure"], test["runs"]) == ("old", 84802880, 1)
    assert [(v, k) for v, k, _ in lab.asked[before:]] == [("0.5.1", 1)]
    with pytest.raises(MissingRun, match="with XLA_FLAGS --xla_bar=1 under jax 0.5.1"):
        behaviour_under(b, lab, b.classifier(), new, "--xla_bar=1", lambda m: None)
    asked = len(lab.asked)
    spent = behaviour_under(b, lab, b.classifier(), new, "--xla_foo=false", lambda m: None,
                            deadline=Deadline(0))
    assert spent["behaviour"] == Behaviour.NOT_TESTED and len(lab.asked) == asked


def bisected_in(catalogue, request, lab):
    return bisect_metric(catalogue, request, lab, lambda m: None)


@pytest.mark.jax
def test_the_real_lab_repairs_an_environment_that_lost_its_jaxlib(tmp_path, monkeypatch):
    """A complete environment whose jaxlib shared library is gone: the run rebuilds it once,
    answers as the release does, and stores that answer (never the failure)."""
    from jaxbisect.lab.catalogue import load_catalogue
    from jaxbisect.lab.environments import ensure_environment

    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))  # breaks one on purpose
    release = load_catalogue().get("0.5.0")
    env = ensure_environment(release, CPU, progress=lambda m: None)
    libraries = list(env.path.glob("lib/python*/site-packages/jaxlib/xla_extension*.so"))
    assert libraries
    for library in libraries:
        library.unlink()
    said: list[str] = []
    lab = RealLab(said.append, store=Store(tmp_path / "store"))
    question = question_from("memory", CASE, [], ())
    assert lab.cheap(release, CPU, question) == 1  # it still looks complete
    run = lab.run(release, CPU, question, 1, timeout=300)
    assert (run.status, run.samples) == ("ok", (84802880,)), run.error
    assert any("no longer imports jax" in m and "rebuilding it" in m for m in said), said
    stored = lab.store.read(store_key(question, release, "cpu", "metric", run=1))
    assert stored["status"] == "ok" and stored["samples"] == [84802880]


def test_the_real_lab_tells_one_commit_on_two_jaxlibs_apart(recorded_catalogue, tmp_path):
    """One jax commit run on the older release's jaxlib and on the newer one's: two
    candidates (Release.identity), never one run handed back for the other."""
    from jaxbisect.lab.jax_history import Commit
    from jaxbisect.lab.runs import exit_status_run
    from jaxbisect.search.question import Question
    from jaxbisect.stages.commits import commit_release

    commit = Commit(sha="c0ffee".ljust(40, "0"), subject="", author="", date="", parents=(),
                    pr=None, version="0.5.1", minimum_jaxlib="0.5.0", timestamp=1737100000)
    on_old, on_new = (commit_release(recorded_catalogue.get(v), commit) for v in ("0.5.0", "0.5.1"))
    assert on_old.version == on_new.version and on_old.identity != on_new.identity
    question = Question(metric="exit_code", command=("true",))
    store = Store(tmp_path / "store")
    for release, status in ((on_old, 0), (on_new, 1)):
        store.put(store_key(question, release, "cpu", "metric", run=1),
                  exit_status_run(status, "", str(release.version), 1).as_json())
    lab = RealLab(lambda m: None, store=store)
    assert [lab.run(r, "cpu", question, 1, timeout=60).samples for r in (on_old, on_new)] == [
        (0,), (1,)]


def test_a_run_asked_for_while_it_is_made_is_made_once():
    """The real lab's runs (Made): a run begun ahead of the answer and asked for again by the
    answer's step while it is still being made is waited for, not made twice."""
    import threading
    import time

    from jaxbisect.lab.lab import Made

    made, calls, inside = Made(), [], threading.Event()

    def make():
        calls.append(1)
        inside.set()
        time.sleep(0.2)
        return object()

    first = threading.Thread(target=lambda: got.append(made.get("k", make)))
    got: list = []
    first.start()
    inside.wait(5)
    second = made.get("k", make)
    first.join()
    assert len(calls) == 1 and got == [second]
    assert made.get("other", lambda: 1) == 1 and len(calls) == 1
