"""The Agent SDK client's hook callbacks for events other than PreToolUse (fakeredis, steps run inline): the
request is durable (record and transcript, no step running), the answer resumes the session, a cancel makes
it stale; and the callbacks' ``initialize`` config. PreToolUse before print mode's deny is here too."""

from __future__ import annotations

import json

import pytest

from cli.headless.control import ControlError
from cli.headless.hook_callbacks import callback_hooks
from demo.scripted import Script, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from tests.unit.test_hooks_engine import entries
from workflows.exceptions import RequestClosed, RequestNotFound
from workflows.models import HookCallbackEntry, HookEntry, ResultEntry, StepKind, StepStatus
from workflows.models.hook_outcome import HookRun
from workflows.models.hooks import CallbackHook, HookEvent


def sdk_hooks(*events: str, matcher: str = ""):
    return callback_hooks({e: [{"matcher": matcher, "hookCallbackIds": [f"hook_{e}"]}] for e in events})


def answer(output: dict, event: str = "") -> list[HookRun]:
    return [HookRun(command=CallbackHook(callback_id=f"hook_{event}").command, exit_code=0, stdout=json.dumps(output))]


def start(engine, ws, turns, hookset, prompt="go", mode="bypassPermissions", **kw):
    model = scripted_model(Script(turns=turns))
    rec = create_session(engine, str(ws), model=model, permission_mode=mode, hooks=hookset, auto_memory=False, **kw)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, prompt))
    inline.drain()
    return rec.id, inline, model


def asked(engine, sid) -> HookCallbackEntry:
    return entries(engine, sid, HookCallbackEntry)[-1]


def settle(engine, inline, sid, output, event=""):
    inline.dispatch(engine.answer_client_hooks(sid, asked(engine, sid).request_id, answer(output, event)))
    inline.drain()


def test_initialize_accepts_every_event_and_ignores_those_mainsail_does_not_fire():
    hooks = callback_hooks({"Stop": [{"hookCallbackIds": ["a"], "timeout": 5}], "SubagentStart": [
        {"hookCallbackIds": ["b"]}], "PreCompact": [{"matcher": "auto", "hookCallbackIds": ["c"]}],
        "Notification": [{"hookCallbackIds": ["d"]}]})
    assert set(hooks.events) == {HookEvent.STOP, HookEvent.PRE_COMPACT}
    (stop,) = hooks.for_event(HookEvent.STOP)
    assert stop.callback_id == "a" and stop.timeout == 5
    assert hooks.for_event(HookEvent.PRE_COMPACT, "manual") == []
    with pytest.raises(ControlError, match="not a hook event"):
        callback_hooks({"Nonsense": []})
    with pytest.raises(ControlError, match="hookCallbackIds"):
        callback_hooks({"Stop": [{"matcher": ""}]})


def test_a_prompt_waits_durably_for_the_client_and_its_context_reaches_the_model(engine, ws):
    sid, inline, model = start(engine, ws, [Turn(text="ok")], sdk_hooks("UserPromptSubmit"), prompt="hello")
    rec = engine.store.get_session(sid)
    assert api_of(model).requests == [] and rec.state is State.QUERYING and rec.held_prompt == "hello"
    (req,) = rec.client_hooks
    e = asked(engine, sid)
    assert (e.request_id, e.event, e.callbacks) == (req.id, "UserPromptSubmit", ["hook_UserPromptSubmit"])
    assert e.hook_input["prompt"] == "hello" and e.hook_input["hook_event_name"] == "UserPromptSubmit"
    assert all(s.status is StepStatus.DONE for s in engine.store.steps(sid)), "no step runs while it waits"
    settle(engine, inline, sid, {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                                        "additionalContext": "CTX"}})
    assert "UserPromptSubmit hook additional context: CTX" in json.dumps(api_of(model).requests[0]["messages"])
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and rec.client_hooks == []
    (hook,) = entries(engine, sid, HookEntry)
    assert hook.outcome.context == ["CTX"]
    with pytest.raises((RequestClosed, RequestNotFound)):  # answered once
        engine.answer_client_hooks(sid, e.request_id, [])


def test_a_stop_callback_block_makes_the_model_go_on(engine, ws):
    sid, inline, model = start(engine, ws, [Turn(text="first"), Turn(text="second")], sdk_hooks("Stop"))
    assert asked(engine, sid).hook_input["last_assistant_message"] == "first"
    settle(engine, inline, sid, {"decision": "block", "reason": "again"})
    assert "Stop hook feedback:\\nagain" in json.dumps(api_of(model).requests[-1]["messages"])
    second = asked(engine, sid)
    assert second.hook_input["stop_hook_active"] is True
    settle(engine, inline, sid, {})
    assert entries(engine, sid, ResultEntry)[-1].result == "second"


def test_a_failed_callback_is_a_warning_and_the_run_ends(engine, ws):
    sid, inline, model = start(engine, ws, [Turn(text="first")], sdk_hooks("Stop"))
    failed = [HookRun(command="SDK hook callback hook_Stop", error="the SDK client closed its input")]
    inline.dispatch(engine.answer_client_hooks(sid, asked(engine, sid).request_id, failed))
    inline.drain()
    (result,) = entries(engine, sid, ResultEntry)
    assert result.result == "first" and engine.store.get_session(sid).state is State.IDLE
    (hook,) = entries(engine, sid, HookEntry)
    assert "closed its input" in hook.outcome.messages[0]


def test_post_tool_use_holds_the_result_until_the_client_answers(engine, ws):
    turns = [Turn(tool_uses=[ToolUse(name="Bash", input={"command": "echo hi"})]), Turn(text="done")]
    sid, inline, model = start(engine, ws, turns, sdk_hooks("PostToolUse", matcher="Bash"))
    rec = engine.store.get_session(sid)
    (call,) = rec.tool_calls
    assert rec.state is State.RUNNING_TOOLS and call.held_output["content"].strip() == "hi"
    e = asked(engine, sid)
    assert e.tool_use_id == call.tool_use_id and e.hook_input["tool_response"]["stdout"].strip() == "hi"
    settle(engine, inline, sid, {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "X"}})
    result = api_of(model).requests[-1]["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "PostToolUse:Bash hook additional context: X" in json.dumps(result)
    assert entries(engine, sid, ResultEntry)[-1].result == "done"


def test_a_cancel_makes_the_request_stale(engine, ws):
    sid, inline, model = start(engine, ws, [Turn(text="ok")], sdk_hooks("UserPromptSubmit"))
    request = asked(engine, sid).request_id
    engine.cancel(sid)
    inline.drain()
    with pytest.raises(RequestClosed):
        engine.answer_client_hooks(sid, request, [])
    assert api_of(model).requests == []


def test_pre_compact_callbacks_wait_in_compacting(engine, ws):
    sid, inline, model = start(engine, ws, [Turn(text="ok")], sdk_hooks("PreCompact"))
    inline.dispatch(engine.compact(sid, "keep names"))
    inline.drain()
    rec = engine.store.get_session(sid)
    assert rec.state is State.COMPACTING and asked(engine, sid).hook_input["trigger"] == "manual"
    settle(engine, inline, sid, {"decision": "block", "reason": "not now"})
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and not [s for s in engine.store.steps(sid) if s.kind is StepKind.COMPACT]


def test_pre_tool_use_runs_before_print_modes_deny_and_its_allow_counts(engine, ws):
    turns = [Turn(tool_uses=[ToolUse(name="Bash", input={"command": "echo hi > out.txt"})]), Turn(text="done")]
    sid, inline, model = start(engine, ws, turns, sdk_hooks("PreToolUse", matcher="Bash"), mode="default",
                               asks="deny")
    rec = engine.store.get_session(sid)
    (req,) = rec.pending_requests()
    assert req.kind == "hook"
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    inline.dispatch(engine.answer_client_hooks(sid, req.id, answer(allow)))
    inline.drain()
    assert (ws / "out.txt").read_text() == "hi\n"
    assert entries(engine, sid, ResultEntry)[-1].result == "done"


def test_without_the_hooks_allow_print_mode_denies_after_the_hook(engine, ws):
    turns = [Turn(tool_uses=[ToolUse(name="Bash", input={"command": "echo hi > out.txt"})]), Turn(text="done")]
    sid, inline, model = start(engine, ws, turns, sdk_hooks("PreToolUse", matcher="Bash"), mode="default",
                               asks="deny")
    (req,) = engine.store.get_session(sid).pending_requests()
    inline.dispatch(engine.answer_client_hooks(sid, req.id, answer({})))
    inline.drain()
    assert not (ws / "out.txt").exists()
    assert "print mode" in json.dumps(api_of(model).requests[-1]["messages"][-1])
    assert [d["tool_name"] for d in entries(engine, sid, ResultEntry)[-1].permission_denials] == ["Bash"]


def test_the_stream_server_asks_each_callback_and_a_client_gone_fails_them(engine, ws, monkeypatch):
    """cli/headless/hook_callbacks.py: one ``hook_callback`` control request per callback; when the client
    closes its input before answering, an event's callbacks count as failed and the session goes on."""
    import io

    from cli.connect import Runtime
    from cli.headless.control import Control
    from cli.headless.hook_callbacks import HookCallbacks
    from cli.output import StreamJson

    sid, inline, model = start(engine, ws, [Turn(text="first")], sdk_hooks("Stop"))
    monkeypatch.setattr("cli.session_service.dispatch", inline.dispatch)
    buf = io.StringIO()
    control = Control(StreamJson(buf.write), {})
    callbacks = HookCallbacks(Runtime(url="redis://test", engine=engine), control, lambda request: sid)
    callbacks.run(asked(engine, sid))
    sent = json.loads(buf.getvalue().splitlines()[-1])
    assert sent["request"]["subtype"] == "hook_callback" and sent["request"]["callback_id"] == "hook_Stop"
    assert sent["request"]["input"]["hook_event_name"] == "Stop" and control.pending() == 1
    callbacks.client_gone()
    inline.drain()
    assert control.pending() == 0
    assert entries(engine, sid, ResultEntry)[-1].result == "first"
    (hook,) = entries(engine, sid, HookEntry)
    assert "closed its input" in hook.outcome.messages[0]


def test_session_start_callbacks_run_for_compact_not_startup(engine, ws):
    sid, inline, model = start(engine, ws, [Turn(text="ok"), Turn(text="<summary>S</summary>"), Turn(text="again")],
                               sdk_hooks("SessionStart"))
    assert entries(engine, sid, HookCallbackEntry) == [] and entries(engine, sid, ResultEntry)[-1].result == "ok"
    inline.dispatch(engine.compact(sid))
    inline.drain()
    inline.dispatch(engine.submit(sid, "next"))
    inline.drain()
    e = asked(engine, sid)
    assert e.event == "SessionStart" and e.hook_input["source"] == "compact"
    settle(engine, inline, sid, {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "SS"}})
    assert "SessionStart hook additional context: SS" in json.dumps(api_of(model).requests[-1]["messages"])


def test_a_failed_tool_runs_post_tool_use_failure_not_post_tool_use(engine, ws):
    """As Claude Code 2.1.332: an error result fires PostToolUseFailure (input ``error``, ``is_interrupt``);
    its additional context joins the result."""
    turns = [Turn(tool_uses=[ToolUse(name="Bash", input={"command": "ls /nonexistent-dir"})]), Turn(text="done")]
    sid, inline, model = start(engine, ws, turns, sdk_hooks("PostToolUse", "PostToolUseFailure", matcher="Bash"))
    e = asked(engine, sid)
    assert e.event == "PostToolUseFailure" and "nonexistent-dir" in e.hook_input["error"]
    assert e.hook_input["is_interrupt"] is False and "tool_response" not in e.hook_input
    settle(engine, inline, sid, {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure",
                                                        "additionalContext": "F"}}, "PostToolUseFailure")
    result = api_of(model).requests[-1]["messages"][-1]["content"][0]
    assert result["is_error"] and "PostToolUseFailure:Bash hook additional context: F" in json.dumps(result)
    assert [x.event for x in entries(engine, sid, HookCallbackEntry)] == ["PostToolUseFailure"]
