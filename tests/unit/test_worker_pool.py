"""A worker's Redis pool is sized to its concurrency and waits for a free connection: never MaxConnectionsError."""

from __future__ import annotations

import threading

import pytest
import redis

from tasks import runtime
from workflows.store.client import blocking_pool


@pytest.fixture
def fresh_runtime(monkeypatch):
    """The runtime's per-process state, put back after the test."""
    monkeypatch.setattr(runtime, "_engine", None)
    monkeypatch.setattr(runtime, "_store", None)
    monkeypatch.setattr(runtime, "_concurrency", 0)
    monkeypatch.setattr(runtime, "_redis_url", "redis://127.0.0.1:1/5")


def test_a_workers_engine_has_a_connection_per_thread_and_a_margin(fresh_runtime, settings):
    runtime.set_concurrency(500)
    store = runtime.engine(settings).store
    pool = store.r.connection_pool
    assert isinstance(pool, redis.BlockingConnectionPool)
    assert pool.max_connections == 500 + runtime.POOL_MARGIN
    assert store._cache_sessions == 1000  # the transcripts of every session its threads may run, and more


def test_an_engine_built_before_the_worker_started_gets_a_bigger_pool(fresh_runtime, settings):
    engine = runtime.engine(settings)  # e.g. by `mainsail worker`'s connection check
    assert engine.store.r.connection_pool.max_connections == runtime.DEFAULT_POOL
    runtime.set_concurrency(300)
    pool = engine.store.r.connection_pool
    assert isinstance(pool, redis.BlockingConnectionPool) and pool.max_connections == 300 + runtime.POOL_MARGIN
    assert pool.connection_kwargs["db"] == 5


def test_with_every_connection_in_use_a_caller_waits_for_one(monkeypatch):
    import fakeredis

    server = fakeredis.FakeServer()
    pool = blocking_pool(fakeredis.FakeRedisConnection, 2, server=server)
    r = redis.Redis(connection_pool=pool)
    taken = [pool.get_connection() for _ in range(2)]
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(r.ping()))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and answers == []  # waiting, not failing with MaxConnectionsError
    pool.release(taken[0])
    waiter.join(5)
    assert answers == [True]
    pool.release(taken[1])


def test_a_model_worker_defaults_to_two_processes_per_core_of_many_threads():
    from cli.worker import defaults_for

    model = defaults_for(["model"], cores=2)
    assert (model.pool, model.processes, model.concurrency, model.prefetch) == ("threads", 4, 250, 1)
    assert defaults_for(["model"], cores=8).processes == 16
    assert defaults_for(["tools"], cores=8).processes == 1  # tool runs use the CPU: one process, a few threads
    assert defaults_for(["model", "tools"], cores=8).processes == 1
