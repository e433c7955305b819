"""Real git repositories for tests: an isolated git (no global or system config, no repository above
the test's tmp_path, a committer identity) and a helper that runs git in a directory."""

from __future__ import annotations

import subprocess
from pathlib import Path


def isolate_git(tmp_path: Path, monkeypatch) -> None:
    """No global or system git config, and no repository above ``tmp_path``; commits get an identity
    (these variables do not make ``git config user.name`` answer)."""
    empty = tmp_path / "empty.gitconfig"
    empty.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(empty))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Committer")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "c@example.com")


def git(cwd: Path, *args: str) -> str:
    """``git ARGS`` in ``cwd`` (it must succeed): its stdout."""
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout
