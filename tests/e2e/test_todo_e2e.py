"""TodoWrite through the installed CLI: the run shows the checklist, `show` keeps it."""

from __future__ import annotations

import pytest

from demo.scripted import ToolUse, Turn
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e

TODOS = [{"content": "Read calc.py", "status": "completed", "activeForm": "Reading calc.py"},
         {"content": "Fix add()", "status": "in_progress", "activeForm": "Fixing add()"}]


def turn(body: dict) -> Turn:
    if sum(1 for m in body["messages"] if m["role"] == "assistant") == 0:
        return Turn(text="Planning.", tool_uses=[ToolUse(name="TodoWrite", input={"todos": TODOS})])
    return Turn(text="Planned.")


def test_the_task_list_is_shown_while_running_and_kept_in_the_session(cluster, workspace):
    with FakeMessagesServer(turn) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        out = cluster.mainsail("run", "--no-memory", "plan it", cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert "TodoWrite(2 todos)" in out.stdout and "☒ Read calc.py" in out.stdout
        assert "◐ Fixing add()" in out.stdout
        assert "TodoWrite" in [t["name"] for t in api.requests[0]["tools"]]
        shown = cluster.mainsail("show", cluster.session_id()[:8], cwd=workspace)
        assert "todos       1/2 done" in shown.stdout and "◐ Fixing add()" in shown.stdout
