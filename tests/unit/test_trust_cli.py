"""Workspace trust at the terminal: the trust prompt of interactive mode, `mcp list` in an untrusted workspace,
and the start-up question about a changed .mcp.json server (CliRunner, no Redis)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from cli.mcp import approve_project_servers
from cli.trust_flag import ask_trust
from workflows.models.mcp import McpStatus
from workflows.models.options import SessionOptions
from workflows.sessions.setup import resolve
from workflows.settings import Settings

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


@pytest.fixture
def here(tmp_path, monkeypatch):
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".claude").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(ws)
    (ws / ".claude" / "settings.json").write_text(json.dumps({"sandbox": {"enabled": False}}))
    return ws, home


@pytest.mark.parametrize("answer, trusted", [("y", True), ("yes", True), ("n", False), ("", False)])
def test_the_trust_prompt_asks_once_and_a_yes_is_remembered(here, capsys, answer, trusted):
    ws, home = here
    asked = []
    r = resolve(ws, Settings(), SessionOptions(), ask_trust=ask_trust(lambda text: asked.append(text) or answer))
    out = capsys.readouterr()
    assert "Quick safety check: Is this a project you created or one you trust?" in out.out
    assert asked == ["Yes, I trust this folder (y) / No, continue without these settings (n): "]
    assert r.setup.sandbox.enabled is (not trusted)
    assert any("is not trusted" in w for w in r.warnings) is (not trusted)
    again = resolve(ws, Settings(), SessionOptions(), ask_trust=ask_trust(lambda text: asked.append(text) or "n"))
    assert len(asked) == (1 if trusted else 2)  # trusted: not asked again while the settings are the same
    assert again.setup.sandbox.enabled is (not trusted)


def test_mcp_list_never_starts_an_untrusted_workspaces_servers(here, tmp_path):
    ws, home = here
    marker = tmp_path / "started"
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": {
        "command": "sh", "args": ["-c", f"touch {marker}; exec {sys.executable} {SERVER}"]}}}))
    (ws / ".claude" / "settings.local.json").write_text(json.dumps({"enabledMcpjsonServers": ["p"]}))
    out = CliRunner().invoke(cli, ["mcp", "list"], catch_exceptions=False)
    assert "is not trusted" in out.output and ".mcp.json (MCP servers: p)" in out.output
    assert not marker.exists()


def test_approving_a_changed_server_at_start_up_records_its_new_command(here):
    ws, home = here
    from workflows.sessions.setup import session_options

    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": {"command": "old"}}}))
    (ws / ".claude" / "settings.local.json").write_text(json.dumps({"enabledMcpjsonServers": ["p"]}))
    session_options(ws, Settings(), home=home, trust="--trust-project")
    (home / ".mainsail" / "settings.json").write_text(json.dumps({"trustedWorkspaces": [str(ws)]}))
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"p": {"command": "new"}}}))
    perms, _ = session_options(ws, Settings(), home=home)
    assert perms["mcp_servers"][0].status is McpStatus.UNAPPROVED
    got = approve_project_servers(perms["mcp_servers"], ws, lambda text: "y")
    assert got[0].status is McpStatus.PENDING
    perms, _ = session_options(ws, Settings(), home=home)
    assert perms["mcp_servers"][0].status is McpStatus.PENDING  # the new command was approved: recorded
