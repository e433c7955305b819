"""The store's step ledger and queues: step records, leases and deadlines, the broker's queues, and the
bulk reads and deletes of the reaper, the retention gc, ``mainsail rm`` and the figures.

Most verbs here look across sessions (every lease, every queue, every key of a session) rather than at
one session's record; :class:`Steps` is one piece of :class:`workflows.store.redis_store.Store`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from workflows.exceptions import SessionNotFound, StepNotFound
from workflows.models import SessionRecord, StepRecord
from workflows.store import keys
from workflows.store.streams import as_text

if TYPE_CHECKING:
    from workflows.store.client import Pipe

#: Move a step's message (found among the newest ARGV[2]+1 of the queue) to the end consumed next.
_TO_FRONT = """
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[2]))
for _, item in ipairs(items) do
  if string.find(item, ARGV[1], 1, true) then
    redis.call('LREM', KEYS[1], 1, item)
    redis.call('RPUSH', KEYS[1], item)
    return 1
  end
end
return 0
"""


class Steps:
    """Step records, deadlines, queues and bulk reads and deletes, over the client ``self.r`` (see the module
    docstring)."""

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
        return [keys.parse_lease_member(as_text(m)) for m in rows]

    def due_approvals(self, now: float, limit: int = 200) -> list[tuple[str, str]]:
        """Permission requests whose approval timeout has passed."""
        rows = self.r.zrangebyscore(keys.approvals(), "-inf", now, start=0, num=limit)
        return [keys.parse_lease_member(as_text(m)) for m in rows]

    def awaiting_sessions(self) -> list[str]:
        """Sessions waiting for a permission decision, longest waiting first."""
        return [as_text(x) for x in self.r.zrange(keys.awaiting(), 0, -1)]

    # ------------------------------------------------------------------ housekeeping (rm, gc)

    def sessions_updated_before(self, cutoff: float) -> list[str]:
        """Session ids whose last update is older than ``cutoff`` (epoch seconds), oldest first."""
        return [as_text(x) for x in self.r.zrangebyscore(keys.sessions(), "-inf", f"({cutoff}")]

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
        found = [as_text(k) for k in self.r.scan_iter(match=keys.session_subkeys(sid), count=500)]
        if self.r.exists(keys.session(sid)):
            found.insert(0, keys.session(sid))
        return found

    def session_members(self, sid: str) -> list[tuple[str, str]]:
        """``(set key, member)`` for each entry of session ``sid`` in the shared sorted sets."""
        out = [(k, sid) for k in (keys.sessions(), keys.awaiting()) if self.r.zscore(k, sid) is not None]
        for k in (keys.leases(), keys.approvals()):
            out += [(k, as_text(m)) for m, _ in self.r.zscan_iter(k, match=keys.member_pattern(sid), count=500)]
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

    # ------------------------------------------------------------------ the reaper's reads

    def lapsed_leases(self, now: float) -> list[str]:
        """Every ``sid/step`` whose lease or pickup deadline is ``now`` or earlier."""
        return [as_text(m) for m in self.r.zrangebyscore(keys.leases(), "-inf", now)]

    def lease_members(self) -> list[tuple[str, str]]:
        """(sid, step id) of every step with a deadline (running or waiting for a worker)."""
        return [keys.parse_lease_member(as_text(m)) for m in self.r.zrange(keys.leases(), 0, -1)]

    def steps_at(self, members: list[tuple[str, str]], batch: int = 500) -> list[StepRecord | None]:
        """The step record of each (sid, step id), None where there is none; a round trip per ``batch``."""
        out: list[StepRecord | None] = []
        for i in range(0, len(members), batch):
            p = self.r.pipeline(transaction=False)
            for sid, step_id in members[i:i + batch]:
                p.hget(keys.steps(sid), step_id)
            out += [StepRecord.model_validate_json(raw) if raw is not None else None for raw in p.execute()]
        return out

    def extend_deadlines(self, steps: list[StepRecord], deadline: float) -> None:
        """Move the deadline of each of ``steps`` that still has one to ``deadline``, in one round trip."""
        p = self.r.pipeline(transaction=False)
        for step in steps:
            p.zadd(keys.leases(), {keys.lease_member(step.session_id, step.id): deadline}, xx=True)
        p.execute()

    def forget_lease(self, sid: str, step_id: str) -> None:
        """Drop the deadline of a step that no longer exists (its session or record is gone)."""
        self.r.zrem(keys.leases(), keys.lease_member(sid, step_id))

    def forget_approval_deadline(self, sid: str, request_id: str) -> None:
        """Drop the approval timeout of a permission request that is closed or gone."""
        self.r.zrem(keys.approvals(), keys.lease_member(sid, request_id))

    def swap_run_id(self, run_id: str) -> str | None:
        """Record ``run_id`` as the Redis server's run seen last; the one recorded before (None: none yet)."""
        previous = self.r.getset(keys.redis_run_id(), run_id)
        return as_text(previous) if previous is not None else None

    def server_info(self, section: str) -> dict:
        """The Redis server's ``INFO section`` (``server``, ``persistence``, ``memory``...), as redis-py parses it.

        Raises:
            ResponseError: the server refuses INFO (an ACL, or the in-process fakeredis for some sections).
        """
        return self.r.info(section)

    def claim_retention(self, owner: str, seconds: float) -> bool:
        """Be the one to run the retention gc for the next ``seconds`` (True for at most one caller)."""
        return bool(self.r.set(keys.retention_lock(), owner, nx=True, ex=int(seconds)))

    # ------------------------------------------------------------------ the broker's queues (Celery's lists)

    def queue_contents(self, names: list[str]) -> list[list[bytes]]:
        """The raw messages waiting in each queue list ``names`` (Celery's keys), in one round trip."""
        p = self.r.pipeline(transaction=False)
        for name in names:
            p.lrange(name, 0, -1)
        return p.execute()

    def queue_lengths(self, names: list[str]) -> list[int]:
        """How many messages wait in each queue list ``names`` (Celery's keys), in one round trip."""
        p = self.r.pipeline(transaction=False)
        for name in names:
            p.llen(name)
        return [int(n) for n in p.execute()]

    def push_message(self, name: str, payload: str) -> None:
        """Put a task message on queue list ``name`` where kombu's Redis transport puts one (consumed last):
        a command's send without Celery (tasks/message.py)."""
        self.r.lpush(name, payload)

    def move_to_front(self, name: str, task_id: str, search: int) -> bool:
        """Move the message of task ``task_id`` (among the newest ``search`` + 1 of queue list ``name``) to the
        end consumed next; False when it is not there (a worker took it meanwhile)."""
        return bool(self.r.eval(_TO_FRONT, 1, name, task_id, search))

    def tallies(self) -> dict[str, float]:
        """Every counter the engine tallied (``field`` -> value; see :mod:`workflows.store.metrics`)."""
        from workflows.store.metrics import read

        return read(self.r)
