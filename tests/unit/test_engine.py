"""The engine and the step protocol on fakeredis, steps run inline through the real SDK."""

from __future__ import annotations

import time

import pytest

from demo.scripted import DEMO_FILES, DEMO_PROMPT, Script, ScriptError, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from workflows.context.assemble import api_messages
from workflows.engine import STOPPED_WHILE_RUNNING, Engine
from workflows.models import (
    AssistantEntry,
    ResultEntry,
    StateEntry,
    StepKind,
    StepStatus,
    SystemEntry,
    UserEntry,
)
from workflows.models.options import SessionOptions
from workflows.steps.run import owner_token, run_step
from workflows.store.redis_store import Store
from workflows.tools.base import ToolOutput


def session(engine, ws, turns, mode="bypassPermissions", **kw):
    model = scripted_model(Script(turns=turns) if isinstance(turns, list) else turns)
    return create_session(engine, str(ws), model=model, permission_mode=mode, **kw)


def results(engine, sid):
    return [e for e in engine.store.entries(sid) if isinstance(e, ResultEntry)]


def tool_results(engine, sid):
    return [e.message.blocks()[0] for e in engine.store.entries(sid)
            if isinstance(e, UserEntry) and e.origin == "tool_result"]


def test_demo_session_reads_edits_runs_and_finishes(engine, ws):
    model = "scripted:demo"
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, DEMO_PROMPT))
    inline.drain()

    assert "return a + b" in (ws / "calc.py").read_text()
    rec = engine.store.get_session(rec.id)
    assert rec.state is State.IDLE
    assert rec.turns == 4
    entries = engine.store.entries(rec.id)
    uuids = [e.uuid for e in entries]
    assert len(uuids) == len(set(uuids)), "an entry was recorded twice"
    for prev, cur in zip(entries, entries[1:]):
        assert cur.parent_uuid == prev.uuid
    assert sum(isinstance(e, AssistantEntry) for e in entries) == 4
    outputs = [b.text for b in tool_results(engine, rec.id)]
    assert "2 + 3 = 5" in outputs[-1]
    (result,) = results(engine, rec.id)
    assert result.subtype == "success" and not result.is_error
    assert "2 + 3 = 5" in result.result
    assert result.num_turns == 4
    states = [(e.trigger, e.dest) for e in entries if isinstance(e, StateEntry)]
    assert states[0] == ("submit", State.QUERYING)
    assert states[-2:] == [("answered", State.EXTRACTING), ("extracted", State.IDLE)]
    assert all(s.status is StepStatus.DONE for s in engine.store.steps(rec.id))
    assert engine.store.due(time.time() + 3600) == []


def test_messages_sent_to_the_model_pair_every_tool_use_with_a_result(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, DEMO_PROMPT))
    inline.drain()
    msgs = api_messages(engine.store.entries(rec.id))
    assert [m["role"] for m in msgs] == ["user", "assistant"] * 4
    for assistant, user in zip(msgs[1::2], msgs[2::2]):
        uses = [b["id"] for b in assistant["content"] if b["type"] == "tool_use"]
        got = [b["tool_use_id"] for b in user["content"] if b["type"] == "tool_result"]
        assert uses == got


def test_malformed_tool_input_becomes_an_error_result_and_the_session_goes_on(engine, ws):
    rec = session(engine, ws, [Turn(tool_uses=[ToolUse(name="Read", input={"path": 3})]), Turn(text="ok")])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (block,) = tool_results(engine, rec.id)
    assert block.is_error
    assert "Invalid input for Read" in block.text and "file_path" in block.text
    assert results(engine, rec.id)[-1].subtype == "success"


def test_unknown_tool_is_an_error_result_naming_the_available_tools(engine, ws):
    rec = session(engine, ws, [Turn(tool_uses=[ToolUse(name="Frobnicate", input={})]), Turn(text="ok")])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (block,) = tool_results(engine, rec.id)
    assert block.is_error and "Unknown tool 'Frobnicate'" in block.text and "Read" in block.text


def test_read_only_calls_run_in_one_batch_and_mutating_ones_in_order(engine, ws):
    (ws / "b.txt").write_text("b\n")
    turns = [Turn(tool_uses=[
        ToolUse(name="Read", input={"file_path": "calc.py"}),
        ToolUse(name="Read", input={"file_path": "b.txt"}),
        ToolUse(name="Bash", input={"command": "echo one >> order.txt"}),
        ToolUse(name="Bash", input={"command": "echo two >> order.txt"}),
        ToolUse(name="Grep", input={"pattern": "add"}),
    ]), Turn(text="done")]
    rec = session(engine, ws, turns)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)  # the model step only
    first = list(inline.queue)
    assert [s.kind for s in first] == [StepKind.TOOL, StepKind.TOOL]
    calls = engine.store.get_session(rec.id).tool_calls
    assert [c.batch for c in calls] == [0, 0, 1, 2, 3]
    inline.drain()
    assert (ws / "order.txt").read_text() == "one\ntwo\n"
    assert len(tool_results(engine, rec.id)) == 5


def test_max_turns_stops_the_run_with_its_subtype(engine, ws):
    rec = session(engine, ws, [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})])] * 5,
                  max_turns=2)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (result,) = results(engine, rec.id)
    assert result.subtype == "error_max_turns" and result.is_error and result.num_turns == 2
    assert engine.store.get_session(rec.id).state is State.IDLE


def test_api_errors_after_sdk_retries_become_an_error_entry(engine, ws, settings):
    settings.api_max_retries = 1
    errors = [ScriptError(status=529, retry_after=0.01)] * 3
    rec = session(engine, ws, [Turn(text="never", errors=errors)])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    assert api_of(rec.model).attempts(0) == 2  # the SDK retried once
    err = [e for e in engine.store.entries(rec.id) if isinstance(e, SystemEntry) and e.subtype == "error"]
    assert err and "529" in err[0].content and "overloaded_error" in err[0].content
    (result,) = results(engine, rec.id)
    assert result.subtype == "error_during_execution" and result.is_error
    assert engine.store.get_session(rec.id).state is State.IDLE


def test_sdk_retry_after_a_529_then_success(engine, ws, settings):
    settings.api_max_retries = 2
    rec = session(engine, ws, [Turn(text="hello", errors=[ScriptError(status=529, retry_after=0.01)])])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    assert results(engine, rec.id)[-1].result == "hello"


def test_missing_api_key_ends_the_run_with_how_to_set_one(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="claude-sonnet-4-5"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (result,) = results(engine, rec.id)
    assert result.is_error and "ANTHROPIC_API_KEY" in result.result


def test_unknown_scripted_model_ends_the_run_with_the_reason(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:no-such-script"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (result,) = results(engine, rec.id)
    assert result.is_error and "no-such-script" in result.result


def test_a_duplicate_delivery_of_a_finished_step_changes_nothing(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, DEMO_PROMPT))
    inline.drain()
    before = engine.store.log_length(rec.id)
    for step in inline.ran:
        assert run_step(engine, rec.id, step.id, inline.dispatch) == "skipped"
    assert not inline.queue
    assert engine.store.log_length(rec.id) == before


def test_a_late_result_after_cancel_is_discarded_and_the_transcript_stays_valid(engine, ws):
    rec = session(engine, ws, [Turn(tool_uses=[ToolUse(name="Bash", input={"command": "sleep 1"})]),
                               Turn(text="done")])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)
    (tool_step,) = list(inline.queue)
    owner = owner_token()
    claimed = engine.claim(rec.id, tool_step.id, owner).step
    assert claimed is not None
    assert engine.cancel(rec.id) is True
    length = engine.store.log_length(rec.id)
    late = engine.record_tool_output(rec.id, tool_step.id, owner, ToolOutput(content="late"))
    assert late == []
    assert engine.store.log_length(rec.id) == length
    assert engine.store.get_step(rec.id, tool_step.id).status is StepStatus.SUPERSEDED
    rec2 = engine.store.get_session(rec.id)
    assert rec2.state is State.IDLE and rec2.epoch == 1
    (block,) = tool_results(engine, rec.id)
    assert block.is_error and block.text == STOPPED_WHILE_RUNNING  # (Claude Code's: the call was running)
    assert results(engine, rec.id)[-1].subtype == "cancelled"
    # A redelivered stale step is superseded, not run.
    assert run_step(engine, rec.id, tool_step.id, inline.dispatch) == "skipped"


def test_reaper_redispatches_a_step_whose_worker_died(engine, ws, settings):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    inline = Inline(engine)
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    dead = engine.claim(rec.id, step.id, "dead-worker").step  # claims, then never finishes
    assert dead is not None
    assert engine.reap(time.time()) == []  # lease still alive
    again = engine.reap(time.time() + settings.lease_seconds + 1)
    assert [s.id for s in again] == [step.id]
    assert engine.store.get_step(rec.id, step.id).status is StepStatus.PENDING
    warn = [e for e in engine.store.entries(rec.id) if isinstance(e, SystemEntry) and e.subtype == "warning"]
    assert warn and "sent no heartbeat" in warn[0].content and "running it again" in warn[0].content
    # The dead worker's late commit is fenced off.
    assert engine.fail_step(rec.id, step.id, "dead-worker", "boom") == []
    inline.dispatch(again)
    inline.drain()
    assert results(engine, rec.id)[-1].subtype == "success"
    assert engine.store.get_step(rec.id, step.id).attempt == 2


def test_a_step_that_keeps_losing_its_worker_fails_the_run(engine, ws, settings):
    settings.max_attempts = 2
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    now = time.time()
    for i in range(2):
        assert engine.claim(rec.id, step.id, f"dead-{i}").step is not None
        now += settings.lease_seconds + 1
        engine.reap(now)
    assert engine.store.get_step(rec.id, step.id).status is StepStatus.FAILED
    (result,) = results(engine, rec.id)
    assert result.is_error and "failed after 2 attempts" in result.result
    assert engine.store.get_session(rec.id).state is State.IDLE


def test_a_mutating_command_whose_worker_died_is_not_run_again(engine, ws, settings):
    marker = ws / "ran.txt"
    rec = session(engine, ws, [Turn(tool_uses=[ToolUse(name="Bash", input={"command": "echo x >> ran.txt"})]),
                               Turn(text="done")])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)
    (tool_step,) = list(inline.queue)
    inline.queue.clear()
    assert engine.claim(rec.id, tool_step.id, "dead").step is not None  # died mid-command
    inline.dispatch(engine.reap(time.time() + settings.lease_seconds + 1))
    inline.drain()
    assert not marker.exists()
    (block,) = tool_results(engine, rec.id)
    assert block.is_error and "outcome is unknown" in block.text
    assert results(engine, rec.id)[-1].subtype == "success"


def test_a_pending_step_nobody_picked_up_is_dispatched_again(engine, ws, settings):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)  # the dispatch is "lost"
    assert engine.reap(time.time()) == []
    again = engine.reap(time.time() + settings.pickup_timeout_seconds + 1)
    assert [s.id for s in again] == [step.id]
    assert engine.store.get_step(rec.id, step.id).attempt == 0


def test_a_message_sent_while_busy_waits_in_the_inbox_and_runs_next(engine, ws):
    rec = session(engine, ws, lambda body: Turn(text=f"answer {len(body['messages'])}"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "first"))
    assert engine.submit(rec.id, "second") == []
    assert engine.store.inbox(rec.id) == ["second"]
    inline.drain()
    res = results(engine, rec.id)
    assert [r.result for r in res] == ["answer 1", "answer 3"]
    assert engine.store.inbox(rec.id) == []
    prompts = [e.message.text() for e in engine.store.entries(rec.id)
               if isinstance(e, UserEntry) and e.origin == "prompt"]
    assert prompts == ["first", "second"]


def test_cancel_of_an_idle_session_is_a_no_op(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo"))
    assert engine.cancel(rec.id) is False
    assert engine.store.log_length(rec.id) == 0


def _files_read(engine, sid) -> dict:
    from workflows.store import keys

    return {k.decode(): float(v) for k, v in engine.store.r.hgetall(keys.files_read(sid)).items()}


def test_a_read_is_noted_by_the_commit_of_its_result(engine, ws, monkeypatch):
    """The Read's note (path -> mtime, what lets a later Edit skip re-reading) is written by the commit
    that records its result, not by a round trip of its own while the tool runs."""
    from workflows.tools.read import ReadTool

    rec = session(engine, ws, [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
                               Turn(text="ok")])
    seen_while_running: list[dict] = []
    run = ReadTool.run

    def watched(self, args, ctx):
        out = run(self, args, ctx)
        seen_while_running.append(_files_read(engine, rec.id))
        return out

    monkeypatch.setattr(ReadTool, "run", watched)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "read calc.py"))
    inline.drain()
    path = str((ws / "calc.py").resolve())
    assert seen_while_running == [{}]
    assert _files_read(engine, rec.id) == {path: (ws / "calc.py").stat().st_mtime}


def test_a_read_whose_result_never_lands_is_not_noted(engine, ws, monkeypatch):
    """Cancelled while the Read ran: its result is not recorded, and neither is the read, so an Edit
    of that file still needs a read the model has seen."""
    from workflows.tools.read import ReadTool

    rec = session(engine, ws, [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
                               Turn(text="ok")])
    run = ReadTool.run

    def cancelled_meanwhile(self, args, ctx):
        out = run(self, args, ctx)
        engine.cancel(rec.id)
        return out

    monkeypatch.setattr(ReadTool, "run", cancelled_meanwhile)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "read calc.py"))
    inline.drain()
    assert engine.store.get_session(rec.id).state is State.IDLE
    assert [b.content for b in tool_results(engine, rec.id)] == [STOPPED_WHILE_RUNNING]
    assert _files_read(engine, rec.id) == {}
