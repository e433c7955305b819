"""The notifications' outbox (workflows/notify/outbox.py): the commit that ends a run records its event in Redis
in the same atomic write, and a dispatcher (the committing process, or the reaper's sweep when that process died)
sends each (event, subscription) delivery task once."""

from __future__ import annotations

import time

import pytest

from demo.scripted import Script, Turn
from tests.inline import Inline, scripted_model
from tests.session_kw import create as create_session
from workflows.notify.outbox import HOLD_SECONDS, Outbox
from workflows.notify.subscriptions import make_subscription


def subscribe(engine, ws, events=None):
    return engine.store.notify().add(make_subscription(kind="generic", url="http://127.0.0.1:9/hook", token=None,
                                                       workspace=str(ws), events=events, private_ok=True))


def finish_run(engine, ws, text="Done.") -> str:
    """A session whose one run ends well, its steps run inline by this process."""
    rec = create_session(engine, str(ws), model=scripted_model(Script(turns=[Turn(text=text)])), auto_memory=False)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "hello"))
    inline.drain()
    return rec.id


class Sent(list):
    """A sender that records (event type, session, subscription) and can be told to fail."""

    def __init__(self, fail_for: str | None = None) -> None:
        super().__init__()
        self.fail_for = fail_for

    def __call__(self, event, sub) -> None:
        if sub.id == self.fail_for:
            raise ConnectionError("the broker went away")
        self.append((event.type, event.session_id, sub.id))


def later(engine, seconds: float) -> float:
    return time.time() + engine.settings.notify_outbox_grace_seconds + seconds


def test_the_commit_records_the_event_and_the_sweep_sends_it_once_when_nothing_else_did(engine, tmp_path):
    sub = subscribe(engine, tmp_path)
    sid = finish_run(engine, tmp_path)  # (this engine's committer has no outbox sender: "died" before sending)
    notify = engine.store.notify()
    [(event_id, due)] = notify.outbox().items()
    assert due > time.time() * 1000  # left to its own process first
    sent = Sent()
    outbox = Outbox(notify, sent)
    assert outbox.sweep() == 0 and sent == []  # not due yet
    assert outbox.sweep(now=later(engine, 1)) == 1
    assert sent == [("finished", sid, sub.id)] and notify.outbox() == {}
    assert outbox.sweep(now=later(engine, 2)) == 0 and len(sent) == 1  # once
    outbox.landed([(event_id, int(due))])  # a late dispatcher of the same commit finds nothing
    assert len(sent) == 1


def test_the_committing_process_sends_at_once_and_the_sweep_finds_nothing(engine, tmp_path):
    sub = subscribe(engine, tmp_path)
    sent = Sent()
    engine.committer.outboxes.append(Outbox(engine.store.notify(), sent).landed)
    sid = finish_run(engine, tmp_path)
    assert sent == [("finished", sid, sub.id)] and engine.store.notify().outbox() == {}
    assert Outbox(engine.store.notify(), sent).sweep(now=later(engine, 1)) == 0 and len(sent) == 1


def test_a_dispatcher_that_died_midway_leaves_the_rest_to_the_sweep_which_sends_only_that(engine, tmp_path):
    first, second = subscribe(engine, tmp_path), subscribe(engine, tmp_path)
    sent = Sent(fail_for=second.id)
    engine.committer.outboxes.append(Outbox(engine.store.notify(), sent).landed)
    sid = finish_run(engine, tmp_path)
    assert sent == [("finished", sid, first.id)]
    notify = engine.store.notify()
    assert len(notify.outbox()) == 1  # still there, held by the dispatcher that failed
    sweep = Outbox(notify, Sent())
    assert sweep.sweep(now=later(engine, 1)) == 0  # its hold has not lapsed
    assert sweep.sweep(now=time.time() + HOLD_SECONDS + 1) == 1
    assert sweep.send == [("finished", sid, second.id)] and notify.outbox() == {}


def test_an_event_nobody_subscribes_to_leaves_the_outbox_at_once(engine, tmp_path):
    sent = Sent()
    engine.committer.outboxes.append(Outbox(engine.store.notify(), sent).landed)
    finish_run(engine, tmp_path)
    assert sent == [] and engine.store.notify().outbox() == {}


@pytest.mark.parametrize("events", [["waiting"], ["finished"]])
def test_a_subscription_gets_only_its_events(engine, tmp_path, events):
    sub = subscribe(engine, tmp_path, events=events)
    sent = Sent()
    engine.committer.outboxes.append(Outbox(engine.store.notify(), sent).landed)
    sid = finish_run(engine, tmp_path)
    assert sent == ([("finished", sid, sub.id)] if events == ["finished"] else [])
    assert engine.store.notify().outbox() == {}
