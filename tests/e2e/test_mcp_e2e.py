"""MCP servers as a user meets them: the installed CLI, real worker processes, a private Redis, the real SDK
against the fake Messages API, and the test MCP server (tests/mcp_server.py, written with the ``mcp``
package) over stdio and over streamable HTTP on 127.0.0.1.

Each server is listed in ``system/init`` with its tools, its tools are offered to the model with their
schemas, a call runs when a rule allows it and is refused when a rule denies it (or nobody can be asked),
and the session survives its worker's death: between calls the next worker starts the server again, and a
call cut off by the death is reported as of unknown outcome, never sent again."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer
from tests.mcp_server import serve_http
from workflows.models import StepKind, StepStatus, UserEntry

pytestmark = pytest.mark.e2e
pytest.importorskip("mcp")

SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")


def call_from_prompt(body: dict) -> Turn:
    """The prompt ``CALL <tool> <json input>`` makes one call; after its result, the answer quotes it."""
    last = body["messages"][-1]
    blocks = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
    results = [b for b in blocks if b.get("type") == "tool_result"]
    if results:
        content = results[0].get("content")
        text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content or [])
        return Turn(text=f"Done: {text}")
    prompt = next(b["text"] for b in reversed(blocks) if b.get("type") == "text" and b["text"].startswith("CALL "))
    _, name, raw = prompt.split(" ", 2)
    return Turn(text="Calling.", tool_uses=[ToolUse(name=name, input=json.loads(raw))])


def prompt(tool: str, **args) -> str:
    return f"CALL {tool} {json.dumps(args)}"


@pytest.fixture
def env(cluster, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cluster.env["HOME"] = str(home)  # no settings or ~/.claude.json of the machine's user
    return cluster


def run(cluster, cwd: Path, text: str, *flags: str, fmt: str = "stream-json"):
    out = cluster.mainsail("-p", text, "--output-format", fmt, "--verbose", "--no-memory", *flags, cwd=cwd)
    return out


def lines(out) -> list[dict]:
    return [json.loads(ln) for ln in out.stdout.splitlines() if ln.strip()]


def results_of(cluster, sid: str) -> list[str]:
    return [e.message.blocks()[0].text for e in cluster.store.entries(sid)
            if isinstance(e, UserEntry) and e.origin == "tool_result"]


def test_a_stdio_server_is_listed_called_allowed_denied_and_survives_worker_restarts(env, tmp_path):
    cluster = env
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "calls.log"
    config = json.dumps({"mcpServers": {"srv": {"command": sys.executable, "args": [SERVER],
                                                "env": {"MCP_TEST_LOG": str(log)}}}})
    with FakeMessagesServer(call_from_prompt) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        worker = cluster.start_worker()

        # Listed (system/init), offered with its schema, called when a rule allows it.
        out = run(cluster, ws, prompt("mcp__srv__add", a=2, b=3), "--mcp-config", config,
                  "--allowedTools", "mcp__srv__add")
        assert out.returncode == 0, out.stderr
        init, *rest = lines(out)
        assert init["subtype"] == "init"
        assert init["mcp_servers"] == [{"name": "srv", "status": "connected", "source": "dynamic"}]
        assert {"mcp__srv__add", "mcp__srv__echo", "mcp__srv__count"} <= set(init["tools"])
        assert init["tools"].index("mcp__srv__add") > init["tools"].index("Bash")
        result = next(x for x in rest if x["type"] == "user")
        assert result["tool_use_result"] == '{"result":5}'
        assert rest[-1]["result"] == 'Done: {"result":5}'
        sent = next(t for t in api.requests[0]["tools"] if t["name"] == "mcp__srv__add")
        assert sent["input_schema"]["required"] == ["a", "b"] and sent["description"] == "Add two integers."
        sid = init["session_id"]

        # Denied by a rule (the server form), and asked of nobody in print mode without a rule.
        out = run(cluster, ws, prompt("mcp__srv__count", note="denied"), "--resume", sid,
                  "--disallowedTools", "mcp__srv", fmt="json")
        assert out.returncode == 0, out.stderr
        assert "denied by the deny rule mcp__srv" in results_of(cluster, sid)[-1]
        other = run(cluster, ws, prompt("mcp__srv__echo", text="hi"), "--mcp-config", config, fmt="json")
        denied = json.loads(other.stdout)
        assert denied["permission_denials"][0]["tool_name"] == "mcp__srv__echo"
        assert not log.exists(), "no denied call reached the server"

        # A new session, allowed by the server-wide rule: one call, then the worker dies between calls.
        out = run(cluster, ws, prompt("mcp__srv__count", note="one"), "--mcp-config", config,
                  "--allowedTools", "mcp__srv")
        assert out.returncode == 0, out.stderr
        sid = lines(out)[0]["session_id"]
        assert results_of(cluster, sid) == ["notes: 1"]
        cluster.kill(worker)
        worker = cluster.start_worker()
        out = run(cluster, ws, prompt("mcp__srv__count", note="two"), "--resume", sid, fmt="json")
        assert out.returncode == 0, out.stderr
        assert results_of(cluster, sid)[-1] == "notes: 2", "the new worker started the server again"

        # The worker dies during a call: the call is of unknown outcome, never sent again.
        slow = cluster.mainsail("-p", prompt("mcp__srv__slow", seconds=3, note="slow"), "--resume", sid,
                                "--output-format", "json", cwd=ws, background=True)
        wait_for(lambda: _running_tool(cluster, sid), 60, what="the MCP call to run")
        time.sleep(1.0)  # the call has reached the server
        cluster.kill(worker)
        cluster.start_worker()
        out, err = slow.communicate(timeout=120)
        assert slow.returncode == 0, err
        assert "outcome is unknown" in results_of(cluster, sid)[-1]
        time.sleep(4)  # past the slow call: had it been sent again, a second "slow" would be logged
        assert log.read_text().splitlines().count("slow") <= 1
        assert log.read_text().splitlines()[:2] == ["one", "two"]


def _running_tool(cluster, sid: str) -> bool:
    return any(s.kind is StepKind.TOOL and s.status is StepStatus.RUNNING for s in cluster.store.steps(sid))


@pytest.fixture
def http_server():
    with serve_http("web") as url:
        yield url


def test_an_http_server_from_mcp_json_once_approved(env, tmp_path, http_server):
    cluster = env
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"web": {"type": "http", "url": "${WEB_URL}"}}}))
    cluster.env["WEB_URL"] = http_server
    with FakeMessagesServer(call_from_prompt) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        worker = cluster.start_worker()

        # Trusted but not approved: never started (listed as pending, as Claude Code does), its tools not offered.
        out = run(cluster, ws, prompt("mcp__web__add", a=1, b=1), "--allowedTools", "mcp__web", "--trust-project")
        init = lines(out)[0]
        assert init["mcp_servers"] == [{"name": "web", "status": "pending", "source": "project"}]
        assert not any(t.startswith("mcp__web") for t in init["tools"])
        assert "No such tool available: mcp__web__add" in results_of(cluster, init["session_id"])[-1]

        (ws / ".claude" / "settings.local.json").write_text(json.dumps({"enabledMcpjsonServers": ["web"]}))
        out = run(cluster, ws, prompt("mcp__web__add", a=40, b=2), "--allowedTools", "mcp__web__add")
        assert out.returncode == 0, out.stderr
        init, *rest = lines(out)
        assert init["mcp_servers"] == [{"name": "web", "status": "connected", "source": "project"}]
        assert "mcp__web__add" in init["tools"]
        assert rest[-1]["result"] == 'Done: {"result":42}'
        sid = init["session_id"]

        out = run(cluster, ws, prompt("mcp__web__echo", text="x"), "--resume", sid,
                  "--disallowedTools", "mcp__web__echo", fmt="json")
        assert "denied by the deny rule mcp__web__echo" in results_of(cluster, sid)[-1]

        cluster.kill(worker)
        cluster.start_worker()
        out = run(cluster, ws, prompt("mcp__web__add", a=1, b=2), "--resume", sid, fmt="json")
        assert out.returncode == 0, out.stderr
        assert results_of(cluster, sid)[-1] == '{"result":3}', "a new worker reached the server again"


def test_mainsail_mcp_commands_against_real_servers(env, tmp_path, http_server):
    cluster = env
    ws = tmp_path / "ws"
    ws.mkdir()
    out = cluster.mainsail("mcp", "add", "srv", "--", sys.executable, SERVER, cwd=ws)
    assert out.returncode == 0, out.stderr
    assert cluster.mainsail("mcp", "add", "-s", "user", "-t", "http", "web", http_server, cwd=ws).returncode == 0
    listed = cluster.mainsail("mcp", "list", cwd=ws)
    assert listed.returncode == 0, listed.stderr
    assert f"srv: {sys.executable} {SERVER} - ✔ Connected" in listed.stdout
    assert f"web: {http_server} (HTTP) - ✔ Connected" in listed.stdout
    got = cluster.mainsail("mcp", "get", "web", cwd=ws)
    assert "Scope: User config (available in all your projects)" in got.stdout and "mcp__web__add" in got.stdout
    assert cluster.mainsail("mcp", "remove", "srv", cwd=ws).returncode == 0
    assert "srv:" not in cluster.mainsail("mcp", "list", cwd=ws).stdout


def _servers(marker: str) -> dict[int, int]:
    """Live test-server processes whose environment holds ``marker``: pid -> parent pid (the oracle)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            environ = (entry / "environ").read_bytes()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if stat[0] not in ("Z", "X") and SERVER.encode() in cmd and marker.encode() in environ:
            found[int(entry.name)] = int(stat[1])
    return found


def test_sessions_of_a_workspace_share_one_server_process_and_a_stopped_worker_leaves_none(env, tmp_path):
    cluster = env
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    marker = f"MCP_TEST_LOG={tmp_path / 'pool.log'}"
    config = json.dumps({"mcpServers": {"srv": {"command": sys.executable, "args": [SERVER],
                                                "env": {"MCP_TEST_LOG": str(tmp_path / "pool.log")}}}})
    with FakeMessagesServer(call_from_prompt) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        worker = cluster.start_worker("--processes", "1")
        pids = set()
        for ws in (one, one, two):
            out = run(cluster, ws, prompt("mcp__srv__pid"), "--mcp-config", config, "--allowedTools", "mcp__srv",
                      fmt="json")
            assert out.returncode == 0, out.stderr
            pids.add(int(json.loads(out.stdout)["result"].removeprefix("Done: ")))
        running = _servers(marker)
        assert len(pids) == 2 and set(running) == pids, "two sessions of one workspace: one process; another: its own"
        assert all(parent == worker.pid for parent in running.values()), "children of the worker"
        wait_for(lambda: any(w.get("mcp_servers") == "2" for w in cluster.store.workers.live().values()), 30,
                 what="the worker's registration to count its 2 MCP servers")
        worker.terminate()
        worker.wait(60)
        assert _servers(marker) == {}, "a worker that stops stops its servers (no orphan)"
