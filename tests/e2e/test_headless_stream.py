"""stream-json over a pipe, as a client that speaks Claude Code's protocol by hand: the question to the
client is the session's durable request, so a client that goes away leaves it for `mainsail approve`."""

from __future__ import annotations

import json
import subprocess

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e


def turn(body: dict) -> Turn:
    if sum(1 for m in body["messages"] if m["role"] == "assistant") == 0:
        return Turn(text="Writing it.", tool_uses=[ToolUse(name="Bash", input={"command": "echo ok > out.txt"})])
    return Turn(text="Done.")


def test_a_client_that_leaves_mid_question_leaves_a_request_any_shell_can_answer(cluster, workspace):
    with FakeMessagesServer(turn) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        proc = subprocess.Popen([MAINSAIL, "--output-format", "stream-json", "--verbose", "--input-format",
                                 "stream-json", "--permission-prompt-tool", "stdio"], cwd=workspace, env=cluster.env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": "write it"}}) + "\n")
        proc.stdin.flush()
        lines = []
        for raw in proc.stdout:
            lines.append(json.loads(raw))
            if lines[-1]["type"] == "control_request":
                break
        ask = lines[-1]["request"]
        assert ask["subtype"] == "can_use_tool" and ask["tool_name"] == "Bash"
        assert ask["input"] == {"command": "echo ok > out.txt"} and ask["permission_suggestions"]
        assert [ln["type"] for ln in lines[:2]] == ["system", "assistant"]
        proc.stdin.close()  # the client dies without answering
        proc.wait(30)
        err = proc.stderr.read()
        assert proc.returncode == 1 and "the request stays open" in err
        sid = lines[0]["session_id"]
        assert cluster.store.get_session(sid).state.value == "awaiting_permission"
        approved = cluster.mainsail("approve", sid[:8], cwd=workspace)
        assert approved.returncode == 0, approved.stderr
        wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 30, what="the session to finish")
    assert (workspace / "out.txt").read_text() == "ok\n"
