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
