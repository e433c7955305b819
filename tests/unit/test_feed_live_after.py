"""A follower that begins after the turn it follows was submitted still gets the reply's first live events
(``message_start`` under --include-partial-messages): its caller takes the live stream's id before the submit
and hands it to the Feed (cli/headless/stream.py), since a warm worker may stream before the follower starts."""

from __future__ import annotations

import json

from cli.feed import Feed
from workflows.store.redis_store import Store


def test_live_after_keeps_the_events_streamed_before_the_feed_began(fake_redis):
    store = Store(fake_redis)
    sid = "s"
    store.publish(sid, {"type": "event", "step": "st0", "attempt": 1, "event": json.dumps({"type": "message_stop"})})
    mark = store.last_live_id(sid)  # taken before the submit: an older reply's events are not news
    store.publish(sid, {"type": "event", "step": "st1", "attempt": 1, "event": json.dumps({"type": "message_start"})})
    late = Feed(store, sid, events=True)
    assert late.read(1).deltas == [], "a follower's 'now' is after the first event"
    caught = Feed(store, sid, events=True, live_after=mark)
    assert [json.loads(f["event"])["type"] for f in caught.read(1).deltas] == ["message_start"]
