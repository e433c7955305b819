"""The reaper and the worker's housekeeping thread.

The reaper also denies permission requests whose approval timeout passed: the
deadline lives in Redis (``mainsail:approvals``), not in a Celery countdown,
so it holds across restarts of every process.

Every worker runs a :class:`Housekeeper`: it keeps the worker's registration
fresh (so a CLI can tell whether anyone serves a queue) and, one instance at a
time across all workers (a Redis lock), sweeps the lease set for steps whose
worker died or which nobody picked up, and dispatches them again.
"""

from __future__ import annotations

import logging
import threading

from redis.exceptions import LockError
from redis.exceptions import RedisError

from tasks import runtime
from tasks.app import app
from tasks.dispatch import dispatch
from workflows import keys
from workflows.engine import Engine

log = logging.getLogger(__name__)

REGISTRATION_INTERVAL = 2.0


def sweep_once(engine: Engine) -> int:
    """Re-dispatch due steps, if no other reaper is sweeping now. Returns how many."""
    lk = engine.store.r.lock(keys.reaper_lock(), timeout=60, blocking=False)
    if not lk.acquire(blocking=False):
        return 0
    try:
        steps = engine.reap()
        steps += engine.expire_approvals()
        dispatch(steps)
        return len(steps)
    finally:
        try:
            lk.release()
        except LockError:
            pass


@app.task(name="mainsail.reaper.sweep")
def sweep() -> int:
    """One sweep, for operators (`mainsail reap`) and schedulers."""
    return sweep_once(runtime.engine())


class Housekeeper(threading.Thread):
    """Registers a worker and runs the reaper periodically until stopped."""

    def __init__(self, engine: Engine, name: str, queues: list[str]) -> None:
        super().__init__(name="mainsail-housekeeper", daemon=True)
        self.engine = engine
        self.worker_name = name
        self.queues = list(queues)
        self._stop_event = threading.Event()

    def run(self) -> None:
        interval = min(REGISTRATION_INTERVAL, self.engine.settings.reaper_interval_seconds)
        since_sweep = 0.0
        while True:
            try:
                self.engine.store.register_worker(self.worker_name, self.queues, ttl=interval * 3)
                since_sweep += interval
                if since_sweep >= self.engine.settings.reaper_interval_seconds:
                    since_sweep = 0.0
                    n = sweep_once(self.engine)
                    if n:
                        log.warning("reaper re-dispatched %d step(s)", n)
            except RedisError:
                log.warning("housekeeping could not reach Redis; retrying", exc_info=True)
            except Exception:
                log.exception("housekeeping failed; retrying")
            if self._stop_event.wait(interval):
                break

    def stop(self) -> None:
        self._stop_event.set()
        try:
            self.engine.store.unregister_worker(self.worker_name)
        except RedisError:
            pass
