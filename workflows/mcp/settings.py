"""The MCP keys of the settings files: who approved which ``.mcp.json`` servers, and Mainsail's own servers.

* ``enabledMcpjsonServers`` / ``disabledMcpjsonServers`` (lists of names) and
  ``enableAllProjectMcpServers`` (true/false) approve or reject the project's ``.mcp.json``
  servers, as in Claude Code. They count only in the user's own files (``~/.claude``,
  ``~/.mainsail``, the ``settings.local.json`` files, ``--settings``): a repository's checked-in
  ``settings.json`` cannot approve the servers its own ``.mcp.json`` starts (Claude Code ignores
  them there too). A rejection wins over an approval.
* ``mcpServers`` in ``~/.mainsail/settings.json`` (scope ``user``) and
  ``.mainsail/settings.local.json`` (scope ``local``): where ``mainsail mcp add`` writes. Claude
  Code keeps those scopes in ``~/.claude.json``, which :mod:`workflows.mcp.sources` reads too. In
  any other settings file the key is ignored, with a warning naming the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from workflows.models.mcp import McpConfigError, McpServer, parse_servers

__all__ = ["McpSettings", "apply_mcp_keys"]

APPROVAL_KEYS = ("enabledMcpjsonServers", "disabledMcpjsonServers", "enableAllProjectMcpServers")


@dataclass
class McpSettings:
    """What the settings files say about MCP servers (see the module docstring)."""

    enabled: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)
    enable_all: bool = False
    servers: list[McpServer] = field(default_factory=list)  # user's first, then local's

    def approves(self, name: str) -> bool | None:
        """True: approved; False: rejected; None: nobody decided (it is not started)."""
        if name in self.disabled:
            return False
        if self.enable_all or name in self.enabled:
            return True
        return None

    def add_approvals(self, data: Mapping[str, Any], origin: str) -> None:
        """Take the approval keys of one object (a settings file, ``~/.claude.json``'s project entry).

        Raises:
            McpConfigError: a key of the wrong type.
        """
        for key, bucket in (("enabledMcpjsonServers", self.enabled), ("disabledMcpjsonServers", self.disabled)):
            names = data.get(key)
            if names is None:
                continue
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise McpConfigError(f"{origin}: '{key}' must be a list of server names like [\"github\"].")
            bucket.extend(n for n in names if n not in bucket)
        every = data.get("enableAllProjectMcpServers")
        if every is not None:
            if not isinstance(every, bool):
                raise McpConfigError(f"{origin}: 'enableAllProjectMcpServers' must be true or false.")
            self.enable_all = every


def apply_mcp_keys(out: McpSettings, data: dict, origin: str, source: str, path: Path,
                   warnings: list[str], environ: Mapping[str, str] | None = None) -> None:
    """Layer one settings file's MCP keys onto ``out`` (``source``: user, project, local or flag).

    Raises:
        McpConfigError: a malformed key (the message names the file and the server).
    """
    if any(k in data for k in APPROVAL_KEYS):
        # (A project file's approvals reach here only once its workspace is trusted: workflows.trust.gated.)
        out.add_approvals(data, origin)
    if "mcpServers" not in data:
        return
    scope = _own_scope(path, source)
    if scope is None:
        warnings.append(f"{origin}: 'mcpServers' ignored here: MCP servers are read from .mcp.json (project), "
                        "~/.claude.json (Claude Code's user and local scopes), ~/.mainsail/settings.json and "
                        ".mainsail/settings.local.json (`mainsail mcp add`), and --mcp-config.")
        return
    out.servers.extend(parse_servers(data["mcpServers"], source=scope, origin=origin,
                                     environ=os.environ if environ is None else environ))


def _own_scope(path: Path, source: str) -> str | None:
    """The scope of ``mcpServers`` in this file: Mainsail's own user and local files only."""
    if path.parent.name != ".mainsail":
        return None
    if source == "user" and path.name == "settings.json":
        return "user"
    if source == "local" and path.name == "settings.local.json":
        return "local"
    return None
