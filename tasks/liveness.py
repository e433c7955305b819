"""A worker's liveness: its registration, refreshed every ``worker_heartbeat_seconds``.

The :class:`Beacon` runs on a thread and a Redis client of its own (with short
socket timeouts), so no step, sweep or lock wait of the worker can delay it: if
the registration expires, the worker really stopped, or lost Redis.

:class:`Health` remembers since when this process has reached Redis without an
error. After a Redis outage (or a restart from the AOF) every registration may
have expired while its worker lived on; a reaper declares workers dead only once
it has itself been connected for three heartbeats (at least a second), by which
time every live worker has registered again.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time

from workflows.mcp.pool import running as mcp_running
from workflows.settings import Settings
from workflows.store.registry import Workers
from workflows.store.resilience import RedisError

log = logging.getLogger(__name__)


class Health:
    """Since when this process has reached Redis continuously (monotonic clock), and how many times
    it has come back after losing it (``recoveries``)."""

    def __init__(self) -> None:
        self._since: float | None = None
        self._lost = False
        self.recoveries = 0
        self._lock = threading.Lock()

    def ok(self) -> None:
        with self._lock:
            if self._since is None:
                self._since = time.monotonic()
                if self._lost:
                    self.recoveries += 1
                    self._lost = False

    def failed(self) -> None:
        with self._lock:
            self._since = None
            self._lost = True

    def steady_for(self) -> float:
        """Seconds of unbroken contact with Redis (0 while it is unreachable)."""
        with self._lock:
            return 0.0 if self._since is None else time.monotonic() - self._since


def registration_info(settings: Settings) -> dict[str, str]:
    """What a worker says about itself: pid, host, and whether it can call the model (never the key)."""
    return {"pid": str(os.getpid()), "host": socket.gethostname(),
            "api_key": "yes" if settings.anthropic_api_key else "no",
            "base_url": settings.anthropic_base_url or ""}


class Beacon(threading.Thread):
    """Keeps worker ``name``'s registration fresh until stopped.

    Args:
        workers: the registry, on a client of the beacon's own (short timeouts).
        name: the worker's registry name.
        queues: the queues it serves.
        settings: ``worker_heartbeat_seconds`` and ``worker_ttl_seconds``, and the credentials it reports.
        health: told of every success and failure.
    """

    def __init__(self, workers: Workers, name: str, queues: list[str], settings: Settings, health: Health) -> None:
        super().__init__(name="mainsail-beacon", daemon=True)
        self.workers = workers
        self.worker_name = name
        self.queues = list(queues)
        self.every = settings.worker_heartbeat_seconds
        self.ttl = settings.worker_ttl_seconds
        self.info = registration_info(settings)
        self.health = health
        self._stop_event = threading.Event()
        self._failing = False
        self._last_ok: float | None = None

    def beat(self) -> bool:
        """Register once now; False if Redis refused."""
        try:
            self.workers.register(self.worker_name, self.queues, self.ttl,
                                  {**self.info, "mcp_servers": str(mcp_running())})
            now = time.monotonic()
            if self._last_ok is not None and not self._failing and now - self._last_ok > self.ttl * 0.6:
                log.warning("worker %s refreshed its registration %.1fs after the last time (it expires after "
                            "%gs): this process is starved of CPU", self.worker_name, now - self._last_ok, self.ttl)
            self._last_ok = now
        except (RedisError, OSError) as exc:
            self.health.failed()
            if not self._failing:
                log.warning("worker %s cannot refresh its registration (%s); retrying every %gs",
                            self.worker_name, f"{type(exc).__name__}: {exc}".splitlines()[0][:200], self.every)
            self._failing = True
            return False
        self.health.ok()
        if self._failing:
            log.warning("worker %s reaches Redis again", self.worker_name)
        self._failing = False
        return True

    def run(self) -> None:
        while not self._stop_event.wait(self.every):
            self.beat()

    def stop(self) -> None:
        self._stop_event.set()
