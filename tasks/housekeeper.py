"""A worker's housekeeping: its liveness (the registration, the named connection) and its share of the
reaping (:mod:`tasks.reaper`), started once its Celery consumer runs and stopped last, handing back what it
still holds (:func:`retire`)."""

from __future__ import annotations

import logging

from tasks import runtime
from tasks.liveness import Beacon, Health, Tether, tether_name
from tasks.reaper import Reaper, take_back_worker
from workflows.engine import Engine
from workflows.store.registry import Workers
from workflows.store.resilience import RedisError

log = logging.getLogger(__name__)


class Housekeeper:
    """A worker's liveness and reaping: start it once the Celery consumer runs, stop it last."""

    def __init__(self, engine: Engine, name: str, queues: list[str], check_restarts: bool = True) -> None:
        s = engine.settings
        # The beacon's own client: only its thread uses it (a blocking pool: never MaxConnectionsError).
        client = runtime.redis_client(runtime.current_url(), s.redis_ca_file, max_connections=2,
                                      socket_timeout=max(0.2, s.worker_ttl_seconds / 3),
                                      socket_connect_timeout=max(0.2, s.worker_ttl_seconds / 3))
        self.engine = engine
        self.worker_name = name
        self.queues = list(queues)
        self.health = Health()
        # The named connection: a client of its own, each connection named as it connects.
        self.tether = Tether(Workers(runtime.redis_client(
            runtime.current_url(), s.redis_ca_file, client_name=tether_name(name),
            socket_timeout=Tether.BLOCK_SECONDS + 5, socket_connect_timeout=max(0.2, s.worker_ttl_seconds / 3))), name)
        self.beacon = Beacon(Workers(client), name, queues, s, self.health, self.tether)
        self.reaper = Reaper(engine, name, self.health, check_restarts, self.tether)
        self._started = False

    def start(self) -> None:
        """Register now, then keep the registration fresh and reap on threads of their own."""
        if self._started:
            return
        self._started = True
        self.tether.start()
        self.tether.settled.wait(max(0.2, self.engine.settings.worker_ttl_seconds / 3))
        self.beacon.beat()
        self.beacon.start()
        self.reaper.start()

    def stop(self) -> None:
        """Leave: stop the threads, then hand back what this worker still holds (see :func:`retire`)."""
        self.beacon.stop()
        self.reaper.stop()
        try:
            retire(self.engine, self.worker_name)
        except RedisError as exc:  # others take it back once the registration expires
            log.warning("worker %s could not hand back its steps (%s); the reaper will", self.worker_name, exc)
        self.tether.stop(self.beacon.workers)


def retire(engine: Engine, name: str) -> int:
    """Worker ``name`` stops: out of the registry at once, and every step it still holds taken back
    as a dead worker's would be (a message taken but not started goes back to its queue; a step still
    running here is run again elsewhere, or recorded as of unknown outcome). Returns how many steps."""
    engine.store.workers.retire(name)
    return take_back_worker(engine, name, name, verb="left")
