"""Tools a deny rule takes away: a bare ``Tool`` deny rule removes the tool from what the model is offered.

Claude Code 2.1.332 does not offer a tool that a deny rule names whole (``--disallowedTools Bash``, the SDK's
``disallowed_tools=["Bash"]``, ``"deny": ["Bash"]`` in a settings file, ``Bash(*)``, ``mcp__server`` for every
tool of an MCP server): the model never sees it, so it never calls it. A rule may name a tool by an alias
(``Agent``, Claude Code 2.1's name for the sub-agent tool Mainsail calls ``Task``): it removes the tool. A deny rule with a specifier
(``Bash(rm:*)``) keeps the tool offered and denies the matching calls when they are made (the permission
check, :func:`workflows.permissions.decide`, still denies a whole-tool rule's calls too, should one come).
"""

from __future__ import annotations

from collections.abc import Iterable

from workflows.models import RuleSet
from workflows.permissions.rules.mcp_rules import MCP, mcp_covers
from workflows.permissions.rules.rules import RuleSyntaxError, parse_rule

#: A rule's tool name that stands for another tool: Claude Code 2.1's name for the sub-agent tool. The same table
#: as the tools' own (workflows.tools.task.AGENT_ALIASES; a test holds them equal), kept here because the
#: permission rules sit below the tools and never import them.
ALIASES = {"Agent": "Task"}

__all__ = ["ALIASES", "removed_by_deny", "without_denied"]


def removed_by_deny(rules: RuleSet) -> tuple[str, ...]:
    """The tool parts of the bare deny rules (``Bash``, ``mcp__server``, ``mcp__server__*``), an alias as the
    internal name it stands for (``Agent`` as ``Task``)."""
    out = []
    for spec in rules.deny:
        try:
            rule = parse_rule(spec.rule)
        except RuleSyntaxError:
            continue
        if rule.specifier is None:
            out.append(ALIASES.get(rule.tool, rule.tool))
    return tuple(dict.fromkeys(out))


def _removed(name: str, denied: tuple[str, ...]) -> bool:
    return name in denied or (name.startswith(MCP) and any(mcp_covers(d, name) for d in denied if d.startswith(MCP)))


def without_denied(names: Iterable[str], rules: RuleSet) -> list[str]:
    """``names`` without the tools a bare deny rule of ``rules`` removes."""
    denied = removed_by_deny(rules)
    if not denied:
        return list(names)
    return [n for n in names if not _removed(n, denied)]
