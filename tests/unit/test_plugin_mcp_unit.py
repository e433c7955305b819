"""A plugin's MCP servers (issue 28, item 9): the trust decision they share with its hooks, their names, and
``${CLAUDE_PLUGIN_ROOT}``."""

from __future__ import annotations

import json

import pytest

from workflows.mcp.settings import McpSettings
from workflows.mcp.sources import load_mcp
from workflows.mcp.tools import full_name
from workflows.models.mcp import McpConfigError
from workflows.plugins import load_plugins, plugin_hooks, plugin_servers

SERVER = {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv", "args": ["--root", "${CLAUDE_PLUGIN_ROOT}"],
          "env": {"ROOT": "${CLAUDE_PLUGIN_ROOT}"}}


def plugin(root, mcp: dict | None = None, manifest: dict | None = None):
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "pl", **(manifest or {})}))
    if mcp is not None:
        (root / ".mcp.json").write_text(json.dumps(mcp))
    return root


def test_an_untrusted_workspaces_plugin_starts_no_server_and_says_why(tmp_path):
    """A plugin inside the workspace, the workspace not vouched for: no server, a warning naming the plugin, its
    file and the fix, and the same decision as for its hooks; vouched for, the server is kept."""
    ws = tmp_path / "ws"
    plugin(ws / "plug", {"mcpServers": {"srv": SERVER}})
    (ws / "plug" / "hooks").mkdir()
    (ws / "plug" / "hooks" / "hooks.json").write_text('{"hooks": {}}')
    plugins = load_plugins(["plug"], str(ws))
    servers, warnings = plugin_servers(plugins, str(ws), vouched=False, environ={})
    assert servers == []
    assert warnings == [f"plugin pl: its MCP servers ({ws / 'plug' / '.mcp.json'}) are not run: the plugin is inside "
                        "this workspace, so its MCP servers are the project's code; run again with --trust-project "
                        "to run them."]
    assert len(plugin_hooks(plugins, str(ws), vouched=False)[1]) == 1
    servers, warnings = plugin_servers(plugins, str(ws), vouched=True, environ={})
    assert [s.name for s in servers] == ["plugin:pl:srv"] and warnings == []


def test_a_plugin_outside_the_workspace_is_named_by_the_person(tmp_path):
    """Elsewhere, its servers are kept as Claude Code names them, ``${CLAUDE_PLUGIN_ROOT}`` replaced everywhere,
    and they join the session's servers as source ``plugin`` (not under ``--strict-mcp-config``, as in Claude Code)."""
    root = plugin(tmp_path / "plug", {"mcpServers": {"srv": SERVER}})
    plugins = load_plugins([str(root)], str(tmp_path))
    servers, _ = plugin_servers(plugins, str(tmp_path / "ws"), vouched=False, environ={})
    (ws := tmp_path / "ws").mkdir()
    assert load_mcp(ws, tmp_path / "home", McpSettings(), strict=True, environ={}, plugins=servers).servers == []
    loaded = load_mcp(ws, tmp_path / "home", McpSettings(), environ={}, plugins=servers)
    config = loaded.servers[0].config
    assert (config.name, config.source) == ("plugin:pl:srv", "plugin")
    assert (config.command, config.args, config.env) == (f"{root}/bin/srv", ["--root", str(root)], {"ROOT": str(root)})
    assert full_name(config.name, "get-it") == "mcp__plugin_pl_srv__get-it"


def test_the_manifests_mcp_servers_and_a_malformed_file(tmp_path):
    """No ``.mcp.json``: the manifest's ``mcpServers``; a ``.mcp.json`` that is not servers stops with its path."""
    root = plugin(tmp_path / "a", manifest={"mcpServers": {"m": {"command": "x"}}})
    servers, _ = plugin_servers(load_plugins([str(root)], str(tmp_path)), str(tmp_path / "ws"), False, {})
    assert [(s.name, s.config.origin) for s in servers] == [("plugin:pl:m", str(root / ".claude-plugin/plugin.json"))]
    bad = plugin(tmp_path / "b", {"mcpServers": ["x"]})
    with pytest.raises(McpConfigError, match=str(bad / ".mcp.json")):
        plugin_servers(load_plugins([str(bad)], str(tmp_path)), str(tmp_path / "ws"), False, {})


def test_a_session_in_a_workspace_with_nothing_gated_still_needs_the_vouch(tmp_path):
    """Through the session's setup: a workspace holding only the plugin (no settings to trust) starts its server
    with ``--trust-project`` and not without it, where the warning says why."""
    from workflows.sessions.setup import session_options
    from workflows.settings import Settings

    ws, home = tmp_path / "ws", tmp_path / "home"
    plugin(ws / "plug", {"mcpServers": {"srv": {"command": "x"}}})
    home.mkdir()
    opts, warnings = session_options(ws, Settings(), home=home, cwd=str(ws), plugin_dirs=["plug"], environ={})
    assert opts["mcp_servers"] == [] and any("its MCP servers" in w and "--trust-project" in w for w in warnings)
    opts, warnings = session_options(ws, Settings(), home=home, cwd=str(ws), plugin_dirs=["plug"], environ={},
                                     trust="--trust-project")
    assert [s.name for s in opts["mcp_servers"]] == ["plugin:pl:srv"]
    assert not any("its MCP servers" in w for w in warnings)
