"""PreCompact, Notification, SessionEnd and SessionStart's resume/clear/compact sources (fakeredis, steps
run inline)."""

from __future__ import annotations

import json

from demo.scripted import Script, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from tests.unit.test_compaction import is_compaction
from tests.unit.test_compaction import model as compacting_model
from tests.unit.test_hooks_engine import entries, hook_script, runs_of
from tests.unit.test_session_hooks import session_hooks
from workflows.hooks.settings import parse_hooks
from workflows.models import (
    CompactBoundaryEntry,
    HookEntry,
    PermissionRequestEntry,
    ResultEntry,
    StepKind,
    SystemEntry,
)
from workflows.steps.run import run_step

EDIT = ToolUse(name="Edit", input={"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"})


def new_session(engine, ws, turns, hookset, mode="bypassPermissions"):
    m = scripted_model(turns if callable(turns) else Script(turns=turns))
    rec = create_session(engine, str(ws), model=m, permission_mode=mode, auto_memory=False, hooks=hookset)
    return rec.id, Inline(engine), m


def turn(engine, inline, sid, prompt="go"):
    inline.dispatch(engine.submit(sid, prompt))
    inline.drain()


def chatty(body):
    return Turn(text="<summary>THE SUMMARY</summary>" if is_compaction(body) else "hello")


# ------------------------------------------------------------------------------------------ PreCompact


def test_pre_compact_runs_before_a_manual_compaction_with_its_input_and_stdout_is_shown(engine, ws):
    cmd = hook_script(ws, "pre", "echo 'saved a checkpoint'")
    sid, inline, m = new_session(engine, ws, chatty, session_hooks(PreCompact=cmd))
    turn(engine, inline, sid)
    inline.dispatch(engine.compact(sid, "keep the file names"))
    assert [(s.kind, s.event) for s in inline.queue] == [(StepKind.HOOK, "PreCompact")]
    inline.drain()
    (run,) = runs_of(ws, "pre")
    assert run["hook_event_name"] == "PreCompact" and run["trigger"] == "manual"
    assert run["custom_instructions"] == "keep the file names"
    assert [s.kind for s in inline.ran][-2:] == [StepKind.HOOK, StepKind.COMPACT]
    (hook,) = entries(engine, sid, HookEntry)  # its stdout, which the CLI shows (PreCompact hook: ok: ...)
    assert hook.outcome.runs[0].stdout == "saved a checkpoint\n" and hook.outcome.context == []
    assert entries(engine, sid, ResultEntry)[-1].result.startswith("Compacted")
    assert engine.store.get_session(sid).state is State.IDLE


def test_exit_two_blocks_a_manual_compaction(engine, ws):
    cmd = hook_script(ws, "pre", "echo 'not now: a migration is half done' >&2; exit 2")
    sid, inline, m = new_session(engine, ws, chatty, session_hooks(PreCompact=cmd))
    turn(engine, inline, sid)
    inline.dispatch(engine.compact(sid))
    inline.drain()
    assert not [b for b in api_of(m).requests if is_compaction(b)]
    assert entries(engine, sid, CompactBoundaryEntry) == []
    result = entries(engine, sid, ResultEntry)[-1]
    assert result.result == "Compaction blocked by a PreCompact hook: not now: a migration is half done"
    (hook,) = entries(engine, sid, HookEntry)
    assert hook.event == "PreCompact" and hook.outcome.decision == "block"
    assert engine.store.get_session(sid).state is State.IDLE


def test_a_blocked_auto_compaction_lets_the_run_go_on_and_the_matcher_is_the_trigger(engine, ws):
    cmd = hook_script(ws, "pre", """echo '{"decision": "block", "reason": "keep it all"}'""")
    hookset = parse_hooks({"PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": cmd}]}]},
                          "test")
    sid, inline, m = new_session(engine, ws, compacting_model(), hookset)
    turn(engine, inline, sid, "fix calc.py")
    assert [r["trigger"] for r in runs_of(ws, "pre")] == ["auto"]
    assert not [b for b in api_of(m).requests if is_compaction(b)]
    assert any("Auto-compaction blocked by a PreCompact hook: keep it all" in e.content
               for e in entries(engine, sid, SystemEntry))
    assert entries(engine, sid, ResultEntry)[-1].result == "done"
    manual_only = parse_hooks({"PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": cmd}]}]},
                              "test")
    sid, inline, m = new_session(engine, ws, compacting_model(), manual_only)
    turn(engine, inline, sid, "fix calc.py")
    assert len(runs_of(ws, "pre")) == 1 and len(entries(engine, sid, CompactBoundaryEntry)) == 1


# ---------------------------------------------------------------------------------------- Notification


def until_asked(engine, inline, sid):
    """Run the session's steps until it waits for permission; the Notification steps it sent, not run."""
    inline.dispatch(engine.submit(sid, "go"))
    held = []
    while inline.queue:
        step = inline.queue.popleft()
        if step.event == "Notification":
            held.append(step)
            continue
        inline.ran.append(step)
        run_step(engine, sid, step.id, inline.dispatch)
    return held


def asking(engine, ws, hookset, answer="fixed"):
    """A session (default mode) whose first call, an Edit, waits for permission; its held Notification steps."""
    (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    sid, inline, _ = new_session(engine, ws, [Turn(tool_uses=[EDIT]), Turn(text=answer)], hookset, mode="default")
    return sid, inline, until_asked(engine, inline, sid)


def test_notification_never_delays_the_session_and_its_outcome_is_an_entry(engine, ws):
    cmd = hook_script(ws, "notify", "echo 'pager is down' >&2; exit 2")
    sid, inline, (note,) = asking(engine, ws, session_hooks(Notification=cmd))
    assert note.background and note.kind is StepKind.HOOK and note.detail == "Claude needs your permission to use Edit"
    assert engine.store.get_session(sid).state is State.AWAITING_PERMISSION
    (req,) = entries(engine, sid, PermissionRequestEntry)
    inline.dispatch(engine.decide_request(sid, req.request_id, True))
    inline.drain()  # the session finishes while its Notification step has not even started
    assert entries(engine, sid, ResultEntry)[-1].result == "fixed" and runs_of(ws, "notify") == []
    assert run_step(engine, sid, note.id, inline.dispatch) == "done"
    (run,) = runs_of(ws, "notify")
    assert run["message"] == "Claude needs your permission to use Edit"
    assert run["notification_type"] == "permission_prompt"
    (hook,) = entries(engine, sid, HookEntry)
    assert hook.event == "Notification" and any("pager is down" in m for m in hook.outcome.messages)
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and not inline.queue
    assert run_step(engine, sid, note.id, inline.dispatch) == "skipped"  # a redelivery runs nothing
    assert len(runs_of(ws, "notify")) == 1


def test_a_cancel_does_not_supersede_a_notification(engine, ws):
    cmd = hook_script(ws, "notify", "exit 0")
    sid, inline, (note,) = asking(engine, ws, session_hooks(Notification=cmd))
    engine.cancel(sid)
    assert run_step(engine, sid, note.id, inline.dispatch) == "done"
    assert len(runs_of(ws, "notify")) == 1 and len(entries(engine, sid, HookEntry)) == 1


def test_sessions_without_lifecycle_hooks_send_no_hook_step(engine, ws):
    sid, inline, held = asking(engine, ws, None)
    assert held == []
    assert engine.end_session(sid, "prompt_input_exit") == []
    assert engine.mark_session_start(sid, "resume") is False
    assert all(s.kind is not StepKind.HOOK for s in inline.ran)


# ---------------------------------------------------------------------------------------- SessionEnd


def test_session_end_is_a_background_step_with_the_reason_and_cannot_block(engine, ws):
    cmd = hook_script(ws, "end", "echo 'no' >&2; exit 2")
    sid, inline, _ = new_session(engine, ws, [Turn(text="hi"), Turn(text="again")], session_hooks(SessionEnd=cmd))
    turn(engine, inline, sid)
    (step,) = engine.end_session(sid, "prompt_input_exit")
    assert step.background and step.queue == "tools"
    inline.dispatch([step])
    inline.drain()
    assert [r["reason"] for r in runs_of(ws, "end")] == ["prompt_input_exit"]
    (hook,) = entries(engine, sid, HookEntry)
    assert hook.event == "SessionEnd" and hook.outcome.decision is None
    assert run_step(engine, sid, step.id, inline.dispatch) == "skipped"
    assert len(runs_of(ws, "end")) == 1
    turn(engine, inline, sid, "still here")  # the session itself is untouched: it can go on
    assert entries(engine, sid, ResultEntry)[-1].result == "again"
    only_clear = parse_hooks({"SessionEnd": [{"matcher": "clear", "hooks": [{"type": "command", "command": cmd}]}]},
                             "test")
    sid2, _, _ = new_session(engine, ws, [Turn(text="hi")], only_clear)
    assert engine.end_session(sid2, "prompt_input_exit") == [] and len(engine.end_session(sid2, "clear")) == 1


# ------------------------------------------------------------------------ SessionStart: resume, clear, compact


def sources(hook_cmd):
    return parse_hooks({"SessionStart": [{"matcher": "*", "hooks": [{"type": "command", "command": hook_cmd}]}]},
                       "test")


def test_session_start_resume_and_clear_run_before_the_next_prompt_with_their_source(engine, ws):
    cmd = hook_script(ws, "start", 'echo "source was $(echo "$input" | sed -n \'s/.*"source": "\\([a-z]*\\)".*/\\1/p\')"')
    sid, inline, m = new_session(engine, ws, [Turn(text="a"), Turn(text="b"), Turn(text="c")], sources(cmd))
    turn(engine, inline, sid)
    turn(engine, inline, sid, "no hook before this one")
    assert engine.mark_session_start(sid, "resume") is True
    turn(engine, inline, sid, "resumed")
    assert [r["source"] for r in runs_of(ws, "start")] == ["startup", "resume"]
    assert "SessionStart hook additional context: source was resume" in json.dumps(api_of(m).requests[2]["messages"])
    sid2, inline2, _ = new_session(engine, ws, [Turn(text="x")], sources(cmd))
    engine.mark_session_start(sid2, "clear")
    turn(engine, inline2, sid2)
    assert [r["source"] for r in runs_of(ws, "start")] == ["startup", "resume", "clear"]


def test_session_start_compact_runs_after_an_auto_compaction_and_before_the_next_model_call(engine, ws):
    cmd = hook_script(ws, "start", """case "$input" in *'"source": "compact"'*) echo 're-read NOTES.md';; esac""")
    sid, inline, m = new_session(engine, ws, compacting_model(), sources(cmd))
    turn(engine, inline, sid, "fix calc.py")
    assert [r["source"] for r in runs_of(ws, "start")] == ["startup", "compact"]
    kinds = [(s.kind, s.event) for s in inline.ran]
    at = kinds.index((StepKind.COMPACT, None))
    assert kinds[at + 1:at + 3] == [(StepKind.HOOK, "SessionStart"), (StepKind.MODEL, None)]
    after = api_of(m).requests[-1]
    assert "SessionStart hook additional context: re-read NOTES.md" in json.dumps(after["messages"])
    assert entries(engine, sid, ResultEntry)[-1].result == "done"


def test_session_start_compact_after_a_manual_compaction_runs_before_the_next_prompt(engine, ws):
    cmd = hook_script(ws, "start", "exit 0")
    sid, inline, m = new_session(engine, ws, chatty, sources(cmd))
    turn(engine, inline, sid)
    inline.dispatch(engine.compact(sid))
    inline.drain()
    assert [r["source"] for r in runs_of(ws, "start")] == ["startup"]
    turn(engine, inline, sid, "next")
    assert [r["source"] for r in runs_of(ws, "start")] == ["startup", "compact"]


def test_a_retried_pre_compact_step_with_a_recorded_verdict_does_not_run_the_hook_again(engine, ws):
    cmd = hook_script(ws, "pre", "exit 0")
    sid, inline, m = new_session(engine, ws, chatty, session_hooks(PreCompact=cmd))
    turn(engine, inline, sid)
    inline.dispatch(engine.compact(sid))
    (step,) = list(inline.queue)
    inline.run(1)  # the hook step: verdict and the compaction step committed together
    assert run_step(engine, sid, step.id, inline.dispatch) == "skipped"
    inline.dispatch(engine.reap(now=10 ** 10))
    inline.drain()
    assert len(runs_of(ws, "pre")) == 1 and len(entries(engine, sid, HookEntry)) == 1
    assert len(entries(engine, sid, CompactBoundaryEntry)) == 1
