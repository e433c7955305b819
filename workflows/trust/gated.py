"""The project's settings that can run code or widen access ("gated"), and what a workspace holds of them.

A workspace's own settings apply only once the person trusted it (:mod:`workflows.trust.decide`); until
then these keys of its **project** files are ignored:

* ``hooks`` (commands run at session events), ``sandbox`` (every key: it can turn the sandbox off or
  open it), ``env`` (variables for every command), ``apiKeyHelper`` and Claude Code's other helper
  commands (``awsAuthRefresh``, ``awsCredentialExport``, ``otelHeadersHelper``);
* ``mcpServers``, ``enableAllProjectMcpServers`` and ``enabledMcpjsonServers`` (approving the project's
  own ``.mcp.json`` servers), and ``.mcp.json``'s servers themselves;
* ``permissions.additionalDirectories`` and every ``permissions.allow`` rule (each one lets a call run
  without asking; Claude Code's trust prompt lists them all as "pre-approves N tool permissions");
* a project command file's ``allowed-tools`` (``.claude/commands/*.md``: its ``!`` lines run unasked under
  them); they apply only in a trusted workspace (:mod:`workflows.engine.commands`).

``permissions.deny`` and ``ask``, ``disabledMcpjsonServers`` and ``disableBypassPermissionsMode`` only
restrict, so they always apply; ``model`` and ``defaultMode`` (never bypassPermissions from a project:
:func:`workflows.permissions.bypass.trusted_default`) too.

The project's files: ``<ws>/.claude/settings.json``, ``<ws>/.mainsail/settings.json``, ``<ws>/.mcp.json``,
and a ``settings.local.json`` (in either folder) that git tracks: a clone brings it, so it is the
repository's, never the user's (:func:`local_is_project`; read from the git index, no git process).
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from workflows.git import index as git_index

__all__ = ["GATED_KEYS", "Gated", "gated_part", "local_is_project", "project_gated", "strip_gated"]

#: Top-level keys gated whole.
GATED_KEYS = ("hooks", "sandbox", "env", "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport",
              "otelHeadersHelper", "mcpServers", "enableAllProjectMcpServers", "enabledMcpjsonServers")
#: Keys inside ``permissions`` gated whole.
GATED_PERMISSIONS = ("allow", "additionalDirectories")
MCP_JSON = ".mcp.json"


def local_is_project(path: Path) -> bool:
    """Whether a ``settings.local.json`` is the repository's: git tracks it, or it (or its folder) is a
    symbolic link, or whether it is tracked cannot be told (fail closed)."""
    path = Path(path)
    if path.is_symlink() or path.parent.is_symlink():
        return True
    if not path.exists():
        return False
    return git_index.tracked(path) != git_index.UNTRACKED


def gated_part(data: Any) -> dict:
    """The gated keys of one settings object (empty when it has none)."""
    if not isinstance(data, dict):
        return {}
    out = {key: copy.deepcopy(data[key]) for key in GATED_KEYS if _set(data.get(key))}
    perms = data.get("permissions")
    if isinstance(perms, dict):
        inner = {key: copy.deepcopy(perms[key]) for key in GATED_PERMISSIONS if _set(perms.get(key))}
        if inner:
            out["permissions"] = inner
    return out


def _set(value: Any) -> bool:
    """Whether a gated key says anything: ``{}``, ``[]``, ``false`` and null grant nothing (not asked about)."""
    return value is not None and value is not False and value != {} and value != []


def strip_gated(data: dict) -> dict:
    """``data`` without its gated keys (a copy; ``data`` is not changed)."""
    out = {key: value for key, value in data.items() if key not in GATED_KEYS}
    perms = data.get("permissions")
    if isinstance(perms, dict):
        out["permissions"] = {key: value for key, value in perms.items() if key not in GATED_PERMISSIONS}
    return out


def key_names(part: dict) -> list[str]:
    """``hooks``, ``permissions.allow``... : the dotted names of a :func:`gated_part`."""
    names = [k for k in part if k != "permissions"]
    names += [f"permissions.{k}" for k in part.get("permissions", {})]
    return names


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
