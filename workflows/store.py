"""The Redis store: one adapter, few verbs, every key from :mod:`workflows.keys`.

An event's writes (session record, transcript entries, step records, leases) are
recorded on a :class:`workflows.fenced.Recorder` passed where a pipeline would be,
and land in one fenced script call (:meth:`Store.commit`). The session lock
(:meth:`Store.lock`) serialises only the human-paced commands. Readers need no lock.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from typing import Iterable, Iterator

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import LockError, LockNotOwnedError
from redis.exceptions import TimeoutError as RedisTimeoutError

from workflows import keys
from workflows.commands.models import CommandDefinition
from workflows.exceptions import (
    AmbiguousSession,
    LockTimeout,
    SessionNotFound,
    StepNotFound,
    StoreUnavailable,
)
from workflows.models import SessionRecord, StepRecord, entry_json, parse_entry
from workflows.fenced import Recorder, Reply, Scripts
from workflows.registry import LOCK_TOKEN_SEP, Workers

LIVE_MAXLEN = 2000
LIVE_TTL_SECONDS = 3600
ENTRY_CACHE_SESSIONS = 64
FORK_CHECKPOINT_TTL = 7 * 24 * 3600  # a fork nobody finishes in a week is gone for good

Pipe = redis.client.Pipeline

_RELEASE_IF_OURS = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class Store:
    """Session records, transcripts, live deltas, the step ledger, locks and leases."""

    def __init__(self, client: redis.Redis, *, lock_timeout: float = 30.0, lock_wait: float = 10.0) -> None:
        self.r = client
        self.lock_timeout = lock_timeout
        self.lock_wait = lock_wait
        self._cache: OrderedDict[str, tuple[str | None, list]] = OrderedDict()
        self._cache_lock = threading.Lock()
        #: Set by a worker to its registered name: its session locks then carry the name, so the
        #: reaper can free a lock whose holder died instead of waiting for it to expire.
        self.lock_owner: str | None = None
        self._unreleased: dict[str, bytes] = {}  # lock key -> our token, whose release Redis never got
        self.workers = Workers(client)
        self.scripts = Scripts(client)

    # ------------------------------------------------------------------ plumbing

    def ping(self) -> None:
        try:
            self.r.ping()
        except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
            raise StoreUnavailable(f"Could not connect to Redis: {exc}") from exc

    def pipeline(self) -> Pipe:
        return self.r.pipeline(transaction=True)

    @contextmanager
    def lock(self, sid: str) -> Iterator[None]:
        """Hold the session's single-writer lock.

        Raises:
            LockTimeout: another writer held it for longer than ``lock_wait``.
        """
        name = keys.lock(sid)
        self._release_unreleased(name)
        lk = self.r.lock(name, timeout=self.lock_timeout, blocking_timeout=self.lock_wait)
        token = f"{self.lock_owner}{LOCK_TOKEN_SEP}{uuid.uuid4().hex}" if self.lock_owner else None
        if not lk.acquire(token=token):
            raise LockTimeout(
                f"Session {sid} is locked by another writer for over {self.lock_wait:g}s; try again."
            )
        try:
            yield
        finally:
            try:
                lk.release()
            except (LockNotOwnedError, LockError):
                # The lock expired under us; the writes were already fenced by the step owner.
                pass
            except (RedisConnectionError, RedisTimeoutError):
                # Redis went away before the release: the lock would outlive us until it expires and
                # block our own retry; it is released (if still ours) before this session is locked next.
                self._unreleased[name] = lk.local.token
                raise

    def _release_unreleased(self, name: str) -> None:
        token = self._unreleased.pop(name, None)
        if token is not None:
            self.r.eval(_RELEASE_IF_OURS, 1, name, token)

    # ------------------------------------------------------------------ sessions

    def create_session(self, rec: SessionRecord) -> None:
        if not self.r.set(keys.session(rec.id), rec.model_dump_json(), nx=True):
            raise ValueError(f"Session {rec.id} already exists")
        self.r.zadd(keys.sessions(), {rec.id: rec.updated_at})

    def get_session(self, sid: str) -> SessionRecord:
        raw = self.r.get(keys.session(sid))
        if raw is None:
            raise SessionNotFound(f"No session {sid!r}. List sessions with `mainsail sessions`.")
        return SessionRecord.model_validate_json(raw)

    def save_session(self, rec: SessionRecord, pipe: Pipe | None = None) -> str:
        """Write the record (stamped now); returns the JSON written."""
        rec.updated_at = time.time()
        p = pipe if pipe is not None else self.r
        data = rec.model_dump_json()
        p.set(keys.session(rec.id), data)
        p.zadd(keys.sessions(), {rec.id: rec.updated_at})
        return data

    def session_ids(self, limit: int = 100) -> list[str]:
        """Session ids, most recently updated first."""
        return [_s(x) for x in self.r.zrevrange(keys.sessions(), 0, limit - 1)]

    def resolve_session(self, prefix: str) -> str:
        """The one session id starting with ``prefix``.

        Raises:
            SessionNotFound: nothing matches.
            AmbiguousSession: several match; the message lists them.
        """
        prefix = prefix.strip()
        if not prefix:
            raise SessionNotFound("No session id given.")
        all_ids = [_s(x) for x in self.r.zrevrange(keys.sessions(), 0, -1)]
        if prefix in all_ids:
            return prefix
        matches = [s for s in all_ids if s.startswith(prefix)]
        if not matches:
            raise SessionNotFound(f"No session matches {prefix!r}. List sessions with `mainsail sessions`.")
        if len(matches) > 1:
            shown = ", ".join(matches[:10]) + (" ..." if len(matches) > 10 else "")
            raise AmbiguousSession(f"Session prefix {prefix!r} matches {len(matches)} sessions: {shown}")
        return matches[0]

    # ------------------------------------------------------------------ transcript

    def append(self, sid: str, entries: Iterable, pipe: Pipe) -> None:
        """Append transcript entries (never trimmed). Call under the lock, in a pipeline."""
        for e in entries:
            pipe.xadd(keys.log(sid), {"entry": entry_json(e)})

    def read_log(self, sid: str, after: str | None = None, count: int | None = None) -> list[tuple[str, object]]:
        """Transcript entries after stream id ``after`` (exclusive), oldest first."""
        start = f"({after}" if after else "-"
        rows = self.r.xrange(keys.log(sid), min=start, max="+", count=count)
        return [(_s(i), parse_entry(f[b"entry"] if b"entry" in f else f["entry"])) for i, f in rows]

    def entries(self, sid: str) -> list:
        return [e for _, e in self.read_log(sid)]

    def cached_entries(self, sid: str) -> list:
        """All transcript entries, reading only what is new since this process last asked.

        Entries are append-only and never rewritten, so a per-process cache keyed
        by the last stream id is always right; it turns the model step's
        transcript read from O(session) into O(new entries).
        """
        with self._cache_lock:
            last_id, cached = self._cache.get(sid, (None, []))
        rows = self.read_log(sid, after=last_id)
        entries = cached + [e for _, e in rows]
        with self._cache_lock:
            self._cache[sid] = (rows[-1][0] if rows else last_id, entries)
            self._cache.move_to_end(sid)
            while len(self._cache) > ENTRY_CACHE_SESSIONS:
                self._cache.popitem(last=False)
        return list(entries)

    def log_length(self, sid: str) -> int:
        return int(self.r.xlen(keys.log(sid)))

    # ------------------------------------------------------------------ live deltas

    def publish(self, sid: str, data: dict) -> None:
        """Publish an ephemeral delta for watchers (capped, expiring)."""
        p = self.r.pipeline(transaction=False)
        p.xadd(keys.live(sid), {k: str(v) for k, v in data.items()}, maxlen=LIVE_MAXLEN, approximate=True)
        p.expire(keys.live(sid), LIVE_TTL_SECONDS)
        p.execute()

    def last_live_id(self, sid: str) -> str:
        rows = self.r.xrevrange(keys.live(sid), count=1)
        return _s(rows[0][0]) if rows else "0-0"

    def tail(self, streams: dict[str, str], block_ms: int) -> list[tuple[str, list[tuple[str, dict]]]]:
        """XREAD BLOCK on several streams from the last ids seen (never ``$``)."""
        rows = self.r.xread(streams, block=block_ms)
        out = []
        for key, items in rows or []:
            out.append((_s(key), [(_s(i), {_s(k): _s(v) for k, v in f.items()}) for i, f in items]))
        return out

    # ------------------------------------------------------------------ the fenced scripts (workflows/fenced.py)

    def commit(self, sid: str, revision: int, token: str, ops: Recorder,
               fence: tuple[str, str, str] | None = None) -> Reply:
        """Apply ``ops`` atomically if session ``sid`` is still at ``revision`` (and the fence step as given)."""
        return self.scripts.commit([keys.session(sid), keys.steps(sid)], revision, token, ops, fence)

    def claim_step(self, sid: str, step_id: str, owner: str, now: float, lease_until: float, max_attempts: int,
                   worker: str | None) -> Reply:
        """Claim a step in one round trip (see :data:`workflows.fenced.CLAIM`)."""
        member = keys.lease_member(sid, step_id)
        held = keys.worker_steps(worker) if worker else keys.worker_steps("-")
        return self.scripts.claim([keys.session(sid), keys.steps(sid), keys.leases(), held], step_id, owner, now,
                                  lease_until, max_attempts, member, bool(worker))

    def renew_lease(self, sid: str, step_id: str, owner: str, lease_until: float | None) -> str | None:
        """The step's kind while it is ``owner``'s running step (of the current epoch, unless it runs in
        the background), its lease extended unless ``lease_until`` is None; None when it is not. One
        round trip."""
        return self.scripts.heartbeat([keys.session(sid), keys.steps(sid), keys.leases()], step_id, owner,
                                      lease_until, keys.lease_member(sid, step_id))

    # ------------------------------------------------------------------ steps and leases

    def get_step(self, sid: str, step_id: str) -> StepRecord:
        raw = self.r.hget(keys.steps(sid), step_id)
        if raw is None:
            raise StepNotFound(f"Session {sid} has no step {step_id}")
        return StepRecord.model_validate_json(raw)

    def load_step(self, sid: str, step_id: str) -> tuple[SessionRecord, StepRecord, float | None]:
        """The session, one of its steps and that step's deadline, in one round trip."""
        p = self.r.pipeline(transaction=False)
        p.get(keys.session(sid))
        p.hget(keys.steps(sid), step_id)
        p.zscore(keys.leases(), keys.lease_member(sid, step_id))
        raw_rec, raw_step, deadline = p.execute()
        if raw_rec is None:
            raise SessionNotFound(f"No session {sid!r}. List sessions with `mainsail sessions`.")
        if raw_step is None:
            raise StepNotFound(f"Session {sid} has no step {step_id}")
        return SessionRecord.model_validate_json(raw_rec), StepRecord.model_validate_json(raw_step), deadline

    def steps(self, sid: str) -> list[StepRecord]:
        return [StepRecord.model_validate_json(v) for v in self.r.hvals(keys.steps(sid))]

    def put_step(self, step: StepRecord, pipe: Pipe | None = None) -> None:
        step.updated_at = time.time()
        p = pipe if pipe is not None else self.r
        p.hset(keys.steps(step.session_id), step.id, step.model_dump_json())

    def set_deadline(self, step: StepRecord, deadline: float, pipe: Pipe | None = None, *, only_existing=False) -> None:
        """Set when the reaper should look at ``step`` again (lease expiry or pickup deadline)."""
        p = pipe if pipe is not None else self.r
        p.zadd(keys.leases(), {keys.lease_member(step.session_id, step.id): deadline}, xx=only_existing)

    def clear_deadline(self, step: StepRecord, pipe: Pipe | None = None) -> None:
        p = pipe if pipe is not None else self.r
        p.zrem(keys.leases(), keys.lease_member(step.session_id, step.id))

    def deadline(self, step: StepRecord) -> float | None:
        return self.r.zscore(keys.leases(), keys.lease_member(step.session_id, step.id))

    def due(self, now: float, limit: int = 200) -> list[tuple[str, str]]:
        """Steps whose lease or pickup deadline has passed."""
        rows = self.r.zrangebyscore(keys.leases(), "-inf", now, start=0, num=limit)
        return [keys.parse_lease_member(_s(m)) for m in rows]

    def due_approvals(self, now: float, limit: int = 200) -> list[tuple[str, str]]:
        """Permission requests whose approval timeout has passed."""
        rows = self.r.zrangebyscore(keys.approvals(), "-inf", now, start=0, num=limit)
        return [keys.parse_lease_member(_s(m)) for m in rows]

    def awaiting_sessions(self) -> list[str]:
        """Sessions waiting for a permission decision, longest waiting first."""
        return [_s(x) for x in self.r.zrange(keys.awaiting(), 0, -1)]

    # ------------------------------------------------------------------ inbox

    def push_inbox(self, sid: str, text: str, pipe: Pipe | None = None) -> None:
        (pipe if pipe is not None else self.r).rpush(keys.inbox(sid), text)

    def pop_inbox(self, sid: str) -> str | None:
        v = self.r.lpop(keys.inbox(sid))
        return _s(v) if v is not None else None

    def inbox(self, sid: str) -> list[str]:
        return [_s(v) for v in self.r.lrange(keys.inbox(sid), 0, -1)]

    # ------------------------------------------------------------------ custom slash commands

    def put_commands(self, sid: str, commands: dict[str, CommandDefinition]) -> None:
        """Replace the session's custom commands (one MULTI/EXEC: a reader sees the old set or the new)."""
        p = self.r.pipeline(transaction=True)
        p.delete(keys.commands(sid))
        if commands:
            p.hset(keys.commands(sid), mapping={n: d.model_dump_json() for n, d in commands.items()})
        p.execute()

    def command(self, sid: str, name: str) -> CommandDefinition | None:
        """One custom command of the session, by name (None: it has none of that name)."""
        raw = self.r.hget(keys.commands(sid), name)
        return CommandDefinition.model_validate_json(raw) if raw else None

    def commands(self, sid: str) -> dict[str, CommandDefinition]:
        """The session's custom commands, by name."""
        raw = self.r.hgetall(keys.commands(sid))
        return dict(sorted((_s(n), CommandDefinition.model_validate_json(v)) for n, v in raw.items()))

    # ------------------------------------------------------------------ session memory

    def session_memory(self, sid: str) -> str | None:
        """The session's memory document (its running summary), if it has one."""
        v = self.r.get(keys.session_memory(sid))
        return _s(v) if v else None

    def fork_checkpoint(self, sid: str, step_id: str) -> str | None:
        """A memory fork's saved progress (JSON), if it has any."""
        v = self.r.get(keys.fork_checkpoint(sid, step_id))
        return _s(v) if v else None

    def save_fork_checkpoint(self, sid: str, step_id: str, data: str) -> None:
        self.r.set(keys.fork_checkpoint(sid, step_id), data, ex=FORK_CHECKPOINT_TTL)

    # ------------------------------------------------------------------ files read (Write/Edit rule)

    def files_tracker(self, sid: str) -> "RedisFileTracker":
        return RedisFileTracker(self.r, sid)

    # ------------------------------------------------------------------ housekeeping (rm, gc)

    def sessions_updated_before(self, cutoff: float) -> list[str]:
        """Session ids whose last update is older than ``cutoff`` (epoch seconds), oldest first."""
        return [_s(x) for x in self.r.zrangebyscore(keys.sessions(), "-inf", f"({cutoff}")]

    def get_sessions(self, sids: list[str]) -> list[SessionRecord]:
        """The records of ``sids`` that exist, in one round trip (missing ones are left out)."""
        if not sids:
            return []
        raws = self.r.mget([keys.session(s) for s in sids])
        return [SessionRecord.model_validate_json(raw) for raw in raws if raw is not None]

    def inbox_lengths(self, sids: list[str]) -> dict[str, int]:
        """How many messages wait in each session's inbox, in one round trip."""
        p = self.r.pipeline(transaction=False)
        for sid in sids:
            p.llen(keys.inbox(sid))
        return dict(zip(sids, (int(n) for n in p.execute())))

    def session_keys(self, sid: str) -> list[str]:
        """Every key that exists for session ``sid``: its record and each ``session:{sid}:*`` key."""
        found = [_s(k) for k in self.r.scan_iter(match=keys.session_subkeys(sid), count=500)]
        if self.r.exists(keys.session(sid)):
            found.insert(0, keys.session(sid))
        return found

    def session_members(self, sid: str) -> list[tuple[str, str]]:
        """``(set key, member)`` for each entry of session ``sid`` in the shared sorted sets."""
        out = [(k, sid) for k in (keys.sessions(), keys.awaiting()) if self.r.zscore(k, sid) is not None]
        for k in (keys.leases(), keys.approvals()):
            out += [(k, _s(m)) for m, _ in self.r.zscan_iter(k, match=keys.member_pattern(sid), count=500)]
        return out

    def key_sizes(self, names: list[str]) -> dict[str, int]:
        """Bytes each key takes (``MEMORY USAGE``; where that is refused, its serialized size)."""
        p = self.r.pipeline(transaction=False)
        for name in names:
            p.memory_usage(name)
        sizes = p.execute(raise_on_error=False)
        out = {}
        for name, size in zip(names, sizes):
            if isinstance(size, Exception):
                dumped = self.r.dump(name)
                size = len(dumped) if dumped else 0
            out[name] = int(size or 0)
        return out

    def delete_keys(self, names: list[str], members: list[tuple[str, str]], pipe: Pipe | None = None) -> None:
        """Delete keys and sorted-set members (in one MULTI/EXEC unless ``pipe`` is given)."""
        p = pipe if pipe is not None else self.pipeline()
        if names:
            p.delete(*names)
        for key, member in members:
            p.zrem(key, member)
        if pipe is None:
            p.execute()

    def delete_steps(self, sid: str, step_ids: list[str]) -> None:
        """Forget finished steps of a session (and any deadline they still had)."""
        if not step_ids:
            return
        p = self.pipeline()
        p.hdel(keys.steps(sid), *step_ids)
        p.zrem(keys.leases(), *(keys.lease_member(sid, s) for s in step_ids))
        p.execute()

    def step_sizes(self, sid: str, step_ids: list[str]) -> int:
        """Bytes of the JSON of those step records."""
        if not step_ids:
            return 0
        return sum(len(v) for v in self.r.hmget(keys.steps(sid), step_ids) if v)

    # ------------------------------------------------------------------ workers

    # (the verbs live in :class:`workflows.registry.Workers`, ``store.workers``)

    def register_worker(self, name: str, queues: list[str], ttl: float, info: dict | None = None) -> None:
        self.workers.register(name, queues, ttl, info)

    def unregister_worker(self, name: str) -> None:
        self.workers.unregister(name)

    def live_queues(self) -> set[str]:
        """Queues served by at least one worker whose registration has not expired."""
        return self.workers.live_queues()


class RedisFileTracker:
    """Which files a session has read, shared by every worker."""

    def __init__(self, r: redis.Redis, sid: str) -> None:
        self.r = r
        self.key = keys.files_read(sid)

    def get(self, path: str) -> float | None:
        v = self.r.hget(self.key, path)
        return float(v) if v is not None else None

    def set(self, path: str, mtime: float) -> None:
        self.r.hset(self.key, path, repr(mtime))


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v
