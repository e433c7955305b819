"""Starting workers: a real ``celery worker`` process, or one inside the CLI's process."""

from __future__ import annotations

import os
import socket
import threading

from tasks import runtime
from tasks.app import QUEUES, app
from tasks.reaper import Housekeeper
from workflows.permissions.sandbox import warn_if_unavailable

_sandbox_checked = threading.Event()


def check_sandbox() -> None:
    """Once per process: warn if Bash commands should be sandboxed but bwrap is missing or broken."""
    if not _sandbox_checked.is_set():
        _sandbox_checked.set()
        warn_if_unavailable()


def worker_name(prefix: str = "mainsail") -> str:
    return f"{prefix}-{os.getpid()}@{socket.gethostname()}"


def run_worker(queues: list[str], concurrency: int, pool: str, loglevel: str = "INFO") -> None:
    """Run a Celery worker in this process until it is told to stop (blocks)."""
    name = worker_name()
    check_sandbox()
    keeper = Housekeeper(runtime.engine(), name, queues)
    keeper.start()
    try:
        w = app.Worker(
            hostname=name,
            queues=queues,
            concurrency=concurrency,
            pool=pool,
            loglevel=loglevel,
            without_mingle=True,
            without_gossip=True,
            without_heartbeat=True,
            optimization="fair",
        )
        w.start()
        code = getattr(w, "exitcode", 0) or 0
    finally:
        keeper.stop()
    if code:
        raise SystemExit(code)


class InProcessWorker:
    """A Celery worker on a daemon thread of this process (threads pool), with housekeeping."""

    def __init__(self, queues: list[str] | None = None, concurrency: int = 8) -> None:
        from celery.worker import WorkController

        self.queues = list(queues or QUEUES)
        self.name = worker_name("embedded")
        self.controller = WorkController(
            app=app,
            hostname=self.name,
            queues=self.queues,
            concurrency=concurrency,
            pool="threads",
            loglevel="WARNING",
            without_mingle=True,
            without_gossip=True,
            without_heartbeat=True,
            ready_callback=None,
        )
        self.thread = threading.Thread(target=self.controller.start, name="mainsail-worker", daemon=True)
        self.keeper = Housekeeper(runtime.engine(), self.name, self.queues)

    def start(self) -> "InProcessWorker":
        check_sandbox()
        self.thread.start()
        self.keeper.start()
        return self

    def stop(self) -> None:
        self.keeper.stop()
        try:
            self.controller.stop(in_sighandler=False)
        except Exception:
            pass
        self.thread.join(5)
