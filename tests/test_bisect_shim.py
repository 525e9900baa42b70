"""The ``bisect/`` package: the standard library's API where it shadows it, and our CLI's entry.

In this pytest process ``bisect`` is (and must stay) the standard module, because ``random``
imported it before any test ran; so ``bisect`` can only be checked in subprocesses started from
a directory holding our package, and code that tests import must live in ``jaxbisect``.
"""

from __future__ import annotations

import bisect
import json
import random
import shutil
import subprocess
import sys
from operator import itemgetter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHIM = REPO / "bisect"


def python(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    # -S: no site hooks that might import the standard module first (nor site-packages, so
    # nothing the shim imports can come from there); -E: no PYTHONPATH. Not -I: it would drop
    # the working directory from sys.path, which is what makes our package win.
    return subprocess.run(
        [sys.executable, "-S", "-E", *args],
        check=False,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


USE_THE_API = """
import bisect, json, operator, random, sys
results = []
for name, a, x, lo, hi, keyed in json.load(sys.stdin):
    key = operator.itemgetter(0) if keyed else None
    function = getattr(bisect, name)
    found = function(a, x, lo, hi=hi, key=key)
    results.append(a if name.startswith("insort") else found)
print(json.dumps({
    "results": results,
    "choices": random.Random(7).choices(range(10), cum_weights=range(1, 11), k=50),
    "path": list(bisect.__path__),
    "random_uses_it": random._bisect is bisect.bisect,
    "jaxbisect_loaded": "jaxbisect" in sys.modules,
}))
"""

NAMES = ["bisect", "bisect_left", "bisect_right", "insort", "insort_left", "insort_right"]


def random_cases(count: int) -> list[list]:
    rng = random.Random(20240611)
    cases = []
    for _ in range(count):
        name = rng.choice(NAMES)
        keyed = rng.random() < 0.5
        a = sorted(rng.randint(0, 6) for _ in range(rng.randint(0, 12)))  # many duplicates
        x = rng.randint(-1, 7)
        if keyed:
            a = [[k, f"item{i}"] for i, k in enumerate(a)]
            if name.startswith("insort"):
                x = [x, "new"]
        lo = rng.randint(0, len(a))
        hi = rng.choice([None, rng.randint(lo, len(a))])
        cases.append([name, a, x, lo, hi, keyed])
    return cases


def test_the_package_provides_the_standard_api_where_it_shadows_it():
    cases = random_cases(400)
    expected = []
    for name, a, x, lo, hi, keyed in cases:
        a = json.loads(json.dumps(a))  # a copy, as the subprocess gets it
        found = getattr(bisect, name)(a, x, lo, hi=hi, key=itemgetter(0) if keyed else None)
        expected.append(a if name.startswith("insort") else found)

    done = python("-c", USE_THE_API, cwd=REPO, stdin=json.dumps(cases))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["path"] == [str(SHIM)]  # our package, not the standard module
    assert report["random_uses_it"]
    assert not report["jaxbisect_loaded"]
    assert report["results"] == expected
    assert report["choices"] == random.Random(7).choices(range(10), cum_weights=range(1, 11), k=50)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the shim, beside whatever ``jaxbisect`` a test gives it."""
    shutil.copytree(SHIM, tmp_path / "bisect", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def give_cli(project: Path, source: str | None) -> None:
    (project / "jaxbisect").mkdir()
    (project / "jaxbisect" / "__init__.py").write_text("")
    if source is not None:
        (project / "jaxbisect" / "cli.py").write_text(source)


@pytest.mark.parametrize(
    "cli, missing",
    [
        ("absent", "jaxbisect"),
        (None, "jaxbisect.cli"),
        ("import tabulate_not_installed_here\n", "tabulate_not_installed_here"),
    ],
)
def test_without_the_toolkit_main_says_so_in_one_line(project, cli, missing):
    if cli != "absent":
        give_cli(project, cli)
    done = python("-m", "bisect", cwd=project)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert repr(missing) in lines[0] and "project environment" in lines[0]


def test_main_runs_the_cli_and_exits_with_its_status(project):
    give_cli(project, "import sys\ndef main(argv=None):\n    print(sys.argv[1:])\n    return 3\n")
    done = python("-m", "bisect", "--flag", cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (3, "['--flag']\n", "")


def test_the_quick_start_names_the_entry_points_that_cannot_be_shadowed():
    """Issue 17, item 3: a newcomer whose ``python -m bisect`` is silent learns why, and
    what always works, where they start: the Quick start section."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    assert "python -m bisect" in quick_start
    assert "`jax-bisect`" in quick_start and "`nox -s bisect" in quick_start
