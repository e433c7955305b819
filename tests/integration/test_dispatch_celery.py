"""A Celery process's sends (a worker's, tasks/send.py) on a real Redis broker."""

from __future__ import annotations

import base64
import json
import threading

import pytest

from demo.scripted import DEMO_PROMPT
from tasks import dispatch as dispatch_mod
from tasks.app import app, configure
from tasks.routes import queue_key
from workflows.engine import Engine
from workflows.models.options import SessionOptions
from workflows.store.redis_store import Store

pytestmark = pytest.mark.integration


def _queued(client, queue: str) -> list[dict]:
    """The Celery messages waiting in ``queue``: each one's task name and arguments."""
    out = []
    for raw in client.lrange(queue_key(queue), 0, -1):
        envelope = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(envelope["body"]))
        out.append({"task": envelope["headers"]["task"], "args": args})
    return out


def test_a_celery_process_sends_its_first_step_once_to_the_model_queue(real_redis, redis_server, settings, ws):
    configure(redis_server.url)
    engine = Engine(Store(real_redis), settings)
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    steps = engine.submit(rec.id, DEMO_PROMPT)
    dispatch_mod.dispatch(steps)
    assert _queued(real_redis, "model") == [{"task": "mainsail.model.call", "args": [rec.id, steps[0].id]}]


def test_a_send_from_a_new_thread_leaves_the_result_backend_alone(real_redis, redis_server, settings, ws):
    """Nothing reads a step's result, so a send makes no ``AsyncResult``: making one resolves Celery's result
    backend, once per thread (an entry-point scan and an import), in every new thread that sends."""
    configure(redis_server.url)
    engine = Engine(Store(real_redis), settings)
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    seen = {}

    def send() -> None:
        dispatch_mod.dispatch([step])
        seen["backend resolved"] = hasattr(app._local, "backend")

    thread = threading.Thread(target=send)
    thread.start()
    thread.join(30)
    assert seen == {"backend resolved": False}
    assert [m["args"] for m in _queued(real_redis, "model")] == [[rec.id, step.id]]
