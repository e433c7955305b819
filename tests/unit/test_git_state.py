"""workflows.git.state reads what git's porcelain shows: ``status --short`` compared with git itself."""

from __future__ import annotations

import os

import pytest

from tests.gitrepo import git, isolate_git
from workflows.git import state as git_state


@pytest.fixture(autouse=True)
def isolated_git(tmp_path, monkeypatch):
    isolate_git(tmp_path, monkeypatch)


@pytest.mark.parametrize("untracked", ["normal", "all", "no"])
def test_short_status_matches_git(tmp_path, untracked):
    d = tmp_path / "repo"
    d.mkdir()
    git(d, "init", "-q", "-b", "main")
    for name in ("a.txt", "b.txt", "c d.txt", "é.txt", "sub/x.txt", "old.txt", "t.txt"):
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(name * 20 + "\n")
    git(d, "add", ".")
    git(d, "commit", "-q", "--no-gpg-sign", "-m", "init")
    git(d, "config", "status.showUntrackedFiles", untracked)
    with open(d / "a.txt", "a") as fh:
        fh.write("more\n")
    with open(d / "b.txt", "a") as fh:
        fh.write("more\n")
    git(d, "add", "b.txt")
    with open(d / "b.txt", "a") as fh:
        fh.write("again\n")
    os.remove(d / "c d.txt")
    git(d, "mv", "old.txt", "new.txt")
    git(d, "rm", "-q", "--cached", "t.txt")
    (d / "untr" / "deep").mkdir(parents=True)
    (d / "untr" / "deep" / "f").write_text("x")
    (d / "ü new.txt").write_text("x")
    (d / 'tab\tq"x').write_text("x")
    (d / "staged.txt").write_text("x")
    git(d, "add", "staged.txt")
    for cwd in (d, d / "sub"):
        opened = git_state.open_repo(str(cwd))
        assert git_state.short_status(opened.repo, opened.top, opened.workspace) == \
            git(cwd, "status", "--short").rstrip("\n")


def test_branch_and_log_match_git(tmp_path):
    d = tmp_path / "repo"
    d.mkdir()
    git(d, "init", "-q", "-b", "trunk")
    opened = git_state.open_repo(str(d))
    assert git_state.branch_name(opened.repo) == "trunk"  # unborn
    assert git_state.current_branch(str(d)) is None  # as `git rev-parse --abbrev-ref HEAD` fails
    for i in range(7):
        git(d, "commit", "-q", "--allow-empty", "--no-gpg-sign", "-m", f"line one {i}\nline two\n\nbody")
    opened = git_state.open_repo(str(d))
    assert git_state.recent_commits(opened.repo) == git(d, "log", "--oneline", "--no-decorate", "-n", "5").strip()
    git(d, "checkout", "-q", "--detach")
    assert git_state.current_branch(str(d)) == "HEAD"


def test_may_hold_repository_agrees_with_open_repo(tmp_path, monkeypatch):
    """The libgit2-free look (workflows/git/locate.py) says "nothing here" only where open_repo finds nothing."""
    from workflows.git.locate import may_hold_repository

    repo = tmp_path / "repo"
    (repo / "sub" / "deeper").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    plain = tmp_path / "plain"
    plain.mkdir()
    (tmp_path / "file.txt").write_text("x")
    link = tmp_path / "link"
    link.symlink_to(repo / "sub")
    cases = [repo, repo / "sub" / "deeper", link, plain, tmp_path / "missing", tmp_path / "file.txt", repo / ".git"]
    for ws in cases:
        opened = git_state.open_repo(str(ws)).repo is not None
        assert may_hold_repository(str(ws)) or not opened, ws
    assert may_hold_repository(str(repo / "sub")) and may_hold_repository(str(link))
    assert not may_hold_repository(str(plain)) and not may_hold_repository(str(tmp_path / "missing"))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(repo))
    assert not may_hold_repository(str(repo / "sub")) and git_state.open_repo(str(repo / "sub")).repo is None


def test_no_libgit2_outside_a_repository(tmp_path):
    """A workspace with no .git above it: the branch, the gitStatus block and the project root are read without
    loading pygit2 (~30 ms: `mainsail -p` in such a workspace); inside a repository it is loaded."""
    import subprocess
    import sys

    plain = tmp_path / "plain"
    plain.mkdir()
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    probe = ("import sys\n"
             "from workflows.commit.support import _git_branch\n"
             "from workflows.context.files import git_status, is_git_repo\n"
             "from workflows.memory.records import project_root\n"
             "ws = sys.argv[1]\n"
             "_git_branch(ws); git_status(ws); is_git_repo(ws); project_root(ws)\n"
             "print('pygit2' in sys.modules)\n")
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)}
    loaded = {ws.name: subprocess.run([sys.executable, "-c", probe, str(ws)], capture_output=True, text=True,
                                      env=env, check=True).stdout.strip() for ws in (plain, repo)}
    assert loaded == {"plain": "False", "repo": "True"}
