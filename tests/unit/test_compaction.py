"""Token thresholds, the compacting state, the summary the model then sees, session memory
as the first choice, the circuit breaker, the blocking limit, cache breakpoints and
large tool results."""

from __future__ import annotations

import json
import os

import pytest

from demo.scripted import DEMO_FILES, Script, ScriptError, ScriptUsage, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from workflows.compaction.run import SUMMARY_SYSTEM
from workflows.context.assemble import SUMMARY_INTRO, build_request
from workflows.engine import Engine
from workflows.exceptions import ContextFull
from workflows.model.tokens import effective_window, thresholds
from workflows.models import (
    CompactBoundaryEntry,
    ResultEntry,
    StateEntry,
    SummaryEntry,
    SystemEntry,
    UserEntry,
)
from workflows.models.options import SessionOptions
from workflows.store import keys
from workflows.store.redis_store import Store
from workflows.tools import run_tool
from workflows.tools.base import ToolContext

BIG = ScriptUsage(input_tokens=190_000, output_tokens=500)


@pytest.fixture(autouse=True)
def no_retries(settings):
    settings.api_max_retries = 0  # a scripted error fails at once


def is_compaction(body: dict) -> bool:
    return body.get("system", [{}])[0].get("text") == SUMMARY_SYSTEM


def model(reads: int = 1, fail_compactions: bool = False):
    """Each turn reports a nearly full context and Reads calc.py, ``reads`` times; then answers.

    It counts its Reads itself: after a compaction the earlier calls are no longer in the messages.
    """
    done = 0

    def turn(body: dict) -> Turn:
        nonlocal done
        if is_compaction(body):
            if fail_compactions:
                return Turn(text="x", errors=[ScriptError(status=500)])
            return Turn(text="<analysis>thinking</analysis><summary>SUMMARY: the user wants calc.py fixed."
                             "</summary>", usage=ScriptUsage(input_tokens=150_000, output_tokens=200))
        if done < reads:
            done += 1
            return Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})], usage=BIG)
        return Turn(text="done", usage=ScriptUsage(input_tokens=1_000, output_tokens=10))

    return turn


def run(engine, ws, turn_fn, prompt="fix calc.py", **kw):
    m = scripted_model(turn_fn)
    rec = create_session(engine, str(ws), model=m, permission_mode="bypassPermissions", **kw)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, prompt))
    inline.drain()
    return rec.id, inline, api_of(m)


def of(engine, sid, kind):
    return [e for e in engine.store.entries(sid) if isinstance(e, kind)]


def test_thresholds_follow_the_effective_window():
    w = effective_window("claude-sonnet-4-5")
    assert w == 200_000 - 20_000
    t = thresholds("claude-sonnet-4-5")
    assert (t.warning, t.error, t.auto_compact, t.blocking) == (w - 20_000, w - 20_000, w - 13_000, w - 3_000)
    assert effective_window("claude-3-5-haiku") == 200_000 - 8_192
    assert thresholds("claude-sonnet-4-5", autocompact_pct=50).auto_compact == w // 2


def test_over_the_threshold_the_session_compacts_and_the_model_gets_the_summary(engine, ws):
    sid, inline, api = run(engine, ws, model())
    states = [e.dest for e in of(engine, sid, StateEntry)]
    assert State.COMPACTING in states
    calls = api.requests
    compactions = [b for b in calls if is_compaction(b)]
    assert len(compactions) == 1
    prompt_text = json.dumps(compactions[0]["messages"][-1])
    assert "Primary Request and Intent" in prompt_text and "All user messages" in prompt_text
    after = calls[calls.index(compactions[0]) + 1]
    first = after["messages"][0]["content"]
    assert any(b.get("text", "").startswith(SUMMARY_INTRO) and "SUMMARY: the user wants calc.py fixed" in b["text"]
               for b in first)
    assert "<analysis>" not in json.dumps(after["messages"])
    assert "fix calc.py" not in json.dumps(after["messages"]), "the old messages were sent again"
    (boundary,) = of(engine, sid, CompactBoundaryEntry)
    assert boundary.trigger == "auto" and boundary.pre_tokens >= 190_000 and boundary.source == "summary_call"
    # The transcript keeps everything.
    assert [e.message.text() for e in of(engine, sid, UserEntry) if e.origin == "prompt"] == ["fix calc.py"]
    assert of(engine, sid, ResultEntry)[-1].result == "done"
    rec = engine.store.get_session(sid)
    assert rec.context_tokens < 20_000 and rec.state is State.IDLE


def test_a_resumed_session_after_compaction_sends_the_summary_not_the_old_messages(engine, ws):
    sid, inline, api = run(engine, ws, model())
    inline.dispatch(engine.submit(sid, "and now the tests"))
    inline.drain()
    last = json.dumps(api.requests[-1]["messages"])
    assert "SUMMARY: the user wants calc.py fixed" in last and "and now the tests" in last
    assert "fix calc.py" not in last


def test_session_memory_is_used_first_and_makes_no_summary_call(engine, ws, fake_redis):
    m = scripted_model(model())
    rec = engine.create_session(str(ws), SessionOptions(model=m, permission_mode="bypassPermissions"))
    fake_redis.set(keys.session_memory(rec.id), "# Session memory\nFixing calc.py add().")
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "fix calc.py"))
    inline.drain()
    assert not [b for b in api_of(m).requests if is_compaction(b)]
    (boundary,) = of(engine, rec.id, CompactBoundaryEntry)
    assert boundary.source == "session_memory"
    assert "Fixing calc.py add()." in json.dumps(api_of(m).requests[-1]["messages"])


def test_three_failed_compactions_trip_the_breaker(engine, ws):
    sid, inline, api = run(engine, ws, model(reads=5, fail_compactions=True))
    assert len([b for b in api.requests if is_compaction(b)]) == 3, "it kept trying after three failures"
    rec = engine.store.get_session(sid)
    assert rec.auto_compact_off and rec.compact_failures == 3
    errors = [e.content for e in of(engine, sid, SystemEntry) if e.subtype == "error"]
    assert any("Auto-compact failed 3 times in a row" in e and "/compact" in e for e in errors)
    assert of(engine, sid, ResultEntry)[-1].result == "done", "the session went on without compaction"


def test_over_the_blocking_limit_a_prompt_is_refused_with_the_fix(engine, ws):
    sid, inline, api = run(engine, ws, model(reads=5, fail_compactions=True))
    rec = engine.store.get_session(sid)
    with engine.store.lock(sid):
        rec.context_tokens = thresholds(rec.model).blocking
        engine.store.save_session(rec)
    with pytest.raises(ContextFull, match=r"past the blocking limit .* Run /compact \(or `mainsail compact"):
        engine.submit(sid, "one more")


def test_manual_compact_with_instructions_returns_to_idle(engine, ws):
    sid, inline, api = run(engine, ws, lambda body: Turn(
        text="<summary>MANUAL SUMMARY</summary>" if is_compaction(body) else "hello"))
    inline.dispatch(engine.compact(sid, "keep the file names"))
    inline.drain()
    (call,) = [b for b in api.requests if is_compaction(b)]
    assert "keep the file names" in json.dumps(call["messages"][-1])
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE
    (boundary,) = of(engine, sid, CompactBoundaryEntry)
    assert boundary.trigger == "manual"
    assert of(engine, sid, SummaryEntry)[0].summary == "MANUAL SUMMARY"
    assert of(engine, sid, ResultEntry)[-1].result.startswith("Compacted")


def test_requests_carry_cache_breakpoints(engine, ws):
    sid, inline, api = run(engine, ws, lambda body: Turn(text="hi"))
    body = api.requests[0]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    marks = json.dumps(body).count('"cache_control"')
    assert marks == 3
    rec = engine.store.get_session(sid)
    again = build_request(rec, engine.store.entries(sid), 100)
    assert again["system"] == body["system"], "the system prompt must be the same bytes every call"


def test_a_large_tool_result_is_saved_and_the_model_gets_a_preview(engine, ws):
    big = "python3 -c \"print('x' * 80000)\""
    sid, inline, api = run(engine, ws, Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={"command": big})]),
                                                     Turn(text="ok")]))
    (result,) = [e for e in of(engine, sid, UserEntry) if e.origin == "tool_result"]
    text = result.message.blocks()[0].text
    path = text.split("saved at ")[1].split(";")[0]
    size = os.path.getsize(path)
    assert path.startswith(str(ws)) and size >= 80_000
    assert len(text) < 5_000 and f"output too large: {size:,} characters" in text
    assert open(os.path.join(os.path.dirname(path), ".gitignore")).read() == "*\n"
    out = run_tool("Read", {"file_path": path}, ToolContext(workspace=ws))
    assert not out.is_error and "x" * 1000 in out.content
