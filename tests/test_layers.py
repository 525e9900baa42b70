"""The pipeline's layers (pyproject.toml's import-linter contracts, drawn in docs/design.md)
hold on the tree, and a planted import from the pure search into the lab breaks them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LINT = [sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()"]


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*LINT, "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_the_layers_hold():
    done = lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_an_import_from_the_search_into_the_lab_breaks_them(tmp_path):
    for part in ("jaxbisect", "repro"):
        shutil.copytree(REPO / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    planted = tmp_path / "jaxbisect" / "search" / "placing.py"
    planted.write_text(planted.read_text() + "\nfrom jaxbisect.lab.store import STORE  # noqa\n")
    done = lint(tmp_path)
    assert done.returncode == 1
    assert "jaxbisect.search.placing -> jaxbisect.lab.store" in done.stdout
    assert "the search is pure" in done.stdout and "BROKEN" in done.stdout
