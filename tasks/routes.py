"""Which queue a task goes to, and where kombu keeps a queue in Redis: one table for the Celery app
(:mod:`tasks.app`) and for the sends a command makes without loading Celery (:mod:`tasks.message`)."""

from __future__ import annotations

from fnmatch import fnmatchcase

QUEUES = ("model", "tools", "memory")

#: Prefix of Celery's own keys in Redis (never mixed with Mainsail's ``mainsail:...``).
BROKER_PREFIX = "mainsail-celery:"

#: Task name pattern -> queue (Celery's ``task_routes``); any other task goes to the default queue.
ROUTES = {
    "mainsail.model.*": "model",
    "mainsail.tools.*": "tools",
    "mainsail.memory.*": "memory",
    "mainsail.reaper.*": "model",
    "mainsail.notify.*": "model",  # a webhook's POST: I/O, as a model call
    "mainsail.schedule.*": "tools",  # a firing reads the workspace's settings files
}
DEFAULT_QUEUE = "model"


def queue_of(task: str) -> str:
    """The queue ``task`` is routed to (as Celery routes it with :data:`ROUTES`)."""
    for pattern, queue in ROUTES.items():
        if fnmatchcase(task, pattern):
            return queue
    return DEFAULT_QUEUE


def queue_key(queue: str) -> str:
    """The Redis list kombu keeps ``queue``'s waiting messages in (messages without a priority)."""
    return f"{BROKER_PREFIX}{queue}"


__all__ = ["BROKER_PREFIX", "DEFAULT_QUEUE", "QUEUES", "ROUTES", "queue_key", "queue_of"]
