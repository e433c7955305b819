"""The durable agent loop, end to end: the installed CLI, real worker processes, real
Redis, and the real anthropic SDK against a fake Messages API over HTTP.

A session reads a file, edits it, runs a command and finishes; then the same with
a worker SIGKILLed during the model call, and during the command.
"""

from __future__ import annotations

import json
import time

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models import AssistantEntry, ResultEntry, SystemEntry, UserEntry

pytestmark = pytest.mark.e2e

BASH = "echo run >> bash_runs.txt && python3 calc.py"


def script(model_delay: float = 0.0, bash: str = BASH) -> Script:
    return Script(turns=[
        Turn(text="Let me read calc.py.", tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
        Turn(text="add() subtracts; fixing it now.",
             tool_uses=[ToolUse(name="Edit", input={"file_path": "calc.py", "old_string": "return a - b",
                                                     "new_string": "return a + b"})],
             stream_delay_seconds=model_delay),
        Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": bash})]),
        Turn(text="Fixed: add() now adds, and calc.py prints 2 + 3 = 5."),
    ])


def turn_requests(server, index: int) -> int:
    return sum(1 for body in server.requests
               if sum(1 for m in body["messages"] if m["role"] == "assistant") == index)


def check_transcript(cluster, workspace):
    (sid,) = cluster.store.session_ids()
    entries = cluster.store.entries(sid)
    uuids = [e.uuid for e in entries]
    assert len(uuids) == len(set(uuids)), "an entry was recorded twice"
    assert sum(isinstance(e, AssistantEntry) for e in entries) == 4
    tool_ids = [e.message.blocks()[0].tool_use_id for e in entries
                if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert len(tool_ids) == len(set(tool_ids)) == 3
    results = [e for e in entries if isinstance(e, ResultEntry)]
    assert [r.subtype for r in results] == ["success"]
    assert "return a + b" in (workspace / "calc.py").read_text()
    assert (workspace / "bash_runs.txt").read_text() == "run\n", "the command ran more than once"
    return entries


def test_a_session_reads_edits_runs_and_finishes(cluster, workspace):
    with FakeMessagesServer(script()) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        out = cluster.mainsail("run", "--permission-mode", "bypassPermissions", "Fix the bug in calc.py",
                               cwd=workspace)
        assert out.returncode == 0, out.stderr
        for line in ("⏺ Read(calc.py)", "⏺ Edit(calc.py)", f"⏺ Bash({BASH})", "2 + 3 = 5",
                     "Fixed: add() now adds", "✓ session", "4 turns"):
            assert line in out.stdout, out.stdout
        assert "Traceback" not in out.stdout + out.stderr
        entries = check_transcript(cluster, workspace)
        assert server.request_headers[0]["headers"].get("authorization") == "Bearer test-key"
        assert len(server.requests) == 4
        assert server.requests[0]["stream"] is True
        assert [t["name"] for t in server.requests[0]["tools"]] == [
            "Agent", "Bash", "Glob", "Grep", "Read", "Edit", "MultiEdit", "Write", "NotebookEdit", "WebFetch",
            "TodoWrite", "WebSearch", "BashOutput", "KillShell", "TaskStop", "MemoryDelete", "MemoryRead", "MemoryWrite"]
        assert entries[0].cwd == str(workspace.resolve())


def test_print_mode_prints_only_the_final_answer(cluster, workspace):
    with FakeMessagesServer(script()) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        out = cluster.mainsail("run", "-p", "--permission-mode", "bypassPermissions", "Fix it", cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert out.stdout == "Fixed: add() now adds, and calc.py prints 2 + 3 = 5.\n"


def test_worker_killed_during_the_model_call(cluster, workspace):
    with FakeMessagesServer(script(model_delay=0.4)) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        first = cluster.start_worker()
        run = cluster.mainsail("run", "--permission-mode", "bypassPermissions", "Fix the bug", cwd=workspace,
                               background=True)
        wait_for(lambda: turn_requests(server, 1) >= 1, 30, what="the slow model call")
        time.sleep(0.6)  # mid-stream
        cluster.kill(first)
        cluster.start_worker()
        stdout, stderr = run.communicate(timeout=90)
        assert run.returncode == 0, stdout + stderr
        assert turn_requests(server, 1) == 2, "the model call was not made again"
        # The context was computed once, at the start: the new worker sends the same bytes (the cache holds).
        systems = {json.dumps(body["system"]) for body in server.requests}
        firsts = {body["messages"][0]["content"][0]["text"] for body in server.requests}  # the user context
        assert len(systems) == 1 and len(firsts) == 1
        assert "gitStatus" not in next(iter(systems))  # the workspace is not a git repository
        entries = check_transcript(cluster, workspace)
        warnings = [e.content for e in entries if isinstance(e, SystemEntry) and e.subtype == "warning"]
        assert any("Model step" in w and "running it again on another worker" in w for w in warnings), warnings
        assert "restarted on another worker" in stdout or "running it again" in stdout


def test_worker_killed_during_the_command(cluster, workspace):
    bash = "echo run >> bash_runs.txt; sleep 3; echo late >> bash_runs.txt; python3 calc.py"
    with FakeMessagesServer(script(bash=bash)) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        first = cluster.start_worker()
        run = cluster.mainsail("run", "--permission-mode", "bypassPermissions", "Fix the bug", cwd=workspace,
                               background=True)
        wait_for(lambda: (workspace / "bash_runs.txt").exists(), 30, what="the command to start")
        cluster.kill(first)
        cluster.start_worker()
        stdout, stderr = run.communicate(timeout=90)
        assert run.returncode == 0, stdout + stderr
        time.sleep(3.5)  # its guard killed the orphaned command with its worker: it never writes "late"
        entries = check_transcript(cluster, workspace)
        bash_result = [e for e in entries if isinstance(e, UserEntry) and e.origin == "tool_result"][-1]
        assert "outcome is unknown" in bash_result.message.blocks()[0].text
        # The model was told, in the next request.
        assert "outcome is unknown" in str(server.requests[-1]["messages"][-1])
