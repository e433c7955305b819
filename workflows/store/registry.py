"""The worker registry: who is alive, what each serves, and which steps each holds.

A worker refreshes its registration every ``worker_heartbeat_seconds``, once its
Celery consumer runs:

- ``mainsail:workers``: a sorted set of names, scored by when the registration
  expires by the worker's own clock (for listings such as ``mainsail doctor``);
- ``mainsail:worker:{name}``: a hash (queues, pid, host, whether it holds an API
  key and for which base URL, never the key) that Redis expires after
  ``worker_ttl_seconds``. Redis's clock decides, so clock skew between hosts
  cannot make a live worker look dead.

A name still in the set whose hash is gone is a **dead** worker: it stopped
without unregistering (SIGKILL, OOM, lost host). Each worker also keeps
``mainsail:worker:{name}:steps``: every step it took from a queue (value ``""``)
and, once claimed, the owner token of the claim. When a worker dies the reaper
takes back exactly those steps, fenced by the token, instead of waiting for
their leases or pickup deadlines.

A field is a *slot*: a step taken from a queue is held under its own ``sid/step``; the steps a
task then runs one after another (each claimed by the commit of the one before it) take over that
field in turn, as ``"sid/step token"``, so each hand-over is one HSET that overwrites the finished
step's hold instead of an HSET and an HDEL. :meth:`Workers.held` reads both forms.
"""

from __future__ import annotations

import re
import time

import redis

from workflows.store import keys

#: Delete a worker's record of a step only if it still says what the caller wrote (a duplicate delivery
#: of a step this worker is running must not erase the running one's record).
_FORGET = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""

#: Delete a session lock only if its token starts with a (dead) worker's prefix.
_BREAK_LOCK = """
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, string.len(ARGV[1])) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

LOCK_TOKEN_SEP = "|"
#: What a worker's named connection is called: this, then its registry name (CLIENT SETNAME).
TETHER_PREFIX = "mainsail-worker:"
_CLIENT_NAME = re.compile(rb"(?:^| )name=(" + re.escape(TETHER_PREFIX.encode()) + rb"\S+)")
#: Verdicts kept in ``workers:events`` (the oldest are trimmed).
EVENTS_KEPT = 1000
#: Between the step and the owner token of a hold kept under another step's field (a slot).
HOLD_SEP = " "


def hold_value(field: str, member: str, token: str) -> str:
    """What a worker's held-steps hash stores under ``field`` for step ``member`` claimed as ``token``."""
    return token if field == member else f"{member}{HOLD_SEP}{token}"


class Workers:
    """Registration, liveness and held steps of workers (see the module docstring)."""

    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    # ------------------------------------------------------------------ registration

    def register(self, name: str, queues: list[str], ttl: float, info: dict | None = None) -> None:
        """Say that ``name`` serves ``queues`` for the next ``ttl`` seconds (call again before then)."""
        # One MULTI/EXEC, the hash written afresh: a registration about to expire must not expire between
        # the write and the new expiry (which would leave a live worker without a registration).
        p = self.r.pipeline(transaction=True)
        p.zadd(keys.workers(), {name: time.time() + ttl})
        p.delete(keys.worker(name))
        p.hset(keys.worker(name), mapping={"queues": ",".join(queues), **(info or {})})
        p.pexpire(keys.worker(name), max(1, int(ttl * 1000)))
        if (info or {}).get("tether"):
            p.hset(keys.worker_tethers(), name, info["tether"])
        else:
            p.hdel(keys.worker_tethers(), name)
        p.execute()

    def unregister(self, name: str) -> None:
        """Forget ``name`` entirely (a clean stop, once it holds no step)."""
        p = self.r.pipeline(transaction=False)
        p.zrem(keys.workers(), name)
        p.hdel(keys.worker_tethers(), name)
        p.delete(keys.worker(name), keys.worker_steps(name), keys.worker_reaping(name))
        p.execute()

    def retire(self, name: str) -> None:
        """Mark ``name`` dead now: its registration goes, its held steps stay for :meth:`held`."""
        self.r.delete(keys.worker(name))

    def live(self) -> dict[str, dict[str, str]]:
        """Name -> registration fields, for every worker whose registration has not expired."""
        names = [_s(n) for n in self.r.zrangebyscore(keys.workers(), time.time(), "+inf")]
        if not names:
            return {}
        p = self.r.pipeline(transaction=False)
        for n in names:
            p.hgetall(keys.worker(n))
        out = {}
        for n, fields in zip(names, p.execute()):
            if fields:
                out[n] = {_s(k): _s(v) for k, v in fields.items()}
        return out

    def alive(self, name: str) -> bool:
        """Whether worker ``name``'s registration is live."""
        return bool(self.r.exists(keys.worker(name)))

    def count_live(self, now: float | None = None) -> int:
        """How many workers' registrations have not expired (at ``now``, default the present)."""
        return int(self.r.zcount(keys.workers(), time.time() if now is None else now, "+inf"))

    def live_queues(self) -> set[str]:
        """Queues served by at least one worker whose registration has not expired."""
        queues: set[str] = set()
        for info in self.live().values():
            queues.update(q for q in info.get("queues", "").split(",") if q)
        return queues

    def tethers(self) -> dict[str, str]:
        """Name -> the client name of its connection, for every registered worker whose last registration
        named one (live or lapsed)."""
        return {_s(n): _s(t) for n, t in self.r.hgetall(keys.worker_tethers()).items()}

    def connected(self) -> set[str]:
        """The names of the workers' connections Redis lists now (``CLIENT LIST``; a server that refuses it
        raises ``ResponseError``)."""
        raw = self.r.execute_command("CLIENT", "LIST")
        raw = raw.encode() if isinstance(raw, str) else raw
        return {m.decode() for m in _CLIENT_NAME.findall(raw)}

    def watch_turn(self, reaper: str, seconds: float) -> bool:
        """Whether ``reaper`` lists the connections this tick (one reaper per ``seconds``)."""
        return bool(self.r.set(keys.reaper_watch(), reaper, nx=True, px=max(1, int(seconds * 1000))))

    def hold_tether(self, name: str, seconds: float) -> None:
        """On worker ``name``'s named connection: connect (naming it), then wait on it for up to ``seconds``
        (a blocked read notices at once a connection that breaks)."""
        self.r.ping()
        self.r.blpop([keys.worker_tether(name)], timeout=seconds)

    def close(self) -> None:
        """Close this registry's client (a tether's own, as it stops)."""
        self.r.close()

    def wake_tether(self, name: str) -> None:
        """Wake worker ``name``'s connection from its wait (it is stopping)."""
        p = self.r.pipeline(transaction=True)
        p.lpush(keys.worker_tether(name), "stop")
        p.pexpire(keys.worker_tether(name), 5000)
        p.execute()

    def record(self, name: str, event: str, **fields: str) -> None:
        """Record a reaper's verdict on worker ``name`` (``dead``, ``stalled``) in ``workers:events``."""
        self.r.xadd(keys.worker_events(), {"worker": name, "event": event, "at": f"{time.time():.3f}", **fields},
                    maxlen=EVENTS_KEPT, approximate=True)

    def events(self, after: str = "-") -> list[tuple[str, dict[str, str]]]:
        """The recorded verdicts after stream id ``after`` (exclusive; ``-``: all), oldest first."""
        start = "-" if after == "-" else f"({after}"
        return [(_s(i), {_s(k): _s(v) for k, v in f.items()}) for i, f in self.r.xrange(keys.worker_events(), start)]

    def dead(self) -> list[str]:
        """Workers that stopped without unregistering: still listed, registration expired."""
        names = [_s(n) for n in self.r.zrange(keys.workers(), 0, -1)]
        if not names:
            return []
        p = self.r.pipeline(transaction=False)
        for n in names:
            p.exists(keys.worker(n))
        return [n for n, alive in zip(names, p.execute()) if not alive]

    # ------------------------------------------------------------------ held steps

    def note_taken(self, name: str, sid: str, step_id: str) -> None:
        """``name`` took this step's message from a queue (not claimed yet)."""
        self.r.hsetnx(keys.worker_steps(name), keys.lease_member(sid, step_id), "")

    def forget(self, name: str, sid: str, step_id: str, value: str, slot: str | None = None) -> None:
        """The step is off ``name``'s hands (finished, or someone else's): drop it if still held with
        owner token ``value``, under its own field or under ``slot`` (see the module docstring)."""
        field = slot or keys.lease_member(sid, step_id)
        self.forget_hold(name, field, hold_value(field, keys.lease_member(sid, step_id), value))

    def forget_hold(self, name: str, field: str, value: str) -> None:
        """Drop field ``field`` of ``name``'s held steps if it still holds exactly ``value``."""
        # EVAL, not EVALSHA: the in-process fakeredis server drops the connection on a NOSCRIPT reply.
        self.r.eval(_FORGET, 1, keys.worker_steps(name), field, value)

    def held(self, name: str) -> dict[str, str]:
        """``sid/step`` -> owner token of the claim (``""``: taken from the queue, not claimed)."""
        return {member: token for _, member, token in self.holds(name)}

    def holds(self, name: str) -> list[tuple[str, str, str]]:
        """``name``'s held steps as stored: (field, ``sid/step``, owner token)."""
        out = []
        for k, v in self.r.hgetall(keys.worker_steps(name)).items():
            field, value = _s(k), _s(v)
            member, sep, token = value.partition(HOLD_SEP)
            out.append((field, member, token) if sep else (field, field, value))
        return out

    def start_reaping(self, name: str, reaper: str, seconds: float) -> bool:
        """Be the one reaper taking back dead ``name``'s steps for the next ``seconds``."""
        return bool(self.r.set(keys.worker_reaping(name), reaper, nx=True, px=max(1, int(seconds * 1000))))

    def drop(self, name: str) -> None:
        """A dead worker's steps are all taken back: forget it."""
        self.unregister(name)

    def break_lock(self, sid: str, owner: str) -> bool:
        """Free session ``sid``'s lock if dead worker ``owner`` holds it (its token carries the owner)."""
        return bool(self.r.eval(_BREAK_LOCK, 1, keys.lock(sid), owner + LOCK_TOKEN_SEP))

    def break_sweep_lock(self, owner: str) -> bool:
        """Free the reapers' sweep lock if dead worker ``owner`` holds it."""
        return bool(self.r.eval(_BREAK_LOCK, 1, keys.reaper_lock(), owner + LOCK_TOKEN_SEP))


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v
