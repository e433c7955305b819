"""Background sub-agents through ``mainsail -p --output-format stream-json`` (a private Redis, a real worker, the
fake Messages API), side by side with Claude Code 2.1.332's own lines for the same script."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL
from tests.fakeapi import FakeMessagesServer, assistant_turns, first_prompt

pytestmark = pytest.mark.e2e

ARGS = ["-p", "go", "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-6",
        "--permission-mode", "bypassPermissions"]
TASK_LINES = ("background_tasks_changed", "task_started", "task_updated", "task_notification")


def script(stop: bool):
    """The parent launches a background agent; with ``stop`` it then stops it (the agent sleeps meanwhile)."""

    def turn(body: dict) -> Turn:
        n = assistant_turns(body)
        if first_prompt(body) == "count to three":  # the agent
            if stop and n == 0:
                return Turn(tool_uses=[ToolUse(name="Bash", input={"command": "sleep 30"})])
            return Turn(text="one two three", delay_seconds=0.5)
        if n == 0:
            return Turn(text="Launching.", tool_uses=[ToolUse(name="Agent", input={
                "description": "count", "prompt": "count to three", "run_in_background": True})])
        if stop and n == 1:
            text = json.dumps(body["messages"])
            task_id = text.split("agentId: ", 1)[1].split(" ", 1)[0]
            return Turn(text="Stopping.", tool_uses=[ToolUse(name="TaskStop", input={"task_id": task_id})])
        return Turn(text=f"Turn {n} done.")

    return turn


def run(cmd: list[str], cwd: Path, env: dict) -> list[dict]:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr[-3000:]
    return [json.loads(ln) for ln in out.stdout.splitlines() if ln.strip()]


def parent(lines: list[dict]) -> list[dict]:
    """The parent's own lines (a sub-agent's carry its Agent call's id)."""
    return [o for o in lines if not o.get("parent_tool_use_id")]


def kinds(lines: list[dict]) -> list[str]:
    return [o.get("subtype") if o["type"] == "system" else o["type"] for o in parent(lines)]


def test_a_background_agent_task_stop_notifies_killed_and_print_mode_waits_for_the_second_result(cluster, tmp_path):
    with FakeMessagesServer(script(True)) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        (tmp_path / "ws").mkdir()
        lines = run([MAINSAIL, *ARGS], tmp_path / "ws", cluster.env)
        check(lines, list(api.requests), stop=True)


def check(lines: list[dict], requests: list[dict], stop: bool) -> None:
    """Mainsail's lines: the launch, the task lines, the notification's turn and its second result."""
    seq = kinds(lines)
    assert seq.count("result") == 2 and seq.count("init") == 2, seq
    assert [s for s in seq if s in TASK_LINES] == ["background_tasks_changed", "task_started", "task_updated",
                                                   "task_notification", "background_tasks_changed"], seq
    launch = next(o for o in lines if o["type"] == "user" and "tool_use_result" in o
                  and isinstance(o["tool_use_result"], dict) and o["tool_use_result"].get("status") == "async_launched")
    task_id = launch["tool_use_result"]["agentId"]
    assert launch["message"]["content"][0]["content"].startswith("Async agent launched successfully.")
    # the second result is the notification's turn, after the task lines
    assert seq.index("task_notification") < len(seq) - 1 - seq[::-1].index("init")
    note = next(o for o in lines if o.get("subtype") == "task_notification")
    last_user = requests[-1]["messages"][-1]["content"]
    text = last_user if isinstance(last_user, str) else "".join(b.get("text", "") for b in last_user)
    assert f"<task-id>{task_id}</task-id>" in text
    if stop:
        stopped = next(o for o in lines if o["type"] == "user" and isinstance(o.get("tool_use_result"), dict)
                       and o["tool_use_result"].get("task_type") == "local_agent")
        assert stopped["tool_use_result"]["message"] == f"Successfully stopped task: {task_id} (count)"
        assert note["status"] == "stopped" and "<status>killed</status>" in text
        assert [o["result"] for o in lines if o["type"] == "result"] == ["Turn 2 done.", "Turn 3 done."]
    else:
        assert note["status"] == "completed" and note["summary"] == "one two three"
        assert "<result>one two three</result>" in text
        assert [o["result"] for o in lines if o["type"] == "result"] == ["Turn 1 done.", "Turn 2 done."]


try:
    import claude_agent_sdk

    CLAUDE: Path | None = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
except ImportError:
    CLAUDE = None


@pytest.mark.skipif(CLAUDE is None or not CLAUDE.exists(), reason="no bundled Claude Code CLI (claude-agent-sdk)")
def test_a_completed_background_agent_matches_claude_codes_lines_side_by_side(cluster, tmp_path):
    with FakeMessagesServer(script(False)) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        for d in ("ours", "theirs", "home", "our-home"):
            (tmp_path / d).mkdir()
        # Claude Code's output_file is the agent's JSONL transcript: ours is its Claude Code copy, on here
        cluster.env.update(MAINSAIL_CLAUDE_TRANSCRIPTS="true", HOME=str(tmp_path / "our-home"))
        ours = run([MAINSAIL, *ARGS], tmp_path / "ours", cluster.env)
        env = dict(os.environ, HOME=str(tmp_path / "home"), ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="sk-test",
                   IS_SANDBOX="1", DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        check(ours, list(api.requests), stop=False)
        try:
            theirs = run([str(CLAUDE), *ARGS], tmp_path / "theirs", env)
        except OSError as exc:  # a bundled binary for another platform
            pytest.skip(f"the bundled Claude Code CLI does not run here: {exc}")

    def task_lines(lines):
        return [o for o in lines if o["type"] == "system" and o.get("subtype") in TASK_LINES]

    a, b = task_lines(ours), task_lines(theirs)
    assert [o["subtype"] for o in a] == [o["subtype"] for o in b]
    for x, y in zip(a, b):  # field by field: the same keys; the same values but for ids and times
        assert set(x) == set(y), (x["subtype"], set(x) ^ set(y))
        for key in ("description", "subagent_type", "is_backgrounded", "spawn_depth", "task_type", "prompt", "status",
                    "summary", "summary_is_report"):
            assert x.get(key) == y.get(key), (x["subtype"], key)
    def launch(lines):
        return next(o["tool_use_result"] for o in lines if isinstance(o.get("tool_use_result"), dict))

    assert set(launch(ours)) == set(launch(theirs))
    assert [o["result"] for o in ours if o["type"] == "result"] == [
        o["result"] for o in theirs if o["type"] == "result"] == ["Turn 1 done.", "Turn 2 done."]
