"""A shipped report's commit reproduce lines (``commits.reproduce``) run the program its page
runs: the standalone program it wrote, never a file no report holds."""

import json
import re
from pathlib import Path

import pytest

REPORTS = Path(__file__).resolve().parents[1] / "reports"
SHIPPED = sorted([*REPORTS.glob("bisect-*.json"), *REPORTS.glob("cases/bisect-*.json")])


def commit_parts(doc: dict) -> list[dict]:
    return [p for p in [doc.get("commits"), *(p.get("commits") or p
                                              for p in doc.get("commits_by_pair") or ())]
            if isinstance(p, dict) and p.get("reproduce")]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_the_commit_reproduce_lines_run_the_page_s_program(path):
    doc = json.loads(path.read_text())
    program = (doc.get("reproducer") or {}).get("file")
    page = path.with_suffix(".md").read_text()
    for part in commit_parts(doc):
        runs = [line for line in part["reproduce"] if "checkout -q" in line]
        assert runs
        for line in runs:
            ran = re.search(r"/bin/python (\S+)", line)
            assert ran and ran.group(1) != "measure.py", line
            if program and ran.group(1).endswith(".py"):
                assert ran.group(1) == program, line
                # the page's run: in the venv its block makes, from the one clone
                assert re.search(rf"PYTHONPATH=\$PWD/jax-src venv-[\d.]+/bin/python "
                                 rf"{re.escape(program)}", page)
                assert page.count("git clone https://github.com/jax-ml/jax jax-src") == \
                    page.count("[ -d jax-src ] || git clone")


def test_the_remade_report_records_its_program():
    doc = json.loads((REPORTS / "bisect-0.5.0-0.5.1-cpu-scan_growth-memory-e4b85d1c.json")
                     .read_text())
    runs = [line.split("&& ")[-1].split("   #")[0] for line in doc["commits"]["reproduce"]
            if "checkout -q" in line]
    assert runs == ["PYTHONPATH=$PWD/jax-src venv-0.5.0/bin/python repro.py"] * 2


def test_a_change_no_jax_commit_shows_is_not_offered_as_two_commits_that_reproduce_it():
    """libtpu's (or jaxlib's) change: the end commits behave alike; the block says so, and
    names the two commits only where jax's own commits part the behaviour."""
    from jaxbisect.report.markdown import render

    path = REPORTS / "cases" / ("bisect-0.8.3-0.9.0-v5e-pallas_bf16_batched_matvec-error-"
                                "e4b85d1c.json")
    doc = json.loads(path.read_text())
    assert doc["commits"]["came_with"] not in ("jax", "both")
    page = render(doc)
    assert "Reproduce the two commits" not in page
    block = page.split("(no jax commit measured brings the change), without the toolkit")[1]
    block = block.split("</details>")[0]
    # each jaxlib's end commits, each with what the toolkit measured there
    checkouts = re.findall(r"# (\w{10}), as jax ([\d.]+)(?: too)?: the toolkit measured (.+)",
                           block)
    measured = {(st["sha"][:10], st["runs_on"]["jax"]): st["figure"]["value"].splitlines()[0]
                for st in doc["commits"]["steps"]}
    assert len(checkouts) == 4 and {v for _, v, _ in checkouts} == {"0.8.3", "0.9.0"}
    assert all(measured[(sha, v)] == said for sha, v, said in checkouts)
