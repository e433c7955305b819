"""A client command rides out a Redis that is there but silent (SIGSTOPped: as a ``CLIENT PAUSE``, a ``DEBUG
SLEEP`` or a stalled host looks to a client): it says it waits, and succeeds once Redis answers again; a Redis
that stays silent past MAINSAIL_REDIS_RETRY_SECONDS gets the clear error, naming Redis, its URL and the fix
(issue 29 item 5)."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from tests.conftest import RedisServer
from tests.e2e.conftest import MAINSAIL, wait_for
from workflows.store.redis_store import Store

WAITING = "retrying for up to"


@pytest.fixture(scope="module")
def server():
    """A Redis of this module's own: it is stopped and resumed here."""
    s = RedisServer()
    yield s
    os.kill(s.proc.pid, signal.SIGCONT)
    s.stop()


@pytest.fixture
def env(server, tmp_path):
    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed (pip install -e .)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
    env["MAINSAIL_WARM"] = "false"  # (no warm server per test: tests/conftest.py)
    env.update(MAINSAIL_REDIS_URL=server.url, MAINSAIL_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path),
               MAINSAIL_EMBEDDED_WORKER="false", MAINSAIL_CLAUDE_TRANSCRIPTS="false", ANTHROPIC_API_KEY="test-key",
               PYTHONUNBUFFERED="1")
    return env


def during_a_pause(server, env, tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    """Run ``mainsail ARGS`` while Redis is stopped; resume Redis once the command says it waits."""
    err = tmp_path / "stderr"
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        with open(err, "w") as f:
            proc = subprocess.Popen([MAINSAIL, *args], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=f,
                                    text=True)
            wait_for(lambda: WAITING in err.read_text() or proc.poll() is not None, 60, what="the command to wait")
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    out, _ = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err.read_text()), err.read_text()


def test_send_during_a_redis_pause_succeeds_after_it(server, env, tmp_path):
    r = server.client()
    r.flushdb()
    store = Store(r)
    submitted = subprocess.run([MAINSAIL, "submit", "first"], env=env, cwd=tmp_path, capture_output=True,
                               text=True, timeout=60)
    assert submitted.returncode == 0, submitted.stderr
    sid = submitted.stdout.strip()
    out, err = during_a_pause(server, env, tmp_path, "send", sid[:8], "second")
    assert out.returncode == 0, err
    assert WAITING in err and f"Redis at {server.url}" in err
    assert f"Session {sid[:8]} is busy; queued as message 1 of 1" in out.stdout
    assert store.inbox(sid) == ["second"]


def test_sessions_during_a_redis_pause_lists_them_after_it(server, env, tmp_path):
    server.client().flushdb()
    out, err = during_a_pause(server, env, tmp_path, "sessions")
    assert out.returncode == 0, err
    assert WAITING in err and "No sessions yet" in out.stdout


def test_a_redis_silent_past_the_wait_is_named_with_the_fix(server, env, tmp_path):
    os.kill(server.proc.pid, signal.SIGSTOP)
    try:
        out = subprocess.run([MAINSAIL, "pending"], env=dict(env, MAINSAIL_REDIS_RETRY_SECONDS="1"), cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)
    assert out.returncode == 1
    assert f"Could not connect to Redis at {server.url}: is it running?" in out.stderr
    assert "set MAINSAIL_REDIS_URL to a reachable server" in out.stderr and "Traceback" not in out.stderr
