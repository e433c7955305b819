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
from workflows.fenced import Recorder, Reply, Scripts
from workflows.entry_read import field_text, read_entry
from workflows.models import SessionRecord, StepRecord, entry_json
from workflows.registry import LOCK_TOKEN_SEP, Workers
from workflows.valid_text import valid_str

LIVE_MAXLEN = 2000
LIVE_TTL_SECONDS = 3600
#: Sessions whose transcript a process keeps (least recently used dropped first), at least; a worker
#: raises it to twice the steps it runs at once (:meth:`Store.keep_transcripts`).
ENTRY_CACHE_SESSIONS = 64
#: ... and at most this many entries in all, whatever the number of sessions.
ENTRY_CACHE_ENTRIES = 200_000
#: The stream fields of a transcript stream entry: ``entry``, then ``entry.2``, ``entry.3``... (a
#: commit's entries, in order, in one XADD).
ENTRY_FIELD = "entry"
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
        #: sid -> (last stream id read, the entries, the record revision they are exactly the transcript
        #: of, or None when that is not known): see :meth:`cached_entries`.
        self._cache: OrderedDict[str, tuple[str | None, list, int | None]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._cache_sessions = ENTRY_CACHE_SESSIONS
        self._cache_total = 0  # entries cached, all sessions together
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
        """Write the record (stamped now) and list it; returns the JSON written. (A commit writes the
        record through the commit script instead, see :meth:`commit`.)"""
        rec.updated_at = rec.listed_at = time.time()
        p = pipe if pipe is not None else self.r
        data = rec.model_dump_json()
        p.set(keys.session(rec.id), data)
        p.zadd(keys.sessions(), {rec.id: rec.updated_at})
        return data

    def session_ids(self, limit: int = 100, start: int = 0) -> list[str]:
        """Session ids, most recently updated first (``limit`` of them from the ``start``-th)."""
        return [_s(x) for x in self.r.zrevrange(keys.sessions(), start, start + limit - 1)]

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

    def append(self, sid: str, entries: Iterable, pipe: Pipe, *, together: bool = False) -> list[str]:
        """Append transcript entries (never trimmed); returns their JSON. Call in a pipeline or a
        commit's recorder.

        ``together`` (a commit's entries): one stream entry (one XADD) per run of entries that ends
        with a result entry or with the last one, so an id after a run's result is still where the
        next run starts; otherwise one stream entry each (an import, a fork's copy).
        """
        out: list[str] = []
        fields: dict[str, str] = {}
        for e in entries:
            data = entry_json(e)
            out.append(data)
            fields[ENTRY_FIELD if not fields else f"{ENTRY_FIELD}.{len(fields) + 1}"] = data
            if not together or e.type == "result":
                pipe.xadd(keys.log(sid), fields)
                fields = {}
        if fields:
            pipe.xadd(keys.log(sid), fields)
        return out

    def read_log(self, sid: str, after: str | None = None, count: int | None = None) -> list[tuple[str, object]]:
        """Transcript entries after stream id ``after`` (exclusive), oldest first. The entries one commit
        wrote together share a stream id; ``count`` counts stream entries."""
        return _read_rows(sid, self.log_rows(sid, after, count))

    def log_rows(self, sid: str, after: str | None = None, count: int | None = None) -> list:
        """The transcript's stream rows (id, fields) after ``after`` (exclusive), oldest first, undecoded."""
        return self.r.xrange(keys.log(sid), min=f"({after}" if after else "-", max="+", count=count)

    def entries(self, sid: str) -> list:
        return [e for _, e in self.read_log(sid)]

    def keep_transcripts(self, sessions: int) -> None:
        """Keep the transcripts of at least ``sessions`` sessions in this process's cache."""
        self._cache_sessions = max(ENTRY_CACHE_SESSIONS, sessions)

    def cached_entries(self, sid: str, revision: int | None = None) -> list:
        """All transcript entries, reading only what is new since this process last asked.

        Entries are append-only and never rewritten, so a per-process cache keyed
        by the last stream id is always right; it turns the model step's
        transcript read from O(session) into O(new entries). With ``revision`` (of the
        record the caller holds), a cache known to be exactly the transcript at that revision
        is returned without asking Redis: a claim (:meth:`note_rows`) and a commit
        (:meth:`note_commit`) of this process keep it so.
        """
        with self._cache_lock:
            last_id, cached, rev = self._cache.get(sid, (None, [], None))
            if revision is not None and rev == revision:
                self._cache.move_to_end(sid)
                return list(cached)
        rows = self.read_log(sid, after=last_id)
        entries = cached + [e for _, e in rows]
        self._put(sid, rows[-1][0] if rows else last_id, entries, None if rows else rev, last_id)
        return list(entries)

    def _put(self, sid: str, last_id: str | None, entries: list, rev: int | None, was: str | None) -> None:
        """Cache ``entries`` for ``sid``, unless another thread moved its cache on from ``was`` meanwhile."""
        with self._cache_lock:
            now = self._cache.get(sid)
            if now is not None and now[0] != was:
                return
            self._put_locked(sid, last_id, entries, rev)

    def _put_locked(self, sid: str, last_id: str | None, entries: list, rev: int | None) -> None:
        old = self._cache.pop(sid, None)
        self._cache_total += len(entries) - (len(old[1]) if old else 0)
        self._cache[sid] = (last_id, entries, rev)
        while len(self._cache) > 1 and (len(self._cache) > self._cache_sessions
                                        or self._cache_total > ENTRY_CACHE_ENTRIES):
            self._cache_total -= len(self._cache.popitem(last=False)[1][1])

    def transcript_mark(self, sid: str) -> str | None:
        """The last transcript id this process holds for ``sid`` (what a claim asks to read after)."""
        with self._cache_lock:
            hit = self._cache.get(sid)
        return hit[0] if hit else None

    def note_rows(self, sid: str, after: str | None, rows, revision: int) -> None:
        """A claim read the record at ``revision`` and, in the same script, the transcript rows after
        ``after`` (XRANGE's raw reply): the cache is then exactly the transcript at ``revision``."""
        new = _read_rows(sid, ((i, _pairs(f)) for i, f in rows))
        with self._cache_lock:
            hit = self._cache.get(sid)
            if (hit[0] if hit else None) != after:
                return  # another thread read meanwhile: these rows may not follow its cache
            self._put_locked(sid, new[-1][0] if new else after, (hit[1] if hit else []) + [e for _, e in new],
                             revision)

    def note_commit(self, sid: str, read: int, stream_id: str, written: list[str]) -> None:
        """A commit made on revision ``read`` landed, appending ``written`` (entries' JSON) as stream entry
        ``stream_id``: a cache exact at ``read`` is exact at ``read + 1`` with them."""
        with self._cache_lock:
            hit = self._cache.get(sid)
            if hit is None or hit[2] != read or (written and not stream_id):
                return
        added = [read_entry(sid, data, stream_id, n) for n, data in enumerate(written)]  # as any reader, unlocked
        with self._cache_lock:
            now = self._cache.get(sid)
            if now is None or now[2] != read or now[0] != hit[0]:
                return
            self._put_locked(sid, stream_id if written else now[0], now[1] + added, read + 1)

    def log_length(self, sid: str) -> int:
        """Stream entries of the transcript (the entries of one commit share one)."""
        return int(self.r.xlen(keys.log(sid)))

    # ------------------------------------------------------------------ live deltas

    def publish(self, sid: str, data: dict, *, expire: bool = True) -> None:
        """Publish an ephemeral delta for watchers (capped, expiring ``LIVE_TTL_SECONDS`` after the last
        publish that sets ``expire``: a call's first delta is enough, the rest come within the hour)."""
        fields = {k: valid_str(str(v)) for k, v in data.items()}
        if not expire:
            self.r.xadd(keys.live(sid), fields, maxlen=LIVE_MAXLEN, approximate=True)
            return
        p = self.r.pipeline(transaction=False)
        p.xadd(keys.live(sid), fields, maxlen=LIVE_MAXLEN, approximate=True)
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
            out.append((_s(key), [(_s(i), _fields(f)) for i, f in items]))
        return out

    # ------------------------------------------------------------------ the fenced scripts (workflows/fenced.py)

    def commit(self, sid: str, revision: int, token: str, ops: Recorder,
               fence: tuple[str, str, str] | None = None, record: str = "") -> Reply:
        """Apply ``ops`` atomically, and write ``record`` (the session's new JSON, '' to leave it), if
        session ``sid`` is still at ``revision`` (and the fence step as given). A reply 'ok' carries the
        stream id of the transcript entry the commit wrote ('' for none) as ``extra``."""
        return self.scripts.commit([keys.session(sid), keys.steps(sid), keys.log(sid)], revision, token, ops, fence,
                                   record)

    def claim_step(self, sid: str, step_id: str, owner: str, now: float, lease_until: float, max_attempts: int,
                   worker: str | None) -> Reply:
        """Claim a step in one round trip (see :data:`workflows.fenced.CLAIM`); for a step that reads the
        transcript, the reply's ``extra`` holds the rows after this process's last read of it, the same
        snapshot as the record (handed to :meth:`note_rows` by the engine)."""
        member = keys.lease_member(sid, step_id)
        held = keys.worker_steps(worker) if worker else keys.worker_steps("-")
        mark = self.transcript_mark(sid)
        reply = self.scripts.claim([keys.session(sid), keys.steps(sid), keys.leases(), held, keys.log(sid)], step_id,
                                   owner, now, lease_until, max_attempts, member, bool(worker), worker or "", mark)
        return reply._replace(mark=mark)

    def renew_leases(self, items: list[tuple[str, str, str, float | None]]) -> list[str | None]:
        """For each (sid, step id, owner, lease until or None), the step's kind while it is ``owner``'s
        running step (of the current epoch, unless it runs in the background), its lease extended unless
        ``until`` is None; None when it is not. One round trip for all."""
        return self.scripts.heartbeat(keys.leases(), [
            (keys.session(sid), keys.steps(sid), step_id, owner, until, keys.lease_member(sid, step_id))
            for sid, step_id, owner, until in items])

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
        (pipe if pipe is not None else self.r).rpush(keys.inbox(sid), valid_str(text))

    def pop_inbox(self, sid: str) -> str | None:
        v = self.r.lpop(keys.inbox(sid))
        return _s(v) if v is not None else None

    def inbox(self, sid: str) -> list[str]:
        return [_s(v) for v in self.r.lrange(keys.inbox(sid), 0, -1)]

    def remove_queued(self, sid: str, text: str) -> None:
        """Take ``text`` (its first copy) out of the inbox; the caller holds the session's lock."""
        self.r.lrem(keys.inbox(sid), 1, valid_str(text))

    def checkpoint_sizes(self, sid: str, uuids: list[str]) -> list[int]:
        """How many files each of these messages' checkpoints holds (a rewind point's edits), in one trip."""
        pipe = self.r.pipeline(transaction=False)
        for uuid in uuids:
            pipe.hlen(keys.file_checkpoints(sid, uuid))
        return pipe.execute() if uuids else []

    def session_exists(self, sid: str) -> bool:
        return bool(self.r.exists(keys.session(sid)))

    def last_log_id(self, sid: str) -> str | None:
        """The id of the transcript's newest stream entry (None: empty)."""
        rows = self.r.xrevrange(keys.log(sid), count=1)
        return _s(rows[0][0]) if rows else None

    def log_rows_back(self, sid: str, count: int) -> list:
        """The transcript's newest ``count`` stream rows, newest first (id, fields)."""
        return self.r.xrevrange(keys.log(sid), count=count)

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

    def files_tracker(self, sid: str, deferred: bool = False) -> "RedisFileTracker":
        return RedisFileTracker(self.r, sid, deferred)

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
    """Which files a session has read, shared by every worker.

    ``deferred``: what a tool run notes is kept here and written by :meth:`write` into the commit that
    records the tool's result (no round trip of its own; and a file counts as read only once the model
    can see what was read: a result that never lands leaves no record, so an Edit asks for a read)."""

    def __init__(self, r: redis.Redis, sid: str, deferred: bool = False) -> None:
        self.r = r
        self.key = keys.files_read(sid)
        self.pending: dict[str, str] | None = {} if deferred else None

    def get(self, path: str) -> float | None:
        v = self.pending.get(path) if self.pending else None
        if v is None:
            v = self.r.hget(self.key, path)
        return float(v) if v is not None else None

    def set(self, path: str, mtime: float) -> None:
        if self.pending is not None:
            self.pending[path] = repr(mtime)
        else:
            self.r.hset(self.key, path, repr(mtime))

    def write(self, ops) -> None:
        """Add what was noted to ``ops`` (a commit's recorder) as one HSET."""
        if self.pending:
            ops.hset(self.key, mapping=self.pending)


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def stream_entries(fields: dict) -> list:
    """The transcript entries (raw JSON) of one stream entry's fields, in order (see :meth:`Store.append`)."""
    out = []
    for key, value in fields.items():
        name = _s(key)
        if name == ENTRY_FIELD:
            out.append((1, value))
        elif name.startswith(ENTRY_FIELD + "."):
            out.append((int(name[len(ENTRY_FIELD) + 1:]), value))
    if len(out) > 1:
        out.sort(key=lambda kv: kv[0])
    return [v for _, v in out]


def _fields(f: dict) -> dict[str, str]:
    """A stream entry's fields as text, never raising: a transcript entry's bytes that are not UTF-8 kept as
    surrogate escapes (so it reads as its marker: workflows/entry_read.py), any other field's replaced."""
    out = {}
    for k, v in f.items():
        name = _s(k)
        out[name] = field_text(v) if name.startswith(ENTRY_FIELD) else (
            v.decode(errors="replace") if isinstance(v, bytes) else v)
    return out


def _read_rows(sid: str, rows) -> list[tuple[str, object]]:
    """(stream id, entry) for each transcript entry of XRANGE ``rows``; an entry that cannot be read is its
    marker (workflows/entry_read.py), so one bad entry never makes the rest unreadable."""
    out = []
    for i, f in rows:
        row = _s(i)
        out.extend((row, read_entry(sid, raw, row, n)) for n, raw in enumerate(stream_entries(f)))
    return out


def _pairs(flat) -> dict:
    """A stream entry's fields as a Lua script hands them back (a flat list) or as redis-py parses them."""
    if isinstance(flat, dict):
        return flat
    return dict(zip(flat[0::2], flat[1::2]))
