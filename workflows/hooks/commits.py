"""The engine's part of hooks: committing a hook's outcome before it is acted on.

A mixin of :class:`workflows.engine.Engine` (it uses the engine's fenced step commit, ``_step_event``,
and its helpers), kept here so the engine module does not grow with every event.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from statemachines import State
from workflows import keys
from workflows.hooks.config import HookEvent, HookSet
from workflows.hooks.outcome import HookOutcome, HookRun
from workflows.models import HookEntry, RequestStatus, StepRecord, SystemEntry, ToolCall, ToolCallStatus
from workflows.tools.base import ToolOutput

if TYPE_CHECKING:
    from workflows.hooks.tool_hooks import PreToolAction

__all__ = ["HookCommits"]


class HookCommits:
    """Engine methods for hooks (mixed into :class:`~workflows.engine.Engine`)."""

    def add_hooks(self, sid: str, hooks: HookSet) -> None:
        """Add ``hooks`` to a session's own (they run after the settings files' hooks), for every worker.

        The entry point for hooks that do not come from settings files (the Agent SDK's ``initialize``).
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            rec.hooks = rec.hooks.merged(hooks)
            self.store.save_session(rec)

    def settle_pre_tool(self, sid: str, step_id: str, owner: str, tool_use_id: str, outcome: HookOutcome | None,
                        action: "PreToolAction") -> tuple[bool, list[StepRecord]]:
        """Commit a call's PreToolUse verdict (``outcome``, None: already recorded) and, in the same
        transaction, a refusal or a question. Returns (run the tool now, steps to dispatch).

        False when the step is no longer the caller's (a cancel, a take-over): nothing runs.
        """
        go_on: list[bool] = []

        def apply(tx, step: StepRecord) -> None:
            call = next((c for c in tx.rec.tool_calls if c.tool_use_id == tool_use_id), None)
            if call is None or call.status is ToolCallStatus.DONE:
                self._finish_step(tx, step)
                return
            if outcome is not None and call.pre_hook is None:  # (a retried commit records it once)
                call.pre_hook = outcome
                self.add_hook_entry(tx, outcome, call, step)
            if action.kind == "run":
                go_on.append(True)  # the step stays running: the tool runs next, on this worker
                return
            self._finish_step(tx, step)
            if action.kind == "ask":
                call.status = ToolCallStatus.AWAITING_APPROVAL
                call.step_id = None
                self._ask(tx, [self._request(tx.rec, call, action.input, action.reason)])
                return
            self.refuse_call(tx, call, action.reason, step)
            if action.stop:
                self._abort_run(tx, "halt", "error_during_execution", f"Stopped by a PreToolUse hook: {action.stop}")
            else:
                self._advance_tools(tx)

        steps = self._step_event(sid, step_id, owner, apply)
        return bool(go_on), steps

    def ask_client_hooks(self, sid: str, step_id: str, owner: str, call: ToolCall, callbacks: list[str],
                         payload: dict) -> list[StepRecord]:
        """The call has PreToolUse callbacks only the SDK client can run: end the step and wait, as a
        durable request of kind ``hook``, for the client's answers (:meth:`answer_client_hooks`)."""

        def apply(tx, step: StepRecord) -> None:
            found = next((c for c in tx.rec.tool_calls if c.tool_use_id == call.tool_use_id), None)
            self._finish_step(tx, step)
            if found is None or found.status is ToolCallStatus.DONE:
                return
            found.status = ToolCallStatus.AWAITING_APPROVAL
            found.step_id = None
            req = self._request(tx.rec, found, found.input, "the client's PreToolUse hooks run first")
            req.kind, req.callbacks, req.hook_input, req.expires_at = "hook", list(callbacks), payload, None
            self._ask(tx, [req])

        return self._step_event(sid, step_id, owner, apply)

    def answer_client_hooks(self, sid: str, request_id: str, runs: list[HookRun]) -> list[StepRecord]:
        """The SDK client answered a ``hook`` request: keep its callbacks' outputs on the call and run the
        call's step again, which joins them to the command hooks' and decides (workflows/steps.py).

        Raises:
            RequestNotFound, RequestClosed: as :meth:`decide_request`.
        """
        from workflows.engine import _Tx, find_request

        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            req = find_request(rec, request_id)
            tx = _Tx(rec)
            req.status, req.decided_by, req.decided_at = RequestStatus.APPROVED, "hook", time.time()
            tx.approvals_cleared.append(keys.lease_member(rec.id, req.id))
            call = next(c for c in rec.tool_calls if c.tool_use_id == req.tool_use_id)
            call.client_hook_runs = list(runs)
            call.status = ToolCallStatus.WAITING
            self._fire(tx, "permission_decided")
            if rec.state is State.RUNNING_TOOLS:
                self._advance_tools(tx)
            self._commit(tx)
        return tx.dispatch

    def add_hook_entry(self, tx, outcome: HookOutcome, call: ToolCall | None = None,
                       step: StepRecord | None = None) -> None:
        """The ``hook`` entry of ``outcome``, and a warning entry for what it says to the user."""
        rec = tx.rec
        self._add(tx, HookEntry(session_id=rec.id, event=outcome.event.value, outcome=outcome,
                                tool_use_id=call.tool_use_id if call else None, tool=call.name if call else None,
                                step_id=step.id if step else None))
        for message in outcome.messages:
            self._add(tx, SystemEntry(session_id=rec.id, subtype="warning", content=message,
                                      step_id=step.id if step else None))

    def refuse_call(self, tx, call: ToolCall, reason: str, step: StepRecord | None = None) -> None:
        """The call is not run: ``reason`` is its (error) result, and it is listed among the run's denials."""
        self._add_tool_result(tx, call.tool_use_id, ToolOutput(content=reason, is_error=True,
                                                               display=f"blocked: {reason}"[:120]),
                              step_id=step.id if step else None)
        call.status = ToolCallStatus.DONE
        tx.rec.run_denials.append({"tool_name": call.name, "tool_use_id": call.tool_use_id,
                                   "tool_input": call.input})


def tool_event_stops(outcome: HookOutcome | None) -> str | None:
    """The stopReason when a tool hook said ``"continue": false``."""
    if outcome is None or not outcome.stop:
        return None
    return outcome.stop_reason or f"a {outcome.event.value} hook stopped the run"


__all__ += ["tool_event_stops", "HookEvent"]
