"""A command's send without Celery (tasks/message.py) puts on the queue what kombu puts there, and a Celery
worker runs it: the same JSON, key for key and in the same order, but for the ids each send makes anew."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from kombu import pools

from tasks import dispatch as dispatch_mod
from tasks import runtime
from tasks.app import _drop_connections, app, configure
from tasks.message import task_message
from tasks.routes import queue_key, queue_of
from tests.e2e.conftest import wait_for

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]

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
    pools.reset()  # (a producer pool another test closed stays kombu's for this URL: start afresh)
    _drop_connections()
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
    worker (a process of its own) on the queue takes it and runs the task."""
    runtime.set_redis_url(redis_server.url)
    assert not runtime.celery_configured()
    queue = _private("model")
    dispatch_mod.send_task("mainsail.model.test_probe", ["one", "two"], queue=queue)
    (raw,) = real_redis.lrange(queue_key(queue), 0, -1)
    assert json.loads(raw)["headers"]["task"] == "mainsail.model.test_probe"
    env = {**os.environ, "PROBE_REDIS": redis_server.url, "PYTHONPATH": str(ROOT)}
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "tests.integration.celery_probe", "worker",
                               "-Q", queue, "-P", "solo", "--without-mingle", "--without-gossip",
                               "--without-heartbeat", "-l", "WARNING"], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: real_redis.get("probe:ran") or worker.poll() is not None, 60, 0.1,
                 "the worker to run the task sent without Celery")
        assert worker.poll() is None, worker.stderr.read().decode()[-2000:]
    finally:
        worker.terminate()
        worker.wait(30)
    assert json.loads(real_redis.get("probe:ran")) == ["one", "two", json.loads(raw)["headers"]["id"]]
