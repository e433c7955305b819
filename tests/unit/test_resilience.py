"""Redis errors on the step path are ridden out, fenced, and never spend an attempt (fakeredis)."""

from __future__ import annotations

import logging
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from demo.scripted import DEMO_PROMPT
from tests.inline import Inline
from workflows.exceptions import LockTimeout
from workflows.models import AssistantEntry, StepStatus
from workflows.models.options import SessionOptions
from workflows.steps.model_call import LiveDeltas
from workflows.steps.run import owner_token, run_step
from workflows.store import resilience
from workflows.store.resilience import ResilientEngine, retrying


class Flaky:
    """Calls ``fn``, raising ``error`` the first ``failures`` times (after calling it, with ``landed``)."""

    def __init__(self, fn, failures: int, error=RedisConnectionError("Connection closed by server."),
                 landed: bool = False) -> None:
        self.fn, self.failures, self.error, self.landed, self.calls = fn, failures, error, landed, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.failures:
            if self.landed:
                self.fn(*args, **kwargs)  # it did land: only the reply was lost
            raise self.error
        return self.fn(*args, **kwargs)


def test_retrying_rides_out_transient_errors_and_gives_up_after_its_budget(monkeypatch):
    monkeypatch.setattr(resilience, "FIRST_DELAY", 0.001)
    flaky = Flaky(lambda: "ok", failures=3, error=LockTimeout("locked"))
    assert retrying(flaky, what="x", budget=5) == "ok" and flaky.calls == 4
    always = Flaky(lambda: "ok", failures=10**6)
    t0 = time.monotonic()
    with pytest.raises(RedisConnectionError):
        retrying(always, what="x", budget=0.2)
    assert time.monotonic() - t0 < 1.0
    wrong = Flaky(lambda: "ok", failures=1, error=ResponseError("WRONGTYPE"))
    with pytest.raises(ResponseError):  # not transient: at once
        retrying(wrong, what="x", budget=5)
    assert wrong.calls == 1


def test_a_claim_whose_reply_was_lost_is_not_counted_twice(engine, ws, monkeypatch):
    monkeypatch.setattr(resilience, "FIRST_DELAY", 0.001)
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    monkeypatch.setattr(engine, "claim", Flaky(engine.claim, failures=1, landed=True))
    claimed = ResilientEngine(engine).claim(rec.id, step.id, "me:1:a")
    assert claimed.step is not None and claimed.step.attempt == 1


def test_a_commit_that_landed_before_its_reply_was_lost_still_sends_what_follows(engine, ws, monkeypatch):
    monkeypatch.setattr(resilience, "FIRST_DELAY", 0.001)
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, DEMO_PROMPT))
    monkeypatch.setattr(engine, "record_model_reply", Flaky(engine.record_model_reply, failures=1, landed=True))
    inline.run(1)  # the reply lands; the retry is fenced off; the pending tool step is sent all the same
    assert [s.kind.value for s in inline.queue] == ["tool"]
    inline.drain()
    entries = engine.store.entries(rec.id)
    assert sum(isinstance(e, AssistantEntry) for e in entries) == 4  # one per model call, none twice


def test_a_step_rides_out_an_outage_without_spending_an_attempt(engine, ws, monkeypatch):
    monkeypatch.setattr(resilience, "FIRST_DELAY", 0.001)
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    inline = Inline(engine)
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    monkeypatch.setattr(engine, "claim", Flaky(engine.claim, failures=3))
    monkeypatch.setattr(engine, "record_model_reply", Flaky(engine.record_model_reply, failures=3))
    assert run_step(engine, rec.id, step.id, inline.dispatch) == "done"
    done = engine.store.get_step(rec.id, step.id)
    assert done.status is StepStatus.DONE and done.attempt == 1
    assert len(inline.queue) == 1


def test_a_live_delta_redis_refuses_is_dropped_and_the_call_goes_on(engine, ws, caplog):
    caplog.set_level(logging.WARNING, logger="workflows.steps.model_call")  # an in-process worker may have quieted it
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)

    class Down:
        def publish(self, sid, data, **options):
            raise RedisConnectionError("Error 111 connecting")

    deltas = LiveDeltas(Down(), step)
    for _ in range(3):
        deltas.publish("text")  # never raises
    assert deltas.dropped == 3
    assert sum("dropping live text" in r.message for r in caplog.records) == 1  # logged once


def test_owner_tokens_name_the_host_and_process():
    import os
    import socket

    host, pid, rand = owner_token().split(":")
    assert host == socket.gethostname() and pid == str(os.getpid()) and rand


def test_a_lock_whose_release_redis_never_got_does_not_block_the_retry(fake_redis, monkeypatch):
    """Redis went away between a commit and the unlock: the lock would stay until it expires (30 s) and
    block the commit's own retry; it is released (if still ours) before the session is locked next."""
    from redis.lock import Lock

    from workflows.store.redis_store import Store

    store = Store(fake_redis, lock_timeout=30, lock_wait=60)  # waiting for the stale lock: its 30 s expiry
    real_release = Lock.release
    monkeypatch.setattr(Lock, "release", lambda self: (_ for _ in ()).throw(RedisConnectionError("gone")))
    with pytest.raises(RedisConnectionError):
        with store.lock("s1"):
            pass
    monkeypatch.setattr(Lock, "release", real_release)
    t0 = time.monotonic()
    with store.lock("s1"):
        pass
    assert time.monotonic() - t0 < 15
    store.lock_wait = 0.3  # (here the wait is the outcome)
    fake_redis.set("mainsail:session:s2:lock", "someone-else")
    store._unreleased["mainsail:session:s2:lock"] = b"our-old-token"
    with pytest.raises(LockTimeout):  # a lock someone else holds now is never released for them
        with store.lock("s2"):
            pass
