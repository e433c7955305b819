"""Recovery on a real Redis: a commit rides out a Redis restart, lost messages are found, an in-process
worker hands over in milliseconds (a private redis-server; Celery's broker lists are real)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import threading
import time

import pytest
import redis

from demo.scripted import DEMO_PROMPT
from tasks import reaper, runtime
from tasks.app import configure
from tasks.routes import queue_key
from tests.conftest import free_port
from tests.inline import Inline
from workflows.engine import Engine
from workflows.models import AssistantEntry, StepStatus
from workflows.models.options import SessionOptions
from workflows.settings import load_settings
from workflows.store.redis_store import Store
from workflows.store.resilience import ResilientEngine

pytestmark = pytest.mark.integration


class Restartable:
    """A redis-server with AOF on a fixed port, stopped (SIGTERM) and started again on demand."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="mainsail-test-restart-")
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [shutil.which("redis-server"), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
             "--save", "", "--appendonly", "yes"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except (redis.ConnectionError, redis.BusyLoadingError):
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.02)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def restartable():
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is not installed")
    server = Restartable()
    yield server
    server.close()


@pytest.fixture
def settings_for(tmp_path, monkeypatch):
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MAINSAIL_REDIS_URL", "MAINSAIL_MODEL"):
        monkeypatch.delenv(var, raising=False)

    def make(url: str, **kw):
        return load_settings(redis_url=url, data_dir=tmp_path / "data", auto_memory=False, session_memory=False,
                             **kw)
    return make


def test_a_commit_rides_out_a_redis_restart_without_a_second_attempt_or_entry(restartable, settings_for, ws):
    settings = settings_for(restartable.url, lease_seconds=30)
    client = runtime.redis_client(restartable.url, once_transactions=True)
    engine = Engine(Store(client), settings)
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    inline = Inline(engine)
    (step,) = engine.submit(rec.id, DEMO_PROMPT)
    owner = "me:1:x"
    assert engine.claim(rec.id, step.id, owner).step is not None
    from workflows.context.assemble import build_request
    from workflows.model.client import client_for, stream_reply

    reply = stream_reply(client_for(rec.model, settings), build_request(rec, [], settings.max_tokens),
                         lambda text: None, threading.Event())
    restartable.stop()
    restarting = threading.Event()
    back = threading.Timer(1.5, lambda: (restarting.set(), restartable.start()))
    back.start()
    follow_ups = ResilientEngine(engine).record_model_reply(rec.id, step.id, owner, reply)
    # The commit rode out the outage: it could only return once Redis was started again (how soon after is
    # a figure of bench/chaos.py, not a window here).
    assert restarting.is_set()
    back.join()
    assert [s.kind.value for s in follow_ups] == ["tool"]
    done = engine.store.get_step(rec.id, step.id)
    assert done.status is StepStatus.DONE and done.attempt == 1
    assert sum(isinstance(e, AssistantEntry) for e in engine.store.entries(rec.id)) == 1
    inline.dispatch(follow_ups)
    inline.drain()


def test_a_redis_restart_is_noticed_once(restartable, settings_for):
    engine = Engine(Store(redis.Redis.from_url(restartable.url)), settings_for(restartable.url))
    assert reaper.redis_restarted(engine) is False  # first look: nothing to compare with
    assert reaper.redis_restarted(engine) is False
    restartable.stop()
    restartable.start()
    assert reaper.redis_restarted(engine) is True  # one reaper sees it ...
    assert reaper.redis_restarted(engine) is False  # ... the next does not


def test_a_pending_step_whose_message_is_nowhere_is_sent_again(real_redis, redis_server, settings_for, ws):
    configure(redis_server.url)
    settings = settings_for(redis_server.url)
    engine = Engine(Store(real_redis), settings)
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (lost,) = engine.submit(rec.id, DEMO_PROMPT)  # committed, never dispatched (say, its sender died)
    other = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (queued,) = engine.submit(other.id, DEMO_PROMPT)
    from tasks.dispatch import dispatch

    dispatch([queued])  # in its queue: not lost
    third = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    (taken,) = engine.submit(third.id, DEMO_PROMPT)
    engine.store.workers.register("alive#1", ["model"], ttl=30)
    engine.store.workers.note_taken("alive#1", third.id, taken.id)  # a live worker has it
    assert [s.id for s in reaper.orphaned_steps(engine.store)] == [lost.id]
    assert reaper.resend_orphans(engine, "test") == 1
    assert real_redis.llen(queue_key("model")) == 2
    assert reaper.orphaned_steps(engine.store) == []


def test_an_in_process_worker_registers_once_consuming_and_leaves_in_milliseconds(real_redis, redis_server,
                                                                                   settings_for, ws, monkeypatch):
    from tasks.worker import InProcessWorker
    from workflows import settings as settings_module

    monkeypatch.setenv("MAINSAIL_REDIS_URL", redis_server.url)
    settings_module.get_settings.cache_clear()
    configure(redis_server.url)
    engine = runtime.engine(settings_for(redis_server.url))
    worker = InProcessWorker(concurrency=2).start()
    try:
        assert worker.ready.wait(30), "the consumer never started"
        assert set(engine.store.workers.live()) == {worker.name}
        info = engine.store.workers.live()[worker.name]
        assert info["api_key"] == "no" and info["queues"] == "model,tools,memory"
        rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
        from cli.follow import follow
        from tasks.dispatch import dispatch
        from workflows.models import ResultEntry

        dispatch(engine.submit(rec.id, DEMO_PROMPT))
        result = follow(engine.store, rec.id, on_entry=lambda e: None, timeout=60)
        assert isinstance(result, ResultEntry) and result.subtype == "success"
        deadline = time.monotonic() + 5
        while engine.store.workers.held(worker.name) and time.monotonic() < deadline:
            time.sleep(0.02)  # the last step leaves them right after it dispatched what follows
        assert engine.store.workers.held(worker.name) == {}
    finally:
        t0 = time.monotonic()
        worker.stop()
        left = time.monotonic() - t0
        worker.controller.stop(in_sighandler=False)  # a CLI leaves with os._exit; a test process goes on
        worker.thread.join(10)
        from celery._state import _set_task_join_will_block

        _set_task_join_will_block(False)  # (as stop(shutdown=True) does: the next test's result.get() works)
    assert left < 0.5, f"leaving took {left:.2f}s with nothing running"
    assert engine.store.workers.live() == {} and engine.store.workers.dead() == []
    runtime.stop_draining()
    settings_module.get_settings.cache_clear()
