"""A process that never said which Redis it uses refuses to send, and so does one whose Celery app has no
broker: Celery would fall back to its default, an AMQP server on localhost (a test's denial once sent its step
into the machine's RabbitMQ that way, and the next test's configure() kept that connection)."""

from __future__ import annotations

import pytest

from tasks import app as app_module
from tasks import dispatch as dispatch_module
from tasks import runtime
from workflows.exceptions import ConfigurationError
from workflows.models import StepKind, StepRecord

STEP = StepRecord(id="st-1", session_id="s-1", kind=StepKind.MODEL, epoch=0, queue="model")


@pytest.fixture
def nowhere(monkeypatch):
    """No Redis URL anywhere, Celery not configured, and every way out recorded."""
    sent = []
    monkeypatch.setattr(runtime, "_redis_url", None)
    monkeypatch.setattr(runtime, "_celery", False)
    monkeypatch.setattr(runtime, "_store", None)
    monkeypatch.setattr(runtime, "_engine", None)
    monkeypatch.delenv("MAINSAIL_REDIS_URL", raising=False)
    monkeypatch.setattr("tasks.runtime.get_settings", lambda: type("S", (), {
        "redis_url": None, "redis_retry_seconds": 0.1, "task_events": False, "redis_ca_file": None})())
    monkeypatch.setattr("tasks.send.get_settings", lambda: type("S", (), {
        "redis_retry_seconds": 0.1, "task_events": False})())
    monkeypatch.setitem(app_module.app.conf, "broker_url", None)
    monkeypatch.setattr(app_module.app, "send_task", lambda *a, **kw: sent.append(a))
    return sent


def test_dispatch_without_a_redis_refuses_and_sends_nothing(nowhere):
    with pytest.raises(ConfigurationError) as info:
        dispatch_module.dispatch([STEP])
    assert str(info.value).startswith("No Redis is configured in this process: task mainsail.model.call not sent")
    assert nowhere == []
    dispatch_module.dispatch([])  # nothing to send: nothing to refuse


def test_celery_without_a_broker_refuses_and_sends_nothing(nowhere, monkeypatch):
    monkeypatch.setattr(runtime, "_celery", True)
    with pytest.raises(ConfigurationError) as info:
        dispatch_module.dispatch([STEP])
    assert str(info.value).startswith("Celery's broker is not configured in this process")
    assert nowhere == []


def test_configuring_drops_connections_made_before_any_configuration(monkeypatch):
    dropped = []
    monkeypatch.setitem(app_module.app.conf, "broker_url", None)
    monkeypatch.setattr(app_module, "_drop_connections", lambda: dropped.append(True))
    monkeypatch.setattr("tasks.runtime.set_redis_url", lambda url: None)
    monkeypatch.setattr(runtime, "_celery", runtime._celery)  # (configure marks it: restored after the test)
    app_module.configure("redis://127.0.0.1:1/0")
    assert dropped == [True] and runtime.celery_configured()
    dropped.clear()
    app_module.configure("redis://127.0.0.1:1/0")  # the same broker again: its connections stay
    assert dropped == []
