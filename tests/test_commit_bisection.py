"""--commits: jax's commits between two releases, each as jax's Python on the older release's
environment. jax's own version check against a copy of its code; the search over commits
against an oracle (a lab of recorded answers); and real runs: a jax repository built here
from the jax 0.5.0 and 0.5.1 wheels' sources, committed step by step (a commit that raises the
minimum jaxlib, one that does not import on jaxlib 0.5.0, the one that adds
``jax.lax.reduce_and``, and the release's version bump, which needs jaxlib 0.5.1)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from fake_lab import FakeLab
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxbisect.lab.jax_history import (
    Commit,
    CommitRange,
    checkouts,
    commit_range,
    pr_number,
    refusal,
)
from jaxbisect.lab.runs import exit_status_run
from jaxbisect.lab.store import Store
from jaxbisect.search.question import Question, Run
from jaxbisect.stages.commits import bisect_commits
from jaxbisect.stages.releases import MetricRequest, bisect_metric

REPO = Path(__file__).resolve().parent.parent


# --- jax's version check, as jax 0.5.1 has it (jax/_src/lib/__init__.py), the oracle ---
def check_jaxlib_version(jax_version: str, jaxlib_version: str,
                         minimum_jaxlib_version: str) -> tuple[int, ...]:
    version_regex = re.compile(r"[0-9]+(?:\.[0-9]+)*")

    def _parse_version(v: str) -> tuple[int, ...]:
        m = version_regex.match(v)
        if m is None:
            raise ValueError(f"Unable to parse jaxlib version '{v}'")
        return tuple(int(x) for x in m.group(0).split('.'))

    _jax_version = _parse_version(jax_version)
    _minimum_jaxlib_version = _parse_version(minimum_jaxlib_version)
    _jaxlib_version = _parse_version(jaxlib_version)
    if _jaxlib_version < _minimum_jaxlib_version:
        raise RuntimeError("too old")
    if _jaxlib_version > _jax_version:
        raise RuntimeError("newer than and incompatible")
    return _jaxlib_version


versions = st.builds(
    lambda parts, suffix: ".".join(map(str, parts)) + suffix,
    st.lists(st.integers(0, 12), min_size=1, max_size=4),
    st.sampled_from(["", ".dev20250123+db8c8fc37c", "rc1", ".post1", "+cuda12.cudnn89"]))


@settings(max_examples=300, deadline=None)
@given(versions, versions, versions)
def test_a_commit_runs_exactly_where_jaxs_own_check_lets_it(jax_version, minimum, jaxlib):
    try:
        check_jaxlib_version(jax_version, jaxlib, minimum)
        refused = False
    except RuntimeError:
        refused = True
    assert (refusal(jax_version, minimum, jaxlib) is not None) == refused


@pytest.mark.parametrize("subject, body, pr", [
    ("Merge pull request #27886 from mattjj:26763", "PiperOrigin-RevId: 1", 27886),
    ("Fix docs (#123)", "", 123),
    ("[pallas] a change", "COPYBARA_INTEGRATE_REVIEW=https://github.com/jax-ml/jax/pull/"
                          "31000 from someone:branch abc\nPiperOrigin-RevId: 2", 31000),
    ("Update XLA dependency", "PiperOrigin-RevId: 730348057", None),
])
def test_the_pull_request_is_read_from_how_jax_merges(subject, body, pr):
    assert pr_number(subject, body) == pr


# --- the search over commits, against an oracle ---
OLD_RELEASE, NEW_RELEASE = "0.4.30", "0.4.31"
COMMAND = Question(metric="exit_code", command=("true",))


def sha_of(i: int) -> str:
    return f"c{i:04x}".ljust(40, "a")  # ten distinct leading characters, never all digits


def synthetic(states: list[str]) -> CommitRange:
    """Commits of jax 0.4.31's making, one per state: old, new, broken (does not import),
    refused (jax's version check refuses jaxlib 0.4.30 there)."""
    commits = tuple(
        Commit(sha=sha_of(i), subject=f"commit {i}", author="a", date="2024-07-30",
               parents=(f"{i:040x}",), pr=None, version="0.4.31",
               minimum_jaxlib="0.4.31" if state == "refused" else "0.4.30",
               refused=(refusal("0.4.31", "0.4.31", "0.4.30") if state == "refused" else None),
               timestamp=1722300000 + 3600 * i)
        for i, state in enumerate(states))
    return CommitRange(Path("."), f"jax-v{OLD_RELEASE}", f"jax-v{NEW_RELEASE}", "0.4.30",
                       commits, ())


def lab_of(states: list[str], tmp_path, newer: list[str] | None = None) -> FakeLab:
    """The commits' answers on jaxlib 0.4.30 (``states``) and on 0.4.31 (``newer``, one a
    commit; without it, each behaves there as the newer release)."""
    versions = [Commit(sha=sha_of(i), subject="", author="", date="", parents=(),
                       pr=None, version="0.4.31", minimum_jaxlib="",
                       timestamp=1722300000 + 3600 * i).jax_version
                for i in range(len(states))]
    on_older = dict(zip(versions, states))
    on_newer = dict(zip(versions, newer or ["new"] * len(states)))

    def answer(asked: str, question, number: int):
        version, _, runs_on = asked.partition("@")
        # (a commit after the range's, the newer release's own preparation: as the release)
        state = ({OLD_RELEASE: "old", NEW_RELEASE: "new"}.get(version)
                 or (on_newer.get(version, "new") if runs_on == NEW_RELEASE
                     else on_older[version]))
        assert state != "refused", "a refused commit was run"
        if state == "broken":
            return Run(release=version, number=number, status="failed",
                       error="jax's Python at this commit does not import on this jaxlib: "
                             "AttributeError: no_such_api")
        return exit_status_run(0 if state == "old" else 1, "", version, number)

    return FakeLab(answer, Store(tmp_path / "store"), by_jaxlib=True)


@st.composite
def commit_histories(draw):
    n = draw(st.integers(3, 40))
    change = draw(st.integers(1, n - 1)) if draw(st.booleans()) else n  # n: never changes
    states = ["old" if i < change else "new" for i in range(n)]
    for i in range(1, n - 1):
        states[i] = draw(st.sampled_from([states[i]] * 4 + ["broken", "refused"]))
    return states


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # the catalogue: read only
@given(commit_histories(), st.sampled_from([1, 2]))
def test_the_commit_search_names_the_first_bad_commit_or_the_jaxlib(
        recorded_catalogue, tmp_path_factory, states, jobs):
    tmp_path = tmp_path_factory.mktemp("commits")
    lab = lab_of(states, tmp_path)
    b = bisect_metric(recorded_catalogue, MetricRequest(OLD_RELEASE, NEW_RELEASE, "cpu",
                                                        COMMAND, jobs=jobs), lab, lambda m: None)
    cb = bisect_commits(b, lambda old, new: synthetic(states), lab, lambda m: None)
    placed = cb.search.search.placed  # (the lab refuses to run a refused commit)
    if "new" not in states:
        assert cb.came_with == "jaxlib" and cb.first_bad is None
        return
    change = states.index("new")
    r = cb.search.search.result
    assert cb.came_with == "jax"
    assert r.last_old < change <= r.first_new
    assert cb.first_bad.sha == sha_of(r.first_new) and states[r.first_new] == "new"
    assert cb.last_good.sha == sha_of(r.last_old) and states[r.last_old] == "old"
    assert r.exact == all(states[i] in ("old", "new") for i in range(r.last_old, r.first_new))
    for i, p in placed.items():  # a commit that cannot run is a skip, with why
        if states[i] in ("broken", "refused"):
            assert p.outcome.value == "skip"
            assert ("needs jaxlib >= 0.4.31" if states[i] == "refused" else "does not import") \
                in p.placement.reason


@st.composite
def newer_histories(draw):
    """A range whose commits all behave as the older release on its jaxlib, and on the newer
    jaxlib: a prefix that gives no figure there (an older jaxlib's API), then the older
    release's behaviour up to a jax commit X (X at the first that runs: jax's Python behaves
    as the newer release throughout), then the newer one's; the last commit is the newer
    release's own."""
    n = draw(st.integers(3, 30))
    broken = draw(st.integers(0, n - 2))
    change = draw(st.integers(broken, n - 1))
    newer = ["broken"] * broken + ["old"] * (change - broken) + ["new"] * (n - change)
    return n, newer


def oracle(newer: list[str]) -> tuple[str | None, int | None]:
    """What is measured on the newer jaxlib says (commits 1 … n-1; commit 0 is A's tag, which
    jax's version check refuses there): came_with and the first bad commit."""
    chain = newer[1:]
    runs = [i for i, state in enumerate(chain) if state != "broken"]
    if not runs or runs[0] >= len(chain) - 1:
        return None, None
    first = runs[0]
    if chain[first] == "new":
        return ("jaxlib" if first == 0 else None), None
    return "both", 1 + chain.index("new")


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # the catalogue: read only
@given(newer_histories())
def test_alike_on_the_older_jaxlib_asks_the_newer_one_both_jaxlib_or_cannot_tell(
        recorded_catalogue, tmp_path_factory, history):
    n, newer = history
    lab = lab_of(["old"] * n, tmp_path_factory.mktemp("both"), newer)
    b = bisect_metric(recorded_catalogue, MetricRequest(OLD_RELEASE, NEW_RELEASE, "cpu",
                                                        COMMAND), lab, lambda m: None)
    cb = bisect_commits(b, lambda old, new: synthetic(["old"] * n), lab, lambda m: None)
    came_with, first_bad = oracle(newer)
    assert cb.status == "alike" and cb.newer is not None
    assert cb.came_with == came_with
    if came_with == "both":
        assert cb.first_bad.sha == sha_of(first_bad) and cb.last_good.sha == sha_of(first_bad - 1)
        assert all(str(c.runs_on) == NEW_RELEASE for c in cb.newer.search.candidates)
    else:
        assert cb.first_bad is None
        if came_with is None:
            assert cb.why_not  # cannot tell, saying why
    asked_on = {a.partition("@")[2] for a, _, _ in lab.asked if "@" in a}
    assert asked_on == {OLD_RELEASE, NEW_RELEASE}  # both halves measured


def test_a_noisy_metric_places_commits_by_the_paired_test(recorded_catalogue, tmp_path):
    """A timing over commits: each commit in rounds beside both ends, as releases are."""
    import random

    states = ["old"] * 9 + ["new"] * 7
    by_version = {commit_release_version(i): state for i, state in enumerate(states)}

    def answer(version: str, question, number: int) -> Run:
        state = {OLD_RELEASE: "old", NEW_RELEASE: "new"}.get(version) or by_version[version]
        noise = random.Random(f"{version}-{number}").uniform(-0.04, 0.04)
        return Run(release=version, number=number, status="ok",
                   samples=((10.0 if state == "old" else 30.0) * (1 + noise),))

    lab = FakeLab(answer, Store(tmp_path))
    timing = Question(metric="seconds", command=("true",))
    assert timing.noisy
    b = bisect_metric(recorded_catalogue, MetricRequest(OLD_RELEASE, NEW_RELEASE, "cpu",
                                                        timing), lab, lambda m: None)
    cb = bisect_commits(b, lambda old, new: synthetic(states), lab, lambda m: None)
    assert cb.came_with == "jax" and cb.first_bad.sha == sha_of(9)
    assert all(len(p.rounds) >= 2 for i, p in cb.search.search.placed.items()
               if i not in (0, len(states) - 1))


def commit_release_version(i: int) -> str:
    return synthetic(["old"] * (i + 1)).candidates[i].jax_version


def test_commits_of_releases_in_between_never_run_are_cannot_tell(recorded_catalogue,
                                                                     tmp_path):
    """Alike ends with commits after the new end that belong to a release between the pair
    (a pair that is not consecutive): never "the jaxlib"."""
    states = ["old"] * 5
    lab = lab_of(states, tmp_path)
    b = bisect_metric(recorded_catalogue, MetricRequest(OLD_RELEASE, NEW_RELEASE, "cpu",
                                                        COMMAND), lab, lambda m: None)
    span = synthetic(states)
    between = replace(span.candidates[-1], sha=sha_of(99), version="0.4.30.1",
                      refused="needs jaxlib >= 0.4.30.1")
    own = replace(span.candidates[-1], sha=sha_of(98), version=NEW_RELEASE,
                  refused="needs jaxlib >= 0.4.31")
    alone = bisect_commits(b, lambda old, new: replace(span, need_new=(own,)), lab,
                           lambda m: None)
    assert alone.came_with == "jaxlib" and alone.unseen is None
    mixed = bisect_commits(b, lambda old, new: replace(span, need_new=(between, own)), lab,
                           lambda m: None)
    assert mixed.status == "alike" and mixed.came_with is None
    assert "0.4.30.1" in mixed.unseen and "consecutive" in mixed.unseen


def test_no_pair_of_releases_no_commit_search(recorded_catalogue, tmp_path):
    lab = lab_of(["old", "old"], tmp_path)
    alike = FakeLab(lambda v, q, k: exit_status_run(0, "", v, k), Store(tmp_path))
    b = bisect_metric(recorded_catalogue, MetricRequest(OLD_RELEASE, NEW_RELEASE, "cpu",
                                                        COMMAND), alike, lambda m: None)
    cb = bisect_commits(b, lambda old, new: pytest.fail("no commits without a pair"), lab,
                        lambda m: None)
    assert cb.came_with is None and cb.status == "unmeasurable" and "no pair" in cb.reason


def test_without_a_clone_and_without_the_network_one_line_and_no_run(tmp_path):
    env = {**os.environ, "JAX_SCAN_REPRO_CACHE": str(tmp_path / "cache"),
           "JAX_SCAN_REPRO_JAX_URL": str(tmp_path / "unreachable")}
    done = subprocess.run([sys.executable, "-m", "jaxbisect", "--from", "0.5.0", "--to",
                           "0.5.1", "--commits", "--reports", str(tmp_path / "reports")],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    error = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(error) == 1 and "--jax-repo PATH" in error[0]
    assert not (tmp_path / "cache" / "envs").exists() and not (tmp_path / "reports").exists()


def test_a_folder_that_is_not_a_jax_clone_is_refused(tmp_path):
    done = subprocess.run([sys.executable, "-m", "jaxbisect", "--from", "0.5.0", "--to",
                           "0.5.1", "--commits", "--jax-repo", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 2 and "not a git clone of jax-ml/jax" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


# --- real: a jax repository made of the 0.5.0 and 0.5.1 wheels' sources ---
QUESTION = "import sys, jax.lax; sys.exit(1 if hasattr(jax.lax, 'reduce_and') else 0)"
# QUESTION, and where the environment asks it (STALL), a commit's run that waits: the moment
# test_stopping interrupts the commit search. One command for the tests of this history here
# and there, run from one folder (the history's): the same question, so that the store hands
# a search one test paid for to the next (their xdist group runs them one after the other).
STALLING = ("import os, sys, time\n"
            "if os.environ.get('STALL') and 'checkouts' in os.environ.get('PYTHONPATH', ''):\n"
            "    open(os.environ['STALL'], 'w').close()\n"
            "    time.sleep(120)\n" + QUESTION.replace("; ", "\n"))
ON_THE_HISTORY = pytest.mark.xdist_group("jax-history")
BROKEN = ("\nfrom jax._src.lib import xla_client as _xc\n"
          "_xc.an_api_newer_than_this_jaxlib  # a newer jaxlib's, as mid-range commits do\n")


def git(repo: Path, *args: str, when: int = 0) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": f"@{1737100000 + when * 3600} +0000",
           "GIT_COMMITTER_DATE": f"@{1737100000 + when * 3600} +0000"}
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=Jax Author",
                           "-c", "user.email=a@b", *args], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()


def version_py(source: Path, minimum: str) -> str:
    text = (source / "version.py").read_text()
    text = re.sub(r'^_minimum_jaxlib_version = ".*"', f'_minimum_jaxlib_version = "{minimum}"',
                  text, flags=re.MULTILINE)
    return re.sub(r"^_release_version: str = .*$", "_release_version: str | None = None", text,
                  flags=re.MULTILINE)


@pytest.fixture(scope="session")
def jax_history(jax_python, tmp_path_factory):
    """(repo, shas): a jax repository whose history from jax-v0.5.0 to jax-v0.5.1 is, by
    index: 0 the 0.5.0 wheel's jax/ (tagged), 1 0.5.1's version number, 2 the rest of 0.5.1
    but jax/lax/__init__.py, 3 the minimum jaxlib raised to 0.5.1 (refused on 0.5.0), 4 back
    to 0.5.0, 5 an import of a newer jaxlib's API (does not import), 6 undone, 7 0.5.1's
    jax/lax/__init__.py (jax.lax.reduce_and: the first bad commit), 8-11 unrelated, 12 0.5.1's
    version.py (needs jaxlib 0.5.1; tagged jax-v0.5.1). Built once a worker; its folder's
    parent is where the searches over it run (their command's folder is part of the
    question)."""
    sources = {v: jax_python(v).parent.parent / "lib" / "python3.11" / "site-packages" / "jax"
               for v in ("0.5.0", "0.5.1")}
    repo = tmp_path_factory.mktemp("jax-history") / "jax"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shas: list[str] = []

    def commit(message: str, tag: str | None = None) -> None:
        git(repo, "add", "-A", ".")
        git(repo, "commit", "-q", "--allow-empty", "-m", message, when=len(shas))
        if tag:
            git(repo, "tag", tag)
        shas.append(git(repo, "rev-parse", "HEAD"))

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(sources["0.5.0"], repo / "jax", ignore=ignore)
    commit("Release JAX 0.5.0", "jax-v0.5.0")
    (repo / "jax" / "version.py").write_text(version_py(sources["0.5.1"], "0.5.0"))
    commit("Start JAX 0.5.1 (#101)")
    lax_init = (repo / "jax" / "lax" / "__init__.py").read_text()
    version = (repo / "jax" / "version.py").read_text()
    shutil.rmtree(repo / "jax")
    shutil.copytree(sources["0.5.1"], repo / "jax", ignore=ignore)
    (repo / "jax" / "lax" / "__init__.py").write_text(lax_init)
    (repo / "jax" / "version.py").write_text(version)
    commit("Most of JAX 0.5.1")
    (repo / "jax" / "version.py").write_text(version_py(sources["0.5.1"], "0.5.1"))
    commit("Require jaxlib 0.5.1")
    (repo / "jax" / "version.py").write_text(version)
    commit("Roll back: require jaxlib 0.5.0")
    init = repo / "jax" / "__init__.py"
    plain_init = init.read_text()
    init.write_text(plain_init + BROKEN)
    commit("Use a newer jaxlib API")
    init.write_text(plain_init)
    commit("Roll back the newer jaxlib API")
    shutil.copy(sources["0.5.1"] / "lax" / "__init__.py", repo / "jax" / "lax" / "__init__.py")
    commit("Merge pull request #202 from someone:reduce-and")
    for k in range(4):
        (repo / "jax" / "_src" / f"note_{k}.py").write_text(f'"""Note {k}."""\n')
        commit(f"Unrelated change {k}")
    (repo / "jax" / "version.py").write_text(version_py(sources["0.5.1"], "0.5.1"))
    commit("Prepare for JAX release 0.5.1", "jax-v0.5.1")
    return repo, shas


@ON_THE_HISTORY
def test_the_range_runs_from_the_tag_to_the_last_commit_on_the_older_jaxlib(jax_history):
    repo, shas = jax_history
    span = commit_range(repo, "0.5.0", "0.5.1", "0.5.0")
    assert [c.sha for c in span.candidates] == shas[:12]
    assert [c.sha for c in span.need_new] == [shas[12]]
    assert [i for i, c in enumerate(span.candidates) if c.refused] == [3]
    assert "needs jaxlib >= 0.5.1" in span.candidates[3].refused
    assert span.candidates[1].pr == 101 and span.candidates[7].pr == 202
    assert span.files(span.candidates[7]) == ["jax/lax/__init__.py"]


@ON_THE_HISTORY
def test_a_checkout_is_the_commit_file_for_file(jax_history, jax_python):
    repo, shas = jax_history
    python = jax_python("0.5.0")
    pool = checkouts(repo)
    probe = ("import jax, jax.lax, os.path; print(jax.__version__, "
             "hasattr(jax.lax, 'reduce_and'), os.path.exists(jax.__file__))")
    seen = {}
    for i in (7, 0, 11, 2):  # back and forth: files a commit deletes or changes go with it
        with pool.at(shas[i]) as folder:
            done = subprocess.run([str(python), "-I", "-c",
                                   f"import sys; sys.path.insert(0, {str(folder)!r}); " + probe],
                                  capture_output=True, text=True, cwd=folder)
            assert done.returncode == 0, done.stderr
            seen[i] = done.stdout.split()
            assert not (folder / "jax" / "_src" / "note_0.py").exists() or i >= 9
    assert seen[0][1] == "False" and seen[7][1] == "True" and seen[11][1] == "True"
    assert seen[2][1] == "False"
    with pool.at(shas[0]) as folder:  # a switch stopped half-way (Ctrl-C): HEAD as it was
        (folder / ".jaxbisect-checked-out").unlink()
        (folder / "jax" / "lax" / "__init__.py").write_text("raise ImportError('half')\n")
    with pool.at(shas[0]) as folder:  # not trusted: checked out again
        assert "half" not in (folder / "jax" / "lax" / "__init__.py").read_text()
    pool.prepare(shas[9], python)  # ahead of its probe: switched and compiled
    with pool.at(shas[9]) as folder:
        assert git(folder, "rev-parse", "HEAD") == shas[9]
        assert list((folder / "jax" / "_src" / "__pycache__").glob("note_0.*.pyc"))
    assert shas[7].startswith(seen[7][0].split("+")[1])  # jax names the commit it runs


def bisect_json(*args: str, cwd: Path) -> tuple[int, dict, str]:
    cut = args.index("--") if "--" in args else len(args)
    done = subprocess.run([sys.executable, "-m", "jaxbisect", *args[:cut], "--json",
                           *args[cut:]],
                          capture_output=True, text=True, cwd=cwd, timeout=1200)
    assert done.stdout.startswith("{"), done.stderr[-3000:]  # one JSON document, only
    return done.returncode, json.loads(done.stdout), done.stderr


@pytest.mark.jax
@ON_THE_HISTORY
def test_a_real_history_gives_its_first_bad_commit_and_names_the_skips(jax_history, jax_python,
                                                                        tmp_path):
    repo, shas = jax_history
    code, doc, err = bisect_json("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu",
                                 "--commits", "--jax-repo", str(repo), "--reports",
                                 str(tmp_path), "--", "python", "-c", STALLING,
                                 cwd=repo.parent)
    assert code == 0, err
    c = doc["commits"]
    assert doc["status"] == "found" and c["came_with"] == "jax"
    assert c["first_bad"]["sha"] == shas[7] and c["last_good"]["sha"] == shas[6]
    assert c["exact"] and c["first_bad"]["pr"] == 202
    assert c["first_bad"]["files"] == ["jax/lax/__init__.py"]
    assert c["candidates"] == 12 and [x["sha"] for x in c["need_new"]] == [shas[12]]
    skipped = {x["sha"]: x["why"] for x in c["skipped"]}
    assert "needs jaxlib >= 0.5.1" in skipped[shas[3]]  # jax's version check: never run
    assert "does not import" in skipped[shas[5]] and "an_api_newer" in skipped[shas[5]]
    steps = {x["sha"]: x for x in c["steps"]}
    assert steps[shas[3]]["runs"] == 1 and steps[shas[3]]["seconds"] == 0
    report = (tmp_path / Path(doc["report"]).name).read_text()
    assert shas[7] in report and "## jax commits" in report


@pytest.mark.jax
@pytest.mark.full  # the scan case on both jaxlibs; the real history's answer: above
def test_the_scan_case_came_with_jaxlib_in_two_runs(jax_history, jax_python, tmp_path):
    """The scan report's growth at 0.5.0 → 0.5.1: jax's Python up to 0.5.1's last commit on
    jaxlib 0.5.0 keeps v0 constant, and on jaxlib 0.5.1 the commits grow (two runs a side)."""
    repo, shas = jax_history
    code, doc, err = bisect_json("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu",
                                 "--commits", "--jax-repo", str(repo), "--no-evidence",
                                 "--interior-budget", "0",  # the ends alone: two runs a side
                                 "--reports", str(tmp_path), cwd=REPO)
    assert code == 0, err
    c = doc["commits"]
    assert doc["status"] == "found" and c["came_with"] == "jaxlib"
    assert c["search"]["runs"] == 2 and c["ends_as_releases"] == ["old", "old"]
    assert [(x["runs_on"]["jaxlib"], x["figure"]["value"]) for x in c["steps"]] == [
        ("0.5.0", "constant"), ("0.5.0", "constant"), ("0.5.1", "grows"), ("0.5.1", "grows")]
    assert c["newer"]["came_with"] == "jaxlib" and c["newer"]["start"] == 0
    assert c["new_end"]["sha"] == shas[11]


# --- real: a fake jax whose version.py and a gate on jaxlib's version decide, on the real
# jaxlib 0.5.0 (xla_extension_version 303) and 0.5.1 (317) ---
GATED = """import sys
from jaxlib import xla_client
xla_extension_version = getattr(xla_client, "_version", 0)
{body}
"""
# The releases are the real jax (no answer()): 0.5.0 exits 0, 0.5.1 exits 1; a commit of the
# fake jax answers by its own code on the jaxlib it runs on.
GATE_QUESTION = ("import os, sys, jax; sys.exit(jax.answer() if hasattr(jax, 'answer') else "
                 "int(os.environ['JAX_BISECT_RELEASE'] == '0.5.1'))")
NEW_PATH = ("def answer():\n    return 1 if xla_extension_version >= 310 else 0\n")
OLD_PATH = "def answer():\n    return 0\n"
OLD_API = ("if xla_extension_version > 303:  # an older jaxlib's API, gone from 0.5.1's\n"
           "    raise ImportError('cannot import name old_api from jaxlib')\n" + OLD_PATH)


def gated_history(root: Path, bodies: list[str]) -> tuple[Path, list[str]]:
    """A jax repository: jax-v0.5.0 (a jax/ of version 0.5.0), then one commit a body of
    jax/__init__.py (version 0.5.1, minimum jaxlib 0.5.0), then the release preparation
    (minimum 0.5.1), tagged jax-v0.5.1."""
    repo = root / "jax"
    (repo / "jax").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    shas: list[str] = []

    def commit(body: str, version: str, minimum: str, message: str, tag: str = "") -> None:
        (repo / "jax" / "__init__.py").write_text(GATED.format(body=body))
        (repo / "jax" / "version.py").write_text(
            f'_version = "{version}"\n_minimum_jaxlib_version = "{minimum}"\n'
            f'__version__ = _version\n')
        git(repo, "add", "-A", ".")
        git(repo, "commit", "-q", "--allow-empty", "-m", message, when=len(shas))
        if tag:
            git(repo, "tag", tag)
        shas.append(git(repo, "rev-parse", "HEAD"))

    commit(OLD_PATH, "0.5.0", "0.5.0", "Release JAX 0.5.0", "jax-v0.5.0")
    for k, body in enumerate(bodies):
        commit(body, "0.5.1", "0.5.0", f"Change {k} (#{300 + k})")
    commit(bodies[-1], "0.5.1", "0.5.1", "Prepare for JAX release 0.5.1", "jax-v0.5.1")
    return repo, shas


@pytest.mark.jax
@pytest.mark.parametrize("bodies, came_with, first_bad", [
    # the gated path added at commit 3: on jaxlib 0.5.0 nothing changes, on 0.5.1 commit 3
    ([OLD_PATH] * 2 + [NEW_PATH] * 4, "both", 3),
    # gated from the first commit: jax's Python behaves as 0.5.1 at every commit on its jaxlib
    ([NEW_PATH] * 6, "jaxlib", None),
    # the first commits use an API jaxlib 0.5.1 no longer has: the first that runs there is
    # already new, the change could be among those before it
    ([OLD_API] * 3 + [NEW_PATH] * 3, None, None),
], ids=["both", "jaxlib", "cannot-tell"])
@pytest.mark.full  # three real commit searches; the oracle lab tests the logic above
def test_a_gate_on_the_jaxlib_is_found_from_both_sides(jax_python, tmp_path, bodies, came_with,
                                                        first_bad):
    jax_python("0.5.0"), jax_python("0.5.1")
    repo, shas = gated_history(tmp_path, bodies)
    code, doc, err = bisect_json("--from", "0.5.0", "--to", "0.5.1", "--backend", "cpu",
                                 "--commits", "--jax-repo", str(repo), "--reports",
                                 str(tmp_path / "reports"),
                                 # the ends of each side alone (the look inside: test_lab's
                                 # two jaxlibs, test_commit_hangs)
                                 "--interior-budget", "0",
                                 "--", "python", "-c", GATE_QUESTION, cwd=tmp_path)
    assert code == 0, err
    c = doc["commits"]
    assert doc["status"] == "found" and c["status"] == "alike"
    assert c["came_with"] == came_with
    on = {st["runs_on"]["jaxlib"] for st in c["steps"]}
    assert on == {"0.5.0", "0.5.1"}  # both halves were measured
    if came_with == "both":
        assert c["first_bad"]["sha"] == shas[first_bad]
        assert c["last_good"]["sha"] == shas[first_bad - 1]
        assert c["first_bad"]["pr"] == 300 + first_bad - 1
        assert c["jaxlib_gate"] == "xla_extension_version >= 310"
        assert {st["runs_on"]["jaxlib"] for st in c["steps"]
                if st["sha"] in (shas[first_bad], shas[first_bad - 1])} == {"0.5.1"}
        assert "'jaxlib==0.5.1'" in " ".join(c["reproduce"]) or "jaxlib==0.5.1" in " ".join(
            c["reproduce"])
    else:
        assert c["first_bad"] is None
    if came_with is None:
        assert c["reason"] and c["newer"]["start"] > 0
