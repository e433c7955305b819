"""Shared fixtures.

Real-Redis tests never touch a server they did not start: the suite starts a
private ``redis-server`` on a free port (no persistence) and flushes only it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A private redis-server process for this test run."""

    def __init__(self, appendonly: bool = False) -> None:
        binary = shutil.which("redis-server")
        if not binary:
            pytest.skip("redis-server is not installed (apt-get install redis-server)")
        self.dir = tempfile.mkdtemp(prefix="mainsail-test-redis-")
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir, "--save", "",
             "--appendonly", "yes" if appendonly else "no", "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise RuntimeError("private redis-server did not start")
                time.sleep(0.05)
        client.close()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_server():
    server = RedisServer()
    yield server
    server.stop()


@pytest.fixture
def real_redis(redis_server):
    """A client of the private server, flushed before and after the test."""
    client = redis_server.client()
    client.flushall()
    yield client
    client.flushall()
    client.close()


@pytest.fixture
def fake_redis():
    import fakeredis

    client = fakeredis.FakeRedis()
    yield client
    client.flushall()


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """Settings with no credentials and a private data dir."""
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "MAINSAIL_REDIS_URL", "MAINSAIL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    from workflows.settings import load_settings

    return load_settings(data_dir=tmp_path / "data", lease_seconds=2.0, pickup_timeout_seconds=5.0)


@pytest.fixture
def ws(tmp_path):
    """A workspace holding the demo's files."""
    from workflows.scripted import DEMO_FILES

    d = tmp_path / "ws"
    d.mkdir()
    for name, content in DEMO_FILES.items():
        (d / name).write_text(content)
    return d
