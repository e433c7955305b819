"""Webhook subscriptions and the record of each delivery, in Redis.

Keys (all built by :mod:`workflows.store.keys`): ``mainsail:notify:subscriptions`` (hash: id -> the
subscription's JSON, its secret included: Redis is the trust boundary) and
``mainsail:notify:delivered:{event}:{subscription}`` (``sending`` while a POST is out, with a short expiry;
``done`` after a 2xx, kept a week): an event is delivered once per subscription however often its task runs.

The outbox (workflows/notify/outbox.py): ``mainsail:notify:outbox`` (hash: event id -> the event's JSON, written
by the commit that made the event, in its atomic write: :func:`stage`), ``mainsail:notify:outbox:due`` (zset:
event id -> unix ms when the sweep may take it; a dispatcher's claim moves it on by its lease) and
``mainsail:notify:queued:{event}`` (hash: the subscriptions whose delivery task was sent).
"""

from __future__ import annotations

import time

from pydantic import ValidationError

from workflows.notify.events import events_of
from workflows.notify.subscriptions import Subscription
from workflows.store import keys

#: A delivery's hold while its POST is out: longer than the POST's timeout.
SENDING_SECONDS = 60
#: How long a delivered event is remembered (longer than any retry of its task).
DONE_SECONDS = 7 * 24 * 3600

#: Claim a delivery (KEYS[1]): "done" if it was delivered, "busy" if another POST of it is out, else "ok"
#: and it is ours for ARGV[1] seconds.
_CLAIM = """
local v = redis.call('GET', KEYS[1])
if v == 'done' then return 'done' end
if v then return 'busy' end
redis.call('SET', KEYS[1], 'sending', 'EX', tonumber(ARGV[1]))
return 'ok'
"""


#: Take an outbox event (KEYS: outbox, due, subscriptions; ARGV: id, take it if due at most then, hold it until):
#: its JSON, or nil when it is gone, not due, or nobody subscribes to anything (then it is dropped at once).
_TAKE = """
local due = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not due or tonumber(due) > tonumber(ARGV[2]) then return false end
if redis.call('HLEN', KEYS[3]) == 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return false
end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
return redis.call('HGET', KEYS[1], ARGV[1])
"""


def stage(rec, entries: list, public_url: str, ops, grace: float) -> list[tuple[str, int]]:
    """Record, on a commit's ``ops`` (workflows/commit/committer.py), the notification events its ``entries`` make
    for session ``rec``: they land with the commit that made them, or not at all. Each is due for the sweep
    ``grace`` seconds from now (its own process sends it at once). Returns (event id, due in unix ms) of each."""
    events = events_of(rec, entries, public_url) if entries else []
    due = int((time.time() + grace) * 1000)
    for event in events:
        ops.hset(keys.notify_outbox(), event.id, event.model_dump_json())
        ops.zadd(keys.notify_outbox_due(), {event.id: due})
    return [(event.id, due) for event in events]


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


class NotifyStore:
    """Subscriptions, and the claim that delivers an event once per subscription (``r``: a redis-py client)."""

    def __init__(self, r) -> None:
        self.r = r

    def add(self, sub: Subscription) -> Subscription:
        self.r.hset(keys.notify_subscriptions(), sub.id, sub.model_dump_json())
        return sub

    def get(self, sub_id: str) -> Subscription | None:
        raw = self.r.hget(keys.notify_subscriptions(), sub_id)
        return _read(raw) if raw is not None else None

    def all(self) -> list[Subscription]:
        """Every subscription that can be read, oldest first."""
        subs = [_read(v) for v in self.r.hgetall(keys.notify_subscriptions()).values()]
        return sorted((s for s in subs if s is not None), key=lambda s: s.created_at)

    def remove(self, sub_id: str) -> bool:
        return bool(self.r.hdel(keys.notify_subscriptions(), sub_id))

    def claim(self, event_id: str, sub_id: str) -> str:
        """``ok``: deliver it now (held for a minute); ``done``: it was delivered; ``busy``: a POST of it is out."""
        return _s(self.r.eval(_CLAIM, 1, keys.notify_delivered(event_id, sub_id), SENDING_SECONDS))

    def delivered(self, event_id: str, sub_id: str) -> None:
        self.r.set(keys.notify_delivered(event_id, sub_id), "done", ex=DONE_SECONDS)

    def release(self, event_id: str, sub_id: str) -> None:
        """A POST failed: the next attempt may claim it at once."""
        self.r.delete(keys.notify_delivered(event_id, sub_id))

    # -- the outbox

    def take(self, event_id: str, upto_ms: int, until_ms: int) -> str | None:
        """The JSON of outbox event ``event_id`` if it is due at ``upto_ms`` (unix ms), now held by the caller
        until ``until_ms``; None when it is gone, not due, held by another, or nobody subscribes (then dropped)."""
        raw = self.r.eval(_TAKE, 3, keys.notify_outbox(), keys.notify_outbox_due(), keys.notify_subscriptions(),
                          event_id, upto_ms, until_ms)
        return _s(raw) if raw is not None else None

    def due(self, now_ms: int, limit: int) -> list[str]:
        """Up to ``limit`` outbox events the sweep may take at ``now_ms``, the oldest first."""
        return [_s(m) for m in self.r.zrangebyscore(keys.notify_outbox_due(), "-inf", now_ms, start=0, num=limit)]

    def queued(self, event_id: str) -> set[str]:
        """The subscriptions the delivery task of ``event_id`` was sent for already."""
        return {_s(k) for k in self.r.hkeys(keys.notify_queued(event_id))}

    def mark_queued(self, event_id: str, sub_id: str) -> None:
        key = keys.notify_queued(event_id)
        pipe = self.r.pipeline(transaction=True)
        pipe.hset(key, sub_id, 1)
        pipe.expire(key, DONE_SECONDS)
        pipe.execute()

    def sent(self, event_id: str) -> None:
        """Every delivery of ``event_id`` was sent: it leaves the outbox."""
        pipe = self.r.pipeline(transaction=True)
        pipe.hdel(keys.notify_outbox(), event_id)
        pipe.zrem(keys.notify_outbox_due(), event_id)
        pipe.delete(keys.notify_queued(event_id))
        pipe.execute()

    def outbox(self) -> dict[str, float]:
        """Every event in the outbox and when it is due (unix ms)."""
        return {_s(m): score for m, score in self.r.zrange(keys.notify_outbox_due(), 0, -1, withscores=True)}


def _read(raw) -> Subscription | None:
    try:
        return Subscription.model_validate_json(raw)
    except ValidationError:  # (written by another version: skipped, never fatal to the others)
        return None


__all__ = ["NotifyStore", "stage"]
