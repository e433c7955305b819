"""Interactive mode end to end: the installed ``mainsail`` with no command, a script of
lines on its stdin, real worker processes, real Redis and a fake Messages API.

The fake model answers each prompt by name ("Answer to: <prompt>"), reads calc.py
for a prompt starting "Fix", runs ``sleep 600`` (which only an interrupt ends) for one starting "Slow" and writes
approved.txt with Bash for one starting "Run".
"""

from __future__ import annotations

import json
import re
import signal
import subprocess

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.engine import INTERRUPTED, STOPPED_WHILE_RUNNING
from workflows.models import PermissionDecisionEntry, ResultEntry, StepKind, StepStatus, SystemEntry, UserEntry

pytestmark = pytest.mark.e2e

DEFAULT, SENT, HAIKU = "default", "claude-opus-5-5", "claude-haiku-4-5"  # the default model, and what it sends
COMMAND = "echo approved > approved.txt"
#: How long a wait for an event may take before the test fails: only a broken run reaches it (a loaded
#: machine is slow, never wrong), so it is generous; no test here waits for a time window.
EVENT_LIMIT = 120


def reply(body: dict) -> Turn:
    content = body["messages"][-1]["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if any(b.get("type") == "tool_result" for b in blocks):
        return Turn(text="The file looks fine.")
    text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    text = re.sub(r"<system-reminder>.*?</system-reminder>\s*", "", text, flags=re.S).strip()
    if text.startswith("Fix"):
        return Turn(text="Reading calc.py.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})])
    if text.startswith("Run"):
        return Turn(text="Writing it.", tool_uses=[ToolUse(name="Bash", input={"command": COMMAND})])
    if text.startswith("Slow"):
        return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": "sleep 600"})])
    return Turn(text=f"Answer to: {text}")


def interactive(cluster, workspace, lines: str, *args: str, timeout: float = EVENT_LIMIT):
    proc = cluster.mainsail(*args, cwd=workspace, background=True, stdin=subprocess.PIPE)
    stdout, stderr = proc.communicate(lines, timeout=timeout)
    assert "Traceback" not in stdout + stderr, stdout + stderr
    assert proc.returncode == 0, stdout + stderr
    return stdout, stderr


def sections(stdout: str) -> dict[str, list[str]]:
    """What each typed line printed (the loop echoes ``> line`` off a terminal), by line."""
    out: dict[str, list[str]] = {}
    for chunk in ("\n" + stdout).split("\n> ")[1:]:
        line, _, rest = chunk.partition("\n")
        out.setdefault(line, []).append(rest)
    return out


def user_texts(cluster, sid: str) -> list[str]:
    return [e.message.text() for e in cluster.store.entries(sid)
            if isinstance(e, UserEntry) and e.origin == "prompt"]


def request_for(server, prompt: str) -> dict:
    (body,) = [b for b in server.requests if json.dumps(b["messages"][-1]).count(json.dumps(prompt)[1:-1])
               and b["messages"][-1]["role"] == "user"]
    return body


@pytest.fixture
def api(cluster):
    """The fake Messages API, and one worker process."""
    with FakeMessagesServer(reply) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        yield server


def test_a_session_with_commands_a_turn_and_a_model_switch(cluster, workspace, api):
    server = api
    script = ("/status\nFix calc.py\n/cost\n/model claude-haiku-4-5\n/status\n/permissions\n/bogus\n"
              "Second question\n/cost\n/exit\n")
    # --no-memory: /cost must see every call made so far; an extraction would add one after it printed.
    stdout, stderr = interactive(cluster, workspace, script, "--permission-mode", "bypassPermissions",
                                 "--allowedTools", "Bash(npm test:*)", "--no-memory")
    sid = cluster.session_id()
    rec = cluster.store.get_session(sid)
    s = sections(stdout)

    assert stdout.startswith(f"New session {sid[:8]} in {workspace.resolve()}\n")
    first, second = s["/status"]
    assert f"session     {sid}" in first and "state       idle" in first
    assert f"model       {DEFAULT}" in first and "permissions bypassPermissions" in first
    assert "turns       0" in first and "cost        $0.0000" in first

    (turn,) = s["Fix calc.py"]
    for text in ("Reading calc.py.", "⏺ Read(calc.py)", "The file looks fine.", f"✓ session {sid[:8]}",
                 "2 turns"):
        assert text in turn, turn

    cost_before, cost_after = s["/cost"]
    assert "Total cost:" in cost_before and "Total duration (API):" in cost_before
    assert SENT in cost_before and HAIKU not in cost_before
    assert f"Model set to {HAIKU} (was {DEFAULT})." in s["/model claude-haiku-4-5"][0]
    assert f"model       {HAIKU}" in second and "turns       2" in second and "title       Fix calc.py" in second
    assert "Permission mode: bypassPermissions" in s["/permissions"][0]
    assert "Bash(npm test:*)  from --allowedTools" in s["/permissions"][0]
    assert "Unknown command /bogus. Type /help." in stderr
    assert "Answer to: Second question" in s["Second question"][0]

    # The switch is in the store, in the next request, and in the per-model accounting.
    assert rec.model == HAIKU
    assert set(rec.usage_by_model) == {SENT, HAIKU, rec.sent_model("haiku")}  # (+ the title: the small model)
    assert rec.usage_by_kind["title"].input_tokens > 0
    assert request_for(server, "Second question")["model"] == HAIKU
    assert {b["model"] for b in server.requests[:2]} == {SENT}
    assert f"Total cost:            ${rec.cost_usd:.4f}" in cost_after
    assert SENT in cost_after and HAIKU in cost_after
    assert f"${rec.cost_by_model[HAIKU]:.4f}" in cost_after
    assert stdout.rstrip().endswith(f"Bye. Resume this session with: mainsail --resume {sid[:8]}")


def test_permission_prompts_read_the_same_stdin(cluster, workspace, api):
    # The answer "y" waits in the pipe behind the prompt: the loop must not have swallowed it.
    stdout, stderr = interactive(cluster, workspace, "Run the command\ny\nRun it again\nn\n/exit\n")
    assert f"⚡ Bash: {COMMAND}\n  (a)lways adds: Bash(echo approved:*)\n  (y)es / (n)o / (a)lways" in stderr
    s = sections(stdout)
    assert "approved by user" in s["Run the command"][0] and "denied by user" in s["Run it again"][0]
    assert (workspace / "approved.txt").read_text() == "approved\n"
    decisions = [e.decision for e in cluster.store.entries(cluster.session_id())
                 if isinstance(e, PermissionDecisionEntry)]
    assert decisions == ["allow", "deny"]


def test_continue_resumes_this_directorys_latest_session(cluster, workspace, api):
    server = api
    interactive(cluster, workspace, "First message\n/exit\n")
    sid = cluster.session_id()

    stdout, _ = interactive(cluster, workspace, "Second message\n/exit\n", "--continue", "--model", HAIKU)
    assert cluster.store.session_ids() == [sid]
    assert stdout.startswith(f"Resumed session {sid[:8]}: First message\n")
    recap = stdout.split("\n> Second message\n")[0]
    assert "> First message\nAnswer to: First message" in recap, "no recap of the last exchange"
    assert "Answer to: Second message" in stdout
    body = request_for(server, "Second message")
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert "First message" in json.dumps(body["messages"][0])
    assert body["model"] == HAIKU and cluster.store.get_session(sid).model == HAIKU
    assert user_texts(cluster, sid) == ["First message", "Second message"]


def test_continue_with_fork_session_works_on_a_copy(cluster, workspace, api):
    interactive(cluster, workspace, "First message\n/exit\n")
    sid = cluster.session_id()
    stdout, _ = interactive(cluster, workspace, "Second message\n/exit\n", "--continue", "--fork-session")
    (fork,) = [x for x in cluster.store.session_ids() if x != sid]
    assert stdout.startswith(f"Forked session {fork[:8]} from {sid[:8]}: First message\n")
    assert user_texts(cluster, fork) == ["First message", "Second message"]
    assert user_texts(cluster, sid) == ["First message"]


def test_clear_starts_a_new_session_with_the_same_settings(cluster, workspace, api):
    server = api
    stdout, _ = interactive(cluster, workspace, "Alpha\n/clear\nBeta\n/status\n/exit\n",
                            "--permission-mode", "acceptEdits", "--disallowedTools", "Bash(rm:*)")
    ids = cluster.store.session_ids()
    assert len(ids) == 2
    # Newest first by creation: by last update the old session may come first (its extraction can end later).
    new, old = sorted((cluster.store.get_session(x) for x in ids), key=lambda r: r.created_at, reverse=True)
    assert user_texts(cluster, old.id) == ["Alpha"] and user_texts(cluster, new.id) == ["Beta"]
    assert f"New session {new.id[:8]} in {workspace.resolve()}" in sections(stdout)["/clear"][0]
    assert f"session     {new.id}" in sections(stdout)["/status"][0]
    assert new.permission_mode.value == "acceptEdits" and new.model == old.model
    assert [r.rule for r in new.rules.deny] == ["Bash(rm:*)"]
    assert len(request_for(server, "Beta")["messages"]) == 1, "the new session saw the old conversation"


def test_resume_switches_sessions(cluster, workspace, api):
    # --no-memory: the picker lists sessions by last activity; an extraction finishing late would reorder them.
    interactive(cluster, workspace, "Alpha\n/exit\n", "--no-memory")
    a = cluster.session_id()
    script = f"Beta\n/resume nosuch\n/resume {a[:6]}\nGamma\n/resume\n2\nDelta\n/exit\n"
    stdout, stderr = interactive(cluster, workspace, script, "--no-memory")
    (b,) = [x for x in cluster.store.session_ids() if x != a]
    assert user_texts(cluster, a) == ["Alpha", "Gamma"]
    assert user_texts(cluster, b) == ["Beta", "Delta"]
    assert "No session matches 'nosuch'" in stderr
    s = sections(stdout)
    assert s[f"/resume {a[:6]}"][0].startswith(f"Resumed session {a[:8]}: Alpha\n")
    listing = s["/resume"][0]
    assert listing.index(a[:8]) < listing.index(b[:8]), "not newest first"
    assert f"Resumed session {b[:8]}: Beta" in listing
    assert "Answer to: Delta" in s["Delta"][0]


def test_ctrl_c_interrupts_the_running_turn_and_returns_to_the_prompt(cluster, workspace, api):
    # Events, not windows: the command (sleep 600) can only end by the interrupt, so its interrupted result
    # proves the Ctrl-C; each wait below ends when its event happens (the limits only bound a broken run).
    proc = cluster.mainsail("--permission-mode", "bypassPermissions", cwd=workspace, background=True,
                            stdin=subprocess.PIPE)
    proc.stdin.write("Slow command please\n")
    proc.stdin.flush()
    try:
        sid = cluster.wait_state("running_tools", timeout=EVENT_LIMIT)
        wait_for(lambda: any(st.kind is StepKind.TOOL and st.status is StepStatus.RUNNING
                             for st in cluster.store.steps(sid)), EVENT_LIMIT, what="the Bash step to run")
        wait_for(lambda: subprocess.run(["pgrep", "-f", "sleep 600"], capture_output=True).returncode == 0,
                 EVENT_LIMIT, what="the command to start")
    except AssertionError:
        proc.kill()
        out, err = proc.communicate()
        ids = cluster.store.session_ids()
        state = [(x[:8], cluster.store.get_session(x).state.value) for x in ids]
        raise AssertionError(f"{state}\n{out}\n{err}\n" + (cluster.tmp / "worker-0.log").read_text()) from None
    proc.send_signal(signal.SIGINT)
    wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", EVENT_LIMIT, what="the cancel")
    stdout, stderr = proc.communicate("/status\n/exit\n", timeout=EVENT_LIMIT)
    assert proc.returncode == 0, stdout + stderr
    assert "Traceback" not in stdout + stderr
    s = sections(stdout)
    assert "Interrupted." in s["Slow command please"][0]
    assert "state       idle" in s["/status"][0]
    entries = cluster.store.entries(sid)
    results = [e.message.blocks()[0] for e in entries if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert [(r.text, r.is_error) for r in results] == [(STOPPED_WHILE_RUNNING, True)]  # (Claude Code's answer)
    assert [e.message.text() for e in entries if isinstance(e, UserEntry) and e.origin == "interrupt"] == [
        INTERRUPTED]
    assert any(isinstance(e, SystemEntry) and e.subtype == "interrupted" for e in entries)
    assert [e.subtype for e in entries if isinstance(e, ResultEntry)] == ["cancelled"]
