"""``mainsail mcp list/get/add/add-json/remove`` (Claude Code's ``claude mcp``), ``/mcp``, and the servers in
``system/init``. No Redis: these read and write configuration files, and check servers from this process."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import cli
from cli.mcp import approve_project_servers, session_lines
from cli.output import StreamJson
from workflows.models import SessionRecord
from workflows.models.mcp import McpServer, McpServerConfig, McpStatus
from workflows.trust.decide import workspace_trust

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


@pytest.fixture
def here(tmp_path, monkeypatch):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(ws)
    return ws, home


def mcp(*args, input=None):
    return CliRunner().invoke(cli, ["mcp", *args], input=input, catch_exceptions=False)


def test_add_writes_claude_codes_entry_to_the_scopes_file(here):
    ws, home = here
    out = mcp("add", "files", "-e", "ROOT=/data", "--", sys.executable, SERVER, "--name", "files")
    assert out.exit_code == 0, out.output
    assert out.output == (f"Added stdio MCP server files with command: {sys.executable} {SERVER} --name files to "
                          f"local config\nFile modified: {ws / '.mainsail' / 'settings.local.json'}\n"
                          "Git now ignores .mainsail/settings.local.json in every repository: added "
                          f"**/.mainsail/settings.local.json to {home / '.config' / 'git' / 'ignore'} (as Claude Code "
                          "does).\n")
    saved = json.loads((ws / ".mainsail" / "settings.local.json").read_text())
    assert saved == {"mcpServers": {"files": {"type": "stdio", "command": sys.executable,
                                              "args": [SERVER, "--name", "files"], "env": {"ROOT": "/data"}}}}
    assert (ws / ".mainsail" / "settings.local.json").stat().st_mode & 0o777 == 0o600
    out = mcp("add", "-s", "user", "-t", "http", "web", "https://x.example/mcp", "-H", "Authorization: Bearer t")
    assert out.exit_code == 0 and "Added HTTP MCP server web with URL: https://x.example/mcp to user config" in out.output
    assert json.loads((home / ".mainsail" / "settings.json").read_text())["mcpServers"]["web"]["headers"] == \
        {"Authorization": "Bearer t"}
    out = mcp("add-json", "-s", "project", "p", '{"command": "srv"}')
    assert out.exit_code == 0 and json.loads((ws / ".mcp.json").read_text())["mcpServers"] == {"p": {"command": "srv"}}


@pytest.mark.parametrize("args, message", [
    (["add", "a b", "x"], "Invalid MCP server name 'a b'"),
    (["add", "-t", "sse", "s", "http://x"], "SSE transport is not supported"),
    (["add", "s", "x", "-H", "A: b"], "--header is for http servers"),
    (["add", "-t", "http", "s", "ftp://x"], "starts with http:// or https://"),
    (["add", "s", "x", "-e", "NOVALUE"], "write it as KEY=value"),
    (["add-json", "s", "{nope"], "The server's JSON is not valid"),
])
def test_add_refuses_what_a_session_could_not_use(here, args, message):
    out = mcp(*args)
    assert out.exit_code != 0 and message in out.output


def test_add_twice_and_remove(here):
    ws, home = here
    assert mcp("add", "s", "x").exit_code == 0
    again = mcp("add", "s", "y")
    assert again.exit_code == 1 and "MCP server s already exists in local config" in again.output
    assert mcp("add", "-s", "user", "s", "y").exit_code == 0
    both = mcp("remove", "s")
    assert both.exit_code == 1 and "exists in multiple scopes" in both.output and "mainsail mcp remove s -s user" in both.output
    out = mcp("remove", "s", "-s", "local")
    assert out.exit_code == 0 and out.output.startswith("Removed MCP server s from local config")
    assert mcp("remove", "s").exit_code == 0, "now only in user scope"
    gone = mcp("remove", "s")
    assert gone.exit_code == 1 and 'No MCP server named "s"' in gone.output


def test_claude_codes_own_servers_are_read_but_never_written(here):
    ws, home = here
    (home / ".claude.json").write_text(json.dumps({"mcpServers": {"c": {"command": "x"}}, "other": 1}))
    out = mcp("remove", "c")
    assert out.exit_code == 1 and "run `claude mcp remove c -s user`" in out.output
    assert json.loads((home / ".claude.json").read_text())["other"] == 1


def test_list_and_get_check_each_server(here):
    ws, home = here
    mcp("add", "ok", "-e", "MY_TOKEN=secret", "--", sys.executable, SERVER)
    mcp("add", "broken", "--", "/nonexistent/server")
    mcp("add", "-s", "project", "proj", "--", sys.executable, SERVER)
    workspace_trust(ws, home, grant="--trust-project")  # (untrusted, `mcp list` leaves .mcp.json out: test_trust.py)
    out = mcp("list")
    assert out.exit_code == 0
    lines = out.output.splitlines()
    assert lines[0] == "Checking MCP server health…"
    assert f"ok: {sys.executable} {SERVER} - ✔ Connected" in lines
    assert any(line.startswith("broken: /nonexistent/server - ✘ Failed to connect") and "No such file" in line
               for line in lines)
    assert any(line.startswith("proj: ") and "⏸ Pending approval (add it to enabledMcpjsonServers" in line
               for line in lines)
    got = mcp("get", "ok")
    assert got.exit_code == 0
    assert "  Scope: Local config (private to you in this project)" in got.output
    assert "  Status: ✔ Connected" in got.output and "    MY_TOKEN=***" in got.output
    assert "mcp__ok__add" in got.output and "To remove this server, run: mainsail mcp remove ok -s local" in got.output
    missing = mcp("get", "nope")
    assert missing.exit_code == 1 and 'No MCP server named "nope". Configured servers: ok, broken, proj' in missing.output


def test_list_with_nothing_configured(here):
    assert mcp("list").output == "No MCP servers configured. Use `mainsail mcp add` to add a server.\n"


def plugin(root: Path, name: str, servers: dict) -> Path:
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": name}))
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return root


def test_list_and_get_show_plugin_servers_and_never_start_a_withheld_one(here, tmp_path):
    ws, home = here
    outside = plugin(tmp_path / "outside", "tools", {"srv": {"command": sys.executable, "args": [SERVER]}})
    marker = ws / "ran"  # a withheld server that started would write it
    probe = {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w')"]}
    inside = plugin(ws / "myplug", "myplug", {"probe": probe})
    out = mcp("list", "--plugin-dir", str(outside), "--plugin-dir", "myplug")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert f"plugin:tools:srv: {sys.executable} {SERVER} - ✔ Connected" in lines
    [held] = [line for line in lines if line.startswith("plugin:myplug:probe: ")]
    assert "⏸ Withheld — plugin myplug: its MCP servers" in held and "inside this workspace" in held
    assert not marker.exists()
    got = mcp("get", "--plugin-dir", "myplug", "plugin:myplug:probe")
    assert got.exit_code == 0 and "  Scope: Plugin (--plugin-dir) (" + str(inside / ".mcp.json") + ")" in got.output
    assert "  Status: ⏸ Withheld" in got.output and "To remove" not in got.output and not marker.exists()
    assert mcp("list").output.startswith("No MCP servers configured")  # (plugins only with --plugin-dir)
    claude_place = CliRunner().invoke(cli, ["--plugin-dir", str(outside), "mcp", "get", "plugin:tools:srv"],
                                      catch_exceptions=False)  # (Claude Code's: `claude --plugin-dir DIR mcp ...`)
    assert claude_place.exit_code == 0 and "  Status: ✔ Connected" in claude_place.output
    elsewhere = CliRunner().invoke(cli, ["--plugin-dir", str(outside), "sessions"], catch_exceptions=False)
    assert elsewhere.exit_code == 2 and "--plugin-dir before a command is for `mcp list` and `mcp get` only" in \
        elsewhere.output
    # The person vouches for the workspace (trustedWorkspaces): the same plugin's server is checked like any other.
    (home / ".mainsail").mkdir()
    (home / ".mainsail" / "settings.json").write_text(json.dumps({"trustedWorkspaces": [str(ws)]}))
    out = mcp("list", "--plugin-dir", "myplug")
    assert out.exit_code == 0 and "plugin:myplug:probe: " in out.output and "Withheld" not in out.output
    assert marker.exists()
    missing = mcp("list", "--plugin-dir", "nothere")
    assert missing.exit_code == 1 and "--plugin-dir nothere:" in missing.output and "Traceback" not in missing.output


def record(*servers) -> SessionRecord:
    return SessionRecord(id="s1", model="m", workspace="/tmp", mcp_servers=list(servers))


def srv(name, status, source="local", tools=(), error=None):
    return McpServer(config=McpServerConfig(name=name, command="cmd", source=source), status=status,
                     tools=list(tools), error=error)


def test_slash_mcp_and_system_init_show_the_sessions_servers():
    rec = record(srv("a", McpStatus.CONNECTED, "user", ["mcp__a__x", "mcp__a__y"]),
                 srv("b", McpStatus.FAILED, "dynamic", error="it crashed"),
                 srv("c", McpStatus.UNAPPROVED, "project"))
    lines = session_lines(rec)
    assert lines[0].split() == ["a", "user", "✔", "Connected", "·", "2", "tools"]
    assert "✘ Failed to connect — it crashed" in lines[1] and "⏸ Pending approval" in lines[2]
    assert session_lines(rec, "a") == ["a (cmd): ✔ Connected", "  mcp__a__x", "  mcp__a__y"]
    buf = io.StringIO()
    init = StreamJson(buf.write).init(rec, ["Bash", "mcp__a__x", "mcp__a__y"])
    assert init["mcp_servers"] == [{"name": "a", "status": "connected", "source": "user"},
                                   {"name": "b", "status": "failed", "source": "dynamic"},
                                   {"name": "c", "status": "pending", "source": "project"}]
    assert init["tools"][-2:] == ["mcp__a__x", "mcp__a__y"]


@pytest.mark.parametrize("answer, kept, saved", [
    ("y", {"p": McpStatus.PENDING, "q": McpStatus.PENDING}, {"enabledMcpjsonServers": ["p", "q"]}),
    ("a", {"p": McpStatus.PENDING, "q": McpStatus.PENDING}, {"enableAllProjectMcpServers": True}),
    ("n", {}, {"disabledMcpjsonServers": ["p", "q"]}),
    ("", {}, {"disabledMcpjsonServers": ["p", "q"]}),
])
def test_interactive_mode_asks_about_project_servers_and_keeps_the_answer_as_claude_code(here, answer, kept, saved):
    ws, home = here
    asked = []
    servers = [srv("p", McpStatus.UNAPPROVED, "project"), srv("q", McpStatus.UNAPPROVED, "project")]
    got = approve_project_servers(servers, ws, lambda text: asked.append(text) or answer)
    assert asked and "(y)es / (a)ll" in asked[0]
    assert {s.name: s.status for s in got} == kept
    assert json.loads((ws / ".claude" / "settings.local.json").read_text()) == saved
    again = approve_project_servers(got, ws, lambda text: pytest.fail("asked twice"))
    assert again == got
