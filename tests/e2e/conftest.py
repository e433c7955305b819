"""End-to-end fixtures: the installed ``mainsail`` command, real worker processes,
a private Redis and a fake Messages API over HTTP."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.fakeapi import FakeMessagesServer
from workflows.store.redis_store import Store

MAINSAIL = shutil.which("mainsail")


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.05, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                out.append(int(entry))
    return out


class Cluster:
    """Worker processes and CLI invocations sharing one environment."""

    def __init__(self, env: dict, store: Store, tmp: Path) -> None:
        self.env = env
        self.store = store
        self.tmp = tmp
        self.procs: list[subprocess.Popen] = []

    def registered(self, pid: int) -> bool:
        """Whether worker process ``pid``, or one of its children (``--processes``), registered."""
        pids = {pid, *children(pid)}
        return any(name.decode().partition("@")[0].removeprefix("mainsail-") in {str(p) for p in pids}
                   for name in self.store.r.zrangebyscore("mainsail:workers", time.time(), "+inf"))

    def start_worker(self, *args: str, cmd: list[str] | None = None, env: dict | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"worker-{len(self.procs)}.log", "wb")
        proc = subprocess.Popen(cmd or [MAINSAIL, "worker", *args], env=env or self.env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        wait_for(lambda: self.registered(proc.pid) or proc.poll() is not None, 30, what="worker registration")
        assert proc.poll() is None, (self.tmp / f"worker-{len(self.procs) - 1}.log").read_text()
        return proc

    @contextmanager
    def serving(self, turn):
        """The fake Messages API answering with ``turn``, and a worker of this cluster's that calls it."""
        with FakeMessagesServer(turn) as api:
            self.env["ANTHROPIC_BASE_URL"] = api.url
            self.start_worker()
            yield api

    def kill(self, proc: subprocess.Popen) -> None:
        """SIGKILL, as a crash would: no shutdown, no ack, no unregistration."""
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def mainsail(self, *args: str, cwd: Path, background: bool = False, timeout: float = 120,
                 stdin=subprocess.DEVNULL):
        cmd = [MAINSAIL, *args]
        if background:
            proc = subprocess.Popen(cmd, cwd=cwd, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=stdin, text=True)
            self.procs.append(proc)
            return proc
        return subprocess.run(cmd, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout,
                              stdin=stdin)

    def mainsail_cmd(self) -> list[str]:
        return [MAINSAIL]

    def session_id(self) -> str:
        (sid,) = self.store.session_ids()
        return sid

    def wait_state(self, state: str, timeout: float = 30) -> str:
        def reached():
            ids = self.store.session_ids()
            return ids and self.store.get_session(ids[0]).state.value == state and ids[0]
        return wait_for(reached, timeout, what=f"the session to be {state}")

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


@pytest.fixture
def private_cluster(real_redis, redis_server, tmp_path):
    """Worker processes of the test's own, on the session's private Redis (flushed). In a module whose
    ``cluster`` is :func:`shared_cluster`, the tests that kill, freeze or restart workers, or start one with
    another environment, take this."""
    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed (pip install -e .)")
    c = Cluster(cluster_env(redis_server.url, tmp_path / "data"), Store(real_redis), tmp_path)
    yield c
    c.stop()


@pytest.fixture
def cluster(private_cluster):
    return private_cluster


@pytest.fixture(scope="module")
def shared_worker(tmp_path_factory):
    """One worker process, a private Redis and a routing fake Messages API for a module's tests
    (tests/e2e/shared_worker.py)."""
    from tests.conftest import RedisServer
    from tests.e2e.shared_worker import SharedWorker

    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed (pip install -e .)")
    server = RedisServer()
    try:
        shared = SharedWorker(server, tmp_path_factory.mktemp("shared-worker"))
    except BaseException:
        server.stop()
        raise
    yield shared
    shared.stop()
    server.stop()


@pytest.fixture
def shared_cluster(shared_worker, tmp_path):
    """This test's view of its module's shared worker: the ``cluster`` API, its own sessions and script."""
    from tests.e2e.shared_worker import SharedCluster

    c = SharedCluster(shared_worker, tmp_path)
    yield c
    c.stop()
    c.settle()


def cluster_env(redis_url: str, data_dir: Path) -> dict:
    """The environment of a test's workers and CLI runs: this process's, with no Mainsail or Anthropic settings
    but a private Redis and data directory, short leases and a test API key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
    env["MAINSAIL_WARM"] = "false"  # (no warm server per test: tests/conftest.py)
    env.update({
        "MAINSAIL_REDIS_URL": redis_url,
        "MAINSAIL_DATA_DIR": str(data_dir),
        "MAINSAIL_LEASE_SECONDS": "2",
        "MAINSAIL_REAPER_INTERVAL_SECONDS": "0.5",
        "MAINSAIL_PICKUP_TIMEOUT_SECONDS": "10",
        "MAINSAIL_EMBEDDED_WORKER": "false",
        "MAINSAIL_CLAUDE_TRANSCRIPTS": "false",  # (tests/conftest.py)
        "ANTHROPIC_API_KEY": "test-key",
        "PYTHONUNBUFFERED": "1",
    })
    return env


@pytest.fixture
def workspace(ws):
    return ws


def pytest_collection_modifyitems(items):
    for item in items:
        if "/e2e/" in str(item.fspath):
            item.add_marker(pytest.mark.e2e)


__all__ = ["wait_for", "Cluster", "children", "cluster_env", "sys"]


def pytest_configure(config):
    config.addinivalue_line("markers", "chaos: workers SIGKILLed and Redis restarted under load (bench/chaos.py)")
