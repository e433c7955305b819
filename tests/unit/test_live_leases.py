"""A live worker's lease never expires: its running step is not sent again, so its model is never called
twice while the first call is alive; a dead worker's, or a step its worker no longer runs, still is (fakeredis)."""

from __future__ import annotations

import threading
import time

import pytest

from demo.scripted import DEMO_PROMPT, Script, Turn
from tasks import reaper
from tests.inline import api_of, scripted_model
from workflows.models import ResultEntry, StepStatus
from workflows.models.options import SessionOptions
from workflows.steps.run import owner_token, run_step
from workflows.store import keys

LIVE = "mainsail-77@box#c0ffee"


@pytest.fixture
def sent(monkeypatch):
    out = []
    monkeypatch.setattr(reaper, "resend", lambda steps: out.extend(steps))
    monkeypatch.setattr(reaper, "dispatch", lambda steps: out.extend(steps))
    return out


def expire(engine, sid, step_id):
    engine.store.r.zadd(keys.leases(), {keys.lease_member(sid, step_id): time.time() - 1})


def claimed_by(engine, ws, worker):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    owner = owner_token()
    assert engine.claim(rec.id, step.id, owner, worker).step is not None
    return rec.id, step, owner


def test_an_expired_lease_of_a_live_workers_step_is_renewed_not_re_dispatched(engine, ws, sent):
    engine.store.workers.register(LIVE, ["model"], ttl=30)
    sid, step, owner = claimed_by(engine, ws, LIVE)
    expire(engine, sid, step.id)

    reaper.sweep_once(engine)

    assert sent == []
    again = engine.store.get_step(sid, step.id)
    assert again.status is StepStatus.RUNNING and again.owner == owner and again.attempt == 1
    assert engine.store.deadline(again) > time.time()


def test_an_expired_lease_of_a_worker_that_is_not_registered_is_re_dispatched(engine, ws, sent):
    sid, step, _ = claimed_by(engine, ws, "gone#1")  # never registered (or its registration expired)
    expire(engine, sid, step.id)
    reaper.sweep_once(engine)
    assert [s.id for s in sent] == [step.id]


def test_a_live_workers_hold_of_an_older_claim_does_not_spare_a_newer_one(engine, ws, sent):
    engine.store.workers.register(LIVE, ["model"], ttl=30)
    sid, step, _ = claimed_by(engine, ws, LIVE)
    engine.store.workers.forget(LIVE, sid, step.id, engine.store.get_step(sid, step.id).owner)
    engine.store.r.hset(keys.worker_steps(LIVE), keys.lease_member(sid, step.id), "an:older:claim")
    expire(engine, sid, step.id)
    reaper.sweep_once(engine)
    assert [s.id for s in sent] == [step.id]


def test_a_step_its_live_worker_no_longer_runs_is_dropped_then_reaped(engine, ws, sent):
    """A task that crashed without leaving its held steps: two passes later it is no longer spared."""
    engine.store.workers.register(LIVE, ["model"], ttl=30)
    sid, step, owner = claimed_by(engine, ws, LIVE)
    suspects = reaper.drop_stale_holds(engine, LIVE, running=set(), suspects=set())
    assert suspects == {(keys.lease_member(sid, step.id), owner)}
    assert reaper.drop_stale_holds(engine, LIVE, running={owner}, suspects=suspects) == set()  # still ran
    assert engine.store.workers.held(LIVE)  # ... so kept
    suspects = reaper.drop_stale_holds(engine, LIVE, running=set(), suspects=set())
    reaper.drop_stale_holds(engine, LIVE, running=set(), suspects=suspects)
    assert engine.store.workers.held(LIVE) == {}
    expire(engine, sid, step.id)
    reaper.sweep_once(engine)
    assert [s.id for s in sent] == [step.id]


def test_a_model_call_whose_lease_expires_while_it_runs_is_made_once(engine, ws, sent):
    """The model takes 1 s; meanwhile its lease is made to expire and the reaper sweeps: the step stays
    with its first call, which commits, and the model was asked once."""
    engine.store.workers.register(LIVE, ["model"], ttl=30)
    model = scripted_model(Script(turns=[Turn(text="Slow answer.", delay_seconds=1.0)]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, "go")
    follow_ups = []
    run = threading.Thread(target=run_step, args=(engine, rec.id, step.id, follow_ups.extend, LIVE))
    run.start()
    deadline = time.monotonic() + 5
    while engine.store.get_step(rec.id, step.id).status is not StepStatus.RUNNING:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    expire(engine, rec.id, step.id)
    reaper.sweep_once(engine)
    run.join(10)

    assert sent == []
    assert len(api_of(model).requests) == 1
    assert engine.store.get_step(rec.id, step.id).status is StepStatus.DONE
    assert any(isinstance(e, ResultEntry) for e in engine.store.entries(rec.id))
