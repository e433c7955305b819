"""workflows/model/stream.py puts a streamed reply together exactly as the SDK's own accumulator does.

Each case feeds the same event dicts to :class:`MessageAccumulator` and to the SDK's
``accumulate_event`` and compares the finished messages as the engine reads them
(``model_dump(mode="json", exclude_none=True)``); then the whole path through the real SDK client.
"""

from __future__ import annotations

import json

import anthropic
import httpx2
import pytest
from anthropic.lib.streaming._messages import accumulate_event

from workflows.model.client import stream_reply
from workflows.model.stream import MessageAccumulator, StreamProtocolError


def _start(**usage) -> dict:
    return {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1, "cache_read_input_tokens": 7, **usage}}}


def _block(i: int, block: dict) -> dict:
    return {"type": "content_block_start", "index": i, "content_block": block}


def _delta(i: int, delta: dict) -> dict:
    return {"type": "content_block_delta", "index": i, "delta": delta}


def _stop(i: int) -> dict:
    return {"type": "content_block_stop", "index": i}


def _end(stop_reason: str = "end_turn", **usage) -> list[dict]:
    return [{"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
             "usage": {"output_tokens": 42, **usage}}, {"type": "message_stop"}]


CASES = {
    "text in pieces": [_start(), _block(0, {"type": "text", "text": ""}),
                       _delta(0, {"type": "text_delta", "text": "Hello"}),
                       _delta(0, {"type": "text_delta", "text": ", world"}), _stop(0), *_end()],
    "text then two tool calls, input in fragments, a null kept": [
        _start(), _block(0, {"type": "text", "text": ""}), _delta(0, {"type": "text_delta", "text": "Reading."}),
        _stop(0), _block(1, {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}),
        _delta(1, {"type": "input_json_delta", "partial_json": '{"file_pa'}),
        _delta(1, {"type": "input_json_delta", "partial_json": 'th": "a.py", "limit": null, "n": [1, '}),
        _delta(1, {"type": "input_json_delta", "partial_json": '2.5, "\\u00e9"]}'}), _stop(1),
        _block(2, {"type": "tool_use", "id": "toolu_2", "name": "TodoWrite", "input": {}}),
        _delta(2, {"type": "input_json_delta", "partial_json": ""}), _stop(2), *_end("tool_use")],
    "a tool call with no fragments keeps its start input": [
        _start(), _block(0, {"type": "tool_use", "id": "toolu_1", "name": "Glob", "input": {}}), _stop(0),
        *_end("tool_use")],
    "thinking and its signature": [
        _start(), _block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        _delta(0, {"type": "thinking_delta", "thinking": "Let me "}),
        _delta(0, {"type": "thinking_delta", "thinking": "think."}),
        _delta(0, {"type": "signature_delta", "signature": "sig=="}), _stop(0),
        _block(1, {"type": "text", "text": ""}), _delta(1, {"type": "text_delta", "text": "Done."}), _stop(1),
        *_end()],
    "citations": [
        _start(), _block(0, {"type": "text", "text": ""}), _delta(0, {"type": "text_delta", "text": "Per the doc"}),
        _delta(0, {"type": "citations_delta", "citation": {
            "type": "char_location", "cited_text": "x", "document_index": 0, "document_title": None,
            "start_char_index": 0, "end_char_index": 1, "file_id": None}}), _stop(0), *_end()],
    "a server tool and its result": [
        _start(), _block(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
        _delta(0, {"type": "input_json_delta", "partial_json": '{"query": "redis lua"}'}), _stop(0),
        _block(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
            {"type": "web_search_result", "url": "https://redis.io", "title": "Redis", "encrypted_content": "e",
             "page_age": None}]}), _stop(1), *_end()],
    "usage totals in message_delta overwrite, absent ones stay": [
        _start(cache_creation_input_tokens=3), _block(0, {"type": "text", "text": ""}),
        _delta(0, {"type": "text_delta", "text": "ok"}), _stop(0),
        *_end(input_tokens=12, cache_read_input_tokens=None, server_tool_use={"web_search_requests": 1})],
    "max_tokens with a tool call cut off": [
        _start(), _block(0, {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}),
        _delta(0, {"type": "input_json_delta", "partial_json": '{"content": "abc"}'}), *_end("max_tokens")],
}


def _sdk(events: list[dict]) -> dict:
    snapshot, bufs = None, {}
    for event in events:
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
    return snapshot.model_dump(mode="json", exclude_none=True)


def _ours(events: list[dict]) -> tuple[dict, str]:
    acc, text = MessageAccumulator(), ""
    for event in events:
        text += acc.apply(event) or ""
    return acc.message(), text


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_message_is_the_sdks(name):
    events = CASES[name]
    ours, _ = _ours(events)
    assert ours == _sdk(events)


def test_apply_returns_the_text_each_delta_adds():
    _, text = _ours(CASES["text then two tool calls, input in fragments, a null kept"])
    assert text == "Reading."
    _, thinking_case = _ours(CASES["thinking and its signature"])
    assert thinking_case == "Done."


def test_a_tool_input_that_is_not_json_is_refused_with_the_sdks_wording():
    events = [_start(), _block(0, {"type": "tool_use", "id": "t", "name": "Bash", "input": {}}),
              _delta(0, {"type": "input_json_delta", "partial_json": '{"command": '}), _stop(0)]
    acc = MessageAccumulator()
    with pytest.raises(StreamProtocolError, match="Unable to parse tool parameter JSON from model"):
        for event in events:
            acc.apply(event)


def test_an_event_before_message_start_is_refused():
    with pytest.raises(StreamProtocolError, match='before "message_start"'):
        MessageAccumulator().apply(_block(0, {"type": "text", "text": ""}))
    with pytest.raises(StreamProtocolError, match='before "message_start"'):
        MessageAccumulator().message()


def _sse(events: list[dict], error: dict | None = None) -> bytes:
    out = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    if error is not None:
        out += f"event: error\ndata: {json.dumps(error)}\n\n".encode()
    return out


def _client(body: bytes, seen: list) -> anthropic.Anthropic:
    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, content=body, headers={"content-type": "text/event-stream"})

    return anthropic.Anthropic(api_key="k", base_url="http://api.test", max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))


def test_stream_reply_through_the_real_sdk_client():
    seen: list = []
    events = CASES["text then two tool calls, input in fragments, a null kept"]
    deltas: list[str] = []
    request = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    reply = stream_reply(_client(_sse(events), seen), request, deltas.append)
    assert deltas == ["Reading."]
    blocks = [b.model_dump() for b in reply.message.content]
    assert [b["type"] for b in blocks] == ["text", "tool_use", "tool_use"]
    assert blocks[1]["input"] == {"file_path": "a.py", "limit": None, "n": [1, 2.5, "é"]}
    assert reply.message.stop_reason == "tool_use"
    assert (reply.message.usage.input_tokens, reply.message.usage.output_tokens) == (10, 42)
    assert reply.message.usage.cache_read_input_tokens == 7
    assert json.loads(seen[0].content) == request | {"stream": True}
    assert seen[0].headers["x-stainless-helper-method"] == "stream"


def test_an_error_event_mid_stream_is_the_sdks_status_error():
    events = [_start(), _block(0, {"type": "text", "text": ""}), _delta(0, {"type": "text_delta", "text": "Hal"})]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    request = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(anthropic.APIStatusError, match="Overloaded"):
        stream_reply(_client(_sse(events, error), []), request, lambda _t: None)


def test_stream_reply_hands_every_raw_event_to_on_event_and_no_text_to_on_text():
    """--include-partial-messages: each event as the API sent it, in order (the text deltas among them)."""
    events = CASES["text then two tool calls, input in fragments, a null kept"]
    got: list[dict] = []
    texts: list[str] = []
    request = {"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
    reply = stream_reply(_client(_sse(events), []), request, texts.append, on_event=got.append)
    assert got == events and texts == []
    assert reply.message.stop_reason == "tool_use"
