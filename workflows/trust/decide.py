"""Whether a workspace is trusted for a new session: :func:`workspace_trust`, the one decision every front door asks.

In order:

1. nothing gated in the workspace (:mod:`workflows.trust.gated`): nothing to decide;
2. ``~/.mainsail/trust.json`` holds a record for it with the same content hash: trusted;
3. the front door vouches for it (``--trust-project``, an API token made with ``--trust-project``, a
   schedule made with either): trusted, and recorded for the current hash;
4. ``trustedWorkspaces`` in ``~/.mainsail/settings.json`` lists it (or a folder above it): trusted,
   whatever its settings become (each ``.mcp.json`` server still starts only with the command that was
   recorded for it: :func:`workflows.mcp.trusted.check_servers`);
5. a person is there to ask (interactive mode): the trust prompt; yes records it;
6. otherwise untrusted: the gated settings are ignored, with one warning naming the files, the keys,
   what changed since the workspace was last trusted, and the fix.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from workflows.exceptions import ConfigurationError
from workflows.settings.gated import key_names
from workflows.trust.gated import MCP_JSON, Gated, project_gated
from workflows.trust.store import TrustStore

__all__ = ["WorkspaceTrust", "changes", "listed", "prompt_lines", "workspace_trust"]

FIX = ("If you trust this folder, run again with --trust-project (trust is recorded for these settings and asked "
       "again when they change), answer yes to the trust prompt in interactive mode, or list the folder in "
       "\"trustedWorkspaces\" in ~/.mainsail/settings.json.")


@dataclass
class WorkspaceTrust:
    """The answer for one workspace. ``servers``: the ``.mcp.json`` servers the person vouched for, by name
    (None: none; an untrusted workspace's servers never start)."""

    trusted: bool
    gated: Gated
    how: str  # nothing, recorded, granted, listed, prompt, untrusted
    servers: dict | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def opens(self) -> bool:
        """Whether the project's gated keys may be read now: trusted, for content that has some (a workspace
        with nothing gated when this was decided still gets none of what appears there meanwhile)."""
        return self.trusted and self.how != "nothing"

    @property
    def mcp_trusted(self) -> dict | None:
        """The ``.mcp.json`` entries that may start (:func:`workflows.mcp.trusted.check_servers`); None: none."""
        return self.servers if self.trusted else None

    def check_unchanged(self, workspace: Path) -> None:
        """After the settings were read: they are still the content trust was decided for.

        Raises:
            ConfigurationError: they changed meanwhile (the session does not start; starting again decides anew).
        """
        if self.opens and project_gated(Path(workspace)).digest() != self.gated.digest():
            raise ConfigurationError(f"The settings of workspace {workspace} changed while the session was starting, "
                                     "so what was trusted is not what was read. Start it again.")


def workspace_trust(workspace: Path, home: Path, *, grant: str | None = None,
                    ask: Callable[[list[str]], bool] | None = None) -> WorkspaceTrust:
    """See the module docstring. ``grant``: who vouches for the workspace (``--trust-project``, a token's
    name); ``ask(lines)``: show the trust prompt and say whether the person answered yes.

    Raises:
        ConfigurationError: ``trust.json`` or ``trustedWorkspaces`` cannot be read.
    """
    ws = os.path.realpath(workspace)
    gated = project_gated(Path(ws))
    if not gated:
        return WorkspaceTrust(True, gated, "nothing", servers={})
    store = TrustStore(home)
    record = store.get(ws)
    digest = gated.digest()
    if record is not None and record.hash == digest:
        return WorkspaceTrust(True, gated, "recorded", servers=gated.mcp_servers())
    if grant:
        return WorkspaceTrust(True, gated, "granted", servers=gated.mcp_servers(),
                              warnings=_record(store, ws, gated, grant))
    if listed(ws, home):
        before = Gated(record.content).mcp_servers() if record is not None else {}
        return WorkspaceTrust(True, gated, "listed", servers=before)
    changed = changes(record.content, gated) if record is not None else []
    if ask is not None and ask(prompt_lines(ws, gated, changed)):
        return WorkspaceTrust(True, gated, "prompt", servers=gated.mcp_servers(),
                              warnings=_record(store, ws, gated, "the trust prompt"))
    since = (f" They changed since you trusted it: {'; '.join(changed)}." if changed else "")
    return WorkspaceTrust(False, gated, "untrusted", warnings=[
        f"Workspace {ws} is not trusted, so its own settings that can run commands or widen access were ignored: "
        f"{gated.summary()}.{since} {FIX}"])


def _record(store: TrustStore, ws: str, gated: Gated, by: str) -> list[str]:
    """Record the trust just given; a file that cannot be written (a read-only HOME on a server) leaves it
    for this session only, with a warning, rather than failing the session it was given for."""
    try:
        store.put(ws, gated.digest(), gated.parts, by)
    except OSError as exc:
        return [f"Could not record the trust of workspace {ws} in {store.path} ({exc.strerror or exc}): it holds "
                "for this session only."]
    return []


def vouches(trusted: WorkspaceTrust, workspace: str, home: Path, grant: str | None = None) -> bool:
    """Whether the person vouches now for everything in ``workspace`` (``grant``: ``--trust-project`` or a token
    made with it; the trust prompt; ``trustedWorkspaces``), as a plugin inside it needs for its hooks and MCP
    servers (:func:`workflows.plugins.withheld`). A trust recorded earlier covers the project settings it hashed
    only. (A workspace with no gated settings trusts "nothing": a grant or ``trustedWorkspaces`` still vouch.)"""
    return trusted.how in ("granted", "prompt", "listed") or bool(grant) or listed(workspace, home)


def listed(workspace: str, home: Path) -> bool:
    """Whether ``trustedWorkspaces`` in ``~/.mainsail/settings.json`` names ``workspace`` or a folder above it.

    Raises:
        ConfigurationError: the file is not JSON, or the key is not a list of paths.
    """
    path = Path(home) / ".mainsail" / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False  # (the settings loader reports this file's problem and stops the session)
    value = data.get("trustedWorkspaces") if isinstance(data, dict) else None
    if value is None:
        return False
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigurationError(f"{path}: 'trustedWorkspaces' must be a list of folder paths like "
                                 '["~/src/myproject"], not ' + json.dumps(value)[:60] + ".")
    for entry in value:
        entry = entry.strip()
        expanded = str(Path(home) / entry[2:]) if entry.startswith("~/") else str(home) if entry == "~" else entry
        if not os.path.isabs(expanded):
            raise ConfigurationError(f"{path}: 'trustedWorkspaces' holds {json.dumps(entry)}, which is not an "
                                     "absolute path; write the folder's full path, or start it with ~/.")
        full = os.path.realpath(expanded)
        if workspace == full or workspace.startswith(full.rstrip("/") + "/"):
            return True
    return False


def _describe(server) -> str:
    if not isinstance(server, dict):
        return json.dumps(server)[:80]
    if "url" in server and "command" not in server:
        return f"{server.get('url')} (HTTP)"
    return " ".join(str(p) for p in [server.get("command", ""), *(server.get("args") or [])])


def server_change(name: str, before, after) -> str | None:
    """What changed in one ``.mcp.json`` server between two of its entries (None: nothing)."""
    if before == after:
        return None
    if before is None:
        return f"MCP server {name} was added ({_describe(after)})"
    if after is None:
        return f"MCP server {name} was removed"
    if _describe(before) != _describe(after):
        return f"MCP server {name}: its command was `{_describe(before)}`, now `{_describe(after)}`"
    what = [k for k in ("env", "headers", "type", "cwd") if (before or {}).get(k) != (after or {}).get(k)]
    return f"MCP server {name}: its {', '.join(what) or 'configuration'} changed"


def changes(before: dict, gated: Gated) -> list[str]:
    """What differs between the content a workspace was trusted for and its gated settings now."""
    out = []
    now = gated.parts
    for rel in sorted(set(before) | set(now), key=lambda r: (r == MCP_JSON, r)):
        if rel == MCP_JSON:
            old, new = Gated(before).mcp_servers(), gated.mcp_servers()
            out += [c for n in sorted(set(old) | set(new)) if (c := server_change(n, old.get(n), new.get(n)))]
            continue
        old_part, new_part = before.get(rel, {}), now.get(rel, {})
        keys = sorted(set(key_names(old_part)) | set(key_names(new_part)))
        differ = [k for k in keys if _value(old_part, k) != _value(new_part, k)]
        if differ:
            out.append(f"{', '.join(differ)} in {rel}")
    return out


def _value(part: dict, dotted: str):
    for key in dotted.split("."):
        part = part.get(key) if isinstance(part, dict) else None
    return part


def prompt_lines(workspace: str, gated: Gated, changed: list[str]) -> list[str]:
    """Claude Code's trust prompt, in Mainsail's words: the folder, what its settings would do, the question."""
    lines = ["Accessing workspace:", f"  {workspace}", "",
             "Quick safety check: Is this a project you created or one you trust? (Like your own code, a "
             "well-known open source project, or work from your team). If not, take a moment to review what's in "
             "this folder first.",
             "Mainsail will be able to read, edit, and execute files here.", ""]
    for rel, part in gated.parts.items():
        if rel == MCP_JSON:
            for name, server in gated.mcp_servers().items():
                lines.append(f"  ! {rel} starts MCP server {name}: {_describe(server)}")
            continue
        for key in key_names(part):
            lines.append(f"  ! {rel}: {_KEY_TEXT.get(key, key)}")
    if changed:
        lines += ["", "Changed since you last trusted it:", *[f"  - {c}" for c in changed]]
    lines += ["", "These will apply without asking. Only proceed if you trust this configuration.",
              "Security guide: docs/security.md (Workspace trust)"]
    return lines


_KEY_TEXT = {"hooks": "hooks that can run commands without asking",
             "sandbox": "sandbox settings (it can turn the sandbox off or open it)",
             "env": "environment variables for every command",
             "permissions.allow": "pre-approved tool permissions (allow rules)",
             "permissions.additionalDirectories": "more directories added to the workspace",
             "mcpServers": "MCP servers",
             "enableAllProjectMcpServers": "approves every MCP server of .mcp.json",
             "enabledMcpjsonServers": "approves MCP servers of .mcp.json",
             "apiKeyHelper": "a command that makes API keys (apiKeyHelper)",
             "allowed-tools": "a command that pre-approves tools (allowed-tools)"}
