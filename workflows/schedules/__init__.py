"""Scheduled sessions: cron schedules (their models and the cron parser), kept in Redis by
:mod:`workflows.store.schedules`, fired by Celery beat (celery-redbeat, see ``tasks/beat.py``), each firing a
normal session through :mod:`workflows.sessions.firing` (docs/schedules.md)."""

from workflows.schedules.cron import parse as parse_cron
from workflows.schedules.models import RunMode, Schedule, ScheduleRun

__all__ = ["RunMode", "Schedule", "ScheduleRun", "parse_cron"]
