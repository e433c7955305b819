"""The Agent SDK client's hook callbacks for every event but PreToolUse: asked durably, answered by the client.

A callback hook (:class:`~workflows.models.hooks.CallbackHook`) runs in the client's process, so only the
client can run it. Where a command hook of the same event runs (a hook step, or PostToolUse in the tool
step), a matching callback turns into a :class:`~workflows.models.hook_outcome.ClientHookRequest` kept in
the session record, with a ``hook_callback`` entry in its transcript; the step ends there and no worker
waits. The session stays in its state (``querying`` for UserPromptSubmit and Stop, ``compacting`` for
PreCompact, ``running_tools`` for PostToolUse) until the client answers (cli/headless/hook_callbacks.py)
through :meth:`ClientHookCommits.answer_client_event`:

- a hook step's event: the answers are kept on the request and the event's hook step runs again
  (``StepRecord.hook_request``); it runs the command hooks and joins the answers to theirs, then
  commits the verdict and its effect as for command hooks alone (:mod:`workflows.hooks.session_hooks`);
- PostToolUse: the tool ran and its result is held on the call (``ToolCall.held_output``, with the
  command hooks' verdict already recorded); the answers' verdict and the result are committed together.

A cancel moves the epoch on: an older request is stale and its answer changes nothing.

PreToolUse's callbacks wait as a permission request of kind ``hook`` instead (:mod:`workflows.hooks.commits`):
they can turn into a question for a person.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflows.commit import Part, Tx, peers, retry_on_conflict
from workflows.commit.support import new_id
from workflows.exceptions import RequestClosed
from workflows.models import HookCallbackEntry, SessionRecord, StepKind, StepRecord, ToolCallStatus
from workflows.models.hook_outcome import ClientHookRequest, HookOutcome, HookRun, interpret
from workflows.models.hooks import CallbackHook, HookEvent
from workflows.models.steps import BACKGROUND_HOOK_EVENTS

if TYPE_CHECKING:
    from workflows.tools.base import ToolOutput

__all__ = ["ClientHookCommits", "answered_runs", "client_callbacks"]

#: The events that follow a tool's run: their callbacks' answer settles the tool's held result.
TOOL_RESULT_EVENTS = (HookEvent.POST_TOOL_USE, HookEvent.POST_TOOL_USE_FAILURE)


def client_callbacks(rec: SessionRecord, event: HookEvent, subject: str | None = None) -> list[str]:
    """The ids of the SDK client's callbacks that ``event`` runs for ``subject``. None for SessionStart's
    ``startup``, as in Claude Code: the session started before the client registered them."""
    if event is HookEvent.SESSION_START and subject == "startup":
        return []
    return [h.callback_id for h in rec.hooks.for_event(event, subject) if isinstance(h, CallbackHook)]


def answered_runs(rec: SessionRecord, step: StepRecord) -> list[HookRun] | None:
    """What the client answered for the hook step ``step`` (run again after the answer); None: not asked yet."""
    if step.hook_request is None:
        return None
    req = next((r for r in rec.client_hooks if r.id == step.hook_request), None)
    return list(req.runs or []) if req is not None else []  # (a lost request: the callbacks count as not run)


class ClientHookCommits(Part):
    """The commit side of the client's callbacks (see the module docstring); part of ``engine.hooks``."""

    tools: peers.Tools
    turns: peers.Turns

    def ask_client_event(self, sid: str, step_id: str, owner: str, event: HookEvent, callbacks: list[str],
                         payload: dict) -> list[StepRecord]:
        """A hook step whose event has client callbacks not yet answered: end the step and ask, durably."""

        def apply(tx, step: StepRecord) -> None:
            tx.finish(step)
            self._ask(tx, event, callbacks, payload, detail=step.detail)

        return self.committer.step_event(sid, step_id, owner, apply)

    def hold_tool_output(self, sid: str, step_id: str, owner: str, output: ToolOutput, hook: HookOutcome | None,
                         callbacks: list[str], payload: dict, writes=None) -> list[StepRecord]:
        """The tool ran and its PostToolUse command hooks too (``hook``); the client's callbacks are asked
        before its result is recorded: the result is held on the call meanwhile."""

        def apply(tx, step: StepRecord) -> None:
            tx.finish(step)
            call = next((c for c in tx.rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
            if call is None or call.status is ToolCallStatus.DONE:
                return
            if hook is not None:
                self.add_hook_entry(tx, hook, call, step)
            if writes is not None:
                tx.extra.append(writes)
            call.held_output, call.step_id = output.model_dump(), None
            self._ask(tx, HookEvent(payload["hook_event_name"]), callbacks, payload, tool_use_id=call.tool_use_id)

        return self.committer.step_event(sid, step_id, owner, apply)

    def _ask(self, tx: Tx, event: HookEvent, callbacks: list[str], payload: dict, *,
             tool_use_id: str | None = None, detail: str | None = None) -> None:
        rec = tx.rec
        req = ClientHookRequest(id=new_id().replace("-", "")[:12], event=event, callbacks=list(callbacks),
                                hook_input=payload, epoch=rec.epoch, tool_use_id=tool_use_id, detail=detail)
        rec.client_hooks = [r for r in rec.client_hooks if not _stale(rec, r)] + [req]
        tx.add(HookCallbackEntry(session_id=rec.id, request_id=req.id, event=event.value, callbacks=req.callbacks,
                                 hook_input=payload, tool_use_id=tool_use_id))

    def client_request(self, rec: SessionRecord, request_id: str) -> ClientHookRequest | None:
        """The session's client hook request ``request_id``; None: not one (a PreToolUse request, or gone)."""
        return next((r for r in rec.client_hooks if r.id == request_id), None)

    @retry_on_conflict
    def answer_client_event(self, sid: str, request_id: str, runs: list[HookRun]) -> list[StepRecord]:
        """The client ran the callbacks of request ``request_id``: go on (see the module docstring).

        Raises:
            RequestClosed: already answered, or stale (a cancel came first).
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            req = self.client_request(rec, request_id)
            if req is None or req.runs is not None or _stale(rec, req):
                raise RequestClosed(f"Hook callback request {request_id} of session {sid[:8]} is no longer open "
                                    "(answered already, or the session was cancelled since).")
            tx = Tx(rec)
            if req.event in TOOL_RESULT_EVENTS:
                rec.client_hooks = [r for r in rec.client_hooks if r.id != req.id]
                self._settle_post_tool(tx, req, runs)
            else:
                req.runs = list(runs)
                step = self.committer.new_step(tx, StepKind.HOOK, event=req.event.value, detail=req.detail)
                step.hook_request = req.id
            self.committer.commit(tx)
        return tx.dispatch

    def _settle_post_tool(self, tx: Tx, req: ClientHookRequest, runs: list[HookRun]) -> None:
        from workflows.hooks.tool_hooks import with_post_notes
        from workflows.tools.base import ToolOutput  # (the tool belt: where a tool's hooks settle, not at import)

        call = next((c for c in tx.rec.tool_calls if c.tool_use_id == req.tool_use_id), None)
        if call is None or call.status is ToolCallStatus.DONE or call.held_output is None:
            return
        outcome = interpret(req.event, runs)
        output = with_post_notes(call.name, ToolOutput(**call.held_output), outcome)
        call.held_output = None
        self.tools.record_held_result(tx, call, output, outcome)

    def drop_client_request(self, tx: Tx, step: StepRecord) -> None:
        """A hook step that joined the client's answers is settled: its request is done."""
        if step.hook_request is not None:
            tx.rec.client_hooks = [r for r in tx.rec.client_hooks if r.id != step.hook_request]


def _stale(rec: SessionRecord, req: ClientHookRequest) -> bool:
    return req.epoch != rec.epoch and req.event not in BACKGROUND_HOOK_EVENTS
