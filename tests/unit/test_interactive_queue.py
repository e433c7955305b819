"""Interactive mode and the queue: /clear-queue, /status showing it, and Ctrl-C starting the next
queued message (sent from another shell) rather than stranding it."""

from __future__ import annotations

from cli import interactive
from statemachines import State
from tests.unit.test_interactive_loop import make, rt, ws  # noqa: F401 - fixtures
from workflows.models import UserEntry


def test_clear_queue_drops_the_messages_sent_from_elsewhere(rt, ws, capsys, monkeypatch):  # noqa: F811
    monkeypatch.setattr("cli.session_service.dispatch", lambda steps: None)
    ui = make(rt, ws, "/status", "/clear-queue", "/clear-queue", "/exit", mode="bypassPermissions")
    rt.engine.submit(ui.sid, "now")  # busy: the model step is never run here
    for text in ("later one", "later two"):
        assert rt.engine.submit(ui.sid, text) == []
    ui.loop()
    out = capsys.readouterr().out
    assert "(2 queued: they run next, in the order sent" in out and "queued 1   later one" in out
    assert "Dropped 2 queued messages: 'later one', 'later two'" in out
    assert f"No message is queued for session {ui.sid[:8]}." in out
    assert rt.store.inbox(ui.sid) == []


def test_ctrl_c_during_a_turn_runs_the_next_queued_message(rt, ws, capsys, monkeypatch):  # noqa: F811
    sent = []
    monkeypatch.setattr("cli.session_service.dispatch", sent.extend)

    def follow(store, sid, **kw):
        rt.engine.submit(sid, "from another shell")  # queued while the turn runs
        raise KeyboardInterrupt

    monkeypatch.setattr(interactive, "follow", follow)
    ui = make(rt, ws, "Do something slow", "/exit", mode="bypassPermissions")
    ui.loop()
    out = capsys.readouterr().out
    assert "Interrupted." in out
    assert "The next queued message runs now: 'from another shell'. /clear-queue drops what waits" in out
    assert rt.store.get_session(ui.sid).state is State.QUERYING
    prompts = [(e.origin, e.message.text()) for e in rt.store.entries(ui.sid) if isinstance(e, UserEntry)]
    assert prompts == [("prompt", "Do something slow"), ("interrupt", "[Request interrupted by user]"),
                       ("prompt", "from another shell")], prompts
    assert len(sent) == 2, "the second run's first step was dispatched too"
