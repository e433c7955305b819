"""The transcript and live streams of the Redis store: append, read (with a per-process cache), tail.

A transcript (``session:{sid}:log``) is append-only and never trimmed, so a process caches what it read and
asks only for what is new; the live stream (``session:{sid}:live``) holds capped, expiring deltas for
watchers. :class:`Transcripts` is one piece of :class:`workflows.store.redis_store.Store`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Iterable

from workflows.models import entry_json
from workflows.models.valid_text import valid_str
from workflows.store import keys
from workflows.store.entry_read import field_text, read_entry

if TYPE_CHECKING:
    from workflows.store.client import Pipe

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


class Transcripts:
    """Transcripts and live deltas of every session, over the client ``self.r``."""

    def __init__(self, client) -> None:
        self.r = client
        #: sid -> (last stream id read, the entries, the record revision they are exactly the transcript
        #: of, or None when that is not known): see :meth:`cached_entries`.
        self._cache: OrderedDict[str, tuple[str | None, list, int | None]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._cache_sessions = ENTRY_CACHE_SESSIONS
        self._cache_total = 0  # entries cached, all sessions together

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

    def first_log_rows(self, sids: list[str], count: int) -> dict[str, list]:
        """The first ``count`` stream rows (undecoded) of each session's transcript, in one round trip."""
        with self.r.pipeline(transaction=False) as pipe:
            for sid in sids:
                pipe.xrange(keys.log(sid), min="-", max="+", count=count)
            return dict(zip(sids, pipe.execute(), strict=True))

    def last_log_id(self, sid: str) -> str | None:
        """The id of the transcript's newest stream entry (None: empty)."""
        rows = self.r.xrevrange(keys.log(sid), count=1)
        return as_text(rows[0][0]) if rows else None

    def log_rows_back(self, sid: str, count: int) -> list:
        """The transcript's newest ``count`` stream rows, newest first (id, fields)."""
        return self.r.xrevrange(keys.log(sid), count=count)

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
        return as_text(rows[0][0]) if rows else "0-0"

    def tail(self, streams: dict[str, str], block_ms: int) -> list[tuple[str, list[tuple[str, dict]]]]:
        """XREAD BLOCK on several streams from the last ids seen (never ``$``)."""
        rows = self.r.xread(streams, block=block_ms)
        out = []
        for key, items in rows or []:
            out.append((as_text(key), [(as_text(i), _fields(f)) for i, f in items]))
        return out


def as_text(v) -> str:
    """A reply from Redis as text (redis-py hands back bytes unless told to decode)."""
    return v.decode() if isinstance(v, bytes) else v


def stream_entries(fields: dict) -> list:
    """The transcript entries (raw JSON) of one stream entry's fields, in order (see :meth:`Store.append`)."""
    out = []
    for key, value in fields.items():
        name = as_text(key)
        if name == ENTRY_FIELD:
            out.append((1, value))
        elif name.startswith(ENTRY_FIELD + "."):
            out.append((int(name[len(ENTRY_FIELD) + 1:]), value))
    if len(out) > 1:
        out.sort(key=lambda kv: kv[0])
    return [v for _, v in out]


def _fields(f: dict) -> dict[str, str]:
    """A stream entry's fields as text, never raising: a transcript entry's bytes that are not UTF-8 kept as
    surrogate escapes (so it reads as its marker: workflows/store/entry_read.py), any other field's replaced."""
    out = {}
    for k, v in f.items():
        name = as_text(k)
        out[name] = field_text(v) if name.startswith(ENTRY_FIELD) else (
            v.decode(errors="replace") if isinstance(v, bytes) else v)
    return out


def _read_rows(sid: str, rows) -> list[tuple[str, object]]:
    """(stream id, entry) for each transcript entry of XRANGE ``rows``; an entry that cannot be read is its
    marker (workflows/store/entry_read.py), so one bad entry never makes the rest unreadable."""
    out = []
    for i, f in rows:
        row = as_text(i)
        out.extend((row, read_entry(sid, raw, row, n)) for n, raw in enumerate(stream_entries(f)))
    return out


def _pairs(flat) -> dict:
    """A stream entry's fields as a Lua script hands them back (a flat list) or as redis-py parses them."""
    if isinstance(flat, dict):
        return flat
    return dict(zip(flat[0::2], flat[1::2]))
