"""Sending one task message: through Celery in a process that runs it (a worker, a beat, one that called
:func:`tasks.app.configure`), otherwise as kombu would, with the store's own Redis client
(:mod:`tasks.message`): a command that only sends (``mainsail -p``, ``run``, ``approve``, ``send``, the team
server) never loads Celery.

Publishing rides out a Redis outage: kombu retries it (reconnecting) for about ``redis_retry_seconds``,
waiting at most a second between tries, and a send without Celery is retried the same way
(:func:`workflows.store.resilience.retrying`). A message sent twice (the first one's reply lost) is harmless:
the second delivery is a no-op at claim.
"""

from __future__ import annotations

import math

from tasks import runtime
from tasks.routes import queue_key, queue_of
from workflows.exceptions import ConfigurationError
from workflows.settings import get_settings

RETRY_START = 0.05
RETRY_STEP = 0.25
RETRY_MAX = 1.0


def retry_policy(budget: float) -> dict:
    """kombu's publish retry policy for about ``budget`` seconds of retrying."""
    return {"max_retries": max(3, math.ceil(budget / RETRY_MAX) + 4), "interval_start": RETRY_START,
            "interval_step": RETRY_STEP, "interval_max": RETRY_MAX}


def send_task(task: str, args: list[str], queue: str | None = None) -> None:
    """Send one task message (``queue``: its route's by default, :mod:`tasks.routes`): through Celery in a
    process that configured it, else as kombu would, with the store's client (:mod:`tasks.message`).

    Raises:
        ConfigurationError: this process never said which Redis it uses (Celery would fall back to its
            default, an AMQP server on localhost: the steps would go where no worker of this Mainsail reads
            them, and into someone else's server).
    """
    queue = queue or queue_of(task)
    settings = get_settings()
    budget = settings.redis_retry_seconds
    if settings.task_events and not runtime.celery_configured():  # (Flower's task-sent events are Celery's)
        from tasks.app import configure_here

        configure_here()
    if runtime.celery_configured():
        from tasks.app import app

        if not app.conf.broker_url:  # (Celery's default would be an AMQP server on localhost: someone else's)
            raise ConfigurationError(f"Celery's broker is not configured in this process: task {task} not sent. "
                                     "This is a bug in Mainsail; rerun with MAINSAIL_DEBUG=1 to see where it "
                                     "happened.")
        app.send_task(task, args=args, queue=queue, retry=True, retry_policy=retry_policy(budget),
                      ignore_result=True, result_cls=_Sent, add_to_parent=False)
        return
    try:
        store = runtime.store()
    except RuntimeError:
        raise ConfigurationError(f"No Redis is configured in this process: task {task} not sent. This is a bug "
                                 "in Mainsail; rerun with MAINSAIL_DEBUG=1 to see where it happened.") from None
    from tasks.message import task_message
    from workflows.store.resilience import retrying

    payload = task_message(task, args, queue)
    retrying(lambda: store.push_message(queue_key(queue), payload), what=f"sending {task}", budget=budget)


class _Sent:
    """What ``send_task`` returns for a step: not an ``AsyncResult``, which nothing here reads and whose
    making resolves the app's result backend (per thread in Celery: an entry-point scan and an import
    in each new thread that sends)."""

    __slots__ = ("id", "ignored")

    def __init__(self, task_id: str) -> None:
        self.id = task_id
        self.ignored = True


__all__ = ["retry_policy", "send_task"]
