"""Hook configuration as Claude Code defines it: events, matchers, command hooks.

The ``hooks`` key of a settings file::

    {"hooks": {"PreToolUse": [{"matcher": "Bash|Write",
                               "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}]}}

These are pure pydantic models (no I/O), stored in the session record so every
worker runs the same hooks. Parsing a settings file's value (with its errors) is
in :mod:`workflows.hooks.settings`.
"""

from __future__ import annotations

import enum
import re
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CallbackHook", "CommandHook", "DEFAULT_TIMEOUT_SECONDS", "HookEvent", "HookMatcher", "HookSet", "RUN_EVENTS", "TOOL_EVENTS",
           "matches"]

DEFAULT_TIMEOUT_SECONDS = 60.0


class HookEvent(str, enum.Enum):
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"  # instead of PostToolUse when the tool's result is an error
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    STOP = "Stop"
    SUBAGENT_STOP = "SubagentStop"  # a sub-agent (child session) is about to answer: its Stop
    SESSION_START = "SessionStart"
    SESSION_END = "SessionEnd"
    PRE_COMPACT = "PreCompact"
    NOTIFICATION = "Notification"


#: Events Mainsail runs (the others are accepted and stored, and the CLI warns that they do not run).
RUN_EVENTS = frozenset({HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE, HookEvent.POST_TOOL_USE_FAILURE,
                        HookEvent.USER_PROMPT_SUBMIT,
                        HookEvent.STOP, HookEvent.SUBAGENT_STOP, HookEvent.SESSION_START, HookEvent.SESSION_END, HookEvent.PRE_COMPACT,
                        HookEvent.NOTIFICATION})

#: Events whose matcher is a tool name.
TOOL_EVENTS = frozenset({HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE, HookEvent.POST_TOOL_USE_FAILURE})

#: Claude Code treats a matcher of only these characters as exact names (``Edit|Write``), not a regex.
_PLAIN = re.compile(r"[A-Za-z0-9_|]+")


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class CommandHook(_Model):
    """A shell command run with the event's JSON on stdin (``type: "command"``).

    ``type`` is a field so that other kinds (the Agent SDK's ``callback``) can be added beside it.
    """

    type: Literal["command"] = "command"
    command: str
    timeout: float = DEFAULT_TIMEOUT_SECONDS  # seconds
    source: str = ""  # the settings file it came from (or "session" for added ones)


class CallbackHook(_Model):
    """A function of the Agent SDK client, registered by its ``initialize`` request (``type: "callback"``).

    Only the client can run it: the call waits, as a durable request of kind ``hook``, until the
    client answers its ``hook_callback`` (cli/headless/stream.py); the answer then counts as that
    hook's output (Claude Code's JSON) beside the command hooks'.
    """

    type: Literal["callback"] = "callback"
    callback_id: str
    timeout: float = DEFAULT_TIMEOUT_SECONDS
    source: str = "sdk"

    @property
    def command(self) -> str:  # what it is called in outcomes and entries
        return f"SDK hook callback {self.callback_id}"


Hook = Annotated[Union[CommandHook, CallbackHook], Field(discriminator="type")]


class HookMatcher(_Model):
    matcher: str = ""  # "" or "*": everything
    hooks: list[Hook] = Field(default_factory=list)


def matches(matcher: str, subject: str | None) -> bool:
    """Whether ``matcher`` selects ``subject`` (a tool name, a SessionStart source, a PreCompact trigger).

    As Claude Code: empty or ``*`` matches everything; letters, digits, ``_`` and ``|`` are exact
    names (``Edit|Write``); anything else is a regular expression searched in the subject
    (``Notebook.*``, ``mcp__.*``). Case-sensitive.
    """
    if matcher in ("", "*"):
        return True
    if subject is None:
        return False
    if _PLAIN.fullmatch(matcher):
        return subject in (part.strip() for part in matcher.split("|"))
    return re.search(matcher, subject) is not None


class HookSet(_Model):
    """Every configured hook of a session, by event, in the order the settings files were read."""

    events: dict[HookEvent, list[HookMatcher]] = Field(default_factory=dict)

    def for_event(self, event: HookEvent, subject: str | None = None) -> list[CommandHook | CallbackHook]:
        """The hooks ``event`` runs for ``subject``; an identical command runs once (as Claude Code)."""
        out: dict[str, CommandHook | CallbackHook] = {}
        for group in self.events.get(event, []):
            if matches(group.matcher, subject):
                for hook in group.hooks:
                    out.setdefault(hook.command, hook)
        return list(out.values())

    def merged(self, other: "HookSet") -> "HookSet":
        """Both sets' hooks: ``other``'s after this one's."""
        events = {e: list(groups) for e, groups in self.events.items()}
        for event, groups in other.events.items():
            events.setdefault(event, []).extend(groups)
        return HookSet(events=events)

    def __bool__(self) -> bool:
        return any(g.hooks for groups in self.events.values() for g in groups)
