"""Webhook subscriptions and the record of each delivery, in Redis.

Keys (all built by :mod:`workflows.store.keys`): ``mainsail:notify:subscriptions`` (hash: id -> the
subscription's JSON, its secret included: Redis is the trust boundary) and
``mainsail:notify:delivered:{event}:{subscription}`` (``sending`` while a POST is out, with a short expiry;
``done`` after a 2xx, kept a week): an event is delivered once per subscription however often its task runs.
"""

from __future__ import annotations

from pydantic import ValidationError

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


def _read(raw) -> Subscription | None:
    try:
        return Subscription.model_validate_json(raw)
    except ValidationError:  # (written by another version: skipped, never fatal to the others)
        return None


__all__ = ["NotifyStore"]
