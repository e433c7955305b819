"""Send the steps a commit returned to their queues (:func:`tasks.send.send_task`: through Celery in a
process that runs it, else without loading it), and put a recovered step at the front of its queue.
"""

from __future__ import annotations

from tasks import notify_send as _notify  # noqa: F401 (a process that dispatches notifies: tasks/notify_send.py)
from tasks.routes import queue_key
from tasks.send import send_task
from workflows.commit.kinds import task_for
from workflows.models import StepRecord

#: A step taken back is looked for among the newest SEARCH_NEWEST + 1 messages of its queue.
SEARCH_NEWEST = 50


def dispatch(steps: list[StepRecord]) -> None:
    """Send ``steps`` to their queues on this process's Redis (:func:`send_task`)."""
    for step in steps:
        send_task(task_for(step.kind), [step.session_id, step.id], queue=step.queue)


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
