"""Taking back a dead worker's steps at once, fenced, and saying exactly what happened (fakeredis)."""

from __future__ import annotations

import time

import pytest

from demo.scripted import DEMO_PROMPT, Script, ToolUse, Turn
from tasks import reaper
from tasks.housekeeper import retire
from tests.inline import Inline, scripted_model
from workflows.models import StepStatus, SystemEntry, UserEntry
from workflows.models.options import SessionOptions
from workflows.steps.run import owner_token
from workflows.store import keys

DEAD = "mainsail-4242@box#a1b2c3"


@pytest.fixture
def sent(monkeypatch):
    """What the reaper dispatches."""
    out = []
    monkeypatch.setattr(reaper, "resend", lambda steps: out.extend(steps))
    return out


def bash_session(engine, ws, command="echo x >> ran.txt"):
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={"command": command})]),
                                         Turn(text="done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)  # the model asks for the command
    (tool_step,) = list(inline.queue)
    inline.queue.clear()
    return rec, tool_step, inline


def die(engine, name=DEAD):
    """``name`` registered, then stopped refreshing: its registration is gone, its held steps stay."""
    engine.store.workers.register(name, ["model", "tools"], ttl=30)
    engine.store.workers.retire(name)


def warnings(engine, sid):
    return [e.content for e in engine.store.entries(sid) if isinstance(e, SystemEntry) and e.subtype == "warning"]


def test_a_dead_workers_model_step_runs_again_at_once_and_says_so(engine, ws, sent):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    owner = owner_token()
    die(engine)
    assert engine.claim(rec.id, step.id, owner, DEAD).step is not None
    assert engine.store.workers.held(DEAD) == {keys.lease_member(rec.id, step.id): owner}

    assert reaper.reap_dead(engine, "me") == 1
    assert [s.id for s in sent] == [step.id]  # long before its 2 s lease expires
    assert engine.store.get_step(rec.id, step.id).status is StepStatus.PENDING
    (warning,) = warnings(engine, rec.id)
    assert warning.startswith(f"Worker mainsail-4242@box died while Model step {step.id[:8]} was running")
    assert warning.endswith("(attempt 1); running it again on another worker.")
    assert engine.store.workers.dead() == [] and engine.store.workers.held(DEAD) == {}
    assert engine.fail_step(rec.id, step.id, owner, "late") == []  # the dead worker's commit is fenced off
    inline = Inline(engine)
    inline.dispatch(sent)
    inline.drain()
    assert engine.store.get_step(rec.id, step.id).attempt == 2


def test_a_command_running_when_its_worker_died_is_reported_once_and_never_run_again(engine, ws, sent):
    rec, tool_step, inline = bash_session(engine, ws)
    die(engine)
    assert engine.claim(rec.id, tool_step.id, owner_token(), DEAD).step is not None

    reaper.reap_dead(engine, "me")
    assert [s.kind.value for s in sent] == ["model"]  # the next model call; the command is not sent again
    assert engine.store.get_step(rec.id, tool_step.id).status is StepStatus.DONE
    (warning,) = warnings(engine, rec.id)
    assert warning == (f"Worker mainsail-4242@box died while Tool step {tool_step.id[:8]} (Bash) was running: "
                       "its outcome is unknown, not re-run.")
    results = [e for e in engine.store.entries(rec.id) if isinstance(e, UserEntry) and e.origin == "tool_result"]
    (result,) = results
    assert "outcome is unknown" in result.message.blocks()[0].text
    assert result.display == "outcome unknown (its worker was lost); not re-run"
    inline.dispatch(sent)
    inline.drain()
    assert not (ws / "ran.txt").exists()


def test_a_message_taken_but_not_claimed_is_sent_again_without_a_word(engine, ws, sent):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    die(engine)
    engine.store.workers.note_taken(DEAD, rec.id, step.id)
    reaper.reap_dead(engine, "me")
    assert [s.id for s in sent] == [step.id]
    assert warnings(engine, rec.id) == []
    assert engine.store.get_step(rec.id, step.id).attempt == 0


def test_a_step_claimed_by_another_worker_since_is_left_alone(engine, ws, sent):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    die(engine)
    engine.store.workers.note_taken(DEAD, rec.id, step.id)
    assert engine.claim(rec.id, step.id, "alive:1:x", "alive#1").step is not None
    reaper.reap_dead(engine, "me")
    assert sent == []
    assert engine.store.get_step(rec.id, step.id).owner == "alive:1:x"


def test_the_follow_ups_of_a_finished_step_are_sent_again(engine, ws, sent):
    """It died after its commit, maybe before dispatching what followed: those go out again."""
    rec, tool_step, _ = bash_session(engine, ws)
    die(engine)
    model_step = next(s for s in engine.store.steps(rec.id) if s.kind.value == "model")
    engine.store.r.hset(keys.worker_steps(DEAD), keys.lease_member(rec.id, model_step.id), "old-owner")
    reaper.reap_dead(engine, "me")
    assert [s.id for s in sent] == [tool_step.id]


def test_a_session_lock_the_dead_worker_held_is_freed_at_once(engine, ws, sent):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    die(engine)
    engine.store.workers.note_taken(DEAD, rec.id, step.id)
    engine.store.r.set(keys.lock(rec.id), f"{DEAD}|token", px=30_000)  # it died holding the lock
    engine.store.r.set(keys.lock("other"), "someone-else|token", px=30_000)
    engine.store.lock_wait = 120  # waiting for that lock would take its 30 s expiry: far from any slow machine
    t0 = time.monotonic()
    reaper.reap_dead(engine, "me")
    assert time.monotonic() - t0 < 15, "waited for the dead worker's lock"
    assert [s.id for s in sent] == [step.id]
    assert engine.store.r.exists(keys.lock("other"))  # another holder's lock is never touched


def test_a_worker_takes_its_locks_with_its_name(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo"))
    engine.store.lock_owner = "w#1"
    with engine.store.lock(rec.id):
        assert engine.store.r.get(keys.lock(rec.id)).decode().startswith("w#1|")


def test_a_reaper_never_takes_back_its_own_steps(engine, ws, sent):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    die(engine, "me#1")  # its own registration lapsed (a stall), but it is alive
    engine.claim(rec.id, step.id, owner_token(), "me#1")
    assert reaper.reap_dead(engine, "me#1") == 0
    assert engine.store.get_step(rec.id, step.id).status is StepStatus.RUNNING


def test_a_worker_that_registered_again_is_not_dead(engine, ws, sent):
    die(engine)
    engine.store.workers.register(DEAD, ["model"], ttl=30)
    assert engine.store.workers.dead() == []
    assert reaper.reap_dead(engine, "me") == 0


def test_leaving_hands_back_what_the_worker_took(engine, ws, sent):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    engine.store.workers.register("leaving#1", ["model"], ttl=30)
    engine.store.workers.note_taken("leaving#1", rec.id, step.id)
    assert retire(engine, "leaving#1") == 1
    assert [s.id for s in sent] == [step.id]
    assert engine.store.workers.live() == {} and engine.store.workers.dead() == []


def test_an_expired_lease_of_a_command_is_reported_as_unknown_not_re_run(engine, ws, settings):
    rec, tool_step, inline = bash_session(engine, ws)
    assert engine.claim(rec.id, tool_step.id, "gone").step is not None
    inline.dispatch(engine.reap(time.time() + settings.lease_seconds + 1))
    assert [s.kind.value for s in inline.queue] == ["model"]
    (warning,) = warnings(engine, rec.id)
    assert warning == (f"Tool step {tool_step.id[:8]} (Bash): its worker sent no heartbeat for 2s, so its lease "
                       "expired: its outcome is unknown, not re-run.")
    inline.drain()
    assert not (ws / "ran.txt").exists()


def test_a_claim_asked_again_by_its_owner_is_the_same_claim(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    first = engine.claim(rec.id, step.id, "me:1:a").step
    again = engine.claim(rec.id, step.id, "me:1:a").step  # its first reply was lost to a Redis error
    assert first is not None and again is not None and again.attempt == 1
    assert engine.claim(rec.id, step.id, "other:2:b").step is None  # a live lease


def test_a_worker_that_died_mid_sweep_leaves_nothing_waiting_long(engine, ws, sent):
    """A reaper killed after taking a step back but before sending it: the dead worker is still listed
    with that step, so the next reaper sends the (now pending) step."""
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    owner = owner_token()
    die(engine)
    engine.claim(rec.id, step.id, owner, DEAD)
    engine.take_back(DEAD, rec.id, step.id, owner)  # ... and the reaper died here
    engine.store.r.delete(keys.worker_reaping(DEAD))  # its hold expired
    reaper.reap_dead(engine, "me")
    assert [s.id for s in sent] == [step.id]


def test_a_step_whose_session_was_removed_meanwhile_is_simply_not_ours_any_more(engine, ws):
    """`mainsail rm --force` while a step runs: its heartbeat says stop, its commit records nothing, a
    late message is skipped; no SessionNotFound reaches the worker's log as a crash."""
    rec, tool_step, _ = bash_session(engine, ws)
    owner = owner_token()
    claim = engine.claim(rec.id, tool_step.id, owner)
    assert claim.step is not None
    engine.delete_session(rec.id, force=True)

    assert engine.heartbeat(rec.id, tool_step.id, owner) is False
    assert engine.fail_step(rec.id, tool_step.id, owner, "too late") == []
    assert engine.save_fork_checkpoint(rec.id, tool_step.id, owner, "{}") is False
    late = engine.claim(rec.id, tool_step.id, owner_token())
    assert late.step is None and late.follow_ups == [] and late.session is None
    assert rec.id not in engine.store.session_ids()


def test_a_worker_whose_registration_lapsed_is_taken_back_only_once_it_stays_gone(engine, ws, sent):
    """A live worker starved of CPU refreshes its registration late: its running model calls must not be
    made a second time, so a lapse has to last ``confirm`` seconds before its steps are taken back."""
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    die(engine)
    assert engine.claim(rec.id, step.id, owner_token(), DEAD).step is not None
    seen: dict[str, float] = {}
    assert reaper.reap_dead(engine, "me", seen, confirm=0.3) == 0 and DEAD in seen  # lapsed: noted, not taken
    engine.store.workers.register(DEAD, ["model"], ttl=30)  # it was only late
    assert reaper.reap_dead(engine, "me", seen, confirm=0.3) == 0 and seen == {}
    engine.store.workers.retire(DEAD)
    assert reaper.reap_dead(engine, "me", seen, confirm=0.3) == 0
    time.sleep(0.35)
    assert reaper.reap_dead(engine, "me", seen, confirm=0.3) == 1 and [s.id for s in sent] == [step.id]
