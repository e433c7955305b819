"""Finding Redis and a worker, so that a newcomer's first command just works.

Redis, in order: ``MAINSAIL_REDIS_URL`` (must answer), a Redis on
``MAINSAIL_LOCAL_REDIS_URL`` (default localhost:6379), the embedded server
this machine started before (its URL is kept under the data dir), a new
private ``redis-server`` (AOF on, data under the data dir), and, without the
binary, an in-process fakeredis server, with a warning that nothing survives.

Workers: if no registered worker serves the queues a session needs, one runs
inside the CLI's process for as long as the CLI runs.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import redis

from workflows.engine import Engine
from workflows.exceptions import StoreUnavailable
from workflows.settings import Settings
from workflows.store import Store


def _ping(url: str, timeout: float = 0.5) -> bool:
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (redis.RedisError, OSError, ValueError):
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _note(msg: str) -> None:
    print(msg, file=sys.stderr)


def resolve_redis_url(settings: Settings) -> str:
    """The Redis URL to use, starting an embedded server when nothing else answers.

    Raises:
        StoreUnavailable: MAINSAIL_REDIS_URL is set but does not answer.
    """
    if settings.redis_url:
        if not _ping(settings.redis_url, timeout=2.0):
            raise StoreUnavailable(
                f"Could not connect to Redis at {settings.redis_url}: is it running? "
                "Start it, or set MAINSAIL_REDIS_URL to a reachable server "
                "(unset it to use a local or embedded one)."
            )
        return settings.redis_url
    if _ping(settings.local_redis_url, timeout=0.3):
        return settings.local_redis_url
    return _embedded(settings)


_fake_server = None
_threads_started = False


def in_process_threads_started() -> bool:
    """True once this process runs a worker or a fakeredis server of its own."""
    return _threads_started


def _embedded(settings: Settings) -> str:
    data = settings.data_dir / "redis"
    data.mkdir(parents=True, exist_ok=True)
    url_file = data / "url"
    if url_file.exists():
        url = url_file.read_text().strip()
        if _ping(url):
            return url
    binary = shutil.which(settings.redis_server_bin) if settings.redis_server_bin else None
    if binary:
        port = _free_port()
        subprocess.run(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--appendonly", "yes",
             "--save", "", "--daemonize", "yes", "--pidfile", str(data / "redis.pid"),
             "--logfile", str(data / "redis.log")],
            check=True, stdout=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
        deadline = time.monotonic() + 10
        while not _ping(url):
            if time.monotonic() > deadline:
                raise StoreUnavailable(f"The embedded redis-server did not start; see {data / 'redis.log'}")
            time.sleep(0.05)
        url_file.write_text(url)
        _note(f"Started an embedded Redis at {url} (data in {data}; AOF on).")
        return url
    return _fakeredis_server()


def _fakeredis_server() -> str:
    global _fake_server, _threads_started
    from fakeredis import TcpFakeServer

    _log_fakeredis_errors()
    port = _free_port()
    _fake_server = TcpFakeServer(("127.0.0.1", port), server_type="redis")
    _threads_started = True
    threading.Thread(target=_fake_server.serve_forever, daemon=True, name="fakeredis").start()
    url = f"redis://127.0.0.1:{port}/0"
    # fakeredis's TCP server drops the connection after any error reply, including the
    # NOSCRIPT that redis-py's Lock gets on its first EVALSHA: load the scripts up front.
    from redis.lock import Lock

    client = redis.Redis.from_url(url)
    for script in (Lock.LUA_RELEASE_SCRIPT, Lock.LUA_EXTEND_SCRIPT, Lock.LUA_REACQUIRE_SCRIPT):
        client.script_load(script)
    client.close()
    _note("warning: no Redis server and no redis-server binary found; using an in-memory Redis in this "
          "process. Nothing survives this command: install Redis or set MAINSAIL_REDIS_URL.")
    return url


def _log_fakeredis_errors() -> None:
    """Send the in-process server's command errors (it drops the connection on one) to stderr."""
    import logging

    class _Errors(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return str(record.msg).startswith("!!!")

    logger = logging.getLogger("fakeredis")
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_Errors())
    handler.setFormatter(logging.Formatter("fakeredis: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False


@dataclass
class Runtime:
    url: str
    engine: Engine
    worker: object | None = None

    @property
    def store(self) -> Store:
        return self.engine.store

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


def connect(settings: Settings) -> Runtime:
    """Resolve Redis, configure Celery and the task runtime, and return the engine."""
    from tasks import runtime
    from tasks.app import configure

    url = resolve_redis_url(settings)
    configure(url)
    engine = runtime.engine(settings)
    engine.store.ping()
    return Runtime(url=url, engine=engine)


def ensure_worker(rt: Runtime, settings: Settings, queues: tuple[str, ...] = ("model", "tools", "memory"),
                  quiet: bool = False) -> None:
    """Run a worker in this process when no registered worker serves ``queues``."""
    missing = set(queues) - rt.store.live_queues()
    if not missing or not settings.embedded_worker:
        return
    from tasks.worker import InProcessWorker

    global _threads_started
    _threads_started = True
    rt.worker = InProcessWorker(concurrency=settings.worker_concurrency).start()
    if not quiet:
        _note("No worker is listening; running one in this process. "
              "Start `mainsail worker` to keep sessions running after this command ends.")


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
