"""Per-process singletons the tasks need: settings, Redis client, store, engine.

Also the one place that turns a Redis URL into a client, so ``redis://user:pass@``,
``redis://:pass@`` and ``rediss://`` (TLS) URLs work the same for the CLI, the
workers' store and the Celery broker (:func:`tls_options` feeds ``broker_use_ssl``).
"""

from __future__ import annotations

import os
import threading
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from workflows.engine import Engine
from workflows.settings import Settings, get_settings
from workflows.store import Store

_lock = threading.Lock()
_redis_url: str | None = None
_engine: Engine | None = None

#: TLS settings a ``rediss://`` URL may carry in its query (redis-py's and kombu's names).
TLS_QUERY_KEYS = ("ssl_cert_reqs", "ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
CERT_REQS = ("required", "optional", "none")


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
            client = redis_client(url, s.redis_ca_file, health_check_interval=30, socket_keepalive=True)
            store = Store(client, lock_timeout=s.lock_timeout_seconds, lock_wait=s.lock_wait_seconds)
            _engine = Engine(store, s)
        return _engine


def redis_client(url: str, ca_file: str | os.PathLike | None = None, **kwargs) -> redis.Redis:
    """A client for ``url``; for ``rediss://``, TLS verified as :func:`tls_options` says.

    Args:
        url: ``redis://[[user]:password@]host:port/db`` or ``rediss://...`` (query may hold TLS options).
        ca_file: CA certificates (PEM) for a ``rediss://`` server, unless the URL names ``ssl_ca_certs``.
        **kwargs: passed to :meth:`redis.Redis.from_url` (timeouts, keepalive).
    """
    options = tls_options(url, ca_file)
    return redis.Redis.from_url(without_tls_query(url), **kwargs, **(options or {}))


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
