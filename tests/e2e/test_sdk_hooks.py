"""The Agent SDK's hook callbacks (``ClaudeAgentOptions(hooks=...)``) for every event, with the real SDK
driving the installed ``mainsail`` against the fake Messages API, real workers and a private Redis. Each
test asserts what Claude Code 2.1.332 does for the same program (its inputs' keys and how an output
applies were read from the bundled CLI run the same way)."""

from __future__ import annotations

import asyncio
import json

import pytest

from demo.script import ScriptUsage
from demo.scripted import ToolUse, Turn
from tests.e2e.test_agent_sdk import options, serving

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import ClaudeSDKClient, HookMatcher, ResultMessage  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(shared_cluster):
    """The module's one worker, shared by its tests (tests/e2e/shared_worker.py)."""
    return shared_cluster

#: The keys Claude Code sends to every callback (``transcript_path`` is Mainsail's documented exception).
COMMON = {"session_id", "cwd", "hook_event_name"}


def turn(body: dict) -> Turn:
    """A Bash call, then "done"; after a Stop hook's word, "went on"."""
    text = json.dumps(body["messages"][-1])
    if "Stop hook" in text:
        return Turn(text="went on")
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return Turn(text="done")
    return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": "echo hi > out.txt"})])


def run(cluster, workspace, hooks: dict, prompts=("run it",), **kw) -> tuple[list, list, object]:
    """The prompts through one client with ``hooks`` (event -> callback); (callback calls, messages, api)."""
    seen: list[tuple[str, dict, str | None]] = []

    def recorder(event, answer):
        async def cb(hook_input, tool_use_id, ctx):
            seen.append((event, hook_input, tool_use_id))
            return answer(hook_input) if callable(answer) else answer
        return cb

    matchers = {event: [HookMatcher(hooks=[recorder(event, answer)])] for event, answer in hooks.items()}
    with serving(cluster, kw.pop("script", turn)) as api:
        async def go():
            msgs = []
            async with ClaudeSDKClient(options(cluster, workspace, hooks=matchers, **kw)) as client:
                for prompt in prompts:
                    await client.query(prompt)
                    msgs += [m async for m in client.receive_response()]
            return msgs

        msgs = asyncio.run(asyncio.wait_for(go(), 120))
    return seen, msgs, api


def of(seen, event) -> list[dict]:
    return [inp for e, inp, _ in seen if e == event]


ALLOW = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}


def test_every_events_callback_is_called_with_claude_codes_keys(cluster, workspace):
    """UserPromptSubmit, PreToolUse, PostToolUse and Stop: each once, with the input keys Claude Code sends;
    empty answers change nothing. Events Mainsail does not fire are accepted (the session starts)."""
    seen, msgs, api = run(cluster, workspace, {e: {} for e in (
        "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PostToolUseFailure", "SubagentStart",
        "PermissionRequest", "Notification")} | {"PreToolUse": ALLOW})
    events = [e for e, _, _ in seen]
    assert events == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"], events
    (ups,), (pre,), (post,), (stop,) = (of(seen, e) for e in events)
    assert set(ups) >= COMMON | {"permission_mode", "prompt"} and ups["prompt"] == "run it"
    assert set(pre) >= COMMON | {"tool_name", "tool_input", "tool_use_id"}
    assert set(post) >= COMMON | {"tool_name", "tool_input", "tool_response", "tool_use_id"}
    assert post["tool_use_id"] == pre["tool_use_id"] and seen[2][2] == pre["tool_use_id"]
    assert set(stop) >= COMMON | {"stop_hook_active", "last_assistant_message"}
    assert stop["stop_hook_active"] is False and stop["last_assistant_message"] == "done"
    assert all(inp["session_id"] == ups["session_id"] and inp["hook_event_name"] == e for e, inp, _ in seen)
    assert (workspace / "out.txt").read_text() == "hi\n"
    assert msgs[-1].subtype == "success" and msgs[-1].result == "done"


def compacting(body: dict) -> Turn:
    """The first reply says its context is nearly full: the next model call compacts first."""
    text = json.dumps(body["messages"])
    if "<summary>" in json.dumps(body.get("system")) + json.dumps(body["messages"][-1]):
        return Turn(text="<summary>THE SUMMARY</summary>")
    if "tool_result" in text or "THE SUMMARY" in text:
        return Turn(text="done")
    return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": "true"})],
                usage=ScriptUsage(input_tokens=190_000, output_tokens=10))


@pytest.mark.parametrize("block", [False, True])
def test_a_pre_compact_callback_sees_the_auto_trigger_and_can_block_it(private_cluster, workspace, block):
    cluster = private_cluster  # its worker reads the compaction threshold from its environment
    answer = {"decision": "block", "reason": "not now"} if block else {}
    cluster.env["MAINSAIL_AUTOCOMPACT_PCT_OVERRIDE"] = "50"
    seen, msgs, api = run(cluster, workspace, {"PreCompact": answer}, script=compacting,
                          permission_mode="bypassPermissions", model="claude-sonnet-4-6")
    (compact,) = of(seen, "PreCompact")
    assert set(compact) >= COMMON | {"trigger", "custom_instructions"} and compact["trigger"] == "auto"
    summaries = [r for r in api.requests if "THE SUMMARY" in json.dumps(r["messages"])]
    assert bool(summaries) is not block, "a blocked compaction is skipped; an allowed one is used"
    assert msgs[-1].subtype == "success" and msgs[-1].result == "done"


def test_user_prompt_submit_context_reaches_the_model_and_a_block_stops_the_prompt(cluster, workspace):
    answers = iter([{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "UPS-CTX"}},
                    {"decision": "block", "reason": "not today"}])
    seen, msgs, api = run(cluster, workspace, {"UserPromptSubmit": lambda inp: next(answers), "PreToolUse": ALLOW},
                          prompts=("run it", "second"))
    assert "UserPromptSubmit hook additional context: UPS-CTX" in json.dumps(api.requests[0]["messages"])
    assert "second" not in json.dumps(api.requests[-1]["messages"]), "a blocked prompt never reaches the model"
    results = [m for m in msgs if isinstance(m, ResultMessage)]
    assert "not today" in results[-1].result


def test_pre_tool_use_allow_runs_the_call_in_print_mode_without_can_use_tool(cluster, workspace):
    """Without can_use_tool nobody answers an ask, but the hooks run first: their allow and updatedInput
    apply, as Claude Code's (a Bash redirect in default mode asks)."""
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                     "updatedInput": {"command": "echo changed > out.txt"}}}
    seen, msgs, api = run(cluster, workspace, {"PreToolUse": answer})
    assert (workspace / "out.txt").read_text() == "changed\n"
    assert msgs[-1].subtype == "success" and not msgs[-1].permission_denials


def test_without_the_hooks_allow_print_mode_still_denies(cluster, workspace):
    seen, msgs, api = run(cluster, workspace, {"PreToolUse": {}})
    assert len(of(seen, "PreToolUse")) == 1, "the hook ran before the denial"
    assert not (workspace / "out.txt").exists()
    assert [d["tool_name"] for d in msgs[-1].permission_denials] == ["Bash"]


def test_post_tool_use_context_joins_the_tool_result_and_continue_false_stops(cluster, workspace):
    seen, msgs, api = run(cluster, workspace, {"PreToolUse": ALLOW, "PostToolUse": {
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "POST-CTX"}}})
    result = api.requests[-1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "PostToolUse:Bash hook additional context: POST-CTX" in json.dumps(result)
    assert of(seen, "PostToolUse")[0]["tool_response"]["stdout"] is not None


@pytest.mark.parametrize("how", ["block", "context"])
def test_a_stop_callback_makes_the_model_go_on(cluster, workspace, how):
    def stop(inp):
        if inp["stop_hook_active"]:
            return {}
        if how == "block":
            return {"decision": "block", "reason": "check the tests"}
        return {"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "check the tests"}}

    seen, msgs, api = run(cluster, workspace, {"PreToolUse": ALLOW, "Stop": stop})
    assert [inp["stop_hook_active"] for inp in of(seen, "Stop")] == [False, True]
    assert "check the tests" in json.dumps(api.requests[-1]["messages"][-1])
    assert msgs[-1].result == "went on"


def test_a_failing_callback_is_a_warning_and_the_session_goes_on(cluster, workspace):
    def boom(inp):
        raise RuntimeError("callback broke")

    seen, msgs, api = run(cluster, workspace, {"PreToolUse": ALLOW, "UserPromptSubmit": boom, "PostToolUse": boom,
                                               "Stop": boom})
    assert [e for e, _, _ in seen] == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
    assert msgs[-1].subtype == "success" and msgs[-1].result == "done"
    assert (workspace / "out.txt").read_text() == "hi\n"


def test_a_sub_agents_stop_runs_the_subagent_stop_callback(cluster, workspace):
    def script(body: dict) -> Turn:
        if "You check spelling." in json.dumps(body.get("system")):
            return Turn(text="no typos")
        if any(m["role"] == "assistant" for m in body["messages"]):
            return Turn(text="checked")
        return Turn(tool_uses=[ToolUse(id="toolu_t", name="Task", input={
            "description": "check spelling", "prompt": "check README", "subagent_type": "speller"})])

    from claude_agent_sdk import AgentDefinition

    seen, msgs, api = run(cluster, workspace, {"SubagentStop": {}, "Stop": {}}, script=script,
                          agents={"speller": AgentDefinition(description="Checks spelling",
                                                             prompt="You check spelling.")},
                          permission_mode="bypassPermissions")
    (sub,) = of(seen, "SubagentStop")
    assert set(sub) >= COMMON | {"stop_hook_active"} and sub["last_assistant_message"] == "no typos"
    assert [e for e, _, _ in seen][-1] == "Stop" and msgs[-1].result == "checked"


def test_a_failed_call_runs_post_tool_use_failure_instead(cluster, workspace):
    def failing(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return Turn(text="done")
        return Turn(tool_uses=[ToolUse(name="Bash", input={"command": "ls /nonexistent-dir"})])

    seen, msgs, api = run(cluster, workspace, {"PostToolUse": {}, "PostToolUseFailure": {
        "hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": "FAIL-CTX"}}},
        script=failing, permission_mode="bypassPermissions")
    (failure,) = of(seen, "PostToolUseFailure")
    assert not of(seen, "PostToolUse") and "nonexistent-dir" in failure["error"] and failure["is_interrupt"] is False
    result = api.requests[-1]["messages"][-1]["content"][0]
    assert result["is_error"] and "PostToolUseFailure:Bash hook additional context: FAIL-CTX" in json.dumps(result)
