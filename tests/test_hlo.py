"""Below jaxlib: the HLO module alone (repro/hlo.py, repro/hlo_compile.py, jaxbisect/evidence/
hlo*.py). Real jaxlib wheels: a module dumped under one release and compiled under two."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import REPO
from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.errors import UserError
from jaxbisect.evidence.hlo import hlo_module, why_no_bundle
from jaxbisect.evidence.hlo_bundle import NO_BUNDLE, details_lines
from jaxbisect.evidence.hlo_fuel import first_rewrite
from jaxbisect.lab import backends
from repro.hlo import _encoded, _fields, proto_field, without_sources

SCAN = REPO / "repro" / "cases" / "scan_growth.py"
MIB = 2 ** 20


# -- the fuel search (pure) ---------------------------------------------------------------

@given(st.integers(1, 5000), st.integers(1, 6000))
def test_fuel_search_finds_the_first_rewrite_of_a_step(step, most):
    asked = []

    def behaviour(n):
        asked.append(n)
        return "new" if n >= step else "old"

    found = first_rewrite(behaviour, most=most)
    if step <= most:
        assert (found.first_new, found.last_old) == (step, step - 1)
        assert len(asked) <= 2 * step.bit_length() + 2  # doubling, then halving
    else:
        assert found.first_new is None and "old" in found.why
    assert [n for n, _ in found.tried] == asked


@given(st.lists(st.sampled_from(["old", "new", "skip"]), min_size=1, max_size=300))
def test_fuel_search_answers_only_a_measured_boundary(labels):
    """Any behaviour, monotone or not: a found rewrite is an old count next to a new one,
    both measured; anything but old or new stops it (cannot tell)."""
    def behaviour(n):
        return labels[n - 1] if n <= len(labels) else "new"

    found = first_rewrite(behaviour, most=len(labels) + 1)
    seen = dict(found.tried)
    if found.first_new is not None:
        assert found.first_new == found.last_old + 1
        assert seen[found.first_new] == "new"
        assert found.last_old == 0 or seen[found.last_old] == "old"
    else:
        assert found.why and any(v not in ("old", "new") for v in seen.values())


# -- the module's bytes (pure) --------------------------------------------------------------

def field(number: int, payload: bytes) -> bytes:
    return _encoded(number, payload)


def test_source_locations_are_left_out_and_nothing_else():
    instruction = field(1, b"add.1") + field(7, b"source_file=/home/me/x.py")
    computation = field(1, b"main") + field(2, instruction)
    module = field(1, b"jit_f") + field(3, computation) + field(17, b"/home/me/x.py")
    stripped = without_sources(module)
    assert b"/home/me" not in stripped
    kept = {n: p for n, _, _, p in _fields(stripped)}
    assert kept[1] == b"jit_f" and 17 not in kept
    assert proto_field(proto_field(kept[3], 2), 1) == b"add.1"
    assert proto_field(field(1, module) + field(2, b"x"), 1) == module  # HloProto's field 1
    assert _encoded(17, b"")[:2] == bytes([0x8A, 0x01])  # a tag past one byte, as varint


# -- why a bundle is claimed or not --------------------------------------------------------

def found_bisection(**changes):
    question = SimpleNamespace(case=object(), metric="memory", target="")
    base = dict(search=SimpleNamespace(status="found"), pair=("old", "new"),
                request=SimpleNamespace(question=question, backend="cpu"))
    return SimpleNamespace(**{**base, **changes})


def test_no_bundle_where_the_change_is_in_jax():
    b = found_bisection()
    assert why_no_bundle(b, {"attribution": {"culprit": "xla"}}) is None
    assert "lowered modules differ" in why_no_bundle(b, {"attribution": {"culprit": "jax"}})
    unknown = {"attribution": {"culprit": "unknown"}}
    assert "jax's Python" in why_no_bundle(b, unknown, came_with="jax")
    assert why_no_bundle(b, unknown, came_with="jaxlib") is None
    assert why_no_bundle(found_bisection(), {}) is not None  # not attributed: not claimed
    part = hlo_module(found_bisection(), None, {"attribution": {"culprit": "jax"}}, print,
                      Path("r.md"))
    assert part["bundle"] is None and part["reproduces"] is None and part["why_not"]
    assert details_lines(part) == [f"{NO_BUNDLE}: {part['why_not']}.", ""]


# -- which jaxlibs compile the module alone ------------------------------------------------

def test_the_pair_compiles_the_module_and_other_releases_where_stored_or_asked(
        recorded_catalogue, tmp_path):
    """By default the last good and first bad only, and a release of the range whose module
    was compiled alone before (read back, no cost); ``installed`` or named releases on
    request; a release outside the range is one line, exit 2."""
    from jaxbisect.evidence.hlo import check_releases, measure_key, releases_to_compile
    from jaxbisect.lab.store import Store
    from jaxbisect.search.question import question_from, with_params

    candidates = tuple(recorded_catalogue.get(v) for v in ("0.4.38", "0.5.0", "0.5.1", "0.5.2"))
    b = SimpleNamespace(pair=candidates[1:3], candidates=candidates,
                        request=SimpleNamespace(backend="cpu"))
    q = with_params(question_from("memory", str(SCAN), [], ()), {"n_res": 32})
    module = tmp_path / "module.pb"
    module.write_bytes(b"HloModuleProto")
    lab = SimpleNamespace(store=Store(tmp_path / "store"))
    versions = lambda asked: [str(r.version) for r in  # noqa: E731
                              releases_to_compile(b, asked, lab, q, [(None, str(module))])]
    assert versions("pair") == ["0.5.0", "0.5.1"]
    lab.store.put(measure_key(candidates[3], "cpu", q, [(None, str(module))]), {"status": "ok"})
    assert versions("pair") == ["0.5.0", "0.5.1", "0.5.2"]  # stored: the report keeps its row
    assert versions("0.4.38") == ["0.4.38", "0.5.0", "0.5.1"]
    for fine in ("pair", "installed", "0.4.38,0.5.2"):
        check_releases(fine, candidates)
    with pytest.raises(UserError, match="0.3.1 is not a release of the range"):
        check_releases("0.5.0,0.3.1", candidates)


def test_a_later_module_of_one_process_carries_the_first_ones_id():
    """XLA counts the modules a process makes (HloModuleProto.id): the second module dumped
    in one process is written with the first's id, as it would be dumped on its own."""
    from repro.hlo import MODULE_ID, with_id_of

    first = field(1, b"jit_f") + bytes([MODULE_ID << 3, 1])  # id 1, a varint
    later = field(1, b"jit_f") + bytes([MODULE_ID << 3, 3]) + field(3, b"computation")
    same = with_id_of(later, first)
    assert same == field(1, b"jit_f") + bytes([MODULE_ID << 3, 1]) + field(3, b"computation")
    assert with_id_of(first, first) == first


# -- real releases --------------------------------------------------------------------------

def plain_run(python: Path, argv: list[str], cwd: Path, **env) -> subprocess.CompletedProcess:
    """In ``python``'s environment as a maintainer runs it: no toolkit on the path."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("PYTHONPATH", "XLA_FLAGS", "JAX_PLATFORMS")}
    return subprocess.run([str(python), *argv], cwd=cwd, env={**clean, **env},
                          capture_output=True, text=True, timeout=600)


def dump(python: Path, out: Path, n_outer: int) -> dict:
    done = subprocess.run([str(python), "-m", "repro.hlo", "dump", "--json", "--case", str(SCAN),
                           "--param=n_res=32", f"--param=n_outer={n_outer}", "--out", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.jax
def test_the_module_dumped_under_one_release_reproduces_under_another(jax_python, tmp_path):
    """The scan case's module, dumped under jax 0.5.0 (n_res 32, n_outer 2 and 5): the bundle's
    plain script, with no toolkit importable, gives jax's own figure under 0.5.0 (constant)
    and the growth under 0.10.2 (the other call: hlo_to_stablehlo, compile_and_load)."""
    old, new = jax_python("0.5.0"), jax_python("0.10.2")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copy(REPO / "repro" / "hlo_compile.py", bundle / "compile_hlo.py")
    jax_bytes = {}
    for n in (2, 5):
        doc = dump(old, tmp_path / f"m{n}", n)
        assert doc["status"] == "ok" and doc["jax"] == "0.5.0"
        jax_bytes[n] = doc["jax_bytes"]
        shutil.copy(tmp_path / f"m{n}" / "module.pb", bundle / f"module-{n}.pb")
        assert "HloModule jit_outer_loop" in (tmp_path / f"m{n}" / "module.txt").read_text()
    figures = {}
    for python in (old, new):
        assert plain_run(python, ["-c", "import repro"], bundle).returncode != 0  # plain
        done = plain_run(python, ["compile_hlo.py", "--json", "module-2.pb", "module-5.pb"],
                         bundle)
        assert done.returncode == 0, done.stderr
        answers = [json.loads(line) for line in done.stdout.splitlines()]
        figures[answers[0]["jaxlib"]] = [a["bytes"] for a in answers]
    assert figures["0.5.0"] == [jax_bytes[2], jax_bytes[5]]  # the module is what jax compiled
    assert abs(figures["0.5.0"][1] - figures["0.5.0"][0]) < 0.01 * MIB  # constant
    assert figures["0.10.2"][1] - figures["0.10.2"][0] == pytest.approx(3 * 12.5 * MIB, rel=0.01)
    # The same through the harness's measure, read as the case's shape; XLA flags reach it.
    measured = subprocess.run(
        [str(new), "-m", "repro.hlo", "measure", "--json", "--case", str(SCAN),
         "--param=n_res=32", "--over", "n_outer=2,5", f"--module=2={bundle / 'module-2.pb'}",
         f"--module=5={bundle / 'module-5.pb'}"], cwd=REPO, capture_output=True, text=True,
        timeout=600)
    doc = json.loads(measured.stdout)
    assert doc["metric"]["samples"] == [["grows", 1.0]]
    assert [p["value"] for p in doc["metric"]["points"]] == figures["0.10.2"]
    # Both modules compiled in that one process: the figures of one process each (--apart).
    apart = subprocess.run([*measured.args, "--apart"], cwd=REPO, capture_output=True,
                           text=True, timeout=600)
    assert json.loads(apart.stdout)["metric"] == doc["metric"]
    # Both points dumped by one process: the same bytes as one process a point.
    done = subprocess.run(
        [str(old), "-m", "repro.hlo", "dump", "--json", "--case", str(SCAN),
         *[f"--point={json.dumps(['n_res=32', f'n_outer={n}'])}={tmp_path / f'p{n}'}"
           for n in (2, 5)]], cwd=REPO, capture_output=True, text=True, timeout=600,
        env={k: v for k, v in os.environ.items() if k != "XLA_FLAGS"})
    together = json.loads(done.stdout)
    assert together["status"] == "ok", together["error"]
    assert [d["jax_bytes"] for d in together["points"]] == [jax_bytes[2], jax_bytes[5]]
    for n in (2, 5):
        for name in ("module.pb", "module.txt"):
            assert (tmp_path / f"p{n}" / name).read_bytes() == \
                (tmp_path / f"m{n}" / name).read_bytes()


@pytest.mark.jax
@pytest.mark.full  # the module's dump and replay: the test above
def test_the_stage_writes_a_bundle_that_reproduces_and_a_rerun_measures_nothing(jax_python,
                                                                                 tmp_path):
    """hlo_module on a found answer between jax 0.5.0 (constant) and 0.10.2 (grows), XLA's side:
    the modules dumped under 0.5.0 at the search's sizes, compiled alone under both, placed by
    the classifier; the bundle beside the report; a rerun reads the store and rewrites
    nothing."""
    from jaxbisect.lab.catalogue import load_catalogue
    from jaxbisect.lab.lab import RealLab
    from jaxbisect.lab.store import Store
    from jaxbisect.search.classify import matching
    from jaxbisect.search.question import question_from, with_params
    from repro.verdict import shapes_alike

    jax_python("0.5.0"), jax_python("0.10.2")  # installed in the tests' cache
    catalogue = load_catalogue()
    old, new = catalogue.get("0.5.0"), catalogue.get("0.10.2")
    asked = question_from("memory", str(SCAN), [], ())
    searched = with_params(asked, {"n_res": 32, "n_outer": (2, 5)})
    b = SimpleNamespace(
        search=SimpleNamespace(status="found", placed={}), pair=(old, new), commits=None,
        request=SimpleNamespace(question=asked, backend=backends.get("cpu")), searched=searched,
        candidates=(old, new), timeout=600.0,
        classifier=lambda: matching([("constant", 0.0)], [("grows", 1.0)], shapes_alike))
    extra = {"attribution": {"culprit": "xla", "xla_commits": {"old": "a" * 40, "new": "b" * 40}},
             "explanation": {"culprit": {"kind": "pass", "name": "copy-insertion"}}}
    said: list[str] = []
    lab = RealLab(said.append, store=Store(tmp_path / "store"))
    report = tmp_path / "reports" / "bisect-x.md"
    part = hlo_module(b, lab, extra, said.append, report)
    assert part["why_not"] is None and part["reproduces"] is True
    assert part["bundle"] == "bisect-x-hlo" and part["over"] == {"name": "n_outer",
                                                                  "values": [2, 5]}
    figures = {f["jaxlib"]: (f["role"], f["label"], f["figure"]) for f in part["figures"]}
    assert figures["0.5.0"] == ("last good", "old", {"2": 25.25, "5": 25.25})
    assert figures["0.10.2"] == ("first bad", "new", {"2": 25.25, "5": 62.75})
    # copy-insertion off: the module keeps one stacked buffer under 0.10.2 too (measured)
    assert part["culprit"] == {"pass": "copy-insertion", "under_first_bad": "old",
                               "setting": "--xla_disable_hlo_passes=copy-insertion"}
    assert part["fuel"]["tried"] is False and part["fuel"]["pass"] == "copy-insertion"
    assert part["xla_compare"].endswith("a" * 40 + "..." + "b" * 40)
    bundle = report.parent / part["bundle"]
    assert sorted(p.name for p in bundle.iterdir()) == part["files"] == [
        "README.md", "compile_hlo.py", "module-n_outer-2.pb", "module-n_outer-2.txt",
        "module-n_outer-5.pb", "module-n_outer-5.txt"]
    readme = (bundle / "README.md").read_text()
    assert "pip install jax==0.5.0 jaxlib==0.5.0" in readme
    assert "--xla_disable_hlo_passes=copy-insertion" in readme
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in bundle.iterdir()}
    said.clear()
    assert hlo_module(b, lab, extra, said.append, report) == part
    assert not [s for s in said if "dumping" in s or "compiling" in s]  # all from the store
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in bundle.iterdir()} == before


@pytest.mark.jax
@pytest.mark.full  # a CUDA compile-only environment of its own
def test_a_compile_only_gpu_module_and_why_fuel_cannot_narrow_priority_fusion(target_python,
                                                                             tmp_path):
    """The scan case's module for the A6000 target (jax 0.5.0, no GPU), n_outer 5: compiled
    alone it gives jax's own figure (from XLA's buffer assignment: this jaxlib's compile-only
    client has no memory stats); priority-fusion turned off keeps one stacked buffer, fuel 0
    does not (XLA still logs the rewrite it refused): fuel 0 is not the pass off here."""
    python = target_python("0.5.0")
    done = subprocess.run([str(python), "-m", "repro.hlo", "dump", "--json", "--case", str(SCAN),
                           "--target", "a6000", "--param=n_res=32", "--param=n_outer=5",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    dumped = json.loads(done.stdout)
    assert dumped["status"] == "ok", dumped["error"]

    def measure(flags: str) -> dict:
        done = subprocess.run([str(python), "-m", "repro.hlo", "measure", "--json", "--case",
                               str(SCAN), "--target", "a6000", "--param=n_res=32",
                               "--param=n_outer=5", f"--module=5={tmp_path / 'module.pb'}",
                               "--xla-flags", flags], cwd=REPO, capture_output=True,
                              text=True, timeout=600)
        doc = json.loads(done.stdout)
        assert doc["status"] == "ok", doc["error"]
        return doc

    shipped, off, zero = (measure(f) for f in (
        "", "--xla_disable_hlo_passes=priority-fusion", "--xla_fuel=priority-fusion=0"))
    assert shipped["metric"]["value"] == dumped["jax_bytes"]
    stacked = 100 * 32 ** 3 * 4
    assert zero["metric"]["value"] - off["metric"]["value"] == pytest.approx(3 * stacked,
                                                                               rel=0.01)
    assert any(line.startswith('Out of fuel for "priority-fusion"')
               for line in zero["out_of_fuel"])
    assert not off["out_of_fuel"]
