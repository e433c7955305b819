"""The store side of /rewind's file checkpoints: snapshots per user message, file contents, and heads.

What is kept and why (first write wins per message and path, a blob per content, heads for changes made
by others) is told in :mod:`workflows.edits.checkpoints`, which records and restores through
:class:`FileCheckpoints` (``store.file_checkpoints(sid)``). Every key is under the session's.
"""

from __future__ import annotations

import json
import time

import redis

from workflows.store import keys
from workflows.store.streams import as_text


class FileCheckpoints:
    """Session ``sid``'s file checkpoints in Redis."""

    def __init__(self, r: redis.Redis, sid: str) -> None:
        self.r, self.sid = r, sid

    def has(self, turn: str, path: str) -> bool:
        """Whether message ``turn`` already keeps a snapshot of ``path``."""
        return bool(self.r.hexists(keys.file_checkpoints(self.sid, turn), path))

    def keep(self, turn: str, path: str, snap: dict, data: bytes | None) -> None:
        """Keep ``snap`` (and the file's bytes ``data``, stored once per content) as message ``turn``'s snapshot
        of ``path`` unless it has one already (first write wins), in one MULTI/EXEC."""
        pipe = self.r.pipeline(transaction=True)
        if data is not None:
            pipe.set(keys.file_blob(self.sid, snap["sha"]), data, nx=True)
        pipe.hsetnx(keys.file_checkpoints(self.sid, turn), path, json.dumps(snap))
        pipe.hsetnx(keys.file_turns(self.sid), turn, repr(time.time()))
        pipe.execute()

    def set_head(self, path: str, sha: str) -> None:
        """``path`` now holds the content ``sha`` (the session's latest version of it)."""
        self.r.hset(keys.file_heads(self.sid), path, sha)

    def drop_head(self, path: str) -> None:
        """The session deleted ``path`` (a rewind did): it has no latest version."""
        self.r.hdel(keys.file_heads(self.sid), path)

    def turns(self) -> list[str]:
        """The user messages with checkpoints (any order)."""
        return [as_text(t) for t in self.r.hkeys(keys.file_turns(self.sid))]

    def snapshots(self, turn: str) -> dict[str, dict]:
        """Path -> snapshot of each file message ``turn`` keeps."""
        raw = self.r.hgetall(keys.file_checkpoints(self.sid, turn))
        return {as_text(name): json.loads(snap) for name, snap in raw.items()}

    def heads(self) -> dict[str, str]:
        """Path -> sha256 of the session's latest version of each file it wrote."""
        return {as_text(k): as_text(v) for k, v in self.r.hgetall(keys.file_heads(self.sid)).items()}

    def blob(self, sha: str) -> bytes | None:
        """The kept content ``sha``, None if it is missing."""
        return self.r.get(keys.file_blob(self.sid, sha))
