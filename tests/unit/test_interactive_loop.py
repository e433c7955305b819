"""The interactive loop's commands and keys on fakeredis, with a scripted line reader.

Turns are driven end to end in tests/e2e/test_interactive.py; here the loop's own
logic: command parsing, errors that do not end the loop, Ctrl-C at the prompt and
Ctrl-C during a turn (the session is cancelled).
"""

from __future__ import annotations

import pytest

from cli import interactive, interactive_open
from cli.connect import Runtime
from cli.interactive import Interactive
from cli.interactive_habits import CYCLE_COMMAND
from statemachines import State
from workflows.engine import Engine
from workflows.models import ResultEntry, SystemEntry, UserEntry
from workflows.models.options import SessionOptions, SessionSetup
from workflows.store.redis_store import Store

MODEL = "scripted:demo"


class Lines:
    """A LineReader stand-in: returns the scripted lines; an exception instance is raised."""

    tty = False

    def __init__(self, *lines) -> None:
        self.lines = list(lines)
        self.prompts: list[str] = []

    def prompt(self, text: str = "> "):
        self.prompts.append(text)
        if not self.lines:
            return None
        item = self.lines.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    def fileno(self) -> int:
        raise OSError("no terminal")

    def readline(self) -> str:
        return ""


@pytest.fixture
def rt(fake_redis, settings):
    return Runtime(url="", engine=Engine(Store(fake_redis, lock_wait=1.0), settings))


@pytest.fixture
def ws(tmp_path):
    d = tmp_path / "ws"
    d.mkdir()
    return d


def make(rt, ws, *lines, mode="default") -> Interactive:
    rec = rt.engine.create_session(str(ws), SessionOptions(model=MODEL, permission_mode=mode))
    return Interactive(rt, rt.engine.settings, ws, Lines(*lines), rec.id)


def test_ctrl_c_at_the_prompt_leaves(rt, ws, capsys):
    ui = make(rt, ws, "/help", KeyboardInterrupt(), "/status")
    ui.loop()
    out = capsys.readouterr().out
    assert "Commands:" in out and out.rstrip().endswith("Bye.")
    assert ui.reader.lines == ["/status"], "the loop read on after Ctrl-C"


def test_end_of_input_and_exit_leave(rt, ws, capsys):
    make(rt, ws).loop()
    assert "Bye." in capsys.readouterr().out
    ui = make(rt, ws, "/quit", "/status")
    ui.loop()
    assert ui.reader.lines == ["/status"]


def test_unknown_commands_and_domain_errors_keep_the_loop_going(rt, ws, capsys):
    ui = make(rt, ws, "/bogus", "/resume nosuchsession", "", "   ", "/model", "/exit")
    ui.loop()
    captured = capsys.readouterr()
    assert "Unknown command /bogus. Type /help." in captured.err
    assert "No session matches 'nosuchsession'" in captured.err
    assert f"Current model: {MODEL}" in captured.out
    assert "Traceback" not in captured.out + captured.err


def test_a_path_is_a_prompt_not_a_command():
    assert Interactive.is_command("/status")
    assert Interactive.is_command("/model claude-haiku-4-5")
    assert not Interactive.is_command("/usr/bin/python crashes on start")
    assert not Interactive.is_command("fix /status")


def test_model_switch_and_credentials(rt, ws, capsys):
    ui = make(rt, ws, "/model scripted:other", "/model claude-haiku-4-5", "/exit")
    ui.loop()
    captured = capsys.readouterr()
    assert f"Model set to scripted:other (was {MODEL})" in captured.out
    # No credentials in the unit settings: the switch to a real model is refused, clearly.
    assert "No API key for model 'claude-haiku-4-5'" in captured.err
    assert rt.store.get_session(ui.sid).model == "scripted:other"


def test_clear_keeps_mode_rules_and_model(rt, ws, capsys):
    rec = rt.engine.create_session(str(ws), SessionOptions(model=MODEL, permission_mode="acceptEdits"))
    rec.rules.add("allow", "Bash(npm test:*)", "--allowedTools")
    rt.store.save_session(rec)
    ui = Interactive(rt, rt.engine.settings, ws, Lines("/clear", "/permissions", "/exit"), rec.id)
    ui.loop()
    assert ui.sid != rec.id
    new = rt.store.get_session(ui.sid)
    assert (new.model, new.permission_mode.value) == (MODEL, "acceptEdits")
    assert [(r.rule, r.source) for r in new.rules.allow] == [("Bash(npm test:*)", "--allowedTools")]
    out = capsys.readouterr().out
    assert f"New session {ui.sid[:8]} in {new.workspace}" in out
    assert "Permission mode: acceptEdits" in out and "Bash(npm test:*)  from --allowedTools" in out


def test_a_bypass_disabled_since_the_start_is_left_by_shift_tab_clear_and_resume(rt, ws, capsys):
    """A session that started in bypassPermissions, then its workspace's settings disabled the mode:
    /permissions says what applies, Shift+Tab cycles among the other modes only, /clear does not carry
    bypass over, and /resume of such a session sets it to default with the warning."""
    old = rt.engine.create_session(str(ws), SessionOptions(model=MODEL, permission_mode="bypassPermissions"))
    rec = rt.engine.create_session(str(ws), SessionOptions(model=MODEL, permission_mode="bypassPermissions"))
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text('{"permissions": {"disableBypassPermissionsMode": "disable"}}')
    ui = Interactive(rt, rt.engine.settings, ws, Lines("/permissions", *[CYCLE_COMMAND] * 4, "/clear", "/permissions",
                                                       f"/resume {old.id}", "/exit"), rec.id)
    ui.loop()
    out, err = capsys.readouterr()
    assert "Permission mode: default (bypassPermissions is disabled by settings)" in out
    assert "bypass permissions on" not in out and out.count("accept edits on") == 2
    # default -> acceptEdits -> plan -> default -> acceptEdits: never bypassPermissions
    assert rt.store.get_session(rec.id).permission_mode.value == "acceptEdits"
    cleared = [s for s in rt.store.session_ids() if s not in (old.id, rec.id)]
    assert [rt.store.get_session(s).permission_mode.value for s in cleared] == ["acceptEdits"]
    assert rt.store.get_session(old.id).permission_mode.value == "default" and ui.sid == old.id
    assert "Bypass permissions mode was disabled by settings" in err


def test_resume_carries_the_settings_flags_disable_to_the_session_it_takes_up(rt, ws, capsys):
    """`mainsail --settings '{...disable...}'`, then /resume of a bypass session: it leaves bypass for good
    (the flag's layer joins its record), as `--settings ... --resume ID` at the start would."""
    other = rt.engine.create_session(str(ws), SessionOptions(model=MODEL, permission_mode="bypassPermissions"))
    rec = rt.engine.create_session(str(ws), SessionOptions(model=MODEL))
    extra = [("--settings (inline JSON)", '{"permissions": {"disableBypassPermissionsMode": "disable"}}')]
    ui = Interactive(rt, rt.engine.settings, ws, Lines(f"/resume {other.id}", "/exit"), rec.id, extra_settings=extra)
    ui.loop()
    _, err = capsys.readouterr()
    taken = rt.store.get_session(other.id)
    assert ui.sid == other.id and taken.permission_mode.value == "default"
    assert taken.bypass_disabled_by == ["--settings (inline JSON)"]
    assert "Bypass permissions mode was disabled by settings (permissions.disableBypassPermissionsMode in --settings" in err


def test_resume_lists_this_workspaces_sessions_and_takes_a_number(rt, ws, capsys):
    first = rt.engine.create_session(str(ws), SessionOptions(model=MODEL))
    first.title = "the first one"
    rt.store.save_session(first)
    ui = make(rt, ws, "/resume", "2", "/exit")
    ui.loop()
    out = capsys.readouterr().out
    assert "Recent sessions in" in out and "the first one" in out
    assert ui.sid == first.id
    assert f"Resumed session {first.id[:8]}: the first one" in out


def test_ctrl_c_during_a_turn_cancels_the_session_and_returns_to_the_prompt(rt, ws, capsys, monkeypatch):
    sent = []
    monkeypatch.setattr("cli.session_service.dispatch", sent.extend)

    def follow(store, sid, **kw):
        assert store.get_session(sid).state is not State.IDLE
        raise KeyboardInterrupt

    monkeypatch.setattr(interactive, "follow", follow)
    ui = make(rt, ws, "Do something slow", "/status", "/exit", mode="bypassPermissions")
    ui.loop()
    out = capsys.readouterr().out
    assert sent, "the turn was not dispatched"
    assert "Interrupted." in out
    assert "state       idle" in out, "the loop did not go on to /status"
    rec = rt.store.get_session(ui.sid)
    assert rec.state is State.IDLE
    entries = rt.store.entries(ui.sid)
    assert any(isinstance(e, SystemEntry) and e.subtype == "interrupted" and e.content == "Interrupted by user"
               for e in entries)
    assert [e.subtype for e in entries if isinstance(e, ResultEntry)] == ["cancelled"]
    assert isinstance(entries[0], UserEntry) and entries[0].message.text() == "Do something slow"


def test_clear_ends_the_old_session_and_the_new_one_starts_with_source_clear(rt, ws, monkeypatch):
    from workflows.hooks.settings import parse_hooks

    sent = []
    monkeypatch.setattr("cli.session_service.dispatch", sent.extend)
    hooks = parse_hooks({event: [{"hooks": [{"type": "command", "command": "true"}]}]
                         for event in ("SessionEnd", "SessionStart")}, "test")
    rec = rt.engine.create_session(str(ws), SessionOptions(model=MODEL, permission_mode="default"), SessionSetup(hooks=hooks))
    ui = Interactive(rt, rt.engine.settings, ws, Lines("/clear"), rec.id)
    ui.loop()
    (end,) = sent
    assert (end.session_id, end.event, end.detail, end.background) == (rec.id, "SessionEnd", "clear", True)
    new = rt.store.get_session(ui.sid)
    assert ui.sid != rec.id and (new.session_started, new.start_source) == (False, "clear")
    interactive_open.end_session(rt, ui.sid, "prompt_input_exit")
    assert [(s.session_id, s.detail) for s in sent[1:]] == [(ui.sid, "prompt_input_exit")]


def test_custom_commands_are_listed_by_help_sent_as_turns_and_unknown_ones_said(rt, ws, capsys, monkeypatch):
    commands = ws / ".claude" / "commands"
    (commands / "git").mkdir(parents=True)
    (commands / "review.md").write_text("---\ndescription: Review a file\nargument-hint: FILE\n---\nReview $0\n")
    (commands / "git" / "st.md").write_text("Status: !`git status`\n")
    (commands / "help.md").write_text("A project /help\n")
    ui = make(rt, ws, "/help", "/review calc.py", "/git:st", "/nosuch x", "/Review calc.py", "/exit")
    rt.engine.refresh_commands(ui.sid)
    sent = []
    monkeypatch.setattr(ui, "turn", sent.append)
    ui.loop()
    captured = capsys.readouterr()
    assert "Custom commands (.claude/commands/ of the workspace, ~/.claude/commands/):" in captured.out
    assert "/review FILE  Review a file (project)" in captured.out
    assert "/git:st       Status: !`git status` (project)" in captured.out
    assert "/help         A project /help (project) [hidden by the built-in /help]" in captured.out
    assert sent == ["/review calc.py", "/git:st"]  # names are exact: /Review is not /review
    assert "Unknown command /nosuch. Type /help. (A custom command /NAME is a file .claude/commands/NAME.md" in \
        captured.err and "Unknown command /Review." in captured.err
    assert "/review" in ui.command_names() and "/git:st" in ui.command_names()


def test_help_says_how_to_add_a_custom_command_when_there_is_none(rt, ws, capsys):
    make(rt, ws, "/help", "/exit").loop()
    assert "No custom commands: add .claude/commands/NAME.md (this project)" in capsys.readouterr().out


def test_memory_shows_the_projects_memory_index(rt, ws, capsys):
    """/memory reads the project's MEMORY.md through the session service (no Redis client in the CLI)."""
    from workflows.memory.records import MemoryRecord

    ui = make(rt, ws, "/memory")
    rec = rt.store.get_session(ui.sid)
    assert rec.auto_memory and rec.project_id
    rt.store.project_memory(rec.project_id, rec.project_root).put(
        MemoryRecord(name="prefers-tabs", description="The user indents with tabs", type="user"))
    ui.loop()
    out = capsys.readouterr().out
    assert f"MEMORY.md of {rec.project_root}" in out and "The user indents with tabs" in out


def test_the_loop_has_everything_its_helpers_take_it_for(rt, ws):
    """The command modules and the terminal front see the loop as a :class:`cli.repl_state.Repl`."""
    from cli.repl_state import Repl

    ui = make(rt, ws)
    wanted = set(Repl.__annotations__) | {n for n in vars(Repl) if not n.startswith("_")}
    assert wanted and not [n for n in sorted(wanted) if not hasattr(ui, n)]
