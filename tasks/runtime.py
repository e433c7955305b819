"""Per-process singletons the tasks need: settings, Redis client, store, engine, and the worker's
own state (its registered name, the steps it runs now, whether it is draining before it stops).

Also the one place that turns a Redis URL into a client, so ``redis://user:pass@``,
``redis://:pass@`` and ``rediss://`` (TLS) URLs work the same for the CLI, the
workers' store and the Celery broker (:func:`tls_options` feeds ``broker_use_ssl``).
"""

from __future__ import annotations

import inspect
import os
import threading
import time
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workflows.engine import Engine
from workflows.settings import Settings, get_settings
from workflows.store import Store
from workflows.valid_text import REPAIR_ERRORS

_lock = threading.Lock()
_redis_url: str | None = None
_engine: Engine | None = None
_worker: str | None = None
_draining = threading.Event()
_running: dict[str, float] = {}  # "sid/step" -> monotonic start, for the steps this process runs now
_queues: frozenset[str] = frozenset()  # the queues this process's worker consumes
_concurrency = 0  # steps this process may run at once (0: not a worker)

#: Connections past the worker's concurrency: the lease keeper, the reaper, the consumer's
#: note of each message taken, the retention gc.
POOL_MARGIN = 8
#: Connections of a process that is not a worker (a CLI command, a test).
DEFAULT_POOL = 64
#: With every connection in use, a caller waits this long for one (then a ConnectionError, retried
#: like any Redis error) instead of failing at once with MaxConnectionsError.
POOL_WAIT_SECONDS = 20.0

#: TLS settings a ``rediss://`` URL may carry in its query (redis-py's and kombu's names).
TLS_QUERY_KEYS = ("ssl_cert_reqs", "ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
CERT_REQS = ("required", "optional", "none")


def set_redis_url(url: str) -> None:
    global _redis_url, _engine
    with _lock:
        _redis_url = url
        _engine = None


def current_url() -> str:
    """The Redis URL this process was configured with (:func:`tasks.app.configure`)."""
    url = _redis_url or get_settings().redis_url
    if not url:
        raise RuntimeError("tasks.app.configure(redis_url) was not called")
    return url


def engine(settings: Settings | None = None) -> Engine:
    """The process's engine, built on first use from the configured Redis URL."""
    global _engine
    with _lock:
        if _engine is None:
            s = settings or get_settings()
            url = _redis_url or s.redis_url
            if not url:
                raise RuntimeError("tasks.app.configure(redis_url) was not called")
            client = redis_client(url, s.redis_ca_file, health_check_interval=30, socket_keepalive=True,
                                  once_transactions=True, max_connections=pool_size())
            store = Store(client, lock_timeout=s.lock_timeout_seconds, lock_wait=s.lock_wait_seconds)
            store.lock_owner = _worker
            store.keep_transcripts(2 * _concurrency)
            _engine = Engine(store, s)
            from workflows.metrics import TALLY

            TALLY.bind(client)  # this process's counts reach Redis every few seconds (workflows/metrics.py)
        return _engine


def set_concurrency(threads: int) -> None:
    """This process runs up to ``threads`` steps at once: its engine's Redis pool holds that many
    connections and a margin (an engine built before gets a pool of that size now), and it keeps the
    transcripts of twice as many sessions."""
    global _concurrency
    with _lock:
        _concurrency = threads
        if _engine is not None:
            _engine.store.keep_transcripts(2 * threads)  # a transcript per step it may run, and some
        if _engine is not None and _engine.store.r.connection_pool.max_connections < pool_size():
            old, r = _engine.store.r.connection_pool, _engine.store.r
            r.connection_pool = blocking_pool(old.connection_class, pool_size(), **old.connection_kwargs)
            old.disconnect(inuse_connections=False)


def pool_size() -> int:
    """Connections of this process's engine client: one per step it may run at once, and a margin."""
    return _concurrency + POOL_MARGIN if _concurrency else DEFAULT_POOL


# ---------------------------------------------------------------------------- this worker


def set_worker_name(name: str | None) -> None:
    """This process now runs worker ``name`` (its registry name): its claims and locks carry it."""
    global _worker
    with _lock:
        _worker = name
        if _engine is not None:
            _engine.store.lock_owner = name


def set_queues(queues: list[str]) -> None:
    """The queues this process's worker consumes (it runs a step of those that follows its own at once)."""
    global _queues
    _queues = frozenset(queues)


def serves(step) -> bool:
    """Whether this worker may run ``step`` itself, right after the step it follows (not while draining)."""
    return step.queue in _queues and not _draining.is_set()


def worker_name() -> str | None:
    """The registered name of the worker this process runs, if any."""
    return _worker


def enter_step(sid: str, step_id: str) -> bool:
    """Count a step's message as on this worker's hands until :func:`leave_step`; False once the worker
    is draining (the caller then hands the message back instead of running it)."""
    with _lock:
        _running[f"{sid}/{step_id}"] = time.monotonic()
        return not _draining.is_set()


def leave_step(sid: str, step_id: str) -> None:
    with _lock:
        _running.pop(f"{sid}/{step_id}", None)


def running_steps() -> dict[str, float]:
    """``sid/step`` -> monotonic start time of each step this process runs now."""
    with _lock:
        return dict(_running)


def start_draining() -> None:
    """Take no new step: a message that arrives from now on goes back to its queue."""
    _draining.set()


def stop_draining() -> None:
    """A new worker starts in this process: it takes steps again."""
    _draining.clear()


def draining() -> bool:
    return _draining.is_set()


def redis_client(url: str, ca_file: str | os.PathLike | None = None, *, once_transactions: bool = False,
                 max_connections: int | None = None, **kwargs) -> redis.Redis:
    """A client for ``url``; for ``rediss://``, TLS verified as :func:`tls_options` says.

    Args:
        url: ``redis://[[user]:password@]host:port/db`` or ``rediss://...`` (query may hold TLS options).
        ca_file: CA certificates (PEM) for a ``rediss://`` server, unless the URL names ``ssl_ca_certs``.
        once_transactions: MULTI/EXEC pipelines are sent once, never re-sent by redis-py after a
            connection error (see :class:`OnceTransactions`).
        max_connections: the pool's size; a caller finding every connection in use waits for one (up
            to ``POOL_WAIT_SECONDS``). None: redis-py's own pool, which raises MaxConnectionsError
            past 100 connections in use.
        **kwargs: passed to :meth:`redis.Redis.from_url` (timeouts, keepalive).
    """
    options = tls_options(url, ca_file)
    kwargs = {**CLIENT_DEFAULTS, **kwargs}
    cls = OnceTransactions if once_transactions else redis.Redis
    if max_connections is None:
        return cls.from_url(without_tls_query(url), **kwargs, **(options or {}))
    pool = redis.BlockingConnectionPool.from_url(without_tls_query(url), max_connections=max_connections,
                                                 timeout=POOL_WAIT_SECONDS, **kwargs, **(options or {}))
    return cls(connection_pool=pool)


def async_redis_client(url: str, ca_file: str | os.PathLike | None = None, **kwargs):
    """An asyncio client for ``url`` (TLS as :func:`redis_client`): the team server's live streams, where
    each watcher waits in an ``XREAD BLOCK`` without holding a thread."""
    import redis.asyncio as aredis

    return aredis.Redis.from_url(without_tls_query(url), **{**CLIENT_DEFAULTS, **kwargs}, **(tls_options(url, ca_file) or {}))


def _no_setinfo() -> dict:
    """Connection options that skip ``CLIENT SETINFO`` (library name and version, two commands per new
    connection, which nothing of Mainsail reads): ``driver_info=None`` from redis-py 7.1,
    ``lib_name``/``lib_version`` before it."""
    params = inspect.signature(redis.connection.AbstractConnection.__init__).parameters
    return {"driver_info": None} if "driver_info" in params else {"lib_name": None, "lib_version": None}


NO_SETINFO = _no_setinfo()
#: Every client's options: no ``CLIENT SETINFO``; and a string that UTF-8 cannot encode (a lone surrogate
#: the store's own repair did not meet) is sent with U+FFFD in its place, never an exception in the middle
#: of a write (workflows/valid_text.py).
CLIENT_DEFAULTS = {**NO_SETINFO, "encoding_errors": REPAIR_ERRORS}


def blocking_pool(connection_class, max_connections: int, **connection_kwargs) -> redis.BlockingConnectionPool:
    return redis.BlockingConnectionPool(connection_class=connection_class, max_connections=max_connections,
                                        timeout=POOL_WAIT_SECONDS, **connection_kwargs)


class _OncePipeline(redis.client.Pipeline):
    def execute(self, raise_on_error: bool = True):
        if not (self.transaction or self.explicit_transaction):
            return super().execute(raise_on_error)
        conn = self.connection or self.connection_pool.get_connection()
        self.connection = conn
        saved, conn.retry = conn.retry, Retry(NoBackoff(), 0)
        try:
            return super().execute(raise_on_error)
        finally:
            conn.retry = saved


class OnceTransactions(redis.Redis):
    """A client whose MULTI/EXEC pipelines are sent once.

    redis-py re-sends a whole transaction after a connection error; when the first one had been
    applied and only its reply was lost (Redis stopping, a network cut), every write in it (a
    transcript entry, a step record) would land twice. The engine's own retries are fenced instead
    (workflows.resilience): a commit that did land is recognised and not applied again.
    Single commands keep redis-py's retries.
    """

    def pipeline(self, transaction: bool = True, shard_hint=None) -> redis.client.Pipeline:
        return _OncePipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)


def tls_options(url: str, ca_file: str | os.PathLike | None = None) -> dict[str, str] | None:
    """The TLS settings of a ``rediss://`` URL (None for ``redis://``).

    The server's certificate is verified unless the URL's ``ssl_cert_reqs`` says
    otherwise (``none`` or ``optional``); ``ssl_ca_certs`` (or ``ca_file``) names
    the CA that signed it, else the system's CAs are used.

    Raises:
        ValueError: ``ssl_cert_reqs`` is not one of required, optional, none.
    """
    if urlsplit(url).scheme != "rediss":
        return None
    query = {k: v for k, v in parse_qsl(urlsplit(url).query) if k in TLS_QUERY_KEYS}
    reqs = query.pop("ssl_cert_reqs", "required").lower().removeprefix("cert_")
    if reqs not in CERT_REQS:
        raise ValueError(f"ssl_cert_reqs={reqs!r} in the Redis URL is not one of {', '.join(CERT_REQS)}")
    options = {"ssl_cert_reqs": reqs, **query}
    if ca_file and "ssl_ca_certs" not in options:
        options["ssl_ca_certs"] = str(ca_file)
    return options


def without_tls_query(url: str) -> str:
    """``url`` without the TLS options of its query (they are passed as arguments instead)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k not in TLS_QUERY_KEYS]
    return urlunsplit(parts._replace(query=urlencode(query)))
