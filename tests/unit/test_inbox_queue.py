"""The inbox is a queue: a cancel runs the next queued message at once, in the order sent; a clear
drops them; a new message goes behind those queued (fakeredis, steps run inline)."""

from __future__ import annotations

import pytest

from demo.scripted import ToolUse, Turn
from statemachines import State
from tests.fakeapi import last_prompt
from tests.inline import Inline, scripted_model
from workflows.models import ResultEntry, UserEntry
from workflows.models.options import SessionOptions
from workflows.store import keys


def echo(body: dict) -> Turn:
    """One Read per prompt, then ``answer to: <prompt>``; stateless, so every run gets the same shape."""
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and last and last[-1].get("type") == "tool_result":
        return Turn(text=f"answer to: {last_prompt(body)}")
    return Turn(text="reading", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})])


@pytest.fixture
def busy(engine, ws):
    """A session whose run of "zero" is running its tool step, with "first" and "second" queued."""
    rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(echo), permission_mode="bypassPermissions", no_memory=True))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "zero"))
    inline.run(1)  # the model asked for a Read; the tool step is queued, not run
    assert engine.store.get_session(rec.id).state is State.RUNNING_TOOLS
    for text in ("first", "second"):
        assert engine.submit(rec.id, text) == []
    return rec.id, inline


def prompts(engine, sid):
    return [e.message.text() for e in engine.store.entries(sid) if isinstance(e, UserEntry) and e.origin == "prompt"]


def answers(engine, sid):
    return [(e.subtype, e.result) for e in engine.store.entries(sid) if isinstance(e, ResultEntry)]


def test_a_cancel_runs_the_queued_messages_next_in_the_order_sent(engine, busy):
    sid, inline = busy
    stopped = engine.stop(sid)
    assert (stopped.cancelled, stopped.was, stopped.started, stopped.queued) == (True, State.RUNNING_TOOLS,
                                                                                 "first", 1)
    assert engine.store.get_session(sid).state is State.QUERYING, "the oldest queued message started at once"
    inline.dispatch(stopped.steps)
    assert engine.submit(sid, "third") == [], "a new message goes behind the queued ones"
    assert engine.store.inbox(sid) == ["second", "third"]
    inline.drain()
    assert prompts(engine, sid) == ["zero", "first", "second", "third"]
    assert answers(engine, sid) == [("cancelled", "Cancelled by user"), ("success", "answer to: first"),
                                    ("success", "answer to: second"), ("success", "answer to: third")]
    assert engine.store.get_session(sid).state is State.IDLE and engine.store.inbox(sid) == []


def test_cancel_with_clear_drops_the_queue_and_stays_idle(engine, busy):
    sid, inline = busy
    stopped = engine.stop(sid, clear_queue=True)
    assert stopped.cleared == ["first", "second"] and stopped.started is None and stopped.steps == []
    assert engine.store.get_session(sid).state is State.IDLE and engine.store.inbox(sid) == []
    inline.dispatch(engine.submit(sid, "third"))
    inline.drain()
    assert prompts(engine, sid) == ["zero", "third"]


def test_clear_queue_drops_what_waits_and_the_running_turn_goes_on(engine, busy):
    sid, inline = busy
    assert engine.clear_queue(sid) == ["first", "second"]
    assert engine.clear_queue(sid) == []
    inline.drain()
    assert prompts(engine, sid) == ["zero"] and answers(engine, sid) == [("success", "answer to: zero")]


def test_the_bool_cancel_dispatches_the_next_message_through_its_dispatcher(engine, busy):
    sid, inline = busy
    assert engine.cancel(sid, dispatch=inline.dispatch) is True
    inline.drain()
    assert prompts(engine, sid) == ["zero", "first", "second"]
    assert engine.cancel(sid) is False, "idle with nothing queued: nothing to cancel"


def test_an_idle_session_with_a_stranded_queue_runs_it_first(engine, ws):
    """What an older version's cancel left behind: idle, with queued messages nothing would run."""
    rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(echo), permission_mode="bypassPermissions", no_memory=True))
    engine.store.r.rpush(keys.inbox(rec.id), "first", "second")
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "third"))
    inline.drain()
    assert prompts(engine, rec.id) == ["first", "second", "third"]

    engine.store.r.rpush(keys.inbox(rec.id), "fourth")
    stopped = engine.stop(rec.id)  # `mainsail cancel` on such a session starts its queue
    assert (stopped.cancelled, stopped.started, stopped.queued) == (False, "fourth", 0)
    inline.dispatch(stopped.steps)
    inline.drain()
    assert prompts(engine, rec.id)[-1] == "fourth"


def test_a_failed_run_also_goes_on_with_the_queue(engine, ws, settings):
    settings.api_max_retries = 0
    from demo.scripted import Script, ScriptError

    model = scripted_model(Script(turns=[Turn(text="fine", errors=[ScriptError(status=400, message="bad")])]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "one"))
    assert engine.submit(rec.id, "two") == []
    inline.drain()
    assert answers(engine, rec.id)[0][0] == "error_during_execution"
    assert answers(engine, rec.id)[1] == ("success", "fine")
    assert prompts(engine, rec.id) == ["one", "two"]
