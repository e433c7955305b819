"""A waiting command keeps a worker on duty, says what it waits for, and checks credentials where they are
used (fakeredis; no worker is really started)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from cli import standby
from demo.scripted import DEMO_PROMPT
from workflows.exceptions import MissingCredentials
from workflows.models.options import SessionOptions


@dataclass
class Rt:
    engine: object
    worker: object | None = None
    standby: object | None = None
    queues: list | None = None

    @property
    def store(self):
        return self.engine.store


@pytest.fixture
def rt(engine):
    return Rt(engine)


@pytest.fixture
def started(monkeypatch):
    calls = []

    def start(rt, settings, *, queues=None, quiet=False, why=None):
        calls.append(why)
        rt.worker = object()
        rt.queues = sorted(queues)

    monkeypatch.setattr(standby, "start_embedded_worker", start)
    return calls


def test_a_worker_starts_here_the_moment_nobody_serves_a_needed_queue(rt, settings, started, ws):
    rec = rt.engine.create_session(str(ws), SessionOptions(model="scripted:demo"), tools_queue="tools.ws-host")
    rt.store.workers.register("w#1", ["model", "tools", "memory"], ttl=30)
    keeper = standby.Standby(rt, settings)
    assert keeper.check() == set() and started == []
    keeper.watch(rec.id)  # its tools run on a per-host queue nobody serves
    assert keeper.check() == {"tools.ws-host"}
    assert started == ["No live worker serves queue tools.ws-host; running one in this process."]
    assert rt.queues == ["memory", "model", "tools", "tools.ws-host"]
    rt.store.workers.retire("w#1")  # killed: its registration expired
    keeper.check()
    assert len(started) == 1  # one in-process worker is enough


def test_no_worker_starts_here_when_embedded_workers_are_off(rt, settings, started):
    settings.embedded_worker = False
    assert standby.Standby(rt, settings).check() == {"model", "tools", "memory"}
    assert started == []


def test_what_a_session_waits_for(rt, ws):
    rec = rt.engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    assert standby.waiting_for(rt.store, rec.id, embedded=True) is None  # idle
    (step,) = rt.engine.submit(rec.id, DEMO_PROMPT)
    assert standby.waiting_for(rt.store, rec.id, embedded=False) == (
        "waiting for a worker on queue model…; none is running: start one with `mainsail worker -Q model`")
    assert standby.waiting_for(rt.store, rec.id, embedded=True) == (
        "waiting for a worker on queue model… (starting one in this process)")
    rt.store.workers.register("mainsail-7@h#1", ["model", "tools"], ttl=30, info={"host": "h", "pid": "7"})
    assert standby.waiting_for(rt.store, rec.id, embedded=True) == (
        "waiting for the model's reply to be picked up from queue model (1 live worker serves it)…")
    rt.engine.claim(rec.id, step.id, "h:7:abc", "mainsail-7@h#1")
    assert standby.waiting_for(rt.store, rec.id, embedded=True) == (
        "waiting for the model's reply on worker mainsail-7@h…")
    rt.store.workers.retire("mainsail-7@h#1")
    assert standby.waiting_for(rt.store, rec.id, embedded=True) == (
        "waiting: the worker running the model's reply stopped answering; it goes to another worker within a "
        "few seconds…")


def test_a_note_comes_after_a_quiet_while_and_once_per_change(rt, ws, capsys):
    rec = rt.engine.create_session(str(ws), SessionOptions(model="scripted:demo"))
    rt.engine.submit(rec.id, DEMO_PROMPT)
    notes = standby.WaitNotes(rt.store, 2.0, lambda: False)
    notes.note(rec.id, 1.0)
    assert capsys.readouterr().err == ""
    notes.note(rec.id, 5.0)
    notes.note(rec.id, 7.5)  # the same: not said again
    assert capsys.readouterr().err.count("waiting for a worker on queue model") == 1
    notes.note(rec.id, 0.1)  # news came
    notes.note(rec.id, 5.5)  # quiet again: said again
    assert "waiting for a worker on queue model" in capsys.readouterr().err


def test_the_model_may_be_called_by_a_worker_that_holds_the_key(rt, settings):
    rt.store.workers.register("w#1", ["model"], ttl=30, info={"api_key": "yes", "base_url": ""})
    standby.require_model_access(rt, settings, "claude-sonnet-4-5")  # no key here: fine


def test_no_worker_that_can_call_the_model_is_refused_by_name(rt, settings):
    rt.store.workers.register("mainsail-1@h#9", ["model", "tools"], ttl=30, info={"api_key": "no", "base_url": ""})
    rt.store.workers.register("tools-only#2", ["tools"], ttl=30, info={"api_key": "yes", "base_url": ""})
    settings.anthropic_api_key = "a-key-here-is-not-sent-to-workers"
    with pytest.raises(MissingCredentials) as info:
        standby.require_model_access(rt, settings, "claude-sonnet-4-5")
    msg = str(info.value)
    assert "mainsail-1@h" in msg and "ANTHROPIC_API_KEY" in msg and "tools-only" not in msg
    rt.store.workers.register("compat#3", ["model"], ttl=30, info={"api_key": "no", "base_url": "http://llm"})
    standby.require_model_access(rt, settings, "claude-sonnet-4-5")  # a compatible endpoint needs no key


def test_with_no_worker_this_commands_own_credentials_count(rt, settings):
    with pytest.raises(MissingCredentials, match="no worker is running"):
        standby.require_model_access(rt, settings, "claude-sonnet-4-5")
    standby.require_model_access(rt, settings, "scripted:demo")
    settings.anthropic_api_key = "k"
    standby.require_model_access(rt, settings, "claude-sonnet-4-5")
    settings.anthropic_api_key = None
    settings.embedded_worker = False  # a worker started later will call it: the command waits and says so
    standby.require_model_access(rt, settings, "claude-sonnet-4-5")


def test_a_worker_too_old_to_say_is_trusted(rt, settings):
    rt.store.workers.register("old#1", ["model"], ttl=30)
    standby.require_model_access(rt, settings, "claude-sonnet-4-5")
