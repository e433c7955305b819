"""The Claude Agent SDK, unchanged, driving the installed ``mainsail`` (``ClaudeAgentOptions(cli_path=...)``)
against the local fake Messages API, with real worker processes and a private Redis. Each test asserts
what Claude Code does for the same program."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import last_prompt

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import (  # noqa: E402
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultError,
    ResultMessage,
    SystemMessage,
    UserMessage,
    query,
)

pytestmark = pytest.mark.e2e


def bash_turn(command: str):
    """One Bash call with ``command``, then an answer that names the prompt it answers."""

    def turn(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and last and last[-1].get("type") == "tool_result":
            return Turn(text=f"done: {last_prompt(body)}")
        return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": command})])

    return turn


def options(cluster, ws: Path, **kw) -> ClaudeAgentOptions:
    env = {k: v for k, v in cluster.env.items()}
    return ClaudeAgentOptions(cli_path=MAINSAIL, cwd=str(ws), env=env, **kw)


def collect(prompt: str, opts: ClaudeAgentOptions) -> list:
    async def go():
        return [m async for m in query(prompt=prompt, options=opts)]

    return asyncio.run(asyncio.wait_for(go(), 90))


@pytest.fixture
def cluster(shared_cluster):
    """The module's one worker, shared by its tests (tests/e2e/shared_worker.py)."""
    return shared_cluster


def serving(cluster, turn):
    """The fake Messages API answering this test with ``turn``, and the worker that calls it."""
    return cluster.serving(turn)


def test_query_streams_claude_codes_messages_and_runs_the_command(cluster, workspace, recwarn):
    with serving(cluster, bash_turn("echo ran > out.txt")) as api:
        msgs = collect("run it", options(cluster, workspace, permission_mode="bypassPermissions"))
    kinds = [type(m).__name__ for m in msgs]
    assert kinds == ["SystemMessage", "AssistantMessage", "AssistantMessage", "UserMessage", "AssistantMessage",
                     "ResultMessage"], kinds
    init, result = msgs[0], msgs[-1]
    assert init.subtype == "init" and init.data["cwd"] == str(workspace.resolve())
    assert init.data["claude_code_version"] and init.data["apiKeySource"] == "ANTHROPIC_API_KEY"
    assert isinstance(result, ResultMessage) and result.subtype == "success" and not result.is_error
    assert result.result == "done: run it" and result.stop_reason == "end_turn" and result.num_turns == 2
    assert result.session_id == init.data["session_id"]
    tool_result = msgs[3]
    assert isinstance(tool_result, UserMessage) and tool_result.tool_use_result is not None
    assert (workspace / "out.txt").read_text() == "ran\n"
    assert not [w for w in recwarn if "version" in str(w.message).lower()], "the SDK warned about the CLI version"


def test_a_multi_turn_client_keeps_one_session(cluster, workspace):
    with serving(cluster, bash_turn("true")) as api:

        async def go():
            results = []
            async with ClaudeSDKClient(options(cluster, workspace, permission_mode="bypassPermissions")) as client:
                for prompt in ("first", "second"):
                    await client.query(prompt)
                    results += [m async for m in client.receive_response() if isinstance(m, ResultMessage)]
            return results

        first, second = asyncio.run(asyncio.wait_for(go(), 90))
        assert (first.result, second.result) == ("done: first", "done: second")
        assert first.session_id == second.session_id
        assert "first" in json.dumps(api.requests[-1]["messages"]), "the second turn sees the first"


@pytest.mark.parametrize("allow", [True, False])
def test_can_use_tool_settles_the_durable_request(cluster, workspace, allow):
    seen = []

    async def can_use(name, tool_input, ctx):
        seen.append((name, tool_input, ctx.tool_use_id, ctx.suggestions))
        return PermissionResultAllow() if allow else PermissionResultDeny(message="not on this machine")

    with serving(cluster, bash_turn("echo ran > out.txt")) as api:

        async def go():
            async with ClaudeSDKClient(options(cluster, workspace, can_use_tool=can_use)) as client:
                await client.query("run it")
                return [m async for m in client.receive_response()]

        msgs = asyncio.run(asyncio.wait_for(go(), 90))
    ((name, tool_input, tool_use_id, suggestions),) = seen
    assert name == "Bash" and tool_input == {"command": "echo ran > out.txt"} and tool_use_id
    assert suggestions and suggestions[0].type == "addRules"
    result = msgs[-1]
    assert result.subtype == "success"
    if allow:
        assert (workspace / "out.txt").read_text() == "ran\n" and result.permission_denials == []
    else:
        assert not (workspace / "out.txt").exists()
        assert "not on this machine" in json.dumps(api.requests[-1]["messages"][-1])
        assert [d["tool_name"] for d in result.permission_denials] == ["Bash"]


def test_print_mode_denies_an_asking_call_and_lists_it(cluster, workspace):
    """Claude Code's -p in default mode: no waiting; the model is told, the result lists the denial."""
    with serving(cluster, bash_turn("echo ran > out.txt")) as api:
        msgs = collect("run it", options(cluster, workspace))
    result = msgs[-1]
    assert result.subtype == "success" and [d["tool_name"] for d in result.permission_denials] == ["Bash"]
    assert not (workspace / "out.txt").exists()


def test_interrupt_stops_a_slow_command(cluster, workspace):
    # Events, not windows: the interrupt is sent once the command has started (its file), and the command
    # (10 minutes long) can only have ended by it.
    with serving(cluster, bash_turn("echo started > started.txt; sleep 600.4343; echo late > late.txt")) as api:

        async def go():
            async with ClaudeSDKClient(options(cluster, workspace, permission_mode="bypassPermissions")) as client:
                await client.query("run it")
                sent = False
                async for m in client.receive_response():
                    if isinstance(m, AssistantMessage) and not sent:
                        while not (workspace / "started.txt").exists():
                            await asyncio.sleep(0.05)
                        sent = True
                        await client.interrupt()
                    if isinstance(m, ResultMessage):
                        return m

        result = asyncio.run(asyncio.wait_for(go(), 300))
    assert result.is_error and result.subtype == "error_during_execution"
    wait_for(lambda: subprocess.run(["pgrep", "-f", "sleep 600.4343"], capture_output=True).returncode == 1, 120,
             what="the command's processes to end")
    assert not (workspace / "late.txt").exists()


def test_resume_and_continue_pick_up_the_session(cluster, workspace):
    with serving(cluster, bash_turn("true")) as api:
        first = collect("first", options(cluster, workspace, permission_mode="bypassPermissions"))[-1]
        resumed = collect("second", options(cluster, workspace, permission_mode="bypassPermissions",
                                            resume=first.session_id))[-1]
        continued = collect("third", options(cluster, workspace, permission_mode="bypassPermissions",
                                             continue_conversation=True))[-1]
        assert first.session_id == resumed.session_id == continued.session_id
        sent = json.dumps(api.requests[-1]["messages"])
        assert "first" in sent and "second" in sent and "third" in sent


def test_allowed_tools_in_dont_ask_mode(cluster, workspace):
    with serving(cluster, bash_turn("touch out.txt")) as api:
        denied = collect("run it", options(cluster, workspace, permission_mode="dontAsk",
                                           allowed_tools=["Bash(ls:*)"]))[-1]
        assert not (workspace / "out.txt").exists() and [d["tool_name"] for d in denied.permission_denials] == ["Bash"]
        allowed = collect("run it", options(cluster, workspace, permission_mode="dontAsk",
                                            allowed_tools=["Bash(touch:*)"]))[-1]
        assert allowed.permission_denials == [] and (workspace / "out.txt").exists()


def test_system_prompt_and_max_turns(cluster, workspace):
    """The SDK's query() raises on an error result, as it does for Claude Code's error_max_turns."""
    with serving(cluster, bash_turn("true")) as api:
        with pytest.raises(ResultError, match="turn limit"):
            collect("run it", options(cluster, workspace, permission_mode="bypassPermissions",
                                      system_prompt="You are a pirate.", max_turns=1))
        assert "You are a pirate." in json.dumps(api.requests[0]["system"])
    (sid,) = cluster.store.session_ids()
    (result,) = [e for e in cluster.store.entries(sid) if type(e).__name__ == "ResultEntry"]
    assert result.subtype == "error_max_turns"


def test_set_permission_mode_applies_to_the_next_turn(cluster, workspace):
    with serving(cluster, bash_turn("echo ran > out.txt")) as api:

        async def go():
            async with ClaudeSDKClient(options(cluster, workspace, permission_mode="bypassPermissions")) as client:
                await client.set_permission_mode("plan")
                await client.query("run it")
                return [m async for m in client.receive_response()][-1]

        result = asyncio.run(asyncio.wait_for(go(), 90))
    assert [d["tool_name"] for d in result.permission_denials] == ["Bash"]
    assert not (workspace / "out.txt").exists()


@pytest.mark.parametrize("mode,extra,allowed", [
    ("default", {}, False),
    ("acceptEdits", {}, False),
    ("default", {"allow-dangerously-skip-permissions": None}, True),
    ("bypassPermissions", {}, True),
])
def test_set_permission_mode_to_bypass_only_when_launched_allowing_it(cluster, workspace, mode, extra, allowed):
    """As Claude Code 2.1.332: a command launched without --permission-mode bypassPermissions,
    --dangerously-skip-permissions or --allow-dangerously-skip-permissions refuses the switch (and keeps its mode)."""
    with serving(cluster, bash_turn("echo ran > out.txt")):

        async def go():
            async with ClaudeSDKClient(options(cluster, workspace, permission_mode=mode, extra_args=extra)) as client:
                try:
                    await client.set_permission_mode("bypassPermissions")
                    refused = None
                except Exception as exc:  # the SDK raises a plain Exception with the CLI's message
                    refused = str(exc)
                await client.query("run it")
                return refused, [m async for m in client.receive_response()][-1]

        refused, result = asyncio.run(asyncio.wait_for(go(), 90))
    rec = cluster.store.get_session(cluster.session_id())
    if allowed:
        assert refused is None and rec.permission_mode.value == "bypassPermissions"
        assert (workspace / "out.txt").exists() and not result.permission_denials
    else:
        assert refused == ("Cannot set permission mode to bypassPermissions because the session was not launched "
                           "with --dangerously-skip-permissions")
        assert rec.permission_mode.value == mode
        if mode == "default":  # (acceptEdits lets the command write its file)
            assert [d["tool_name"] for d in result.permission_denials] == ["Bash"]


@pytest.mark.parametrize("verdict", ["deny", "none"])
def test_a_pre_tool_use_hook_callback_decides_before_bash_runs(cluster, workspace, verdict):
    """Even in bypassPermissions: the callback's deny refuses the call and the model sees its reason;
    an empty answer lets it run."""
    calls = []

    async def hook(hook_input, tool_use_id, ctx):
        calls.append((hook_input["hook_event_name"], hook_input["tool_name"], hook_input["tool_input"], tool_use_id))
        if verdict == "none":
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "no shell today"}}

    with serving(cluster, bash_turn("echo ran > out.txt")) as api:
        async def go():
            opts = options(cluster, workspace, permission_mode="bypassPermissions",
                           hooks={"PreToolUse": [sdk.HookMatcher(matcher="Bash", hooks=[hook])]})
            async with ClaudeSDKClient(opts) as client:
                await client.query("run it")
                return [m async for m in client.receive_response()][-1]

        result = asyncio.run(asyncio.wait_for(go(), 90))
    ((event, tool, tool_input, tool_use_id),) = calls
    assert (event, tool, tool_input) == ("PreToolUse", "Bash", {"command": "echo ran > out.txt"}) and tool_use_id
    assert result.subtype == "success"
    if verdict == "deny":
        assert not (workspace / "out.txt").exists()
        assert "no shell today" in json.dumps(api.requests[-1]["messages"][-1])
    else:
        assert (workspace / "out.txt").read_text() == "ran\n"


def test_the_sdks_agents_option_defines_a_sub_agent_the_task_tool_runs(cluster, workspace):
    from claude_agent_sdk import AgentDefinition

    def turn(body: dict) -> Turn:
        first = body["messages"][0]["content"]
        first = first if isinstance(first, str) else first[-1].get("text", "")
        if "You check spelling." in json.dumps(body.get("system")):  # the child: the agent's own prompt
            return Turn(text="no typos")
        if any(m["role"] == "assistant" for m in body["messages"]):
            return Turn(text="The checker says: no typos.")
        return Turn(tool_uses=[ToolUse(id="toolu_t", name="Task", input={
            "description": "check spelling", "prompt": "check README", "subagent_type": "speller"})])

    with serving(cluster, turn) as api:
        opts = options(cluster, workspace, permission_mode="bypassPermissions", agents={
            "speller": AgentDefinition(description="Checks spelling", prompt="You check spelling.",
                                       tools=["Read"])})
        messages = collect("check the docs", opts)
    (init,) = [m for m in messages if isinstance(m, SystemMessage) and m.subtype == "init"]
    assert "speller" in init.data["agents"] and "Task" in init.data["tools"]
    task = next(t for t in api.requests[0]["tools"] if t["name"] == "Agent")  # (init lists it as Task)
    assert "- speller: Checks spelling (Tools: Read)" in task["description"]
    child = next(r for r in api.requests if "You check spelling." in json.dumps(r["system"]))
    assert [t["name"] for t in child["tools"]] == ["Read"]
    nested = [m for m in messages if getattr(m, "parent_tool_use_id", None) == "toolu_t"]
    assert nested, "the sub-agent's messages carry their Task call's id"
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "The checker says: no typos."
