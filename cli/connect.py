"""Finding Redis, so that a newcomer's first command just works, and the :class:`Runtime` a command holds.

Redis, in order: ``MAINSAIL_REDIS_URL`` (must answer), a Redis on
``MAINSAIL_LOCAL_REDIS_URL`` when it is set, the embedded server
this machine started before (its URL, with its password, is kept under the
data dir, readable by this user only), a new private ``redis-server`` (AOF on,
a random password, bound to 127.0.0.1, data under the data dir: cli/embedded_redis.py), and,
without the binary, an in-process fakeredis server (cli/in_process.py), with a warning that
nothing survives.
Whatever answers on localhost:6379 is not tried unless named: it is some other application's
Redis, often without a password. A command using a Redis other than ``MAINSAIL_REDIS_URL``
says which on stderr (:func:`cli.redis_probe.say_which`).

Any URL may carry credentials (``redis://user:pass@host:port/db``,
``redis://:pass@...``) or ask for TLS (``rediss://``); a URL shown in a message
never shows its password (:func:`cli.redis_probe.mask_url`).

Workers: if no registered worker serves the queues a session needs, now or at any
moment while the command waits, one runs inside the CLI's process
(:func:`cli.standby.ensure_worker`); :meth:`Runtime.close` lets it hand over.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from cli.embedded_redis import embedded, embedded_url_file, read_embedded_url
from cli.redis_probe import answer, mask_url, redis_error, say_which
from workflows.settings import Settings
from workflows.store.redis_store import Store

if TYPE_CHECKING:
    from workflows.engine import Engine


def configured_url(settings: Settings) -> str:
    """MAINSAIL_REDIS_URL, once it answers.

    Raises:
        StoreUnavailable: it does not answer.
        ConfigurationError: it is invalid, or Redis refused its credentials.
    """
    problem = answer(settings.redis_url, settings.redis_ca_file, timeout=2.0, budget=settings.redis_retry_seconds)
    if problem:
        raise redis_error(settings.redis_url, problem)
    return settings.redis_url


def resolve_redis_url(settings: Settings) -> str:
    """The Redis URL to use, starting an embedded server when nothing else answers.

    Raises:
        StoreUnavailable: MAINSAIL_REDIS_URL is set but does not answer.
        ConfigurationError: MAINSAIL_REDIS_URL is invalid, or Redis refused its credentials.
    """
    if settings.redis_url:
        return configured_url(settings)
    why = None
    if settings.local_redis_url:
        problem = answer(settings.local_redis_url, settings.redis_ca_file, timeout=0.3,
                         budget=settings.redis_retry_seconds)
        if problem is None:
            return say_which(settings.local_redis_url, "MAINSAIL_LOCAL_REDIS_URL")
        # Something answers there but refuses us: say why, in case that Redis was meant.
        why = None if problem.kind == "unreachable" else str(redis_error(settings.local_redis_url, problem,
                                                                         "MAINSAIL_REDIS_URL"))
    return embedded(settings, why)


class Runtime:
    """What a command holds: the Redis URL, the store, and the engine, built when first asked for (a command
    that only reads never loads the engine's modules: tools, permissions, commits)."""

    def __init__(self, url: str, engine: Engine | None = None, *, settings: Settings | None = None) -> None:
        self.url = url
        self.given_engine = engine
        self.settings = settings  # (for the engine built later)
        self.worker: object | None = None  # this command's in-process worker (tasks.worker.InProcessWorker)
        self.standby: object | None = None  # cli.standby.Standby, once a command waits on sessions

    @property
    def engine(self) -> Engine:
        if self.given_engine is None:
            from tasks import runtime

            self.given_engine = runtime.engine(self.settings)
        return self.given_engine

    @property
    def masked_url(self) -> str:
        """The URL to show: its password, if any, masked."""
        return mask_url(self.url)

    @property
    def store(self) -> Store:
        if self.given_engine is not None:
            return self.given_engine.store
        from tasks import runtime

        return runtime.store(self.settings)

    def close(self) -> None:
        """Stop checking for workers; an in-process worker hands over (cli.in_process.hand_over)."""
        if self.standby is not None:
            self.standby.stop()
            self.standby = None
        if self.worker is not None:
            from cli.in_process import hand_over

            worker, self.worker = self.worker, None
            hand_over(worker)


def connect(settings: Settings) -> Runtime:
    """Resolve Redis, point the task runtime at it, and return the engine (Celery stays unloaded: a command sends
    without it, tasks/send.py; a worker or a beat configures it, tasks.app.configure_here)."""
    from tasks import runtime

    url = resolve_redis_url(settings)
    runtime.set_redis_url(url)  # (Celery is configured only where a worker or a beat runs: tasks.app.configure_here)
    engine = runtime.engine(settings)
    engine.store.ping()
    return Runtime(url=url, engine=engine)


def existing_redis_url(settings: Settings) -> str | None:
    """The Redis a Mainsail server here already uses, found without starting one (for read-only commands).

    Same order as :func:`resolve_redis_url`, minus the starting: MAINSAIL_REDIS_URL, the local URL,
    the embedded server started earlier if it still answers. None: nothing is running here.

    Raises:
        StoreUnavailable: MAINSAIL_REDIS_URL is set but does not answer.
        ConfigurationError: MAINSAIL_REDIS_URL is invalid, or Redis refused its credentials.
    """
    if settings.redis_url:
        return configured_url(settings)
    budget = settings.redis_retry_seconds
    if settings.local_redis_url and answer(settings.local_redis_url, settings.redis_ca_file, timeout=0.3,
                                           budget=budget) is None:
        return say_which(settings.local_redis_url, "MAINSAIL_LOCAL_REDIS_URL")
    embedded = read_embedded_url(settings)
    if embedded and answer(embedded, timeout=0.5, budget=budget) is None:
        return say_which(embedded, f"the embedded Redis (data in {embedded_url_file(settings).parent})")
    return None


def connect_existing(settings: Settings) -> Runtime | None:
    """Like :func:`connect`, but never starts a Redis (nor a worker): None when no server runs here. Its
    sends, if the command makes any, go without Celery (tasks/dispatch.py)."""
    from tasks import runtime

    url = existing_redis_url(settings)
    if url is None:
        return None
    runtime.set_redis_url(url)  # (its sends, if any, go without Celery: tasks/dispatch.py)
    rt = Runtime(url, settings=settings)  # (its engine is built if the command asks for it)
    rt.store.ping()
    return rt


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")
