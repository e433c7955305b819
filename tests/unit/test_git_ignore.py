"""The settings.local.json files Mainsail writes are kept out of git as Claude Code keeps its own: a
``**/<folder>/settings.local.json`` rule in the user's global excludes file, checked here with real git."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from workflows.git.ignore import global_excludes_file, keep_out_of_git
from workflows.mcp.scopes import record_approval

RULE = "**/.mainsail/settings.local.json"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A git repository as the current directory, and a home of its own (no global git config yet)."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(ws)
    git(ws, "init", "-q")
    return ws, home


def git(ws: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True)


def add_server(*extra: str):
    return CliRunner().invoke(
        cli, ["mcp", "add", *extra, "gh", "-e", "TOKEN=secret", "--", sys.executable, "-V"], catch_exceptions=False)


def test_mcp_add_keeps_the_local_file_and_its_token_out_of_git(repo):
    ws, home = repo
    out = add_server()
    assert out.exit_code == 0, out.output
    assert "Git now ignores .mainsail/settings.local.json in every repository" in out.stdout
    assert RULE in (home / ".config" / "git" / "ignore").read_text().splitlines()
    assert git(ws, "check-ignore", "-q", ".mainsail/settings.local.json").returncode == 0
    assert git(ws, "status", "--porcelain", "--untracked-files=all").stdout == ""
    assert "secret" in (ws / ".mainsail" / "settings.local.json").read_text()


def test_the_rule_is_added_once_and_what_was_there_is_kept(repo):
    ws, home = repo
    ignore = home / ".config" / "git" / "ignore"
    ignore.parent.mkdir(parents=True)
    ignore.write_text("*.swp")  # no newline at the end
    assert add_server().exit_code == 0
    out = CliRunner().invoke(cli, ["mcp", "add", "other", "--", sys.executable, "-V"], catch_exceptions=False)
    assert out.exit_code == 0 and "Git now ignores" not in out.output
    assert ignore.read_text() == f"*.swp\n{RULE}\n"


def test_a_configured_excludes_file_is_the_one_written(repo):
    ws, home = repo
    (home / ".gitconfig").write_text("[core]\n\texcludesFile = ~/my-ignores\n")
    assert global_excludes_file(home) == home / "my-ignores"
    assert add_server().exit_code == 0
    assert (home / "my-ignores").read_text() == f"{RULE}\n"
    assert not (home / ".config" / "git" / "ignore").exists()
    assert git(ws, "check-ignore", "-q", ".mainsail/settings.local.json").returncode == 0


def test_xdg_config_home_is_followed(repo, monkeypatch, tmp_path):
    ws, home = repo
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert global_excludes_file(home) == tmp_path / "xdg" / "git" / "ignore"


def test_a_tracked_local_file_is_said_to_be_committed_with_the_fix(repo):
    ws, home = repo
    (ws / ".mainsail").mkdir()
    (ws / ".mainsail" / "settings.local.json").write_text("{}")
    git(ws, "add", ".mainsail/settings.local.json")
    out = add_server()
    assert out.exit_code == 0
    assert "Warning: .mainsail/settings.local.json is tracked by git in this repository" in out.stderr
    assert "git rm --cached .mainsail/settings.local.json" in out.stderr


def test_an_unwritable_excludes_file_is_a_warning_not_a_failure(repo):
    ws, home = repo
    (home / ".config").write_text("a file where a folder should be")
    out = add_server()
    assert out.exit_code == 0 and "could not add **/.mainsail/settings.local.json" in out.stderr
    assert json.loads((ws / ".mainsail" / "settings.local.json").read_text())["mcpServers"]["gh"]


def test_claude_code_s_local_file_written_for_mcp_approvals_is_ignored_too(repo):
    ws, home = repo
    written = record_approval(ws, ["p"], "yes", home)
    assert written.path == ws / ".claude" / "settings.local.json"
    assert "**/.claude/settings.local.json" in (home / ".config" / "git" / "ignore").read_text().splitlines()
    assert git(ws, "check-ignore", "-q", ".claude/settings.local.json").returncode == 0


def test_other_files_are_left_alone(repo):
    ws, home = repo
    assert keep_out_of_git(ws / ".mcp.json", ws, home) is None
    assert not (home / ".config" / "git" / "ignore").exists()
