"""Sending the notifications a commit recorded (workflows/notify/outbox.py): one delivery task per (event,
subscription), on the broker, from whichever process committed (or the reaper's sweep, for a dead one).

Kept apart from the delivery task (:mod:`tasks.notify`, Celery's) so that a command that commits and sends
without loading Celery (tasks/dispatch.py) sends them too.
"""

from __future__ import annotations

from tasks import runtime
from tasks.send import send_task
from workflows.notify.outbox import Outbox

TASK = "mainsail.notify.deliver"


def send(event, sub) -> None:
    """Send the task that delivers ``event`` (a NotifyEvent) to ``sub`` (a Subscription): the event travels in
    the message; the subscription is read again when it runs, so a removed one gets nothing."""
    send_task(TASK, [event.model_dump_json(), sub.id])


def sweep(engine) -> int:
    """Send the outbox events a dead process left (the reaper's periodic sweep). Returns how many tasks."""
    return Outbox(engine.store.notify(), send).sweep()


# Every process that commits sends the events its commits recorded, at once (workflows/notify/outbox.py).
runtime.on_engine(lambda engine: engine.committer.outboxes.append(Outbox(engine.store.notify(), send).landed))

__all__ = ["TASK", "send", "sweep"]
