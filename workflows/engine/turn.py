"""One turn of the agent loop: the prompt, the model's reply, its tool calls, the next call, the end.

A part of :class:`workflows.engine.Engine` (``engine.turns``); it commits through
:class:`workflows.commit.Committer`.
"""

from __future__ import annotations

import time

from statemachines import State
from workflows.commit import Part, Tx, peers
from workflows.commit.charges import charge
from workflows.commit.support import (
    INTERRUPTED,
    INTERRUPTED_REPLY,
    _reset_run_figures,
    _title,
    context_size,
    stopped_output,
)
from workflows.engine import background
from workflows.model.client import ModelReply
from workflows.model.tokens import estimate_tokens, media_tokens, thresholds
from workflows.models import (
    AssistantEntry,
    Message,
    RequestStatus,
    ResultEntry,
    StepKind,
    StepRecord,
    StepStatus,
    StructuredRun,
    SystemEntry,
    TextBlock,
    ToolCallStatus,
    ToolResultBlock,
    Usage,
    UserEntry,
)
from workflows.store import keys
from workflows.tools import structured
from workflows.tools.base import ToolOutput


class TurnLogic(Part):
    """One turn of the agent loop: the prompt, the model's reply, its tool calls, the next call, the end."""

    commands: peers.Commands
    compaction: peers.Compaction
    forks: peers.Forks
    hooks: peers.Hooks
    mcp: peers.Mcp
    subagents: peers.Subagents
    titles: peers.Titles
    tools: peers.Tools

    def record_model_reply(self, sid: str, step_id: str, owner: str, reply: ModelReply,
                           ran: dict | None = None) -> list[StepRecord]:
        """Commit a model reply: record it, then fan out tool calls or end the run.

        ``ran``: tool_use id -> what the model step got running that call itself (a quick call,
        ``workflows.steps.tool.Ran``); used for each call the fan-out allows, recorded as its tool step's.
        """

        def apply(tx: Tx, step: StepRecord) -> None:
            tx.ran = dict(ran or {})
            tx.finish(step)
            rec = tx.rec
            msg = reply.message
            if reply.fallback_from:
                tx.add(SystemEntry(session_id=sid, subtype="warning", step_id=step.id, content=(
                    f"Model {reply.fallback_from} is overloaded ({reply.fallback_error}); this call was retried "
                    f"once with the fallback model {reply.model}.")))
            cost = charge(tx, msg.usage, reply.duration_ms, model=reply.model)
            rec.turns += 1
            rec.run_turns += 1
            u = msg.usage
            rec.context_tokens = (u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
                                  + u.output_tokens)
            rec.context_added = 0
            tx.add(AssistantEntry(session_id=sid, message=msg, cost_usd=cost,
                                  duration_ms=reply.duration_ms, step_id=step.id))
            tool_uses = msg.tool_uses()
            self.forks.maybe_update_session_memory(tx, len(tool_uses))
            if tool_uses:
                self.tools.fan_out(tx, tool_uses)
            elif self.enforce_structured(tx):  # told once to give its structured output: it answers again
                return
            elif not self.hooks.stop_gate(tx):  # no Stop hooks: the run ends here
                self.end_run(tx)

        return self.committer.step_event(sid, step_id, owner, apply)

    def start_run(self, tx: Tx, prompt: str) -> None:
        rec = tx.rec
        rec.run_started_at = time.time()
        rec.run_turns = 0
        rec.run_api_ms = 0
        rec.run_usage = Usage()
        rec.run_cost_usd = 0.0
        _reset_run_figures(rec)
        rec.tool_calls = []
        rec.run_denials = []
        rec.run_wrote_memory = False
        rec.last_error = None
        rec.structured = StructuredRun()
        rec.run_origin = background.origin(prompt)
        if not rec.title:
            rec.title = _title(prompt)
        rec.command, rec.run_model, rec.run_allow = None, None, []
        rec.command = self.commands.invoked_command(tx, prompt)  # a custom command: workflows.engine.commands
        if self.hooks.hold_prompt(tx, prompt):  # its session hooks run first, in a hook step
            return
        if rec.command is not None:
            tx.fire("submit")
            self.commands.start_command(tx, [])
            return
        self.add_prompt(tx, prompt)
        tx.fire("submit")
        self.next_model_call(tx)

    def add_prompt(self, tx: Tx, prompt: str) -> None:
        entry = UserEntry(session_id=tx.rec.id, message=Message(role="user", content=prompt))
        tx.add(entry)
        tx.rec.run_prompt_uuid = entry.uuid
        tx.rec.context_added += estimate_tokens(prompt)

    def next_model_call(self, tx: Tx) -> None:
        rec = tx.rec
        if rec.json_schema is not None and self.structured_end(tx):
            return
        if rec.max_turns is not None and rec.run_turns >= rec.max_turns:
            tx.fire("halt")
            self.add_result(tx, "error_max_turns", f"Stopped after reaching the turn limit ({rec.max_turns}).")
            self.after_idle(tx)
            return
        if rec.max_budget_usd is not None and (rec.run_cost_usd is None or rec.run_cost_usd >= rec.max_budget_usd):
            # An unknown cost cannot be held to a budget: stop rather than spend blind.
            spent = (f"spending ${rec.run_cost_usd:.4f} of" if rec.run_cost_usd is not None else
                     f"a call of a model without a price ({', '.join(rec.unpriced_models)}): the cost against")
            tx.fire("halt")
            self.add_result(tx, "error_max_budget_usd", f"Stopped after {spent} the ${rec.max_budget_usd:g} budget.")
            self.after_idle(tx)
            return
        limits = thresholds(rec.sent_model(), self.settings.autocompact_pct_override)
        if (self.settings.auto_compact and not rec.auto_compact_off
                and context_size(rec) >= limits.auto_compact):
            self.compaction.begin_compaction(tx, "auto")
            return
        self.committer.new_step(tx, StepKind.MODEL)

    def enforce_structured(self, tx: Tx) -> bool:
        """The model ended without its structured output (``--json-schema``): told to give it, once a run, as
        Claude Code does (True); else the run ends as any other (False)."""
        rec = tx.rec
        if rec.json_schema is None or rec.structured.output is not None or rec.structured.enforced:
            return False
        rec.structured.enforced = True
        tx.add(UserEntry(session_id=rec.id, message=Message(role="user", content=structured.ENFORCE),
                         origin="synthetic"))
        rec.context_added += estimate_tokens(structured.ENFORCE)
        self.next_model_call(tx)
        return True

    def structured_end(self, tx: Tx) -> bool:
        """After a reply's tool calls: a valid StructuredOutput call ends the run with it (no model call after
        it, as in Claude Code); :data:`~workflows.tools.structured.MAX_ATTEMPTS` invalid ones end it in error.
        Either way the turn of those results counts in ``num_turns``, as Claude Code counts it."""
        rec = tx.rec
        if rec.structured.output is not None:
            self.end_run(tx, structured.output_text(rec.structured.output), structured_output=rec.structured.output)
            return True
        if (error := structured.retries_exhausted(rec)) is not None:
            tx.fire("halt")
            self.add_result(tx, "error_max_structured_output_retries", error, num_turns=rec.run_turns + 1)
            self.after_idle(tx)
            return True
        return False

    def end_run(self, tx: Tx, text: str | None = None, structured_output: dict | None = None) -> None:
        """The model answered: the result (``text``, else the answer in ``tx``), then memory or idle."""
        tx.fire("answered")
        for e in reversed(tx.entries if text is None else []):
            if isinstance(e, AssistantEntry):
                text = e.message.text()
                break
        text = text or ""
        if structured_output is None:
            self.add_result(tx, "success", text)
        else:
            self.add_result(tx, "success", text, structured_output=structured_output,
                            num_turns=tx.rec.run_turns + 1)
        result = tx.entries[-1]
        self.titles.ask_title(tx)
        if tx.rec.state is State.EXTRACTING:
            self.forks.begin_extraction(tx)
            result.memory_saving = bool(tx.rec.extract_step or tx.rec.memory_step)
        else:
            self.after_idle(tx)

    def queued(self, tx: Tx) -> list[str]:
        """The inbox as this event sees it: what Redis holds, then what the event queues itself."""
        return self.store.inbox(tx.rec.id) + tx.inbox_pushes

    def after_idle(self, tx: Tx) -> None:
        """The session is idle: the oldest queued message, if any, starts the next run."""
        queued = self.queued(tx)
        if tx.rec.state is State.IDLE and len(queued) > tx.inbox_pops:
            prompt = queued[tx.inbox_pops]
            tx.inbox_pops += 1
            self.start_run(tx, prompt)

    def fail(self, tx: Tx, step: StepRecord, error: str) -> None:
        if step.kind is StepKind.REPORT:  # the run had ended already: only the report failed
            step.status, step.error = StepStatus.FAILED, error
            tx.steps.append(step)
            tx.cleared.append(step)
            tx.add(SystemEntry(session_id=tx.rec.id, subtype="error", step_id=step.id,
                               content=f"Could not report this sub-agent's answer to its parent: {error}"))
            return
        if step.kind is StepKind.MCP:  # the servers fail; the run goes on without them
            self.mcp.mcp_discovery_failed(tx, step, error)
            return
        if step.background and step.kind is StepKind.HOOK:
            self.hooks.background_hook_failed(tx, step, error)
            return
        if step.kind is StepKind.TITLE:  # the session keeps its prompt as its title
            self.titles.title_done(tx, step, None, error)
            return
        if step.background:
            self.forks.fork_failed(tx, step, error)
            return
        step.status = StepStatus.FAILED
        step.error = error
        tx.steps.append(step)
        tx.cleared.append(step)
        tx.rec.last_error = error
        tx.add(SystemEntry(session_id=tx.rec.id, subtype="error", content=error, step_id=step.id))
        self.abort_run(tx, "fail", "error_during_execution", error)

    def abort_run(self, tx: Tx, trigger: str, subtype: str, reason: str) -> None:
        """End the run early: newer epoch, every dangling tool call closed, back to idle.

        The user's interrupt (``cancel``) closes them as Claude Code 2.1.332 does: each call's result is its
        rejection text (:func:`~workflows.commit.support.stopped_output`), then a user message of its own says
        :data:`INTERRUPTED`, and the result counts those two turns and ends ``aborted_tools``; with no call open
        (a reply streaming) the message says :data:`INTERRUPTED_REPLY` and the run ends ``aborted_streaming``. A
        failure or a hook's stop closes them with :data:`INTERRUPTED` as their result."""
        rec = tx.rec
        rec.epoch += 1
        self.subagents.release_children(tx)
        rec.held_prompt = None  # a prompt still held for its MCP servers or hooks ends with the run
        for req in rec.pending_requests():
            req.status = RequestStatus.SUPERSEDED
            tx.approvals_cleared.append(keys.lease_member(rec.id, req.id))
        user = trigger == "cancel"
        open_calls = [c for c in rec.tool_calls if c.status is not ToolCallStatus.DONE]
        for call in open_calls:
            self.add_tool_result(tx, call.tool_use_id, stopped_output(call.status is ToolCallStatus.DISPATCHED)
                                 if user else ToolOutput(content=INTERRUPTED, is_error=True, display="interrupted"))
        rec.tool_calls = []
        if user:  # (with no call open the reply was streaming, or its step waiting: Claude Code's other text)
            said = INTERRUPTED if open_calls else INTERRUPTED_REPLY
            tx.add(UserEntry(session_id=rec.id, message=Message(role="user", content=[TextBlock(text=said)]),
                             origin="interrupt"))
            rec.context_added += estimate_tokens(said)
        tx.fire(trigger)
        if user:  # (the results' turn, or the cut reply's, and the interrupt's, as Claude Code counts them)
            self.add_result(tx, subtype, reason, is_error=True, num_turns=rec.run_turns + 2,
                            terminal_reason="aborted_tools" if open_calls else "aborted_streaming")
        else:
            self.add_result(tx, subtype, reason, is_error=True)
        self.after_idle(tx)  # the inbox is a queue: a cancel or a failure does not drop it

    def add_tool_result(self, tx: Tx, tool_use_id: str, output: ToolOutput, step_id: str | None = None) -> None:
        """A call's result entry (every result comes here; a custom command's line keeps it for its prompt)."""
        if tx.rec.command is not None and self.commands.command_output(tx, tool_use_id, output):
            return  # a custom command's line: its result goes into the command's prompt (workflows.engine.commands)
        block = ToolResultBlock(tool_use_id=tool_use_id, content=output.blocks or output.content,
                                is_error=output.is_error)
        tx.rec.context_added += media_tokens(output.blocks) if output.blocks else estimate_tokens(output.content)
        tx.add(UserEntry(session_id=tx.rec.id, message=Message(role="user", content=[block]),
                         origin="tool_result", display=output.display or None, step_id=step_id,
                         tool_use_result=output.result, denied=output.denied))
        if output.followup:  # a skill's text: a block of its own after the result (workflows.tools.skill)
            tx.rec.context_added += estimate_tokens(output.followup)
            text = Message(role="user", content=[TextBlock(text=output.followup)])
            tx.add(UserEntry(session_id=tx.rec.id, message=text, origin="skill", step_id=step_id))

    def add_result(self, tx: Tx, subtype: str, text: str, is_error: bool = False, *,
                   structured_output: dict | None = None, num_turns: int | None = None,
                   terminal_reason: str | None = None) -> None:
        """The run's result entry (every end of a run comes here); a sub-agent's also sends its report.
        ``num_turns``: None counts the run's model replies."""
        rec = tx.rec
        rec.command, rec.run_model, rec.run_allow = None, None, []  # a command's hold on its run ends with it
        tx.add(ResultEntry(
            session_id=rec.id, subtype=subtype, is_error=is_error or subtype != "success", result=text,
            structured_output=structured_output,
            num_turns=rec.run_turns if num_turns is None else num_turns,
            duration_ms=int((time.time() - rec.run_started_at) * 1000),
            duration_api_ms=rec.run_api_ms, usage=rec.run_usage, total_cost_usd=rec.run_cost_usd,
            permission_denials=list(rec.run_denials),
            usage_by_model=dict(rec.run_usage_by_model), cost_by_model=dict(rec.run_cost_by_model),
            memory_usage=rec.run_memory_usage, memory_cost_usd=rec.run_memory_cost_usd,
            memory_saving=rec.saving_memory(), session_usage=rec.usage, session_cost_usd=rec.cost_usd,
            terminal_reason=terminal_reason,
            subagent_stats=rec.subagent_stats or None,
            origin=rec.run_origin,
        ))
        if rec.parent_session_id:
            self.subagents.child_ended(tx)
