"""Background sub-agents (Agent ``run_in_background``): the launch result at once, the parent idle without a
worker, the notification as the parent's next turn (once), TaskStop, and the stream-json task lines."""

from __future__ import annotations

import json
from collections import deque

from demo.scripted import ToolUse, Turn
from statemachines import State
from tests.fakeapi import assistant_turns, first_prompt
from tests.inline import Inline, scripted_model
from workflows.engine.background import NOTIFICATION_HEAD, task_lines
from workflows.models import ResultEntry, StepKind, StepStatus, SystemEntry, UserEntry
from workflows.models.options import SessionOptions


def bg(prompt: str = "child job") -> ToolUse:
    return ToolUse(id="toolu_bg", name="Agent", input={"description": "count", "prompt": prompt,
                                                        "run_in_background": True})


def model(parent_turns, child=lambda body: Turn(text="one two three")):
    def turn(body: dict) -> Turn:
        if first_prompt(body).startswith("child job"):
            return child(body)
        return parent_turns(body, assistant_turns(body))
    return scripted_model(turn)


def entries(engine, sid, kind):
    return [e for e in engine.store.entries(sid) if isinstance(e, kind)]


def test_a_background_agent_launches_at_once_and_its_notification_is_a_turn_of_its_own(engine, ws):
    turns = lambda body, n: [Turn(text="Launching.", tool_uses=[bg()]), Turn(text="Turn 1 done."),
                             Turn(text="Turn 2 done.")][min(n, 2)]
    rec = engine.create_session(str(ws), SessionOptions(model=model(turns), permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)  # the parent's model call: the launch is its result, the child is queued
    parent = engine.store.get_session(rec.id)
    (child_id,) = parent.children
    assert list(parent.background_tasks) == [child_id]
    (launch,) = [b for e in entries(engine, rec.id, UserEntry) if e.origin == "tool_result" for b in e.message.blocks()]
    assert launch.text.startswith("Async agent launched successfully.") and f"agentId: {child_id}" in launch.text
    (agent_step,) = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.BG_AGENT]
    assert agent_step.status is StepStatus.RUNNING and agent_step.background and not agent_step.lease_until
    # the parent's next model call is queued beside the child's: it does not wait for it
    assert sorted(s.session_id for s in inline.queue) == sorted([rec.id, child_id])
    inline.drain()
    parent = engine.store.get_session(rec.id)
    assert parent.state is State.IDLE and parent.background_tasks == {} and parent.notifications == 1
    assert [r.result for r in entries(engine, rec.id, ResultEntry)] == ["Turn 1 done.", "Turn 2 done."]
    # the notification's run says so on its result (Claude Code's origin); the first run is a person's
    assert [r.origin for r in entries(engine, rec.id, ResultEntry)] == [
        None, {"kind": "task-notification", "producer": "session-task", "runId": child_id}]
    (note,) = [e for e in entries(engine, rec.id, UserEntry) if e.message.text().startswith(NOTIFICATION_HEAD)]
    text = note.message.text()
    assert f"<task-id>{child_id}</task-id>" in text and "<status>completed</status>" in text
    assert "<result>one two three</result>" in text and '<summary>Agent "count" finished</summary>' in text
    tasks = [e.task for e in entries(engine, rec.id, SystemEntry) if e.subtype == "task"]
    assert [t["event"] for t in tasks] == ["started", "ended"]
    # the report is fenced on the parent's agent step: delivered again, it records nothing
    child = engine.store.get_session(child_id)
    before = len(engine.store.entries(rec.id))
    assert engine.record_child_answer(rec.id, child.parent_step_id, child) == []
    assert len(engine.store.entries(rec.id)) == before and engine.store.inbox(rec.id) == []


def test_task_stop_stops_a_background_agent_and_it_notifies_as_killed(engine, ws):
    def turns(body, n):
        if n == 0:
            return Turn(text="Launching.", tool_uses=[bg()])
        if n == 1:
            child = engine.store.get_session(engine.store.get_session(rec.id).children[0])
            return Turn(text="Stopping.", tool_uses=[ToolUse(id="toolu_stop", name="TaskStop",
                                                             input={"task_id": child.id})])
        return Turn(text=f"Turn {n} done.")

    slow = lambda body: Turn(tool_uses=[ToolUse(name="Bash", input={"command": "sleep 30"})])
    rec = engine.create_session(str(ws), SessionOptions(model=model(turns, slow), permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)
    child_id = engine.store.get_session(rec.id).children[0]
    inline.queue = deque(s for s in inline.queue if s.session_id == rec.id)  # the child's first step never runs
    inline.drain()
    stop = [b for e in entries(engine, rec.id, UserEntry) if e.origin == "tool_result" for b in e.message.blocks()
            if b.tool_use_id == "toolu_stop"][0]
    assert json.loads(stop.text) == {"message": f"Successfully stopped task: {child_id} (count)", "task_id": child_id,
                                     "task_type": "local_agent", "command": "count"}
    parent = engine.store.get_session(rec.id)
    assert parent.background_tasks == {} and engine.store.get_session(child_id).state is State.IDLE
    (note,) = [e for e in entries(engine, rec.id, UserEntry) if e.message.text().startswith(NOTIFICATION_HEAD)]
    assert "<status>killed</status>" in note.message.text()
    assert '<summary>Agent "count" was stopped by Claude</summary>' in note.message.text()
    stats = engine.store.get_session(rec.id).subagent_stats  # (the result line's subagent_stats)
    assert (stats["spawned"], stats["requested"]["background"], stats["started_in_background"]) == (1, 1, 1)
    assert (stats["killed"], stats["completed"]) == ({"parent": 1, "user": 0, "system": 0}, 0)
    assert len(entries(engine, rec.id, ResultEntry)) == 2


def test_task_lines_have_claude_codes_subtypes_and_keys():
    started = {"event": "started", "task_id": "t1", "run_id": "t1", "tool_use_id": "toolu_1", "description": "count",
               "subagent_type": "general-purpose", "prompt": "p", "tasks": [{"task_id": "t1"}]}
    a, b = task_lines(started, "s")
    assert a["subtype"] == "background_tasks_changed" and a["tasks"] == [{"task_id": "t1"}]
    assert list(b) == ["type", "subtype", "task_id", "run_id", "tool_use_id", "description", "subagent_type",
                       "is_backgrounded", "spawn_depth", "task_type", "prompt", "uuid", "session_id"]
    ended = dict(started, event="ended", status="killed", end_time=1, tasks=[])
    upd, note, changed = task_lines(ended, "s")
    assert upd["patch"] == {"status": "killed", "end_time": 1} and note["status"] == "stopped"
    assert note["summary"] == "count" and changed["tasks"] == []


def test_a_cancel_of_a_later_run_leaves_the_background_agent_running_and_its_notification_comes(engine, ws):
    turns = lambda body, n: [Turn(text="Launching.", tool_uses=[bg()]), Turn(text="Turn 1 done.")][min(n, 1)]
    rec = engine.create_session(str(ws), SessionOptions(model=model(turns), permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)
    child_id = engine.store.get_session(rec.id).children[0]
    held = [s for s in inline.queue if s.session_id == child_id]  # the agent's first step, not run yet
    inline.queue = deque(s for s in inline.queue if s.session_id != child_id)
    inline.drain()
    engine.submit(rec.id, "another")  # a new run, cancelled at once: the epoch moves on
    assert engine.cancel(rec.id, "Cancelled by user")
    assert engine.store.get_session(rec.id).epoch > 0 and engine.parent_waits(engine.store.get_session(child_id))
    inline.dispatch(held)
    inline.drain()
    parent = engine.store.get_session(rec.id)
    assert parent.background_tasks == {} and parent.notifications == 1
    (note,) = [e for e in entries(engine, rec.id, UserEntry) if e.message.text().startswith(NOTIFICATION_HEAD)]
    assert "<status>completed</status>" in note.message.text()
