"""Redis clients: the one place that turns a Redis URL into a client (of the store, a lock, a library).

``redis://user:pass@``, ``redis://:pass@`` and ``rediss://`` (TLS) URLs work the same for the CLI, the
workers' store, the team server's live streams and the Celery broker (:func:`tls_options` feeds
``broker_use_ssl``). Nothing outside the store modules builds a Redis client or imports redis-py.
"""

from __future__ import annotations

import inspect
import os
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from workflows.models.valid_text import REPAIR_ERRORS

#: With every connection in use, a caller waits this long for one (then a ConnectionError, retried
#: like any Redis error) instead of failing at once with MaxConnectionsError.
POOL_WAIT_SECONDS = 20.0

#: TLS settings a ``rediss://`` URL may carry in its query (redis-py's and kombu's names).
TLS_QUERY_KEYS = ("ssl_cert_reqs", "ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
CERT_REQS = ("required", "optional", "none")


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
#: of a write (workflows/models/valid_text.py).
CLIENT_DEFAULTS = {**NO_SETINFO, "encoding_errors": REPAIR_ERRORS}


def blocking_pool(connection_class, max_connections: int, **connection_kwargs) -> redis.BlockingConnectionPool:
    return redis.BlockingConnectionPool(connection_class=connection_class, max_connections=max_connections,
                                        timeout=POOL_WAIT_SECONDS, **connection_kwargs)


#: A pipeline (or a commit's recorder, which has the same command methods) that a store verb writes on.
Pipe = redis.client.Pipeline


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
    (workflows.store.resilience): a commit that did land is recognised and not applied again.
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
