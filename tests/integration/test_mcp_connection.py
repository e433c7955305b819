"""MCP connections against real servers: tests/mcp_server.py over stdio (a child process) and over
streamable HTTP on 127.0.0.1, through the official SDK and Mainsail's pool."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.mcp_server import free_port, serve_http
from workflows.exceptions import McpServerError
from workflows.mcp.pool import McpPool
from workflows.mcp.tools import to_output
from workflows.models.mcp import McpServerConfig

pytest.importorskip("mcp")

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


def stdio(name="t", **env) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=[SERVER], env=env)


@pytest.fixture
def pool():
    p = McpPool(idle_seconds=600)
    yield p
    p.close_all()


def connect(pool, config, tmp_path, sid="s1", timeout=30.0):
    return pool.connection(sid, config, cwd=str(tmp_path), env=config.env, timeout=timeout)


def test_a_stdio_server_lists_its_tools_and_answers_calls(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-worker-secret")
    conn = connect(pool, stdio(MCP_TEST_NAME="alice"), tmp_path)
    names = [t.name for t in conn.list_tools(30)]
    assert {"add", "echo", "count", "crash", "pid"} <= set(names)
    out = to_output(conn.call_tool("add", {"a": 2, "b": 3}, 30, None), "mcp__t__add")
    assert out.content == '{"result":5}' and not out.is_error
    out = to_output(conn.call_tool("echo", {"text": "hi"}, 30, None), "mcp__t__echo")
    assert out.content == "hi"
    who = to_output(conn.call_tool("whoami", {}, 30, None), "x").content
    assert who == "alice key=False", "the server gets its own env, never the worker's secrets"
    assert connect(pool, stdio(MCP_TEST_NAME="alice"), tmp_path) is conn, "kept for the session's next calls"


def test_a_server_that_crashed_between_calls_is_started_again(pool, tmp_path):
    conn = connect(pool, stdio(), tmp_path)
    first = int(conn.call_tool("pid", {}, 30, None).content[0].text)
    os.kill(first, signal.SIGKILL)
    time.sleep(0.3)
    again = connect(pool, stdio(), tmp_path)
    assert again is not conn
    assert int(again.call_tool("pid", {}, 30, None).content[0].text) != first


def test_a_crash_during_a_call_is_that_calls_error_and_the_next_call_restarts_it(pool, tmp_path):
    conn = connect(pool, stdio(), tmp_path)
    with pytest.raises(McpServerError, match="closed the connection while running crash"):
        conn.call_tool("crash", {}, 30, None)
    assert conn.broken
    again = connect(pool, stdio(), tmp_path)
    assert again.call_tool("echo", {"text": "back"}, 30, None).content[0].text == "back"


def test_a_cancel_stops_the_wait_at_once(pool, tmp_path):
    conn = connect(pool, stdio(), tmp_path)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(McpServerError, match="Cancelled"):  # the call itself takes 20 s
        conn.call_tool("slow", {"seconds": 20}, 60, cancel)
    assert time.monotonic() - started < 10  # (a longer call would outlive the test: the server sleeps on)


def test_a_call_past_its_timeout_is_abandoned(pool, tmp_path):
    conn = connect(pool, stdio(), tmp_path)
    with pytest.raises(McpServerError, match="did not finish running slow within 0.5s"):
        conn.call_tool("slow", {"seconds": 20}, 0.5, None)


def test_servers_that_cannot_start_say_why(pool, tmp_path):
    with pytest.raises(McpServerError, match=r"could not be started \(/nonexistent/server\): No such file"):
        connect(pool, McpServerConfig(name="gone", command="/nonexistent/server"), tmp_path)
    script = tmp_path / "bad.py"
    script.write_text("import sys\nprint('no config found', file=sys.stderr)\nsys.exit(2)\n")
    with pytest.raises(McpServerError, match="stderr: no config found"):
        connect(pool, McpServerConfig(name="bad", command=sys.executable, args=[str(script)]), tmp_path)
    with pytest.raises(McpServerError, match="did not answer within 1s"):
        connect(pool, McpServerConfig(name="mute", command="sleep", args=["30"]), tmp_path, timeout=1.0)
    assert len(pool) == 0


def test_idle_connections_are_closed(pool, tmp_path):
    conn = connect(pool, stdio(), tmp_path)
    pid = int(conn.call_tool("pid", {}, 30, None).content[0].text)
    assert pool.close_idle(now=time.monotonic() + 601) == 1
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and _state(pid) not in ("Z", "X"):
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}") or _state(pid) in ("Z", "X"), "the server process ended"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "X"


@pytest.fixture
def http_server():
    with serve_http() as url:
        yield url


def test_a_streamable_http_server(pool, tmp_path, http_server):
    config = McpServerConfig(name="web", type="http", url=http_server, headers={"X-Test": "1"})
    conn = connect(pool, config, tmp_path)
    assert "add" in [t.name for t in conn.list_tools(30)]
    assert to_output(conn.call_tool("add", {"a": 40, "b": 2}, 30, None), "x").content == '{"result":42}'


def test_an_unreachable_http_server_says_so(pool, tmp_path):
    config = McpServerConfig(name="web", type="http", url=f"http://127.0.0.1:{free_port()}/mcp")
    with pytest.raises(McpServerError, match="could not be started .*ConnectError"):
        connect(pool, config, tmp_path, timeout=20)
