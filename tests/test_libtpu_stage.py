"""libtpu, the third part of a TPU release (jaxbisect/stages/libtpu.py): at a pair of releases
found for a TPU target, the swaps (each release's jax and jaxlib with the other's libtpu),
measured through the lab as candidates (catalogue.LibtpuCandidate), say which part the change
came with; one that came with libtpu is narrowed over PyPI's libtpu releases between the pins
by the same bisection. The fake lab answers from runs measured by hand for a TPU v5e without a
chip (TPU_LIBRARY_PATH at another release's libtpu; tests/data/lab/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_lab import RECORDED, FakeLab
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from jaxbisect.lab.libtpu_candidate import LibtpuCandidate
from jaxbisect.search.question import Run, question_from
from jaxbisect.search.tpu_parts import Part
from jaxbisect.stages.libtpu import between, libtpu_part
from jaxbisect.stages.releases import MetricRequest, bisect_over

CASES = Path(__file__).resolve().parent / "data" / "errors"
PYPI_LIBTPU = ["0.0.21", "0.0.22", "0.0.23", "0.0.24", "0.0.27", "0.0.29", "0.0.30", "0.0.31",
               "0.0.32", "0.0.32.1", "0.0.33", "0.0.34", "0.0.35", "0.0.36", "0.0.37"]


def held(name: str) -> dict[str, str]:
    """version ("0.8.0", or "0.8.0+libtpu.0.0.30" for a swap) -> the error figure measured."""
    recorded = json.loads((RECORDED / f"{name}-swaps.json").read_text())
    return {(r["jax"] if r["via"] == "pinned" else f"{r['jax']}+libtpu.{r['libtpu']}"):
            r["figure"] for r in recorded["runs"]}


def answered(figures: dict[str, str]):
    def answer(version, question, number):
        if version not in figures:
            return None
        return Run(release=version, number=number, status="ok", samples=(figures[version],))
    return answer


def found_pair(catalogue, case: str, old: str, new: str, lab: FakeLab):
    question = question_from("error", str(CASES / case), [], (), target="v5e")
    request = MetricRequest(start=old, end=new, backend="cpu", question=question)
    return bisect_over([catalogue.get(old), catalogue.get(new)], request, question, lab,
                       lambda m: None)


def test_a_change_that_needs_the_new_jaxlib_and_the_new_libtpu_says_needs_both(
        recorded_catalogue):
    figures = held("pallas_vmem_limit")
    lab = FakeLab(answered(figures))
    b = found_pair(recorded_catalogue, "pallas_vmem_limit.py", "0.8.0", "0.8.1", lab)
    part = libtpu_part(b, lab, lambda m: None,
                       libtpu_of=lambda r: {"0.8.0": "0.0.24", "0.8.1": "0.0.30"}[str(r.version)],
                       listed=lambda: PYPI_LIBTPU)
    assert part["part"] == Part.BOTH
    narrowed = part["narrowed"]  # the new jax and jaxlib held: the first libtpu they need
    assert narrowed["held"] == {"jax": "0.8.1", "jaxlib": "0.8.1"}
    assert narrowed["candidates"] == ["0.0.24", "0.0.27", "0.0.29", "0.0.30"]
    assert (narrowed["last_old"], narrowed["first_new"], narrowed["exact"]) \
        == ("0.0.29", "0.0.30", True)
    assert narrowed["install"]["new"] == "jax==0.8.1 jaxlib==0.8.1 libtpu==0.0.30"
    assert [(s["jax"], s["libtpu"], s["seen"]) for s in part["swaps"]] == [
        ("0.8.0", "0.0.30", "old"), ("0.8.1", "0.0.24", "old")]
    assert part["swaps"][0]["install"] == "jax==0.8.0 jaxlib==0.8.0 libtpu==0.0.30"
    assert (part["old"], part["new"]) == ({"jax": "0.8.0", "jaxlib": "0.8.0", "libtpu": "0.0.24"},
                                          {"jax": "0.8.1", "jaxlib": "0.8.1", "libtpu": "0.0.30"})


def test_libtpu_releases_no_jax_pins_are_candidates():
    assert between("0.0.24", "0.0.30", PYPI_LIBTPU) == ["0.0.24", "0.0.27", "0.0.29", "0.0.30"]
    assert between("0.0.35", "0.0.37", PYPI_LIBTPU) == ["0.0.35", "0.0.36", "0.0.37"]
    assert between("0.0.32.1", "0.0.34", PYPI_LIBTPU) == ["0.0.32.1", "0.0.33", "0.0.34"]


def test_a_libtpu_candidate_runs_on_its_release_with_the_other_libtpu(recorded_catalogue):
    release = recorded_catalogue.get("0.8.3")
    c = LibtpuCandidate.on(release, "0.0.33")
    assert str(c.version) == "0.8.3+libtpu.0.0.33" and c.level == "libtpu"
    assert c.environment_release.version == release.version
    assert c.key_fields == {"libtpu": "0.0.33", "runs_on": "0.8.3"}
    assert c.environ["TPU_LIBRARY_PATH"].endswith("/libtpu/0.0.33/libtpu/libtpu.so")
    assert c.install_line == "jax==0.8.3 jaxlib==0.8.3 libtpu==0.0.33"
    assert release.environ == {}


def test_a_change_that_came_with_libtpu_alone_says_so_and_names_the_first_libtpu(
        recorded_catalogue):
    """jax#29002 at 0.8.3 -> 0.9.0: jax 0.8.3 with libtpu 0.0.34 fails as 0.9.0 does, 0.9.0
    with libtpu 0.0.32.1 compiles as 0.8.3 does; over 0.0.32.1, 0.0.33, 0.0.34 (jax 0.8.3
    held) the first that fails is 0.0.33."""
    figures = held("pallas_bf16_batched_matvec")
    lab = FakeLab(answered(figures))
    b = found_pair(recorded_catalogue, "pallas_bf16_batched_matvec.py", "0.8.3", "0.9.0", lab)
    part = libtpu_part(b, lab, lambda m: None,
                       libtpu_of=lambda r: {"0.8.3": "0.0.32.1", "0.9.0": "0.0.34"}[str(r.version)],
                       listed=lambda: PYPI_LIBTPU)
    assert part["part"] == Part.LIBTPU
    assert [s["seen"] for s in part["swaps"]] == ["new", "old"]
    narrowed = part["narrowed"]
    assert narrowed["candidates"] == ["0.0.32.1", "0.0.33", "0.0.34"]
    assert (narrowed["last_old"], narrowed["first_new"], narrowed["exact"]) \
        == ("0.0.32.1", "0.0.33", True)
    assert narrowed["install"] == {"old": "jax==0.8.3 jaxlib==0.8.3 libtpu==0.0.32.1",
                                   "new": "jax==0.8.3 jaxlib==0.8.3 libtpu==0.0.33"}
    assert "closed source" in narrowed["finest"]
    assert json.loads(json.dumps(part)) == part  # the document's part as it is written


versions = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 60), st.integers(0, 2)),
                    min_size=2, max_size=30, unique=True).map(
    lambda vs: [f"0.{a}.{b}" + (f".{c}" if c else "") for a, b, c in vs])


@given(listed=versions, data=st.data())
def test_the_libtpu_candidates_are_every_listed_release_between_the_pins(listed, data):
    lo, ln = sorted(data.draw(st.lists(st.sampled_from(listed), min_size=2, max_size=2,
                                       unique=True)), key=Version)
    got = between(lo, ln, listed)
    assert got[0] == lo and got[-1] == ln and got == sorted(got, key=Version)
    assert set(got) == {v for v in listed if Version(lo) <= Version(v) <= Version(ln)}
