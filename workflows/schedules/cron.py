"""Cron expressions: checked, normalised, and walked, with Celery's own ``crontab`` parser.

The beat (celery-redbeat) decides when a schedule is due with :class:`celery.schedules.crontab`, so
the same class checks an expression when it is added and computes the times ``schedule list`` shows:
what is accepted, and when it fires, can never disagree with what the beat does.

Times are UTC. Five fields, ``minute hour day-of-month month day-of-week`` (0 or ``sun`` is Sunday;
7 is not accepted), or one of the ``@hourly``-style shortcuts. As in Celery (unlike Vixie cron), when
both day-of-month and day-of-week are restricted, a day must match both.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from workflows.exceptions import InvalidSchedule

SHORTCUTS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")
_SHOWN = ("minute", "hour", "day-of-month", "month", "day-of-week")
_EXAMPLE = "e.g. '0 3 * * *' for 03:00 UTC every day, '*/15 * * * *' every 15 minutes"


def parse(expr: str) -> str:
    """``expr`` checked and normalised (five fields, single spaces; a shortcut expanded).

    Raises:
        InvalidSchedule: not five fields, a field Celery's crontab refuses, or fields that name no day at
            all (the 31st of February): it could never fire. The message names the field.
    """
    text = " ".join(str(expr or "").split())
    text = SHORTCUTS.get(text.lower(), text)
    parts = text.split(" ")
    if len(parts) != 5 or not all(parts):
        raise InvalidSchedule(f"Invalid cron expression {expr!r}: it needs 5 fields (minute hour day-of-month "
                              f"month day-of-week), {_EXAMPLE}, or @hourly, @daily, @weekly, @monthly, @yearly.")
    from celery.schedules import crontab

    for name, shown, value in zip(FIELDS, _SHOWN, parts):
        try:
            crontab(**{name: value})
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            raise InvalidSchedule(f"Invalid cron expression {expr!r}: its {shown} field {value!r} is wrong "
                                  f"({exc}); {_EXAMPLE}.") from None
    try:  # each field is right alone; together they may name no day at all ('0 0 31 2 *')
        crontab(**dict(zip(FIELDS, parts)))
    except ValueError:
        raise InvalidSchedule(f"Invalid cron expression {expr!r}: it can never fire: its day-of-month field "
                              f"{parts[2]!r} is a day no month of its month field {parts[3]!r} has; give a "
                              f"day those months have, {_EXAMPLE}.") from None
    return text


def crontab_of(expr: str, nowfun=None):
    """The :class:`celery.schedules.crontab` of a checked expression (``nowfun``: its clock)."""
    from celery.schedules import crontab

    return crontab(**dict(zip(FIELDS, parse(expr).split(" "))), nowfun=nowfun)


def expression_of(schedule) -> str:
    """The five-field expression of a Celery ``crontab`` (as the beat's entry holds it)."""
    return " ".join(str(getattr(schedule, f"_orig_{name}")) for name in FIELDS)


def utc(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


def next_after(expr: str, after: datetime) -> datetime:
    """The first time ``expr`` fires strictly after ``after`` (an aware datetime), in UTC."""
    after = after.astimezone(UTC)
    cron = crontab_of(expr, nowfun=lambda: after)
    nxt = after + cron.remaining_estimate(after)
    nxt = nxt.replace(second=0, microsecond=0)
    if nxt <= after:  # ``after`` on the dot of a firing minute: look from the end of that minute
        return next_after(expr, after.replace(second=59, microsecond=0))
    return nxt


def occurrences(expr: str, start: datetime, end: datetime, limit: int = 1000) -> list[datetime]:
    """Firing times in ``[start, end]`` (at most ``limit``)."""
    out: list[datetime] = []
    t = next_after(expr, start - timedelta(microseconds=1))
    while t <= end and len(out) < limit:
        out.append(t)
        t = next_after(expr, t)
    return out


def slot(due: datetime) -> str:
    """The firing slot of a due time: ``YYYYmmddTHHMM`` in UTC (a cron's resolution is a minute)."""
    return due.astimezone(UTC).strftime("%Y%m%dT%H%M")


__all__ = ["SHORTCUTS", "crontab_of", "expression_of", "next_after", "occurrences", "parse", "slot", "utc"]
