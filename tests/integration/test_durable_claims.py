"""How a real Redis makes a mutating call's claim durable (workflows/store/durable.py): ``appendfsync always``
is found and trusted, ``everysec`` without WAITAOF is said to be unsafe, and a Redis with WAITAOF (a
valkey-server or redis-server 7.2+ named by ``MAINSAIL_TEST_WAITAOF_SERVER``) waits for the fsync, unless its
WAITAOF answers before the fsync (Valkey, Redis before 8.0): then it is unsafe under ``everysec``."""

from __future__ import annotations

import os

import pytest

from tests.conftest import RedisServer
from workflows.store.durable import ALWAYS, UNSAFE, WAITAOF, Durability, early_waitaof


def durability_of(*extra: str, binary: str | None = None) -> tuple[str, str, RedisServer]:
    server = RedisServer(appendonly=True, extra=extra, binary=binary)
    client = server.client()
    try:
        durability = Durability(client)
        return durability.wait(), durability.why, server
    finally:
        client.close()


def test_appendfsync_always_is_durable_and_everysec_without_waitaof_is_not(real_redis):
    version = real_redis.info("server")  # (the session's redis-server, for its version)
    modes = {}
    for fsync in ("always", "everysec"):
        mode, why, server = durability_of("--appendfsync", fsync)
        server.stop()
        modes[fsync] = (mode, why)
    assert modes["always"] == (ALWAYS, "")
    if tuple(int(x) for x in version["redis_version"].split(".")[:2]) >= (7, 2):
        flawed = early_waitaof(real_redis)
        assert modes["everysec"][0] == (WAITAOF if flawed is None else UNSAFE)
    else:
        assert modes["everysec"][0] == UNSAFE
        assert "appendfsync everysec" in modes["everysec"][1] and "Redis 8.0 or later" in modes["everysec"][1]


@pytest.mark.skipif(not os.environ.get("MAINSAIL_TEST_WAITAOF_SERVER"),
                    reason="set MAINSAIL_TEST_WAITAOF_SERVER to a valkey-server or redis-server 7.2+")
def test_a_redis_with_waitaof_waits_for_the_fsync_unless_it_answers_early():
    binary = os.environ["MAINSAIL_TEST_WAITAOF_SERVER"]
    mode, why, server = durability_of("--appendfsync", "everysec", binary=binary)
    try:
        client = server.client()
        flawed = early_waitaof(client)
        if flawed is None:
            assert mode == WAITAOF
            assert Durability(client).wait() == WAITAOF
            assert int(client.hget("mainsail:metrics", "durable_waits_total")) == 2
        else:  # (Valkey, Redis 7.4: its WAITAOF is not trusted under everysec)
            assert mode == UNSAFE
            assert flawed in why and "redis/redis#13793" in why and "appendfsync always" in why
        client.close()
    finally:
        server.stop()
    mode, _, server = durability_of("--appendfsync", "always", binary=binary)
    server.stop()
    assert mode == (WAITAOF if flawed is None else ALWAYS)


def test_a_redis_with_its_aof_off_is_unsafe():
    server = RedisServer(appendonly=False)
    try:
        durability = Durability(client := server.client())
        assert durability.wait() == UNSAFE
        assert "appendonly no" in durability.why or "AOF off" in durability.why
        client.close()
    finally:
        server.stop()
