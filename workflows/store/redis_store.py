"""The Redis store: one adapter, few verbs, every key from :mod:`workflows.store.keys`.

An event's writes (session record, transcript entries, step records, leases) are
recorded on a :class:`workflows.store.fenced.Recorder` passed where a pipeline would be,
and land in one fenced script call (:meth:`Store.commit`). The session lock
(:meth:`Store.lock`) serialises only the human-paced commands. Readers need no lock.
:class:`Store` is made of two pieces: the transcript and live streams
(:mod:`workflows.store.streams`) and the step ledger, queues and bulk reads
(:mod:`workflows.store.steps`).
"""

from __future__ import annotations

import time
import uuid
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import LockError, LockNotOwnedError
from redis.exceptions import TimeoutError as RedisTimeoutError

from workflows.exceptions import (
    AmbiguousSession,
    LockTimeout,
    SessionNotFound,
    StoreUnavailable,
)
from workflows.models import SessionRecord
from workflows.models.commands import CommandDefinition
from workflows.models.valid_text import valid_str
from workflows.store import keys
from workflows.store.client import Pipe, blocking_pool
from workflows.store.durable import Durability
from workflows.store.fenced import Recorder, Reply, Scripts
from workflows.store.registry import LOCK_TOKEN_SEP, Workers
from workflows.store.steps import Steps
from workflows.store.streams import LIVE_MAXLEN, LIVE_TTL_SECONDS, Transcripts, as_text, stream_entries

if TYPE_CHECKING:  # (the feature stores are imported when asked for: they import models this module must not)
    from workflows.store.api_tokens import TokenStore
    from workflows.store.checkpoints import FileCheckpoints
    from workflows.store.memory import ExtractionLock, ProjectMemory
    from workflows.store.schedules import ScheduleStore
    from workflows.store.shells import ShellStore

FORK_CHECKPOINT_TTL = 7 * 24 * 3600  # a fork nobody finishes in a week is gone for good


_RELEASE_IF_OURS = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

#: What callers import from here (the stream piece's constants and :func:`stream_entries` included).
__all__ = ["LIVE_MAXLEN", "LIVE_TTL_SECONDS", "Pipe", "RedisFileTracker", "Store", "stream_entries"]


class Store(Transcripts, Steps):
    """Session records, transcripts, live deltas, the step ledger, locks and leases (the transcripts and the
    ledger from its two pieces, :class:`Transcripts` and :class:`Steps`)."""

    def __init__(self, client: redis.Redis, *, lock_timeout: float = 30.0, lock_wait: float = 10.0,
                 durable_claims: bool = True) -> None:
        super().__init__(client)
        self.lock_timeout = lock_timeout
        self.lock_wait = lock_wait
        #: Set by a worker to its registered name: its session locks then carry the name, so the
        #: reaper can free a lock whose holder died instead of waiting for it to expire.
        self.lock_owner: str | None = None
        self._unreleased: dict[str, bytes] = {}  # lock key -> our token, whose release Redis never got
        self.workers = Workers(client)
        self.scripts = Scripts(client)
        self.durability = Durability(client, enabled=durable_claims)

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
        if not lk.acquire(token=self.owner_token()):
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

    def owner_token(self) -> str | None:
        """A lock token naming this worker (so a reaper can break a lock its dead holder left)."""
        return f"{self.lock_owner}{LOCK_TOKEN_SEP}{uuid.uuid4().hex}" if self.lock_owner else None

    def sweep_lock(self, timeout: float) -> redis.lock.Lock | None:
        """The reapers' sweep lock, taken now (None: another reaper holds it). It expires after ``timeout``
        seconds, and a reaper that finds its holder dead breaks it at once."""
        lk = self.r.lock(keys.reaper_lock(), timeout=timeout, blocking=False)
        return lk if lk.acquire(blocking=False, token=self.owner_token()) else None

    def widen_pool(self, max_connections: int) -> None:
        """Give the client a pool of at least ``max_connections`` (a waiting one: see
        :func:`workflows.store.client.blocking_pool`); connections of the old pool close once idle."""
        old = self.r.connection_pool
        if old.max_connections < max_connections:
            self.r.connection_pool = blocking_pool(old.connection_class, max_connections, **old.connection_kwargs)
            old.disconnect(inuse_connections=False)

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
        return [as_text(x) for x in self.r.zrevrange(keys.sessions(), start, start + limit - 1)]

    def all_session_ids(self) -> list[str]:
        """Every session id, most recently updated first."""
        return [as_text(x) for x in self.r.zrevrange(keys.sessions(), 0, -1)]

    def raw_session_and_step(self, sid: str, step_id: str) -> tuple[bytes | None, bytes | None]:
        """The session's record and one of its steps as stored (JSON, unparsed: a caller that needs one field
        skips parsing), in one round trip; None for what does not exist."""
        p = self.r.pipeline(transaction=False)
        p.get(keys.session(sid))
        p.hget(keys.steps(sid), step_id)
        raw_rec, raw_step = p.execute()
        return raw_rec, raw_step

    def copy_reads_and_commands(self, src: str, dst: str, pipe: Pipe) -> None:
        """Give session ``dst`` (a fork) ``src``'s files read (so it may Edit them without reading them again)
        and its custom commands (until the CLI reads them again), on ``pipe``."""
        read = self.r.hgetall(keys.files_read(src))
        if read:
            pipe.hset(keys.files_read(dst), mapping=read)
        commands = self.r.hgetall(keys.commands(src))
        if commands:
            pipe.hset(keys.commands(dst), mapping=commands)

    def resolve_session(self, prefix: str) -> str:
        """The one session id starting with ``prefix``.

        Raises:
            SessionNotFound: nothing matches.
            AmbiguousSession: several match; the message lists them.
        """
        prefix = prefix.strip()
        if not prefix:
            raise SessionNotFound("No session id given.")
        all_ids = self.all_session_ids()
        if prefix in all_ids:
            return prefix
        matches = [s for s in all_ids if s.startswith(prefix)]
        if not matches:
            raise SessionNotFound(f"No session matches {prefix!r}. List sessions with `mainsail sessions`.")
        if len(matches) > 1:
            shown = ", ".join(matches[:10]) + (" ..." if len(matches) > 10 else "")
            raise AmbiguousSession(f"Session prefix {prefix!r} matches {len(matches)} sessions: {shown}")
        return matches[0]

    # ------------------------------------------------------------------ the fenced scripts (workflows/store/fenced.py)

    def commit(self, sid: str, revision: int, token: str, ops: Recorder,
               fence: tuple[str, str, str] | None = None, record: str = "") -> Reply:
        """Apply ``ops`` atomically, and write ``record`` (the session's new JSON, '' to leave it), if
        session ``sid`` is still at ``revision`` (and the fence step as given). A reply 'ok' carries the
        stream id of the transcript entry the commit wrote ('' for none) as ``extra``."""
        return self.scripts.commit([keys.session(sid), keys.steps(sid), keys.log(sid)], revision, token, ops, fence,
                                   record)

    def claim_step(self, sid: str, step_id: str, owner: str, now: float, lease_until: float, max_attempts: int,
                   worker: str | None) -> Reply:
        """Claim a step in one round trip (see :data:`workflows.store.fenced.CLAIM`); for a step that reads the
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

    def pass_fence(self, sid: str, step_id: str, owner: str, worker: str | None, now: float, margin: float,
                   until: float) -> bool:
        """Whether ``owner``'s running step may start its effect now (its lease then runs to ``until``):
        the fence of a mutating command (``GO`` in workflows/store/fenced.py)."""
        reaping = keys.worker_reaping(worker) if worker else keys.worker_reaping("-")
        return self.scripts.go([keys.session(sid), keys.steps(sid), keys.leases(), reaping], step_id, owner,
                               keys.lease_member(sid, step_id), now, margin, until)

    # ------------------------------------------------------------------ inbox

    def push_inbox(self, sid: str, text: str, pipe: Pipe | None = None) -> None:
        (pipe if pipe is not None else self.r).rpush(keys.inbox(sid), valid_str(text))

    def pop_inbox(self, sid: str) -> str | None:
        v = self.r.lpop(keys.inbox(sid))
        return as_text(v) if v is not None else None

    def inbox(self, sid: str) -> list[str]:
        return [as_text(v) for v in self.r.lrange(keys.inbox(sid), 0, -1)]

    def remove_queued(self, sid: str, text: str) -> None:
        """Take ``text`` (its first copy) out of the inbox; the caller holds the session's lock."""
        self.r.lrem(keys.inbox(sid), 1, valid_str(text))

    def checkpoint_sizes(self, sid: str, uuids: list[str]) -> list[int]:
        """How many files each of these messages' checkpoints holds (a rewind point's edits), in one trip."""
        pipe = self.r.pipeline(transaction=False)
        for message in uuids:
            pipe.hlen(keys.file_checkpoints(sid, message))
        return pipe.execute() if uuids else []

    def session_exists(self, sid: str) -> bool:
        return bool(self.r.exists(keys.session(sid)))

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
        return dict(sorted((as_text(n), CommandDefinition.model_validate_json(v)) for n, v in raw.items()))

    # ------------------------------------------------------------------ session memory

    def session_memory(self, sid: str) -> str | None:
        """The session's memory document (its running summary), if it has one."""
        v = self.r.get(keys.session_memory(sid))
        return as_text(v) if v else None

    def fork_checkpoint(self, sid: str, step_id: str) -> str | None:
        """A memory fork's saved progress (JSON), if it has any."""
        v = self.r.get(keys.fork_checkpoint(sid, step_id))
        return as_text(v) if v else None

    def save_fork_checkpoint(self, sid: str, step_id: str, data: str) -> None:
        self.r.set(keys.fork_checkpoint(sid, step_id), data, ex=FORK_CHECKPOINT_TTL)

    # ------------------------------------------------------------------ caches of tools

    def mcp_tools_json(self, sid: str, digest: str) -> bytes | None:
        """The session's MCP tool list with ``digest`` (JSON, as the engine stored it), None if missing."""
        return self.r.get(keys.session_mcp_tools(sid, digest))

    def web_page(self, name: str) -> bytes | None:
        """A page the web tools cached under ``name`` (see :meth:`keep_web_page`), None if missing or expired."""
        return self.r.get(keys.web_cache(name))

    def keep_web_page(self, name: str, data: str, seconds: int) -> None:
        """Cache a fetched page (JSON) under ``name`` for ``seconds``, for every worker."""
        self.r.set(keys.web_cache(name), data, ex=seconds)

    # ------------------------------------------------------------------ the feature stores (same client)

    def tokens(self) -> TokenStore:
        """The team server's API tokens (:class:`workflows.store.api_tokens.TokenStore`)."""
        from workflows.store.api_tokens import TokenStore

        return TokenStore(self.r)

    def costs(self):
        """Costs by day, token, workspace and model, and budgets (:class:`workflows.store.costs.CostStore`)."""
        from workflows.store.costs import CostStore

        return CostStore(self.r)

    def notify(self):
        """Webhook subscriptions and deliveries (:class:`workflows.store.notify.NotifyStore`)."""
        from workflows.store.notify import NotifyStore

        return NotifyStore(self.r)

    def schedules(self) -> ScheduleStore:
        """Schedules and their runs (:class:`workflows.store.schedules.ScheduleStore`)."""
        from workflows.store.schedules import ScheduleStore

        return ScheduleStore(self.r)

    def shells(self) -> ShellStore:
        """Background shells' records and output (:class:`workflows.store.shells.ShellStore`)."""
        from workflows.store.shells import ShellStore

        return ShellStore(self.r)

    def project_memory(self, pid: str, root: str | None = None) -> ProjectMemory:
        """Project ``pid``'s auto-memory records (:class:`workflows.store.memory.ProjectMemory`)."""
        from workflows.store.memory import ProjectMemory

        return ProjectMemory(self.r, pid, root)

    def workspace_memory(self, workspace: str) -> ProjectMemory:
        """The auto-memory records of the project ``workspace`` belongs to."""
        from workflows.store.memory import ProjectMemory

        return ProjectMemory.for_workspace(self.r, workspace)

    def extraction_lock(self, pid: str, token: str, ttl: float) -> ExtractionLock:
        """Project ``pid``'s extraction lock, held as ``token`` (:class:`workflows.store.memory.ExtractionLock`)."""
        from workflows.store.memory import ExtractionLock

        return ExtractionLock(self.r, pid, token, ttl)

    def file_checkpoints(self, sid: str) -> FileCheckpoints:
        """Session ``sid``'s file checkpoints for /rewind (:class:`workflows.store.checkpoints.FileCheckpoints`)."""
        from workflows.store.checkpoints import FileCheckpoints

        return FileCheckpoints(self.r, sid)

    # ------------------------------------------------------------------ files read (Write/Edit rule)

    def files_tracker(self, sid: str, deferred: bool = False) -> "RedisFileTracker":
        return RedisFileTracker(self.r, sid, deferred)

    # ------------------------------------------------------------------ workers

    # (the verbs live in :class:`workflows.store.registry.Workers`, ``store.workers``)

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
