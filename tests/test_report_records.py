"""Every shipped report holds what today's pipeline records and says only what its records
hold (issue 56): each install line it prints pins what was measured; each JSON holds a
program's recorded run where one can run here; the first screen speaks the glossary's words.
Read from the JSON documents and the markdown rendered from them, never from wording alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxbisect.lab import backends
from jaxbisect.report.installs import installed_at, parsed, pinned, pip_install

REPO = Path(__file__).resolve().parent.parent
REPORTS = REPO / "reports"
DOCUMENTS = sorted(p for p in [*REPORTS.glob("*.json"), *(REPORTS / "cases").glob("*.json")]
                   if p.name.startswith(("bisect-", "explain-")))
BUNDLES = sorted(p for p in [*REPORTS.glob("*-hlo/README.md"),
                             *(REPORTS / "cases").glob("*-hlo/README.md")])
PIP = re.compile(r"pip install (?P<words>[^#\n`]+)")


def install_lines(text: str) -> list[str]:
    return [f"pip install {m['words'].strip()}" for m in PIP.finditer(text)
            if "==" in m["words"]]  # a line that installs a release (not `pip install uv`)


@pytest.mark.parametrize("path", [*(p.with_suffix(".md") for p in DOCUMENTS), *BUNDLES],
                         ids=lambda p: str(p.relative_to(REPORTS)))
def test_every_printed_install_line_pins_what_was_measured(path):
    lines = install_lines(path.read_text())
    unpinned = [line for line in lines if not pinned(line)]
    assert not unpinned, unpinned


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_install_line_pins_the_versions_its_release_held(path):
    """The pins are the record's: each pinned package at the version the JSON records for
    that release (never today's, never another release's)."""
    doc = json.loads(path.read_text())
    for line in install_lines(path.with_suffix(".md").read_text()):
        said = parsed(line)
        held = installed_at(doc, said["jax"])
        assert held, f"no record of jax {said['jax']}'s environment: {line}"
        assert {k: v for k, v in said.items() if k in held} == \
            {k: held[k] for k in said if k in held}, line


VERSION = st.from_regex(r"\A[0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2}\Z")


@given(jax=VERSION, jaxlib=VERSION, numpy=VERSION, scipy=VERSION, mld=VERSION, oe=VERSION,
       libtpu=VERSION, backend=st.sampled_from(["cpu", "cuda12", "cuda12-deviceless", "tpu"]))
def test_an_install_line_round_trips_its_record(jax, jaxlib, numpy, scipy, mld, oe, libtpu,
                                               backend):
    held = {"jax": jax, "jaxlib": jaxlib, "numpy": numpy, "scipy": scipy, "ml-dtypes": mld,
            "opt-einsum": oe, "libtpu": libtpu, "jax-cuda12-plugin": jaxlib}
    doc = {"backend": backend, "probes": [{"jax": jax, "jaxlib": jaxlib, "installed": held}]}
    line = pip_install(doc, jax)
    assert pinned(line)
    said = parsed(line)
    assert all(said[k] == held[k] for k in said), (line, held)
    if backend == "tpu":
        assert said["libtpu"] == libtpu


def test_without_a_record_a_line_is_not_pinned():
    doc = {"backend": "cpu", "probes": [{"jax": "0.4.36", "jaxlib": "0.4.36", "installed": {}}]}
    assert not pinned(pip_install(doc, "0.4.36"))
    assert backends.get("cpu").pip_words("0.4.36", "0.4.36", None) == "jax==0.4.36 jaxlib==0.4.36"
