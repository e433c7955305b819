"""The process's one lease keeper: renews every held step's lease, cancels a step no longer ours (fakeredis)."""

from __future__ import annotations

import threading
import time

from demo.scripted import DEMO_PROMPT
from workflows.models.options import SessionOptions
from workflows.steps.run import Heartbeat, owner_token
from workflows.store import keys
from workflows.store.leases import LeaseKeeper, keeper_for
from workflows.store.resilience import ResilientEngine


def claimed(engine, ws, n=1):
    """``n`` sessions, each with its model step claimed: ``[(sid, step, owner)]``."""
    out = []
    for _ in range(n):
        rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
        (step,) = engine.submit(rec.id, DEMO_PROMPT)
        owner = owner_token()
        assert engine.claim(rec.id, step.id, owner).step is not None
        out.append((rec.id, step, owner))
    return out


def deadline(engine, sid, step):
    return engine.store.r.zscore(keys.leases(), keys.lease_member(sid, step.id))


def until(condition, timeout: float = 30.0) -> bool:
    """Wait for ``condition()`` (an event, not a window: a loaded machine may take long)."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def test_one_keeper_renews_every_held_lease_on_one_thread(engine, ws, settings):
    keeper = LeaseKeeper(engine, check_seconds=0.1, wake_seconds=0.02, idle_seconds=0.1)
    held = claimed(engine, ws, 3)
    before = {step.id: deadline(engine, sid, step) for sid, step, _ in held}
    def keepers() -> set[threading.Thread]:  # by name: other threads (the metrics flusher...) come and go meanwhile
        return {t for t in threading.enumerate() if t.name == "mainsail-leases"}

    others = keepers()  # (other engines' keepers in this process, if any: they may end meanwhile, never start)
    leases = [keeper.hold(sid, step.id, owner, threading.Event()) for sid, step, owner in held]
    assert keepers() - others == {keeper._thread}  # one thread, not one per step
    assert until(lambda: all(deadline(engine, sid, step) > before[step.id] for sid, step, _ in held))
    assert not any(lease.cancel.is_set() for lease in leases)
    for lease in leases:
        keeper.release(lease)
    assert until(lambda: keeper._thread is None)  # nothing held: the thread ended


def test_a_cancelled_session_sets_its_steps_cancel_within_a_check(engine, ws):
    keeper = LeaseKeeper(engine, check_seconds=0.1, wake_seconds=0.02)
    (sid, step, owner), (other_sid, other, other_owner) = claimed(engine, ws, 2)
    cancel, other_cancel = threading.Event(), threading.Event()
    keeper.hold(sid, step.id, owner, cancel)
    keeper.hold(other_sid, other.id, other_owner, other_cancel)
    engine.cancel(sid)  # the epoch moves on
    assert cancel.wait(1.0)
    assert not other_cancel.is_set()
    assert keeper.owners() == {other_owner}  # the cancelled one is no longer held


def test_a_removed_session_cancels_its_step(engine, ws):
    keeper = LeaseKeeper(engine, check_seconds=0.1, wake_seconds=0.02)
    ((sid, step, owner),) = claimed(engine, ws)
    cancel = threading.Event()
    keeper.hold(sid, step.id, owner, cancel)
    engine.delete_session(sid, force=True)
    assert cancel.wait(1.0)


def test_a_batch_api_replaces_the_loop(engine, ws):
    calls = []

    class Batched:
        settings = engine.settings

        def heartbeat_many(self, items):
            calls.append(items)
            return [False] + [True] * (len(items) - 1)

    batched = Batched()  # the keeper holds its engine weakly
    keeper = LeaseKeeper(batched)
    leases = [keeper.hold("s", f"step{i}", "me", threading.Event()) for i in range(3)]
    keeper.tick(leases)
    assert len(calls) == 1 and [i[1] for i in calls[0]] == ["step0", "step1", "step2"]
    assert [lease.cancel.is_set() for lease in leases] == [True, False, False]


def test_a_redis_error_keeps_the_step_and_tries_again(engine, ws):
    class Failing:
        settings = engine.settings

        def heartbeat(self, *a, **kw):
            raise ConnectionError("Redis is down")

    failing = Failing()
    keeper = LeaseKeeper(failing)
    lease = keeper.hold("s", "step", "me", threading.Event())
    keeper.tick([lease])
    assert not lease.cancel.is_set() and keeper.owners() == {"me"}


def test_heartbeat_is_a_handle_on_the_engines_keeper(engine, ws):
    ((sid, step, owner),) = claimed(engine, ws)
    keeper = keeper_for(engine)
    assert keeper_for(ResilientEngine(engine)) is keeper
    beat = Heartbeat(ResilientEngine(engine), step, owner, threading.Event())
    beat.start()
    assert keeper.owners() == {owner}
    beat.stop()
    assert keeper.owners() == set()
