"""The permission hook: every tool call passes :func:`decide` before it runs.

This is the mode-only version: no rules, no settings files, no asking yet.
``bypassPermissions`` runs everything; every other mode runs read-only tools
and refuses the rest with a message that tells the model why, so it can carry
on without them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from workflows.models import PermissionMode
from workflows.tools.base import Tool

EDIT_TOOLS = frozenset({"Write", "Edit"})


class Decision(str, enum.Enum):
    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


@dataclass(frozen=True)
class PermissionResult:
    decision: Decision
    reason: str = ""
    source: str = "mode"  # what decided: "mode" or a rule
    display: str = ""  # one line for the user


def decide(tool: Tool, tool_input: dict, mode: PermissionMode) -> PermissionResult:
    """Allow, deny or ask for one tool call, given the session's permission mode."""
    if mode is PermissionMode.BYPASS or tool.read_only:
        return PermissionResult(Decision.ALLOW, source=f"mode:{mode.value}")
    if mode is PermissionMode.ACCEPT_EDITS and tool.name in EDIT_TOOLS:
        return PermissionResult(Decision.ALLOW, source=f"mode:{mode.value}")
    if mode is PermissionMode.PLAN:
        reason = (
            f"Permission to use {tool.name} was denied: the session is in plan mode, which is read-only. "
            "Explore with Read, Glob and Grep and present a plan instead of making changes."
        )
        display = "denied: plan mode is read-only"
    else:
        reason = (
            f"Permission to use {tool.name} was denied: the session's permission mode is {mode.value!r}, "
            "which runs only read-only tools (Read, Glob, Grep) without approval. Do not retry this call; "
            "continue without it, or tell the user to rerun with --permission-mode bypassPermissions."
        )
        display = f"denied: permission mode {mode.value!r} runs read-only tools only"
    return PermissionResult(Decision.DENY, reason=reason, source=f"mode:{mode.value}", display=display)
