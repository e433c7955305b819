"""The process's MCP pool against real stdio servers (tests/mcp_server.py as child processes): one process
per workspace and resolved configuration, shared by sessions, stopped when idle or cut off, started again
after a kill, all stopped with the worker. Processes are counted in /proc (the oracle), never by timing."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import wait_for
from workflows.exceptions import McpServerError
from workflows.mcp.pool import REUSED, STARTED, STOPPED, McpPool
from workflows.models.mcp import McpServerConfig
from workflows.store.metrics import TALLY, field

pytest.importorskip("mcp")

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")
CONFIG = McpServerConfig(name="srv", command=sys.executable, args=[SERVER])


#: Test-server children that were alive before this test's pool (another test in this process may have left
#: one behind): not this pool's.
_before: set[int] = set()


def servers() -> set[int]:
    """Live test-server processes that are children of this process (zombies excluded), but those alive before
    this test's pool."""
    return _children() - _before


def _children() -> set[int]:
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmd = fh.read().split(b"\0")
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] not in ("Z", "X") and SERVER.encode() in cmd:
            found.add(int(entry))
    return found


@pytest.fixture
def pool():
    TALLY.drain()
    _before.clear()
    _before.update(_children())
    p = McpPool(idle_seconds=600)
    yield p
    p.close_all()
    TALLY.drain()


def pid_of(pool, sid, ws, env=None) -> int:
    conn = pool.connection(sid, CONFIG, cwd=str(ws), env=env or {}, timeout=30)
    return int(conn.call_tool("pid", {}, 30, None).content[0].text)


def test_sessions_of_one_workspace_share_a_process_workspaces_and_envs_do_not_and_none_outlives_the_pool(pool, tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    pids = {pid_of(pool, sid, one) for sid in ("s1", "s2", "s3")}
    assert len(pids) == 1 and servers() == pids, "three sessions of one workspace: one server process"
    assert pool.running() == 1
    other = pid_of(pool, "s4", two)
    assert other not in pids and servers() == pids | {other}, "another workspace: its own process"
    token = pid_of(pool, "s5", one, {"TOKEN": "b"})
    assert len(servers()) == 3 and token not in pids | {other}, "another resolved environment: its own process"
    counts = TALLY.drain()
    assert counts[field(STARTED)] == 3 and counts[field(REUSED)] == 2
    pool.close_all()
    assert servers() == set(), "close_all returns once the worker's server processes are gone"
    assert TALLY.drain()[field(STOPPED, reason="shutdown")] == 3


def test_an_idle_server_is_stopped_and_a_busy_one_is_not(pool, tmp_path):
    conn = pool.connection("s1", CONFIG, cwd=str(tmp_path), env={}, timeout=30)
    conn.call_tool("pid", {}, 30, None)
    (pid,) = servers()
    later = time.monotonic() + 601
    conn.inflight += 1  # a call in flight (as _wait counts it): never idle
    assert pool.close_idle(now=later) == 0 and servers() == {pid}
    conn.inflight -= 1
    assert pool.close_idle(now=time.monotonic() + 599) == 0, "not idle long enough"
    assert pool.close_idle(now=later) == 1
    wait_for(lambda: not servers(), 10, 0.05, "the idle server's process to exit")
    assert pool.running() == 0 and TALLY.drain()[field(STOPPED, reason="idle")] == 1


def test_a_killed_server_is_started_again_at_the_next_call(pool, tmp_path):
    first = pid_of(pool, "s1", tmp_path)
    os.kill(first, signal.SIGKILL)
    conn = pool.connection("s2", CONFIG, cwd=str(tmp_path), env={}, timeout=30)
    wait_for(lambda: conn.broken, 10, 0.02, "the connection to see its server gone")
    again = pid_of(pool, "s1", tmp_path)
    assert again != first and servers() == {again}
    assert TALLY.drain()[field(STOPPED, reason="exited")] == 1


def test_two_sessions_calls_run_at_once_and_a_cut_off_call_retires_the_server_after_the_others(pool, tmp_path):
    conn = pool.connection("a", CONFIG, cwd=str(tmp_path), env={}, timeout=30)
    assert pool.connection("b", CONFIG, cwd=str(tmp_path), env={}, timeout=30) is conn
    (pid,) = (pid_of(pool, "a", tmp_path),)
    answer = {}
    other = threading.Thread(target=lambda: answer.setdefault("b", conn.call_tool("slow", {"seconds": 2}, 30, None)))
    other.start()
    wait_for(lambda: conn.inflight == 1, 10, 0.01, "session b's call to be sent")
    assert conn.call_tool("echo", {"text": "meanwhile"}, 30, None).content[0].text == "meanwhile"
    assert "b" not in answer, "session a's answer came while b's call still ran (JSON-RPC ids, not turns)"
    with pytest.raises(McpServerError, match="did not finish running slow"):
        conn.call_tool("slow", {"seconds": 20}, 0.2, None)
    pool.retire(conn)
    assert servers() == {pid} and not conn.broken, "kept while another session's call is in flight"
    other.join(30)
    assert answer["b"].content[0].text.startswith("notes")
    fresh = pid_of(pool, "a", tmp_path)
    assert fresh != pid, "no new call goes to a retired server"
    wait_for(lambda: servers() == {fresh}, 10, 0.05, "the retired server to be stopped")
    assert TALLY.drain()[field(STOPPED, reason="cut_off")] == 1
