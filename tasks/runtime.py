"""Per-process singletons the tasks need: settings, Redis client, store, engine, and the worker's
own state (its registered name, the steps it runs now, whether it is draining before it stops).

Clients are made by :mod:`workflows.store.client` (its makers are importable from here too, for the
CLI and the Celery configuration).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from workflows.settings import Settings, get_settings

# (async_redis_client, tls_options and without_tls_query: for the CLI and the Celery configuration)
from workflows.store.client import async_redis_client, redis_client, tls_options, without_tls_query  # noqa: F401
from workflows.store.redis_store import Store

if TYPE_CHECKING:
    from workflows.engine import Engine

_lock = threading.Lock()
_redis_url: str | None = None
_engine: Engine | None = None
#: Each is called with this process's engine when it is built: tasks/notify.py registers the sender of the
#: notifications its commits record (imported by the worker's app and by tasks/dispatch.py, so every process
#: that commits and dispatches sends them).
_setups: list = []
_store: tuple[str, Store] | None = None  # (its URL, the store): the engine's, or one built before it
_worker: str | None = None
_draining = threading.Event()
_running: dict[str, float] = {}  # "sid/step" -> monotonic start, for the steps this process runs now
_queues: frozenset[str] = frozenset()  # the queues this process's worker consumes
_concurrency = 0  # steps this process may run at once (0: not a worker)
#: Celery's app points at :data:`_redis_url` (tasks.app.configure): the process sends through Celery. A command
#: that only sends never configures it, and sends without loading Celery (tasks/dispatch.py).
_celery = False

#: Connections past the worker's concurrency: the lease keeper, the reaper, the consumer's
#: note of each message taken, the retention gc.
POOL_MARGIN = 8
#: Connections of a process that is not a worker (a CLI command, a test).
DEFAULT_POOL = 64

def set_redis_url(url: str) -> None:
    global _redis_url, _engine, _store, _celery
    with _lock:
        _redis_url = url
        _engine = _store = None
        _celery = False  # (Celery's app still points at the previous URL, if at any: tasks.app.configure again)


def mark_celery() -> None:
    """Celery's app now points at this process's Redis (called by :func:`tasks.app.configure`)."""
    global _celery
    _celery = True


def celery_configured() -> bool:
    """Whether this process sends through Celery (it configured the app: a worker, a beat, a test)."""
    return _celery


def current_url() -> str:
    """The Redis URL this process was configured with (:func:`tasks.app.configure`)."""
    url = _redis_url or get_settings().redis_url
    if not url:
        raise RuntimeError("tasks.app.configure(redis_url) was not called")
    return url


def engine(settings: Settings | None = None) -> Engine:
    """The process's engine, built on first use from the configured Redis URL (on :func:`store`'s store)."""
    global _engine
    with _lock:
        if _engine is None:
            from workflows.engine import Engine  # (here: a command that only reads needs the store alone)

            _engine = Engine(_own_store(settings), settings or get_settings())
            for setup in _setups:
                setup(_engine)
        return _engine


def on_engine(setup) -> None:
    """Call ``setup(engine)`` with this process's engine, built now or later."""
    with _lock:
        _setups.append(setup)
        if _engine is not None:
            setup(_engine)


def store(settings: Settings | None = None) -> Store:
    """The process's store: the engine's, or built on first use without the engine (``mainsail sessions``,
    ``show`` and ``pending`` read with it and never load the engine's modules)."""
    with _lock:
        return _engine.store if _engine is not None else _own_store(settings)


def _own_store(settings: Settings | None) -> Store:
    """The store for the configured URL, built if there is none yet (call with ``_lock`` held)."""
    global _store
    s = settings or get_settings()
    url = _redis_url or s.redis_url
    if not url:
        raise RuntimeError("tasks.app.configure(redis_url) was not called")
    if _store is not None and _store[0] == url:
        return _store[1]
    client = redis_client(url, s.redis_ca_file, health_check_interval=30, socket_keepalive=True,
                          once_transactions=True, max_connections=pool_size())
    built = Store(client, lock_timeout=s.lock_timeout_seconds, lock_wait=s.lock_wait_seconds,
                  durable_claims=s.durable_claims)
    built.lock_owner = _worker
    built.keep_transcripts(2 * _concurrency)
    from workflows.store.metrics import TALLY

    TALLY.bind(client)  # this process's counts reach Redis every few seconds (workflows/store/metrics.py)
    _store = (url, built)
    return built


def set_concurrency(threads: int) -> None:
    """This process runs up to ``threads`` steps at once: its engine's Redis pool holds that many
    connections and a margin (an engine built before gets a pool of that size now), and it keeps the
    transcripts of twice as many sessions."""
    global _concurrency
    with _lock:
        _concurrency = threads
        if (built := _built_store()) is not None:
            built.keep_transcripts(2 * threads)  # a transcript per step it may run, and some
            built.widen_pool(pool_size())


def _built_store() -> Store | None:
    """The store built so far (the engine's, or one without it), if any."""
    return _engine.store if _engine is not None else _store[1] if _store is not None else None


def pool_size() -> int:
    """Connections of this process's engine client: one per step it may run at once, and a margin."""
    return _concurrency + POOL_MARGIN if _concurrency else DEFAULT_POOL


# ---------------------------------------------------------------------------- this worker


def set_worker_name(name: str | None) -> None:
    """This process now runs worker ``name`` (its registry name): its claims and locks carry it."""
    global _worker
    with _lock:
        _worker = name
        if (built := _built_store()) is not None:
            built.lock_owner = name


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

