"""Hooks in the session loop (fakeredis, steps run inline): PreToolUse verdicts committed before they act,
PostToolUse feedback, and the permission decision they join."""

from __future__ import annotations

import json
import threading
import time

from demo.scripted import Script, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from workflows.hooks.settings import parse_hooks
from workflows.models import (
    HookEntry,
    PermissionRequestEntry,
    ResultEntry,
    RuleSet,
    RuleSpec,
    StepKind,
    UserEntry,
)
from workflows.models.options import SessionOptions, SessionSetup
from workflows.steps import tool as tool_step
from workflows.tools import get_tool

BASH = ToolUse(name="Bash", input={"command": "echo ran >> runs.txt"})


def hook_script(ws, name: str, body: str) -> str:
    """A hook command: a shell script in the workspace that logs each run to ``<name>.log``."""
    path = ws / "hooks" / f"{name}.sh"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\ninput=$(cat)\necho \"$input\" >> hooks/{name}.log\n{body}\n")
    path.chmod(0o755)
    return f"./hooks/{name}.sh"


def hooks(event: str, command: str, matcher: str = "Bash"):
    return parse_hooks({event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command,
                                                                 "timeout": 20}]}]}, "test")


def start(engine, ws, turns, hookset, mode="bypassPermissions", **kw):
    model = scripted_model(Script(turns=turns))
    rec = create_session(engine, str(ws), model=model, permission_mode=mode, hooks=hookset, auto_memory=False, **kw)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    return rec.id, inline, model


def entries(engine, sid, kind=None):
    return [e for e in engine.store.entries(sid) if kind is None or isinstance(e, kind)]


def tool_results(engine, sid):
    return [e.message.blocks()[0] for e in entries(engine, sid, UserEntry) if e.origin == "tool_result"]


def runs_of(ws, name):
    log = ws / "hooks" / f"{name}.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_exit_two_refuses_the_call_and_the_model_sees_stderr(engine, ws):
    cmd = hook_script(ws, "guard", "echo 'no writes to runs.txt' >&2; exit 2")
    sid, _, model = start(engine, ws, [Turn(tool_uses=[BASH]), Turn(text="ok")],
                          hooks("PreToolUse", cmd))
    assert not (ws / "runs.txt").exists()
    (result,) = tool_results(engine, sid)
    assert result.is_error and "PreToolUse:Bash hook denied this call: no writes to runs.txt" in result.text
    assert "no writes to runs.txt" in json.dumps(api_of(model).requests[-1]["messages"])
    (run,) = runs_of(ws, "guard")
    assert run["hook_event_name"] == "PreToolUse" and run["tool_name"] == "Bash"
    assert run["tool_input"] == BASH.input and run["session_id"] == sid and run["cwd"] == str(ws.resolve())
    assert run["permission_mode"] == "bypassPermissions" and run["tool_use_id"]
    kinds = [e.type for e in entries(engine, sid) if e.type in ("hook", "user")]
    assert kinds[-2:] == ["hook", "user"], "the verdict is recorded before the result it leads to"
    assert engine.store.get_session(sid).state is State.IDLE


def test_a_hook_allow_skips_the_question_but_never_a_deny_rule(engine, ws):
    allow = hook_script(ws, "allow", """echo '{"hookSpecificOutput": {"permissionDecision": "allow"}}'""")
    sid, _, _ = start(engine, ws, [Turn(tool_uses=[BASH]), Turn(text="ok")], hooks("PreToolUse", allow),
                      mode="default")
    assert (ws / "runs.txt").read_text() == "ran\n"
    assert not entries(engine, sid, PermissionRequestEntry)
    (ws / "runs.txt").unlink()
    deny = RuleSet(deny=[RuleSpec(rule="Bash(echo:*)", source="test")])
    sid, _, _ = start(engine, ws, [Turn(tool_uses=[BASH]), Turn(text="ok")], hooks("PreToolUse", allow),
                      mode="default", rules=deny)
    assert not (ws / "runs.txt").exists()
    assert "denied" in tool_results(engine, sid)[0].text


def test_a_hook_ask_is_the_durable_question_and_the_hook_is_not_run_again(engine, ws):
    ask = hook_script(ws, "ask", """echo '{"hookSpecificOutput": {"permissionDecision": "ask",
 "permissionDecisionReason": "writes a file"}}'""")
    sid, inline, _ = start(engine, ws, [Turn(tool_uses=[BASH]), Turn(text="ok")], hooks("PreToolUse", ask))
    rec = engine.store.get_session(sid)
    assert rec.state is State.AWAITING_PERMISSION and not inline.queue
    (req,) = entries(engine, sid, PermissionRequestEntry)
    assert req.reason == "writes a file" and req.tool == "Bash"
    inline.dispatch(engine.decide_request(sid, req.request_id, True))
    inline.drain()
    assert (ws / "runs.txt").read_text() == "ran\n"
    assert len(runs_of(ws, "ask")) == 1
    assert engine.store.get_session(sid).state is State.IDLE


def test_updated_input_is_run_and_validated_like_model_input(engine, ws):
    rewrite = hook_script(ws, "rewrite", """echo '{"hookSpecificOutput": {"permissionDecision": "allow",
 "updatedInput": {"command": "echo rewritten >> runs.txt"}}}'""")
    start(engine, ws, [Turn(tool_uses=[BASH]), Turn(text="ok")], hooks("PreToolUse", rewrite))
    assert (ws / "runs.txt").read_text() == "rewritten\n"
    bad = hook_script(ws, "bad", """echo '{"hookSpecificOutput": {"updatedInput": {"command": 7}}}'""")
    sid, _, _ = start(engine, ws, [Turn(tool_uses=[BASH]), Turn(text="ok")], hooks("PreToolUse", bad))
    assert "updatedInput for Bash is not valid input" in tool_results(engine, sid)[0].text
    assert (ws / "runs.txt").read_text() == "rewritten\n"


def test_post_tool_use_feedback_reaches_the_model_and_the_transcript(engine, ws):
    post = hook_script(ws, "post", "echo 'runs.txt changed: run the tests' >&2; exit 2")
    sid, _, model = start(engine, ws, [Turn(tool_uses=[BASH]), Turn(text="ok")], hooks("PostToolUse", post))
    assert (ws / "runs.txt").read_text() == "ran\n"
    (entry,) = entries(engine, sid, HookEntry)
    assert entry.event == "PostToolUse" and entry.outcome.decision == "block"
    assert "PostToolUse:Bash hook feedback:\nruns.txt changed: run the tests" in tool_results(engine, sid)[0].text
    assert "run the tests" in json.dumps(api_of(model).requests[-1]["messages"])
    (run,) = runs_of(ws, "post")
    assert run["tool_response"]["stdout"] == "(Bash completed with no output)"


def test_continue_false_stops_the_run(engine, ws):
    stop = hook_script(ws, "stop", """echo '{"continue": false, "stopReason": "quota reached"}'""")
    sid, _, _ = start(engine, ws, [Turn(tool_uses=[BASH]), Turn(text="never")], hooks("PreToolUse", stop))
    (result,) = entries(engine, sid, ResultEntry)
    assert "quota reached" in result.result and not (ws / "runs.txt").exists()


def test_a_retried_step_acts_on_the_recorded_verdict_without_running_the_hook_again(engine, ws):
    """The worker dies after the verdict was committed and before the tool ran: the retry uses the verdict."""
    rewrite = hook_script(ws, "rewrite", """echo '{"hookSpecificOutput": {"updatedInput":
 {"file_path": "out.txt", "content": "from the hook"}}}'""")
    write = ToolUse(name="Write", input={"file_path": "out.txt", "content": "from the model"})
    model = scripted_model(Script(turns=[Turn(tool_uses=[write]), Turn(text="ok")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True), SessionSetup(hooks=hooks("PreToolUse", rewrite, matcher="Write")))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)  # the model step
    (step,) = list(inline.queue)
    assert step.kind is StepKind.TOOL
    claimed, _, rec = engine.claim(rec.id, step.id, "doomed-owner")
    call = rec.tool_calls[0]
    pre = tool_step.pre_tool(engine, rec, claimed, "doomed-owner", call, get_tool("Write"), threading.Event())
    assert pre.call is not None and pre.call.input["content"] == "from the hook"
    # ... and the worker dies here. The lease runs out; the reaper sends the step again.
    assert not (ws / "out.txt").exists()
    inline.queue.clear()
    inline.dispatch(engine.reap(now=time.time() + 3600))
    inline.drain()
    assert (ws / "out.txt").read_text() == "from the hook"
    assert len(runs_of(ws, "rewrite")) == 1
    assert len(entries(engine, rec.id, HookEntry)) == 1
