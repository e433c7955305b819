"""The task a schedule's beat entry sends: fire the schedule once for the run due at ``due_at``."""

from __future__ import annotations

import logging

from tasks import runtime
from tasks.app import app
from tasks.dispatch import dispatch
from workflows.sessions.firing import fire
from workflows.settings import get_settings
from workflows.store.resilience import LockError

log = logging.getLogger(__name__)

#: A firing that could not take its schedule's lock (another firing of the schedule held it past
#: ``firing.LOCK_WAIT_SECONDS``) is sent again after this many seconds, at most ``LOCK_RETRIES`` times.
#: The lock expires two minutes after it was taken, so the run fires late, and says so, instead of
#: being lost; the run's claim keeps the two firings from both starting it.
LOCK_RETRY_SECONDS = 15
LOCK_RETRIES = 20


@app.task(name="mainsail.schedule.fire", bind=True)
def fire_schedule(self, schedule_id: str, due_at: float | None = None) -> str | None:
    """Start the schedule's session (a duplicate message of the same run starts nothing); its id."""
    try:
        fired = fire(runtime.engine(), get_settings(), schedule_id, due_at)
    except LockError as exc:
        log.warning("schedule %s: its lock is held by another firing; trying again in %ss (attempt %d of %d)",
                    schedule_id[:8], LOCK_RETRY_SECONDS, self.request.retries + 1, LOCK_RETRIES)
        raise self.retry(exc=exc, countdown=LOCK_RETRY_SECONDS, max_retries=LOCK_RETRIES) from None
    dispatch(fired.steps)
    return fired.session_id
