"""Reading a session as it grows: one blocking stream read per batch, from the last ids seen.

A :class:`Feed` keeps the last transcript and live-delta ids a follower has seen and reads all
that is newer on both streams in one ``XREAD BLOCK`` (``Store.tail``), never from ``$``: an entry
written between two reads is not lost. While nothing happens it costs one read per block time.

A follower that also watches the terminal (the permission prompt, Esc) cannot block on Redis:
:class:`FeedThread` runs the reads in a thread and hands the batches over, so the follower waits
on them and looks at the keyboard in between, without a Redis command per look.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

from workflows.store import keys
from workflows.store.redis_store import Store, stream_entries
from workflows.store.resilience import RedisConnectionError, RedisError, RedisTimeoutError

#: What a lost connection raises; the feed retries it (after a backoff) from the same ids.
REDIS_AWAY = (RedisConnectionError, RedisTimeoutError, OSError)
#: How long a reader thread blocks in one read: while nothing happens, one command per this.
THREAD_BLOCK_MS = 5000


def _stream_order(stream_id: str) -> tuple[int, int]:
    ms, _, seq = stream_id.partition("-")
    return int(ms), int(seq or 0)


@dataclass
class Batch:
    """What one read brought: text deltas (``{step, attempt, text}`` fields) and transcript entries (JSON).

    ``items`` holds both in the order they happened: ``("delta", fields)`` and ``("entry", (stream id, its
    index in that stream entry, json))`` sorted
    by their stream ids (both streams' ids are the same Redis server's clock). A read that starts late
    may bring a prompt's entry and the first deltas of its reply together: the prompt comes first.
    """

    deltas: list[dict[str, str]] = field(default_factory=list)
    entries: list[str] = field(default_factory=list)
    children: list[tuple[str, str]] = field(default_factory=list)  # (sub-agent session id, entry JSON)
    links: list[tuple[str, str | None]] = field(default_factory=list)  # (sub-agent session id, its Task call's id)
    items: list[tuple[str, object]] = field(default_factory=list)


class Feed:
    """Session ``sid``'s transcript after ``after`` (the start when None), and its text deltas if ``deltas``
    (with ``events``, also the other raw events of the replies, when the session publishes them:
    ``SessionRecord.stream_events``; ``deltas`` is implied)."""

    def __init__(self, store: Store, sid: str, *, after: str | None = None, deltas: bool = False,
                 children: bool = False, children_shown: set[str] | None = None, events: bool = False,
                 live_after: str | None = None) -> None:
        self.store = store
        self.sid = sid
        self.deltas = deltas or events
        self.live_types = ("text", "event") if events else ("text",)
        # With ``children``: the transcripts of the session's sub-agents too, in the same read, from
        # when a Task call shows up until each child's result (child log key -> (child id, last id)).
        self.children = children
        self.child_logs: dict[str, tuple[str, str]] = {}
        self.followed: set[str] = set(children_shown or ())  # (a replay showed these already)
        self.links: list[tuple[str, str | None]] = []  # sub-agents found since the last batch, with their Task call
        if children:  # sub-agents at work already (a Task call before ``after``): followed from their start
            try:
                self._add_children(running_only=children_shown is None)
            except (RedisError, OSError):
                pass
        self.log_key, self.live_key = keys.log(sid), keys.live(sid)
        self.last_log = after or "0-0"
        # Where the deltas start: now, before the follower's reads begin (a reader thread's first read
        # may come after the first deltas of the call it follows, which must not be lost). Older deltas
        # are not news. When Redis does not answer yet, the first read asks again.
        # ``live_after``: the id the caller took before it started the turn it follows (its first events).
        self.last_live: str | None = live_after if self.deltas else None
        self.backoff = 0.1
        if self.deltas and self.last_live is None:
            try:
                self.last_live = store.last_live_id(sid)
            except (RedisError, OSError):
                pass

    def read(self, block_ms: int) -> Batch:
        """Everything new on both streams, waiting up to ``block_ms`` for it (an empty batch then).

        Raises:
            RedisError, OSError: Redis did not answer; the next read goes on from the same ids.
        """
        if self.deltas and self.last_live is None:
            self.last_live = self.store.last_live_id(self.sid)
        streams = {self.log_key: self.last_log}
        if self.deltas:
            streams[self.live_key] = self.last_live
        streams.update({key: last for key, (_, last) in self.child_logs.items()})
        rows = self.store.tail(streams, block_ms=max(1, block_ms))
        self.backoff = 0.1
        batch = Batch()
        batch.links, self.links = self.links, []
        ordered: list[tuple[tuple[int, int], int, str, object]] = []
        for key, items in rows:
            if not items:
                continue
            if key == self.live_key:
                self.last_live = items[-1][0]
                for i, f in items:
                    if f.get("type") in self.live_types:
                        batch.deltas.append(f)
                        ordered.append((_stream_order(i), 0, "delta", f))
            elif key in self.child_logs:
                child, seen = self.child_logs[key]
                self.child_logs[key] = (child, items[-1][0])
                # In commit order with the session's own entries (stream ids are Redis's clock). A tie is one
                # commit, or two in one millisecond: a child's first entries are written by the commit that
                # starts it, after its task_started notice; later ones come before the parent's that follow.
                tie = 2 if seen == "0-0" else 0
                raws = []
                for i, f in items:
                    for raw in stream_entries(f):
                        raws.append(raw)
                        batch.children.append((child, raw))
                        ordered.append((_stream_order(i), tie, "child", (child, raw)))
                if any('"type":"result"' in raw for raw in raws):  # its run is over
                    del self.child_logs[key]
            else:
                self.last_log = items[-1][0]
                for i, f in items:
                    for n, raw in enumerate(stream_entries(f)):
                        batch.entries.append(raw)
                        ordered.append((_stream_order(i), 1, "entry", (i, n, raw)))
        ordered.sort(key=lambda o: (o[0], o[1]))  # stable: one commit's entries keep their order
        batch.items = [(kind, payload) for _, _, kind, payload in ordered]
        if self.children and any('"name":"Task"' in raw or '"name":"Agent"' in raw for raw in batch.entries):
            self._add_children()
            batch.links, self.links = batch.links + self.links, []
        return batch

    def _add_children(self, running_only: bool = False) -> None:
        """Follow the sub-agents the session started since the last look (a Task call was seen)."""
        from statemachines import State

        new = [c for c in self.store.get_session(self.sid).children if c not in self.followed]
        for child in self.store.get_sessions(new) if new else []:
            if running_only and child.state is State.IDLE:
                continue
            self.followed.add(child.id)
            self.child_logs[keys.log(child.id)] = (child.id, "0-0")
            self.links.append((child.id, child.parent_tool_use_id))

    def next(self, wait_ms: int) -> Batch | None:
        """A read of up to ``wait_ms``; None when Redis did not answer (after a backoff, 0.1 s doubling to 1 s)."""
        try:
            return self.read(wait_ms)
        except REDIS_AWAY:
            time.sleep(self.away())
            return None

    def away(self) -> float:
        """Seconds to wait before the next read after Redis did not answer: 0.1 s, doubling up to 1 s."""
        wait, self.backoff = self.backoff, min(self.backoff * 2, 1.0)
        return wait

    def close(self) -> None:
        pass


class FeedThread(threading.Thread):
    """Reads ``feed`` in a thread, ``block_ms`` at a time; :meth:`next` waits for a batch.

    A Redis error other than a lost connection stops the thread and is raised by :meth:`next`.
    After :meth:`close` the thread ends when its current read returns (at most ``block_ms``), and
    what that read brings is dropped: the follower has left.
    """

    def __init__(self, feed: Feed, block_ms: int = THREAD_BLOCK_MS) -> None:
        super().__init__(name="mainsail-feed", daemon=True)
        self.feed = feed
        self.block_ms = block_ms
        self._batches: queue.SimpleQueue[Batch | BaseException] = queue.SimpleQueue()
        self._closed = threading.Event()

    def run(self) -> None:
        while not self._closed.is_set():
            try:
                batch = self.feed.read(self.block_ms)
            except REDIS_AWAY:
                self._closed.wait(self.feed.away())  # the follower's own notes say Redis is away
                continue
            except Exception as exc:  # noqa: BLE001 - handed to the follower, which raises it
                if not self._closed.is_set():
                    self._batches.put(exc)
                return
            if (batch.entries or batch.deltas or batch.children or batch.links) and not self._closed.is_set():
                self._batches.put(batch)

    def next(self, wait_ms: int) -> Batch | None:
        """The next batch, or None when none came within ``wait_ms``."""
        try:
            got = self._batches.get(timeout=wait_ms / 1000)
        except queue.Empty:
            return None
        if isinstance(got, BaseException):
            raise got
        return got

    def close(self) -> None:
        self._closed.set()
