"""--include-partial-messages: the model step publishes every raw event of its reply when the session asks
(``SessionRecord.stream_events``), the follower reads them, and they become Claude Code's ``stream_event``
lines; without the flag the step publishes what it always did (fakeredis, the scripted model in process)."""

from __future__ import annotations

import json

from cli.feed import Feed
from cli.headless.partial import StreamEvents
from demo.scripted import DEMO_PROMPT
from tests.inline import Inline
from workflows.models.options import SessionOptions
from workflows.store import keys


def live(engine, sid: str) -> list[dict]:
    return [{k.decode(): v.decode() for k, v in f.items()} for _, f in engine.store.r.xrange(keys.live(sid))]


def first_reply(engine, ws, **options) -> str:
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions",
                                                        **options))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, DEMO_PROMPT))
    inline.run(1)  # the first model call
    return rec.id


def test_a_session_that_asks_gets_every_event_of_its_replies_on_the_live_stream(engine, ws):
    sid = first_reply(engine, ws, stream_events=True)
    rows = live(engine, sid)
    events = [json.loads(r["event"]) for r in rows]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "message_delta" in kinds
    assert "content_block_start" in kinds and "content_block_stop" in kinds
    assert any(e.get("delta", {}).get("type") == "input_json_delta" for e in events), "the tool_use reply's input"
    texts = [r for r in rows if r["type"] == "text"]  # a text delta stays a text entry, for the text watchers
    assert texts and all(json.loads(r["event"])["delta"]["text"] == r["text"] for r in texts)
    assert int(rows[0]["ttft_ms"]) >= 0 and all("ttft_ms" not in r for r in rows[1:])


def test_without_the_flag_only_text_is_published(engine, ws):
    sid = first_reply(engine, ws)
    rows = live(engine, sid)
    assert rows and all(r["type"] == "text" and "event" not in r for r in rows)
    assert not engine.store.get_session(sid).stream_events


def test_a_resume_sets_the_flag_as_given(engine, ws):
    from workflows.sessions.service import SessionService

    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo"))
    service = SessionService(engine)
    assert service.resume(rec.id, SessionOptions(stream_events=True), ws).rec.stream_events
    assert not service.resume(rec.id, SessionOptions(), ws).rec.stream_events


def test_a_follower_reads_the_events_only_when_it_asks(engine, ws):
    sid = first_reply(engine, ws, stream_events=True)
    everything = Feed(engine.store, sid, after="0-0", events=True)
    everything.last_live = "0-0"
    got = everything.read(1)
    assert {d["type"] for d in got.deltas} == {"text", "event"}
    text_only = Feed(engine.store, sid, after="0-0", deltas=True)
    text_only.last_live = "0-0"
    assert {d["type"] for d in text_only.read(1).deltas} == {"text"}


def test_stream_event_lines_are_claude_codes():
    events = StreamEvents()
    start = {"type": "message_start", "message": {"id": "msg_1", "content": []}}
    first = events.line("s1", {"event": json.dumps(start), "ttft_ms": "21"})
    assert list(first) == ["type", "event", "session_id", "parent_tool_use_id", "uuid", "ttft_ms",
                           "thinking_display", "api_message_id"]
    assert first["event"] == start and first["ttft_ms"] == 21 and first["api_message_id"] == "msg_1"
    stop = events.line("s1", {"event": '{"type":"message_stop"}'})
    assert list(stop) == ["type", "event", "session_id", "parent_tool_use_id", "uuid", "api_message_id"]
    assert stop["api_message_id"] == "msg_1" and stop["uuid"] != first["uuid"] and stop["parent_tool_use_id"] is None
