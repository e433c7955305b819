"""Schedules in Redis: records, their latest runs, and the claim that makes a firing happen once.

Keys (all built by :mod:`workflows.store.keys`): ``mainsail:schedules`` (zset of ids),
``mainsail:schedule:{id}`` (the record), ``...:runs`` (latest firings), ``...:lock`` (one firing at a
time) and ``...:fired:{slot}`` (a firing's claim, ``SET NX``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from pydantic import ValidationError

from workflows.exceptions import InvalidSchedule, ScheduleBroken, ScheduleNotFound
from workflows.schedules.models import Schedule, ScheduleRun
from workflows.store import keys

#: Firings kept per schedule for ``schedule list`` and the API.
RUNS_KEPT = 50
#: A firing's claim outlives any redelivery of its message (the broker's visibility timeout is 6 h).
FIRING_TTL_SECONDS = 7 * 24 * 3600


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


@dataclass
class Firing:
    """A firing's claim: the session it starts, and whether its prompt was submitted."""

    session_id: str
    submitted: bool = False

    def dump(self) -> str:
        return json.dumps({"session_id": self.session_id, "submitted": self.submitted})


@dataclass
class BrokenSchedule:
    """A stored schedule record that cannot be read as a schedule (a cron that can never fire, saved
    before it was refused; a record written by hand or by another version): ``reason`` says why. It is
    listed marked broken, skipped by the beat, and can be removed; it never keeps the others from
    being listed or fired. ``name``, ``cron`` and ``workspace``: what could be read of them ("" if not)."""

    id: str
    reason: str
    name: str = ""
    cron: str = ""
    workspace: str = ""

    @classmethod
    def of(cls, schedule_id: str, raw, reason: str) -> BrokenSchedule:
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        data = data if isinstance(data, dict) else {}

        def text(name: str) -> str:
            value = data.get(name)
            return value if isinstance(value, str) and "\x00" not in value else ""

        ws = text("workspace")
        return cls(schedule_id, reason, text("name"), text("cron"), ws if os.path.isabs(ws) else "")

    def problem(self) -> str:
        """What is wrong and what to do, in the words the CLI and the API show."""
        return (f"Schedule {self.id[:8]}{f' ({self.name})' if self.name else ''} is stored broken: {self.reason} "
                f"It does not fire; remove it (`mainsail schedule rm {self.id[:8]}`) and add it again.")


def _reason(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'record'}: {e['msg']}" for e in exc.errors()) + "."
    return str(exc)


def _read(schedule_id: str, raw) -> Schedule | BrokenSchedule:
    try:
        return Schedule.model_validate_json(raw)
    except (ValidationError, InvalidSchedule, ValueError) as exc:
        return BrokenSchedule.of(schedule_id, raw, _reason(exc))


class ScheduleStore:
    """The schedules of one Redis."""

    def __init__(self, r) -> None:
        self.r = r

    def beat_entry_keys(self, schedule_key: str) -> list[str]:
        """The keys of the beat's entries (redbeat's sorted set ``schedule_key``)."""
        return [_s(k) for k in self.r.zrange(schedule_key, 0, -1)]

    def has_beat_entry(self, key: str) -> bool:
        """Whether the beat holds entry ``key`` (redbeat's hash of a schedule)."""
        return bool(self.r.exists(key))

    def add(self, schedule: Schedule) -> Schedule:
        if not self.r.set(keys.schedule(schedule.id), schedule.model_dump_json(), nx=True):
            raise ValueError(f"Schedule {schedule.id} already exists")
        self.r.zadd(keys.schedules(), {schedule.id: schedule.created_at})
        return schedule

    def save(self, schedule: Schedule) -> Schedule:
        """Write an existing schedule's record (refused, as not found, once it was removed)."""
        if not self.r.set(keys.schedule(schedule.id), schedule.model_dump_json(), xx=True):
            raise ScheduleNotFound(f"Schedule {schedule.id[:8]} ({schedule.name}) was removed meanwhile.")
        return schedule

    def get(self, schedule_id: str) -> Schedule:
        """The schedule ``schedule_id``.

        Raises:
            ScheduleNotFound: there is none.
            ScheduleBroken: its stored record cannot be read (the message says why and what to do).
        """
        found = self.record(schedule_id)
        if isinstance(found, BrokenSchedule):
            raise ScheduleBroken(found.problem())
        return found

    def record(self, schedule_id: str) -> Schedule | BrokenSchedule:
        """The schedule ``schedule_id``, or what is wrong with its stored record.

        Raises:
            ScheduleNotFound: there is none.
        """
        raw = self.r.get(keys.schedule(schedule_id))
        if raw is None:
            raise ScheduleNotFound(f"No schedule {schedule_id!r}. List them with `mainsail schedule list`.")
        return _read(schedule_id, raw)

    def ids(self) -> list[str]:
        return [_s(x) for x in self.r.zrange(keys.schedules(), 0, -1)]

    def records(self) -> list[Schedule | BrokenSchedule]:
        """Every schedule, oldest first; a record that cannot be read is there as a :class:`BrokenSchedule`."""
        ids = self.ids()
        raws = self.r.mget([keys.schedule(i) for i in ids]) if ids else []
        return [_read(i, raw) for i, raw in zip(ids, raws) if raw is not None]

    def all(self) -> list[Schedule]:
        """Every schedule that can be read, oldest first (the broken ones: :meth:`records`)."""
        return [s for s in self.records() if isinstance(s, Schedule)]

    def resolve(self, prefix: str) -> str:
        """The one schedule id starting with ``prefix`` (or named ``prefix``).

        Raises:
            ScheduleNotFound: nothing matches, or several do (the message lists them).
        """
        prefix = (prefix or "").strip()
        schedules = self.records()  # a broken one too: it must be found to be removed
        for match in ([s for s in schedules if s.id == prefix], [s for s in schedules if s.name == prefix],
                      [s for s in schedules if prefix and s.id.startswith(prefix)]):
            if len(match) == 1:
                return match[0].id
            if len(match) > 1:
                shown = ", ".join(f"{s.id[:8]} ({s.name})" for s in match[:10])
                raise ScheduleNotFound(f"{prefix!r} matches {len(match)} schedules: {shown}. Give more of the id.")
        raise ScheduleNotFound(f"No schedule matches {prefix!r}. List them with `mainsail schedule list`.")

    def delete(self, schedule_id: str) -> None:
        """Remove a schedule and its run history (its firings' claims expire on their own)."""
        with self.r.pipeline() as p:
            p.delete(keys.schedule(schedule_id), keys.schedule_runs(schedule_id))
            p.zrem(keys.schedules(), schedule_id)
            p.execute()

    # ------------------------------------------------------------------ firings

    def lock(self, schedule_id: str, timeout: float = 120.0, wait: float = 60.0):
        """Held while one firing creates and starts its session (another waits, then finds it done)."""
        return self.r.lock(keys.schedule_lock(schedule_id), timeout=timeout, blocking_timeout=wait)

    def claim(self, schedule_id: str, slot: str, session_id: str) -> tuple[bool, Firing]:
        """Claim the firing of ``slot`` for a session ``session_id`` (``SET NX``): (True, it) the first
        time; (False, the firing already claimed) for any later message of the same run."""
        firing = Firing(session_id)
        if self.r.set(keys.schedule_firing(schedule_id, slot), firing.dump(), nx=True, ex=FIRING_TTL_SECONDS):
            return True, firing
        raw = self.r.get(keys.schedule_firing(schedule_id, slot))
        if raw is None:  # expired between the two calls: a week-old message; treat it as done
            return False, Firing(session_id, submitted=True)
        return False, Firing(**json.loads(raw))

    def mark_submitted(self, schedule_id: str, slot: str, firing: Firing) -> None:
        firing.submitted = True
        self.r.set(keys.schedule_firing(schedule_id, slot), firing.dump(), ex=FIRING_TTL_SECONDS)

    def record_run(self, schedule: Schedule, run: ScheduleRun) -> None:
        """Add ``run`` to the history and stamp the schedule's last firing (if it still exists)."""
        schedule.last_due_at, schedule.last_fired_at = run.due_at, run.fired_at
        schedule.last_error = run.error
        if run.session_id:
            schedule.last_session_id = run.session_id
        if not self.r.exists(keys.schedule(schedule.id)):
            return  # removed while it fired: no history to keep
        with self.r.pipeline() as p:
            p.set(keys.schedule(schedule.id), schedule.model_dump_json(), xx=True)
            p.lpush(keys.schedule_runs(schedule.id), run.model_dump_json())
            p.ltrim(keys.schedule_runs(schedule.id), 0, RUNS_KEPT - 1)
            p.execute()

    def runs(self, schedule_id: str, limit: int = RUNS_KEPT) -> list[ScheduleRun]:
        """The latest firings, newest first."""
        return [ScheduleRun.model_validate_json(raw) for raw in self.r.lrange(keys.schedule_runs(schedule_id),
                                                                             0, limit - 1)]


__all__ = ["FIRING_TTL_SECONDS", "RUNS_KEPT", "BrokenSchedule", "Firing", "ScheduleStore"]
