"""A reply's tool calls: checked (input, permission), batched, asked about or dispatched, and their results
recorded; a quick call the model step ran itself is recorded with the reply.

A part of :class:`workflows.engine.Engine`. Consecutive read-only calls form one batch that runs in parallel;
each mutating call is a batch of its own; after the last batch the turn goes on (:mod:`workflows.engine.turn`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from workflows.commit import Part, Tx, peers
from workflows.commit.charges import charge
from workflows.commit.support import (
    MEMORY_WRITERS,
    _denial,
)
from workflows.exceptions import ToolError, ToolInputError
from workflows.hooks.commits import tool_event_stops
from workflows.mcp.catalog import find_tool
from workflows.mcp.tools import is_mcp_name
from workflows.models import (
    PermissionDecisionEntry,
    PermissionRequest,
    SessionRecord,
    StepKind,
    StepRecord,
    StepStatus,
    ToolCall,
    ToolCallStatus,
)
from workflows.models.hook_outcome import HookOutcome
from workflows.models.hooks import HookEvent
from workflows.permissions import Decision, decide
from workflows.tools import get_tool
from workflows.tools.base import ToolOutput, refused_output
from workflows.tools.structured import NAME as STRUCTURED

if TYPE_CHECKING:
    from workflows.store.fenced import Recorder

#: Task calls one reply may start (Claude Code runs at most 10 at once); more are refused with a result
#: that says so, so a hostile or confused model cannot fan out without bound.
MAX_SUBAGENTS_PER_REPLY = 10


def runs_early(rec: SessionRecord, name: str, tool) -> bool:
    """Whether a call of ``tool`` (registered as ``name``) may run in the model step of the reply that
    asks for it, the session as ``rec`` holds (workflows/steps/tool.py): a quick tool the session offers,
    with no PreToolUse or PostToolUse hook on it, outside a custom command's run. Asked by the model step
    before it runs the call, and by the commit of the reply before it records the result."""
    return (tool.quick and rec.command is None and (rec.tools is None or name in rec.tools)
            and not any(rec.hooks.for_event(event, name) for event in (
                HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE, HookEvent.POST_TOOL_USE_FAILURE)))


class ToolCalls(Part):
    """A reply's tool calls: checked, batched, asked about or dispatched, and their results recorded."""

    approvals: peers.Approvals
    commands: peers.Commands
    hooks: peers.Hooks
    subagents: peers.Subagents
    turns: peers.Turns

    def record_tool_output(self, sid: str, step_id: str, owner: str, output: ToolOutput,
                           hook: HookOutcome | None = None,
                           writes: Callable[[Recorder], None] | None = None) -> list[StepRecord]:
        """Commit one tool result (and its PostToolUse ``hook`` outcome); when its batch is complete,
        start the next batch or model call. ``writes``: more writes of the tool run (the files it read)
        made by the same commit, when it lands."""

        def apply(tx: Tx, step: StepRecord) -> None:
            self.record_tool_result(tx, step, output, hook)
            if writes is not None:
                tx.extra.append(writes)

        return self.committer.step_event(sid, step_id, owner, apply)

    def record_tool_result(self, tx: Tx, step: StepRecord, output: ToolOutput, hook: HookOutcome | None) -> None:
        """A call's step is done: its result (and its PostToolUse verdict); then the batch goes on."""
        tx.finish(step)
        call = next((c for c in tx.rec.tool_calls if c.tool_use_id == step.tool_use_id), None)
        if call is None or call.status is ToolCallStatus.DONE:
            return
        self.record_held_result(tx, call, output, hook, step)

    def record_held_result(self, tx: Tx, call: ToolCall, output: ToolOutput, hook: HookOutcome | None,
                           step: StepRecord | None = None) -> None:
        """``call``'s result and its PostToolUse verdict (``step``: the step that ran it, when it ends here;
        None: the result was held for the SDK client's PostToolUse callbacks); then the batch goes on."""
        if hook is not None:
            self.hooks.add_hook_entry(tx, hook, call, step)
        if output.usage is not None:  # the tool called a model (WebFetch, WebSearch): the session pays
            charge(tx, output.usage, output.duration_ms, kind="web", model=output.model)
        self.turns.add_tool_result(tx, call.tool_use_id, output, step_id=step.id if step else None)
        call.status = ToolCallStatus.DONE
        if call.name in MEMORY_WRITERS and not output.is_error:
            tx.rec.run_wrote_memory = True
        if (stop := tool_event_stops(hook)) is not None:
            self.turns.abort_run(tx, "halt", "error_during_execution", f"Stopped by a PostToolUse hook: {stop}")
            return
        self.advance_tools(tx)

    def fan_out(self, tx: Tx, tool_uses) -> None:
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
                if (rec.tools is not None and tool.name not in rec.tools and not is_mcp_name(tu.name)
                        and not (tu.name == STRUCTURED and rec.json_schema is not None)):
                    raise ToolInputError(f"{tu.name} is not available in this session; its tools are: "
                                         f"{', '.join(rec.tools) or 'none'}.")
                tool.validate(tu.input)
                if tool.subagent:
                    self.subagents.check_agent_type(rec, tu.input)
                    subagents += 1
                    if subagents > MAX_SUBAGENTS_PER_REPLY:
                        raise ToolInputError(f"At most {MAX_SUBAGENTS_PER_REPLY} sub-agents run per reply; this "
                                             "Task call was not started. Start it after the others answer.")
            except ToolInputError as exc:
                refused.append((tu.id, refused_output(str(exc))))
                continue
            perm = decide(tool, tu.input, rec)
            if tool.inline and perm.decision is Decision.ALLOW:  # TodoWrite: applied here, with the reply
                refused.append((tu.id, self._run_inline(rec, tool, tu.input)))
                continue
            hooked = ((perm.decision is Decision.ASK or perm.nobody) and not tool.subagent
                      and bool(rec.hooks.for_event(HookEvent.PRE_TOOL_USE, tu.name)))
            if perm.decision is Decision.DENY and not hooked:
                refused.append((tu.id, ToolOutput(content=perm.reason, is_error=True, display=perm.display,
                                                  denied=True)))
                rec.run_denials.append(_denial(tu.name, tu.id, tu.input))
                tx.add(PermissionDecisionEntry(
                    session_id=rec.id, tool_use_id=tu.id, tool=tu.name, decision="deny",
                    decided_by="rule" if perm.rule else "mode", reason=perm.source))
                continue
            if not (tool.read_only and prev_read_only):
                batch += 1
            prev_read_only = tool.read_only
            call = ToolCall(tool_use_id=tu.id, name=tu.name, input=tu.input, batch=batch)
            if hooked:  # its hooks run first, on the tools worker; they may allow or deny it (even in print
                call.hooks_pending = True  # mode, where nobody answers an ask: as Claude Code)
            elif perm.decision is Decision.ASK:
                call.status = ToolCallStatus.AWAITING_APPROVAL
                asked.append(self.approvals.request(rec, call, tu.input, perm.reason or perm.source))
            elif perm.rule:
                tx.add(PermissionDecisionEntry(
                    session_id=rec.id, tool_use_id=tu.id, tool=tu.name, decision="allow", decided_by="rule",
                    reason=perm.source))
            calls.append(call)
        rec.tool_calls = calls
        rec.current_batch = -1
        for tool_use_id, output in refused:
            self.turns.add_tool_result(tx, tool_use_id, output)
        if asked:
            self.approvals.ask(tx, asked)
            return
        tx.fire("tools_requested")
        self.advance_tools(tx)

    def _run_inline(self, rec: SessionRecord, tool, tool_input: dict) -> ToolOutput:
        """A tool that needs no worker (TodoWrite, Skill): its effect on the record and its result, at once."""
        try:
            if tool.reads_commands:
                return tool.apply(rec, tool.validate(tool_input), commands=self.store.commands(rec.id))
            return tool.apply(rec, tool.validate(tool_input))
        except ToolError as exc:  # (as run_tool: the model gets the reason, the reply's commit goes on)
            return ToolOutput(content=str(exc), is_error=True, display=str(exc).splitlines()[0][:120])

    def advance_tools(self, tx: Tx) -> None:
        """Dispatch the current batch's waiting calls; when it is done, the next batch; after the last, the model.

        A call of the current batch may wait again (its PreToolUse hook asked; it was approved since).
        """
        rec = tx.rec
        while True:
            if self.commands.command_failed(tx):  # a custom command's line failed or was refused: its run ends here
                return
            batch = [c for c in rec.tool_calls if c.batch == rec.current_batch]
            for call in batch:
                if call.status is ToolCallStatus.WAITING and not is_mcp_name(call.name) and get_tool(call.name).subagent:
                    self.subagents.start_child(tx, call)  # a Task call: a child session (workflows.engine.subagents)
                elif call.status is ToolCallStatus.WAITING and call.name == "TaskStop" and self.subagents.stop_background(
                        tx, call):
                    pass  # a background agent's stop is the engine's (a background shell's is the tool's)
                elif (call.status is ToolCallStatus.WAITING and call.tool_use_id in tx.ran and not call.hooks_pending
                      and not is_mcp_name(call.name) and runs_early(rec, call.name, get_tool(call.name))):
                    self._ran_here(tx, call, tx.ran.pop(call.tool_use_id))  # (allowed by this commit's fan-out)
                elif call.status is ToolCallStatus.WAITING:
                    step = self.committer.new_step(tx, StepKind.TOOL, tool_use_id=call.tool_use_id)
                    call.step_id = step.id
                    call.status = ToolCallStatus.DISPATCHED
            if any(c.status is not ToolCallStatus.DONE for c in batch):
                return
            rec.current_batch += 1
            if not any(c.batch >= rec.current_batch for c in rec.tool_calls):
                rec.tool_calls = []
                tx.fire("tools_finished")
                if rec.command is not None:  # a custom command's lines ran: now its prompt
                    self.commands.send_command(tx)
                else:
                    self.turns.next_model_call(tx)
                return

    def _ran_here(self, tx: Tx, call, ran) -> None:
        """A call the model step ran itself (a quick call): its tool step, born done, and its result."""
        step = self.committer.new_step(tx, StepKind.TOOL, tool_use_id=call.tool_use_id)
        tx.dispatch.remove(step)
        del tx.leases[step.id]
        step.status, step.created_at = StepStatus.DONE, ran.started  # (its duration: from the run to this commit)
        call.step_id = step.id
        self.turns.add_tool_result(tx, call.tool_use_id, ran.output, step_id=step.id)
        call.status = ToolCallStatus.DONE
        if ran.writes is not None:
            tx.extra.append(ran.writes)
