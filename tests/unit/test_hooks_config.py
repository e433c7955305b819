"""Hook configuration: Claude Code's settings shape, matching, and the errors a user sees."""

from __future__ import annotations

import json

import pytest

from workflows.hooks.settings import parse_hooks
from workflows.models.hook_outcome import HookRun, interpret
from workflows.models.hooks import HookEvent, HookSet, matches
from workflows.sessions.settings_files import load_permission_settings
from workflows.settings.errors import SettingsError


@pytest.mark.parametrize("matcher,subject,expected", [
    ("", "Bash", True), ("*", "Write", True), ("Bash", "Bash", True), ("Bash", "BashX", False),
    ("Edit|Write", "Write", True), ("Edit|Write", "Read", False), ("Notebook.*", "NotebookEdit", True),
    ("mcp__.*", "Bash", False), ("bash", "Bash", False), ("^(Read|Glob)$", "Glob", True),
    ("startup", "startup", True), ("manual", "auto", False), ("Bash", None, False), ("*", None, True),
])
def test_matchers_as_claude_code(matcher, subject, expected):
    assert matches(matcher, subject) is expected


def test_hooks_parse_and_identical_commands_run_once():
    hooks = parse_hooks({"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": "./a.sh", "timeout": 5}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": "./a.sh"}, {"type": "command", "command": "./b"}]},
    ], "Stop": [{"hooks": [{"type": "command", "command": "./stop"}]}]}, "f.json")
    assert [(h.command, h.timeout) for h in hooks.for_event(HookEvent.PRE_TOOL_USE, "Bash")] == [("./a.sh", 5.0),
                                                                                                ("./b", 60.0)]
    assert [h.command for h in hooks.for_event(HookEvent.PRE_TOOL_USE, "Read")] == ["./a.sh", "./b"]
    assert [h.command for h in hooks.for_event(HookEvent.STOP)] == ["./stop"]
    assert hooks.for_event(HookEvent.POST_TOOL_USE, "Bash") == []
    assert bool(hooks) and not bool(HookSet())


def write(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) if not isinstance(obj, str) else obj)


def test_every_settings_file_contributes_hooks_in_order(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    hook = lambda cmd: {"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": cmd}]}]}}  # noqa: E731
    write(home / ".claude/settings.json", hook("user"))
    write(ws / ".claude/settings.json", hook("project"))
    write(ws / ".claude/settings.local.json", hook("local"))
    got = load_permission_settings(ws, home, trusted=True).hooks.for_event(HookEvent.POST_TOOL_USE, "Write")
    assert [(h.command, h.source.split("/")[-2:]) for h in got] == [
        ("user", [".claude", "settings.json"]), ("project", [".claude", "settings.json"]),
        ("local", [".claude", "settings.local.json"])]


@pytest.mark.parametrize("hooks,key,fix", [
    ({"PreToolUs": []}, "'hooks.PreToolUs' is not a hook event", "Use one of: PreToolUse"),
    ({"PreToolUse": {"matcher": "Bash"}}, "'hooks.PreToolUse' must be a list", '"matcher": "Bash"'),
    ({"PreToolUse": [{"matcher": "Bash(", "hooks": []}]}, "'hooks.PreToolUse[0].matcher'", "valid regular"),
    ({"PreToolUse": [{"matcher": "Bash"}]}, "'hooks.PreToolUse[0].hooks' must be a list", '"type": "command"'),
    ({"Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}, "'hooks.Stop[0].hooks[0].type'", "command hooks"),
    ({"Stop": [{"hooks": [{"type": "command"}]}]}, "'hooks.Stop[0].hooks[0].command'", "shell command"),
    ({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}, ".timeout' must be a positive",
     "like 30"),
    ([], "'hooks' must be an object", "PreToolUse"),
])
def test_a_bad_hooks_value_names_the_file_line_key_and_fix(tmp_path, hooks, key, fix):
    ws = tmp_path / "ws"
    write(ws / ".claude/settings.json", {"permissions": {}, "hooks": hooks})
    with pytest.raises(SettingsError) as err:
        load_permission_settings(ws, tmp_path / "home", trusted=True)
    msg = str(err.value)
    assert str(ws / ".claude/settings.json") in msg and ", line " in msg
    assert key in msg and fix in msg


def test_events_of_newer_claude_code_are_accepted_and_not_run():
    assert not parse_hooks({"PermissionRequest": [{"hooks": [{"type": "command", "command": "x"}]}]})


def run(code=0, out="", err="", cmd="h"):
    return HookRun(command=cmd, exit_code=code, stdout=out, stderr=err)


PRE, POST, UPS, STOP = (HookEvent.PRE_TOOL_USE, HookEvent.POST_TOOL_USE, HookEvent.USER_PROMPT_SUBMIT,
                        HookEvent.STOP)


def test_exit_two_blocks_with_stderr_per_event():
    assert (interpret(PRE, [run(2, err="no rm")]).decision, interpret(PRE, [run(2, err="no rm")]).reason) == (
        "deny", "no rm")
    assert interpret(POST, [run(2, err="lint failed")]).decision == "block"
    assert interpret(STOP, [run(2, err="tests fail")]).reason == "tests fail"
    notice = interpret(HookEvent.NOTIFICATION, [run(2, err="oops")])
    assert notice.decision is None and notice.messages == ["Notification hook 'h' exited 2: oops"]


def test_other_exit_codes_and_timeouts_are_non_blocking_warnings():
    o = interpret(PRE, [run(1, err="boom"), HookRun(command="slow", error="it timed out after 1s")])
    assert o.decision is None and o.messages == ["PreToolUse hook 'h' failed with exit code 1: boom",
                                                 "PreToolUse hook 'slow' failed: it timed out after 1s"]


def test_json_output_fields():
    out = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": "not on main",
                                             "updatedInput": {"command": "ls"}},
                      "systemMessage": "careful", "continue": False, "stopReason": "enough"})
    o = interpret(PRE, [run(0, out)])
    assert (o.decision, o.reason, o.updated_input, o.messages, o.stop, o.stop_reason) == (
        "deny", "not on main", {"command": "ls"}, ["careful"], True, "enough")
    assert interpret(PRE, [run(0, '{"decision": "approve"}')]).decision == "allow"  # the older form
    assert interpret(PRE, [run(0, '{"decision": "block", "reason": "r"}')]).decision == "deny"
    post = interpret(POST, [run(0, '{"decision": "block", "reason": "fix lint", '
                                   '"hookSpecificOutput": {"additionalContext": "ctx"}}')])
    assert (post.decision, post.reason, post.context) == ("block", "fix lint", ["ctx"])


def test_deny_beats_ask_beats_allow_across_hooks():
    allow, ask = ('{"hookSpecificOutput": {"permissionDecision": "%s"}}' % d for d in ("allow", "ask"))
    assert interpret(PRE, [run(0, allow), run(0, ask)]).decision == "ask"
    assert interpret(PRE, [run(0, ask), run(2, err="no"), run(0, allow)]).decision == "deny"


def test_plain_stdout_is_context_only_for_prompt_and_session_start():
    assert interpret(UPS, [run(0, "branch: main\n")]).context == ["branch: main"]
    assert interpret(HookEvent.SESSION_START, [run(0, "hi")]).context == ["hi"]
    assert interpret(POST, [run(0, "formatted")]).context == []
    assert interpret(POST, [run(0, "{not json")]).decision is None
