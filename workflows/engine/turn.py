"""One turn of the agent loop: the prompt, the model's reply, its tool calls, the next call, the end.

A part of :class:`workflows.engine.Engine` (a mixin); see :mod:`workflows.engine.commit` for the
commit every event goes through.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable

from statemachines import State
from workflows import keys
from workflows.engine.support import (
    INTERRUPTED,
    MEMORY_WRITERS,
    _add_to,
    _denial,
    _reset_run_figures,
    _title,
    _Tx,
)
from workflows.exceptions import (
    ToolInputError,
)
from workflows.hooks.commits import tool_event_stops
from workflows.hooks.config import HookEvent
from workflows.hooks.outcome import HookOutcome
from workflows.mcp.catalog import find_tool
from workflows.mcp.tools import is_mcp_name
from workflows.metrics import count_usage
from workflows.model_client import ModelReply
from workflows.models import (
    AssistantEntry,
    Message,
    PermissionDecisionEntry,
    PermissionRequest,
    RequestStatus,
    SessionRecord,
    StepKind,
    StepRecord,
    StepStatus,
    SystemEntry,
    ToolCall,
    ToolCallStatus,
    Usage,
    UserEntry,
)
from workflows.permissions import Decision, decide
from workflows.model_lifecycle import lifecycle_note
from workflows.pricing import add_cost, cost_usd, unknown_price_note
from workflows.tokens import estimate_tokens, thresholds
from workflows.tools import get_tool
from workflows.tools.base import ToolOutput

if TYPE_CHECKING:
    from workflows.fenced import Recorder

#: Task calls one reply may start (Claude Code runs at most 10 at once); more are refused with a result
#: that says so, so a hostile or confused model cannot fan out without bound.
MAX_SUBAGENTS_PER_REPLY = 10


def runs_early(rec: SessionRecord, name: str, tool) -> bool:
    """Whether a call of ``tool`` (registered as ``name``) may run in the model step of the reply that
    asks for it, the session as ``rec`` holds (workflows/tool_step.py): a quick tool the session offers,
    with no PreToolUse or PostToolUse hook on it, outside a custom command's run. Asked by the model step
    before it runs the call, and by the commit of the reply before it records the result."""
    return (tool.quick and rec.command is None and (rec.tools is None or name in rec.tools)
            and not any(rec.hooks.for_event(event, name) for event in (HookEvent.PRE_TOOL_USE,
                                                                         HookEvent.POST_TOOL_USE)))


class TurnLogic:
    """One turn of the agent loop: the prompt, the model's reply, its tool calls, the next call, the end."""

    def record_model_reply(self, sid: str, step_id: str, owner: str, reply: ModelReply,
                           ran: dict | None = None) -> list[StepRecord]:
        """Commit a model reply: record it, then fan out tool calls or end the run.

        ``ran``: tool_use id -> what the model step got running that call itself (a quick call,
        ``workflows.tool_step.Ran``); used for each call the fan-out allows, recorded as its tool step's.
        """

        def apply(tx: _Tx, step: StepRecord) -> None:
            tx.ran = dict(ran or {})
            self._finish_step(tx, step)
            rec = tx.rec
            msg = reply.message
            if reply.fallback_from:
                self._add(tx, SystemEntry(session_id=sid, subtype="warning", step_id=step.id, content=(
                    f"Model {reply.fallback_from} is overloaded ({reply.fallback_error}); this call was retried "
                    f"once with the fallback model {reply.model}.")))
            cost = self._charge(tx, msg.usage, reply.duration_ms, model=reply.model)
            rec.turns += 1
            rec.run_turns += 1
            u = msg.usage
            rec.context_tokens = (u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
                                  + u.output_tokens)
            rec.context_added = 0
            self._add(tx, AssistantEntry(session_id=sid, message=msg, cost_usd=cost,
                                         duration_ms=reply.duration_ms, step_id=step.id))
            tool_uses = msg.tool_uses()
            self._maybe_update_session_memory(tx, len(tool_uses))
            if tool_uses:
                self._fan_out(tx, tool_uses)
            elif not self.stop_gate(tx):  # no Stop hooks: the run ends here
                self._end_run(tx)

        return self._step_event(sid, step_id, owner, apply)

    def _charge(self, tx: _Tx, usage: Usage, duration_ms: int, *, run: bool | None = True, kind: str | None = None,
                model: str | None = None) -> float | None:
        """Add a call's usage and cost to the session's totals, per model and per kind of call.

        ``run``: a call of the run's main loop (a model turn or a compaction), counted in the
        run's figures; False: a memory fork, counted in the run's memory figures; None: a call beside
        the runs (the session's title), in the session's totals only.
        ``kind`` (a key of :data:`COST_KINDS`) defaults to ``compact`` while compacting,
        ``main`` for other run calls and ``memory`` for forks. ``model``: the id the call sent
        (default: what the session's model resolves to now). A model without a price makes the
        call's cost, and every figure it goes into, None (unknown); the session says so once.
        """
        rec = tx.rec
        kind = kind or (("compact" if rec.state is State.COMPACTING else "main") if run else "memory")
        model = model or rec.sent_model()
        cost = cost_usd(model, usage)
        if cost is None and model not in rec.unpriced_models:
            rec.unpriced_models.append(model)
            self._add(tx, SystemEntry(session_id=rec.id, subtype="warning", content=unknown_price_note(model)))
        if model not in rec.usage_by_model and (note := lifecycle_note(model)):  # its first call in the session
            self._add(tx, SystemEntry(session_id=rec.id, subtype="warning", content=note))
        rec.usage = rec.usage + usage
        tx.counts.append(lambda: count_usage(model, kind, usage, cost))
        _add_to(rec.usage_by_model, rec.cost_by_model, model, usage, cost)
        _add_to(rec.usage_by_kind, rec.cost_by_kind, kind, usage, cost)
        rec.cost_usd = add_cost(rec.cost_usd, cost)
        rec.api_ms += duration_ms
        if run:
            rec.run_usage = rec.run_usage + usage
            rec.run_cost_usd = add_cost(rec.run_cost_usd, cost)
            rec.run_api_ms += duration_ms
            _add_to(rec.run_usage_by_model, rec.run_cost_by_model, model, usage, cost)
        elif run is False:
            rec.run_memory_usage = rec.run_memory_usage + usage
            rec.run_memory_cost_usd = add_cost(rec.run_memory_cost_usd, cost)
        return cost

    def record_tool_output(self, sid: str, step_id: str, owner: str, output: ToolOutput,
                           hook: HookOutcome | None = None,
                           writes: Callable[[Recorder], None] | None = None) -> list[StepRecord]:
        """Commit one tool result (and its PostToolUse ``hook`` outcome); when its batch is complete,
        start the next batch or model call. ``writes``: more writes of the tool run (the files it read)
        made by the same commit, when it lands."""

        def apply(tx: _Tx, step: StepRecord) -> None:
            self._record_tool_result(tx, step, output, hook)
            if writes is not None:
                tx.extra.append(writes)

        return self._step_event(sid, step_id, owner, apply)

    def _record_tool_result(self, tx: _Tx, step: StepRecord, output: ToolOutput, hook: HookOutcome | None) -> None:
        """A call's step is done: its result (and its PostToolUse verdict); then the batch goes on."""
        self._finish_step(tx, step)
        call = next((c for c in tx.rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
        if call is None or call.status is ToolCallStatus.DONE:
            return
        if hook is not None:
            self.add_hook_entry(tx, hook, call, step)
        if output.usage is not None:  # the tool called a model (WebFetch, WebSearch): the session pays
            self._charge(tx, output.usage, output.duration_ms, kind="web", model=output.model)
        self._add_tool_result(tx, call.tool_use_id, output, step_id=step.id)
        call.status = ToolCallStatus.DONE
        if call.name in MEMORY_WRITERS and not output.is_error:
            tx.rec.run_wrote_memory = True
        if (stop := tool_event_stops(hook)) is not None:
            self._abort_run(tx, "halt", "error_during_execution", f"Stopped by a PostToolUse hook: {stop}")
            return
        self._advance_tools(tx)

    def _start_run(self, tx: _Tx, prompt: str) -> None:
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
        if not rec.title:
            rec.title = _title(prompt)
        rec.command, rec.run_model, rec.run_allow = None, None, []
        rec.command = self._invoked_command(tx, prompt)  # a custom command: workflows.engine.commands
        if self.hold_prompt(tx, prompt):  # its session hooks run first, in a hook step
            return
        if rec.command is not None:
            self._fire(tx, "submit")
            self.start_command(tx, [])
            return
        self._add_prompt(tx, prompt)
        self._fire(tx, "submit")
        self._next_model_call(tx)

    def _add_prompt(self, tx: _Tx, prompt: str) -> None:
        entry = UserEntry(session_id=tx.rec.id, message=Message(role="user", content=prompt))
        self._add(tx, entry)
        tx.rec.run_prompt_uuid = entry.uuid
        tx.rec.context_added += estimate_tokens(prompt)

    def _fan_out(self, tx: _Tx, tool_uses) -> None:
        """Check every tool call (input, permission); dispatch the first batch, or ask.

        Consecutive read-only calls form one batch that runs in parallel; each
        mutating call is a batch of its own, so they run in the order given. A
        call that asks holds every batch until a person (or a timeout) decides;
        no worker waits meanwhile.
        """
        rec = tx.rec
        calls: list[ToolCall] = []
        refused: list[tuple[str, ToolOutput]] = []
        asked: list[PermissionRequest] = []
        batch, prev_read_only, subagents = -1, False, 0
        for tu in tool_uses:
            try:
                tool = find_tool(self.store, rec, tu.name)
                if tool.memory_tool and not (rec.auto_memory and rec.project_id):
                    raise ToolInputError(f"{tu.name} is not available: auto-memory is off for this session.")
                if rec.tools is not None and tu.name not in rec.tools and not is_mcp_name(tu.name):
                    raise ToolInputError(f"{tu.name} is not available in this session; its tools are: "
                                         f"{', '.join(rec.tools) or 'none'}.")
                tool.validate(tu.input)
                if tool.subagent:
                    self._check_agent_type(rec, tu.input)
                    subagents += 1
                    if subagents > MAX_SUBAGENTS_PER_REPLY:
                        raise ToolInputError(f"At most {MAX_SUBAGENTS_PER_REPLY} sub-agents run per reply; this "
                                             "Task call was not started. Start it after the others answer.")
            except ToolInputError as exc:
                refused.append((tu.id, ToolOutput(content=str(exc), is_error=True, display=str(exc)[:120])))
                continue
            perm = decide(tool, tu.input, rec)
            if tool.inline and perm.decision is Decision.ALLOW:  # TodoWrite: applied here, with the reply
                refused.append((tu.id, self._run_inline(rec, tool, tu.input)))
                continue
            if perm.decision is Decision.DENY:
                refused.append((tu.id, ToolOutput(content=perm.reason, is_error=True, display=perm.display)))
                rec.run_denials.append(_denial(tu.name, tu.id, tu.input))
                self._add(tx, PermissionDecisionEntry(
                    session_id=rec.id, tool_use_id=tu.id, tool=tu.name, decision="deny",
                    decided_by="rule" if perm.rule else "mode", reason=perm.source))
                continue
            if not (tool.read_only and prev_read_only):
                batch += 1
            prev_read_only = tool.read_only
            call = ToolCall(tool_use_id=tu.id, name=tu.name, input=tu.input, batch=batch)
            if (perm.decision is Decision.ASK and not tool.subagent
                    and rec.hooks.for_event(HookEvent.PRE_TOOL_USE, tu.name)):
                call.hooks_pending = True  # its hooks run first, on the tools worker; they may allow or deny it
            elif perm.decision is Decision.ASK:
                call.status = ToolCallStatus.AWAITING_APPROVAL
                asked.append(self._request(rec, call, tu.input, perm.reason or perm.source))
            elif perm.rule:
                self._add(tx, PermissionDecisionEntry(
                    session_id=rec.id, tool_use_id=tu.id, tool=tu.name, decision="allow", decided_by="rule",
                    reason=perm.source))
            calls.append(call)
        rec.tool_calls = calls
        rec.current_batch = -1
        for tool_use_id, output in refused:
            self._add_tool_result(tx, tool_use_id, output)
        if asked:
            self._ask(tx, asked)
            return
        self._fire(tx, "tools_requested")
        self._advance_tools(tx)

    def _run_inline(self, rec: SessionRecord, tool, tool_input: dict) -> ToolOutput:
        """A tool that needs no worker (TodoWrite): its effect on the record and its result, at once."""
        return tool.apply(rec, tool.validate(tool_input))

    def _advance_tools(self, tx: _Tx) -> None:
        """Dispatch the current batch's waiting calls; when it is done, the next batch; after the last, the model.

        A call of the current batch may wait again (its PreToolUse hook asked; it was approved since).
        """
        rec = tx.rec
        while True:
            if self.command_failed(tx):  # a custom command's line failed or was refused: its run ends here
                return
            batch = [c for c in rec.tool_calls if c.batch == rec.current_batch]
            for call in batch:
                if call.status is ToolCallStatus.WAITING and not is_mcp_name(call.name) and get_tool(call.name).subagent:
                    self._start_child(tx, call)  # a Task call: a child session (workflows.engine.subagents)
                elif (call.status is ToolCallStatus.WAITING and call.tool_use_id in tx.ran and not call.hooks_pending
                      and not is_mcp_name(call.name) and runs_early(rec, call.name, get_tool(call.name))):
                    self._ran_here(tx, call, tx.ran.pop(call.tool_use_id))  # (allowed by this commit's fan-out)
                elif call.status is ToolCallStatus.WAITING:
                    step = self._new_step(tx, StepKind.TOOL, tool_use_id=call.tool_use_id)
                    call.step_id = step.id
                    call.status = ToolCallStatus.DISPATCHED
            if any(c.status is not ToolCallStatus.DONE for c in batch):
                return
            rec.current_batch += 1
            if not any(c.batch >= rec.current_batch for c in rec.tool_calls):
                rec.tool_calls = []
                self._fire(tx, "tools_finished")
                if rec.command is not None:  # a custom command's lines ran: now its prompt
                    self.send_command(tx)
                else:
                    self._next_model_call(tx)
                return

    def _ran_here(self, tx: _Tx, call, ran) -> None:
        """A call the model step ran itself (a quick call): its tool step, born done, and its result."""
        step = self._new_step(tx, StepKind.TOOL, tool_use_id=call.tool_use_id)
        tx.dispatch.remove(step)
        del tx.leases[step.id]
        step.status, step.created_at = StepStatus.DONE, ran.started  # (its duration: from the run to this commit)
        call.step_id = step.id
        self._add_tool_result(tx, call.tool_use_id, ran.output, step_id=step.id)
        call.status = ToolCallStatus.DONE
        if ran.writes is not None:
            tx.extra.append(ran.writes)

    def _next_model_call(self, tx: _Tx) -> None:
        rec = tx.rec
        if rec.max_turns is not None and rec.run_turns >= rec.max_turns:
            self._fire(tx, "halt")
            self._add_result(tx, "error_max_turns", f"Stopped after reaching the turn limit ({rec.max_turns}).")
            self._after_idle(tx)
            return
        if rec.max_budget_usd is not None and (rec.run_cost_usd is None or rec.run_cost_usd >= rec.max_budget_usd):
            # An unknown cost cannot be held to a budget: stop rather than spend blind.
            spent = (f"spending ${rec.run_cost_usd:.4f} of" if rec.run_cost_usd is not None else
                     f"a call of a model without a price ({', '.join(rec.unpriced_models)}): the cost against")
            self._fire(tx, "halt")
            self._add_result(tx, "error_max_budget_usd", f"Stopped after {spent} the ${rec.max_budget_usd:g} budget.")
            self._after_idle(tx)
            return
        limits = thresholds(rec.sent_model(), self.settings.autocompact_pct_override)
        if (self.settings.auto_compact and not rec.auto_compact_off
                and self.context_size(rec) >= limits.auto_compact):
            self._begin_compaction(tx, "auto")
            return
        self._new_step(tx, StepKind.MODEL)

    def _end_run(self, tx: _Tx, text: str | None = None) -> None:
        """The model answered: the result (``text``, else the answer in ``tx``), then memory or idle."""
        self._fire(tx, "answered")
        for e in reversed(tx.entries if text is None else []):
            if isinstance(e, AssistantEntry):
                text = e.message.text()
                break
        text = text or ""
        self._add_result(tx, "success", text)
        result = tx.entries[-1]
        self._ask_title(tx)
        if tx.rec.state is State.EXTRACTING:
            self._begin_extraction(tx)
            result.memory_saving = bool(tx.rec.extract_step or tx.rec.memory_step)
        else:
            self._after_idle(tx)

    def _queued(self, tx: _Tx) -> list[str]:
        """The inbox as this event sees it: what Redis holds, then what the event queues itself."""
        return self.store.inbox(tx.rec.id) + tx.inbox_pushes

    def _after_idle(self, tx: _Tx) -> None:
        """The session is idle: the oldest queued message, if any, starts the next run."""
        queued = self._queued(tx)
        if tx.rec.state is State.IDLE and len(queued) > tx.inbox_pops:
            prompt = queued[tx.inbox_pops]
            tx.inbox_pops += 1
            self._start_run(tx, prompt)

    def _fail(self, tx: _Tx, step: StepRecord, error: str) -> None:
        if step.kind is StepKind.REPORT:  # the run had ended already: only the report failed
            step.status, step.error = StepStatus.FAILED, error
            tx.steps.append(step)
            tx.cleared.append(step)
            self._add(tx, SystemEntry(session_id=tx.rec.id, subtype="error", step_id=step.id,
                                      content=f"Could not report this sub-agent's answer to its parent: {error}"))
            return
        if step.kind is StepKind.MCP:  # the servers fail; the run goes on without them
            self.mcp_discovery_failed(tx, step, error)
            return
        if step.background and step.kind is StepKind.HOOK:
            self.background_hook_failed(tx, step, error)
            return
        if step.kind is StepKind.TITLE:  # the session keeps its prompt as its title
            self._title_done(tx, step, None, error)
            return
        if step.background:
            self._fork_failed(tx, step, error)
            return
        step.status = StepStatus.FAILED
        step.error = error
        tx.steps.append(step)
        tx.cleared.append(step)
        tx.rec.last_error = error
        self._add(tx, SystemEntry(session_id=tx.rec.id, subtype="error", content=error, step_id=step.id))
        self._abort_run(tx, "fail", "error_during_execution", error)

    def _abort_run(self, tx: _Tx, trigger: str, subtype: str, reason: str) -> None:
        """End the run early: newer epoch, every dangling tool call closed, back to idle."""
        rec = tx.rec
        rec.epoch += 1
        self._release_children(tx)
        rec.held_prompt = None  # a prompt still held for its MCP servers or hooks ends with the run
        for req in rec.pending_requests():
            req.status = RequestStatus.SUPERSEDED
            tx.approvals_cleared.append(keys.lease_member(rec.id, req.id))
        for call in rec.tool_calls:
            if call.status is not ToolCallStatus.DONE:
                self._add_tool_result(tx, call.tool_use_id, ToolOutput(content=INTERRUPTED, is_error=True,
                                                                       display="interrupted"))
        rec.tool_calls = []
        self._fire(tx, trigger)
        self._add_result(tx, subtype, reason, is_error=True)
        self._after_idle(tx)  # the inbox is a queue: a cancel or a failure does not drop it
