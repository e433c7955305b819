"""Loading a session's plugins (``--plugin-dir DIR``, repeatable), as Claude Code 2.1.332 does.

- ``DIR/.claude-plugin/plugin.json``: ``name`` (else the folder's name), ``version``, ``description``;
- ``commands/**/*.md`` as ``/PLUGIN:NAME`` (folders as more ``:`` parts), ``skills/NAME/SKILL.md`` as the skill
  ``PLUGIN:NAME``, ``agents/*.md`` as the agent type ``PLUGIN:NAME``, ``output-styles/*.md`` as the style
  ``PLUGIN:NAME`` (:mod:`workflows.styles`): the names Claude Code gives them, so a plugin never shadows a
  command, skill or agent of the same short name;
- ``hooks/hooks.json`` (``{"hooks": {...}}``, the settings' hooks format, ``${CLAUDE_PLUGIN_ROOT}`` standing for
  DIR): its hooks run as a settings file's. They are code, so they pass the trust decision project hooks pass: a
  plugin inside the workspace is part of the project and its hooks apply only when the person vouches for the
  workspace as the session starts (:func:`workflows.trust.decide.workspace_trust`); a plugin elsewhere was named by the person on the command
  line, as a ``--settings`` file is, and its hooks apply.
- ``.mcp.json`` (or the manifest's ``mcpServers``): its servers join the session's MCP servers as
  ``plugin:PLUGIN:SERVER`` (source ``plugin``; tools ``mcp__plugin_PLUGIN_SERVER__TOOL``), ``${CLAUDE_PLUGIN_ROOT}``
  standing for DIR in their command, arguments, environment, URL and headers; they pass the hooks' trust decision.

A folder that is not a plugin stops the session with a message naming it (the person asked for it by name).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Mapping

from workflows.models import Plugin
from workflows.models.mcp import McpConfigError, McpServer, parse_servers
from workflows.models.hooks import HookSet
from workflows.settings.errors import SettingsError

__all__ = ["PluginError", "inside", "load_plugins", "plugin_hooks", "plugin_server_list", "plugin_servers",
           "withheld"]

MANIFEST = Path(".claude-plugin") / "plugin.json"
ROOT_VAR = "${CLAUDE_PLUGIN_ROOT}"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # (it opens the names of its commands: PLUGIN:NAME)


class PluginError(SettingsError):
    """A ``--plugin-dir`` that cannot be loaded; the message names it and the fix."""


def _manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise PluginError(f"Cannot read the plugin manifest {path}: {exc}. Fix its permissions or remove it.") from None
    except json.JSONDecodeError as exc:
        raise PluginError(f"Invalid JSON in the plugin manifest {path}, line {exc.lineno}, column {exc.colno}: "
                          f"{exc.msg}. Fix the file.") from None
    if not isinstance(data, dict):
        raise PluginError(f"The plugin manifest {path} must be a JSON object like "
                          '{"name": "my-plugin", "version": "1.0.0"}.')
    return data


def load_plugin(raw: str, cwd: str) -> Plugin:
    """The plugin in folder ``raw`` (relative to ``cwd``).

    Raises:
        PluginError: not a folder, a manifest that is not JSON, or a name that cannot name commands.
    """
    folder = Path(cwd, os.path.expanduser(raw)).resolve()
    if not folder.is_dir():
        raise PluginError(f"--plugin-dir {raw}: {folder} is not a directory. Name a plugin's folder (the one "
                          "holding .claude-plugin/plugin.json).")
    data = _manifest(folder)
    name = data.get("name", folder.name)
    if not isinstance(name, str) or not _NAME.match(name):
        raise PluginError(f"--plugin-dir {raw}: the plugin's name {name!r} ({folder / MANIFEST}) must be letters, "
                          "digits, '-', '_' and '.'. Fix 'name' in the manifest.")
    version = data.get("version")
    description = data.get("description")
    return Plugin(name=name, path=str(folder), version=version if isinstance(version, str) else None,
                  description=description if isinstance(description, str) else "")


def load_plugins(dirs: list[str], cwd: str) -> list[Plugin]:
    """The plugins of ``--plugin-dir`` values, in order; a second plugin of a name already loaded is refused.

    Raises:
        PluginError: see :func:`load_plugin`; or two plugins share a name.
    """
    out: list[Plugin] = []
    for raw in dirs:
        plugin = load_plugin(raw, cwd)
        if any(p.name == plugin.name for p in out):
            raise PluginError(f"--plugin-dir {raw}: a plugin named {plugin.name!r} is loaded already; give each "
                              "plugin once.")
        out.append(plugin)
    return out


def inside(path: str, workspace: str) -> bool:
    """Whether ``path`` lies in ``workspace`` (a plugin there is the project's code)."""
    from workflows.permissions.rules.paths import inside as under

    return under(os.path.realpath(path), os.path.realpath(workspace))


def plugin_hooks(plugins: list[Plugin], workspace: str, vouched: bool) -> tuple[HookSet, list[str]]:
    """The plugins' hooks that apply (see the module docstring), and a warning for each plugin whose hooks do not.
    ``vouched``: the person vouches for everything in the workspace now (``--trust-project``, the trust prompt,
    ``trustedWorkspaces``); a trust recorded earlier covers the project's settings it hashed, not a plugin's hooks.

    Raises:
        SettingsError: a hooks.json that is not JSON or not in the settings' hooks format.
    """
    from workflows.hooks.settings import HookConfigError, parse_hooks

    hooks, warnings = HookSet(), []
    for p in plugins:
        path = Path(p.path) / "hooks" / "hooks.json"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"Cannot read the plugin hooks {path}: {exc}. Fix it or remove it.") from None
        why = withheld(p, "hooks", path, workspace, vouched)
        if why:
            warnings.append(why)
            continue
        try:
            data = json.loads(text.replace(ROOT_VAR, p.path.replace("\\", "\\\\").replace('"', '\\"')))
            raw = data.get("hooks") if isinstance(data, dict) else None
            hooks = hooks.merged(parse_hooks(raw, str(path)))
        except json.JSONDecodeError as exc:
            raise SettingsError(f"Invalid JSON in the plugin hooks {path}, line {exc.lineno}: {exc.msg}. Fix the "
                                "file.") from None
        except HookConfigError as exc:
            raise SettingsError(f"{path}: {exc}") from None
    return hooks, warnings


def withheld(p: Plugin, what: str, path: Path, workspace: str, vouched: bool) -> str | None:
    """The one trust decision for a plugin's code (its hooks, its MCP servers): None when it applies, else the
    warning saying why not (see the module docstring)."""
    if inside(p.path, workspace) and not vouched:
        return (f"plugin {p.name}: its {what} ({path}) are not run: the plugin is inside this workspace, so its "
                f"{what} are the project's code; run again with --trust-project to run them.")
    return None


def plugin_servers(plugins: list[Plugin], workspace: str, vouched: bool,
                   environ: Mapping[str, str]) -> tuple[list[McpServer], list[str]]:
    """The plugins' MCP servers that may start (see :func:`plugin_server_list`), and a warning for each plugin
    whose servers do not pass :func:`withheld`.

    Raises:
        McpConfigError: a ``.mcp.json`` or manifest ``mcpServers`` that is not JSON or not ``{"name": {...}}``.
    """
    out, warnings = [], []
    for servers, why in plugin_server_list(plugins, workspace, vouched, environ):
        if why:
            warnings.append(why)
        else:
            out += servers
    return out, warnings


def plugin_server_list(plugins: list[Plugin], workspace: str, vouched: bool,
                       environ: Mapping[str, str]) -> list[tuple[list[McpServer], str | None]]:
    """Each plugin's MCP servers, named ``plugin:PLUGIN:SERVER`` with source ``plugin`` and ``${CLAUDE_PLUGIN_ROOT}``
    standing for the plugin's folder (as Claude Code 2.1.332 has them), with why they are withheld
    (:func:`withheld`; None: they may start). A plugin with no servers is left out; a withheld one whose servers
    are malformed has none listed (they never start), only its reason.

    Raises:
        McpConfigError: a ``.mcp.json`` or manifest ``mcpServers`` that is not JSON, or (of a plugin whose servers
            may start) not ``{"name": {...}}``.
    """
    from workflows.mcp.sources import read_json

    out: list[tuple[list[McpServer], str | None]] = []
    for p in plugins:
        path = Path(p.path) / ".mcp.json"
        data = read_json(path)
        entries = data.get("mcpServers", data) if isinstance(data, dict) else data
        if entries is None:
            path = Path(p.path) / MANIFEST
            entries = _manifest(Path(p.path)).get("mcpServers")
        if entries is None:
            continue
        why = withheld(p, "MCP servers", path, workspace, vouched)
        env = {**environ, "CLAUDE_PLUGIN_ROOT": p.path}
        try:
            servers = parse_servers(entries, source="plugin", origin=str(path), environ=env)
        except McpConfigError:
            if why is None:
                raise
            servers = []
        out.append(([s.model_copy(update={"config": s.config.model_copy(update={"name": f"plugin:{p.name}:{s.name}"})})
                     for s in servers], why))
    return out
