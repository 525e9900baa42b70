"""Every shipped report's JSON holds what today's pipeline records (issue 56, item 1), read from
the documents themselves:

- a bisection: every release measured (a probe, a release inside) records what its environment
  held, and that record pins jax, jaxlib and the dependencies measured (ml-dtypes, numpy,
  opt-einsum, scipy; libtpu for a TPU);
- where its answer is a change: the standalone program's recorded run at each release where the
  behaviour differs (its exit status, what it printed, the environment it ran in, the install
  line written from that environment) where the program can run here (the CPU, a TPU compiled
  without the chip); where it cannot (a GPU target), the document says why and records no run;
- an ``--explain`` report: the machine that measured it, and the question's place and sizes;
- every document: the command that made it (``reproduce``), which remakes it.

A report that lacks any of it is a record of an older pipeline: remake it by its command.
``tests/data/old-records/`` keeps three such records, copied from the reports before they were
remade, to show the check fails on what it is there to catch."""

from __future__ import annotations

import copy
import json
import shlex
from pathlib import Path

import pytest

from jaxbisect.lab.backends import PINNED_DEPS
from jaxbisect.report.markdown.reproduce import (
    changed_pairs,
    shown_program,
    standalone_script,
)
from jaxbisect.stages.program import needs_its_gpu, why_not
from jaxbisect.stages.program_runs import install_line

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "reports"
OLD = Path(__file__).resolve().parent / "data" / "old-records"
DOCUMENTS = sorted(p for p in [*REPORTS.glob("*.json"), *(REPORTS / "cases").glob("*.json")]
                   if p.name.startswith(("bisect-", "explain-")))
EXPLAIN_RECORDS = ("machine", "over", "place")  # what write_explain_report adds to a document


def deps_of(doc: dict) -> tuple[str, ...]:
    """What an environment's record must pin for this document's backend."""
    return ("jax", "jaxlib", *PINNED_DEPS, *(("libtpu",) if doc.get("backend") == "tpu" else ()))


def unpinned(doc: dict, row: dict) -> list[str]:
    """The packages a release's record lacks (all of them where there is no record), and a
    record of another release than the row's."""
    held = row.get("installed") or {}
    missing = [n for n in deps_of(doc) if not held.get(n)]
    if held.get("jax") and held["jax"] != row.get("jax"):
        missing.append(f"jax=={row.get('jax')} (it records {held['jax']})")
    return missing


def program_runs_here(doc: dict) -> bool:
    """Whether today's pipeline runs the report's plain program on this machine: the
    toolkit's own rule (stages/program.py), from the document's metric and target."""
    return why_not(doc["metric"]["name"], case=doc.get("case") or None,
                   target=doc.get("target") or "") is None


def lacks(doc: dict) -> list[tuple[str, str, str]]:
    """What ``doc`` lacks of what today's pipeline records: (part, where, what)."""
    out = []
    command = shlex.split(doc.get("reproduce") or "")
    if command[:3] != ["python", "-m", "bisect"]:
        out.append(("reproduce", "", "the command that made it"))
    if doc.get("kind") == "metric-explain":
        out += [("document", "", key) for key in EXPLAIN_RECORDS if key not in doc]
        if doc.get("over") and "baseline_series" not in doc.get("explanation", {}):
            out.append(("explanation", "", "baseline_series"))  # the baseline's figures
        return out
    triage = (doc.get("attribution") or {}).get("triage") or {}
    if triage and not {"--backend", "--target"} & set(triage.get("argv") or ()):
        # in NVIDIA's containers the check's harness would measure the GPU
        out.append(("attribution", "triage", "the backend its check measures on"))
    for part in ("probes", "interior"):
        for row in doc.get(part) or ():
            out += [(part, row["jax"], name) for name in unpinned(doc, row)]
    r = doc.get("reproducer") or {}
    if doc.get("case") and not changed_pairs(doc) and shown_program(doc) is None \
            and standalone_script(doc) and not (doc.get("measure_program") or {}).get("program"):
        # the page's plain program is the record's text, never one written at render time
        out.append(("measure_program", "", "the plain program the page shows"))
    ends = [*(r.get("ends") or ()), *((r.get("went") or {}).get("ends") or ())]
    for end in ends:  # every recorded run (a pair's, or alike ends' one quantity)
        where = f"{end.get('jax')} ({end.get('role')})"
        out += [("reproducer", where, name) for name in unpinned(doc, end)]
        if end.get("exit") is None or not isinstance(end.get("output"), str):
            out.append(("reproducer", where, "a run to its end (exit, output)"))
        if end.get("installed") and end.get("install") != install_line(end["installed"]):
            out.append(("reproducer", where, "an install line of what it ran in"))
    pairs = changed_pairs(doc)
    if not pairs:
        return out
    if not r:
        return out + [("reproducer", "", "the program's part")]
    if not program_runs_here(doc):
        if not r.get("why_not"):
            out.append(("reproducer", "", "why no program runs here"))
        if ends:
            out.append(("reproducer", "", "no run where the program cannot run"))
        if needs_its_gpu(doc["metric"]["name"], case=doc.get("case") or None,
                         target=doc.get("target") or "") and not r.get("program"):
            out.append(("reproducer", "", "the program the page shows, as written"))
        return out
    ran = {e.get("jax") for e in ends}
    out += [("reproducer", v, "a recorded run at each release where it differs")
            for old, new, _ in pairs for v in (old, new) if v not in ran]
    return out


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(REPORTS)))
def test_every_shipped_report_holds_what_todays_pipeline_records(path):
    assert lacks(json.loads(path.read_text())) == []


def test_the_reports_hold_documents_of_every_kind_checked():
    """Changes whose program runs here, changes compiled for a GPU (no run), alike ends, a
    TPU target's, and --explain: the check above sees each kind, so none passes unread."""
    docs = [json.loads(p.read_text()) for p in DOCUMENTS]
    changes = [d for d in docs if d.get("kind") != "metric-explain" and changed_pairs(d)]
    assert any(program_runs_here(d) and d["backend"] == "cpu" for d in changes)
    assert any(program_runs_here(d) and d["backend"] == "tpu" for d in changes)
    assert any(not program_runs_here(d) for d in changes)
    assert any(d.get("kind") != "metric-explain" and not changed_pairs(d) for d in docs)
    assert any(d.get("kind") == "metric-explain" for d in docs)


# -- the check fails on what it is there to catch ---------------------------------------------

def old(name: str) -> dict:
    return json.loads((OLD / name).read_text())


def shipped(name: str) -> dict:
    return json.loads(next(p for p in DOCUMENTS if p.name == name).read_text())


def test_an_old_records_program_runs_lack_their_environments():
    """The 0.5.0 → 0.5.1 CPU report as an older pipeline wrote it: its program ran at both
    ends, but the runs record no environment (its install lines were written from the
    probes')."""
    found = lacks(old("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json"))
    assert ("attribution", "triage", "the backend its check measures on") in found
    found.remove(("attribution", "triage", "the backend its check measures on"))
    assert {(part, where.split()[0]) for part, where, _ in found} == \
        {("reproducer", "0.5.0"), ("reproducer", "0.5.1")}
    assert {what for *_, what in found} == set(deps_of({"backend": "cpu"}))


def test_an_old_came_and_went_record_lacks_the_environments_inside():
    found = lacks(old("bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json"))
    assert {(part, where.split()[0]) for part, where, _ in found} == \
        {("interior", "0.4.36"), ("interior", "0.4.37"), ("reproducer", "0.4.35"),
         ("reproducer", "0.4.36"), ("reproducer", "0.4.37")}


def test_an_old_explain_record_lacks_its_machine():
    assert lacks(old("explain-0.5.1-cpu-scan_growth-memory-0ab78550.json")) == \
        [("document", "", key) for key in EXPLAIN_RECORDS]  # "over" too: no series asked


def test_the_remade_records_hold_them():
    for name in ("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json",
                 "bisect-0.4.35-0.4.38-cpu-jit_kwarg_named_f-error.json",
                 "explain-0.5.1-cpu-scan_growth-memory-0ab78550.json"):
        assert lacks(shipped(name)) == [], name


@pytest.mark.parametrize("dep", ["jax", "jaxlib", *PINNED_DEPS])
def test_a_probe_whose_record_misses_a_pin_is_caught(dep):
    doc = shipped("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    del doc["probes"][0]["installed"][dep]
    assert lacks(doc) == [("probes", doc["probes"][0]["jax"], dep)]


def test_a_record_of_another_release_is_caught():
    doc = shipped("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    doc["reproducer"]["ends"][1]["installed"] = dict(doc["reproducer"]["ends"][0]["installed"])
    assert [w for *_, w in lacks(doc)] == ["jax==0.5.1 (it records 0.5.0)",
                                           "an install line of what it ran in"]


def test_a_cpu_change_without_its_program_run_is_caught():
    doc = shipped("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    del doc["reproducer"]
    assert lacks(doc) == [("reproducer", "", "the program's part")]
    doc = shipped("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    doc["reproducer"]["ends"] = doc["reproducer"]["ends"][:1]
    assert lacks(doc) == [("reproducer", "0.5.1", "a recorded run at each release where it "
                                                  "differs")]
    doc = shipped("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    doc["reproducer"]["ends"][0]["exit"] = None
    assert [w for *_, w in lacks(doc)] == ["a run to its end (exit, output)"]


def test_a_tpu_change_compiled_without_the_chip_needs_its_run_and_libtpu():
    name = "bisect-0.8.0-0.8.3-v5e-vmap_shard_map_psum_slice-error.json"
    doc = shipped(name)
    assert program_runs_here(doc)
    del doc["reproducer"]["ends"][0]["installed"]["libtpu"]
    assert lacks(doc) == [("reproducer", f"{doc['reproducer']['ends'][0]['jax']} (last good)",
                           "libtpu"), ("reproducer", "0.8.0 (last good)",
                                       "an install line of what it ran in")]


def test_a_gpu_targets_change_says_why_it_has_no_run_and_shows_none():
    doc = shipped("bisect-0.10.2-0.12.0.1-a6000-scan_growth-memory.json")
    assert not program_runs_here(doc) and doc["reproducer"]["why_not"]
    ran = copy.deepcopy(shipped("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")["reproducer"])
    doc["reproducer"]["ends"] = ran["ends"]
    assert ("reproducer", "", "no run where the program cannot run") in lacks(doc)
    doc["reproducer"] = {**ran, "ends": [], "why_not": None}
    assert lacks(doc) == [("reproducer", "", "why no program runs here")]
    # the program the page shows is the record's, written by the pipeline, never run
    doc["reproducer"] = {**ran, "ends": [], "why_not": "needs that GPU", "program": None}
    assert lacks(doc) == [("reproducer", "", "the program the page shows, as written")]


def test_a_document_without_its_command_is_caught():
    doc = shipped("explain-0.5.1-cpu-scan_growth-memory-0ab78550.json")
    doc["reproduce"] = None
    assert lacks(doc) == [("reproduce", "", "the command that made it")]


def test_a_triage_check_without_its_backend_is_caught():
    doc = shipped("bisect-0.5.0-0.5.1-cpu-scan_growth-memory.json")
    argv = doc["attribution"]["triage"]["argv"]
    at = argv.index("--backend")
    doc["attribution"]["triage"]["argv"] = argv[:at] + argv[at + 2:]
    assert lacks(doc) == [("attribution", "triage", "the backend its check measures on")]


def test_a_record_without_its_plain_program_is_caught():
    """A page that shows ``measure.py`` shows the text its record holds."""
    path = REPORTS / "bisect-0.5.0-0.10.2-a6000-scan_growth-memory.json"
    doc = json.loads(path.read_text())
    assert (doc.get("measure_program") or {}).get("program")
    assert not [x for x in lacks(doc) if x[0] == "measure_program"]
    older = {k: v for k, v in doc.items() if k != "measure_program"}
    assert ("measure_program", "", "the plain program the page shows") in lacks(older)
