"""Followers (``mainsail run``, ``watch``, interactive mode) do not poll Redis (issue 15, item 5).

A follower reads a session with one blocking stream read per batch of entries: an idle session costs
one command per block time (not five a second), and N entries written in B bursts cost about B reads.
Commands are counted on the follower's own client, and the server's XREAD calls cross-check them.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
import redis

from cli.follow import follow
from workflows.models import ResultEntry, SystemEntry
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration


class CountingRedis(redis.Redis):
    """A client that counts the commands it sends (none of a follower's go through a pipeline)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self.sent: Counter[str] = Counter()

    def execute_command(self, *args, **options):
        self.sent[str(args[0]).upper()] += 1
        return super().execute_command(*args, **options)


@pytest.fixture
def counted(redis_server, real_redis):
    """(a store on a counting client, a plain client for writing and stats)."""
    client = CountingRedis.from_url(redis_server.url)
    yield Store(client), real_redis
    client.close()


def server_xreads(client) -> int:
    return int(client.info("commandstats").get("cmdstat_xread", {}).get("calls", 0))


def write(store: Store, sid: str, entries) -> None:
    """As a commit does: in MULTI/EXEC, so a blocked reader wakes once, after EXEC (a plain pipeline's
    first XADD would wake it alone)."""
    pipe = store.r.pipeline(transaction=True)
    store.append(sid, entries, pipe)
    pipe.execute()


@pytest.mark.parametrize("with_poll", [False, True], ids=["watch", "run (prompt and Esc polled)"])
def test_an_idle_session_costs_one_read_per_block_not_a_read_per_look(counted, with_poll):
    store, client = counted
    looks = []
    before = server_xreads(client)
    result = follow(store, "idle", on_entry=lambda e: None, on_delta=lambda *a: None, timeout=2.0,
                    poll=(lambda: looks.append(time.monotonic())) if with_poll else None)
    assert result is None
    # One XREVRANGE for the live stream's last id, then blocking reads: 1 (polled: the thread's read
    # blocks 5 s) or 1-2 (2 s reads). Before item 5 a polled follower read every 200 ms: 10 reads.
    assert store.r.sent["XREVRANGE"] == 1
    assert 1 <= store.r.sent["XREAD"] <= 2, store.r.sent
    assert sum(store.r.sent.values()) <= 3, store.r.sent
    assert 1 <= server_xreads(client) - before <= 2
    if with_poll:  # the terminal is still looked at five times a second, without Redis
        assert len(looks) >= 8, len(looks)


@pytest.mark.parametrize("with_poll", [False, True], ids=["watch", "run (prompt and Esc polled)"])
def test_a_burst_of_entries_is_one_read(counted, with_poll):
    store, client = counted
    sid, bursts, per_burst = "busy", 5, 20
    writer_store = Store(client)
    seen = []

    def writer() -> None:
        for b in range(bursts):
            time.sleep(0.15)  # the follower is blocked in its read when each burst lands
            entries = [SystemEntry(sessionId=sid, content=f"{b}.{i}") for i in range(per_burst)]
            if b == bursts - 1:
                entries.append(ResultEntry(sessionId=sid, result="done"))
            write(writer_store, sid, entries)

    t = threading.Thread(target=writer)
    before = server_xreads(client)
    t.start()
    try:
        result = follow(store, sid, on_entry=seen.append, timeout=20,
                        poll=(lambda: None) if with_poll else None)
    finally:
        t.join()
    assert isinstance(result, ResultEntry)
    assert [e.content for e in seen[:-1]] == [f"{b}.{i}" for b in range(bursts) for i in range(per_burst)]
    # One read per burst (a burst is one pipeline, so it lands between two reads), plus at most one
    # more; polling every 200 ms over the ~0.75 s would add none here, but 101 entries never cost 101 reads.
    assert bursts <= store.r.sent["XREAD"] <= bursts + 1, store.r.sent
    assert server_xreads(client) - before <= store.r.sent["XREAD"]  # a read still blocked is not counted yet


@pytest.mark.parametrize("with_poll", [False, True], ids=["watch", "run (prompt and Esc polled)"])
def test_nothing_is_lost_between_two_reads_and_nothing_repeated(counted, with_poll):
    """Entries that land while the follower renders the previous batch come in the next read."""
    store, client = counted
    sid = "steady"
    writer_store = Store(client)
    seen = []

    def slow_render(e) -> None:
        seen.append(e)
        if len(seen) == 1:  # while we render, the rest of the run lands
            write(writer_store, sid, [SystemEntry(sessionId=sid, content=str(i)) for i in range(1, 30)])
            write(writer_store, sid, [ResultEntry(sessionId=sid, result="done")])

    write(writer_store, sid, [SystemEntry(sessionId=sid, content="0")])
    result = follow(store, sid, on_entry=slow_render, timeout=10, poll=(lambda: None) if with_poll else None)
    assert isinstance(result, ResultEntry)
    assert [e.content for e in seen[:-1]] == [str(i) for i in range(30)]
    # Blocking in the caller, both later commits come in one read. A reader thread reads on while the
    # follower renders (a read per commit) and has its next read in flight when the follower leaves.
    # (whether the reader thread's next read is already in flight when the follower leaves is a race: 3 or 4)
    assert store.r.sent["XREAD"] in ((2,) if not with_poll else (3, 4)), store.r.sent
