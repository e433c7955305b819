"""Every place an MCP server can be configured, read into one list for a new session.

Scopes, as in Claude Code (a name in several: local beats project beats user; ``--mcp-config``
beats them all; ``--strict-mcp-config`` keeps only that, plugins' servers left out too):

* ``user``: ``~/.claude.json``'s ``mcpServers`` (where ``claude mcp add -s user`` writes) and
  ``~/.mainsail/settings.json``'s (``mainsail mcp add -s user``);
* ``local``: ``~/.claude.json``'s ``projects[<workspace>].mcpServers`` (``claude mcp add``) and
  ``.mainsail/settings.local.json``'s (``mainsail mcp add``);
* ``project``: the workspace's ``.mcp.json``, checked into the repository, so a server there starts
  only once the user approved it (:mod:`workflows.mcp.settings`); otherwise it is kept as
  ``unapproved`` and never started (fail closed); and only in a trusted workspace, with the command
  that was trusted (:mod:`workflows.mcp.trusted`);
* ``plugin``: a ``--plugin-dir`` plugin's ``.mcp.json`` (or its manifest's ``mcpServers``), named
  ``plugin:PLUGIN:SERVER`` (:mod:`workflows.plugins.load`);
* ``dynamic``: ``--mcp-config`` (a file or a JSON string); with ``--strict-mcp-config`` only these.

A file that is not JSON, or a malformed server, stops the session before it starts with the file
and the fix; Claude Code's own ``~/.claude.json`` being unreadable is only a warning (it is Claude
Code's state file, not Mainsail's configuration).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from workflows.mcp.settings import McpSettings
from workflows.mcp.trusted import check_servers
from workflows.models.mcp import McpConfigError, McpServer, McpStatus, parse_servers

__all__ = ["McpFlags", "McpLoad", "claude_json", "load_mcp", "read_json", "read_mcp_config"]

#: Listing order of the scopes (``system/init``, ``mcp list``) and, separately, which wins a name.
ORDER = ("user", "local", "project", "plugin", "dynamic")
PRECEDENCE = {"user": 0, "project": 1, "local": 2, "plugin": 3, "dynamic": 4}  # (a plugin's are plugin:P:S)


@dataclass(frozen=True)
class McpFlags:
    """Claude Code's ``--mcp-config`` values (files or JSON) and ``--strict-mcp-config``."""

    configs: tuple[str, ...] = ()
    strict: bool = False


@dataclass
class McpLoad:
    servers: list[McpServer] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def claude_json(home: Path) -> Path:
    """Claude Code's state file, which holds its user- and local-scope MCP servers."""
    return Path(home) / ".claude.json"


def load_mcp(workspace: Path, home: Path, settings: McpSettings, *, flags: list[str] | None = None,
             strict: bool = False, environ: Mapping[str, str] | None = None,
             trusted: Mapping[str, object] | None = None, plugins: list[McpServer] | None = None) -> McpLoad:
    """The servers a new session in ``workspace`` gets (see the module docstring).

    ``flags``: the ``--mcp-config`` values; ``strict``: only those (``--strict-mcp-config``).
    ``trusted``: the ``.mcp.json`` entries the person trusted, by name
    (:attr:`workflows.trust.decide.WorkspaceTrust.servers`); None: the workspace is not trusted, so none of
    its ``.mcp.json`` servers is kept (:func:`workflows.mcp.trusted.check_servers`). ``plugins``: the
    ``--plugin-dir`` plugins' servers that passed their trust decision (:func:`workflows.plugins.plugin_servers`).

    Raises:
        McpConfigError: a malformed ``.mcp.json``, ``--mcp-config`` or settings server.
    """
    env = os.environ if environ is None else environ
    out = McpLoad()
    found: list[McpServer] = []
    approvals = McpSettings(enabled=list(settings.enabled), disabled=list(settings.disabled),
                            enable_all=settings.enable_all)
    if not strict:
        state = _claude_state(home, out.warnings)
        ws = os.path.realpath(workspace)
        project = state.get("projects", {}).get(ws) if isinstance(state.get("projects"), dict) else None
        origin = str(claude_json(home))
        found += parse_servers(state.get("mcpServers"), source="user", origin=origin, environ=env)
        if isinstance(project, dict):
            found += parse_servers(project.get("mcpServers"), source="local", origin=f"{origin} [project: {ws}]",
                                   environ=env)
            approvals.add_approvals(project, f"{origin} [project: {ws}]")
        found += settings.servers
        found += _project_servers(Path(workspace), approvals, env, trusted)
        found += plugins or ()  # (Claude Code starts none of a plugin's servers under --strict-mcp-config either)
    for value in flags or ():
        found += read_mcp_config(value, env)
    out.servers = _merge(found)
    return out


def _project_servers(workspace: Path, approvals: McpSettings, env: Mapping[str, str],
                     trusted: Mapping[str, object] | None) -> list[McpServer]:
    path = workspace / ".mcp.json"
    data = read_json(path)
    if data is None:
        return []
    entries = _mcp_servers(data, str(path))
    servers = parse_servers(entries, source="project", origin=str(path), environ=env)
    out = []
    for server in servers:
        decided = approvals.approves(server.name)
        if decided is False:
            continue  # rejected: as if it were not there (Claude Code does not list it either)
        if decided is None and server.status is McpStatus.PENDING:
            server.status = McpStatus.UNAPPROVED
            server.error = (f"{path} is part of the project, so its servers start only once you approve them: add "
                            f"\"enabledMcpjsonServers\": [\"{server.name}\"] (or \"enableAllProjectMcpServers\": "
                            "true) to .claude/settings.local.json")
        out.append(server)
    return check_servers(out, entries, trusted, str(path))


def read_mcp_config(value: str, environ: Mapping[str, str]) -> list[McpServer]:
    """The servers of one ``--mcp-config`` value: a JSON object, or the path of a file holding one.

    Raises:
        McpConfigError: not JSON, not ``{"mcpServers": {...}}``, a file that cannot be read.
    """
    if value.lstrip().startswith("{"):
        origin, text = "--mcp-config (inline JSON)", value
    else:
        origin = f"--mcp-config {value}"
        try:
            text = Path(value).read_text(encoding="utf-8")
        except OSError as exc:
            raise McpConfigError(f"{origin}: cannot read it ({exc.strerror or exc}). Give a file holding "
                                 '{"mcpServers": {...}}, or the JSON itself.') from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"{origin}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.") from None
    return parse_servers(_mcp_servers(data, origin), source="dynamic", origin=origin, environ=environ)


def _mcp_servers(data: Any, origin: str) -> Any:
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise McpConfigError(f'{origin}: an MCP configuration is an object like {{"mcpServers": {{"name": '
                             '{"command": "npx", "args": ["-y", "server"]}}}.')
    return data.get("mcpServers", {})


def read_json(path: Path) -> Any:
    """A JSON file's value; None when it does not exist or is empty.

    Raises:
        McpConfigError: it cannot be read or is not JSON.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"Cannot read {path}: {getattr(exc, 'strerror', None) or exc}. Fix it or move it "
                             "aside.") from None
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise McpConfigError(f"Invalid JSON in {path}, line {exc.lineno}, column {exc.colno}: {exc.msg}. Fix the "
                             "file or move it aside.") from None


def _claude_state(home: Path, warnings: list[str]) -> dict:
    """``~/.claude.json``, or {} with a warning when it cannot be read (Claude Code's file, not ours)."""
    path = claude_json(home)
    try:
        data = read_json(path)
    except McpConfigError as exc:
        warnings.append(f"{exc} Its MCP servers are left out.")
        return {}
    return data if isinstance(data, dict) else {}


def _merge(found: list[McpServer]) -> list[McpServer]:
    """One server per name (the higher scope wins), listed user, local, project, dynamic."""
    chosen: dict[str, McpServer] = {}
    for server in found:
        old = chosen.get(server.name)
        if old is None or PRECEDENCE[server.config.source] >= PRECEDENCE[old.config.source]:
            chosen.pop(server.name, None)  # listed where the winning entry was read
            chosen[server.name] = server
    return sorted(chosen.values(), key=lambda s: ORDER.index(s.config.source))
