"""One Redis reader per followed stream, shared by every watcher of it (the live follow's fan-out).

With an ``XREAD BLOCK`` per watcher, 200 people watching one session held 200 Redis connections, and
past the client's pool (100 connections) the rest waited seconds for one (bench/server_load.py: p95
10.6 s from commit to watcher). Here each stream key followed by anyone in this process has one
reader task; it pushes each new row to the :class:`Feed` of every watcher, and a watcher's own Redis
calls are only the short ``XRANGE`` that catches it up when it joins (and when its session is idle).

Nothing is missed and nothing repeated: a reader starts from the stream's newest row, and a feed
joins it *before* it reads its catch-up (and only once the reader has fixed its start), so every
row is in the catch-up or pushed live, and a feed drops any row at or before the last one it handed
out. A watcher that falls more than :data:`MAX_QUEUED` rows behind is dropped (its stream ends;
the client reconnects with ``Last-Event-ID`` and catches up from Redis): one slow client cannot make
the server buffer without bound.
"""

from __future__ import annotations

import asyncio
import contextlib

from workflows.store.live import LiveStreams
from workflows.store.resilience import RedisConnectionError, RedisTimeoutError

REDIS_AWAY = (RedisConnectionError, RedisTimeoutError, OSError)
BLOCK_MS = 15_000
#: Rows a watcher may have waiting before it is dropped.
MAX_QUEUED = 10_000


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else v


def _order(row: str) -> tuple[int, int]:
    ms, _, seq = row.partition("-")
    return int(ms), int(seq or 0)


class Overflow(Exception):
    """A watcher fell too far behind and was dropped."""


class Feed:
    """One watcher's rows from the streams it follows, in order per stream, each once."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub
        self.queue: asyncio.Queue = asyncio.Queue()
        self.last: dict[str, tuple[int, int]] = {}  # key -> the newest row handed out (or queued)
        self._joining: dict[str, list] = {}  # key -> rows pushed live while its catch-up is read
        self.overflowed = False

    async def add(self, key: str, after: str | None) -> None:
        """Follow ``key``: rows after ``after`` (None: only rows from now on)."""
        self._joining[key] = []
        await self.hub.join(key, self)
        try:
            if after is not None:
                self.last[key] = _order(after)
                for row, fields in await self._read(key, after):
                    self._put(key, row, fields)
            else:
                self.last.setdefault(key, (0, 0))
        finally:
            for row, fields in self._joining.pop(key, []):
                self._put(key, row, fields)

    def drop(self, key: str) -> None:
        self.hub.leave(key, self)
        self.last.pop(key, None)

    async def catch_up(self, key: str) -> None:
        """Queue whatever ``key`` holds after the last row handed out (read from Redis now)."""
        ms, seq = self.last.get(key, (0, 0))
        for row, fields in await self._read(key, f"{ms}-{seq}"):
            self._put(key, row, fields)

    def push(self, key: str, items) -> None:
        """Called by the key's reader with new rows."""
        if key in self._joining:
            self._joining[key].extend(items)
            return
        for row, fields in items:
            self._put(key, row, fields)

    def _put(self, key: str, row, fields) -> None:
        row = _s(row)
        at = _order(row)
        if key in self.last and at <= self.last[key]:
            return
        self.last[key] = at
        if self.queue.qsize() >= MAX_QUEUED:
            self.overflowed = True
        self.queue.put_nowait((key, row, fields))

    async def get(self, timeout: float) -> list[tuple[str, str, dict]]:
        """The rows waiting (at least one, unless ``timeout`` seconds pass first; 0: no wait)."""
        if self.overflowed:
            raise Overflow
        out = []
        if self.queue.empty() and timeout > 0:
            with contextlib.suppress(asyncio.TimeoutError):
                out.append(await asyncio.wait_for(self.queue.get(), timeout))
        while not self.queue.empty():
            out.append(self.queue.get_nowait())
        return out

    async def _read(self, key: str, after: str) -> list:
        backoff = 0.1
        while True:
            try:
                return await self.hub.streams.rows_after(key, after)
            except REDIS_AWAY:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    def close(self) -> None:
        for key in list(self.last) + list(self._joining):
            self.hub.leave(key, self)


class _Reader:
    def __init__(self, hub: Hub, key: str) -> None:
        self.hub, self.key = hub, key
        self.feeds: set[Feed] = set()
        self.ready = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        streams, key, backoff = self.hub.streams, self.key, 0.1
        last = None
        try:
            while self.feeds:
                try:
                    if last is None:
                        last = await streams.newest_id(key)
                        self.ready.set()
                        continue
                    rows = await streams.wait_for_rows(key, last, BLOCK_MS, 1000)
                except REDIS_AWAY:  # Redis restarting: read again from the same id, so nothing is lost
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 2.0)
                    continue
                backoff = 0.1
                for _, items in rows or []:
                    if items:
                        last = _s(items[-1][0])
                        for feed in list(self.feeds):
                            feed.push(key, items)
        finally:
            if self.hub.readers.get(key) is self:
                del self.hub.readers[key]
            self.ready.set()


class Hub:
    """The readers of one server process (``app.state.hub``), on the asyncio client ``ar``."""

    def __init__(self, ar) -> None:
        self.streams = LiveStreams(ar)
        self.readers: dict[str, _Reader] = {}

    async def join(self, key: str, feed: Feed) -> None:
        reader = self.readers.get(key)
        if reader is None or reader.task.done():
            reader = self.readers[key] = _Reader(self, key)
        reader.feeds.add(feed)
        await reader.ready.wait()

    def leave(self, key: str, feed: Feed) -> None:
        reader = self.readers.get(key)
        if reader is not None:
            reader.feeds.discard(feed)
            if not reader.feeds:  # nobody left: stop now rather than after the read's block
                reader.task.cancel()
                del self.readers[key]

    @contextlib.contextmanager
    def feed(self):
        f = Feed(self)
        try:
            yield f
        finally:
            f.close()


def hub_of(app) -> Hub:
    hub = getattr(app.state, "hub", None)
    if hub is None:
        hub = app.state.hub = Hub(app.state.aredis)
    return hub


__all__ = ["Feed", "Hub", "Overflow", "hub_of"]
