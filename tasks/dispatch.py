"""Send the steps a commit returned to their queues."""

from __future__ import annotations

from tasks.app import TASK_FOR_KIND, app
from workflows.models import StepRecord


def dispatch(steps: list[StepRecord]) -> None:
    for step in steps:
        app.send_task(TASK_FOR_KIND[step.kind.value], args=[step.session_id, step.id], queue=step.queue)
