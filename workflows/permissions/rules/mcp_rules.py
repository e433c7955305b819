"""Claude Code's permission rule forms for MCP tools (``mcp__server__tool``).

``mcp__server`` covers every tool of that server, ``mcp__server__tool`` the one tool, and a name
with ``*`` (``mcp__server__*``, ``mcp__server__get_*``, ``mcp__*``) what the pattern matches. An
MCP rule takes no specifier: ``mcp__server(tool)`` is no form of Claude Code's, and is refused
rather than silently never matching.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase

__all__ = ["MCP", "mcp_covers", "mcp_rule_problem"]

MCP = "mcp__"
_NAME = re.compile(r"mcp__[A-Za-z0-9_*-]+")


def mcp_rule_problem(tool: str, specifier: str | None) -> str | None:
    """Why an MCP rule's ``tool`` (with ``specifier``) is not a valid rule, or None."""
    if specifier is not None:
        return ("MCP rules take no specifier: write mcp__server (every tool of the server), mcp__server__tool, "
                "or a wildcard such as mcp__server__*")
    if not _NAME.fullmatch(tool):
        return f"invalid MCP tool name {tool!r}: it contains only letters, digits, '_', '-' and the wildcard '*'"
    return None


def mcp_covers(rule_tool: str, name: str) -> bool:
    """Whether an MCP rule's tool part covers tool ``name`` (see the module docstring)."""
    if not name.startswith(MCP):
        return False
    if "*" in rule_tool:
        return fnmatchcase(name, rule_tool)
    if rule_tool.count("__") == 1:  # mcp__server (server names never hold "__")
        return name.startswith(rule_tool + "__")
    return rule_tool == name
