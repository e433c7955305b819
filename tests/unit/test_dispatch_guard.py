"""A process that never configured the broker refuses to send: Celery would fall back to its default,
an AMQP server on localhost (a test's denial once sent its step into the machine's RabbitMQ that way,
and the next test's configure() kept that connection)."""

from __future__ import annotations

import pytest

from tasks import app as app_module
from tasks import dispatch as dispatch_module
from workflows.exceptions import ConfigurationError
from workflows.models import StepKind, StepRecord


def test_dispatch_without_a_configured_broker_refuses_and_sends_nothing(monkeypatch):
    sent = []
    monkeypatch.setitem(app_module.app.conf, "broker_url", None)
    monkeypatch.setattr(app_module.app, "send_task", lambda *a, **kw: sent.append(a))
    step = StepRecord(id="st-1", session_id="s-1", kind=StepKind.MODEL, epoch=0, queue="model")
    with pytest.raises(ConfigurationError) as info:
        dispatch_module.dispatch([step])
    assert str(info.value).startswith("No broker is configured in this process")
    assert "1 step(s) not sent" in str(info.value)
    assert sent == []
    dispatch_module.dispatch([])  # nothing to send: nothing to refuse


def test_configuring_drops_connections_made_before_any_configuration(monkeypatch):
    dropped = []
    monkeypatch.setitem(app_module.app.conf, "broker_url", None)
    monkeypatch.setattr(app_module, "_drop_connections", lambda: dropped.append(True))
    monkeypatch.setattr("tasks.runtime.set_redis_url", lambda url: None)
    app_module.configure("redis://127.0.0.1:1/0")
    assert dropped == [True]
    dropped.clear()
    app_module.configure("redis://127.0.0.1:1/0")  # the same broker again: its connections stay
    assert dropped == []
