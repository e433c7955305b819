"""Per-process singletons the tasks need: settings, Redis client, store, engine."""

from __future__ import annotations

import threading

import redis

from workflows.engine import Engine
from workflows.settings import Settings, get_settings
from workflows.store import Store

_lock = threading.Lock()
_redis_url: str | None = None
_engine: Engine | None = None


def set_redis_url(url: str) -> None:
    global _redis_url, _engine
    with _lock:
        _redis_url = url
        _engine = None


def engine(settings: Settings | None = None) -> Engine:
    """The process's engine, built on first use from the configured Redis URL."""
    global _engine
    with _lock:
        if _engine is None:
            s = settings or get_settings()
            url = _redis_url or s.redis_url
            if not url:
                raise RuntimeError("tasks.app.configure(redis_url) was not called")
            client = redis.Redis.from_url(url, health_check_interval=30, socket_keepalive=True)
            store = Store(client, lock_timeout=s.lock_timeout_seconds, lock_wait=s.lock_wait_seconds)
            _engine = Engine(store, s)
        return _engine
