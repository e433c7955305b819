"""The engine's part of hooks: committing a hook's outcome before it is acted on.

A part of :class:`workflows.engine.Engine` (``engine.hooks``): it fills a :class:`workflows.commit.Tx` and commits
it through :class:`workflows.commit.Committer`, and imports nothing of the engine (the other parts it
calls are handed to it, :class:`workflows.commit.Part`). The lifecycle events' side is
:mod:`workflows.hooks.lifecycle`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workflows.commit import Tx, peers, retry_on_conflict
from workflows.hooks.lifecycle import LifecycleHooks
from workflows.hooks.prompt_entries import prompt_digest
from workflows.hooks.session_hooks import STOP_BLOCK_LIMIT, context_text, prompt_event
from workflows.model.tokens import estimate_tokens
from workflows.models import HookEntry, Message, StepKind, StepRecord, SystemEntry, ToolCall, ToolCallStatus, UserEntry
from workflows.models.hook_outcome import HookOutcome, HookRun
from workflows.models.hooks import HookEvent, HookSet
from workflows.tools.base import ToolOutput

if TYPE_CHECKING:
    from workflows.hooks.tool_hooks import PreToolAction

__all__ = ["HookCommits"]


class HookCommits(LifecycleHooks):
    """Engine methods for hooks (``engine.hooks``)."""

    approvals: peers.Approvals
    commands: peers.Commands
    mcp: peers.Mcp
    tools: peers.Tools
    turns: peers.Turns

    @retry_on_conflict
    def add_hooks(self, sid: str, hooks: HookSet) -> None:
        """Add ``hooks`` to a session's own (they run after the settings files' hooks), for every worker.

        The entry point for hooks that do not come from settings files (the Agent SDK's ``initialize``).
        """
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            rec.hooks = rec.hooks.merged(hooks)
            self.committer.commit(Tx(rec))

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
                tx.finish(step)
                return
            if outcome is not None and call.pre_hook is None:  # (a retried commit records it once)
                call.pre_hook = outcome
                self.add_hook_entry(tx, outcome, call, step)
            if action.kind == "run":
                go_on.append(True)  # the step stays running: the tool runs next, on this worker
                return
            tx.finish(step)
            if action.kind == "ask":
                call.status = ToolCallStatus.AWAITING_APPROVAL
                call.step_id = None
                self.approvals.ask(tx, [self.approvals.request(tx.rec, call, action.input, action.reason)])
                return
            self.refuse_call(tx, call, action.reason, step)
            if action.stop:
                self.turns.abort_run(tx, "halt", "error_during_execution",
                                     f"Stopped by a PreToolUse hook: {action.stop}")
            else:
                self.tools.advance_tools(tx)

        steps = self.committer.step_event(sid, step_id, owner, apply)
        return bool(go_on), steps

    def ask_client_hooks(self, sid: str, step_id: str, owner: str, call: ToolCall, callbacks: list[str],
                         payload: dict) -> list[StepRecord]:
        """The call has PreToolUse callbacks only the SDK client can run: end the step and wait, as a
        durable request of kind ``hook``, for the client's answers (:meth:`answer_client_hooks`)."""

        def apply(tx, step: StepRecord) -> None:
            found = next((c for c in tx.rec.tool_calls if c.tool_use_id == call.tool_use_id), None)
            tx.finish(step)
            if found is None or found.status is ToolCallStatus.DONE:
                return
            found.status = ToolCallStatus.AWAITING_APPROVAL
            found.step_id = None
            req = self.approvals.request(tx.rec, found, found.input, "the client's PreToolUse hooks run first")
            req.kind, req.callbacks, req.hook_input, req.expires_at = "hook", list(callbacks), payload, None
            self.approvals.ask(tx, [req])

        return self.committer.step_event(sid, step_id, owner, apply)

    def answer_client_hooks(self, sid: str, request_id: str, runs: list[HookRun]) -> list[StepRecord]:
        """The SDK client answered a ``hook`` request: keep its callbacks' outputs on the call and run the
        call's step again, which joins them to the command hooks' and decides (workflows/steps/tool.py).

        A request of another event (:mod:`workflows.hooks.client_hooks`) goes to :meth:`answer_client_event`.

        Raises:
            RequestNotFound, RequestClosed: as :meth:`decide_request`.
        """
        if self.client_request(self.store.get_session(sid), request_id) is not None:
            return self.answer_client_event(sid, request_id, runs)

        def keep(call: ToolCall) -> None:
            call.client_hook_runs = list(runs)

        return self.approvals.client_answered(sid, request_id, "hook", keep)

    def hold_prompt(self, tx, prompt: str) -> bool:
        """A run starts: when MCP servers wait to be found, or SessionStart or UserPromptSubmit hooks must
        answer first, hold ``prompt`` in the record, move to ``querying`` and send that step; True then.
        False (nothing to wait for): go on."""
        rec = tx.rec
        rec.stop_hook_active, rec.run_stop_blocks, rec.prompt_checked = False, 0, False
        if not self._prompt_waits(rec):
            return False
        rec.held_prompt = prompt
        tx.fire("submit")
        self._send_prompt_gate(tx)
        return True

    def _prompt_waits(self, rec) -> bool:
        """Something must happen before the held prompt reaches the model: MCP discovery, or its hooks."""
        return self.mcp.mcp_waiting(rec) or prompt_event(rec) is not None

    def _send_prompt_gate(self, tx) -> None:
        """The next step before the prompt: MCP discovery first (SessionStart hooks then see a session whose
        tools are known), then SessionStart and UserPromptSubmit hooks."""
        if self.mcp.mcp_waiting(tx.rec):
            self.mcp.send_mcp_discovery(tx)
        else:
            self.committer.new_step(tx, StepKind.HOOK, event=prompt_event(tx.rec).value)

    def stop_gate(self, tx) -> bool:
        """The model answered without tool calls: True when Stop hooks run (a hook step) before the run ends."""
        event = HookEvent.SUBAGENT_STOP if tx.rec.parent_session_id else HookEvent.STOP  # a child: SubagentStop
        if not tx.rec.hooks.for_event(event):
            return False
        self.committer.new_step(tx, StepKind.HOOK, event=event.value)
        return True

    def settle_session_hook(self, sid: str, step_id: str, owner: str, outcome: HookOutcome | None, *,
                            answer: str = "") -> list[StepRecord]:
        """Commit a hook step's verdict (its ``hook`` entry) and, in the same transaction, what it leads to.

        ``answer``: for Stop, the model's answer (the run's result when the hook lets it stop).
        """

        def apply(tx, step: StepRecord) -> None:
            tx.finish(step)
            self.drop_client_request(tx, step)
            event = HookEvent(step.event)
            if outcome is not None:
                held = tx.rec.held_prompt if event is HookEvent.USER_PROMPT_SUBMIT else None
                self.add_hook_entry(tx, outcome, step=step,
                                    prompt_sha256=prompt_digest(held) if held is not None else None)
            if event in (HookEvent.STOP, HookEvent.SUBAGENT_STOP):
                self._after_stop(tx, outcome, answer)
            elif event is HookEvent.SESSION_START:
                tx.rec.session_started = True
                self.add_context(tx, event, outcome.context if outcome else [])
                if tx.rec.held_prompt is not None:
                    self.release_prompt(tx)
                else:  # SessionStart(compact) after an auto-compaction: the run goes on
                    self.committer.new_step(tx, StepKind.MODEL)
            elif event is HookEvent.PRE_COMPACT:
                self._after_pre_compact(tx, outcome)
            else:
                self._after_prompt_check(tx, outcome)

        return self.committer.step_event(sid, step_id, owner, apply)

    def _after_prompt_check(self, tx, outcome: HookOutcome | None) -> None:
        rec = tx.rec
        rec.prompt_checked = True
        if outcome is not None and (outcome.blocked or outcome.stop):
            # Claude Code: the prompt is erased (it never enters the transcript the model sees); the
            # reason is for the user only.
            rec.held_prompt = None
            why = outcome.reason if outcome.blocked else outcome.stop_reason
            tx.fire("halt")
            self.turns.add_result(tx, "success", f"Prompt blocked by a UserPromptSubmit hook: "
                                  f"{why or 'no reason given'}")
            self.turns.after_idle(tx)
            return
        self.release_prompt(tx, outcome.context if outcome else [])

    def release_prompt(self, tx, context: list[str] = ()) -> None:
        """The held prompt's next hooks, or (all answered) the prompt, its hooks' context and the model call."""
        rec = tx.rec
        if self._prompt_waits(rec):
            self._send_prompt_gate(tx)
            return
        prompt, rec.held_prompt = rec.held_prompt or "", None
        if rec.command is not None:  # a custom command: its lines run first (workflows.engine.commands)
            self.commands.start_command(tx, list(context))
            return
        self.turns.add_prompt(tx, prompt)
        self.add_context(tx, HookEvent.USER_PROMPT_SUBMIT, context)
        self.turns.next_model_call(tx)

    def _after_stop(self, tx, outcome: HookOutcome | None, answer: str) -> None:
        rec = tx.rec
        # A block, or additional context (Claude Code 2.1.332: "non-error feedback"), makes the model go on.
        if outcome is not None and (outcome.blocked or outcome.context) and not outcome.stop:
            if rec.run_stop_blocks < STOP_BLOCK_LIMIT:
                rec.run_stop_blocks += 1
                rec.stop_hook_active = True
                if outcome.blocked:
                    text = f"Stop hook feedback:\n{outcome.reason}"
                    tx.add(UserEntry(session_id=rec.id, message=Message(role="user", content=text),
                                     origin="synthetic"))
                    rec.context_added += estimate_tokens(text)
                self.add_context(tx, outcome.event, outcome.context)
                self.turns.next_model_call(tx)  # (which stops at the run's max turns)
                return
            tx.add(SystemEntry(session_id=rec.id, subtype="warning", content=(
                f"Stop hooks blocked the end of this run {STOP_BLOCK_LIMIT} times; it ends here.")))
        self.turns.end_run(tx, answer)

    def add_context(self, tx, event: HookEvent, context) -> None:
        for text in context:
            content = context_text(event, text)
            tx.add(UserEntry(session_id=tx.rec.id, message=Message(role="user", content=content),
                             origin="synthetic"))
            tx.rec.context_added += estimate_tokens(content)

    def add_hook_entry(self, tx, outcome: HookOutcome, call: ToolCall | None = None,
                       step: StepRecord | None = None, prompt_sha256: str | None = None) -> None:
        """The ``hook`` entry of ``outcome``, and a warning entry for what it says to the user."""
        rec = tx.rec
        tx.add(HookEntry(session_id=rec.id, event=outcome.event.value, outcome=outcome,
                         tool_use_id=call.tool_use_id if call else None, tool=call.name if call else None,
                         step_id=step.id if step else None, prompt_sha256=prompt_sha256))
        for message in outcome.messages:
            tx.add(SystemEntry(session_id=rec.id, subtype="warning", content=message,
                               step_id=step.id if step else None))

    def refuse_call(self, tx, call: ToolCall, reason: str, step: StepRecord | None = None) -> None:
        """The call is not run: ``reason`` is its (error) result, and it is listed among the run's denials."""
        self.turns.add_tool_result(tx, call.tool_use_id, ToolOutput(content=reason, is_error=True, denied=True,
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
