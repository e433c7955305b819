"""Firing schedules with Celery beat and celery-redbeat: one leader, entries kept in Redis.

Why redbeat: its entries live in Redis (``mainsail-celery:redbeat:*``), so a schedule added by any
client is seen by the beat within ``MAINSAIL_BEAT_MAX_INTERVAL_SECONDS``, and each entry's last run is
in Redis too, so a restarted beat knows what it missed. Every ``mainsail beat`` takes redbeat's lock
(a redis-py lock, ``...:lock``) before it ticks; the others wait for it, trying every max interval, and
one takes over within ``MAINSAIL_BEAT_LOCK_TIMEOUT_SECONDS`` of the leader's death.

What redbeat does with a run missed while no beat ran: Celery's ``crontab.is_due`` finds the entry
overdue from its last run, and it is sent ONCE, at once; the entry's last run becomes now, so the
runs in between are not sent again. :class:`Scheduler` adds to each message the time the run was due
(the cron's first time after the last run), which makes the firing idempotent (a claim per schedule
and due minute, :mod:`workflows.sessions.firing`) and lets the session say it is late.

Entries mirror the enabled schedules: one per schedule, named by its id, that sends
``mainsail.schedule.fire(id)`` (queue ``tools``: the firing reads the workspace's settings files).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from redbeat.schedulers import RedBeatScheduler, RedBeatSchedulerEntry

from tasks.app import app, broker_ssl
from workflows.schedules import cron
from workflows.schedules.models import Schedule
from workflows.store import keys
from workflows.store.schedules import BrokenSchedule, ScheduleStore

log = logging.getLogger("mainsail.beat")

FIRE_TASK = "mainsail.schedule.fire"


def configure_beat(redis_url: str, settings) -> None:
    """Point redbeat at ``redis_url`` (the broker's Redis) with Mainsail's key prefix and timings, and Celery's
    broker at this process's Redis (the beat sends its firings through Celery)."""
    from tasks import runtime
    from tasks.app import configure_here

    configure_here()

    lock_timeout = settings.beat_lock_timeout_seconds or 5 * settings.beat_max_interval_seconds
    app.conf.update(
        redbeat_redis_url=runtime.without_tls_query(redis_url),
        redbeat_redis_use_ssl=broker_ssl(redis_url, settings.redis_ca_file),
        redbeat_redis_options={},  # not the broker's transport options (its key prefix is kombu's)
        redbeat_key_prefix=keys.REDBEAT_PREFIX,
        redbeat_lock_timeout=max(1, round(lock_timeout)),
        beat_max_loop_interval=settings.beat_max_interval_seconds,
        result_expires=None,  # no results are kept (task_ignore_result): no celery.backend_cleanup entry
    )
    for cached in ("redbeat_conf", "redbeat_redis"):  # built on first use, for the previous URL
        if cached in app.__dict__:
            delattr(app, cached)


def _entry(schedule: Schedule) -> RedBeatSchedulerEntry:
    from celery.schedules import crontab

    fields = dict(zip(cron.FIELDS, schedule.cron.split(" ")))
    return RedBeatSchedulerEntry(name=schedule.id, task=FIRE_TASK, schedule=crontab(app=app, **fields),
                                 args=[schedule.id], app=app)


def _utc(when: datetime | None) -> datetime | None:
    if when is None:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _entry_key(schedule_id: str) -> str:
    return f"{keys.REDBEAT_PREFIX}{schedule_id}"


def save_entry(schedule: Schedule, last_run: float) -> None:
    """Write the beat entry of an enabled schedule (remove that of a disabled one), whose last run is
    ``last_run``: a new or re-enabled schedule's is now, so that it first fires at the cron's next time
    (an entry that never ran would fire at once)."""
    if not schedule.enabled:
        delete_entry(schedule.id)
        return
    entry = _entry(schedule)
    entry.last_run_at = cron.utc(last_run)  # its score (the next due time) is computed from it
    entry.save()
    entry.reschedule(last_run_at=entry.last_run_at)  # save() keeps an older last run; this one is meant


def delete_entry(schedule_id: str) -> None:
    """Remove a schedule's beat entry (if any): the beat sends it no more."""
    RedBeatSchedulerEntry(name=schedule_id, app=app).delete()


def ensure_configured(settings) -> None:
    """Configure redbeat for the Redis this process uses (:func:`tasks.app.configure`), once."""
    from tasks import runtime

    url = runtime.current_url()
    if app.conf.get("redbeat_redis_url") != runtime.without_tls_query(url):
        configure_beat(url, settings)


class SafeEntry(RedBeatSchedulerEntry):
    """redbeat's entry, except that one whose stored definition cannot be read is reported as missing
    (logged; redbeat then drops it from its due set, and a beat's start re-creates it from its
    schedule): one bad entry must not stop the beat's tick for every other schedule."""

    @classmethod
    def from_key(cls, key, app=None):
        try:
            return super().from_key(key, app=app)
        except KeyError:
            raise
        except Exception as exc:  # noqa: BLE001 (whatever the decoder raised: the entry is unreadable)
            log.error("beat: skipping the entry %s, which cannot be read (%s: %s)", key, type(exc).__name__, exc)
            raise KeyError(key) from exc


def entry_last_run(schedule_id: str) -> datetime | None:
    """The beat's last run of a schedule's entry (None: no entry, it never ran, or it cannot be read)."""
    try:
        return _utc(SafeEntry.from_key(_entry_key(schedule_id), app=app).last_run_at)
    except KeyError:
        return None


def reconcile(store: ScheduleStore) -> None:
    """Make the beat's entries match the schedules: an enabled schedule without one gets one, whose
    last run is the schedule's last firing (so a run missed meanwhile fires once); an entry whose
    schedule is gone or disabled goes. Existing entries keep their last run."""
    from redbeat.schedulers import ensure_conf

    schedules = {}
    for s in store.records():
        if isinstance(s, BrokenSchedule):  # skipped, said, and the others go on
            log.error("beat: skipping it: %s", s.problem())
        else:
            schedules[s.id] = s
    for key in store.beat_entry_keys(ensure_conf(app).schedule_key):
        sid = key[len(keys.REDBEAT_PREFIX):]
        if sid not in schedules or not schedules[sid].enabled:
            log.info("beat: removing the entry of schedule %s (gone or disabled)", sid[:8])
            RedBeatSchedulerEntry(name=sid, app=app).delete()
    for s in schedules.values():
        # An existing entry is left as it is: rewriting it would move its next due time past a missed run.
        if s.enabled and not store.has_beat_entry(_entry_key(s.id)):
            save_entry(s, s.last_fired_at or s.created_at)


class Scheduler(RedBeatScheduler):
    """redbeat's scheduler, whose firing messages say when their run was due (``due_at``), and which
    skips an entry it cannot read (:class:`SafeEntry`)."""

    Entry = SafeEntry

    def setup_schedule(self):
        super().setup_schedule()
        from tasks import runtime

        reconcile(runtime.engine().store.schedules())

    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        if entry.task == FIRE_TASK and advance:
            entry.kwargs = {**(entry.kwargs or {}), "due_at": due_at(entry)}
        return super().apply_async(entry, producer, advance, **kwargs)


def due_at(entry, now: datetime | None = None) -> float:
    """When the run an overdue entry stands for was due: the cron's first time after its last run
    (not later than now)."""
    now = now or datetime.now(UTC)
    last = _utc(entry.last_run_at)
    if last is None:
        return now.replace(second=0, microsecond=0).timestamp()
    return min(cron.next_after(cron.expression_of(entry.schedule), last), now).timestamp()


def run_beat(settings, loglevel: str = "INFO") -> None:
    """Run the beat in this process until it is stopped (blocks); ``configure_beat`` first."""
    app.Beat(scheduler="tasks.beat:Scheduler", max_interval=settings.beat_max_interval_seconds,
             loglevel=loglevel, quiet=True).run()


__all__ = [
    "FIRE_TASK",
    "SafeEntry",
    "Scheduler",
    "configure_beat",
    "delete_entry",
    "due_at",
    "ensure_configured",
    "entry_last_run",
    "reconcile",
    "run_beat",
    "save_entry",
]
