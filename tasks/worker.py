"""Starting workers: a real ``celery worker`` process, or one inside the CLI's process.

Either way the worker registers only once its Celery consumer runs (a CLI that
sees it registered can count on it), records each step message it takes from a
queue (so the reaper can send it again at once if the worker dies before
claiming it), and keeps the state machine library's INFO chatter out of its log.
"""

from __future__ import annotations

import gc
import logging
import os
import secrets
import socket
import threading
import time
import warnings
from typing import Callable

from celery import signals
from celery.exceptions import CPendingDeprecationWarning

from demo import PROVIDER as _SCRIPTED  # noqa: F401  (registers the scripted models: workers run them too)
from tasks import runtime
from tasks.app import QUEUES, app, configure_here
from tasks.housekeeper import Housekeeper
from workflows import shells
from workflows.commit.kinds import STEP_TASKS
from workflows.mcp.pool import close_all as close_mcp
from workflows.permissions.sandbox import warn_if_unavailable

log = logging.getLogger(__name__)

_sandbox_checked = threading.Event()
#: Queues whose steps call the model (their workers import the SDK before they take any).
MODEL_QUEUES = frozenset({"model", "memory"})
#: A command's in-process worker keeps these to errors: its user follows a session, and the command
#: says itself what that session waits for; another session's recovery is the workers' log's business.
EMBEDDED_QUIET = ("tasks.reaper", "tasks.liveness", "tasks.steps", "workflows.store.resilience", "workflows.steps.run",
                  "workflows.steps.model_call")


def check_sandbox() -> None:
    """Once per process: warn if Bash commands should be sandboxed but bwrap is missing or broken."""
    if not _sandbox_checked.is_set():
        _sandbox_checked.set()
        warn_if_unavailable()


def worker_name(prefix: str = "mainsail") -> str:
    """The Celery node name: ``mainsail-PID@HOST``."""
    return f"{prefix}-{os.getpid()}@{socket.gethostname()}"


def registry_name(node: str) -> str:
    """The name a worker registers under: its node name and a random part, unique per start (a worker
    restarted with the same pid and host, as in a container, must not pass for the one that died)."""
    return f"{node}#{secrets.token_hex(3)}"


def quiet_libraries() -> None:
    """Keep workers' logs to what matters: not the state machine library's INFO line per transition,
    nor httpx's per request, nor Celery's warning, at every broker reconnection, that it does not
    cancel running tasks (which is what Mainsail wants: a running step rides out the outage and its
    commit is fenced)."""
    logging.getLogger("transitions").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per model call, nothing a reader needs
    warnings.filterwarnings("ignore", category=CPendingDeprecationWarning, module=r"celery\.worker\.consumer")


#: A worker's garbage collector, once it started: its first generation collected after this many new
#: objects (CPython's default, 700, runs it every few hundred allocations: several times per step).
GC_THRESHOLDS = (20_000, 20, 20)


def settle_heap(sender=None, **_) -> None:
    """As a worker starts (Celery's ``worker_init``: set up, no pool yet, no step running): move what the
    process built starting up (~280,000 objects: modules, pydantic schemas, the SDK) out of the
    collector's sight, and collect less often.

    Every collection of the older generations walked all of them, for nothing: they live as long as the
    process. With them frozen and the first generation's threshold raised, a worker spends ~10% less CPU
    per agent step (bench/step_overhead.py: 4.6 -> 4.0 ms). Garbage that is not in a cycle is freed at
    once as ever; cycles wait at most ~20,000 allocations. A prefork pool's children, forked after this,
    inherit the frozen heap untouched (copy-on-write pages stay shared) and the thresholds.
    """
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def _note_taken(sender=None, request=None, **_) -> None:
    """``task_received``: record that this worker took a step's message (before it can claim it)."""
    name = runtime.worker_name()
    if not name or request is None or request.name not in STEP_TASKS:
        return
    try:
        sid, step_id = request.args[:2]
        runtime.engine().store.workers.note_taken(name, sid, step_id)
    except Exception as exc:  # the step's lease or pickup deadline still covers it
        log.warning("could not record step message %s as taken (%s)", request.id, exc)


def track_taken_messages() -> None:
    signals.task_received.connect(_note_taken, weak=False, dispatch_uid="mainsail-note-taken")


def preload(queues: list[str]) -> None:
    """Import what a worker serving ``queues`` runs, before it registers (a supervisor does it once for
    all its children). A model worker's first step would otherwise import the SDK (a second of CPU), all
    its threads' first calls waiting behind it."""
    import tasks.schedules  # noqa: F401  (the modules Celery's worker imports: tasks.app's include)
    import tasks.steps  # noqa: F401
    from workflows.models import build_schemas

    build_schemas()  # (the record models build their schemas on first use: here, once, not in a step)
    if MODEL_QUEUES & set(queues):
        import anthropic  # noqa: F401
        import anthropic.lib.streaming  # noqa: F401


def run_worker(queues: list[str], concurrency: int, pool: str, loglevel: str = "INFO", prefetch: int = 1) -> None:
    """Run a Celery worker in this process until it is told to stop (blocks). ``prefetch``: messages
    it reserves per task slot (Celery's prefetch multiplier)."""
    configure_here()  # (the command connected without Celery: tasks/dispatch.py)
    node = worker_name()
    name = registry_name(node)
    check_sandbox()
    quiet_libraries()
    preload(queues)
    runtime.set_concurrency(concurrency)
    runtime.set_worker_name(name)
    runtime.set_queues(queues)
    track_taken_messages()
    keeper = Housekeeper(runtime.engine(), name, queues)

    def ready(sender=None, **_) -> None:
        keeper.start()

    signals.worker_ready.connect(ready, weak=False, dispatch_uid="mainsail-worker-ready")
    signals.worker_init.connect(settle_heap, weak=False, dispatch_uid="mainsail-settle-heap")
    try:
        w = app.Worker(
            hostname=node,
            queues=queues,
            concurrency=concurrency,
            pool=pool,
            loglevel=loglevel,
            without_mingle=True,
            without_gossip=True,
            without_heartbeat=True,
            optimization="fair",
            prefetch_multiplier=prefetch,
        )
        w.start()
        code = getattr(w, "exitcode", 0) or 0
    finally:
        shells.shutdown()  # its background shells cannot outlive it: they are stopped, and recorded lost
        keeper.stop()
        close_mcp()
    if code:
        raise SystemExit(code)


class InProcessWorker:
    """A Celery worker on a daemon thread of this process (threads pool), with housekeeping.

    :meth:`stop` hands over instead of shutting Celery down (which can take seconds, or hang on a
    broker read): it takes no new step, lets the running ones finish, leaves the registry and sends
    back what it took but did not start. The process then exits without waiting for Celery's threads.
    """

    def __init__(self, queues: list[str] | None = None, concurrency: int = 8, in_process_redis: bool = False) -> None:
        """``in_process_redis``: Redis is the CLI's own fakeredis server (no INFO; it never restarts)."""
        from celery.worker import WorkController

        configure_here()  # (the command connected without Celery: tasks/dispatch.py)

        self.queues = list(queues or QUEUES)
        node = worker_name("embedded")
        self.name = registry_name(node)
        runtime.set_concurrency(concurrency)
        runtime.set_worker_name(self.name)
        runtime.set_queues(self.queues)
        runtime.stop_draining()
        track_taken_messages()
        self.ready = threading.Event()
        self.keeper = Housekeeper(runtime.engine(), self.name, self.queues, check_restarts=not in_process_redis)
        self.controller = WorkController(
            app=app,
            hostname=node,
            queues=self.queues,
            concurrency=concurrency,
            pool="threads",
            loglevel="WARNING",
            without_mingle=True,
            without_gossip=True,
            without_heartbeat=True,
            ready_callback=self._on_ready,
        )
        self.thread = threading.Thread(target=self.controller.start, name="mainsail-worker", daemon=True)

    def _on_ready(self, consumer) -> None:
        self.keeper.start()
        self.ready.set()

    def start(self) -> "InProcessWorker":
        check_sandbox()
        quiet_libraries()
        for name in EMBEDDED_QUIET:
            logging.getLogger(name).setLevel(logging.ERROR)
        self.thread.start()
        return self

    def _stop_consuming(self, timeout: float = 2.0) -> None:
        """Cancel the consumer in its own thread (through Celery's event loop), so that no message is
        taken from now on; one already on its way is put back in its queue by kombu."""
        consumer, hub = getattr(self.controller, "consumer", None), getattr(self.controller, "hub", None)
        if consumer is None or hub is None or not self.ready.is_set():
            return
        done = threading.Event()

        def cancel() -> None:
            try:
                if consumer.task_consumer is not None:
                    consumer.task_consumer.cancel()
            except Exception as exc:  # draining still hands back whatever arrives
                log.warning("could not stop taking messages: %s", exc)
            finally:
                done.set()

        hub.call_soon(cancel)
        done.wait(timeout)

    def stop(self, on_wait: Callable[[dict[str, float]], None] | None = None, *, shutdown: bool = False) -> None:
        """Hand over and stop (see the class docstring).

        Args:
            on_wait: called once, with the running steps (``sid/step`` -> start), if they take over a
                second to finish. Ctrl-C while waiting leaves at once: they are then taken back as a
                dead worker's would be (run again elsewhere, or of unknown outcome for a command).
            shutdown: also stop Celery's threads (for a process that goes on, such as a test).
        """
        runtime.start_draining()
        self._stop_consuming()
        try:
            started = time.monotonic()
            told = False
            while runtime.running_steps():
                if not told and on_wait and time.monotonic() - started > 1.0:
                    on_wait(runtime.running_steps())
                    told = True
                time.sleep(0.05)
        finally:
            shells.shutdown()
            self.keeper.stop()
            close_mcp()
            runtime.set_worker_name(None)
            if shutdown:
                try:
                    self.controller.stop(in_sighandler=False)
                except Exception:
                    pass
                self.thread.join(10)
                # The worker told Celery this process runs tasks (a result's get() would block one); the
                # process goes on without it, as Celery's own test worker leaves it.
                from celery._state import _set_task_join_will_block

                _set_task_join_will_block(False)
