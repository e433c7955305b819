"""The user's interrupt of a turn's tool calls, answered as Claude Code 2.1.332 answers it: each open call's result
is its rejection text (with a correction for a call that was running), then a user message of its own says
"[Request interrupted by user for tool use]"; the result counts three turns and ends ``aborted_tools``. Other ends
of a run (a failure) close the calls with the bracketed text, as before."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from cli.output import StreamJson, result_json
from cli.render import Renderer
from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from workflows.commit.support import INTERRUPTED_REPLY
from workflows.context.claude_lines import claude_lines
from workflows.context.transcript import import_entries
from workflows.engine import INTERRUPTED, REJECTED, REJECTED_RESULT, STOPPED_WHILE_RUNNING
from workflows.models import ResultEntry, UserEntry
from workflows.steps.run import owner_token


def session(engine, ws, turns):
    model = scripted_model(Script(turns=turns))
    return create_session(engine, str(ws), model=model, permission_mode="bypassPermissions")


def two_commands(engine, ws):
    """A session whose reply asks for two commands (run one after the other), the first dispatched."""
    rec = session(engine, ws, [Turn(text="Step 0.", tool_uses=[
        ToolUse(name="Bash", id="toolu_A", input={"command": "sleep 1"}),
        ToolUse(name="Bash", id="toolu_B", input={"command": "sleep 2"})]), Turn(text="Done.")])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)  # the model call: the first command's step is dispatched, the second waits for it
    (step,) = inline.queue
    return rec, inline, step


def users(engine, sid) -> list[UserEntry]:
    return [e for e in engine.store.entries(sid) if isinstance(e, UserEntry)]


def test_the_users_interrupt_answers_each_open_call_as_claude_code(engine, ws):
    rec, inline, _ = two_commands(engine, ws)
    assert engine.cancel(rec.id)
    prompt, first, second, interrupt = users(engine, rec.id)
    assert [(b.tool_use_id, b.text, b.is_error) for e in (first, second) for b in e.message.blocks()] == [
        ("toolu_A", STOPPED_WHILE_RUNNING, True),  # dispatched: it may have run
        ("toolu_B", REJECTED, True)]  # never started
    assert first.tool_use_result == second.tool_use_result == REJECTED_RESULT
    assert interrupt.origin == "interrupt" and interrupt.message.text() == INTERRUPTED
    (result,) = [e for e in engine.store.entries(rec.id) if isinstance(e, ResultEntry)]
    assert (result.subtype, result.num_turns, result.terminal_reason) == ("cancelled", 3, "aborted_tools")


def test_its_stream_json_lines_are_claude_codes(engine, ws):
    rec, inline, _ = two_commands(engine, ws)
    engine.cancel(rec.id)
    lines = []
    out = StreamJson(lambda line: lines.append(json.loads(line)), lambda: None)
    for e in engine.store.entries(rec.id):
        out.entry(e)
    tool_line, _, interrupt_line, result = lines[-4:]
    assert tool_line["tool_use_result"] == REJECTED_RESULT
    assert interrupt_line["message"] == {"role": "user", "content": [{"type": "text", "text": INTERRUPTED}]}
    assert "tool_use_result" not in interrupt_line
    assert {k: result[k] for k in ("subtype", "is_error", "num_turns", "stop_reason", "terminal_reason", "errors")} \
        == {"subtype": "error_during_execution", "is_error": True, "num_turns": 3, "stop_reason": "tool_use",
            "terminal_reason": "aborted_tools",
            "errors": ["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=tool_use"]}
    assert "api_error_status" not in result and "result" not in result


def test_the_model_is_sent_the_results_and_the_interrupt_before_the_next_prompt(engine, ws):
    rec, inline, _ = two_commands(engine, ws)
    engine.cancel(rec.id)
    inline.queue.clear()  # (the superseded step would only be skipped)
    inline.dispatch(engine.submit(rec.id, "and again"))
    inline.drain()
    last = api_of(engine.store.get_session(rec.id).model).requests[-1]["messages"][-1]
    assert last["role"] == "user"
    assert [(b["type"], b.get("content") or b.get("text")) for b in last["content"]] == [
        ("tool_result", STOPPED_WHILE_RUNNING), ("tool_result", REJECTED), ("text", INTERRUPTED), ("text", "and again")]


def test_the_terminal_shows_the_calls_interrupted_and_the_interrupt_not_as_a_prompt(engine, ws):
    rec, inline, _ = two_commands(engine, ws)
    engine.cancel(rec.id)
    buf = io.StringIO()
    r = Renderer(Console(file=buf, width=200, color_system=None))
    for e in engine.store.entries(rec.id):
        r.entry(e)
    shown = buf.getvalue()
    assert "> go\n" in shown and "⎿  Bash(sleep 1): interrupted\n" in shown
    assert "⎿  Bash(sleep 2): interrupted before it ran\n" in shown
    assert INTERRUPTED not in shown and "STOP what you are doing" not in shown


def test_a_failure_still_closes_the_calls_with_the_bracketed_text(engine, ws):
    rec, inline, step = two_commands(engine, ws)
    owner = owner_token()
    assert engine.claim(rec.id, step.id, owner).step is not None
    engine.fail_step(rec.id, step.id, owner, "the worker broke")
    entries = engine.store.entries(rec.id)
    assert [b.text for e in users(engine, rec.id)[1:] for b in e.message.blocks()] == [INTERRUPTED, INTERRUPTED]
    assert not [e for e in entries if isinstance(e, UserEntry) and e.origin == "interrupt"]
    (result,) = [e for e in entries if isinstance(e, ResultEntry)]
    assert (result.subtype, result.num_turns, result.terminal_reason) == ("error_during_execution", 1, None)
    assert result_json(result, "tool_use")["errors"] == [result.result]


def test_the_claude_code_transcript_copy_has_claude_codes_lines(engine, ws):
    rec, inline, _ = two_commands(engine, ws)
    engine.cancel(rec.id)
    lines = [ln for ln in claude_lines(engine.store.entries(rec.id), engine.store.get_session(rec.id))
             if ln["type"] == "user"]
    assert [ln.get("toolUseResult") for ln in lines[1:]] == [REJECTED_RESULT, REJECTED_RESULT, None]
    assert lines[-1]["message"] == {"role": "user", "content": [{"type": "text", "text": INTERRUPTED}]}


@pytest.mark.parametrize("said", [INTERRUPTED, INTERRUPTED_REPLY])
def test_claude_codes_interrupt_message_is_imported_as_one(said):
    line = {"type": "user", "uuid": "u2", "parentUuid": "u1", "sessionId": "s", "cwd": "/",
            "message": {"role": "user", "content": [{"type": "text", "text": said}]}}
    prompt = dict(line, uuid="u1", parentUuid=None, message={"role": "user", "content": "go"})
    entries, _ = import_entries([json.dumps(prompt), json.dumps(line)])
    assert [e.origin for e in entries] == ["prompt", "interrupt"]


def test_an_interrupt_with_no_call_open_ends_aborted_streaming_as_claude_code(engine, ws):
    """The model call still running (a reply streaming): "[Request interrupted by user]", two turns,
    aborted_streaming; the next request carries it between the prompts."""
    rec = session(engine, ws, [Turn(text="Step 0."), Turn(text="Done.")])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))  # the model step is queued, not run: the call is under way
    assert engine.cancel(rec.id)
    prompt, interrupt = users(engine, rec.id)
    assert interrupt.origin == "interrupt" and interrupt.message.text() == INTERRUPTED_REPLY
    (result,) = [e for e in engine.store.entries(rec.id) if isinstance(e, ResultEntry)]
    assert (result.subtype, result.num_turns, result.terminal_reason) == ("cancelled", 2, "aborted_streaming")
    assert result_json(result)["errors"] == ["[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null"]
    inline.queue.clear()  # (the superseded step would only be skipped)
    inline.dispatch(engine.submit(rec.id, "and again"))
    inline.drain()
    (request,) = api_of(engine.store.get_session(rec.id).model).requests
    texts = [b.get("text") for b in request["messages"][-1]["content"]]
    assert texts[-3:] == ["go", INTERRUPTED_REPLY, "and again"], texts
