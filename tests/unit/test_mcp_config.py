"""MCP configuration: Claude Code's server entries, ${VAR} expansion, every source and its scope, the
approval of .mcp.json servers (fail closed), and the errors that name the file and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workflows.exceptions import McpConfigError
from workflows.mcp.sources import load_mcp, read_mcp_config
from workflows.models.mcp import McpStatus, parse_servers
from workflows.sessions.settings_files import load_permission_settings
from workflows.trust.decide import workspace_trust


def parse(raw, env=None):
    return parse_servers(raw, source="dynamic", origin="test", environ=env or {})


def test_claude_codes_entries():
    stdio, http, implicit = parse({
        "files": {"command": "npx", "args": ["-y", "srv"], "env": {"A": "1"}},
        "web": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer t"}},
        "bare": {"url": "http://127.0.0.1:9/mcp"},
    })
    assert (stdio.config.type, stdio.config.command, stdio.config.args, stdio.config.env) == \
        ("stdio", "npx", ["-y", "srv"], {"A": "1"})
    assert (http.config.type, http.config.headers) == ("http", {"Authorization": "Bearer t"})
    assert implicit.config.type == "http" and all(s.status is McpStatus.PENDING for s in (stdio, http, implicit))


def test_variables_are_expanded_and_a_missing_one_fails_that_server_only():
    ok, missing = parse({
        "ok": {"command": "${TOOLS}/srv", "args": ["--root", "${ROOT:-/srv}"], "env": {"T": "${TOKEN}"}},
        "missing": {"type": "http", "url": "https://x/${NOPE}", "headers": {"K": "${ALSO_NOPE}"}},
    }, env={"TOOLS": "/opt/tools", "TOKEN": "t0k"})
    assert ok.config.command == "/opt/tools/srv" and ok.config.args == ["--root", "/srv"]
    assert ok.config.env == {"T": "t0k"} and ok.status is McpStatus.PENDING
    assert missing.status is McpStatus.FAILED
    assert "missing environment variables: NOPE, ALSO_NOPE" in missing.error


def test_an_sdk_server_is_kept_for_its_clients_connection_to_list():
    (s,) = parse({"calc": {"type": "sdk", "name": "calc"}})
    assert s.config.type == "sdk" and s.status is McpStatus.PENDING and "SDK" in s.config.describe()


@pytest.mark.parametrize("kind", ["sse", "ws"])
def test_transports_mainsail_does_not_speak_are_failed_servers_saying_so(kind):
    (s,) = parse({"s": {"type": kind, "url": "http://x"}})
    assert s.status is McpStatus.FAILED and f"transport {kind!r}" in s.error


@pytest.mark.parametrize("raw, message", [
    ([], "'mcpServers' must be an object"),
    ({"a b": {"command": "x"}}, "MCP server name 'a b' is not valid"),
    ({"a__b": {"command": "x"}}, "cannot contain '__'"),
    ({"s": "npx srv"}, "MCP server 's' must be an object"),
    ({"s": {"args": ["x"]}}, "'command' must be a non-empty string"),
    ({"s": {"command": "x", "args": "a b"}}, "'args' must be a list of strings"),
    ({"s": {"command": "x", "env": {"A": 1}}}, "'env' must be an object of strings"),
    ({"s": {"type": "http", "url": "ftp://x"}}, "starts with http:// or https://"),
    ({"s": {"type": "grpc", "url": "http://x"}}, "'type' is \"grpc\""),
])
def test_malformed_entries_name_the_origin_the_server_and_the_fix(raw, message):
    with pytest.raises(McpConfigError, match="test") as err:
        parse(raw)
    assert message in str(err.value)


@pytest.fixture
def places(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    return ws, home


def write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def servers_of(ws, home, flags=None, strict=False, trust="--trust-project"):
    """As a new session's front door reads them; ``trust``: who vouches for the workspace (None: nobody)."""
    trusted = workspace_trust(ws, home, grant=trust)
    files = load_permission_settings(ws, home, trusted=trusted.trusted)
    return load_mcp(ws, home, files.mcp, flags=flags, strict=strict, environ={},
                    trusted=trusted.servers if trusted.trusted else None), files


def entry(cmd):
    return {"command": cmd}


def test_every_source_with_its_scope_and_precedence(places):
    ws, home = places
    write(home / ".claude.json", {"mcpServers": {"u": entry("claude-user"), "both": entry("user")},
                                  "projects": {str(ws.resolve()): {"mcpServers": {"l": entry("claude-local")}}}})
    write(home / ".mainsail" / "settings.json", {"mcpServers": {"mu": entry("mainsail-user")}})
    write(ws / ".mainsail" / "settings.local.json", {"mcpServers": {"both": entry("local")},
                                                      "enabledMcpjsonServers": ["p"]})
    write(ws / ".mcp.json", {"mcpServers": {"p": entry("project"), "both": entry("project")}})
    load, _ = servers_of(ws, home, flags=['{"mcpServers": {"d": {"command": "dyn"}}}'])
    got = [(s.name, s.config.source, s.config.command) for s in load.servers]
    assert got == [("u", "user", "claude-user"), ("mu", "user", "mainsail-user"), ("l", "local", "claude-local"),
                   ("both", "local", "local"), ("p", "project", "project"), ("d", "dynamic", "dyn")]
    strict, _ = servers_of(ws, home, flags=['{"mcpServers": {"d": {"command": "dyn"}}}'], strict=True)
    assert [s.name for s in strict.servers] == ["d"]


def test_project_servers_start_only_once_approved_by_the_user(places):
    ws, home = places
    write(ws / ".mcp.json", {"mcpServers": {"a": entry("a"), "b": entry("b"), "c": entry("c")}})
    load, _ = servers_of(ws, home)
    assert {s.name: s.status for s in load.servers} == {n: McpStatus.UNAPPROVED for n in "abc"}
    assert "enabledMcpjsonServers" in load.servers[0].error

    # The repository's own settings approve its servers only once the workspace is trusted.
    write(ws / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    load, _ = servers_of(ws, home, trust=None)
    assert load.servers == []  # (untrusted: none of its servers at all; the trust warning names them)
    load, _ = servers_of(ws, home)
    assert all(s.status is McpStatus.PENDING for s in load.servers)
    write(ws / ".claude" / "settings.json", {})

    write(ws / ".claude" / "settings.local.json", {"enabledMcpjsonServers": ["a"], "disabledMcpjsonServers": ["c"]})
    load, _ = servers_of(ws, home)
    assert {s.name: s.status for s in load.servers} == {"a": McpStatus.PENDING, "b": McpStatus.UNAPPROVED}

    write(home / ".claude" / "settings.json", {"enableAllProjectMcpServers": True})
    load, _ = servers_of(ws, home)
    assert {s.name: s.status for s in load.servers} == {"a": McpStatus.PENDING, "b": McpStatus.PENDING}


def test_claude_codes_own_approvals_in_its_state_file_count(places):
    ws, home = places
    write(ws / ".mcp.json", {"mcpServers": {"a": entry("a")}})
    write(home / ".claude.json", {"projects": {str(ws.resolve()): {"enabledMcpjsonServers": ["a"]}}})
    load, _ = servers_of(ws, home)
    assert load.servers[0].status is McpStatus.PENDING


def test_mcp_servers_in_other_settings_files_are_ignored_with_a_warning(places):
    ws, home = places
    write(ws / ".claude" / "settings.json", {"mcpServers": {"x": entry("x")}})
    load, files = servers_of(ws, home)
    assert load.servers == []
    assert any(".claude/settings.json: 'mcpServers' ignored here" in w for w in files.warnings)


def test_an_unreadable_claude_state_file_is_only_a_warning_but_a_bad_mcp_json_stops(places):
    ws, home = places
    (home / ".claude.json").write_text("{not json")
    load, _ = servers_of(ws, home)
    assert any("Its MCP servers are left out" in w for w in load.warnings)
    (ws / ".mcp.json").write_text('{"mcpServers": {"a": ')
    with pytest.raises(McpConfigError, match=r"Invalid JSON in .*\.mcp\.json, line 1"):
        servers_of(ws, home)


def test_mcp_config_flag_values(tmp_path):
    f = tmp_path / "servers.json"
    f.write_text('{"mcpServers": {"s": {"command": "x"}}}')
    assert [s.name for s in read_mcp_config(str(f), {})] == ["s"]
    with pytest.raises(McpConfigError, match="--mcp-config .*nope.json: cannot read it"):
        read_mcp_config(str(tmp_path / "nope.json"), {})
    with pytest.raises(McpConfigError, match=r"--mcp-config \(inline JSON\): invalid JSON"):
        read_mcp_config('{"mcpServers": ', {})
    with pytest.raises(McpConfigError, match='an MCP configuration is an object like {"mcpServers"'):
        read_mcp_config('{"mcpServers": []}', {})
