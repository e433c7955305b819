"""What a workspace holds of the gated settings (the project's settings that can run code or widen access).

Which keys are gated, and which files are the project's, is :mod:`workflows.settings.gated`; this module
gathers them from a workspace's project files, ``.mcp.json`` and its command files' ``allowed-tools`` into one
:class:`Gated`, whose digest the trust decision (:mod:`workflows.trust.decide`) records.

The project's files: ``<ws>/.claude/settings.json``, ``<ws>/.mainsail/settings.json``, ``<ws>/.mcp.json``,
and a ``settings.local.json`` (in either folder) that git tracks: a clone brings it, so it is the
repository's, never the user's (:func:`~workflows.settings.gated.local_is_project`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from workflows.settings.gated import gated_part, key_names, local_is_project

__all__ = ["MCP_JSON", "Gated", "command_grants", "project_files", "project_gated"]

MCP_JSON = ".mcp.json"


class Gated:
    """What a workspace's project files hold of the gated settings, by file (relative to the workspace)."""

    def __init__(self, parts: dict[str, dict]) -> None:
        self.parts = parts  # {".claude/settings.json": {"hooks": ...}, ".mcp.json": {"mcpServers": {...}}}

    def __bool__(self) -> bool:
        return bool(self.parts)

    def digest(self) -> str:
        """The content hash trust is recorded for: it changes when any gated value of any project file does."""
        text = json.dumps(self.parts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def mcp_servers(self) -> dict:
        servers = self.parts.get(MCP_JSON, {}).get("mcpServers")
        return servers if isinstance(servers, dict) else {}

    def summary(self) -> str:
        """``.claude/settings.json (hooks, sandbox), .mcp.json (MCP servers: files)``."""
        out = []
        for rel, part in self.parts.items():
            if rel == MCP_JSON:
                out.append(f"{rel} (MCP servers: {', '.join(self.mcp_servers()) or 'none'})")
            else:
                out.append(f"{rel} ({', '.join(key_names(part))})")
        return ", ".join(out)


def project_files(workspace: Path) -> list[Path]:
    """The workspace's settings files that are the project's (see the module docstring), in layer order."""
    ws = Path(workspace)
    files = [ws / ".claude" / "settings.json", ws / ".mainsail" / "settings.json"]
    files += [p for p in (ws / ".claude" / "settings.local.json", ws / ".mainsail" / "settings.local.json")
              if local_is_project(p)]
    return files


def project_gated(workspace: Path) -> Gated:
    """The gated settings of the workspace's project files and ``.mcp.json``.

    A file that cannot be read or is not JSON counts with its raw bytes' hash: the session will refuse to
    start over it anyway (the settings loader says why), and any change to it changes the hash.
    """
    ws = Path(workspace)
    parts: dict[str, dict] = {}
    for path in [*project_files(ws), ws / MCP_JSON]:
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            continue
        except OSError:
            parts[str(path.relative_to(ws))] = {"unreadable": True}
            continue
        rel = str(path.relative_to(ws))
        try:
            data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            parts[rel] = {"unparsed": hashlib.sha256(raw).hexdigest()}
            continue
        if rel == MCP_JSON:
            servers = data.get("mcpServers") if isinstance(data, dict) else data
            if servers:
                parts[rel] = {"mcpServers": servers}
            continue
        part = gated_part(data)
        if part:
            parts[rel] = part
    parts.update(command_grants(ws))
    return Gated(parts)


def command_grants(workspace: Path) -> dict[str, dict]:
    """The project's command files (``.claude/commands/*.md``) that pre-approve tools (``allowed-tools``), by
    file: a command's ``!`` lines run unasked under them, so they count as gated content too."""
    from workflows.commands.definitions import CommandSet, _load_folder

    found = _load_folder(Path(workspace) / ".claude" / "commands", "project", CommandSet())
    out = {}
    for definition in found.values():
        if definition.allowed_tools:
            try:
                rel = os.path.relpath(definition.path, workspace)
            except ValueError:
                rel = definition.path
            out[rel] = {"allowed-tools": list(definition.allowed_tools)}
    return out
