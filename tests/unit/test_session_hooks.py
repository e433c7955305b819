"""Session-level hooks (fakeredis, steps run inline): UserPromptSubmit, Stop and SessionStart run in a
``hook`` step whose verdict is committed, with its effect, before anything acts on it."""

from __future__ import annotations

import json

from demo.scripted import Script, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from tests.unit.test_hooks_engine import entries, hook_script, runs_of
from workflows.hooks.session_hooks import STOP_BLOCK_LIMIT
from workflows.hooks.settings import parse_hooks
from workflows.models import HookEntry, ResultEntry, StepKind, UserEntry
from workflows.models.options import SessionOptions, SessionSetup
from workflows.steps.run import run_step


def session_hooks(**events: str):
    return parse_hooks({event: [{"hooks": [{"type": "command", "command": cmd, "timeout": 20}]}]
                        for event, cmd in events.items()}, "test")


def start(engine, ws, turns, hookset, prompt="go", **kw):
    model = scripted_model(Script(turns=turns))
    rec = create_session(engine, str(ws), model=model, permission_mode="bypassPermissions", hooks=hookset,
                                auto_memory=False, **kw)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, prompt))
    inline.drain()
    return rec.id, inline, model


def sent(model) -> str:
    return json.dumps([r["messages"] for r in api_of(model).requests])


def test_exit_two_blocks_the_prompt_and_the_model_is_never_called(engine, ws):
    cmd = hook_script(ws, "ups", "echo 'no secrets in prompts' >&2; exit 2")
    sid, inline, model = start(engine, ws, [Turn(text="never")], session_hooks(UserPromptSubmit=cmd),
                               prompt="my password is hunter2")
    assert api_of(model).requests == []
    (run,) = runs_of(ws, "ups")
    assert run["hook_event_name"] == "UserPromptSubmit" and run["prompt"] == "my password is hunter2"
    (result,) = entries(engine, sid, ResultEntry)
    assert "no secrets in prompts" in result.result and result.subtype == "success"
    assert not any("hunter2" in json.dumps(e.message.model_dump()) for e in entries(engine, sid, UserEntry))
    (hook,) = entries(engine, sid, HookEntry)
    assert hook.event == "UserPromptSubmit" and hook.outcome.decision == "block"
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and rec.held_prompt is None
    assert [s.kind for s in inline.ran] == [StepKind.HOOK]


def test_decision_block_json_blocks_too_and_the_next_prompt_goes_through(engine, ws):
    cmd = hook_script(ws, "ups", """case "$input" in *forbidden*) echo '{"decision": "block", "reason": "nope"}';; esac""")
    sid, inline, model = start(engine, ws, [Turn(text="fine")], session_hooks(UserPromptSubmit=cmd),
                               prompt="forbidden words")
    assert api_of(model).requests == []
    inline.dispatch(engine.submit(sid, "hello"))
    inline.drain()
    assert "hello" in sent(model) and "forbidden" not in sent(model)
    assert [e.result for e in entries(engine, sid, ResultEntry)][-1] == "fine"


def test_prompt_hook_context_reaches_the_model_after_the_prompt(engine, ws):
    cmd = hook_script(ws, "ups", "echo 'the build is broken since Monday'")
    sid, _, model = start(engine, ws, [Turn(text="ok")], session_hooks(UserPromptSubmit=cmd))
    (request,) = api_of(model).requests
    texts = [b["text"] for b in request["messages"][-1]["content"] if b["type"] == "text"]
    assert texts[-2] == "go"
    assert "UserPromptSubmit hook additional context: the build is broken since Monday" in texts[-1]
    json_ctx = hook_script(ws, "ups2", """echo '{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
 "additionalContext": "from json"}}'""")
    _, _, model = start(engine, ws, [Turn(text="ok")], session_hooks(UserPromptSubmit=json_ctx))
    assert "additional context: from json" in sent(model)


def test_stop_block_makes_the_model_answer_again_until_stop_hook_active(engine, ws):
    cmd = hook_script(ws, "stop", """case "$input" in *'"stop_hook_active": false'*)
  echo 'run the tests first' >&2; exit 2;; esac""")
    sid, inline, model = start(engine, ws, [Turn(text="done"), Turn(text="tests pass")],
                               session_hooks(Stop=cmd))
    assert len(api_of(model).requests) == 2
    assert "Stop hook feedback:\\nrun the tests first" in json.dumps(api_of(model).requests[1]["messages"])
    assert [r["stop_hook_active"] for r in runs_of(ws, "stop")] == [False, True]
    (result,) = entries(engine, sid, ResultEntry)
    assert result.result == "tests pass" and not result.is_error
    assert [s.kind for s in inline.ran] == [StepKind.MODEL, StepKind.HOOK, StepKind.MODEL, StepKind.HOOK]
    assert engine.store.get_session(sid).state is State.IDLE


def test_a_stop_hook_that_always_blocks_is_capped(engine, ws):
    cmd = hook_script(ws, "stop", "echo 'again' >&2; exit 2")
    turns = [Turn(text=f"answer {i}") for i in range(STOP_BLOCK_LIMIT + 3)]
    sid, _, model = start(engine, ws, turns, session_hooks(Stop=cmd))
    assert len(api_of(model).requests) == STOP_BLOCK_LIMIT + 1
    (result,) = entries(engine, sid, ResultEntry)
    assert result.result == f"answer {STOP_BLOCK_LIMIT}"
    sid, _, model = start(engine, ws, turns, session_hooks(Stop=cmd), max_turns=3)
    assert len(api_of(model).requests) == 3
    assert entries(engine, sid, ResultEntry)[-1].subtype == "error_max_turns"


def test_session_start_runs_once_and_its_output_is_context(engine, ws):
    cmd = hook_script(ws, "start", "echo 'branch main, 3 open issues'")
    sid, inline, model = start(engine, ws, [Turn(text="a"), Turn(text="b")], session_hooks(SessionStart=cmd))
    inline.dispatch(engine.submit(sid, "again"))
    inline.drain()
    assert [r["source"] for r in runs_of(ws, "start")] == ["startup"]
    assert "SessionStart hook additional context: branch main, 3 open issues" in json.dumps(
        api_of(model).requests[0]["messages"])


def submitted(engine, ws, body: str, answer: str):
    """A prompt submitted to a session with a UserPromptSubmit hook ``body``: its hook step queued, not run."""
    cmd = hook_script(ws, "ups", body)
    model = scripted_model(Script(turns=[Turn(text=answer)]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True), SessionSetup(hooks=session_hooks(UserPromptSubmit=cmd)))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    (step,) = list(inline.queue)
    assert step.kind is StepKind.HOOK and step.queue == "tools"
    return rec, inline, step, model


def test_a_retried_hook_step_with_a_recorded_verdict_does_not_run_the_hook_again(engine, ws):
    rec, inline, step, model = submitted(engine, ws, "echo 'context'", "ok")
    inline.run(1)  # the hook step: verdict and effect committed
    assert run_step(engine, rec.id, step.id, inline.dispatch) == "skipped"  # a broker redelivery
    inline.dispatch(engine.reap(now=10 ** 10))
    inline.drain()
    assert len(runs_of(ws, "ups")) == 1 and len(entries(engine, rec.id, HookEntry)) == 1
    assert len(api_of(model).requests) == 1


def test_a_hook_step_whose_worker_died_before_its_verdict_runs_the_hook_again(engine, ws):
    rec, inline, step, model = submitted(engine, ws, "exit 2", "never")
    engine.claim(rec.id, step.id, "doomed-owner")  # ... and that worker dies before it commits anything
    inline.queue.clear()
    inline.dispatch(engine.reap(now=10 ** 10))
    inline.drain()
    assert len(runs_of(ws, "ups")) == 1
    assert api_of(model).requests == [] and "blocked" in entries(engine, rec.id, ResultEntry)[0].result


def test_sessions_without_session_hooks_send_no_hook_step(engine, ws):
    cmd = hook_script(ws, "pre", "exit 0")
    hookset = parse_hooks({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": cmd}]}]},
                          "test")
    _, inline, _ = start(engine, ws, [Turn(text="ok")], hookset)
    assert [s.kind for s in inline.ran] == [StepKind.MODEL]


def test_the_cli_warns_only_about_events_that_still_do_not_run():
    from workflows.sessions.setup import unrun_hooks

    assert unrun_hooks(session_hooks(UserPromptSubmit="a", Stop="b", SessionStart="c", PreToolUse="d",
                                     PreCompact="e", Notification="f", SessionEnd="g")) == []
    assert unrun_hooks(session_hooks(Stop="b", SubagentStop="e", Notification="f")) == []  # sub-agents exist
    resume = parse_hooks({"SessionStart": [{"matcher": "resume|clear|compact",
                                            "hooks": [{"type": "command", "command": "x"}]}]}, "test")
    assert unrun_hooks(resume) == []


def test_a_blocked_prompts_hook_entry_names_it_by_digest_only(engine, ws):
    from workflows.hooks.prompt_entries import is_entry_of_prompt

    cmd = hook_script(ws, "ups", "exit 2")
    sid, _, _ = start(engine, ws, [Turn(text="never")], session_hooks(UserPromptSubmit=cmd), prompt="secret 42")
    (hook,) = entries(engine, sid, HookEntry)
    assert is_entry_of_prompt(hook, "secret 42") and not is_entry_of_prompt(hook, "secret 43")
    assert "secret 42" not in hook.model_dump_json()
