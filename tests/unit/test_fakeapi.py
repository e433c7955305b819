"""The fake Messages API over real HTTP, with the real anthropic SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import anthropic
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `pytest` (not `python -m pytest`) from elsewhere
    sys.path.insert(0, str(ROOT))

from demo.scripted import Script  # noqa: E402
from tests.fakeapi import FakeMessagesServer  # noqa: E402

USER = [{"role": "user", "content": "hi"}]


def _script(*turns: dict) -> Script:
    return Script.model_validate({"turns": list(turns)})


def _client(server: FakeMessagesServer, **kw) -> anthropic.Anthropic:
    kw.setdefault("max_retries", 0)
    return anthropic.Anthropic(api_key="test-key", base_url=server.url, **kw)


def _stream(client, messages=USER):
    with client.messages.stream(model="claude-test", max_tokens=50, messages=messages) as stream:
        events = [(e.type, time.monotonic()) for e in stream]
        return events, stream.get_final_message()


def _http(method: str, url: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


@pytest.fixture
def server():
    with FakeMessagesServer(
        _script(
            {"text": "Let me read it.", "tool_uses": [{"name": "Read", "input": {"file_path": "a.py"}}]},
            {"text": "All done here."},
        )
    ) as srv:
        yield srv


def test_streams_text_and_tool_use(server):
    client = _client(server)
    events, message = _stream(client)
    assert message.content[0].text == "Let me read it."
    assert (message.content[1].name, message.content[1].input) == ("Read", {"file_path": "a.py"})
    assert message.stop_reason == "tool_use"
    assert sum(1 for kind, _ in events if kind == "content_block_delta") > 2

    history = USER + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": message.content[1].id, "content": "x"}]},
    ]
    _, final = _stream(client, history)
    assert final.content[0].text == "All done here."
    assert final.stop_reason == "end_turn"
    assert len(server.requests) == 2
    headers = server.request_headers[0]["headers"]
    assert "test-key" in (headers.get("x-api-key", "") + headers.get("authorization", ""))


def test_each_request_s_arrival_is_recorded_in_order(server):
    client = _client(server)
    before = time.time()
    _stream(client)
    _stream(client)
    after = time.time()
    arrivals = _http("GET", server.url + "/_arrivals")
    assert [a["path"] for a in arrivals] == ["/v1/messages", "/v1/messages"]
    assert before <= arrivals[0]["at"] <= arrivals[1]["at"] <= after
    assert arrivals == server.arrivals and server.request_headers[1]["at"] == arrivals[1]["at"]


def test_stream_is_read_incrementally(server):
    server.set_script(_script({"text": "one two three four", "stream_delay_seconds": 0.05}))
    events, message = _stream(_client(server))
    assert message.content[0].text == "one two three four"
    stamps = dict((kind, t) for kind, t in reversed(events))  # first occurrence of each
    # events arrive as sent, not all at once at the end
    assert stamps["message_stop"] - stamps["message_start"] >= 0.3


def test_rate_limit_with_retry_after_is_retried(server):
    server.set_script(_script({"text": "after retry", "errors": [{"status": 429, "retry_after": 0.05}]}))
    t0 = time.monotonic()
    _, message = _stream(_client(server, max_retries=2))
    assert message.content[0].text == "after retry"
    assert len(server.requests) == 2
    assert time.monotonic() - t0 < 2


def test_error_surfaces_with_anthropic_shape(server):
    server.set_script(_script({"text": "x", "errors": [{"status": 529, "retry_after": 3}]}))
    with pytest.raises(anthropic.APIStatusError) as info:
        _stream(_client(server))
    assert info.value.status_code == 529
    assert info.value.response.headers["retry-after"] == "3"
    assert info.value.body == {"type": "error", "error": {"type": "overloaded_error", "message": info.value.body["error"]["message"]}}


def test_control_endpoints(server):
    _stream(_client(server))
    bodies = _http("GET", server.url + "/_requests")
    assert len(bodies) == 1
    assert bodies[0]["messages"] == USER and bodies[0]["model"] == "claude-test"

    assert _http("POST", server.url + "/_script", {"turns": [{"text": "swapped"}]}) == {"ok": True}
    assert _stream(_client(server))[1].content[0].text == "swapped"

    assert _http("POST", server.url + "/_reset", {}) == {"ok": True}
    assert _http("GET", server.url + "/_requests") == []
    assert server.requests == []


def test_runs_as_a_module(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"text": "from subprocess"}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakeapi", "--port", "0", "--script", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        line = proc.stdout.readline().strip()
        assert line.startswith("LISTENING http://127.0.0.1:")
        url = line.split()[1]
        client = anthropic.Anthropic(api_key="k", base_url=url, max_retries=0)
        assert client.messages.create(model="m", max_tokens=5, messages=USER).content[0].text == "from subprocess"
    finally:
        proc.terminate()
        assert proc.wait(timeout=5) == 0


def test_keep_requests_bounds_what_a_benchmark_api_holds(tmp_path):
    """A benchmark's fake API keeps only its last request (``--keep-requests 1``): 1,000 kept bodies of a
    long conversation were garbage its collector walked, on the cores being measured."""
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"text": "one"}, {"text": "two"}]}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakeapi", "--port", "0", "--script", str(path), "--keep-requests", "1"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        url = proc.stdout.readline().split()[1]
        client = anthropic.Anthropic(api_key="k", base_url=url, max_retries=0)
        for text in ("first", "second"):
            client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": text}])
        with urllib.request.urlopen(url + "/_requests") as r:
            kept = json.load(r)
        assert [b["messages"][0]["content"] for b in kept] == ["second"]
    finally:
        proc.terminate()
        assert proc.wait(timeout=5) == 0
