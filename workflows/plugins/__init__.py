"""Plugins, as Claude Code 2.1.332 loads them with ``--plugin-dir`` (the Agent SDK's ``plugins=[{"type": "local",
"path": ...}]``): a folder with ``.claude-plugin/plugin.json`` and any of ``commands/``, ``skills/``, ``agents/``,
``output-styles/``, ``hooks/hooks.json`` and ``.mcp.json``. See :mod:`workflows.plugins.load`; each part is read
by its own concern's loader (:func:`workflows.commands.load.plugin_commands`,
:func:`workflows.agents.definitions.plugin_agents`, :func:`workflows.styles.load_styles`)."""

from workflows.plugins.load import (
    PluginError,
    inside,
    load_plugins,
    plugin_hooks,
    plugin_server_list,
    plugin_servers,
    withheld,
)

__all__ = ["PluginError", "inside", "load_plugins", "plugin_hooks", "plugin_server_list", "plugin_servers",
           "withheld"]
