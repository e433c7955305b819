"""A Redis server asked about itself: whether it answers, its version and persistence, the workers
registered in it; and the set-up the CLI's own servers need (the embedded server's password, the Lua
scripts the in-process fakeredis server must have loaded).

For ``mainsail doctor`` and the CLI's choice of a Redis (cli/redis_probe.py, cli/embedded_redis.py,
cli/in_process.py), which say what they find without holding a client of their own.
"""

from __future__ import annotations

import os
import time

import redis
from redis.backoff import NoBackoff
from redis.lock import Lock
from redis.retry import Retry

from workflows.store import keys
from workflows.store.client import redis_client


class RedisServer:
    """One Redis server, through a client of its own (close it with :meth:`close`)."""

    def __init__(self, client: redis.Redis) -> None:
        self.r = client

    @classmethod
    def at(cls, url: str, ca_file: str | os.PathLike | None = None, *, single_try: bool = False,
           **kwargs) -> RedisServer:
        """The server at ``url`` (TLS as :func:`workflows.store.client.redis_client` says; ``kwargs`` are
        the client's timeouts). Connects on the first question.

        ``single_try``: each question is asked once, without redis-py's own retries (a caller that waits
        out errors itself: cli/redis_probe.py).

        Raises:
            ValueError: the URL (or its TLS options) is not usable.
        """
        if single_try:
            kwargs["retry"] = Retry(NoBackoff(), 0)
        return cls(redis_client(url, ca_file, **kwargs))

    def close(self) -> None:
        self.r.close()

    def ping(self) -> None:
        """PING it.

        Raises:
            RedisError, OSError: it did not answer, or refused this client.
        """
        self.r.ping()

    def version(self) -> str:
        """Its ``redis_version``.

        Raises:
            ResponseError: this user may not run INFO.
        """
        return self.r.info("server")["redis_version"]

    def aof_enabled(self) -> bool:
        """Whether AOF is on (sessions survive a restart).

        Raises:
            ResponseError: this user may not run INFO.
        """
        return str(self.r.info("persistence").get("aof_enabled")) == "1"

    def registered_workers(self) -> dict[str, list[str]]:
        """Worker name -> queues, for workers whose registration has not expired (by the workers' own
        clocks: a name whose hash Redis already expired is listed with no queues)."""
        workers = {}
        for raw in self.r.zrangebyscore(keys.workers(), time.time(), "+inf"):
            name = raw.decode() if isinstance(raw, bytes) else raw
            queues = self.r.hget(keys.worker(name), "queues") or b""
            workers[name] = [q for q in (queues.decode() if isinstance(queues, bytes) else queues).split(",") if q]
        return workers

    def require_password(self, data_dir: str, password: str) -> bool:
        """Set ``password`` on it (``CONFIG SET requirepass``) if it keeps its data in ``data_dir``; False,
        and nothing set, when it is another server.

        Raises:
            RedisError: it did not answer, or refused CONFIG.
        """
        if self.r.config_get("dir").get("dir") != data_dir:
            return False
        self.r.config_set("requirepass", password)
        return True

    def load_lock_scripts(self) -> None:
        """Load the Lua scripts of redis-py's locks up front (fakeredis's TCP server drops the connection
        after any error reply, including the NOSCRIPT a lock gets on its first EVALSHA)."""
        for script in (Lock.LUA_RELEASE_SCRIPT, Lock.LUA_EXTEND_SCRIPT, Lock.LUA_REACQUIRE_SCRIPT):
            self.r.script_load(script)
