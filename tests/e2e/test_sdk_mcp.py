"""The Agent SDK's in-process MCP servers (``create_sdk_mcp_server`` + ``@tool``) with the installed
``mainsail``: the real SDK against the fake Messages API, real workers and a private Redis. Claude Code lists
their tools through ``mcp_message`` control requests and calls them the same way; so does Mainsail, the call
being a durable request of the session that the SDK's connection answers."""

from __future__ import annotations

import asyncio
import json

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.test_agent_sdk import options, serving

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import (  # noqa: E402
    ClaudeSDKClient,
    PermissionResultAllow,
    ResultMessage,
    SystemMessage,
    UserMessage,
    create_sdk_mcp_server,
    query,
    tool,
)
from claude_agent_sdk.types import ToolResultBlock  # noqa: E402

pytestmark = pytest.mark.e2e


def calc_server(ran: list):
    """An SDK server ``calc`` whose ``add`` works and whose ``boom`` fails; ``ran`` gets each call's arguments."""

    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args):
        ran.append(("add", args))
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']}"}]}

    @tool("boom", "Always fails", {"x": str})
    async def boom(args):
        ran.append(("boom", args))
        return {"content": [{"type": "text", "text": "it broke"}], "is_error": True}

    return create_sdk_mcp_server("calc", tools=[add, boom])


def calls(name: str, tool_input: dict):
    """The model calls ``name`` once, then answers with the tool result it got."""

    def turn(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and last and last[-1].get("type") == "tool_result":
            return Turn(text=f"got: {json.dumps(last[-1].get('content'))}")
        return Turn(text="Calling it.", tool_uses=[ToolUse(name=name, input=tool_input)])

    return turn


def run(opts, prompt: str = "go") -> list:
    async def go():
        return [m async for m in query(prompt=prompt, options=opts)]

    return asyncio.run(asyncio.wait_for(go(), 120))


def tool_result(api) -> dict:
    """The tool_result block of the last model request."""
    return api.requests[-1]["messages"][-1]["content"][-1]


def test_the_model_calls_an_sdk_servers_tool_and_its_handler_runs_here(cluster, workspace):
    ran: list = []
    with serving(cluster, calls("mcp__calc__add", {"a": 2, "b": 3})) as api:
        msgs = run(options(cluster, workspace, mcp_servers={"calc": calc_server(ran)},
                           permission_mode="bypassPermissions"))
    assert ran == [("add", {"a": 2, "b": 3})], "the handler ran once, in this process"
    offered = {t["name"]: t for t in api.requests[0]["tools"]}
    assert offered["mcp__calc__add"]["description"] == "Add two numbers"
    assert offered["mcp__calc__add"]["input_schema"]["required"] == ["a", "b"]
    init = next(m for m in msgs if isinstance(m, SystemMessage) and m.subtype == "init")
    assert {"mcp__calc__add", "mcp__calc__boom"} <= set(init.data["tools"])
    assert {"name": "calc", "status": "connected"}.items() <= init.data["mcp_servers"][0].items()
    block = tool_result(api)
    assert block["type"] == "tool_result" and block["content"] == "sum=5" and not block.get("is_error")
    (result_block,) = [b for m in msgs if isinstance(m, UserMessage) for b in m.content
                       if isinstance(b, ToolResultBlock)]
    assert result_block.content == "sum=5" and not result_block.is_error
    result = msgs[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success" and result.result == 'got: "sum=5"'


def test_an_error_result_reaches_the_model_as_an_error(cluster, workspace):
    ran: list = []
    with serving(cluster, calls("mcp__calc__boom", {"x": "y"})) as api:
        msgs = run(options(cluster, workspace, mcp_servers={"calc": calc_server(ran)},
                           permission_mode="bypassPermissions"))
    assert ran == [("boom", {"x": "y"})]
    block = tool_result(api)
    assert block["is_error"] is True and block["content"] == "it broke"  # as Claude Code: the text, is_error
    (result_block,) = [b for m in msgs if isinstance(m, UserMessage) for b in m.content
                       if isinstance(b, ToolResultBlock)]
    assert result_block.is_error and result_block.content == "it broke"
    assert msgs[-1].subtype == "success"


def test_permission_rules_apply_to_sdk_tools(cluster, workspace):
    ran: list = []
    with serving(cluster, calls("mcp__calc__add", {"a": 1, "b": 1})) as api:
        denied = run(options(cluster, workspace, mcp_servers={"calc": calc_server(ran)},
                             permission_mode="bypassPermissions", disallowed_tools=["mcp__calc__add"]))[-1]
        assert ran == [] and tool_result(api)["is_error"] is True
        assert [d["tool_name"] for d in denied.permission_denials] == ["mcp__calc__add"]
        asked = run(options(cluster, workspace, mcp_servers={"calc": calc_server(ran)}))[-1]  # print mode: no ask
        assert ran == [] and [d["tool_name"] for d in asked.permission_denials] == ["mcp__calc__add"]
        allowed = run(options(cluster, workspace, mcp_servers={"calc": calc_server(ran)},
                              permission_mode="dontAsk", allowed_tools=["mcp__calc"]))[-1]
        assert ran == [("add", {"a": 1, "b": 1})] and allowed.permission_denials == []
        assert tool_result(api)["content"] == "sum=2"


def test_can_use_tool_is_asked_about_an_sdk_tool_before_it_runs(cluster, workspace):
    ran: list = []
    seen: list = []

    async def can_use(name, tool_input, ctx):
        seen.append((name, tool_input, list(ran)))
        return PermissionResultAllow()

    with serving(cluster, calls("mcp__calc__add", {"a": 4, "b": 5})) as api:

        async def go():
            opts = options(cluster, workspace, mcp_servers={"calc": calc_server(ran)}, can_use_tool=can_use)
            async with ClaudeSDKClient(opts) as client:
                await client.query("go")
                return [m async for m in client.receive_response()]

        msgs = asyncio.run(asyncio.wait_for(go(), 120))
    assert seen == [("mcp__calc__add", {"a": 4, "b": 5}, [])], "asked before the handler ran"
    assert ran == [("add", {"a": 4, "b": 5})] and tool_result(api)["content"] == "sum=9"
    assert msgs[-1].subtype == "success"


def test_get_mcp_status_lists_every_server_and_unsupported_requests_say_so(cluster, workspace):
    ran: list = []
    servers = {"calc": calc_server(ran), "broken": {"type": "stdio", "command": str(workspace / "no-such-server")}}
    with serving(cluster, calls("mcp__calc__add", {"a": 1, "b": 2})):

        async def go():
            async with ClaudeSDKClient(options(cluster, workspace, mcp_servers=servers,
                                               permission_mode="bypassPermissions")) as client:
                await client.query("go")
                [m async for m in client.receive_response()]
                status = await client.get_mcp_status()
                errors = []
                for call in (client.toggle_mcp_server("calc", False), client.stop_task("t1")):
                    try:
                        await call
                    except Exception as exc:  # the SDK raises the error response
                        errors.append(str(exc))
                return status, errors

        status, errors = asyncio.run(asyncio.wait_for(go(), 120))
    by_name = {s["name"]: s for s in status["mcpServers"]}
    calc, broken = by_name["calc"], by_name["broken"]
    assert calc["status"] == "connected" and calc["transport"] == "sdk" and calc["scope"] == "dynamic"
    assert calc["serverInfo"]["name"] == "calc" and [t["name"] for t in calc["tools"]] == ["add", "boom"]
    assert broken["status"] == "failed" and "no-such-server" in broken["error"]
    assert broken["config"] == {"type": "stdio", "command": str(workspace / "no-such-server"), "args": []}
    assert len(errors) == 2 and "mcp_toggle" in errors[0] and "stop_task" in errors[1]


def test_a_call_survives_the_death_of_the_worker_that_asked_for_it(cluster, workspace):
    """While the program's handler runs, no worker holds the call: the one that asked is killed, another
    started, and the handler's answer becomes the tool result all the same."""
    states: list = []

    @tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args):
        def crash() -> None:
            states.append(cluster.store.get_session(cluster.session_id()).state.value)
            cluster.kill(cluster.procs[0])
            cluster.start_worker()

        await asyncio.to_thread(crash)
        return {"content": [{"type": "text", "text": f"sum={args['a'] + args['b']}"}]}

    with serving(cluster, calls("mcp__calc__add", {"a": 20, "b": 22})) as api:
        msgs = run(options(cluster, workspace, mcp_servers={"calc": create_sdk_mcp_server("calc", tools=[add])},
                           permission_mode="bypassPermissions"))
    assert states == ["awaiting_permission"], "the session waited for the program, not on a worker"
    assert tool_result(api)["content"] == "sum=42" and msgs[-1].result == 'got: "sum=42"'
