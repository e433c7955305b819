"""The one decision point: every tool call of every caller passes :func:`decide` before it runs.

The rule language and the modes live in :mod:`workflows.permissions.rules.rules` and
:mod:`workflows.permissions.evaluate`; this module applies them to a session:
its mode, its rules (settings files and flags captured at start, plus the
"always" answers given since), its workspace and its user's home.

A custom command's ``allowed-tools`` join the allow rules for the run it started (``rec.run_allow``):
like any allow rule they never beat a deny or ask rule, plan mode or a protected path.

A record holding bypassPermissions while that mode is disabled (``permissions.disableBypassPermissionsMode``,
see :mod:`workflows.permissions.bypass`) is decided as in ``default`` mode: what would ask asks.

A caller with tighter limits (a memory fork) passes its own allow list: the
call must get past the session's own decision first (a fork can never do what
the session could not), and then be allowed by the caller's list in plan mode,
with the session's deny and ask rules.
"""

from __future__ import annotations

import os
from typing import Protocol

from workflows.models import PermissionMode, RuleSet, SessionRecord
from workflows.permissions.bypass import effective_mode
from workflows.permissions.evaluate import evaluate, read_denied
from workflows.permissions.rules.results import Decision, PermissionResult, nobody_to_ask

__all__ = ["CheckedTool", "decide", "read_denied_for"]


class CheckedTool(Protocol):
    """What :func:`decide` reads of a tool (a :class:`workflows.tools.base.Tool` has it)."""

    @property
    def name(self) -> str: ...

    @property
    def read_only(self) -> bool: ...

    @property
    def memory_tool(self) -> bool: ...


def decide(tool: CheckedTool, tool_input: dict, rec: SessionRecord, *, caller_allow: RuleSet | None = None,
           caller: str = "", approved: bool = False) -> PermissionResult:
    """Allow, deny or ask for one tool call of session ``rec``.

    The memory tools touch only the project's memory records (never the workspace), so
    they run without asking, like read-only tools, except in plan mode; rules still apply.

    Args:
        caller_allow: the allow rules of a caller tighter than the session (a memory fork).
            Then nobody can be asked: the answer is ALLOW or DENY.
        caller: what the caller is, for the denial message ("the memory extraction").
        approved: a person already approved this call (the check again where it runs): an ask
            stays an ask even in a session that asks nobody (``rec.asks == "deny"``).
    """
    home = rec.home or os.path.expanduser("~")
    rules = rec.rules.combined(RuleSet(allow=rec.run_allow)) if rec.run_allow else rec.rules
    mode = effective_mode(rec)
    result = evaluate(
        tool.name, tool_input, mode=mode, rules=rules, workspace=rec.workspace, home=home,
        read_only=tool.read_only or (tool.memory_tool and mode is not PermissionMode.PLAN),
        additional_dirs=rec.additional_directories,
    )
    if caller_allow is None or result.decision is Decision.DENY:
        if result.decision is Decision.ASK and rec.asks == "deny" and not approved and caller_allow is None:
            return nobody_to_ask(tool.name, result)
        return result
    tight = RuleSet(deny=list(rec.rules.deny), ask=list(rec.rules.ask), allow=list(caller_allow.allow))
    mine = evaluate(tool.name, tool_input, mode=PermissionMode.PLAN, rules=tight, workspace=rec.workspace,
                    home=home, read_only=tool.read_only, additional_dirs=rec.additional_directories)
    if mine.decision is Decision.ALLOW:
        return mine
    why = mine.reason if mine.decision is Decision.DENY else f"it would need approval ({mine.reason})"
    return PermissionResult(
        Decision.DENY,
        reason=(f"Permission to use {tool.name} was denied for {caller or 'this caller'}, which may only read "
                f"and never asks: {why}"),
        source=f"{caller or 'caller'}: {mine.source}", display=f"denied for {caller or 'caller'}")


def read_denied_for(rec: SessionRecord):
    """The predicate Glob and Grep use to leave out files the session's Read deny rules cover."""
    return read_denied(rec.rules, rec.workspace, rec.home or os.path.expanduser("~"))
