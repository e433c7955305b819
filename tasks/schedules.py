"""The task a schedule's beat entry sends: fire the schedule once for the run due at ``due_at``."""

from __future__ import annotations

from tasks import runtime
from tasks.app import app
from tasks.dispatch import dispatch
from workflows.schedules.firing import fire
from workflows.settings import get_settings


@app.task(name="mainsail.schedule.fire")
def fire_schedule(schedule_id: str, due_at: float | None = None) -> str | None:
    """Start the schedule's session (a duplicate message of the same run starts nothing); its id."""
    fired = fire(runtime.engine(), get_settings(), schedule_id, due_at)
    dispatch(fired.steps)
    return fired.session_id
