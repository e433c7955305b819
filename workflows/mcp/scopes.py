"""The files ``mainsail mcp add`` and ``remove`` change, one per scope (Claude Code's scopes, Mainsail's files).

* ``local`` (the default): ``<workspace>/.mainsail/settings.local.json``: you, in this project;
* ``user``: ``~/.mainsail/settings.json``: you, in every project;
* ``project``: ``<workspace>/.mcp.json``: everyone on the project (checked in; each person approves it).

Claude Code keeps the first two in ``~/.claude.json``, its own state file: Mainsail reads the servers
there but never writes that file (``claude mcp`` owns it). A file is rewritten whole, atomically, with
its other keys kept; a new one is created readable by you alone (it may hold tokens in ``env`` or
``headers``). A ``settings.local.json`` written is then kept out of git as Claude Code keeps its own
(:mod:`workflows.git.ignore`); the write's ``note`` says what was done.
"""

from __future__ import annotations

import os
from pathlib import Path

from workflows.exceptions import McpConfigError
from workflows.mcp.sources import claude_json, read_json
from workflows.models.mcp import McpServerConfig
from workflows.settings.writes import Written, write_settings

__all__ = ["SCOPES", "SCOPE_TEXT", "Written", "entry", "in_claude_json", "record_approval", "remove_server",
           "scope_file", "write_server"]

SCOPES = ("local", "user", "project")
SCOPE_TEXT = {"local": "Local config (private to you in this project)",
              "user": "User config (available in all your projects)",
              "project": "Project config (shared via .mcp.json)",
              "dynamic": "Dynamic config (--mcp-config)",
              "plugin": "Plugin (--plugin-dir)"}


def scope_file(scope: str, workspace: Path, home: Path) -> Path:
    return {"local": Path(workspace) / ".mainsail" / "settings.local.json",
            "user": Path(home) / ".mainsail" / "settings.json",
            "project": Path(workspace) / ".mcp.json"}[scope]


def entry(config: McpServerConfig) -> dict:
    """A server as Claude Code writes it in ``mcpServers``."""
    if config.type == "http":
        return {"type": "http", "url": config.url, "headers": dict(config.headers)}
    return {"type": "stdio", "command": config.command, "args": list(config.args), "env": dict(config.env)}


def write_server(scope: str, workspace: Path, home: Path, name: str, value: dict) -> Written:
    """Add server ``name`` to the scope's file; the file.

    Raises:
        McpConfigError: the scope already has a server of that name, or the file is not a JSON object.
    """
    path = scope_file(scope, workspace, home)
    data = _object(path)
    servers = data.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f"{path}: 'mcpServers' is not an object; fix the file first.")
    if name in servers:
        raise McpConfigError(f"MCP server {name} already exists in {scope} config ({path}). Remove it first: "
                             f"mainsail mcp remove {name} -s {scope}")
    servers[name] = value
    return _write(path, data, workspace, home)


def remove_server(scope: str, workspace: Path, home: Path, name: str) -> Written | None:
    """Remove server ``name`` from the scope's file; the file, or None when it had no such server."""
    path = scope_file(scope, workspace, home)
    data = _object(path)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict) or name not in servers:
        return None
    del servers[name]
    return _write(path, data, workspace, home)


def record_approval(workspace: Path, names: list[str], answer: str, home: Path | None = None) -> Written:
    """A person's answer about the project's ``.mcp.json`` servers ``names``, kept where Claude Code keeps
    it (``.claude/settings.local.json``): ``yes`` approves them, ``all`` every server of the project,
    ``no`` rejects them.

    Raises:
        McpConfigError: that file is not a JSON object.
    """
    path = Path(workspace) / ".claude" / "settings.local.json"
    data = _object(path)
    if answer == "all":
        data["enableAllProjectMcpServers"] = True
    else:
        key = "enabledMcpjsonServers" if answer == "yes" else "disabledMcpjsonServers"
        listed = data.get(key) if isinstance(data.get(key), list) else []
        data[key] = listed + [n for n in names if n not in listed]
    return _write(path, data, workspace, home or Path.home())


def in_claude_json(home: Path, workspace: Path, name: str) -> str | None:
    """Where Claude Code's ``~/.claude.json`` holds server ``name`` (``user`` or ``local``), if it does."""
    try:
        data = read_json(claude_json(home))
    except McpConfigError:
        return None
    if not isinstance(data, dict):
        return None
    project = (data.get("projects") or {}).get(os.path.realpath(workspace)) if isinstance(data.get("projects"), dict) else None
    if isinstance(project, dict) and name in (project.get("mcpServers") or {}):
        return "local"
    if name in (data.get("mcpServers") or {}):
        return "user"
    return None


def _object(path: Path) -> dict:
    data = read_json(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise McpConfigError(f"{path} does not hold a JSON object; fix it or move it aside.")
    return data


def _write(path: Path, data: dict, workspace: Path, home: Path) -> Written:
    return write_settings(path, data, workspace, home)
