"""The net under the store's own repair: every Redis client Mainsail makes (tasks/runtime.py) sends text
UTF-8 cannot encode with U+FFFD in its place, never an exception in the middle of a write."""

from __future__ import annotations

import pytest

from tasks.runtime import async_redis_client, redis_client


def test_a_raw_string_with_a_lone_surrogate_is_sent_repaired(real_redis, redis_server):
    client = redis_client(redis_server.url)
    client.set("mainsail:test:raw", "caf\udc80 \ud800")
    client.xadd("mainsail:test:stream", {"text": "x\udcff"})
    assert real_redis.get("mainsail:test:raw").decode() == "caf\ufffd \ufffd"
    assert real_redis.xrange("mainsail:test:stream")[0][1] == {b"text": "x\ufffd".encode()}
    client.close()


@pytest.mark.anyio
async def test_the_async_client_too(real_redis, redis_server):
    client = async_redis_client(redis_server.url)
    await client.set("mainsail:test:raw", "a\udc80")
    assert real_redis.get("mainsail:test:raw").decode() == "a\ufffd"
    await client.aclose()
