"""Plugins, as Claude Code 2.1.332 loads them with ``--plugin-dir`` (the Agent SDK's ``plugins=[{"type": "local",
"path": ...}]``): a folder with ``.claude-plugin/plugin.json`` and any of ``commands/``, ``skills/``, ``agents/``,
``output-styles/``, ``hooks/hooks.json`` and ``.mcp.json``. See :mod:`workflows.plugins.load`."""

from workflows.plugins.load import PluginError, load_plugins, plugin_agents, plugin_commands, plugin_hooks

__all__ = ["PluginError", "load_plugins", "plugin_agents", "plugin_commands", "plugin_hooks"]
