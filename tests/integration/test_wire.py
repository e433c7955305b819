"""The reading client of the standard library (workflows/store/wire.py) against redis-py's own parser, on a real
Redis: the same replies for generated values (binary, UTF-8, CRLF inside, empty, large enough to arrive in
many reads), nils, integers, nested arrays and error replies; URLs it does not understand are refused, never
guessed at."""

from __future__ import annotations

import random

import pytest

from workflows.store.wire import ReplyError, Wire, WireError, WireUnsupported

pytestmark = pytest.mark.integration


def _value(rng: random.Random) -> bytes:
    n = rng.choice([0, 1, 2, 10, 100, 5000, 70_000, 300_000])
    kind = rng.choice(["bytes", "text", "crlf"])
    if kind == "bytes":
        return bytes(rng.getrandbits(8) for _ in range(n))
    if kind == "crlf":
        return (b"a\r\n$3\r\n*-1\r\n" * (n // 12 + 1))[:n]
    return "".join(rng.choice("aé€😀 \n\t\"'") for _ in range(n)).encode()


@pytest.fixture
def resp2(redis_server):
    """redis-py speaking RESP2, as this client does (redis-py 8 speaks RESP3 unless told)."""
    import redis

    client = redis.Redis.from_url(redis_server.url, protocol=2)
    yield client
    client.close()


def _theirs(client, *args):
    """redis-py's parser's reply, with no response callback applied."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command(*args)
        try:
            return conn.read_response()
        except Exception as exc:  # an error reply
            return ("error", str(exc))
    finally:
        client.connection_pool.release(conn)


def _ours(wire, *args):
    (reply,) = wire.pipeline([args])
    return ("error", str(reply)) if isinstance(reply, ReplyError) else reply


@pytest.mark.parametrize("seed", range(6))
def test_replies_are_redis_pys(real_redis, redis_server, resp2, seed):
    rng = random.Random(seed)
    values = [_value(rng) for _ in range(12)]
    for i, v in enumerate(values):
        real_redis.set(f"k{i}", v)
    real_redis.rpush("list", *values)
    real_redis.hset("hash", mapping={f"f{i}": v for i, v in enumerate(values)})
    real_redis.zadd("z", {v or b"empty": i for i, v in enumerate(values)})
    for v in values[:5]:
        real_redis.xadd("stream", {"data": v, "n": b"1"})
    commands = [("GET", "k0"), ("GET", "missing"), ("MGET", *[f"k{i}" for i in range(12)], "missing"),
                ("LRANGE", "list", 0, -1), ("LLEN", "list"), ("HGETALL", "hash"), ("HGET", "hash", "f3"),
                ("ZREVRANGE", "z", 0, -1), ("ZRANGEBYSCORE", "z", 2, "+inf"), ("ZCOUNT", "z", "-inf", "+inf"),
                ("EXISTS", "k1", "missing"), ("XRANGE", "stream", "-", "+"), ("XREVRANGE", "stream", "+", "-"),
                ("GET", "list"), ("HGET", "k0", "x"), ("PING",)]
    with Wire(redis_server.url) as wire:
        for args in commands:
            assert _ours(wire, *args) == _theirs(resp2, *args), args
        together = wire.pipeline(commands)  # (one write, replies read in order)
        assert [("error", str(r)) if isinstance(r, ReplyError) else r for r in together] == \
            [_theirs(resp2, *c) for c in commands]


def test_it_only_reads(redis_server):
    with Wire(redis_server.url) as wire:
        for args in [("SET", "k", "v"), ("DEL", "k"), ("FLUSHALL",), ("EVAL", "return 1", 0)]:
            with pytest.raises(WireUnsupported):
                wire.pipeline([args])


@pytest.mark.parametrize("url", ["rediss://localhost:6379/0", "redis://localhost:6379/0?socket_timeout=3",
                                 "redis://localhost:6379/x", "redis://localhost:port/0", "valkey://localhost/0",
                                 "unix://", "redis://localhost/1?db=2"])
def test_urls_it_does_not_understand_are_refused(url):
    with pytest.raises(WireUnsupported):
        Wire(url)


def test_an_unreachable_server_is_an_error():
    with pytest.raises(WireError):
        Wire("redis://127.0.0.1:1/0", timeout=0.5)
