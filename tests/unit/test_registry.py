"""The worker registry: liveness by Redis's own expiry, held steps, freeing a dead holder's lock."""

from __future__ import annotations

import time

from workflows.store import keys
from workflows.store.registry import Workers


def test_a_worker_is_live_until_its_registration_expires_then_dead_until_dropped(fake_redis):
    w = Workers(fake_redis)
    # (a TTL a loaded CI machine cannot outrun between two commands: 0.2 s once expired before the check)
    w.register("a#1", ["model", "tools"], ttl=1.0, info={"pid": "1", "host": "h", "api_key": "yes"})
    w.register("b#2", ["tools.h2"], ttl=30)
    assert w.live()["a#1"] == {"queues": "model,tools", "pid": "1", "host": "h", "api_key": "yes"}
    assert w.live_queues() == {"model", "tools", "tools.h2"}
    assert w.dead() == []
    time.sleep(1.1)
    assert set(w.live()) == {"b#2"}
    assert w.dead() == ["a#1"]
    w.drop("a#1")
    assert w.dead() == []


def test_a_clean_stop_leaves_no_trace_and_retiring_marks_dead_at_once(fake_redis):
    w = Workers(fake_redis)
    w.register("a#1", ["model"], ttl=30)
    w.note_taken("a#1", "s1", "p1")
    w.retire("a#1")
    assert w.dead() == ["a#1"] and w.held("a#1") == {"s1/p1": ""}
    w.unregister("a#1")
    assert w.dead() == [] and w.held("a#1") == {} and not fake_redis.exists(keys.worker_steps("a#1"))


def test_held_steps_record_taken_then_claimed_and_forget_only_what_it_wrote(fake_redis):
    w = Workers(fake_redis)
    w.note_taken("a#1", "s1", "p1")
    fake_redis.hset(keys.worker_steps("a#1"), "s1/p1", "h:1:own")  # the claim
    w.note_taken("a#1", "s1", "p1")  # a duplicate delivery of the same step: the claim stays
    assert w.held("a#1") == {"s1/p1": "h:1:own"}
    w.forget("a#1", "s1", "p1", "")  # the duplicate finishes (skipped): the running claim is kept
    assert w.held("a#1") == {"s1/p1": "h:1:own"}
    w.forget("a#1", "s1", "p1", "h:1:own")
    assert w.held("a#1") == {}


def test_only_one_reaper_takes_a_dead_worker(fake_redis):
    w = Workers(fake_redis)
    assert w.start_reaping("a#1", "r1", 5)
    assert not w.start_reaping("a#1", "r2", 5)


def test_a_lock_is_freed_only_if_the_dead_worker_holds_it(fake_redis):
    w = Workers(fake_redis)
    fake_redis.set(keys.lock("s1"), "a#1|tok")
    fake_redis.set(keys.lock("s2"), "a#10|tok")  # another worker whose name starts the same
    fake_redis.set(keys.lock("s3"), "b#2|tok")
    assert w.break_lock("s1", "a#1")
    assert not w.break_lock("s2", "a#1")
    assert not w.break_lock("s3", "a#1")
    assert not w.break_lock("s4", "a#1")  # no lock at all
    assert not fake_redis.exists(keys.lock("s1"))
    assert fake_redis.exists(keys.lock("s2")) and fake_redis.exists(keys.lock("s3"))
