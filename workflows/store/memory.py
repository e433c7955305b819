"""The store side of auto-memory: a project's records in Redis, and the lock that lets one extraction run
per project at a time (what they hold and how they read: :mod:`workflows.memory.records`).

Callers get them from the store: ``store.project_memory(pid, root)``, ``store.workspace_memory(path)``,
``store.extraction_lock(pid, token, ttl)``.
"""

from __future__ import annotations

import redis

from workflows.exceptions import MemoryRecordError
from workflows.memory.records import MEMORY_TYPES, MemoryRecord, index_markdown, project_id, project_root
from workflows.store import keys


class ProjectMemory:
    """The auto-memory records of one project, in Redis (shared by every worker)."""

    def __init__(self, r: redis.Redis, pid: str, root: str | None = None) -> None:
        self.r = r
        self.pid = pid
        self.root = root
        self.key = keys.project_memory(pid)

    @classmethod
    def for_workspace(cls, r: redis.Redis, workspace: str) -> "ProjectMemory":
        root = project_root(workspace)
        return cls(r, project_id(root), root)

    def records(self) -> list[MemoryRecord]:
        raw = self.r.hgetall(self.key)
        out = [MemoryRecord.model_validate_json(v) for v in raw.values()]
        return sorted(out, key=lambda x: (MEMORY_TYPES.index(x.type), x.name))

    def get(self, name: str) -> MemoryRecord | None:
        raw = self.r.hget(self.key, name)
        return MemoryRecord.model_validate_json(raw) if raw else None

    def require(self, name: str) -> MemoryRecord:
        rec = self.get(name)
        if rec is None:
            names = ", ".join(r.name for r in self.records()) or "none yet"
            raise MemoryRecordError(f"No memory named {name!r} in project {self.root or self.pid} (records: {names}).")
        return rec

    def put(self, record: MemoryRecord, pipe=None) -> None:
        p = pipe if pipe is not None else self.r.pipeline(transaction=True)
        p.hset(self.key, record.name, record.model_dump_json())
        if self.root:
            p.hset(keys.projects(), self.pid, self.root)
        if pipe is None:
            p.execute()

    def delete(self, name: str, pipe=None) -> bool:
        if pipe is not None:
            pipe.hdel(self.key, name)
            return True
        return bool(self.r.hdel(self.key, name))

    def index(self, max_lines: int | None = None) -> str:
        text = index_markdown(self.records())
        if max_lines is not None:
            lines = text.splitlines()
            if len(lines) > max_lines:
                text = "\n".join(lines[:max_lines]) + (
                    f"\n\n[MEMORY.md has {len(lines)} lines; only the first {max_lines} are shown. "
                    "Read a record by name with MemoryRead.]\n")
        return text


class ExtractionLock:
    """At most one extraction per project at a time, across its sessions and every worker.

    A redis-py ``Lock`` whose token is the extraction step (``sid/step``), so a later
    attempt of the same step (after its worker died) holds it again; it expires when
    no heartbeat extends it.
    """

    def __init__(self, r: redis.Redis, pid: str, token: str, ttl: float) -> None:
        self.r = r
        self.token = token
        self.ttl = ttl
        self.lock = r.lock(keys.project_extract_lock(pid), timeout=ttl, thread_local=False,
                           raise_on_release_error=False)

    def acquire(self) -> bool:
        if self.lock.acquire(blocking=False, token=self.token):
            return True
        if self.holder() == self.token:  # a later attempt of the same step
            self.lock.local.token = self.token.encode()
            self.extend()
            return True
        return False

    def holder(self) -> str | None:
        v = self.r.get(self.lock.name)
        return v.decode() if isinstance(v, bytes) else v

    def extend(self) -> bool:
        """Renew the TTL if this step still holds the lock."""
        self.lock.local.token = self.token.encode()
        try:
            return bool(self.lock.extend(self.ttl, replace_ttl=True))
        except redis.exceptions.LockError:
            return False

    def release(self) -> None:
        self.lock.local.token = self.token.encode()
        try:
            self.lock.release()
        except redis.exceptions.LockError:
            pass  # expired meanwhile: nothing to release
