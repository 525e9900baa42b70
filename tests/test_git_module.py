"""jaxbisect/lab/git.py is the one module that runs git (read with ``ast`` in every module of the
toolkit and the harness), and each of its functions asked of a real repository built here."""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

from jaxbisect.errors import UserError
from jaxbisect.files import shown_path
from jaxbisect.lab import git

ROOT = Path(__file__).resolve().parent.parent
THE_GIT_MODULE = ROOT / "jaxbisect" / "lab" / "git.py"
RUNNERS = {"subprocess", "os"}  # modules whose functions start a program


def _is_git(node: ast.AST, *, shell: bool = False) -> bool:
    """``"git"`` (a program), or with ``shell`` a line ``"git ..."`` too."""
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (node.value.split(" ", 1)[0] if shell else node.value) == "git")


def git_runs(source: str) -> list[int]:
    """The lines of ``source`` that run git: a list or tuple whose program is ``"git"`` (an
    argv, passed at once or kept for later), or a shell line ``git ...`` given to a
    subprocess or os function."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List | ast.Tuple) and node.elts and _is_git(node.elts[0]):
            lines.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and isinstance(node.func.value, ast.Name) and node.func.value.id in RUNNERS
              and node.args and _is_git(node.args[0], shell=True)):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_the_checker_finds_git_run_in_every_way_the_toolkit_could():
    assert git_runs('import subprocess\nsubprocess.run(["git", "-C", repo, "log"])\n') == [2]
    assert git_runs('argv = ("git", "rev-parse", "HEAD")\n_output(argv)\n') == [1]
    assert git_runs('import os\nos.system("git fetch --tags")\n') == [2]
    assert git_runs('subprocess.check_output("git status", shell=True)\n') == [1]
    assert git_runs('subprocess.run([sys.executable, "-m", "repro"])\n'
                    'git.run(repo, "log")\nsay("`git clone URL`")\n'
                    'subprocess.run(["gitk"])\nlines = ["git clone URL", "cd jax"]\n') == []


def test_only_the_git_module_runs_git():
    modules = [p for folder in ("jaxbisect", "repro", "bisect")
               for p in (ROOT / folder).rglob("*.py")]
    modules.append(ROOT / "noxfile.py")
    assert THE_GIT_MODULE in modules and len(modules) > 40
    elsewhere = {str(p.relative_to(ROOT)): lines for p in modules if p != THE_GIT_MODULE
                 if (lines := git_runs(p.read_text()))}
    assert elsewhere == {}
    assert git_runs(THE_GIT_MODULE.read_text())  # the checker sees the one that does


# --- git.py's functions on a real repository ---

def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], capture_output=True, text=True, check=True).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str, date: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    "commit", "-qm", message], check=True, capture_output=True,
                   env={**os.environ, "GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date})
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path) -> tuple[Path, list[str]]:
    """Three commits: jax/version.py, a flag and a doc; the flag's default flipped (tagged
    jax-v0.1.0); a README and jax_plugins/ added, jax/version.py removed."""
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q")
    shas = [_commit(path, {"jax/version.py": '_version = "0.1.0"\n',
                           "flags.cc": "bool xla_fast = false;\n", "docs/a.md": "a\n"},
                    "first", "2024-01-02T10:00:00Z"),
            _commit(path, {"flags.cc": "bool xla_fast = true;\n"},
                    "Flip xla_fast\n\nIts default is now true.", "2024-02-03T10:00:00Z")]
    _git(path, "tag", "-a", "-m", "release", "jax-v0.1.0")
    _git(path, "tag", "other")
    (path / "jax" / "version.py").unlink()
    shas.append(_commit(path, {"README": "hi\n", "jax_plugins/p.py": "x = 1\n"}, "third",
                        "2024-03-04T10:00:00Z"))
    return path, shas


def test_refs_and_files_are_read(repo):
    path, (first, second, third) = repo
    assert git.commit(path, "jax-v0.1.0") == second  # an annotated tag, followed to its commit
    assert git.commit(path, "HEAD") == third and git.commit(path, "jax-v9") is None
    assert git.has(path, first[:10]) and not git.has(path, "0" * 40)
    assert git.has_file(path, first, "jax/version.py")
    assert not git.has_file(path, third, "jax/version.py")
    assert git.file_at(path, "jax-v0.1.0", "flags.cc") == "bool xla_fast = true;\n"
    assert git.file_at(path, third, "jax/version.py") is None
    assert git.blobs(path, [f"{first}:flags.cc", f"{third}:jax/version.py", "HEAD:README"]) \
        == [b"bool xla_fast = false;\n", None, b"hi\n"]
    assert git.blobs(path, []) == []
    assert sorted(git.tags(path)) == ["jax-v0.1.0", "other"]
    assert git.tags(path, "jax-v*") == ["jax-v0.1.0"]
    assert git.files_at(path, first) == ["docs/a.md", "flags.cc", "jax/version.py"]
    assert git.commit_day(path, "jax-v0.1.0") == "2024-02-03" and git.commit_day(path, "no") == ""


def test_history_is_read(repo):
    path, (first, second, third) = repo
    assert git.log(path, f"{first}..HEAD", fields="%H %s") == (f"{second} Flip xla_fast\n"
                                                               f"{third} third\n")
    assert git.log(path, f"{first}^!", fields="%s", first_parent=True) == "first\n"
    assert git.message(path, "jax-v0.1.0") == (second, "Flip xla_fast", "Its default is now true.")
    assert git.message(path, first) == (first, "first", "")
    assert git.diff(path, first, second) == git.diff(path, first, second, "flags.cc")
    assert "+bool xla_fast = true;" in git.diff(path, first, second).splitlines()
    assert git.diff(path, first, second, "jax") == ""
    assert git.changed_files(path, second, third) == ["README", "jax/version.py",
                                                      "jax_plugins/p.py"]
    assert git.changed_files(path, second, third, "jax", "jax_plugins") == [
        "jax/version.py", "jax_plugins/p.py"]
    assert git.count_between(path, first, third) == 2
    assert git.count_between(path, first, "0" * 40) is None
    assert git.commits_changing(path, first, third, r"xla_fast") == [(second, "Flip xla_fast")]
    assert git.commits_changing(path, second, third, r"xla_fast") == []
    assert git.commits_changing(path, "0" * 40, third, r"xla_fast") == []
    assert [line for line in git.patch(path, second).splitlines()
            if line.startswith(("+", "-"))] == [
        "--- a/flags.cc", "+++ b/flags.cc", "-bool xla_fast = false;", "+bool xla_fast = true;"]
    assert git.patch(path, "0" * 40) == ""


def test_a_failure_names_the_repository_and_what_git_said(repo, tmp_path):
    path, _ = repo
    with pytest.raises(git.GitFailed) as failed:
        git.run(path, "cat-file", "-p", "no-such-ref")
    assert isinstance(failed.value, UserError)
    assert str(failed.value) == f"git cat-file in {shown_path(path)}: {failed.value.said}"
    assert "no-such-ref" in failed.value.said
    with pytest.raises(git.GitFailed) as failed:
        git.run(path, "-c", "core.quotepath=false", "show", "no-such-ref")
    assert str(failed.value).startswith(f"git show in {shown_path(path)}: ")
    (tmp_path / "plain").mkdir()
    with pytest.raises(git.GitFailed, match="not a git repository"):
        git.tags(tmp_path / "plain")
    with pytest.raises(git.GitFailed):
        git.blobs(tmp_path / "plain", ["HEAD:README"])
    assert git.commit(tmp_path / "plain", "HEAD") is None
    assert git.remote_urls(tmp_path / "plain") == [] and git.origin_url(tmp_path / "plain") is None


def test_clones_remotes_and_tags_fetched(repo, tmp_path):
    path, (_, second, third) = repo
    bare = tmp_path / "bare.git"
    git.clone_bare(str(path), bare)
    assert (bare / "HEAD").is_file() and git.commit(bare, "jax-v0.1.0") == second
    assert git.origin_url(bare) == str(path) and git.remote_urls(bare) == [str(path)] * 2
    assert git.origin_url(path) is None and git.remote_urls(path) == []
    with pytest.raises(git.GitFailed) as failed:
        git.clone_bare(str(tmp_path / "nowhere"), tmp_path / "other.git")
    assert "nowhere" in failed.value.said

    _git(path, "tag", "jax-v0.2.0", third)
    assert not git.has(bare, "jax-v0.2.0")
    git.fetch_tags(bare)
    assert git.commit(bare, "jax-v0.2.0") == third
    git.fetch_tags(path)  # no origin: nothing fetched, nothing raised


def test_a_sparse_shared_checkout_switches_between_commits(repo, tmp_path):
    path, (first, second, third) = repo
    folder = tmp_path / "checkouts" / "slot-0"
    folder.parent.mkdir()
    git.clone_shared(path, folder)
    assert git.commit(folder, "HEAD") == third and not (folder / "README").exists()
    git.sparse_checkout(folder, ("jax", "jax_plugins"))
    git.checkout(folder, first)
    assert git.commit(folder, "HEAD") == first
    assert folders(folder) == ["jax"] and (folder / "jax" / "version.py").is_file()
    git.checkout(folder, third)
    assert folders(folder) == ["jax_plugins"]  # docs/ never: outside the sparse set
    with pytest.raises(git.GitFailed, match=r"^git checkout in "):
        git.checkout(folder, "0" * 40)


def folders(checkout: Path) -> list[str]:
    return sorted(p.name for p in checkout.iterdir() if p.is_dir() and p.name != ".git")


def test_the_toolkits_own_commit(tmp_path, repo):
    path, shas = repo
    short = git.short_head(path / "jax_plugins")  # any folder of the clone
    assert short is not None and len(short) < 40 and shas[-1].startswith(short)
    (tmp_path / "plain").mkdir()
    assert git.short_head(tmp_path / "plain") is None
