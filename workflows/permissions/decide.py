"""The permission hook: every tool call passes :func:`decide` before it runs.

The rule language and the modes live in :mod:`workflows.permissions.rules` (pure); this
module applies them to a session: its mode, its rules (settings files and
flags captured at start, plus the "always" answers given since), its
workspace and its user's home.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from workflows.models import PermissionMode, SessionRecord
from workflows.permissions.rules import Decision, PermissionResult, always_rules, evaluate, summary

if TYPE_CHECKING:
    from workflows.tools.base import Tool

__all__ = ["Decision", "PermissionResult", "always_rules", "decide", "summary"]


def decide(tool: "Tool", tool_input: dict, rec: SessionRecord) -> PermissionResult:
    """Allow, deny or ask for one tool call of session ``rec``.

    The memory tools touch only the project's memory records (never the workspace), so
    they run without asking, like read-only tools, except in plan mode; rules still apply.
    """
    return evaluate(
        tool.name,
        tool_input,
        mode=rec.permission_mode,
        rules=rec.rules,
        workspace=rec.workspace,
        home=rec.home or os.path.expanduser("~"),
        read_only=tool.read_only or (tool.memory_tool and rec.permission_mode is not PermissionMode.PLAN),
    )
