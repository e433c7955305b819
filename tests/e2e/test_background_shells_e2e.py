"""Background Bash through the installed CLI and real workers: a command runs in the background on the
tools worker, BashOutput follows it to its end, KillShell stops one, and a SIGKILLed worker's shell is
reported lost, with its output so far (its command dies with the worker)."""

from __future__ import annotations

import random
import re
import time

import pytest

from demo.scripted import ToolUse, Turn
from tests.conftest import running
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer, last_prompt
from workflows.store import keys

pytestmark = pytest.mark.e2e

SHELL_ID = re.compile(r"Command running in background with ID: ([0-9a-f]{6})")


def results(body: dict) -> list[str]:
    """The text of every tool result the model got, oldest first."""
    out = []
    for m in body["messages"]:
        if m["role"] == "user" and isinstance(m["content"], list):
            for b in m["content"]:
                if b.get("type") == "tool_result":
                    c = b["content"]
                    out.append(c if isinstance(c, str) else "".join(x.get("text", "") for x in c))
    return out


def shell_id(texts: list[str]) -> str:
    return next(m.group(1) for t in texts if (m := SHELL_ID.search(t)))


def run(cluster, ws, *args: str):
    out = cluster.mainsail("run", "--no-memory", "--permission-mode", "bypassPermissions", *args, cwd=ws)
    assert out.returncode == 0, out.stderr
    return out


def follow(body: dict) -> Turn:
    """Background `sleep 1; echo done`, read it (running), wait two seconds, read it again (completed)."""
    seen = results(body)
    if not seen:
        return Turn(tool_uses=[ToolUse(name="Bash", input={"command": "sleep 1; echo done", "run_in_background": True,
                                                            "description": "Finish in a second"})])
    sid = shell_id(seen)
    if len(seen) in (1, 3):
        return Turn(tool_uses=[ToolUse(name="BashOutput", input={"bash_id": sid})])
    if len(seen) == 2:
        return Turn(tool_uses=[ToolUse(name="Bash", input={"command": "sleep 2"})])
    return Turn(text="It finished.")


def test_a_background_command_is_followed_to_its_end(cluster, workspace):
    with FakeMessagesServer(follow) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        out = run(cluster, workspace, "run it in the background")
        seen = results(api.requests[-1])
    assert "BashOutput" in [t["name"] for t in api.requests[0]["tools"]]
    assert SHELL_ID.fullmatch(seen[0])
    assert seen[1].startswith("<status>running</status>") and "done" not in seen[1]
    assert re.match(r"<status>completed</status>\n\n<exit_code>0</exit_code>\n\n<stdout>\ndone\n</stdout>\n\n"
                    r"<timestamp>", seen[3]), seen[3]
    assert "running in background" in out.stdout and "It finished." in out.stdout


def test_kill_shell_stops_a_long_command(cluster, workspace):
    mark = f"30.{random.randint(10**8, 10**9)}"

    def turn(body: dict) -> Turn:
        seen = results(body)
        if not seen:
            return Turn(tool_uses=[ToolUse(name="Bash", input={"command": f"sleep {mark}", "run_in_background": True})])
        if len(seen) == 1:
            wait_for(lambda: running(mark), 10, what="the command to start")
            return Turn(tool_uses=[ToolUse(name="KillShell", input={"shell_id": shell_id(seen)})])
        if len(seen) == 2:
            return Turn(tool_uses=[ToolUse(name="BashOutput", input={"bash_id": shell_id(seen)})])
        return Turn(text="Stopped it.")

    with FakeMessagesServer(turn) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        run(cluster, workspace, "start and stop it")
        seen = results(api.requests[-1])
    sid = shell_id(seen)
    assert seen[1] == f'{{"message":"Successfully killed shell: {sid} (sleep {mark})","shell_id":"{sid}"}}'
    assert seen[2].startswith("<status>killed</status>")
    assert not running(mark)


def test_a_sigkilled_workers_shell_is_lost_with_its_output_so_far(cluster, workspace):
    mark = f"30.{random.randint(10**8, 10**9)}"

    def turn(body: dict) -> Turn:
        seen = results(body)
        if last_prompt(body) == "start it":
            if not seen:
                return Turn(tool_uses=[ToolUse(name="Bash", input={
                    "command": f"echo before; sleep {mark}", "run_in_background": True})])
            return Turn(text="Started.")
        if len(seen) == 1:
            return Turn(tool_uses=[ToolUse(name="BashOutput", input={"bash_id": shell_id(seen)})])
        return Turn(text="Checked.")

    with FakeMessagesServer(turn) as api:
        cluster.env.update(ANTHROPIC_BASE_URL=api.url, MAINSAIL_SHELL_TTL_SECONDS="2")
        first = cluster.start_worker()
        run(cluster, workspace, "start it")
        wait_for(lambda: running(mark), 10, what="the background command to start")
        time.sleep(0.5)  # its first output reaches Redis (the host stores it every 0.2 s)
        cluster.kill(first)
        wait_for(lambda: not running(mark), 10, what="the guard to stop the command of the dead worker")
        wait_for(lambda: not list(cluster.store.r.scan_iter(match=keys.shell_host("*"))), 10,
                 what="the dead worker's shells to lapse")
        cluster.start_worker()
        sid = cluster.session_id()
        run(cluster, workspace, "--resume", sid[:8], "check it")
        seen = results(api.requests[-1])
    assert seen[-1].startswith("<status>lost</status>\n\n<stdout>\nbefore\n</stdout>"), seen[-1]
    assert "The worker running this shell (mainsail-" in seen[-1] and "stopped, so the shell is lost" in seen[-1]
