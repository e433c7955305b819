"""The Agent SDK's hook callbacks (``ClaudeAgentOptions(hooks=...)``) over stream-json.

The SDK's ``initialize`` request names its callbacks by event (:func:`callback_hooks`); they join the
session's hooks and fire where a command hook of the same event fires. When one must run, the session
records a durable request in its transcript and waits, no worker held: a PreToolUse call as a permission
request of kind ``hook`` (workflows/hooks/commits.py), any other event as a ``hook_callback`` entry
(workflows/hooks/client_hooks.py). :class:`HookCallbacks` answers both the same way: one ``hook_callback``
control request per callback, one after the other, as Claude Code sends them; then the outputs go to the
engine, which joins them to the command hooks' (a callback that failed counts as a non-blocking error).

When the client closes its input before it answered an event's callbacks (not PreToolUse's), they count as
failed (the client is gone, nothing else can run them): the session goes on, as Claude Code treats a
failing callback. A PreToolUse request stays open for a person (``mainsail pending``).
"""

from __future__ import annotations

import json
from typing import Callable

from cli.connect import Runtime
from cli.headless.control import Control, ControlError
from cli.session_service import service
from workflows.exceptions import RequestClosed, RequestNotFound
from workflows.hooks.settings import IGNORED_EVENTS
from workflows.models import HookCallbackEntry, PermissionRequestEntry
from workflows.models.hook_outcome import HookRun
from workflows.models.hooks import (
    DEFAULT_TIMEOUT_SECONDS,
    CallbackHook,
    HookEvent,
    HookMatcher,
    HookSet,
)

__all__ = ["HookCallbacks", "callback_hooks"]

_EVENTS = ", ".join(e.value for e in HookEvent)
#: Accepted and never called: events Mainsail does not fire, and Notification, which Claude Code 2.1.332
#: does not send to an SDK client (its questions go to ``can_use_tool``; measured with the bundled CLI).
NOT_CALLED = IGNORED_EVENTS | {HookEvent.NOTIFICATION.value}


def callback_hooks(config: dict) -> HookSet:
    """The SDK's ``initialize`` hooks (``{event: [{"matcher", "hookCallbackIds", "timeout"}]}``) as a
    session's callback hooks. Events of Claude Code that Mainsail does not fire (PostToolUseFailure,
    SubagentStart, PermissionRequest) are accepted and never called, as for command hooks; so is
    Notification, as Claude Code does (:data:`NOT_CALLED`).

    Raises:
        ControlError: an unknown event, or a malformed entry.
    """
    events: dict[HookEvent, list[HookMatcher]] = {}
    for event, groups in config.items():
        if event in NOT_CALLED:
            continue
        try:
            kind = HookEvent(event)
        except ValueError:
            raise ControlError(f"hooks.{event} is not a hook event Mainsail knows; use one of: {_EVENTS}.") from None
        if not isinstance(groups, list):
            raise ControlError(f"hooks.{event} must be a list of matchers.")
        for group in groups:
            ids = group.get("hookCallbackIds") if isinstance(group, dict) else None
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise ControlError(f"hooks.{event}: each matcher needs a list of hookCallbackIds.")
            timeout = group.get("timeout") or DEFAULT_TIMEOUT_SECONDS
            events.setdefault(kind, []).append(HookMatcher(
                matcher=group.get("matcher") or "",
                hooks=[CallbackHook(callback_id=i, timeout=float(timeout)) for i in ids]))
    return HookSet(events=events)


Request = PermissionRequestEntry | HookCallbackEntry


class HookCallbacks:
    """Runs a session's hook callbacks on its SDK client (see the module docstring).

    Args:
        rt: the connection.
        control: the connection's control requests.
        session_of: the session that asked, by request id (the main session or one of its sub-agents).
    """

    def __init__(self, rt: Runtime, control: Control, session_of: Callable[[str], str]) -> None:
        self.rt = rt
        self.control = control
        self.session_of = session_of
        self.open: dict[str, tuple[Request, str, list[HookRun], list[str]]] = {}  # request id -> where it is

    def run(self, e: Request) -> None:
        """Ask the client to run the request's callbacks, one after the other; then answer the engine."""
        self._next(e, list(e.callbacks), [])

    def _next(self, e: Request, left: list[str], runs: list[HookRun]) -> None:
        if not left:
            self.open.pop(e.request_id, None)
            self._answer(e, runs)
            return
        hook = CallbackHook(callback_id=left[0])

        def answered(answer) -> None:
            if isinstance(answer, Exception):
                run = HookRun(command=hook.command, error=f"the client's callback failed: {answer}")
            else:
                run = HookRun(command=hook.command, exit_code=0, stdout=json.dumps(answer))
            self._next(e, left[1:], runs + [run])

        asked = self.control.ask({"subtype": "hook_callback", "callback_id": hook.callback_id,
                                  "input": e.hook_input or {}, "tool_use_id": e.tool_use_id}, answered)
        self.open[e.request_id] = (e, asked, runs, left)

    def _answer(self, e: Request, runs: list[HookRun]) -> None:
        try:
            service(self.rt).answer_hooks(self.session_of(e.request_id), e.request_id, runs)
        except (RequestClosed, RequestNotFound):
            pass  # settled from a shell meanwhile, or the session was cancelled

    def client_gone(self) -> None:
        """The client closed its input: an event's callbacks it did not answer count as failed (PreToolUse's
        request stays open for a person)."""
        for request_id, (e, asked, runs, left) in list(self.open.items()):
            if not isinstance(e, HookCallbackEntry):
                continue
            self.open.pop(request_id, None)
            self.control.cancel(asked)
            failed = [HookRun(command=CallbackHook(callback_id=c).command,
                              error="the SDK client closed its input before it answered") for c in left]
            self._answer(e, runs + failed)

    def settled(self, request_id: str) -> None:
        """A request was settled elsewhere (PreToolUse, approved from a shell): drop its open question."""
        if (found := self.open.pop(request_id, None)) is not None:
            self.control.cancel(found[1])
