"""Which settings keys are "gated" (they can run code or widen access), key by key; no file is read here.

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

This module is the settings' part (the keys, and whether a ``settings.local.json`` is the project's), which
:mod:`workflows.settings.layers` and :mod:`workflows.sessions.settings_files` need; gathering what a workspace
holds of them, for the trust decision, is :mod:`workflows.trust.gated`'s.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from workflows.git import index as git_index

__all__ = ["GATED_KEYS", "GATED_PERMISSIONS", "gated_part", "key_names", "local_is_project", "strip_gated"]

#: Top-level keys gated whole.
GATED_KEYS = ("hooks", "sandbox", "env", "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport",
              "otelHeadersHelper", "mcpServers", "enableAllProjectMcpServers", "enabledMcpjsonServers")
#: Keys inside ``permissions`` gated whole.
GATED_PERMISSIONS = ("allow", "additionalDirectories")


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
