"""Claude Code-compatible script output: --output-format json / stream-json, --input-format stream-json."""

from __future__ import annotations

import io
import json

import pytest

from cli.output import CLAUDE_CODE_VERSION, StreamJson, result_json
from cli.stream_input import read_stream_json_input
from statemachines import State
from workflows.models import (
    AssistantEntry,
    AssistantMessage,
    Message,
    PermissionMode,
    ResultEntry,
    SessionRecord,
    StateEntry,
    SystemEntry,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UserEntry,
)

SID = "0b7c2a52-9d3e-4c55-8f61-1a2b3c4d5e6f"


def result(**kw) -> ResultEntry:
    base = dict(session_id=SID, subtype="success", result="Done.", num_turns=3, duration_ms=1234,
                duration_api_ms=987, usage=Usage(input_tokens=10, output_tokens=20, cache_creation_input_tokens=3,
                                                  cache_read_input_tokens=4),
                total_cost_usd=0.0125,
                permission_denials=[{"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "rm x"}}])
    base.update(kw)
    return ResultEntry(**base)


def test_result_json_has_claude_codes_fields_and_types():
    r = result()
    out = result_json(r, "end_turn")
    extra = {"modelUsage", "cost_breakdown"}  # Mainsail's additions (tests/unit/test_cost_figures.py)
    assert extra <= set(out)
    assert {k: v for k, v in out.items() if k not in extra} == {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1234,
        "duration_api_ms": 987,
        "num_turns": 3,
        "result": "Done.",
        "stop_reason": "end_turn",
        "terminal_reason": "completed",
        "session_id": SID,
        "total_cost_usd": 0.0125,
        "usage": {"input_tokens": 10, "output_tokens": 20, "cache_creation_input_tokens": 3,
                  "cache_read_input_tokens": 4, "output_tokens_details": {"thinking_tokens": 0},
                  "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard",
                  "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 3},
                  "inference_geo": "", "iterations": [], "speed": "standard", "fallback_credit": None},
        "permission_denials": [{"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "rm x"}}],
        "subagent_stats": {"spawned": 0, "requested": {"background": 0, "foreground": 0, "unset": 0},
                           "started_in_background": 0, "max_depth": 0, "spawned_by_subagents": 0, "completed": 0,
                           "failed": 0, "killed": {"parent": 0, "user": 0, "system": 0},
                           "refused": {"depth_limit": 0, "concurrency_limit": 0, "budget": 0}, "by_type": {}},
        "fast_mode_state": "off", "safety_stops": 0, "api_error_status": None, "queued_turn_count": 0,
        "uuid": r.uuid,
    }
    for key, typ in [("is_error", bool), ("duration_ms", int), ("duration_api_ms", int), ("num_turns", int),
                     ("total_cost_usd", float), ("result", str), ("session_id", str)]:
        assert type(out[key]) is typ, key
    assert all(type(out["usage"][k]) is int for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens",
                                                        "cache_read_input_tokens"))
    json.dumps(out)  # JSON-able


def test_result_json_zero_cost_is_still_a_float():
    assert type(result_json(result(total_cost_usd=0))["total_cost_usd"]) is float


@pytest.mark.parametrize("subtype,expected", [
    ("success", "success"),
    ("error_max_turns", "error_max_turns"),
    ("error_during_execution", "error_during_execution"),
    ("error_max_budget_usd", "error_max_budget_usd"),
    ("cancelled", "error_during_execution"),
])
def test_result_json_subtypes(subtype, expected):
    out = result_json(result(subtype=subtype, is_error=subtype != "success"))
    assert out["subtype"] == expected
    assert out["is_error"] is (expected != "success")


def test_a_cancelled_result_is_an_error_even_if_the_entry_says_otherwise():
    out = result_json(result(subtype="cancelled", is_error=False))
    assert out["subtype"] == "error_during_execution" and out["is_error"] is True


def small_transcript():
    prompt = UserEntry(session_id=SID, message=Message(role="user", content="Fix calc.py"))
    assistant = AssistantEntry(session_id=SID, message=AssistantMessage(
        id="msg_01", model="claude-sonnet-4-5", stop_reason="tool_use",
        content=[TextBlock(text="Reading it."), ToolUseBlock(id="toolu_01", name="Read",
                                                             input={"file_path": "calc.py"})],
        usage=Usage(input_tokens=100, output_tokens=7)))
    state = StateEntry(session_id=SID, trigger="tools_requested", source=State.QUERYING, dest=State.RUNNING_TOOLS)
    tool_result = UserEntry(session_id=SID, origin="tool_result", display="Read 3 lines", message=Message(
        role="user", content=[ToolResultBlock(tool_use_id="toolu_01", content="def add(a, b): ...")]))
    note = SystemEntry(session_id=SID, subtype="warning", content="retrying")
    done = result()
    return [prompt, assistant, state, tool_result, note, done]


def test_stream_json_lines_for_a_small_transcript():
    """Claude Code's shapes: no prompt echo, one assistant line per content block (one message id), a
    tool result's user line with ``tool_use_result``, the result with the last reply's stop_reason."""
    buf = io.StringIO()
    out = StreamJson(buf.write)
    rec = SessionRecord(id=SID, model="claude-sonnet-4-5", workspace="/tmp/ws",
                        permission_mode=PermissionMode.ACCEPT_EDITS)
    out.init(rec, ["Bash", "Read"], api_key_source="ANTHROPIC_API_KEY")
    entries = small_transcript()
    written = [out.entry(e) for e in entries]
    assert written[0] == [] and written[2] == [] and written[4] == []  # prompt, state, system: nothing

    text = buf.getvalue()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) == 5
    objs = [json.loads(ln) for ln in lines]
    assert lines == [json.dumps(o, separators=(",", ":"), ensure_ascii=False) for o in objs], "compact"

    init = objs[0]
    assert {k: init[k] for k in ("type", "subtype", "session_id", "cwd", "model", "tools", "permissionMode",
                                 "apiKeySource", "claude_code_version")} == {
        "type": "system", "subtype": "init", "session_id": SID, "cwd": "/tmp/ws", "model": "claude-sonnet-4-5",
        "tools": ["Bash", "Read"], "permissionMode": "acceptEdits", "apiKeySource": "ANTHROPIC_API_KEY",
        "claude_code_version": CLAUDE_CODE_VERSION}
    assert isinstance(init["uuid"], str) and init["uuid"]

    message = {"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
               "stop_reason": None, "stop_sequence": None,  # Claude Code streams an assistant message's as null
               "usage": {"input_tokens": 100, "output_tokens": 7, "cache_creation_input_tokens": 0,
                         "cache_read_input_tokens": 0}}
    assert objs[1] == {"type": "assistant", "message": dict(message, content=[{"type": "text", "text": "Reading it."}]),
                       "parent_tool_use_id": None, "session_id": SID, "uuid": entries[1].uuid,
                       "timestamp": entries[1].timestamp}
    assert objs[2]["message"] == dict(message, content=[{"type": "tool_use", "id": "toolu_01", "name": "Read",
                                                          "input": {"file_path": "calc.py"}}])
    assert objs[2]["uuid"] != objs[1]["uuid"]
    assert objs[3]["type"] == "user" and objs[3]["uuid"] == entries[3].uuid
    assert objs[3]["message"] == {"role": "user", "content": [  # no is_error unless it is one, as Claude Code
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "def add(a, b): ..."}]}
    assert objs[3]["timestamp"] == entries[3].timestamp
    assert objs[3]["parent_tool_use_id"] is None and objs[3]["tool_use_result"] == "def add(a, b): ..."
    assert objs[4] == result_json(entries[5], "tool_use")
    assert objs[4]["stop_reason"] == "tool_use" and objs[4]["result"] and "errors" not in objs[4]


def test_stream_json_replays_the_prompt_and_streams_deltas_only_when_asked():
    buf = io.StringIO()
    out = StreamJson(buf.write, replay_user_messages=True, partial_messages=True)
    out.entry(small_transcript()[0])
    out.delta(SID, "Read")
    user, event = [json.loads(ln) for ln in buf.getvalue().splitlines()]
    assert user["type"] == "user" and user["message"]["content"] == [{"type": "text", "text": "Fix calc.py"}]
    assert event["type"] == "stream_event" and event["session_id"] == SID
    assert event["event"] == {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Read"}}
    quiet = io.StringIO()
    StreamJson(quiet.write).delta(SID, "Read")
    assert quiet.getvalue() == ""


def test_an_error_result_carries_errors_and_no_result():
    err = result().model_copy(update={"subtype": "error_max_turns", "is_error": True,
                                      "result": "Reached maximum number of turns (1)"})
    obj = result_json(err)
    assert obj["errors"] == ["Reached maximum number of turns (1)"] and "result" not in obj
    assert obj["subtype"] == "error_max_turns" and obj["terminal_reason"] == "max_turns" and obj["is_error"]


def test_stream_json_flushes_every_line():
    class Out(io.StringIO):
        flushes = 0

        def flush(self):
            Out.flushes += 1

    buf = Out()
    out = StreamJson(buf.write)
    for e in small_transcript():
        out.entry(e)
    assert Out.flushes == 4
    seen = []
    out = StreamJson(seen.append, flush=lambda: seen.append("<flush>"), replay_user_messages=True)
    out.entry(small_transcript()[0])
    assert seen[1] == "<flush>" and seen[0].endswith("\n")


def test_stream_json_input_yields_user_texts():
    lines = [
        '{"type":"user","message":{"role":"user","content":"first"}}\n',
        "\n",
        "   \n",
        json.dumps({"type": "user", "session_id": "", "parent_tool_use_id": None,
                    "message": {"role": "user", "content": [{"type": "text", "text": "second"},
                                                            {"type": "text", "text": "part two"}]}}),
    ]
    assert list(read_stream_json_input(lines)) == ["first", "second\npart two"]


def test_stream_json_input_is_lazy():
    def lines():
        yield '{"type":"user","message":{"role":"user","content":"one"}}'
        raise AssertionError("read ahead")

    assert next(read_stream_json_input(lines())) == "one"


@pytest.mark.parametrize("line,why", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"type":"assistant","message":{"role":"assistant","content":"x"}}', "expected \"type\": \"user\""),
    ('{"type":"user"}', '"message" must be an object'),
    ('{"type":"user","message":{"role":"assistant","content":"x"}}', '"message.role" must be "user"'),
    ('{"type":"user","message":{"role":"user","content":42}}', '"message.content" must be'),
    ('{"type":"user","message":{"role":"user","content":[{"type":"image","source":{}}]}}',
     "content block 0 is 'image'"),
    ('{"type":"user","message":{"role":"user","content":[{"type":"text"}]}}', 'has no "text" string'),
    ('{"type":"user","message":{"role":"user","content":"  "}}', "has no text"),
])
def test_stream_json_input_errors_name_the_line(line, why):
    lines = ['{"type":"user","message":{"role":"user","content":"ok"}}', "", line]
    it = read_stream_json_input(lines)
    assert next(it) == "ok"
    with pytest.raises(ValueError) as exc:
        next(it)
    msg = str(exc.value)
    assert msg.startswith("Invalid stream-json input on line 3: "), msg
    assert why in msg
