"""One failure worded three ways by its releases is one behaviour: an ``--metric error``
bisection over jax 0.7.2 … 0.10.2 of a Pallas kernel over its scoped-VMEM limit (recorded
harness documents, tests/data/lab/pallas_vmem_limit-*: real messages of real releases compiled
for a TPU v5e without a chip) answers the pair where the failure began, 0.8.0 → 0.8.1, however
0.8.1 … 0.10.2 word it. The first line cut at 300 characters, compared by equality, made each
wording a behaviour of its own (the last test measures that)."""

from __future__ import annotations

from pathlib import Path

from fake_lab import FakeLab, recorded, recorded_documents

from jaxbisect.search.classify import matching
from jaxbisect.search.comparing import errors_alike
from jaxbisect.search.error_signature import core
from jaxbisect.search.metric_search import search_metric
from jaxbisect.search.question import Run, question_from
from jaxbisect.stages.releases import MetricRequest, bisect_metric

CASE = Path(__file__).resolve().parent / "data" / "errors" / "pallas_vmem_limit.py"
DOCUMENTS = recorded_documents("pallas_vmem_limit-jax-*.json")


def lab() -> FakeLab:
    held = recorded(DOCUMENTS)
    return FakeLab(lambda version, question, number: held(version, question, 1))


def bisected(catalogue, start="0.7.2", end="0.10.2", error_match=None):
    question = question_from(None, str(CASE), [], (), error_match=error_match)
    request = MetricRequest(start=start, end=end, backend="cpu", question=question)
    return bisect_metric(catalogue, request, lab(), lambda m: None)


def pair(b) -> tuple[str, str]:
    r = b.search.result
    return str(b.candidates[r.last_old].version), str(b.candidates[r.first_new].version)


def test_the_range_answers_where_the_failure_began(recorded_catalogue):
    b = bisected(recorded_catalogue)
    assert b.search.status == "found"
    assert pair(b) == ("0.8.0", "0.8.1")


def test_the_failure_is_worded_three_ways_and_kept_whole():
    failing = [d["metric"]["samples"][0] for d in DOCUMENTS
               if d["metric"]["samples"][0].startswith("JaxRuntimeError: RESOURCE_EXHAUSTED")]
    assert len(failing) == 10 and len(set(failing)) == 3
    assert len({line.splitlines()[0][:300] for line in failing}) == 3   # the old figure's
    assert {core(line) for line in failing} >= {
        "JaxRuntimeError: RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while "
        "allocating on stack for [the instruction it quotes]. Scoped allocation with size "
        "64.00M and limit 32.00M exceeded scoped vmem limit by 32.00M. […]"}  # advice: […]
    assert all("limit 32.00M" in core(line) for line in failing)


def test_error_match_answers_the_same_pair(recorded_catalogue):
    b = bisected(recorded_catalogue, error_match=r"memory space vmem")
    assert b.search.status == "found" and pair(b) == ("0.8.0", "0.8.1")


def test_old_each_wording_a_behaviour_of_its_own_moves_the_answer():
    """The comparison before (the first line cut at 300 characters, by equality) as the oracle
    of what was wrong, injected into the same search (search_metric) over the same recorded
    runs: between 0.8.1 and 0.10.2, where only the wording moved, it finds a "change"; the
    signature finds the ends alike."""
    figures = {d["jax"]: d["metric"]["samples"][0] for d in DOCUMENTS}
    versions = ["0.8.1", "0.8.2", "0.8.3", "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0",
                "0.10.1", "0.10.2"]

    def run_at(i: int, number: int) -> Run:
        return Run(release=versions[i], number=number, status="ok",
                   samples=(figures[versions[i]],))

    def first_line(a, b):
        return a.splitlines()[0][:300] == b.splitlines()[0][:300]

    old = search_metric(len(versions), run_at,
                        lambda o, n: matching(list(o), list(n), first_line), noisy_metric=False)
    assert old.status == "found"
    assert versions[old.result.first_new] == "0.9.1"  # where libtpu put E1001 first
    new = search_metric(len(versions), run_at,
                        lambda o, n: matching(list(o), list(n), errors_alike()),
                        noisy_metric=False)
    assert new.status == "alike"
