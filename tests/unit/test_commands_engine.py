"""Custom slash commands through the engine (fakeredis, steps run inline): a ``/name args`` prompt runs its
``!`` lines and ``@`` files as Bash and Read calls first, each decided like any call, then sends the prompt."""

from __future__ import annotations

import json

import pytest

from demo.scripted import Script, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.session_kw import create as create_session
from workflows.models import (
    PermissionRequestEntry,
    ResultEntry,
    RuleSet,
    StepKind,
    SystemEntry,
    UserEntry,
)


def write(ws, name: str, text: str) -> None:
    path = ws / ".claude" / "commands" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def open_session(engine, ws, home, turns=None, *, mode="default", asks="wait", rules=None, **kw):
    model = scripted_model(Script(turns=turns or [Turn(text="Done.")]))
    rec = create_session(engine, str(ws), model=model, permission_mode=mode, auto_memory=False, asks=asks,
                                home=str(home), rules=rules, **kw)
    problems = engine.refresh_commands(rec.id)
    return rec.id, model, problems


def run(engine, sid: str, prompt: str) -> Inline:
    inline = Inline(engine)
    inline.dispatch(engine.submit(sid, prompt))
    inline.drain()
    return inline


def entries(engine, sid, kind):
    return [e for e in engine.store.entries(sid) if isinstance(e, kind)]


def last_user_texts(model) -> list[str]:
    request = api_of(model).requests[-1]
    return [b["text"] for b in request["messages"][-1]["content"] if b["type"] == "text"]


@pytest.fixture
def home(tmp_path):
    d = tmp_path / "home"
    d.mkdir()
    return d


def test_arguments_bash_lines_and_files_become_claude_codes_prompt(engine, ws, home):
    (ws / "notes.txt").write_text("alpha\nbeta\n")
    write(ws, "review", "---\ndescription: Review a file\nargument-hint: [file] [focus]\n"
                        "allowed-tools: Bash(echo:*)\n---\n"
                        "Review $0 for $1. All: $ARGUMENTS\nEcho: !`echo hi $0`\nFile: @notes.txt\n")
    sid, model, problems = open_session(engine, ws, home)
    assert problems == []
    inline = run(engine, sid, "/review calc.py speed")
    texts = last_user_texts(model)
    assert texts[-2] == ("<command-message>review</command-message>\n<command-name>/review</command-name>\n"
                         "<command-args>calc.py speed</command-args>\n")
    assert texts[-1].startswith("Review calc.py for speed. All: calc.py speed\nEcho: hi calc.py\nFile: @notes.txt")
    reminders = [t for t in texts if "Read tool" in t]
    assert reminders[0] == ("<system-reminder>\nCalled the Read tool with the following input: "
                            + json.dumps({"file_path": str(ws / "notes.txt")}, separators=(",", ":"))
                            + "\n</system-reminder>")
    assert "alpha" in reminders[1] and "beta" in reminders[1]
    assert [s.kind for s in inline.ran] == [StepKind.TOOL, StepKind.TOOL, StepKind.MODEL]
    (prompt,) = [e for e in entries(engine, sid, UserEntry) if e.origin == "prompt"]
    assert prompt.command == "/review calc.py speed"
    assert not [e for e in entries(engine, sid, UserEntry) if e.origin == "tool_result"]  # nothing for the model
    marks = [e.content for e in entries(engine, sid, SystemEntry) if e.subtype == "command"]
    assert marks[0] == "/review calc.py speed" and marks[1].startswith("!`echo hi calc.py`: hi calc.py")
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and rec.command is None and rec.run_allow == [] and rec.tool_calls == []
    assert entries(engine, sid, ResultEntry)[-1].result == "Done."


def test_a_line_that_asks_waits_for_a_person_and_runs_once_approved(engine, ws, home):
    write(ws, "mk", "Made: !`touch made.txt && echo made`\n")
    sid, model, _ = open_session(engine, ws, home)
    inline = run(engine, sid, "/mk")
    rec = engine.store.get_session(sid)
    assert rec.state is State.AWAITING_PERMISSION and not (ws / "made.txt").exists()
    (req,) = entries(engine, sid, PermissionRequestEntry)
    assert req.tool == "Bash" and req.input == {"command": "touch made.txt && echo made"}
    assert api_of(model).requests == []
    inline.dispatch(engine.decide_request(sid, None, True))
    inline.drain()
    assert (ws / "made.txt").exists()
    assert last_user_texts(model)[-1] == "Made: made\n"


def test_a_denied_line_ends_the_run_without_a_model_call(engine, ws, home):
    write(ws, "mk", "A: !`touch a.txt`\nB: !`touch b.txt`\n")
    sid, model, _ = open_session(engine, ws, home)
    inline = run(engine, sid, "/mk")
    assert len(engine.store.get_session(sid).pending_requests()) == 2  # both lines are asked up front
    inline.dispatch(engine.decide_request(sid, engine.store.get_session(sid).pending_requests()[0].id, False,
                                          message="not now"))
    inline.drain()
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and rec.pending_requests() == [] and rec.command is None
    result = entries(engine, sid, ResultEntry)[-1]
    assert result.result == ('Shell command permission check failed for pattern "!`touch a.txt`": denied by '
                             "user: not now.")
    assert result.subtype == "success" and result.num_turns == 0
    assert api_of(model).requests == [] and not (ws / "a.txt").exists() and not (ws / "b.txt").exists()


def test_print_mode_refuses_a_line_that_would_ask(engine, ws, home):
    write(ws, "mk", "Out: !`touch made.txt`\n")
    sid, model, _ = open_session(engine, ws, home, asks="deny")
    inline = run(engine, sid, "/mk")
    result = entries(engine, sid, ResultEntry)[-1]
    assert result.result.startswith('Shell command permission check failed for pattern "!`touch made.txt`": ')
    assert "print mode" in result.result
    assert inline.ran == [] and api_of(model).requests == [] and not (ws / "made.txt").exists()


def test_deny_rules_and_plan_mode_refuse_lines_that_allowed_tools_would_allow(engine, ws, home):
    write(ws, "rm", "---\nallowed-tools: Bash(rm:*)\n---\n!`rm -f calc.py`\n")
    rules = RuleSet()
    rules.add("deny", "Bash(rm:*)", "test")
    sid, model, _ = open_session(engine, ws, home, rules=rules)
    run(engine, sid, "/rm")
    assert "permission check failed" in entries(engine, sid, ResultEntry)[-1].result
    assert (ws / "calc.py").exists()
    sid, model, _ = open_session(engine, ws, home, mode="plan")
    run(engine, sid, "/rm")
    assert "plan mode" in entries(engine, sid, ResultEntry)[-1].result and (ws / "calc.py").exists()


def test_allowed_tools_hold_for_the_run_only_and_lines_run_without_asking(engine, ws, home):
    write(ws, "mk", "---\nallowed-tools: Bash(touch:*)\n---\n!`touch one.txt`\n")
    turns = [Turn(text="", tool_uses=[{"name": "Bash", "input": {"command": "touch two.txt"}}]), Turn(text="ok"),
             Turn(text="", tool_uses=[{"name": "Bash", "input": {"command": "touch three.txt"}}])]
    sid, model, _ = open_session(engine, ws, home, turns=turns)
    run(engine, sid, "/mk")
    assert (ws / "one.txt").exists() and (ws / "two.txt").exists()  # the model's call of the same run too
    run(engine, sid, "now a plain prompt")
    assert engine.store.get_session(sid).state is State.AWAITING_PERMISSION  # the next run asks again
    assert not (ws / "three.txt").exists()


def test_a_project_commands_allowed_tools_do_not_apply_in_an_untrusted_workspace(engine, ws, home):
    """The repository wrote .claude/commands/mk.md: its pre-approval of `touch` counts only once it is trusted."""
    write(ws, "mk", "---\nallowed-tools: Bash(touch:*)\n---\n!`touch one.txt`\n")
    sid, model, _ = open_session(engine, ws, home, untrusted_workspace=True)
    run(engine, sid, "/mk")
    assert not (ws / "one.txt").exists()
    assert engine.store.get_session(sid).state is State.AWAITING_PERMISSION  # the line asks, as any call
    [note] = [e.content for e in entries(engine, sid, SystemEntry) if e.subtype == "warning"]
    assert note.startswith("allowed-tools of /mk (") and "the workspace is not trusted" in note


def test_a_failing_line_ends_the_run_with_its_output(engine, ws, home):
    write(ws, "ls", "---\nallowed-tools: Bash(ls:*)\n---\n!`ls no-such-dir`\n")
    sid, model, _ = open_session(engine, ws, home)
    run(engine, sid, "/ls")
    result = entries(engine, sid, ResultEntry)[-1]
    assert result.result.startswith('Shell command failed for pattern "!`ls no-such-dir`": ')
    assert "no-such-dir" in result.result and api_of(model).requests == []


def test_files_outside_the_workspace_are_refused_and_missing_ones_left_out(engine, ws, home, tmp_path):
    (tmp_path / "secret.txt").write_text("s3cret")
    write(ws, "out", "Look @../secret.txt\n")
    write(ws, "miss", "Ping @channel when done\n")
    sid, model, _ = open_session(engine, ws, home, mode="bypassPermissions")
    inline = run(engine, sid, "/out")
    result = entries(engine, sid, ResultEntry)[-1]
    assert result.result.startswith("File reference @../secret.txt cannot be attached: ")
    assert "outside the workspace" in result.result and inline.ran == []
    run(engine, sid, "/miss")
    assert last_user_texts(model)[-1] == "Ping @channel when done\n"
    warning = [e.content for e in entries(engine, sid, SystemEntry) if e.subtype == "warning"][-1]
    assert warning.startswith("@channel was not attached:")


def test_command_model_applies_to_its_run_only(engine, ws, home):
    other = scripted_model(Script(turns=[Turn(text="from the other model")]))
    write(ws, "quick", f"---\nmodel: {other}\n---\nsay hi\n")
    # (a scripted model answers by the number of replies in the request: turn 0 is never asked here)
    sid, model, _ = open_session(engine, ws, home, turns=[Turn(text="unused"), Turn(text="main")])
    run(engine, sid, "/quick")
    assert entries(engine, sid, ResultEntry)[-1].result == "from the other model"
    assert api_of(model).requests == []
    run(engine, sid, "plain")
    assert entries(engine, sid, ResultEntry)[-1].result == "main"


def test_unknown_names_and_paths_are_plain_prompts(engine, ws, home):
    sid, model, _ = open_session(engine, ws, home, turns=[Turn(text="a"), Turn(text="b")])
    run(engine, sid, "/nosuch x")
    run(engine, sid, "/usr/bin/env fails")
    sent = [r["messages"][-1]["content"] for r in api_of(model).requests]
    assert "/nosuch x" in json.dumps(sent[0]) and "/usr/bin/env fails" in json.dumps(sent[1])
    assert not [e for e in entries(engine, sid, SystemEntry) if e.subtype == "command"]


def test_a_queued_command_expands_when_its_turn_comes(engine, ws, home):
    write(ws, "hi", "Hello $ARGUMENTS\n")
    turns = [Turn(text="", tool_uses=[{"name": "Read", "input": {"file_path": str(ws / "calc.py")}}]),
             Turn(text="first"), Turn(text="second")]
    sid, model, _ = open_session(engine, ws, home, turns=turns)
    inline = Inline(engine)
    inline.dispatch(engine.submit(sid, "first prompt"))
    inline.run(1)  # the model call asked for a Read: the session is busy
    inline.dispatch(engine.submit(sid, "/hi there"))
    assert engine.store.inbox(sid) == ["/hi there"]
    inline.drain()
    assert last_user_texts(model)[-1] == "Hello there\n"


def test_cancel_during_the_lines_leaves_the_session_idle_and_clean(engine, ws, home):
    write(ws, "mk", "!`touch x.txt`\n")
    sid, model, _ = open_session(engine, ws, home)
    run(engine, sid, "/mk")
    assert engine.store.get_session(sid).state is State.AWAITING_PERMISSION
    engine.cancel(sid)
    rec = engine.store.get_session(sid)
    assert rec.state is State.IDLE and rec.command is None and rec.tool_calls == []
    assert not [e for e in entries(engine, sid, UserEntry) if e.origin == "tool_result"]
    assert entries(engine, sid, ResultEntry)[-1].subtype == "cancelled"


def test_user_prompt_submit_hooks_see_the_command_as_typed_and_can_stop_it_before_its_lines(engine, ws, home):
    from tests.unit.test_hooks_engine import hook_script, runs_of
    from workflows.hooks.settings import parse_hooks

    write(ws, "mk", "---\nallowed-tools: Bash(touch:*)\n---\n!`touch made.txt`\n")
    cmd = hook_script(ws, "ups", 'case "$input" in *block*) echo "no" >&2; exit 2;; *) echo "ctx line";; esac')
    hookset = parse_hooks({"UserPromptSubmit": [{"hooks": [{"type": "command", "command": cmd}]}]}, "test")
    sid, model, _ = open_session(engine, ws, home, hooks=hookset)
    run(engine, sid, "/mk block")
    assert not (ws / "made.txt").exists() and api_of(model).requests == []
    assert [r["prompt"] for r in runs_of(ws, "ups")] == ["/mk block"]
    run(engine, sid, "/mk")
    assert (ws / "made.txt").exists()
    texts = last_user_texts(model)
    assert texts[-3].startswith("<command-message>mk</command-message>")
    assert texts[-2] == "(Bash completed with no output)\n"  # as Claude Code puts a silent line's output
    assert "UserPromptSubmit hook additional context: ctx line" in texts[-1]


def test_a_pre_tool_use_hook_guards_bash_lines_as_it_guards_the_models_calls(engine, ws, home):
    from tests.unit.test_hooks_engine import hook_script, hooks

    write(ws, "mk", "---\nallowed-tools: Bash(touch:*)\n---\n!`touch made.txt`\n")
    cmd = hook_script(ws, "guard", "echo 'no touching' >&2; exit 2")
    sid, model, _ = open_session(engine, ws, home, hooks=hooks("PreToolUse", cmd))
    run(engine, sid, "/mk")
    result = entries(engine, sid, ResultEntry)[-1].result
    assert result == ('Shell command failed for pattern "!`touch made.txt`": PreToolUse:Bash hook denied this call: '
                      "no touching")
    assert not (ws / "made.txt").exists() and api_of(model).requests == []
