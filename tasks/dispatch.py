"""Send the steps a commit returned to their queues.

Publishing rides out a Redis outage: kombu retries it (reconnecting) for about
``redis_retry_seconds``, waiting at most a second between tries, so a step's
follow-ups go out within a second of Redis coming back. A message sent twice
(the first one's reply lost) is harmless: the second delivery is a no-op at claim.
"""

from __future__ import annotations

import math
import threading

from tasks import notify as _notify  # noqa: F401 (a process that dispatches notifies: tasks/notify.py)
from tasks.app import app, queue_key
from workflows.commit.kinds import task_for
from workflows.exceptions import ConfigurationError
from workflows.models import StepRecord
from workflows.settings import get_settings

#: A step taken back is looked for among the newest SEARCH_NEWEST + 1 messages of its queue.
SEARCH_NEWEST = 50

RETRY_START = 0.05
RETRY_STEP = 0.25
RETRY_MAX = 1.0


def retry_policy(budget: float) -> dict:
    """kombu's publish retry policy for about ``budget`` seconds of retrying."""
    return {"max_retries": max(3, math.ceil(budget / RETRY_MAX) + 4), "interval_start": RETRY_START,
            "interval_step": RETRY_STEP, "interval_max": RETRY_MAX}


#: How long a send waits for :func:`prepare`'s warm-up before it goes ahead on its own.
WARM_WAIT_SECONDS = 5.0

_warming: threading.Thread | None = None
_warming_lock = threading.Lock()


def prepare() -> None:
    """Get this process's first send ready in the background (call early in a command that will dispatch).

    A process's first ``send_task`` pays ~25-45 ms once: kombu's Redis transport imported, the task
    sender made, the producer pool and its connection made, the ``model`` queue declared. In a
    short-lived command (``mainsail run``, ``submit``) that cost fell between the prompt's commit and
    its step reaching a worker; done here, it overlaps the command's own set-up (Redis round trips, a ``git`` subprocess),
    and :func:`dispatch` waits for it to finish before it sends. A failure is ignored: the send then
    does the work itself, with its retries.
    """
    global _warming
    with _warming_lock:
        if _warming is not None:
            return
        _warming = threading.Thread(target=_warm, name="mainsail-dispatch-warm-up", daemon=True)
        _warming.start()


def _warm() -> None:
    if not app.conf.broker_url:  # (dispatch says why; never warm up Celery's default broker)
        return
    try:
        app.amqp.send_task_message  # noqa: B018 (the task sender and its event dispatcher)
        with app.producer_or_acquire() as producer:  # connects, and declares the queue a prompt goes to
            producer.maybe_declare(app.amqp.queues["model"])
    except Exception:  # Redis down, say: the send itself reconnects and retries
        pass


def dispatch(steps: list[StepRecord]) -> None:
    """Send ``steps`` to their queues on the broker :func:`tasks.app.configure` named.

    Raises:
        ConfigurationError: this process never configured the broker (Celery would fall back to its
            default, an AMQP server on localhost: the steps would go where no worker of this
            Mainsail reads them, and into someone else's server).
    """
    if not steps:
        return
    if not app.conf.broker_url:
        raise ConfigurationError("No broker is configured in this process (tasks.app.configure was never called): "
                                 f"{len(steps)} step(s) not sent. This is a bug in Mainsail; rerun with "
                                 "MAINSAIL_DEBUG=1 to see where it happened.")
    if _warming is not None and _warming.is_alive():
        _warming.join(WARM_WAIT_SECONDS)  # (a warm-up stuck on a Redis that is away: the send retries itself)
    policy = retry_policy(get_settings().redis_retry_seconds)
    for step in steps:
        app.send_task(task_for(step.kind), args=[step.session_id, step.id], queue=step.queue,
                      retry=True, retry_policy=policy, ignore_result=True, result_cls=_Sent, add_to_parent=False)


class _Sent:
    """What ``send_task`` returns for a step: not an ``AsyncResult``, which nothing here reads and whose
    making resolves the app's result backend (per thread in Celery: an entry-point scan and an import
    in each new thread that sends)."""

    __slots__ = ("id", "ignored")

    def __init__(self, task_id: str) -> None:
        self.id = task_id
        self.ignored = True


def dispatch_first(steps: list[StepRecord]) -> None:
    """Send steps taken back from a dead worker (or found lost) to the front of their queues.

    They already waited their turn once: a recovered step must not queue again behind every step
    sent since. kombu pushes at the end of the list consumed last; the message is then moved to the
    end consumed first (as kombu itself does when it restores unacknowledged messages). If a worker
    took it meanwhile, there is nothing to move.
    """
    dispatch(steps)
    if not steps:
        return
    from tasks import runtime

    store = runtime.engine().store
    for step in steps:
        try:
            store.move_to_front(queue_key(step.queue), step.id, SEARCH_NEWEST)
        except Exception:  # it is queued all the same, only later
            pass
