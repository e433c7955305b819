"""The decision for one tool call: :func:`evaluate` (pure but for the filesystem lookups of paths).

1. a matching **deny** rule denies (in every mode, bypassPermissions too);
2. in ``bypassPermissions`` everything else is allowed (ask rules included);
3. a matching **ask** rule asks;
4. in ``plan`` mode anything but a read-only call is denied, whatever the rules;
5. a matching **allow** rule allows;
6. otherwise the **mode** decides.

Writes into ``.git/``, ``.mainsail/`` and ``.claude/`` are never approved by a
rule or a mode (they ask), and ``dontAsk`` turns every ask into a deny. Bash
is decided by :mod:`workflows.permissions.shell.bash_check`. :func:`evaluate` never
raises: a failure inside the check asks (and so is denied where nobody can be
asked).
"""

from __future__ import annotations

import logging
import os
from typing import Callable

from workflows.models import PermissionMode, RuleSet
from workflows.permissions.rules import paths
from workflows.permissions.rules.hosts import host_of
from workflows.permissions.rules.results import (
    PROTECTED_TEXT,
    Decision,
    PermissionResult,
    allow_by_mode,
    allow_by_rule,
    ask,
    ask_by_mode,
    ask_by_rule,
    deny_by_rule,
    deny_plan,
    dont_ask,
    outside_work_area,
)
from workflows.permissions.rules.rules import EDIT_TOOLS, Compiled, compile_rules, path_regex
from workflows.permissions.shell.bash_check import evaluate_bash

__all__ = ["evaluate", "read_denied"]

log = logging.getLogger(__name__)

PATH_TOOLS = {"Read": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "Write": "file_path",
              "NotebookEdit": "notebook_path", "Glob": "path", "Grep": "path"}
#: Which rules speak for a tool: Read rules cover Glob and Grep; Edit rules cover every tool that changes files.
#: Task rules may name it Agent, Claude Code 2.1's name for it (workflows/tools/task.py).
RULE_TOOLS = {"Read": ("Read",), "Glob": ("Read", "Glob"), "Grep": ("Read", "Grep"), "Bash": ("Bash",),
              "Task": ("Task", "Agent"),
              **{tool: tuple(dict.fromkeys(("Edit", tool))) for tool in EDIT_TOOLS}}


def evaluate(tool_name: str, tool_input: dict, *, mode: PermissionMode, rules: RuleSet, workspace: str,
             home: str, read_only: bool, additional_dirs: tuple[str, ...] | list[str] = ()) -> PermissionResult:
    """Allow, deny or ask for one tool call (see the module docstring).

    ``additional_dirs``: directories outside the workspace that count as inside it (``--add-dir``);
    every check that asks "inside the workspace?" asks it of the whole :class:`~paths.WorkArea`.
    """
    mode = PermissionMode(mode)
    try:
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        ws = paths.WorkArea(workspace, additional_dirs)
        hm = os.path.realpath(home) if home else ""
        compiled = compile_rules(rules)
        if tool_name == "Bash":
            result = evaluate_bash(tool_input, mode, compiled, ws, hm)
        else:
            result = _evaluate_tool(tool_name, tool_input, mode, compiled, ws, hm, read_only)
    except Exception as exc:  # fail closed: a checker bug asks, it never allows
        log.exception("permission check of %s failed", tool_name)
        result = ask(f"the permission check failed ({type(exc).__name__}: {exc}); it needs approval",
                     "checker error", "permission check failed")
        if mode is PermissionMode.BYPASS:
            return result
    if mode is PermissionMode.DONT_ASK and result.decision is Decision.ASK:
        return dont_ask(tool_name, result)
    return result


def _evaluate_tool(tool: str, tool_input: dict, mode: PermissionMode, compiled: Compiled, ws: str, hm: str,
                   read_only: bool) -> PermissionResult:
    names = RULE_TOOLS.get(tool, (tool,))
    try:
        path = _input_path(tool, tool_input, ws, hm)
    except paths.Unresolvable as exc:
        return ask(f"{tool}: {exc}; it needs approval", "path: unresolvable", "path cannot be resolved")

    def first(kind: str):
        for rule, source in compiled.of(kind, names):
            if rule.specifier is None:
                return rule, source
            if path and tool in PATH_TOOLS and path_regex(rule.specifier, ws, hm or ws).fullmatch(path):
                return rule, source
            if _other_specifier_matches(tool, rule.specifier, tool_input):
                return rule, source
        return None

    if hit := first("deny"):
        return deny_by_rule(tool, *hit)
    if mode is PermissionMode.BYPASS:
        return allow_by_mode(mode)
    if hit := first("ask"):
        return ask_by_rule(*hit)
    if mode is PermissionMode.PLAN and not read_only and tool not in PLAN_ASKS:
        return deny_plan(tool)
    if hit := first("allow"):
        result = allow_by_rule(*hit)
    elif path and tool in PATH_TOOLS and not paths.inside(path, ws):
        return outside_work_area(path, write=tool in EDIT_TOOLS)
    elif read_only:
        result = allow_by_mode(mode)
    elif mode is PermissionMode.ACCEPT_EDITS and tool in EDIT_TOOLS and path and paths.inside(path, ws):
        result = allow_by_mode(mode)
    else:
        from workflows.permissions.prompt import summary

        return ask_by_mode(tool, summary(tool, tool_input), mode)
    if tool in EDIT_TOOLS and path and paths.protected(path, ws, hm):
        shown = os.path.relpath(path, ws) if paths.inside(path, ws) else path
        return ask(f"writing to {shown} ({PROTECTED_TEXT})", result.source + "; protected path",
                   f"protected path {shown}")
    return result


#: Tools that only read (from the web) but still ask in default mode: plan mode asks for them too.
PLAN_ASKS = frozenset({"WebFetch", "WebSearch"})


def _other_specifier_matches(tool: str, specifier: str, tool_input: dict) -> bool:
    """``WebFetch(domain:HOST)``: the URL's host is HOST (exactly, case-insensitively); ``Task(TYPE)``: the
    sub-agent type. Any other specifier of a tool that is not a path tool or Bash matches nothing."""
    if tool == "WebFetch" and specifier.startswith("domain:"):
        host = host_of(str(tool_input.get("url", "")))
        return bool(host) and host == specifier.removeprefix("domain:").strip().lower()
    if tool == "Task":
        return (tool_input.get("subagent_type") or "general-purpose") == specifier.strip()
    return False


def _input_path(tool: str, tool_input: dict, workspace: str, home: str) -> str | None:
    """The resolved path a path tool's input names (Glob/Grep default to the workspace)."""
    key = PATH_TOOLS.get(tool)
    if key is None:
        return None
    value = tool_input.get(key)
    if tool in ("Glob", "Grep") and (not value or value in ("undefined", "null")):
        value = workspace
    if not isinstance(value, str) or not value:
        return None
    return paths.resolve(value, cwd=workspace, home=home)


def read_denied(rules: RuleSet, workspace: str, home: str) -> Callable[[str], bool] | None:
    """A predicate for the files a session's Read deny rules cover (Glob and Grep leave them out);
    None when there are no such rules."""
    ws = os.path.realpath(workspace)
    hm = os.path.realpath(home) if home else ws
    specs = [r.specifier for r, _ in compile_rules(rules).of("deny", ("Read", "Glob", "Grep"))]
    if not specs:
        return None
    if any(s is None for s in specs):
        return lambda _path: True
    patterns = [path_regex(s, ws, hm) for s in specs]

    def denied(path: str) -> bool:
        real = os.path.realpath(path)
        return any(p.fullmatch(real) for p in patterns)

    return denied
