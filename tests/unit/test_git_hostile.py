"""Mainsail's own git reads run nothing a repository configures, and read nothing outside it.

Each test builds a hostile repository (one knob each), then makes every read Mainsail does at a
session's start: the context's snapshot, the session's branch, the auto-memory project root. The
knob points at a marker program; the test asserts it never ran and that nothing of the outside
repository (a commit subject, a file name) reached the text. With ``git`` subprocesses (before
libgit2) the fsmonitor, filter, include, commondir, gitdir, core.worktree, nested and submodule
cases ran the marker or showed the outside repository.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.gitrepo import git, isolate_git
from workflows.commit.support import _git_branch
from workflows.context.files import git_status, system_context
from workflows.git import state as git_state
from workflows.memory.records import project_root

SECRET_SUBJECT = "SECRET-SUBJECT-OF-THE-OUTSIDE-REPO"
SECRET_FILE = "secret-name-outside.txt"


@pytest.fixture(autouse=True)
def isolated_git(tmp_path, monkeypatch):
    isolate_git(tmp_path, monkeypatch)


def repo(path: Path, subject: str = "Initial") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("a\n")
    git(path, "add", "a.txt")
    git(path, "commit", "-q", "--no-gpg-sign", "-m", subject)
    return path


@pytest.fixture
def marker(tmp_path) -> tuple[Path, Path]:
    """A program that leaves a file behind when it runs: (program, the file)."""
    ran = tmp_path / "MARKER-RAN"
    prog = tmp_path / "marker.sh"
    prog.write_text(f"#!/bin/sh\necho ran >> {ran}\nexit 0\n")
    prog.chmod(0o755)
    return prog, ran


@pytest.fixture
def outside(tmp_path) -> Path:
    """Another repository next to the workspace: its subject and a file name must never be shown."""
    out = repo(tmp_path / "outside", SECRET_SUBJECT)
    (out / SECRET_FILE).write_text("x")
    return out


def read_everything(ws: Path) -> str:
    """Every git read a session start makes, joined (the texts a model or a record could see)."""
    return "\n".join(str(x) for x in (
        system_context(str(ws)), git_status(str(ws)), _git_branch(str(ws)), project_root(str(ws)),
        git_state.toplevel(str(ws)),
    ))


def assert_safe(ws: Path, marker: tuple[Path, Path]) -> str:
    text = read_everything(ws)
    assert not marker[1].exists(), f"the repository's program ran: {marker[1].read_text()}"
    assert SECRET_SUBJECT not in text and SECRET_FILE not in text
    return text


def touch_tracked(ws: Path) -> None:
    """Make the tracked file stat-dirty so git would have to re-read it (through filters, fsmonitor)."""
    (ws / "a.txt").write_text("a\n")
    os.utime(ws / "a.txt", (1, 1))


# --------------------------------------------------------------------------- programs a config names


def test_core_fsmonitor(tmp_path, marker):
    ws = repo(tmp_path / "ws")
    git(ws, "config", "core.fsmonitor", str(marker[0]))
    text = assert_safe(ws, marker)
    assert "Current branch: main" in text  # still read, through libgit2


def test_filter_clean_driver(tmp_path, marker):
    ws = repo(tmp_path / "ws")
    (ws / ".gitattributes").write_text("*.txt filter=evil\n")
    git(ws, "add", ".gitattributes")
    git(ws, "commit", "-q", "--no-gpg-sign", "-m", "attrs")
    git(ws, "config", "filter.evil.clean", str(marker[0]))
    git(ws, "config", "filter.evil.process", str(marker[0]))
    git(ws, "config", "filter.evil.required", "true")
    touch_tracked(ws)
    assert_safe(ws, marker)


@pytest.mark.parametrize("key, value", [
    ("core.hooksPath", "hooks-dir"),
    ("core.sshCommand", "MARKER"),
    ("diff.external", "MARKER"),
    ("core.pager", "MARKER"),
    ("gpg.program", "MARKER"),
    ("core.askPass", "MARKER"),
    ("diff.a.textconv", "MARKER"),
])
def test_other_program_knobs(tmp_path, marker, key, value):
    ws = repo(tmp_path / "ws")
    hooks = ws / "hooks-dir"
    hooks.mkdir()
    for name in ("post-index-change", "post-checkout", "reference-transaction", "pre-commit"):
        (hooks / name).write_text(marker[0].read_text())
        (hooks / name).chmod(0o755)
    git(ws, "config", key, str(marker[0]) if value == "MARKER" else value)
    git(ws, "config", "log.showSignature", "true")
    touch_tracked(ws)
    assert_safe(ws, marker)


def test_include_path_is_refused(tmp_path, marker, outside):
    ws = repo(tmp_path / "ws")
    evil = tmp_path / "evil.config"
    evil.write_text(f"[core]\n\tfsmonitor = {marker[0]}\n[user]\n\tname = {SECRET_SUBJECT}\n")
    git(ws, "config", "include.path", str(evil))
    text = assert_safe(ws, marker)
    assert "Is directory a git repo: No" in text and "includes other files" in text


def test_include_if_is_refused(tmp_path, marker):
    ws = repo(tmp_path / "ws")
    evil = tmp_path / "evil.config"
    evil.write_text(f"[core]\n\tfsmonitor = {marker[0]}\n")
    git(ws, "config", "includeIf.gitdir:/.path", str(evil))
    assert "includes other files" in assert_safe(ws, marker)


# --------------------------------------------------------------------------- layouts that lead outside


def test_commondir_outside(tmp_path, marker, outside):
    """Cause 2 of issue 25: ``.git/commondir`` names a directory whose config runs a program."""
    ws = repo(tmp_path / "ws")
    evil = tmp_path / "evil-common"
    subprocess.run(["cp", "-r", str(outside / ".git"), str(evil)], check=True)
    git(evil, "config", "core.fsmonitor", str(marker[0]))
    (ws / ".git" / "commondir").write_text(str(evil) + "\n")
    text = assert_safe(ws, marker)
    assert "Is directory a git repo: No" in text
    assert "leads outside" in text and str(evil) in text


def test_gitdir_file_pointing_outside(tmp_path, marker, outside):
    ws = tmp_path / "ws"
    ws.mkdir()
    git(outside, "config", "core.fsmonitor", str(marker[0]))
    git(outside, "config", "core.worktree", str(ws))
    (ws / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    text = assert_safe(ws, marker)
    assert "leads outside" in text


def test_dotgit_symlink_outside(tmp_path, marker, outside):
    ws = tmp_path / "ws"
    ws.mkdir()
    git(outside, "config", "core.fsmonitor", str(marker[0]))
    (ws / ".git").symlink_to(outside / ".git")
    assert "leads outside" in assert_safe(ws, marker)


def test_core_worktree_outside(tmp_path, marker, outside):
    ws = repo(tmp_path / "ws")
    git(ws, "config", "core.worktree", str(outside))
    git(ws, "config", "core.fsmonitor", str(marker[0]))
    text = assert_safe(ws, marker)
    assert "work tree is set elsewhere" in text


def test_alternates_outside(tmp_path, marker, outside):
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    (ws / ".git" / "objects" / "info" / "alternates").write_text(str(outside / ".git" / "objects") + "\n")
    head = git(outside, "rev-parse", "HEAD").strip()
    (ws / ".git" / "refs" / "heads" / "main").write_text(head + "\n")
    assert "borrows from outside" in assert_safe(ws, marker)


def test_nested_repository_as_the_workspace(tmp_path, marker):
    """A ``sub/.git`` written in one session, and a later session started in ``sub``."""
    outer = repo(tmp_path / "outer")
    sub = outer / "sub"
    sub.mkdir()
    git(sub, "init", "-q", "-b", "planted")
    (sub / "f.txt").write_text("x")
    git(sub, "add", "f.txt")
    git(sub, "config", "core.fsmonitor", str(marker[0]))
    text = assert_safe(sub, marker)
    assert "Current branch: planted" in text  # inside the workspace: read, and nothing ran


def test_submodule_of_the_workspace(tmp_path, marker):
    """git status recurses into submodules and runs their config's programs."""
    lib = repo(tmp_path / "lib")
    ws = repo(tmp_path / "ws")
    git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    git(ws, "commit", "-q", "--no-gpg-sign", "-m", "sub")
    git(ws / "lib", "config", "core.fsmonitor", str(marker[0]))
    (ws / "lib" / "a.txt").write_text("changed\n")
    assert_safe(ws, marker)


def test_planted_bare_repository_is_not_used(tmp_path, marker):
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "--bare", "-b", "main")  # HEAD, config, objects/ at the workspace's top
    git(ws, "config", "core.fsmonitor", str(marker[0]))
    git(ws, "config", "core.bare", "false")
    git(ws, "config", "core.worktree", str(ws))
    assert "Is directory a git repo: No" in assert_safe(ws, marker)


# --------------------------------------------------------------------------- legitimate layouts still read


def test_linked_worktree_is_read(tmp_path, marker):
    main = repo(tmp_path / "main", "Main subject")
    git(main, "worktree", "add", "-q", "-b", "feature", str(tmp_path / "wt"))
    text = assert_safe(tmp_path / "wt", marker)
    assert "Current branch: feature" in text and "Main subject" in text


def test_forged_worktree_link_is_refused(tmp_path, marker, outside):
    """A ``.git`` file naming another repository's worktree entry, which does not point back here."""
    git(outside, "worktree", "add", "-q", "-b", "other", str(tmp_path / "their-wt"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {outside / '.git' / 'worktrees' / 'their-wt'}\n")
    assert "leads outside" in assert_safe(ws, marker)


def test_submodule_as_the_workspace_is_read(tmp_path, marker):
    lib = repo(tmp_path / "lib", "Lib subject")
    sup = repo(tmp_path / "super")
    git(sup, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    text = assert_safe(sup / "lib", marker)
    assert "Lib subject" in text and "Is directory a git repo: Yes" in text


def test_workspace_below_the_repository_top_is_read(tmp_path, marker):
    top = repo(tmp_path / "mono")
    (top / "pkg").mkdir()
    (top / "pkg" / "keep.txt").write_text("x")
    git(top, "add", "pkg")
    git(top, "commit", "-q", "--no-gpg-sign", "-m", "pkg")
    (top / "pkg" / "new.txt").write_text("x")
    text = assert_safe(top / "pkg", marker)
    assert "?? new.txt" in text
    assert project_root(str(top / "pkg")) == str(top)


@pytest.mark.parametrize("name, content", [("HEAD", "garbage\n"), ("config", "[core\n"), ("index", "not an index")])
def test_a_broken_repository_reads_as_none_and_never_fails_the_start(tmp_path, marker, name, content):
    ws = repo(tmp_path / "ws")
    (ws / ".git" / name).write_text(content)
    assert_safe(ws, marker)  # no exception: the session starts, with or without git information
