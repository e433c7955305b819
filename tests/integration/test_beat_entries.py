"""The beat's entries in a real Redis (celery-redbeat's own code): a new schedule is not due at once,
a beat's start-up keeps a missed run due, a removed or disabled schedule loses its entry, and the
scheduler's message says when its run was due."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from tasks import beat
from tasks.app import app, configure
from workflows.schedules import Schedule, cron
from workflows.store.schedules import ScheduleStore

pytestmark = pytest.mark.integration


@pytest.fixture
def beat_redis(real_redis, redis_server, settings):
    configure(redis_server.url)
    beat.configure_beat(redis_server.url, settings)
    return real_redis


def score(r, sid: str) -> float | None:
    return r.zscore("mainsail-celery:redbeat::schedule", f"mainsail-celery:redbeat:{sid}")


def add(r, ws, **kw) -> Schedule:
    return ScheduleStore(r).add(Schedule(name="s", cron=kw.pop("cron", "* * * * *"), workspace=str(ws),
                                         prompt="hi", **kw))


def test_a_new_entry_first_fires_at_the_cron_s_next_time(beat_redis, ws):
    s = add(beat_redis, ws, cron="0 3 * * *")
    now = time.time()
    beat.save_entry(s, now)
    # Not at once, as redbeat would do with an entry that never ran (its score is that to a second).
    assert abs(score(beat_redis, s.id) - cron.next_after("0 3 * * *", cron.utc(now)).timestamp()) < 2
    assert abs(beat.entry_last_run(s.id).timestamp() - now) < 1


def test_start_up_keeps_a_missed_run_due_and_drops_orphans(beat_redis, ws):
    store = ScheduleStore(beat_redis)
    missed = add(beat_redis, ws)
    beat.save_entry(missed, time.time() - 300)  # last ran 5 minutes ago: overdue
    due_before = score(beat_redis, missed.id)
    orphan = add(beat_redis, ws)
    beat.save_entry(orphan, time.time())
    store.delete(orphan.id)
    lost = add(beat_redis, ws)  # a schedule whose entry is gone (Celery's keys lost): it gets one back
    lost.last_fired_at = time.time() - 600
    store.save(lost)
    off = add(beat_redis, ws, enabled=False)
    beat.reconcile(store)
    assert score(beat_redis, missed.id) == due_before <= time.time()  # still due: it fires at once
    assert score(beat_redis, orphan.id) is None and score(beat_redis, off.id) is None
    assert score(beat_redis, lost.id) <= time.time()
    assert abs(beat.entry_last_run(lost.id).timestamp() - lost.last_fired_at) < 1


def test_the_message_says_when_its_run_was_due(beat_redis, ws):
    from redbeat.schedulers import RedBeatSchedulerEntry

    s = add(beat_redis, ws)
    last = datetime(2026, 11, 24, 2, 58, 0, 20_000, tzinfo=UTC)
    beat.save_entry(s, last.timestamp())
    entry = RedBeatSchedulerEntry.from_key(f"mainsail-celery:redbeat:{s.id}", app=app)
    now = datetime(2026, 11, 24, 3, 2, 10, tzinfo=UTC)
    assert beat.due_at(entry, now) == datetime(2026, 11, 24, 2, 59, tzinfo=UTC).timestamp()  # the first missed
    assert beat.due_at(entry, last + timedelta(seconds=1)) == (last + timedelta(seconds=1)).timestamp()


def test_an_entry_that_cannot_be_read_is_skipped_not_fatal(beat_redis, ws, caplog):
    s = add(beat_redis, ws)
    beat.save_entry(s, time.time() - 300)
    beat_redis.hset(f"mainsail-celery:redbeat:{s.id}", "definition", "{not json")
    assert beat.entry_last_run(s.id) is None
    with pytest.raises(KeyError):  # redbeat's tick drops a KeyError entry and goes on with the others
        beat.Scheduler.Entry.from_key(f"mainsail-celery:redbeat:{s.id}", app=app)
    assert "cannot be read" in caplog.text


def test_start_up_skips_a_broken_record_and_says_so(beat_redis, ws, caplog):
    import json

    from workflows.store import keys

    good = add(beat_redis, ws)
    beat_redis.set(keys.schedule("bad"), json.dumps({"id": "bad", "name": "feb", "cron": "0 0 31 2 *",
                                                     "workspace": str(ws), "prompt": "x"}))
    beat_redis.zadd(keys.schedules(), {"bad": 0})
    beat.reconcile(ScheduleStore(beat_redis))
    assert score(beat_redis, good.id) is not None and score(beat_redis, "bad") is None
    assert "beat: skipping it: Schedule bad (feb) is stored broken" in caplog.text
