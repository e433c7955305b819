"""Sessions belong to no terminal: background submit, several watchers, resume,
continue, fork, queued messages, cancel, limits, and output for scripts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from demo.scripted import Script, ScriptUsage, ToolUse, Turn
from tests.conftest import running
from tests.e2e.conftest import wait_for
from workflows.engine import STOPPED_WHILE_RUNNING
from workflows.models import ResultEntry, UserEntry

pytestmark = pytest.mark.e2e


def echo_model(body: dict) -> Turn:
    """Answers each prompt with its text after one Bash call (for a prompt starting with "slow", a command
    that waits until the test creates the file ``go`` in the workspace); stateless, so any session can use it."""
    last = body["messages"][-1]
    content = last["content"]
    if isinstance(content, list) and content and content[0].get("type") == "tool_result":
        prompt = next(m for m in reversed(body["messages"]) if m["role"] == "user"
                      and not (isinstance(m["content"], list) and m["content"][0].get("type") == "tool_result"))
        text = prompt["content"] if isinstance(prompt["content"], str) else prompt["content"][-1]["text"]
        return Turn(text=f"answer to: {text}")
    text = content if isinstance(content, str) else content[-1].get("text", "")
    command = "until [ -e go ]; do sleep 0.05; done" if text.startswith("slow") else "sleep 1"
    return Turn(text="working", tool_uses=[ToolUse(name="Bash", input={"command": command})])


def prompts(cluster, sid):
    return [e.message.text() for e in cluster.store.entries(sid) if isinstance(e, UserEntry) and e.origin == "prompt"]


def results(cluster, sid):
    return [e for e in cluster.store.entries(sid) if isinstance(e, ResultEntry)]


@pytest.fixture
def cluster(shared_cluster):
    """The module's one worker, shared by its tests (tests/e2e/shared_worker.py)."""
    return shared_cluster


@pytest.fixture
def echo(cluster):
    with cluster.serving(echo_model) as server:
        yield server


BYPASS = ("--permission-mode", "bypassPermissions")


def test_background_submit_two_watchers_and_a_reattach(cluster, workspace, echo):
    out = cluster.mainsail("submit", *BYPASS, "first", cwd=workspace)
    assert out.returncode == 0, out.stderr
    sid = out.stdout.strip()
    assert len(sid) == 36 and f"mainsail watch {sid[:8]}" in out.stderr
    one = cluster.mainsail("watch", sid[:8], cwd=workspace, background=True)
    two = cluster.mainsail("watch", sid[:6], cwd=workspace, background=True)
    time.sleep(0.3)
    one.send_signal(signal.SIGKILL)  # a watcher dies: the session does not care
    again = cluster.mainsail("watch", sid, cwd=workspace, background=True)
    for proc in (two, again):
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
        assert stdout.count("⏺ Bash(sleep 1)") == 1, stdout
        assert stdout.count("answer to: first") == 1
        assert "> first" in stdout and "✓ session" in stdout
    finished = cluster.mainsail("watch", sid[:8], cwd=workspace)
    assert finished.returncode == 0 and "answer to: first" in finished.stdout and "is idle" in finished.stdout


def test_resume_by_prefix_continue_and_fork(cluster, workspace, echo):
    first = cluster.mainsail("run", "-p", *BYPASS, "one", cwd=workspace)
    assert first.returncode == 0 and first.stdout == "answer to: one\n", first.stderr
    (sid,) = cluster.store.session_ids()
    resumed = cluster.mainsail("run", "-p", "--resume", sid[:5], "two", cwd=workspace)
    assert resumed.returncode == 0 and resumed.stdout == "answer to: two\n", resumed.stderr
    assert cluster.store.session_ids() == [sid]
    assert "one" in json.dumps(echo.requests[-1]["messages"]), "the resumed call lacks the earlier messages"
    cont = cluster.mainsail("run", "-p", "--continue", "three", cwd=workspace)
    assert cont.returncode == 0 and cluster.store.session_ids() == [sid]
    assert prompts(cluster, sid) == ["one", "two", "three"]
    cluster.settle()  # (the run's memory extraction, after its answer, adds its line to the original too)
    before = cluster.store.log_length(sid)
    forked = cluster.mainsail("run", "-p", "--continue", "--fork-session", "four", cwd=workspace)
    assert forked.returncode == 0, forked.stderr
    ids = cluster.store.session_ids()
    assert len(ids) == 2 and ids[1] == sid
    assert cluster.store.log_length(sid) == before, "the fork changed the original"
    assert prompts(cluster, ids[0]) == ["one", "two", "three", "four"]
    assert cluster.store.get_session(ids[0]).forked_from == sid


def test_an_unknown_or_ambiguous_prefix_is_a_clear_error(cluster, workspace):
    from workflows.engine import Engine
    from workflows.settings import load_settings

    out = cluster.mainsail("watch", "zzzz", cwd=workspace)
    assert out.returncode == 1 and "No session matches 'zzzz'" in out.stderr
    engine = Engine(cluster.store, load_settings())
    for _ in range(17):  # more sessions than hex digits: two share a first digit
        engine.create_session(str(workspace))
    ids = cluster.store.session_ids(limit=100)
    shared = next(a[0] for a in ids if sum(b[0] == a[0] for b in ids) > 1)
    out = cluster.mainsail("show", shared, cwd=workspace)
    assert out.returncode == 1 and f"Session prefix '{shared}' matches" in out.stderr
    assert "Traceback" not in out.stderr


def test_messages_sent_while_busy_are_answered_in_order(cluster, workspace, echo):
    sid = cluster.mainsail("submit", *BYPASS, "slow first", cwd=workspace).stdout.strip()
    wait_for(lambda: cluster.store.get_session(sid).state.value == "running_tools", 30, what="running tools")
    for msg in ("second", "third"):
        out = cluster.mainsail("send", sid[:8], msg, cwd=workspace)
        assert out.returncode == 0 and "queued" in out.stdout, out.stdout
    (workspace / "go").touch()  # the first turn's command ends only now: both messages were sent while it ran
    wait_for(lambda: len(results(cluster, sid)) == 3, 60, what="three results")
    assert prompts(cluster, sid) == ["slow first", "second", "third"]
    assert [r.result for r in results(cluster, sid)] == ["answer to: slow first", "answer to: second",
                                                           "answer to: third"]


def test_cancel_mid_command_kills_it_and_keeps_the_transcript_valid(cluster, workspace):
    script = Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={
        "command": "echo started > pid.txt; sleep 30.4242; echo late > late.txt"})]), Turn(text="never")])
    with cluster.serving(script) as server:
        sid = cluster.mainsail("submit", *BYPASS, "sleep", cwd=workspace).stdout.strip()
        wait_for(lambda: (workspace / "pid.txt").exists() and (workspace / "pid.txt").read_text().strip(), 30,
                 what="the command to start")
        out = cluster.mainsail("cancel", sid[:8], cwd=workspace)
        assert out.returncode == 0 and "it was running_tools" in out.stdout, out.stdout
        wait_for(lambda: not running("30.4242"), 10, what="the command to be killed")
        # The killed step's late result arrives (its step leaves "running": recorded or superseded) and must
        # change nothing.
        wait_for(lambda: not any(s.status.value in ("pending", "running") for s in cluster.store.steps(sid)), 60,
                 what="the killed step's late result")
        entries = cluster.store.entries(sid)
        tool_results = [e for e in entries if isinstance(e, UserEntry) and e.origin == "tool_result"]
        assert len(tool_results) == 1 and tool_results[0].message.blocks()[0].text == STOPPED_WHILE_RUNNING
        assert cluster.store.get_session(sid).state.value == "idle"
        assert [r.subtype for r in results(cluster, sid)] == ["cancelled"]
        assert not (workspace / "late.txt").exists()
        assert len(server.requests) == 1
        again = cluster.mainsail("cancel", sid[:8], cwd=workspace)
        assert "nothing to cancel" in again.stdout



def test_max_turns_and_budget_stop_with_their_subtypes(cluster, workspace):
    loop = Script(turns=[Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})],
                              usage=ScriptUsage(input_tokens=100_000, output_tokens=1000))] * 6)
    with cluster.serving(loop) as server:
        out = cluster.mainsail("run", "-p", "--max-turns", "2", "--output-format", "json", "loop", cwd=workspace)
        assert out.returncode == 1
        data = json.loads(out.stdout)
        assert (data["subtype"], data["is_error"], data["num_turns"]) == ("error_max_turns", True, 2)
        out = cluster.mainsail("run", "-p", "--max-budget-usd", "0.5", "--output-format", "json", "loop",
                               cwd=workspace)
        data = json.loads(out.stdout)
        assert out.returncode == 1 and data["subtype"] == "error_max_budget_usd"
        assert data["total_cost_usd"] >= 0.5 and data["num_turns"] == 2  # $0.315 a turn


def test_json_and_stream_json_output_parse_as_a_script_would(cluster, workspace, echo):
    out = cluster.mainsail("run", "-p", *BYPASS, "--output-format", "json", "hello", cwd=workspace)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    for key in ("type", "subtype", "is_error", "duration_ms", "duration_api_ms", "num_turns", "result",
                "session_id", "total_cost_usd", "usage", "permission_denials"):
        assert key in data, key
    assert (data["type"], data["subtype"], data["is_error"], data["result"]) == (
        "result", "success", False, "answer to: hello")
    assert data["session_id"] == cluster.store.session_ids()[0] and data["num_turns"] == 2

    out = cluster.mainsail("run", "-p", *BYPASS, "--output-format", "stream-json", "again", cwd=workspace)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert (lines[0]["type"], lines[0]["subtype"]) == ("system", "init")
    assert lines[0]["tools"][:14] == ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "MultiEdit", "Write",
                                      "NotebookEdit", "WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell"]
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "answer to: again"
    kinds = [line["type"] for line in lines[1:-1]]
    assert "assistant" in kinds and "user" in kinds
    assert any(c.get("type") == "tool_use" for line in lines if line["type"] == "assistant"
               for c in line["message"]["content"])


def test_stream_json_input_runs_each_message(cluster, workspace, echo):
    stdin = "\n".join(json.dumps({"type": "user", "message": {"role": "user", "content": t}})
                      for t in ("alpha", "beta")) + "\n"
    proc = subprocess.run([*cluster.mainsail_cmd(), "run", "-p", *BYPASS, "--input-format", "stream-json",
                           "--output-format", "json"], input=stdin, cwd=workspace, env=cluster.env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["result"] == "answer to: beta"
    assert prompts(cluster, cluster.store.session_ids()[0]) == ["alpha", "beta"]
