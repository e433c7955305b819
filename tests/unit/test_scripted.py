"""The scripted Messages API, through the real anthropic SDK, in-process."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import anthropic
import pytest

from demo.scripted import (
    DEMO_FILES,
    DEMO_PROMPT,
    FINISHED_TEXT,
    Script,
    ScriptedMessagesAPI,
    Turn,
    get_api,
    make_client,
    read_loop,
)

USER = [{"role": "user", "content": "hi"}]


def _stream(client: anthropic.Anthropic, messages=USER, **kw):
    with client.messages.stream(model="claude-test", max_tokens=100, messages=messages, **kw) as stream:
        events = list(stream)
        return events, stream.get_final_message()


def _api(*turns: dict) -> ScriptedMessagesAPI:
    return ScriptedMessagesAPI(Script.model_validate({"turns": list(turns)}))


def test_text_turn_streams_deltas_and_final_message_matches():
    api = _api({"text": "Hello there, scripted world.", "usage": {"input_tokens": 7, "output_tokens": 5}})
    events, message = _stream(make_client(api, max_retries=0))

    deltas = [e.delta.text for e in events if e.type == "content_block_delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == "Hello there, scripted world."
    assert [b.type for b in message.content] == ["text"]
    assert message.content[0].text == "Hello there, scripted world."
    assert message.stop_reason == "end_turn"
    assert message.model == "claude-test"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 5)
    assert len(api.requests) == 1
    assert api.requests[0]["stream"] is True
    assert api.requests[0]["messages"] == USER


def test_tool_use_input_arrives_parsed_with_stable_ids():
    tool_input = {"file_path": "src/a.py", "offset": 3, "nested": {"k": ["x", "y"]}}
    api = _api(
        {
            "text": "Reading.",
            "tool_uses": [{"name": "Read", "input": tool_input}, {"name": "Bash", "input": {"command": "ls"}, "id": "toolu_mine"}],
        }
    )
    client = make_client(api, max_retries=0)
    _, message = _stream(client)
    _, again = _stream(client)  # same request again: same turn, same ids

    assert message.stop_reason == "tool_use"
    uses = [b for b in message.content if b.type == "tool_use"]
    assert [(u.name, u.input, u.id) for u in uses] == [
        ("Read", tool_input, "toolu_00_0"),
        ("Bash", {"command": "ls"}, "toolu_mine"),
    ]
    assert [b.id for b in again.content if b.type == "tool_use"] == ["toolu_00_0", "toolu_mine"]
    assert message.usage.input_tokens > 0 and message.usage.output_tokens > 0  # estimated


def test_turn_chosen_by_assistant_count_and_past_end_finishes():
    api = _api({"text": "first"}, {"text": "second"})
    client = make_client(api, max_retries=0)
    history = USER + [{"role": "assistant", "content": "first"}, {"role": "user", "content": "more"}]
    assert _stream(client, history)[1].content[0].text == "second"
    past = history + [{"role": "assistant", "content": "second"}, {"role": "user", "content": "more"}]
    final = _stream(client, past)[1]
    assert final.content[0].text == FINISHED_TEXT
    assert final.stop_reason == "end_turn"


def test_non_streaming_create():
    api = _api({"text": "plain", "tool_uses": [{"name": "Read", "input": {"file_path": "x"}}]})
    message = make_client(api, max_retries=0).messages.create(model="m", max_tokens=10, messages=USER)
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"file_path": "x"}
    assert "stream" not in api.requests[0]


def test_overloaded_with_retry_after_is_retried_by_the_sdk(monkeypatch):
    import anthropic._base_client as base_client

    slept: list[float] = []
    # The SDK's wait before its retry, recorded (its module's own `time`: no other thread's sleep is touched).
    monkeypatch.setattr(base_client, "time", SimpleNamespace(sleep=slept.append, time=time.time, time_ns=time.time_ns))
    api = _api({"text": "ok", "errors": [{"status": 529, "retry_after": 0.05}]})
    _, message = _stream(make_client(api, max_retries=2))
    assert message.content[0].text == "ok"
    assert len(api.requests) == 2
    assert api.attempts(0) == 2
    assert slept == [0.05]  # honoured retry-after, not the SDK's default backoff (0.5 s and up, with jitter)


def test_overloaded_error_shape_without_retries():
    api = _api({"text": "ok", "errors": [{"status": 529, "retry_after": 1.5}]})
    with pytest.raises(anthropic.APIStatusError) as info:
        _stream(make_client(api, max_retries=0))
    assert info.value.status_code == 529
    assert info.value.response.headers["retry-after"] == "1.5"
    assert info.value.body["error"]["type"] == "overloaded_error"
    assert info.value.body["type"] == "error"
    # the turn succeeds once its errors are served
    assert _stream(make_client(api, max_retries=0))[1].content[0].text == "ok"


def test_repeated_500_beyond_max_retries_surfaces():
    err = {"status": 500, "retry_after": 0.01, "message": "boom"}
    api = _api({"text": "never", "errors": [err, err, err, err]})
    with pytest.raises(anthropic.InternalServerError) as info:
        _stream(make_client(api, max_retries=2))
    assert info.value.status_code == 500
    assert "boom" in str(info.value)
    assert len(api.requests) == 3  # one try + two retries


def test_reset_clears_requests_and_error_counters():
    api = _api({"text": "ok", "errors": [{"status": 429, "retry_after": 0.01}]})
    client = make_client(api, max_retries=0)
    with pytest.raises(anthropic.RateLimitError):
        _stream(client)
    api.reset()
    assert api.requests == []
    with pytest.raises(anthropic.RateLimitError):  # the error is served again
        _stream(client)


def test_stream_delay_keeps_the_stream_open():
    api = _api({"text": "a b c", "stream_delay_seconds": 0.05})
    client = make_client(api, max_retries=0)
    stamps = []
    t0 = time.monotonic()
    with client.messages.stream(model="m", max_tokens=10, messages=USER) as stream:
        for event in stream:
            stamps.append((event.type, time.monotonic() - t0))
    first = next(t for kind, t in stamps if kind == "message_start")
    last = next(t for kind, t in stamps if kind == "message_stop")
    # ~11 events, 0.05 s apart
    assert last - first >= 0.35


def test_delay_seconds_delays_the_response():
    api = _api({"text": "late", "delay_seconds": 0.2})
    t0 = time.monotonic()
    _stream(make_client(api, max_retries=0))
    assert time.monotonic() - t0 >= 0.2


def _tool_results(message, text: str) -> dict:
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": b.id, "content": text} for b in message.content if b.type == "tool_use"
        ],
    }


def _assistant(message) -> dict:
    return {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}


@pytest.mark.parametrize(
    "run_output, expect",
    [("2 + 3 = 5\n", "2 + 3 = 5"), ("Traceback: NameError\n", "Traceback: NameError")],
)
def test_demo_walks_all_four_turns(run_output, expect):
    assert "return a - b" in DEMO_FILES["calc.py"]
    client = make_client(ScriptedMessagesAPI(get_api("demo").script), max_retries=0)
    messages = [{"role": "user", "content": DEMO_PROMPT}]
    results = [DEMO_FILES["calc.py"], "The file calc.py has been updated.", run_output]
    expected_tools = [
        ("Read", {"file_path": "calc.py"}),
        ("Edit", {"file_path": "calc.py", "old_string": "return a - b", "new_string": "return a + b"}),
        ("Bash", {"command": "python3 calc.py", "description": "Run the calculator"}),
    ]
    for (name, tool_input), result in zip(expected_tools, results):
        _, message = _stream(client, messages)
        assert message.stop_reason == "tool_use"
        assert message.content[0].type == "text" and message.content[0].text
        [use] = [b for b in message.content if b.type == "tool_use"]
        assert (use.name, use.input) == (name, tool_input)
        messages += [_assistant(message), _tool_results(message, result)]

    _, final = _stream(client, messages)
    assert final.stop_reason == "end_turn"
    assert [b.type for b in final.content] == ["text"]
    assert "+" in final.content[0].text
    assert expect in final.content[0].text
    if "5" not in run_output:
        assert "2 + 3 = 5" not in final.content[0].text


def test_read_loop_and_registry():
    script = read_loop(3, "b.txt")
    assert len(script.turns) == 4
    assert all(t.tool_uses[0].input == {"file_path": "b.txt"} for t in script.turns[:3])
    assert script.turns[-1].effective_stop_reason == "end_turn"
    api = get_api("scripted:read_loop:2")
    assert api is get_api("read_loop:2")
    assert len(api.script.turns) == 3
    with pytest.raises(KeyError):
        get_api("no-such-script")


def test_script_from_file(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"text": "from file"}]}))
    api = get_api(f"file:{path}")
    assert _stream(make_client(api, max_retries=0))[1].content[0].text == "from file"
    with pytest.raises(ValueError):
        Script.model_validate({"turns": [{"txt": "typo"}]})


def test_callable_script_sees_the_request():
    seen = []

    def turn(body: dict) -> Turn:
        seen.append(body["system"])
        return Turn(text=f"system was {body['system']}")

    message = _stream(make_client(ScriptedMessagesAPI(turn), max_retries=0), system="SYS")[1]
    assert message.content[0].text == "system was SYS"
    assert seen == ["SYS"]
