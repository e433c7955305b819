"""The live follow's fan-out (server/api/hub.py) on a real Redis: watchers joining while rows are
written get each row once, in order; one reader serves them all; a watcher too far behind is dropped."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aredis

from server.api import hub as hubmod
from server.api.hub import Hub, Overflow

KEY = "mainsail:session:hubtest:log"


async def _collect(feed, until: int) -> list[str]:
    got: list[str] = []
    while len(got) < until:
        got += [row for _, row, _ in await feed.get(10)]
    return got


def test_watchers_joining_mid_stream_miss_nothing_and_repeat_nothing(real_redis, redis_server):
    async def scenario():
        ar = aredis.Redis.from_url(redis_server.url)
        hub = Hub(ar)
        written: list[str] = []

        async def writer():
            for i in range(300):
                written.append((await ar.xadd(KEY, {"entry": f'{{"n":{i}}}'})).decode())
                if i % 7 == 0:
                    await asyncio.sleep(0.001)

        async def watcher(after: str | None, delay: float) -> list[str]:
            await asyncio.sleep(delay)
            with hub.feed() as feed:
                await feed.add(KEY, after or "0-0")
                return await _collect(feed, 300)

        first = (await ar.xadd(KEY, {"entry": "{}"})).decode()
        results = await asyncio.gather(writer(), *(watcher(first, d / 200) for d in range(20)))
        assert len(hub.readers) == 0  # the last watcher gone, its reader stopped
        await ar.aclose()
        return written, results[1:]

    written, seen = asyncio.run(scenario())
    for rows in seen:
        assert rows == written


def test_one_reader_serves_every_watcher_of_a_stream(real_redis, redis_server):
    async def scenario():
        ar = aredis.Redis.from_url(redis_server.url)
        hub = Hub(ar)
        with hub.feed() as a, hub.feed() as b:
            await a.add(KEY, "0-0")
            await b.add(KEY, None)  # only rows from now on
            assert len(hub.readers) == 1
            row = (await ar.xadd(KEY, {"entry": "{}"})).decode()
            assert [r for _, r, _ in await a.get(10)] == [row]
            assert [r for _, r, _ in await b.get(10)] == [row]
            assert await a.get(0) == []
        await ar.aclose()

    asyncio.run(scenario())


def test_a_watcher_too_far_behind_is_dropped(real_redis, redis_server, monkeypatch):
    monkeypatch.setattr(hubmod, "MAX_QUEUED", 5)

    async def scenario():
        ar = aredis.Redis.from_url(redis_server.url)
        for _ in range(10):
            await ar.xadd(KEY, {"entry": "{}"})
        with Hub(ar).feed() as feed:
            await feed.add(KEY, "0-0")
            with pytest.raises(Overflow):
                await feed.get(0)
        await ar.aclose()

    asyncio.run(scenario())
