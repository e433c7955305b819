"""The reaper's view of the workers' connections against a real redis-server: a closed connection is
seen, and where the client list is refused (ACL) or does not show our own connection (a proxy) the
reaper says so and falls back to the registration's TTL."""

from __future__ import annotations

import logging
import time

import pytest
import redis

from tasks.liveness import Tether, Watch, tether_name
from tests.e2e.conftest import wait_for
from workflows.store.registry import Workers

pytestmark = pytest.mark.integration


@pytest.fixture
def tethers():
    made = []

    def make(client, name):
        t = Tether(Workers(client), name)
        t.start()
        assert t.settled.wait(5)
        made.append((t, Workers(redis.Redis(connection_pool=client.connection_pool.__class__(
            **client.connection_pool.connection_kwargs)))))  # a client of its own, as the beacon's
        return t

    yield make
    for t, workers in made:
        t.stop(workers)
        t.join(5)
        assert not t.is_alive()


def register(workers: Workers, name: str, tether: Tether | None) -> None:
    workers.register(name, ["tools"], 30, {"tether": tether.client_name} if tether else {})


def test_a_closed_connection_is_gone_and_an_open_one_is_not(redis_server, real_redis, tethers):
    me = tethers(redis.Redis.from_url(redis_server.url, client_name=tether_name("me")), "me")
    other = tethers(redis.Redis.from_url(redis_server.url, client_name=tether_name("other")), "other")
    workers = Workers(real_redis)
    register(workers, "me", me)
    register(workers, "other", other)
    watch = Watch(workers, "me", me, tick=0.25, fallback=4.0)
    assert watch.look().gone == []
    other.stop(workers)
    wait_for(lambda: not other.is_alive(), 5, what="the other connection to close")
    real_redis.delete("mainsail:reaper:watch")  # a new tick
    assert watch.look().gone == ["other"]


def test_a_refused_client_list_falls_back_to_the_ttl_and_says_so(auth_redis_server, auth_redis, tethers, caplog):
    from workflows.store.client import redis_client

    alice = lambda **kw: redis_client(auth_redis_server.alice_url, **kw)  # noqa: E731  (-@dangerous: no CLIENT LIST)
    me = tethers(alice(client_name=tether_name("me")), "me")
    assert me.connected.is_set()  # CLIENT SETNAME is allowed
    workers = Workers(alice())
    register(workers, "me", me)
    workers.register("gone", ["tools"], 0.001)
    wait_for(lambda: not auth_redis.exists("mainsail:worker:gone"), 5, what="the registration to lapse")
    with caplog.at_level(logging.WARNING, logger="tasks.liveness"):
        found = Watch(workers, "me", me, tick=0.25, fallback=4.0).look()
    assert found.lapsed == ["gone"] and found.gone == [] and found.stalled == []
    assert "Redis refused CLIENT LIST" in caplog.text and "+client|list" in caplog.text


def test_a_client_list_without_our_own_connection_falls_back_to_the_ttl(redis_server, real_redis, tethers, caplog):
    # A proxy answers CLIENT SETNAME but lists its own connections: our name is nowhere.
    me = tethers(redis.Redis.from_url(redis_server.url), "proxied")
    workers = Workers(real_redis)
    register(workers, "proxied", me)
    register(workers, "other", None)
    real_redis.hset("mainsail:workers:tethers", "other", tether_name("other"))  # named, not listed
    with caplog.at_level(logging.WARNING, logger="tasks.liveness"):
        found = Watch(workers, "proxied", me, tick=0.25, fallback=4.0).look()
    assert found.gone == []
    assert "does not show this worker's own connection" in caplog.text


def test_a_stalled_worker_keeps_its_running_step_until_its_connection_closes(redis_server, real_redis, tethers,
                                                                               settings, ws, monkeypatch):
    """Registration lapsed, connection open: its step stays with it (lease spared, not taken back);
    once the connection closes it is dead at once (no confirmation wait) and the step is taken back."""
    from tasks import reaper
    from workflows.engine import Engine
    from workflows.models.options import SessionOptions
    from workflows.steps.run import owner_token
    from workflows.store.redis_store import Store

    sent = []
    monkeypatch.setattr(reaper, "resend", lambda steps: sent.extend(steps))
    engine = Engine(Store(real_redis), settings)
    workers = engine.store.workers
    me = tethers(redis.Redis.from_url(redis_server.url, client_name=tether_name("reaper")), "reaper")
    slow = tethers(redis.Redis.from_url(redis_server.url, client_name=tether_name("slow")), "slow")
    register(workers, "reaper", me)
    register(workers, "slow", slow)
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, "hi")
    assert engine.claim(rec.id, step.id, owner_token(), "slow").step is not None
    workers.retire("slow")  # its registration lapsed (starved of CPU, stopped)
    watch = Watch(workers, "reaper", me, tick=0.25, fallback=4.0)
    seen: dict[str, float] = {}

    assert reaper.reap_dead(engine, "reaper", seen, confirm=0.0, watch=watch, lost_after=60) == 0
    assert [f["event"] for _, f in workers.events()] == ["stalled"] and watch.stalled == {"slow"}
    assert reaper.spare_live_leases(engine, now=time.time() + 60, stalled=watch.stalled) == 1  # lease spared
    assert sent == []

    slow.stop(Workers(real_redis))
    slow.join(5)
    real_redis.delete("mainsail:reaper:watch")  # a new tick
    assert reaper.reap_dead(engine, "reaper", seen, confirm=60, watch=watch, lost_after=60) == 1
    assert [s.id for s in sent] == [step.id]
    (_, dead), = [e for e in workers.events() if e[1]["event"] == "dead"]
    assert dead["how"] == "connection closed"
