"""Sub-agents: a Task call runs as a child session, and its final answer comes back as the call's result.

A part of :class:`workflows.engine.Engine` (``engine.subagents``); it commits through
:class:`workflows.commit.Committer`.

1. **Start.** When a Task call's batch starts, the parent's commit also writes the child: a new
   session record (the agent's prompt, tools and model; the parent's permission mode, rules,
   sandbox, hooks and workspace, never more), its first transcript entries and its first model
   step. The parent's call gets an ``agent`` step that is ``running``, owned by ``agent:<child>``
   and without a lease: no worker holds it and the reaper never takes it back. One atomic commit,
   so a parent never waits for a child that was not made, and a re-sent commit makes no second one.
   Several Task calls in one reply are one batch (Task is read-only): their children run in
   parallel, on any workers.
2. **Run.** The child is a session like any other: its steps are claimed, leased, reaped and
   committed by the step protocol; its asks wait in ``awaiting_permission`` (``mainsail pending``
   lists them under the parent).
3. **Report.** When the child's run ends (answer, error, limit or cancel), the commit that ends it
   writes a ``report`` step. Its worker commits the child's answer as the parent's tool result,
   fenced on the parent's ``agent`` step (still running, still the child's), and adds the child's
   cost to the parent's; then it finishes the report. Run twice (its worker died in between), the
   parent's fence makes the second a no-op: the answer is recorded once.
4. **Cancel.** A parent whose run ends while children run (a cancel, a failure) stops them at once
   after its commit; a child whose parent's step is no longer waiting for it stops at its next step
   too (the backstop for a process that died between the two).
"""

from __future__ import annotations

import json
import logging
import re
import time

from statemachines import State
from workflows.commit import Part, Tx, peers, retry_on_conflict
from workflows.commit.support import (
    _add_to,
)
from workflows.context.claude_copy import child_file
from workflows.engine import agent_stats, background, handback
from workflows.exceptions import ToolInputError
from workflows.model.pricing import add_cost
from workflows.models import (
    AgentDefinition,
    AssistantEntry,
    SessionRecord,
    StepKind,
    StepRecord,
    StepStatus,
    ToolCall,
    ToolCallStatus,
    UserEntry,
    new_id,
)
from workflows.permissions.bypass import effective_mode
from workflows.store import keys
from workflows.tools.base import ToolOutput
from workflows.tools.task import agent_type

log = logging.getLogger(__name__)

#: Tools a child never has: sub-agents do not start sub-agents (as in Claude Code).
CHILD_NEVER = frozenset({"Task", "Agent"})

#: The owner of a parent's ``agent`` step: the child it waits for.
AGENT_OWNER = "agent:{child}"


#: The session record's JSON starts with its revision, commit token and epoch (workflows/store/fenced.py).
_HEAD = re.compile(rb'^\{"revision":\d+,"commit":"[^"]*","epoch":(\d+)')


def agent_owner(child: str) -> str:
    return AGENT_OWNER.format(child=child)


def child_tools(parent: SessionRecord, agent_tools: list[str] | None, disallowed: list[str]) -> list[str]:
    """The tools a child may use: the agent's list (None: all the parent's), less ``disallowed`` and Task,
    and never one the parent may not use (its ``--tools``)."""
    from workflows.tools import TOOL_ORDER

    parent_has = [n for n in TOOL_ORDER if parent.tools is None or n in parent.tools]
    wanted = parent_has if agent_tools is None else [n for n in agent_tools if n in parent_has]
    return [n for n in wanted if n not in disallowed and n not in CHILD_NEVER]


class SubagentLogic(Part):
    """Sub-agents: a Task call runs as a child session, and its final answer comes back as the call's result."""

    forks: peers.Forks
    prompts: peers.Prompts
    tools: peers.Tools
    turns: peers.Turns

    def check_agent_type(self, rec: SessionRecord, tool_input: dict) -> None:
        """Raises ToolInputError when the Task call names no agent type this session has (Claude Code's words)."""
        name = agent_type(tool_input)
        if rec.parent_session_id:
            raise ToolInputError("Task is not available to a sub-agent: sub-agents cannot start sub-agents.")
        if name not in rec.agents:
            raise ToolInputError(f"Agent type '{name}' not found. Available agents: {', '.join(sorted(rec.agents))}")

    def start_child(self, tx: Tx, call: ToolCall) -> None:
        """Write the child session for ``call`` into the parent's commit, and the parent's ``agent`` step."""
        parent = tx.rec
        agent = parent.agents[agent_type(call.input)]
        child = SessionRecord(
            id=new_id(),
            model=call.input.get("model") or agent.model or parent.model,  # the call's override first
            permission_mode=effective_mode(parent),  # never bypass where the parent's is disabled
            bypass_disabled_by=list(parent.bypass_disabled_by),
            untrusted_workspace=parent.untrusted_workspace,
            workspace=parent.workspace,
            git_branch=parent.git_branch,
            title=str(call.input.get("description") or agent.name)[:80],
            tools_queue=parent.tools_queue,
            rules=parent.rules.model_copy(deep=True),
            home=parent.home,
            approval_timeout_seconds=parent.approval_timeout_seconds,
            asks=parent.asks,
            tools=child_tools(parent, agent.tools, agent.disallowed_tools),
            sandbox=parent.sandbox.model_copy(deep=True),
            hooks=parent.hooks.model_copy(deep=True),
            additional_directories=list(parent.additional_directories),
            env=dict(parent.env),
            model_env=dict(parent.model_env),
            model_overrides=dict(parent.model_overrides),
            fallback_model=parent.fallback_model,
            system_context=parent.system_context,
            user_context=parent.user_context,
            custom_system_prompt=agent.prompt or parent.custom_system_prompt,
            append_system_prompt=None if agent.prompt else parent.append_system_prompt,
            auto_memory=False,  # a sub-agent neither reads nor extracts the project's memory
            session_started=True,  # SessionStart is the parent's; a child fires only SubagentStop
            parent_session_id=parent.id,
            parent_tool_use_id=call.tool_use_id,
            agent_type=agent.name,
            max_budget_usd=None,
            token=parent.token,  # its costs count against the parent's token's budget
        )
        step = StepRecord(id=new_id(), session_id=parent.id, kind=StepKind.AGENT, epoch=parent.epoch,
                          status=StepStatus.RUNNING, owner=agent_owner(child.id), attempt=1, queue="",
                          tool_use_id=call.tool_use_id, detail=child.id)
        child.parent_step_id = step.id
        if parent.claude_transcript:  # Claude Code's copy: beside the parent's (workflows/context/claude_copy.py)
            child.claude_transcript, child.claude_host = child_file(parent.claude_transcript, child.id), parent.claude_host
        self._share_mcp_tools(tx, parent, child)
        tx.steps.append(step)
        call.step_id = step.id
        call.child_session_id = child.id
        call.status = ToolCallStatus.DISPATCHED
        parent.children.append(child.id)
        in_background = call.input.get("run_in_background") is True
        agent_stats.spawned(parent, call.input, agent.name, in_background)
        if in_background:
            self._launch(tx, call, child, step)
        else:  # its task_started line (Claude Code streams a foreground agent's task lines too)
            notice = background.started(child.id, call.tool_use_id, child.title, child.agent_type or "",
                                        str(call.input["prompt"]), backgrounded=False)
            tx.add(background.entry(parent.id, notice, "started"))

        ctx = Tx(child)
        child.run_started_at = time.time()
        self.turns.add_prompt(ctx, str(call.input["prompt"]))
        ctx.fire("submit")
        self.turns.next_model_call(ctx)
        child.revision, child.commit = 1, new_id()[:16]
        tx.extra.append(lambda ops, ctx=ctx: self.committer.write_new_session(ctx, ops))
        tx.dispatch.extend(ctx.dispatch)

    def _launch(self, tx: Tx, call: ToolCall, child: SessionRecord, step: StepRecord) -> None:
        """A background agent: the call's result now (the launch), the parent goes on. The parent's ``agent``
        step stays running, the child's, as the fence of its notification; ``background`` keeps a cancel of a
        later run from making it stale (the agent outlives the turn that launched it)."""
        parent = tx.rec
        child.background_agent = True
        step.kind = StepKind.BG_AGENT
        notice = background.started(child.id, call.tool_use_id, child.title, child.agent_type or "",
                                    str(call.input["prompt"]))
        parent.background_tasks[child.id] = notice
        tx.add(background.entry(parent.id, dict(notice, tasks=background.live(parent.background_tasks)), "launched"))
        output = background.launch_output(child.id, child.title, str(call.input["prompt"]), child.model,
                                          child.claude_transcript)
        self.turns.add_tool_result(tx, call.tool_use_id, output, step_id=None)
        call.status = ToolCallStatus.DONE

    def _share_mcp_tools(self, tx: Tx, parent: SessionRecord, child: SessionRecord) -> None:
        """The child gets the parent's MCP servers and their tool list (as Claude Code's sub-agents inherit
        its MCP tools); its own tools list still limits which it may call. Its calls connect its own clients."""
        digest = parent.mcp_tools_digest
        if not parent.mcp_servers:
            return
        child.mcp_servers = [srv.model_copy(deep=True) for srv in parent.mcp_servers]
        if not digest:
            return
        payload = self.store.mcp_tools_json(parent.id, digest)
        if payload is None:  # the parent's list is gone (deleted by hand): the child offers none
            return
        child.mcp_tools_digest = digest
        tx.extra.append(lambda ops: ops.set(keys.session_mcp_tools(child.id, digest), payload))

    @retry_on_conflict
    def add_agents(self, sid: str, agents: dict[str, AgentDefinition]) -> SessionRecord:
        """Add sub-agent types to a session (over those of the same name): the Agent SDK's ``agents``."""
        with self.store.lock(sid):
            rec = self.store.get_session(sid)
            rec.agents = {**rec.agents, **agents}
            self.committer.commit(Tx(rec))
        return rec

    def child_ended(self, tx: Tx) -> None:
        """A child's run ended (its result is the newest entry of ``tx``): write its report step."""
        rec = tx.rec
        if not rec.parent_session_id:
            return
        result = tx.entries[-1] if tx.entries else None
        rec.final_result = getattr(result, "result", "") or ""
        rec.final_is_error = bool(getattr(result, "is_error", False))
        rec.final_subtype = getattr(result, "subtype", None)
        self.committer.new_step(tx, StepKind.REPORT)

    def deliver_report(self, rec: SessionRecord, step: StepRecord, owner: str) -> list[StepRecord]:
        """Run a child's ``report`` step: its answer into the parent's Task call (fenced on the parent's
        ``agent`` step, so a second delivery records nothing), then the report is done."""
        parent_sid, parent_step = rec.parent_session_id, rec.parent_step_id
        steps: list[StepRecord] = []
        if parent_sid and parent_step:
            steps = self.record_child_answer(parent_sid, parent_step, rec)
        return steps + self.finish_report(rec.id, step.id, owner)

    def record_child_answer(self, parent_sid: str, parent_step: str, child: SessionRecord) -> list[StepRecord]:
        """Commit a child's answer as its parent's Task result and its cost into the parent's totals."""
        entries = self.store.entries(child.id)
        calls = [{"name": b.name} for e in entries if isinstance(e, AssistantEntry) for b in e.message.tool_uses()]
        prompt = next((e.message.text() for e in entries if isinstance(e, UserEntry)), "")
        tool_uses = len(calls)
        output = self._answer(child, calls, prompt)

        def apply(tx: Tx, step: StepRecord) -> None:
            self._add_child_cost(tx, child)
            if child.background_agent:
                self._notify(tx, step, child, tool_uses)
                return
            task = background.started(child.id, child.parent_tool_use_id or "", child.title, child.agent_type or "",
                                      prompt, backgrounded=False)
            background.record_end(tx, task, child, tool_uses)  # its task_updated and task_notification lines
            self.tools.record_tool_result(tx, step, output, None)

        return self.committer.step_event(parent_sid, parent_step, agent_owner(child.id), apply)

    @staticmethod
    def _answer(child: SessionRecord, calls: list[dict], prompt: str) -> ToolOutput:
        """A foreground child's result for its parent's Agent call: its report framed as Claude Code frames
        it (:mod:`workflows.engine.handback`), or why it stopped before it answered."""
        display = (f"{'failed' if child.final_is_error else 'done'} · {child.turns} turns"
                   + (f" · ${child.cost_usd:.4f}" if child.cost_usd else ""))
        text = child.final_result or ""
        if child.final_is_error:
            text = f"The {child.agent_type} agent stopped before it answered: {text or 'no reason given'}"
            return ToolOutput(content=text, is_error=True, display=display)
        duration = int((time.time() - (child.run_started_at or time.time())) * 1000)
        output = handback.handback(child.id, child.agent_type or "", prompt,
                                   text or "(the agent gave no answer)", calls, child.model,
                                   child.usage.model_dump(), duration)
        output.display = display
        return output

    def _notify(self, tx: Tx, step: StepRecord, child: SessionRecord, tool_uses: int) -> None:
        """A background agent ended: its notice, and its notification as the parent's next prompt (now when the
        parent is idle, else after the run it is in), in the commit fenced on the parent's ``agent`` step."""
        rec = tx.rec
        tx.finish(step)
        task = rec.background_tasks.pop(child.id, None) or background.started(
            child.id, child.parent_tool_use_id or "", child.title, child.agent_type or "", "")
        notice = background.record_end(tx, task, child, tool_uses)
        rec.notifications += 1
        tx.inbox_pushes.append(background.notification_text(notice))
        if rec.state is State.EXTRACTING:  # nobody waits for memory: the notification runs now
            self.forks.leave_extracting(tx)
        else:
            self.turns.after_idle(tx)

    def stop_background(self, tx: Tx, call: ToolCall) -> bool:
        """A TaskStop call naming one of the session's background agents: its result now, and the agent
        stopped once this commit lands (its end then notifies as ``killed``). False: not an agent's id."""
        task_id = call.input.get("task_id") or call.input.get("shell_id")
        task = tx.rec.background_tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            return False
        message = f"Successfully stopped task: {task_id} ({task['description']})"
        result = {"message": message, "task_id": task_id, "task_type": "local_agent", "command": task["description"]}
        output = ToolOutput(content=json.dumps(result, ensure_ascii=False, separators=(",", ":")), result=result,
                            display=f"Agent {task['description']!r} stopped")
        self.turns.add_tool_result(tx, call.tool_use_id, output, step_id=None)
        call.status = ToolCallStatus.DONE
        task["stopped_by"] = "parent"  # (its end counts as killed by its parent: workflows/engine/agent_stats.py)
        tx.after.append(lambda: self.stop_children([task_id]))
        return True

    def _add_child_cost(self, tx: Tx, child: SessionRecord) -> None:
        """A child's usage and cost, rolled up into the parent's (by model, and as kind ``subagent``)."""
        rec = tx.rec
        for model, usage in child.usage_by_model.items():
            cost = child.cost_by_model.get(model)
            rec.usage = rec.usage + usage
            _add_to(rec.usage_by_model, rec.cost_by_model, model, usage, cost)
            _add_to(rec.usage_by_kind, rec.cost_by_kind, "subagent", usage, cost)
            _add_to(rec.run_usage_by_model, rec.run_cost_by_model, model, usage, cost)
            rec.run_usage = rec.run_usage + usage
        rec.cost_usd = add_cost(rec.cost_usd, child.cost_usd)
        rec.run_cost_usd = add_cost(rec.run_cost_usd, child.cost_usd)
        rec.api_ms += child.api_ms
        rec.run_api_ms += child.api_ms

    def finish_report(self, sid: str, step_id: str, owner: str) -> list[StepRecord]:
        def apply(tx: Tx, step: StepRecord) -> None:
            tx.finish(step)

        return self.committer.step_event(sid, step_id, owner, apply)

    def release_children(self, tx: Tx) -> None:
        """The parent's run ends early (a cancel, a failure) with sub-agents at work: their ``agent`` steps
        are closed in this commit (a late report records nothing) and the children are stopped once it
        lands (``tx.after``)."""
        rec = tx.rec
        children: list[str] = []
        for call in rec.tool_calls:
            if call.child_session_id and call.step_id and call.status is not ToolCallStatus.DONE:
                tx.steps.append(StepRecord(
                    id=call.step_id, session_id=rec.id, kind=StepKind.AGENT, epoch=rec.epoch - 1,
                    status=StepStatus.SUPERSEDED, owner=agent_owner(call.child_session_id), attempt=1,
                    tool_use_id=call.tool_use_id, detail=call.child_session_id))
                children.append(call.child_session_id)
        if children:
            tx.after.append(lambda: self.stop_children(children))

    def stop_children(self, children: list[str]) -> list[StepRecord]:
        """Stop each child's run (after the parent's run ended); a child already idle is left alone.
        Returns the steps the stops lead to (each child's report), to dispatch."""
        steps: list[StepRecord] = []
        for child in children:
            try:
                steps += self.stop_child(child)
            except Exception as exc:  # noqa: BLE001 - the backstop stops it at its next step
                log.warning("could not stop sub-agent session %s now (%s); it stops at its next step",
                            child[:8], exc)
        return steps

    def stop_child(self, child: str) -> list[StepRecord]:
        """Stop a child whose parent no longer waits for it: its run ends as cancelled (no report is
        delivered: the parent's step is closed)."""
        rec = self.store.get_session(child)
        if rec.state is State.IDLE:
            return []
        return self.prompts.stop(child).steps

    def abandon_child_step(self, sid: str, step_id: str, owner: str) -> list[StepRecord]:
        """A child's step claimed after its parent stopped waiting: the child stops, the step is not run."""
        steps = self.stop_children([sid])

        def apply(tx: Tx, step: StepRecord) -> None:
            tx.supersede(step)

        return steps + self.committer.step_event(sid, step_id, owner, apply)

    def parent_waits(self, rec: SessionRecord) -> bool:
        """A child's parent still waits for it: its ``agent`` step is running, the child's, and of the
        parent's current epoch (a cancel or a failure ended the run it belonged to). True for a session
        that is no child, and when the parent cannot be read (the report decides then)."""
        if not (rec.parent_session_id and rec.parent_step_id):
            return True
        try:
            raw_rec, raw_step = self.store.raw_session_and_step(rec.parent_session_id, rec.parent_step_id)
        except Exception:  # noqa: BLE001 - a Redis error: let the step run (the report is fenced)
            return True
        if raw_rec is None or raw_step is None:  # the parent was removed
            return False
        step = StepRecord.model_validate_json(raw_step)
        head = _HEAD.match(raw_rec if isinstance(raw_rec, bytes) else raw_rec.encode())
        epoch = int(head.group(1)) if head else SessionRecord.model_validate_json(raw_rec).epoch
        return (step.status is StepStatus.RUNNING and step.owner == agent_owner(rec.id)
                and (step.background or step.epoch == epoch))


def tree(store, sid: str) -> list[tuple[int, SessionRecord]]:
    """``sid`` and its descendants, depth first: (depth, record)."""
    out: list[tuple[int, SessionRecord]] = []

    def walk(s: str, depth: int) -> None:
        try:
            rec = store.get_session(s)
        except Exception:  # noqa: BLE001 - a removed child: left out
            return
        out.append((depth, rec))
        for child in rec.children:
            walk(child, depth + 1)

    walk(sid, 0)
    return out


__all__ = ["AGENT_OWNER", "SubagentLogic", "agent_owner", "child_tools", "tree"]
