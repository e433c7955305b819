"""Interactive mode on a terminal: the installed ``mainsail`` on a pseudo-terminal (tests/pty_term.py), a real
worker, real Redis and a fake Messages API. Each step waits for text on the screen or a state in Redis.

The fake model answers each prompt by name ("Answer to: <prompt>"); for one starting "Hold" it runs a Bash
command that waits for the file ``go`` (so a turn runs exactly as long as the test needs); for one starting
"Run" it writes approved.txt with Bash (asked in default mode).
"""

from __future__ import annotations

import json
import re

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer
from tests.pty_term import ALT_ENTER, CTRL_C, CTRL_D, ESC, SHIFT_TAB, TAB, Term
from workflows.engine import INTERRUPTED
from workflows.models import StepKind, StepStatus, UserEntry

pytestmark = pytest.mark.e2e

HOLD = "while [ ! -e go ]; do sleep 0.05; done; echo released"


def prompt_text(body: dict) -> str:
    """The newest user message's text, without reminders and without an interrupt's note (after an interrupt
    the next prompt shares its message: "[Request interrupted by user for tool use]", then the prompt)."""
    content = body["messages"][-1]["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text" and b.get("text") != INTERRUPTED)
    return re.sub(r"<system-reminder>.*?</system-reminder>\s*", "", text, flags=re.S).strip()


def reply(body: dict) -> Turn:
    text = prompt_text(body)
    if not text:  # a tool's result
        return Turn(text="The command finished.")
    if text.startswith("Hold"):
        return Turn(text="Holding.", tool_uses=[ToolUse(name="Bash", input={"command": HOLD})])
    if text.startswith("Run"):
        return Turn(text="Writing it.", tool_uses=[ToolUse(name="Bash", input={"command": "echo ok > approved.txt"})])
    return Turn(text=f"Answer to: {text.replace(chr(10), ' / ')}")


@pytest.fixture
def api(cluster):
    with FakeMessagesServer(reply) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        yield server


@pytest.fixture
def term(cluster, workspace, api, tmp_path):
    terms = []

    def start(*args: str) -> Term:
        home = tmp_path / "home"
        home.mkdir(exist_ok=True)
        t = Term([MAINSAIL, *args], cwd=workspace, env={**cluster.env, "HOME": str(home)})
        terms.append(t)
        t.expect("Ctrl-D leaves")
        t.expect("(shift+tab to cycle)")  # the prompt's toolbar: it reads keys now
        return t

    yield start
    for t in terms:
        t.close()


def prompts(cluster, sid: str) -> list[str]:
    return [e.message.text() for e in cluster.store.entries(sid) if isinstance(e, UserEntry) and e.origin == "prompt"]


def leave(t: Term) -> str:
    t.expect("(shift+tab to cycle)")  # the prompt is drawn again after what was printed: it reads keys
    t.send(CTRL_D)
    out = t.drain()
    assert "Traceback" not in out, out
    assert t.proc.wait(30) == 0, out
    return out


def hold_running(cluster) -> str:
    sid = cluster.session_id()
    wait_for(lambda: any(st.kind is StepKind.TOOL and st.status is StepStatus.RUNNING
                         for st in cluster.store.steps(sid)), 30, what="the holding Bash step to run")
    return sid


def test_a_message_typed_during_a_turn_is_queued_shown_and_then_runs(cluster, workspace, term):
    t = term("--permission-mode", "bypassPermissions")
    t.send("Hold on\r")
    sid = hold_running(cluster)
    t.send("and then this\r")
    t.expect("queued (1 waiting)")
    t.expect("1 queued")  # the toolbar
    assert cluster.store.inbox(sid) == ["and then this"]
    (workspace / "go").touch()
    t.expect("The command finished.")
    t.expect("> and then this")  # shown as a user turn when it starts
    t.expect("Answer to: and then this")
    wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 30, what="idle")
    assert prompts(cluster, sid) == ["Hold on", "and then this"]
    leave(t)


def test_esc_interrupts_and_brings_the_queued_message_back_to_the_draft(cluster, workspace, term):
    t = term("--permission-mode", "bypassPermissions")
    t.send("Hold still\r")
    sid = hold_running(cluster)
    t.send("second thoughts\r")
    t.expect("queued (1 waiting)")
    t.send(ESC)
    t.expect("back in the prompt to edit")
    t.expect("Interrupted.")
    wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 30, what="the cancel")
    assert cluster.store.inbox(sid) == [] and prompts(cluster, sid) == ["Hold still"]
    t.send(" please\r")  # the draft holds the message: it is sent as edited
    t.expect("Answer to: second thoughts please")
    leave(t)


def test_shift_tab_cycles_the_mode_and_keeps_the_draft(cluster, term):
    t = term()
    sid = cluster.session_id()
    t.send("my draft")
    t.send(SHIFT_TAB)
    t.expect_screen("⏵⏵ accept edits on")
    wait_for(lambda: cluster.store.get_session(sid).permission_mode.value == "acceptEdits", 10, what="the mode")
    t.send(SHIFT_TAB)
    t.expect_screen("⏸ plan mode on")
    assert "> my draft" in t.display  # the draft, as typed
    t.send(" kept\r")
    t.expect("Answer to: my draft kept")
    assert cluster.store.get_session(sid).permission_mode.value == "plan"
    out = leave(t)
    assert "__cycle-mode" not in out and prompts(cluster, sid) == ["my draft kept"]


def test_multi_line_with_backslash_enter_and_alt_enter(cluster, term):
    t = term()
    t.send("first line\\\r")
    t.send("second line" + ALT_ENTER)
    t.send("third\r")
    t.expect("Answer to: first line / second line / third")
    assert prompts(cluster, cluster.session_id()) == ["first line\nsecond line\nthird"]
    leave(t)


def test_a_permission_question_during_a_turn_is_answered_at_the_prompt(cluster, workspace, term):
    t = term()
    t.send("Run the writer\r")
    t.expect("(y)es / (n)o / (a)lways")
    t.send("y\r")
    t.expect("The command finished.")
    assert (workspace / "approved.txt").read_text() == "ok\n"
    leave(t)


def test_bang_runs_a_command_and_its_output_joins_the_conversation(cluster, api, term):
    t = term("--permission-mode", "bypassPermissions")
    t.send("!echo bang-output\r")
    t.expect("⎿  bang-output")
    t.send("what did it say\r")
    t.expect("what did it say\n")
    t.expect("Answer to: <bash-input>echo bang-output</bash-input><bash-stdout>bang-output</bash-stdout>")
    sid = cluster.session_id()
    texts = [e.message.text() for e in cluster.store.entries(sid) if isinstance(e, UserEntry)]
    assert texts[:2] == ["<bash-input>echo bang-output</bash-input>",
                         "<bash-stdout>bang-output</bash-stdout><bash-stderr></bash-stderr>"]
    sent = json.dumps(api.requests[-1]["messages"])
    assert "<bash-stdout>bang-output" in sent
    leave(t)


def test_bang_asks_in_default_mode(cluster, workspace, term):
    t = term()
    t.send("!touch made.txt\r")
    t.expect("(y)es / (n)o / (a)lways")
    t.send("n\r")
    t.expect("permission check failed")
    assert not (workspace / "made.txt").exists()
    leave(t)


def test_hash_note_asks_where_and_saves(cluster, workspace, term):
    t = term()
    t.send("# keep answers short\r")
    t.expect("Where? p / u")
    t.send("p\r")
    t.expect(f"Saved to {workspace / 'CLAUDE.md'}")
    assert (workspace / "CLAUDE.md").read_text() == "- keep answers short\n"
    assert prompts(cluster, cluster.session_id()) == []
    leave(t)


def test_at_mention_completes_and_attaches_the_file(cluster, workspace, api, term):
    (workspace / "calculator_notes.md").write_text("The answer is 42.\n")
    t = term()
    t.send("Summarise @calculator_n")
    t.expect_screen("   calculator_notes.md")  # the completion menu, under the word
    t.send(TAB)
    t.expect_screen("> Summarise @calculator_notes.md")
    t.send(" please\r")
    t.expect("Answer to: Summarise @calculator_notes.md please")
    body = api.requests[-1]
    sent = json.dumps(body["messages"])
    assert "The answer is 42." in sent and "Called the Read tool" in sent
    leave(t)


def test_the_new_slash_commands(cluster, workspace, tmp_path, term):
    extra = tmp_path / "extra"
    extra.mkdir()
    t = term()
    t.send("Say hi\r")
    t.expect("Answer to: Say hi")
    for line, shown in [("/context", "tokens until auto-compact"), ("/todos", "No todos"),
                        ("/hooks", "No hooks configured"), ("/agents", "general-purpose"),
                        (f"/add-dir {extra}", f"Added {extra}"), ("/export chat.txt", "Conversation exported to")]:
        t.send(line + "\r")
        t.expect(shown)
    assert "> Say hi" in (workspace / "chat.txt").read_text()
    assert cluster.store.get_session(cluster.session_id()).additional_directories == [str(extra)]
    leave(t)


def test_ctrl_c_interrupts_a_turn_and_at_an_idle_prompt_leaves(cluster, workspace, term):
    t = term("--permission-mode", "bypassPermissions")
    t.send("Hold it\r")
    sid = hold_running(cluster)
    t.send("kept draft")
    t.send(CTRL_C)
    t.expect("Interrupted.")
    wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 30, what="the cancel")
    t.expect_screen("> kept draft")  # Ctrl-C during a turn stops the turn, not the draft
    t.send("\x15")  # (clear the line)
    t.expect_screen("(shift+tab to cycle)")
    t.send(CTRL_C)
    t.expect("Bye.")
    assert t.proc.wait(30) == 0


def test_esc_at_an_open_question_interrupts_the_turn_and_ctrl_d_there_leaves(cluster, workspace, term):
    t = term()
    t.send("Run the writer\r")
    t.expect("(y)es / (n)o / (a)lways")
    t.send(ESC)
    t.expect("Interrupted.")
    sid = cluster.session_id()
    wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 30, what="the cancel")
    assert not (workspace / "approved.txt").exists()
    t.send("Run it again\r")
    t.expect("(y)es / (n)o / (a)lways")
    t.send(CTRL_D)  # leave with the question open: the session keeps it (answerable with mainsail approve)
    t.expect("goes on without this terminal")
    assert t.proc.wait(30) == 0
    assert cluster.store.get_session(sid).state.value == "awaiting_permission"
