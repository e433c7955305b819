"""A command's send without Celery (tasks/message.py) puts on the queue what kombu puts there, and a Celery
worker runs it: the same JSON, key for key and in the same order, but for the ids each send makes anew."""

from __future__ import annotations

import json
import re
import threading
import uuid

import pytest

from tasks import dispatch as dispatch_mod
from tasks import runtime
from tasks.app import app, configure
from tasks.message import task_message
from tasks.routes import queue_key, queue_of

pytestmark = pytest.mark.integration

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _normal(raw: bytes | str) -> str:
    """The message's text with every uuid the same (task id, reply_to, delivery tag differ per send)."""
    return UUID.sub("<uuid>", raw.decode() if isinstance(raw, bytes) else raw)


def _private(queue: str) -> str:
    """A queue of this test's own: an in-process worker another test left on the same Redis consumes the real
    ones (the routing key is the only field the queue's name reaches, and its own test is below)."""
    return f"{queue}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("task,args,queue", [
    ("mainsail.model.call", ["sid-1", "step-1"], "model"),
    ("mainsail.tools.run", ["7a1f", "0b2c"], "tools"),
    ("mainsail.notify.deliver", ['{"type":"waiting","text":"é \\" \\n"}', "sub-1"], "model"),
    ("mainsail.memory.fork", ["s", "x" * 300], "memory"),
])
def test_the_message_is_the_one_kombu_pushes(real_redis, redis_server, task, args, queue):
    queue = _private(queue)
    configure(redis_server.url)
    app.send_task(task, args=args, queue=queue, ignore_result=True, add_to_parent=False)
    (theirs,) = real_redis.lrange(queue_key(queue), 0, -1)
    ours = task_message(task, args, queue)
    assert _normal(ours) == _normal(theirs)
    assert list(json.loads(ours)) == list(json.loads(theirs))  # (key order: what the text compares too)


def test_routes_are_celerys(redis_server):
    configure(redis_server.url)
    for task in ("mainsail.model.call", "mainsail.tools.run", "mainsail.memory.extract", "mainsail.reaper.sweep",
                 "mainsail.notify.deliver", "mainsail.schedule.fire", "something.else"):
        assert queue_of(task) == app.amqp.router.route({}, task)["queue"].name, task


def test_a_process_without_celery_sends_through_the_store_and_a_worker_runs_it(real_redis, redis_server):
    """``dispatch.send_task`` in a process that never configured Celery pushes the message itself; a Celery
    worker on the queue takes it and runs the task."""
    runtime.set_redis_url(redis_server.url)
    assert not runtime.celery_configured()
    ran = threading.Event()
    seen = {}

    @app.task(name="mainsail.model.test_probe", bind=True)
    def probe(self, a, b):
        seen.update(args=[a, b], id=self.request.id)
        ran.set()

    queue = _private("model")
    dispatch_mod.send_task("mainsail.model.test_probe", ["one", "two"], queue=queue)
    (raw,) = real_redis.lrange(queue_key(queue), 0, -1)
    assert json.loads(raw)["headers"]["task"] == "mainsail.model.test_probe"
    configure(redis_server.url)  # (now the worker's side: Celery on the same Redis)
    worker = app.Worker(queues=[queue], pool="solo", concurrency=1, without_mingle=True, without_gossip=True,
                        without_heartbeat=True, loglevel="WARNING")
    thread = threading.Thread(target=worker.start, daemon=True)
    thread.start()
    try:
        assert ran.wait(30), "the worker did not run the task sent without Celery"
    finally:
        worker.stop(in_sighandler=False)
        thread.join(10)
    assert seen["args"] == ["one", "two"] and seen["id"] == json.loads(raw)["headers"]["id"]
