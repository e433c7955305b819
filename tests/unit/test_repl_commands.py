"""Interactive mode's Claude Code habits on fakeredis, lines scripted (line mode): ``# note``, ``!cmd`` and
``/context``, ``/export``, ``/agents``, ``/add-dir``, ``/hooks``, ``/todos``. The terminal (prompt_toolkit)
side runs in a pty: tests/e2e/test_interactive_terminal.py."""

from __future__ import annotations

from cli import interactive
from tests.inline import Inline
from tests.unit.test_interactive_loop import Lines, make, rt, ws  # noqa: F401 - fixtures
from workflows.models import UserEntry
from workflows.models.hooks import CommandHook, HookEvent, HookMatcher, HookSet


def test_note_asks_which_memory_file_and_appends_a_line(rt, ws, tmp_path, capsys, monkeypatch):  # noqa: F811
    home = tmp_path / "home"
    ui = make(rt, ws, "# always run tests with -n 0", "p", "#use tabs", "u", "# not this one", "", "/exit")
    rec = rt.store.get_session(ui.sid)
    rec.home = str(home)
    rt.store.save_session(rec)
    (ws / "CLAUDE.md").write_text("# Project\nno newline at end")
    ui.loop()
    out = capsys.readouterr().out
    assert (ws / "CLAUDE.md").read_text() == "# Project\nno newline at end\n- always run tests with -n 0\n"
    assert (home / ".claude" / "CLAUDE.md").read_text() == "- use tabs\n"
    assert f"Saved to {ws / 'CLAUDE.md'}" in out and "Not saved." in out
    assert ui.reader.prompts.count("Where? p / u (Enter cancels) ") == 3
    assert [e for e in rt.store.entries(ui.sid) if isinstance(e, UserEntry)] == [], "nothing was sent"


def test_bang_submits_bash_mode(rt, ws, capsys, monkeypatch):  # noqa: F811
    inline = Inline(rt.engine)
    monkeypatch.setattr("cli.session_service.dispatch", inline.dispatch)
    monkeypatch.setattr(interactive.Interactive, "follow_turn",
                        lambda self, text, **kw: (inline.dispatch(self.rt.engine.submit(self.sid, text)), inline.drain()))
    ui = make(rt, ws, "!echo from-bash", "!", "/exit", mode="bypassPermissions")
    ui.loop()
    captured = capsys.readouterr()
    assert "Usage: !COMMAND" in captured.err
    texts = [e.message.text() for e in rt.store.entries(ui.sid) if isinstance(e, UserEntry)]
    assert texts == ["<bash-input>echo from-bash</bash-input>",
                     "<bash-stdout>from-bash</bash-stdout><bash-stderr></bash-stderr>"]


def test_context_agents_hooks_todos(rt, ws, capsys):  # noqa: F811
    ui = make(rt, ws, "/todos", "/hooks", "/context", "/agents", "/exit")
    rec = rt.store.get_session(ui.sid)
    rec.todos = [{"content": "Write the test", "activeForm": "Writing the test", "status": "completed"},
                 {"content": "Fix it", "activeForm": "Fixing it", "status": "in_progress"}]
    (ws / "CLAUDE.md").write_text("Be brief.\n" * 40)
    rec.hooks = HookSet(events={HookEvent.PRE_TOOL_USE: [HookMatcher(matcher="Bash", hooks=[
        CommandHook(command="./guard.sh", timeout=5, source=str(ws / ".claude/settings.json"))])]})
    rt.store.save_session(rec)
    ui.loop()
    out = capsys.readouterr().out
    assert "Todos (1 of 2 done):" in out and "☒ Write the test" in out and "Fixing it" in out
    assert f"PreToolUse [Bash]  ./guard.sh  (timeout 5s, from {ws / '.claude/settings.json'})" in out
    assert "System prompt" in out and "System tools" in out and "Messages" in out and "tokens until auto-compact" in out
    assert f"{ws / 'CLAUDE.md'}" in out
    assert ("general-purpose" in out) or ("No sub-agents" in out)


def test_export_writes_the_conversation_and_says_where(rt, ws, capsys, monkeypatch):  # noqa: F811
    inline = Inline(rt.engine)
    ui = make(rt, ws, "/export talk.txt", f"/export {ws}", "/exit")
    inline.dispatch(rt.engine.submit(ui.sid, "Say hello"))
    inline.drain()
    ui.loop()
    captured = capsys.readouterr()
    text = (ws / "talk.txt").read_text()
    assert "> Say hello" in text
    assert f"Conversation exported to {ws / 'talk.txt'}" in captured.out
    assert f"Not exported: {ws} is a directory" in captured.err


def test_add_dir_checks_as_the_flag_does(rt, ws, tmp_path, capsys):  # noqa: F811
    extra = tmp_path / "extra"
    extra.mkdir()
    ui = make(rt, ws, f"/add-dir {extra}", f"/add-dir {extra}", "/add-dir /no/such/dir", "/add-dir", "/exit")
    ui.loop()
    captured = capsys.readouterr()
    assert rt.store.get_session(ui.sid).additional_directories == [str(extra)]
    assert f"Added {extra} as a working directory" in captured.out
    assert "already a working directory" in captured.out
    assert "Invalid --add-dir" in captured.err and "/no/such/dir" in captured.err
    assert "Usage: /add-dir DIR" in captured.err
