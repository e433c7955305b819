"""An Agent SDK client's in-process MCP servers (fakeredis, inline steps): the front door's side
(cli/headless/sdk_mcp.py, answered here by hand as the SDK would) and the engine's (workflows/mcp/client.py):
listing at initialize, a call as a durable request, its answer as the tool result, a shell that cannot run
it, ``mcp_status``."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from cli.headless.control import Control, ControlError
from cli.headless.sdk_mcp import SdkServers, mcp_status, sdk_handlers
from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, api_of, scripted_model
from workflows.exceptions import ClientOnlyRequest
from workflows.mcp.calls import NO_CLIENT
from workflows.models import PermissionRequestEntry, UserEntry
from workflows.models.mcp import McpStatus, parse_servers
from workflows.models.options import SessionOptions, SessionSetup

pytest.importorskip("mcp")

ADD = {"name": "add", "description": "Add two numbers",
       "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]}}


class Client:
    """The stream's control channel, with what it sent to the SDK client and a way to answer like the SDK."""

    def __init__(self) -> None:
        self.sent: list[dict] = []
        self.control = Control(SimpleNamespace(emit=self.sent.append), {})

    def last(self) -> dict:
        return self.sent[-1]["request"]["message"]

    def answer(self, **body) -> None:
        msg = self.sent[-1]
        response = {"mcp_response": {"jsonrpc": "2.0", "id": msg["request"]["message"].get("id"), **body}}
        self.control.on_response({"type": "control_response", "response": {
            "subtype": "success", "request_id": msg["request_id"], "response": response}})


@pytest.fixture
def session(engine, ws, monkeypatch):
    """A session with an SDK server ``calc`` and a stdio one; the model calls calc's add, then answers."""
    inline = Inline(engine)
    monkeypatch.setattr("cli.session_service.dispatch", inline.dispatch)
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="mcp__calc__add", input={"a": 2, "b": 3})]),
                                         Turn(text="done")]))
    servers = parse_servers({"calc": {"type": "sdk", "name": "calc"}}, source="dynamic", origin="--mcp-config",
                            environ={})
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"),
                                SessionSetup(mcp_servers=servers))
    client = Client()
    held: list[str] = []
    front = SdkServers(SimpleNamespace(store=engine.store, engine=engine), rec.id, client.control, held.extend)
    return SimpleNamespace(sid=rec.id, inline=inline, model=model, client=client, front=front, held=held)


def listed(s) -> None:
    """The client connected: the front door lists calc's tools (handshake first), answered as the SDK does."""
    s.front.discover()
    assert s.client.last()["method"] == "initialize" and s.front.busy
    s.front.hold("go")
    s.client.answer(result={"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                            "serverInfo": {"name": "calc", "version": "1.0.0"}})
    assert s.client.last() == {"jsonrpc": "2.0", "method": "notifications/initialized"}
    s.client.answer(result={})
    assert s.client.last()["method"] == "tools/list"
    s.client.answer(result={"tools": [ADD]})


def asked(engine, s) -> PermissionRequestEntry:
    s.inline.dispatch(engine.submit(s.sid, "go"))
    s.inline.drain()
    return next(e for e in engine.store.entries(s.sid) if isinstance(e, PermissionRequestEntry))


def test_tools_are_listed_at_initialize_and_held_prompts_go_in_after(engine, session):
    listed(session)
    assert session.held == ["go"] and not session.front.busy
    (srv,) = engine.store.get_session(session.sid).mcp_servers
    assert srv.status is McpStatus.CONNECTED and srv.tools == ["mcp__calc__add"]


def test_a_call_is_a_durable_request_its_answer_the_tool_result(engine, session):
    listed(session)
    e = asked(engine, session)
    assert e.kind == "mcp" and e.mcp_call == {"server": "calc", "tool": "add", "arguments": {"a": 2, "b": 3}}
    assert engine.store.get_session(session.sid).state.value == "awaiting_permission", "no worker waits"
    session.front.call(session.sid, e)
    sent = session.client.last()
    assert sent["method"] == "tools/call" and sent["params"]["name"] == "add"
    assert sent["params"]["arguments"] == {"a": 2, "b": 3}
    session.client.answer(result={"content": [{"type": "text", "text": "sum=5"}], "isError": False})
    session.inline.drain()
    results = [e.message.blocks()[0] for e in engine.store.entries(session.sid)
               if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert [(r.content, r.is_error) for r in results] == [("sum=5", False)]
    assert api_of(session.model).requests[-1]["messages"][-1]["content"][0]["content"] == "sum=5"
    assert engine.store.get_session(session.sid).state.value == "idle"


def test_a_json_rpc_error_is_an_error_result(engine, session):
    listed(session)
    session.front.call(session.sid, asked(engine, session))
    session.client.answer(error={"code": -32603, "message": "handler crashed"})
    session.inline.drain()
    (r,) = [e.message.blocks()[0] for e in engine.store.entries(session.sid)
            if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert r.is_error and "MCP error -32603: handler crashed" in r.content


def test_a_shell_cannot_run_it_but_can_deny_it(engine, session):
    listed(session)
    e = asked(engine, session)
    with pytest.raises(ClientOnlyRequest, match="only that client's connection can run it"):
        engine.decide_request(session.sid, e.request_id, True)
    session.inline.dispatch(engine.decide_request(session.sid, e.request_id, False, message="no client"))
    session.inline.drain()
    (r,) = [e.message.blocks()[0] for e in engine.store.entries(session.sid)
            if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert r.is_error and "no client" in r.content


def test_without_a_client_connection_a_worker_marks_it_failed(engine, session):
    session.inline.dispatch(engine.submit(session.sid, "go"))
    session.inline.drain()
    (srv,) = engine.store.get_session(session.sid).mcp_servers
    assert srv.status is McpStatus.FAILED and srv.error == NO_CLIENT


def test_stdin_ending_while_listing_fails_the_servers_and_releases_the_prompts(engine, session):
    session.front.discover()
    session.front.hold("go")
    session.front.client_gone()
    assert session.held == ["go"]
    (srv,) = engine.store.get_session(session.sid).mcp_servers
    assert srv.status is McpStatus.FAILED and "closed its input" in srv.error


def test_mcp_status_in_the_sdks_shape(engine, ws):
    servers = parse_servers({"calc": {"type": "sdk", "name": "calc"}, "files": {"command": "srv", "args": ["-x"]},
                             "web": {"type": "http", "url": "https://x/mcp", "headers": {"A": "secret"}}},
                            source="dynamic", origin="t", environ={})
    servers[1].status, servers[1].error = McpStatus.FAILED, "it crashed"
    rec = engine.create_session(str(ws), SessionOptions(), SessionSetup(mcp_servers=servers))
    calc, files, web = mcp_status(engine.store, engine.store.get_session(rec.id))
    assert calc == {"name": "calc", "status": "pending", "transport": "sdk", "scope": "dynamic", "source": "sdk"}
    assert files == {"name": "files", "status": "failed", "error": "it crashed", "transport": "stdio",
                     "config": {"type": "stdio", "command": "srv", "args": ["-x"]}, "scope": "dynamic",
                     "source": "dynamic"}
    assert web["config"] == {"type": "http", "url": "https://x/mcp"}, "headers (tokens) are not shown"


def test_requests_mainsail_does_not_do_are_refused_by_name(session):
    handlers = sdk_handlers(session.front)
    for subtype in ("mcp_toggle", "stop_task"):
        with pytest.raises(ControlError, match=subtype):
            handlers[subtype]({})
    with pytest.raises(ControlError, match="No MCP server named 'nope'"):
        handlers["mcp_reconnect"]({"serverName": "nope"})


def test_a_new_connection_runs_the_calls_an_earlier_one_left_unanswered(engine, session):
    listed(session)
    asked(engine, session)  # the program ended before it answered: the session still waits
    again = Client()
    front = SdkServers(SimpleNamespace(store=engine.store, engine=engine), session.sid, again.control, list)
    session.client = again
    session.front = front
    listed(session)
    sent = again.last()
    assert sent["method"] == "tools/call" and sent["params"]["arguments"] == {"a": 2, "b": 3}
    again.answer(result={"content": [{"type": "text", "text": "sum=5"}]})
    session.inline.drain()
    assert engine.store.get_session(session.sid).state.value == "idle"
    assert api_of(session.model).requests[-1]["messages"][-1]["content"][0]["content"] == "sum=5"
