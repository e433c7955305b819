"""Schedules without a beat: cron checking, the store, and firing once per due time (fakeredis)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from workflows.exceptions import InvalidSchedule, ScheduleBroken, ScheduleNotFound
from workflows.models import SystemEntry, UserEntry
from workflows.models.options import RemoteOptions, SessionOptions
from workflows.schedules import cron
from workflows.schedules.models import RunMode, Schedule
from workflows.sessions.firing import fire
from workflows.store import keys
from workflows.store.schedules import BrokenSchedule, ScheduleStore


def at(h: int, m: int, s: int = 0, day: int = 24) -> datetime:
    return datetime(2026, 11, day, h, m, s, tzinfo=UTC)


# ------------------------------------------------------------------ cron

@pytest.mark.parametrize("expr, normal", [
    ("0 3 * * *", "0 3 * * *"),
    ("  */15   *  * * mon-fri ", "*/15 * * * mon-fri"),
    ("@daily", "0 0 * * *"),
    ("@HOURLY", "0 * * * *"),
])
def test_cron_expressions_are_normalised(expr, normal):
    assert cron.parse(expr) == normal


@pytest.mark.parametrize("expr, names", [
    ("61 * * * *", "minute field '61'"),
    ("0 25 * * *", "hour field '25'"),
    ("0 3 * * 7", "day-of-week field '7'"),
    ("0 3 32 * *", "day-of-month field '32'"),
    ("0 3 * 13 *", "month field '13'"),
    ("0 3 * *", "it needs 5 fields"),
    ("", "it needs 5 fields"),
    ("@reboot", "it needs 5 fields"),
    ("0 0 31 2 *", "it can never fire: its day-of-month field '31'"),  # each field right, no such day
    ("0 0 30 2 *", "it can never fire: its day-of-month field '30'"),
    ("0 0 31 4,6,9,11 *", "month field '4,6,9,11'"),
])
def test_a_bad_cron_expression_is_refused_naming_the_field(expr, names):
    with pytest.raises(InvalidSchedule) as exc:
        cron.parse(expr)
    assert names in str(exc.value) and "'0 3 * * *'" in str(exc.value)


def test_next_times_follow_the_cron_in_utc():
    assert cron.next_after("0 3 * * *", at(12, 0)) == at(3, 0, day=25)
    assert cron.next_after("* * * * *", at(12, 0)) == at(12, 1)  # strictly after, on the dot
    assert cron.next_after("* * * * *", at(12, 0, 30)) == at(12, 1)
    assert cron.next_after("*/15 * * * *", at(12, 15, 1)) == at(12, 30)
    assert cron.occurrences("* * * * *", at(12, 1), at(12, 3, 30)) == [at(12, 1), at(12, 2), at(12, 3)]
    assert cron.slot(at(3, 7, 12)) == "20261124T0307"


def test_a_schedule_record_checks_its_cron():
    with pytest.raises(InvalidSchedule):
        Schedule(name="x", cron="nope", workspace="/tmp", prompt="hi")


# ------------------------------------------------------------------ store

def make(ws, **kw) -> Schedule:
    return Schedule(name=kw.pop("name", "nightly"), cron=kw.pop("cron", "0 3 * * *"), workspace=str(ws),
                    prompt=kw.pop("prompt", "Summarise README.md"), **kw)


def test_store_adds_finds_by_prefix_or_name_and_removes(fake_redis, ws):
    store = ScheduleStore(fake_redis)
    a, b = store.add(make(ws, name="a")), store.add(make(ws, name="b"))
    assert [s.id for s in store.all()] == [a.id, b.id]
    assert store.resolve(a.id[:6]) == a.id and store.resolve("b") == b.id
    with pytest.raises(ScheduleNotFound, match="No schedule matches 'zzz'"):
        store.resolve("zzz")
    store.delete(a.id)
    assert [s.id for s in store.all()] == [b.id]
    with pytest.raises(ScheduleNotFound, match="mainsail schedule list"):
        store.get(a.id)
    with pytest.raises(ScheduleNotFound, match="removed meanwhile"):
        store.save(a)
    assert not fake_redis.exists(keys.schedule(a.id)) and not fake_redis.exists(keys.schedule_runs(a.id))


def test_an_ambiguous_prefix_lists_the_matches(fake_redis, ws):
    store = ScheduleStore(fake_redis)
    a = store.add(make(ws, id="abc-1", name="one"))
    store.add(make(ws, id="abc-2", name="two"))
    with pytest.raises(ScheduleNotFound, match=r"matches 2 schedules: abc-1 \(one\), abc-2 \(two\)"):
        store.resolve("abc")
    assert store.resolve("abc-1") == a.id


def test_a_day_some_month_has_is_accepted():
    assert cron.next_after("0 0 29 2 *", at(0, 0)) == datetime(2028, 2, 29, tzinfo=UTC)
    assert cron.parse("0 0 31 2,3 *") == "0 0 31 2,3 *"


def write_broken(r, sid: str, raw: str) -> None:
    r.set(keys.schedule(sid), raw)
    r.zadd(keys.schedules(), {sid: 0})


def test_a_broken_record_is_reported_and_the_others_still_read(fake_redis, ws, engine, settings):
    store = ScheduleStore(engine.store.r)
    good = store.add(make(ws, name="good"))
    write_broken(engine.store.r, "bad-cron", json.dumps({"id": "bad-cron", "name": "feb", "cron": "0 0 31 2 *",
                                                         "workspace": str(ws), "prompt": "x"}))
    write_broken(engine.store.r, "bad-json", "{not json")
    records = store.records()
    assert [s.id for s in records] == ["bad-cron", "bad-json", good.id]  # (created 0: first)
    assert [s.id for s in store.all()] == [good.id]
    feb, garbled = records[0], records[1]
    assert isinstance(feb, BrokenSchedule) and (feb.name, feb.cron, feb.workspace) == ("feb", "0 0 31 2 *", str(ws))
    assert "it can never fire" in feb.reason
    assert garbled.name == "" and "Invalid JSON" in garbled.reason
    assert store.resolve("feb") == "bad-cron"  # found, so it can be removed
    with pytest.raises(ScheduleBroken, match=r"Schedule bad-cron \(feb\) is stored broken: .*mainsail schedule rm"):
        store.get("bad-cron")
    fired = fire(engine, settings, "bad-cron", at(3, 0).timestamp())
    assert fired.session_id is None and fired.skipped.startswith("broken: Schedule bad-cron (feb) is stored broken")
    store.delete("bad-cron")
    assert [s.id for s in store.records()] == ["bad-json", good.id]


# ------------------------------------------------------------------ firing

def prompts(engine, sid):
    return [e for e in engine.store.entries(sid) if isinstance(e, UserEntry) and e.origin == "prompt"]


def notes(engine, sid):
    return [e.content for e in engine.store.entries(sid) if isinstance(e, SystemEntry) and e.subtype == "info"]


def test_one_run_fires_once_however_many_messages_ask(engine, settings, ws):
    store = ScheduleStore(engine.store.r)
    s = store.add(make(ws, options=RemoteOptions(permission_mode="acceptEdits", max_turns=3)))
    due = at(3, 0).timestamp()
    first = fire(engine, settings, s.id, due, fired_at=due + 1.5)
    again = fire(engine, settings, s.id, due, fired_at=due + 2.0)
    assert first.session_id and first.steps and first.skipped is None
    assert (again.session_id, again.steps, again.skipped) == (first.session_id, [], "duplicate")
    assert len(engine.store.session_ids()) == 1
    rec = engine.store.get_session(first.session_id)
    assert (rec.permission_mode.value, rec.max_turns, rec.asks) == ("acceptEdits", 3, "wait")
    (p,) = prompts(engine, first.session_id)
    assert "Summarise README.md" in json.dumps(p.model_dump(mode="json")) and "downtime" not in json.dumps(
        p.model_dump(mode="json"))
    (note,) = notes(engine, first.session_id)
    assert "scheduled for 2026-11-24 03:00 UTC, fired 03:00:01 UTC." in note and "downtime" not in note
    s = store.get(s.id)
    assert (s.last_session_id, s.last_due_at, s.last_error) == (first.session_id, due, None)
    assert [r.session_id for r in store.runs(s.id)] == [first.session_id]
    # The next minute is another run.
    nxt = fire(engine, settings, s.id, due + 86400, fired_at=due + 86401)
    assert nxt.session_id not in (None, first.session_id) and len(engine.store.session_ids()) == 2


def test_a_late_firing_says_so_in_the_session_and_to_the_model(engine, settings, ws):
    store = ScheduleStore(engine.store.r)
    s = store.add(make(ws, cron="* * * * *"))
    due = at(3, 0).timestamp()
    fired = fire(engine, settings, s.id, due, fired_at=at(3, 2, 40).timestamp())
    (note,) = notes(engine, fired.session_id)
    assert note.endswith("scheduled for 2026-11-24 03:00 UTC, fired 03:02:40 UTC after downtime "
                         "(3 runs missed, fired once).")
    (p,) = prompts(engine, fired.session_id)
    assert "after downtime" in json.dumps(p.model_dump(mode="json"))
    assert engine.store.get_session(fired.session_id).title.startswith("Summarise README.md")
    (run,) = store.runs(s.id)
    assert (run.late, run.missed) == (True, 3)


def test_a_firing_that_died_after_claiming_is_finished_by_the_redelivery(engine, settings, ws):
    store = ScheduleStore(engine.store.r)
    s = store.add(make(ws))
    due = at(3, 0).timestamp()
    claimed, _ = store.claim(s.id, cron.slot(cron.utc(due)), "planned-session")
    assert claimed
    fired = fire(engine, settings, s.id, due, fired_at=due + 5)
    assert fired.session_id == "planned-session" and fired.steps
    assert fire(engine, settings, s.id, due, fired_at=due + 6).skipped == "duplicate"


def test_continue_sends_the_next_run_to_the_last_session(engine, settings, ws):
    store = ScheduleStore(engine.store.r)
    s = store.add(make(ws, mode=RunMode.CONTINUE, cron="0 * * * *"))
    one = fire(engine, settings, s.id, at(3, 0).timestamp(), fired_at=at(3, 0, 2).timestamp())
    two = fire(engine, settings, s.id, at(4, 0).timestamp(), fired_at=at(4, 0, 2).timestamp())
    assert one.session_id == two.session_id and len(engine.store.session_ids()) == 1
    assert len(engine.store.inbox(one.session_id)) + len(prompts(engine, one.session_id)) == 2


def test_a_continued_run_whose_worker_died_after_sending_is_not_sent_again(engine, settings, ws, monkeypatch):
    """--continue: the prompt went into the last session, then the worker died before the run was marked
    sent; the redelivered firing finds the run's key in the session and sends nothing twice."""
    store = ScheduleStore(engine.store.r)
    s = store.add(make(ws, mode=RunMode.CONTINUE, cron="0 * * * *"))
    one = fire(engine, settings, s.id, at(3, 0).timestamp(), fired_at=at(3, 0, 2).timestamp())
    mark = ScheduleStore.mark_submitted

    def died(self, *args, **kwargs):
        raise ConnectionError("worker killed after the prompt went in")

    monkeypatch.setattr(ScheduleStore, "mark_submitted", died)
    with pytest.raises(ConnectionError):
        fire(engine, settings, s.id, at(4, 0).timestamp(), fired_at=at(4, 0, 2).timestamp())
    monkeypatch.setattr(ScheduleStore, "mark_submitted", mark)
    again = fire(engine, settings, s.id, at(4, 0).timestamp(), fired_at=at(4, 0, 9).timestamp())
    assert again.session_id == one.session_id and again.steps == []
    assert len(engine.store.inbox(one.session_id)) + len(prompts(engine, one.session_id)) == 2
    assert fire(engine, settings, s.id, at(4, 0).timestamp(), fired_at=at(4, 0, 20).timestamp()).skipped == "duplicate"


def test_submit_with_a_key_sends_a_message_once(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    assert engine.submit(rec.id, "first", once="k1")
    assert engine.submit(rec.id, "first", once="k1") == []
    engine.submit(rec.id, "second", once="k2")
    assert len(engine.store.inbox(rec.id)) + len(prompts(engine, rec.id)) == 2


def test_disabled_removed_and_broken_schedules_start_nothing(engine, settings, ws, tmp_path):
    store = ScheduleStore(engine.store.r)
    off = store.add(make(ws, enabled=False))
    assert fire(engine, settings, off.id, at(3, 0).timestamp()).skipped == "disabled"
    assert fire(engine, settings, "no-such-schedule", at(3, 0).timestamp()).skipped == "removed"
    gone = tmp_path / "gone"
    gone.mkdir()
    broken = store.add(make(gone))
    gone.rmdir()
    fired = fire(engine, settings, broken.id, at(3, 0).timestamp())
    assert fired.session_id is None and "is not a directory on this worker" in fired.skipped
    assert "mainsail schedule rm" in store.get(broken.id).last_error
    assert engine.store.session_ids() == []
    # By hand, a disabled schedule runs (once per call).
    manual = fire(engine, settings, off.id, manual=True)
    assert manual.session_id and "run by hand" in notes(engine, manual.session_id)[0]


def test_the_workspace_settings_files_apply_to_a_fired_session(engine, settings, ws):
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    s = ScheduleStore(engine.store.r).add(make(ws))
    fired = fire(engine, settings, s.id, at(3, 0).timestamp())
    rec = engine.store.get_session(fired.session_id)
    assert "Bash(rm:*)" in json.dumps(rec.rules.model_dump(mode="json"))


def test_a_firing_that_cannot_take_the_lock_is_tried_again_not_lost(engine, settings, ws, monkeypatch):
    """Another firing holds the schedule's lock past the wait: the task is sent again (eagerly here) and
    the run fires once the lock is free, late and saying so, instead of being lost."""
    from tasks import runtime, schedules
    from workflows.sessions import firing

    store = ScheduleStore(engine.store.r)
    s = store.add(make(ws, cron="* * * * *"))
    monkeypatch.setattr(runtime, "_engine", engine)
    sent: list = []
    monkeypatch.setattr(schedules, "dispatch", sent.extend)
    monkeypatch.setattr(firing, "LOCK_WAIT_SECONDS", 0.15)  # one try, a 0.1 s sleep, one more
    held = engine.store.r.lock(keys.schedule_lock(s.id), timeout=0.4)
    assert held.acquire()
    due = at(3, 0).timestamp()
    result = schedules.fire_schedule.apply(args=(s.id, due))
    assert result.successful(), result.traceback
    assert result.get() and result.get() in engine.store.session_ids() and sent
    (run,) = store.runs(s.id)
    assert run.late and run.session_id == result.get()


def test_a_firing_that_never_gets_the_lock_gives_up_after_its_retries(engine, settings, ws, monkeypatch):
    from redis.exceptions import LockError

    from tasks import runtime, schedules
    from workflows.sessions import firing

    store = ScheduleStore(engine.store.r)
    s = store.add(make(ws, cron="* * * * *"))
    monkeypatch.setattr(runtime, "_engine", engine)
    monkeypatch.setattr(firing, "LOCK_WAIT_SECONDS", 0.01)
    monkeypatch.setattr(schedules, "LOCK_RETRIES", 2)
    held = engine.store.r.lock(keys.schedule_lock(s.id), timeout=30)
    assert held.acquire()
    result = schedules.fire_schedule.apply(args=(s.id, at(3, 0).timestamp()))
    assert result.failed() and isinstance(result.result, LockError)
    assert engine.store.session_ids() == [] and store.runs(s.id) == []


def test_a_schedule_carries_its_makers_trust_while_the_settings_are_unchanged(engine, settings, ws, tmp_path,
                                                                            monkeypatch):
    """Made with --trust-project, a schedule keeps the hash trusted then: its firings apply the workspace's own
    settings while they hash the same; a change (or a schedule made without it) leaves them out."""
    from workflows.trust.gated import project_gated

    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # (no trust recorded in the machine user's HOME)
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"env": {"FROM_PROJECT": "1"}}))
    store = ScheduleStore(engine.store.r)
    trusted = store.add(make(ws, name="trusted", trusted_hash=project_gated(ws).digest()))
    plain = store.add(make(ws, name="plain"))
    rec = engine.store.get_session(fire(engine, settings, plain.id, at(3, 0).timestamp()).session_id)
    assert rec.env == {} and rec.untrusted_workspace
    rec = engine.store.get_session(fire(engine, settings, trusted.id, at(3, 0).timestamp()).session_id)
    assert rec.env == {"FROM_PROJECT": "1"} and not rec.untrusted_workspace
    (ws / ".claude" / "settings.json").write_text(json.dumps({"env": {"FROM_PROJECT": "2"}}))
    fired = fire(engine, settings, trusted.id, at(4, 0).timestamp())
    rec = engine.store.get_session(fired.session_id)
    assert rec.env == {} and rec.untrusted_workspace
    warned = [e.content for e in engine.store.entries(fired.session_id)
              if isinstance(e, SystemEntry) and e.subtype == "warning"]
    assert any("is not trusted" in w and "They changed since you trusted it: env in .claude/settings.json" in w
               for w in warned)
