"""Scheduled sessions: cron schedules kept in Redis, fired by Celery beat (celery-redbeat, see
``tasks/beat.py``), each firing a normal session (docs/schedules.md)."""

from workflows.schedules.cron import parse as parse_cron
from workflows.schedules.models import RunMode, Schedule, ScheduleRun
from workflows.schedules.store import BrokenSchedule, ScheduleStore

__all__ = ["BrokenSchedule", "RunMode", "Schedule", "ScheduleRun", "ScheduleStore", "parse_cron"]
