"""The pins table (the XLA commit each jax release pins) made from a real git repository built
here, the fallback for a release newer than the table, and the hand-off to JAX-Toolbox's
triage tool parsed by that tool's own argument rules."""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import subprocess
import sys
import urllib.error
from pathlib import Path

import pytest

from jaxbisect.evidence.handoff import triage_handoff
from jaxbisect.evidence.pin_ranges import release_pins
from jaxbisect.lab.pins import (
    PIN_TABLE,
    TABLE_WORDS,
    Pin,
    PinTable,
    load_table,
    lookup,
    main,
    make_table,
)
from jaxbisect.report.markdown.handoff import render_xla_range

REPO = Path(__file__).resolve().parent.parent


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], capture_output=True, text=True, check=True).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str, *tags: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    for tag in tags:
        git(repo, "tag", "-a", "-m", tag, tag)   # jax's release tags are annotated
    return git(repo, "rev-parse", "HEAD")


def xla_sha(n: int) -> str:
    return f"{n:x}" * 40 if n < 16 else "ab" * 20


def pin(sha: str) -> str:
    return f'XLA_COMMIT = "{sha}"\nXLA_SHA256 = "{"0" * 64}"\n'


def archive(sha: str) -> str:
    return ('http_archive(\n    name = "xla",\n'
            f'    urls = [\n        "https://github.com/openxla/xla/archive/{sha}.tar.gz",\n'
            "    ],\n)\n")


@pytest.fixture
def jax_clone(tmp_path):
    """jax's history in small: a release before XLA left TensorFlow (no pin), one pinning the
    XLA archive in WORKSPACE (with its own jaxlib tag), one in third_party/xla/workspace.bzl,
    one in revision.bzl, an -rc tag (not a release), and a commit after the last tag."""
    repo = tmp_path / "jax"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = {}
    shas["0.1.0"] = commit(repo, {"WORKSPACE": 'tf_commit = "x"\n'}, "tf era", "jax-v0.1.0")
    shas["0.4.14"] = commit(repo, {"WORKSPACE": archive(xla_sha(1))}, "openxla",
                            "jax-v0.4.14", "jaxlib-v0.4.14")
    shas["0.5.0"] = commit(repo, {"WORKSPACE": "load()\n",
                                  "third_party/xla/workspace.bzl": pin(xla_sha(2))},
                           "pin in workspace.bzl", "jax-v0.5.0")
    commit(repo, {"third_party/xla/workspace.bzl": pin(xla_sha(3))}, "rc", "jax-v0.5.1-rc")
    shas["0.5.1"] = commit(repo, {"third_party/xla/workspace.bzl": "# moved\n",
                                  "third_party/xla/revision.bzl": pin(xla_sha(4))},
                           "pin in revision.bzl", "jax-v0.5.1")
    shas["after"] = commit(repo, {"third_party/xla/revision.bzl": pin(xla_sha(5))}, "later")
    return repo, shas


def test_the_table_from_a_clone_holds_every_release_tag_with_a_pin(jax_clone, tmp_path):
    repo, shas = jax_clone
    table = make_table(repo, remote="https://example.com/jax", today=dt.date(2026, 1, 2))
    assert table["pins"] == {
        "jax-v0.4.14": {"jax_commit": shas["0.4.14"], "xla_commit": xla_sha(1),
                        "pin_file": "WORKSPACE"},
        "jaxlib-v0.4.14": {"jax_commit": shas["0.4.14"], "xla_commit": xla_sha(1),
                           "pin_file": "WORKSPACE"},
        "jax-v0.5.0": {"jax_commit": shas["0.5.0"], "xla_commit": xla_sha(2),
                       "pin_file": "workspace.bzl"},
        "jax-v0.5.1": {"jax_commit": shas["0.5.1"], "xla_commit": xla_sha(4),
                       "pin_file": "revision.bzl"},
    }
    assert table["tags_without_pin"] == ["jax-v0.1.0"]
    assert (table["source"], table["newest_tag"], table["made"]) == \
        ("https://example.com/jax", "jax-v0.5.1", "2026-01-02")
    assert dt.date.fromisoformat(table["newest_tag_date"])

    # A bare clone (what `fetch` brings) gives the same table; the CLI writes it whole.
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(bare)], check=True)
    out = tmp_path / "pins.json"
    assert main(["--jax-repo", str(bare), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["pins"] == table["pins"] and written["source"] == str(repo)  # origin's URL
    loaded = load_table(out)
    assert loaded.tag_for("0.5.0").xla_commit == xla_sha(2)
    assert loaded.describe()["tags"] == 4


def test_a_bad_clone_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--jax-repo", str(tmp_path / "nowhere")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["--jax-repo", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("python -m jaxbisect.lab.pins: ")
                                 for line in err)
    done = subprocess.run([sys.executable, "-m", "jaxbisect.lab.pins", "--jax-repo",
                           str(tmp_path / "nowhere")], capture_output=True, text=True,
                          cwd=REPO, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def release(version: str, wheel: str | None) -> dict:
    return {"status": "ok", "jax": version, "jaxlib": version, "jaxlib_git_hash": wheel}


@pytest.fixture
def table(jax_clone, tmp_path):
    repo, shas = jax_clone
    path = tmp_path / "pins.json"
    path.write_text(json.dumps(make_table(repo, remote="R", today=dt.date(2026, 1, 2))))
    return load_table(path), repo, shas


def test_the_pin_comes_from_the_wheels_commit_where_the_table_has_it_else_the_tags(table):
    pins, _, shas = table
    same = lookup({"jaxlib": "0.5.0", "commit": shas["0.5.0"]}, pins)
    assert (same.xla_commit, same.jax_commit) == (xla_sha(2), shas["0.5.0"])
    assert "the wheel's commit" in same.source
    # The wheel was built from a commit the tag does not point at (a release branch's).
    other = lookup({"jaxlib": "0.5.1", "commit": "9" * 40}, pins)
    assert (other.xla_commit, other.jax_commit) == (xla_sha(4), shas["0.5.1"])
    assert "the tag jax-v0.5.1" in other.source and "9999999999" in other.source
    # An old jaxlib's own tag; and a wheel whose commit is another release's tag: that one.
    assert lookup({"jaxlib": "0.4.14", "commit": None}, pins).xla_commit == xla_sha(1)
    assert lookup({"jaxlib": "0.5.1", "commit": shas["0.5.0"]}, pins).xla_commit == xla_sha(2)


def test_a_release_newer_than_the_table_falls_back_and_says_so(table, tmp_path, monkeypatch):
    pins, repo, shas = table
    monkeypatch.setenv("JAX_SCAN_REPRO_CACHE", str(tmp_path / "cache"))
    newer = lookup({"jaxlib": "0.6.0", "commit": shas["after"]}, pins)
    assert newer.xla_commit is None and newer.note == "jaxlib 0.6.0"
    assert lookup({"jaxlib": "0.4.99", "commit": None}, pins).note is None  # not newer

    # No clone, no GitHub: the table's side is filled, the newer one said to be newer.
    found = release_pins(release("0.5.0", shas["0.5.0"]), release("0.6.0", shas["after"]),
                         table=pins)
    assert found["xla_commits"] == {"old": xla_sha(2), "new": None}
    assert found["links"]["xla_compare"] is None
    assert f"jaxlib 0.6.0 is newer than {TABLE_WORDS} (newest jax-v0.5.1" in found["xla_note"]
    assert found["xla_pins_table"]["newest_tag"] == "jax-v0.5.1"

    # GitHub (recorded) is asked for the newer release only.
    asked = []

    def fetch(url):
        asked.append(url)
        if shas["after"] in url and url.endswith("revision.bzl"):
            return pin(xla_sha(5)).encode()
        raise urllib.error.HTTPError(url, 404, "Not Found", {}, io.BytesIO())

    found = release_pins(release("0.5.0", shas["0.5.0"]), release("0.6.0", shas["after"]),
                         fetch=fetch, table=pins)
    assert found["xla_commits"] == {"old": xla_sha(2), "new": xla_sha(5)}
    assert found["xla_pin_sources"]["new"] == f"GitHub at {shas['after']}"
    assert all(shas["after"] in url for url in asked) and asked
    # A local clone still comes first, for both sides.
    found = release_pins(release("0.5.0", shas["0.5.0"]), release("0.6.0", shas["after"]),
                         repo, table=pins)
    assert found["xla_commits"] == {"old": xla_sha(2), "new": xla_sha(5)}
    assert found["xla_pin_jax_commits"]["new"] == shas["after"]


def test_the_xla_commits_between_the_pins_are_counted_in_an_xla_clone(tmp_path):
    xla = tmp_path / "xla"
    xla.mkdir()
    git(xla, "init", "-q")
    made = [commit(xla, {"f": str(i)}, f"c{i}") for i in range(5)]
    pins = PinTable({f"jax-v{v}": Pin(f"jax-v{v}", c * 40, x) for v, c, x in
                     (("0.6.0", "a", made[1]), ("0.7.0", "b", made[4]), ("0.8.0", "c", "d" * 40))},
                    "a clone", "jax-v0.8.0", "2026-01-01", "2026-01-02")
    found = release_pins(release("0.6.0", None), release("0.7.0", None), table=pins,
                         xla_repo=xla)
    assert found["xla_commits"] == {"old": made[1], "new": made[4]}
    assert found["xla_commit_count"] == 3 and found["xla_note"] is None
    found = release_pins(release("0.6.0", None), release("0.8.0", None), table=pins,
                         xla_repo=xla)
    assert found["xla_commit_count"] is None        # the new pin is not in this clone


def test_the_shipped_table_loads_and_pins_the_scan_reports_releases():
    shipped = load_table(PIN_TABLE)
    assert shipped is not None and shipped.source and shipped.made
    assert shipped.tag_for("0.5.0").xla_commit == "a91d9c30c545eccdbc26075c2b2ff04a014e66e9"
    assert shipped.tag_for("0.5.1").xla_commit == "75916151739a1174f3ce02efe825fbd19bb61b86"
    assert shipped.newest_tag and shipped.is_newer("99.0.0")


# --- the hand-off -------------------------------------------------------------------------

def peer_parser(argv: list[str]) -> argparse.Namespace:
    """JAX-Toolbox's triage argument rules as read in NVIDIA/JAX-Toolbox
    ``.github/triage/jax_toolbox_triage/args.py`` (commit 0864b4b8): the options a run here
    can reach, their types, and the checks ``parse_args`` makes after parsing. Written from
    that file's rules, not copied."""
    def versions(text: str) -> dict[str, str]:
        out: dict[str, str] = {}
        for part in text.split(","):
            name, version = part.split(":", 1)
            assert name not in out
            out[name] = version
        return out

    p = argparse.ArgumentParser(exit_on_error=False)
    p.add_argument("--container")
    p.add_argument("--container-url-template")
    p.add_argument("--output-prefix", type=Path)
    p.add_argument("--skip-precondition-checks", action="store_true")
    p.add_argument("test_command", nargs="+")
    p.add_argument("--failing-container")
    p.add_argument("--end-date", type=dt.date.fromisoformat)
    p.add_argument("--passing-container")
    p.add_argument("--start-date", type=dt.date.fromisoformat)
    p.add_argument("--threshold-days", type=int, default=1)
    p.add_argument("--bazel-cache")
    for side in ("failing", "passing"):
        p.add_argument(f"--{side}-versions", type=versions)
        p.add_argument(f"--{side}-commits", type=versions)   # deprecated aliases
    p.add_argument("--build-scripts-path")
    p.add_argument("--override-remotes", type=versions, default={})
    p.add_argument("-v", "--container-mount", action="append", default=[])
    p.add_argument("--container-runtime", default="docker", type=str.lower)
    p.add_argument("--main-branch", default="main")
    args = p.parse_args(argv)
    assert args.container_runtime in {"docker", "pyxis", "local"}
    if args.container_runtime == "local":
        assert args.passing_versions is not None and args.failing_versions is not None
        assert all(getattr(args, name) is None for name in
                   ("container", "start_date", "end_date", "passing_container",
                    "failing_container"))
    for side in ("passing", "failing"):
        versions_given = getattr(args, f"{side}_versions")
        assert versions_given is None or versions_given.keys() >= {"xla", "jax"}
    return args


def attribution() -> dict:
    return {"commits": {"old": {"jax": "0.5.0"}, "new": {"jax": "0.5.1"}},
            "xla_commits": {"old": "a" * 40, "new": "b" * 40},
            "xla_pin_jax_commits": {"old": "c" * 40, "new": "d" * 40},
            "xla_pin_sources": {"old": "x", "new": "y"}}


def test_the_handoff_parses_under_the_triage_tools_rules():
    test = ["python", "-m", "repro", "--check", "--backend", "cpu", "--n-outer", "2", "5",
            "--n-res", "200", "--xla-flags=--xla_foo=true"]
    handoff = triage_handoff(attribution(), test)
    assert handoff["argv"][0] == "jax-toolbox-triage"
    args = peer_parser(handoff["argv"][1:])
    assert args.container_runtime == "local"
    assert args.passing_versions == {"jax": "c" * 40, "xla": "a" * 40}
    assert args.failing_versions == {"jax": "d" * 40, "xla": "b" * 40}
    assert args.test_command == test == handoff["test"]
    # Without the `--`, the check's own options would be read as the tool's: an error.
    no_dashes = [a for a in handoff["argv"][1:] if a != "--"]
    with pytest.raises((argparse.ArgumentError, SystemExit)):
        peer_parser(no_dashes)


def test_unknown_pins_give_no_handoff():
    test = ["python", "-m", "repro", "--check", "--backend", "cpu"]
    assert triage_handoff(attribution(), test) is not None
    half = attribution()
    half["xla_commits"]["new"] = None
    assert triage_handoff(half, test) is None


def test_the_report_names_the_pins_and_gives_the_command():
    a = attribution()
    a["triage"] = triage_handoff(a, ["python", "-m", "repro", "--check", "--backend", "cpu"])
    markdown = "\n".join(render_xla_range(a))
    assert a["triage"]["command"] in markdown and "`aaaaaaaaaa`" in markdown
