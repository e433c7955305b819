"""Parsing the ``hooks`` value of one settings file into a :class:`~workflows.models.hooks.HookSet`.

Every mistake is a :class:`HookConfigError` naming the dotted key and the fix;
:mod:`workflows.sessions.settings_files` adds the file and line.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from workflows.exceptions import ConfigurationError
from workflows.models.hooks import _PLAIN, CommandHook, HookEvent, HookMatcher, HookSet

__all__ = ["HookConfigError", "parse_hooks"]

EVENTS = ", ".join(e.value for e in HookEvent)
#: Events of later Claude Code versions that Mainsail accepts and does not run (documented in the README).
IGNORED_EVENTS = frozenset({"PermissionRequest", "SubagentStart"})
EXAMPLE = '{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]}'


class HookConfigError(ConfigurationError):
    """A ``hooks`` value is wrong. ``key`` is the dotted key (``hooks.PreToolUse[0].matcher``)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def _describe(value: Any) -> str:
    kind = {bool: "boolean", int: "number", float: "number", str: "string", list: "list", dict: "object",
            type(None): "null"}.get(type(value), type(value).__name__)
    return f"{kind} {json.dumps(value)[:60]}"


def parse_hooks(raw: Any, source: str = "") -> HookSet:
    """The hooks of one settings file's ``hooks`` value (None: no hooks).

    Raises:
        HookConfigError: not Claude Code's shape, an unknown event, a matcher that is not a valid
            regular expression, a hook that is not a command, or a bad timeout.
    """
    if raw is None:
        return HookSet()
    if not isinstance(raw, dict):
        raise HookConfigError("hooks", f"'hooks' must be an object like {EXAMPLE}, not a {_describe(raw)}.")
    events: dict[HookEvent, list[HookMatcher]] = {}
    for name, groups in raw.items():
        if name in IGNORED_EVENTS:
            continue
        try:
            event = HookEvent(name)
        except ValueError:
            raise HookConfigError(f"hooks.{name}", f"'hooks.{name}' is not a hook event. Use one of: {EVENTS}."
                                  ) from None
        key = f"hooks.{name}"
        if not isinstance(groups, list):
            raise HookConfigError(key, f"'{key}' must be a list of matchers like "
                                       f'[{{"matcher": "Bash", "hooks": [...]}}], not a {_describe(groups)}.')
        events[event] = [_matcher(group, f"{key}[{n}]", source) for n, group in enumerate(groups)]
    return HookSet(events=events)


def _matcher(group: Any, key: str, source: str) -> HookMatcher:
    if not isinstance(group, dict):
        raise HookConfigError(key, f"'{key}' must be an object like "
                                   f'{{"matcher": "Bash", "hooks": [...]}}, not a {_describe(group)}.')
    matcher = group.get("matcher", "")
    if matcher is None:
        matcher = ""
    if not isinstance(matcher, str):
        raise HookConfigError(f"{key}.matcher", f"'{key}.matcher' must be a string like \"Bash\" or "
                                                f"\"Edit|Write\", not a {_describe(matcher)}.")
    if matcher not in ("", "*") and not _PLAIN.fullmatch(matcher):
        try:
            re.compile(matcher)
        except re.error as exc:
            raise HookConfigError(f"{key}.matcher", f"'{key}.matcher' is {json.dumps(matcher)}, which is not a "
                                                    f"valid regular expression ({exc}). Use a tool name, names "
                                                    "joined by |, or a valid regex like \"Notebook.*\".") from None
    hooks = group.get("hooks")
    if not isinstance(hooks, list):
        raise HookConfigError(f"{key}.hooks", f"'{key}.hooks' must be a list of hooks like "
                                              '[{"type": "command", "command": "./check.sh"}], '
                                              f"not a {_describe(hooks)}.")
    return HookMatcher(matcher=matcher, hooks=[_hook(h, f"{key}.hooks[{n}]", source) for n, h in enumerate(hooks)])


def _hook(hook: Any, key: str, source: str) -> CommandHook:
    if not isinstance(hook, dict):
        raise HookConfigError(key, f"'{key}' must be an object like "
                                   f'{{"type": "command", "command": "./check.sh"}}, not a {_describe(hook)}.')
    kind = hook.get("type")
    if kind != "command":
        raise HookConfigError(f"{key}.type", f"'{key}.type' is {json.dumps(kind)}: Mainsail runs command hooks "
                                             'only. Set "type": "command" with a "command" to run.')
    command = hook.get("command")
    if not isinstance(command, str) or not command.strip():
        raise HookConfigError(f"{key}.command", f"'{key}.command' must be the shell command to run, like "
                                                f'"./check.sh", not a {_describe(command)}.')
    timeout = hook.get("timeout", None)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        raise HookConfigError(f"{key}.timeout", f"'{key}.timeout' must be a positive number of seconds, like 30; "
                                                f"it is {json.dumps(timeout)}.")
    return CommandHook(command=command, source=source,
                       **({"timeout": float(timeout)} if timeout is not None else {}))
