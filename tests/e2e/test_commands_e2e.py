"""Custom slash commands end to end: the installed ``mainsail`` (print mode, interactive mode, the Agent SDK),
a real worker process running the ``!`` lines in its sandbox, real Redis, the real anthropic SDK against the
fake Messages API. What the model receives is what Claude Code 2.1.330 sends for the same files."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from demo.scripted import Turn
from tests.e2e.conftest import MAINSAIL
from tests.fakeapi import FakeMessagesServer, last_prompt

pytestmark = pytest.mark.e2e

REVIEW = """---
description: Review a file for bugs
argument-hint: FILE [FOCUS]
allowed-tools: Bash(wc:*)
model: claude-haiku-4-5
---
Review $0 with a focus on $1.
Size: !`wc -l $0`
The file: @$0
"""


def answer(body: dict) -> Turn:
    return Turn(text=f"Answer to: {last_prompt(body).splitlines()[0]}")


@pytest.fixture
def api(cluster, workspace, tmp_path):
    """The fake Messages API, one worker, a home of the test's own, and the commands: the project's /review and
    /git:touch (whose line needs approval), and the user's /hello."""
    home = tmp_path / "home"
    (home / ".claude" / "commands").mkdir(parents=True)
    (home / ".claude" / "commands" / "hello.md").write_text("Say hello to $ARGUMENTS\n")
    commands = workspace / ".claude" / "commands"
    (commands / "git").mkdir(parents=True)
    (commands / "review.md").write_text(REVIEW)
    (commands / "git" / "touch.md").write_text("Touched: !`touch $ARGUMENTS && ls $ARGUMENTS`\n")
    cluster.env["HOME"] = str(home)
    with FakeMessagesServer(answer) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        yield server


def texts(request: dict) -> list[str]:
    return [b["text"] for b in request["messages"][-1]["content"] if b.get("type") == "text"]


def test_print_mode_runs_a_command_as_claude_code_does(cluster, workspace, api):
    done = cluster.mainsail("-p", "/review calc.py correctness", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Answer to: Review calc.py with a focus on correctness."
    (request,) = api.requests
    assert request["model"] == "claude-haiku-4-5"  # the command's model, for its run
    sent = texts(request)
    calc = str((workspace / "calc.py").resolve())
    assert sent[-4] == ("<system-reminder>\nCalled the Read tool with the following input: "
                        f'{{"file_path":"{calc}"}}\n</system-reminder>')
    assert sent[-3].startswith("<system-reminder>\nResult of calling the Read tool:\n1\t")
    assert sent[-2] == ("<command-message>review</command-message>\n<command-name>/review</command-name>\n"
                        "<command-args>calc.py correctness</command-args>\n")
    lines = (workspace / "calc.py").read_text().count("\n")
    assert sent[-1] == (f"Review calc.py with a focus on correctness.\nSize: {lines} calc.py\n"
                        "The file: @calc.py\n")

    stream = cluster.mainsail("-p", "/hello world", "--output-format", "stream-json", "--verbose", cwd=workspace)
    lines = [json.loads(x) for x in stream.stdout.splitlines()]
    assert lines[0]["subtype"] == "init" and lines[0]["slash_commands"] == ["git:touch", "hello", "review"]
    assert lines[-1]["result"] == "Answer to: Say hello to world" and api.requests[-1]["model"] != "claude-haiku-4-5"


def test_print_mode_refuses_a_line_that_would_ask_and_names_an_unknown_command(cluster, workspace, api):
    done = cluster.mainsail("-p", "/git:touch made.txt", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith('Shell command permission check failed for pattern "!`touch made.txt && ls '
                                  'made.txt`": it needs approval (')
    assert "print mode asks no one" in done.stdout
    assert not (workspace / "made.txt").exists() and api.requests == []
    allowed = cluster.mainsail("-p", "/git:touch made.txt", "--allowedTools", "Bash(touch:*) Bash(ls:*)",
                               cwd=workspace)
    assert allowed.returncode == 0 and (workspace / "made.txt").exists()
    assert texts(api.requests[-1])[-1] == "Touched: made.txt\n"
    unknown = cluster.mainsail("-p", "/nosuch x", cwd=workspace)
    assert "No custom command /nosuch here (custom commands: /git:touch, /hello, /review;" in unknown.stderr
    assert unknown.stdout.strip() == "Answer to: /nosuch x"


def test_interactive_mode_lists_commands_and_asks_before_a_line_runs(cluster, workspace, api):
    # (/review pre-approves a tool, so the workspace is trusted first: else interactive mode asks about it.)
    proc = cluster.mainsail("--trust-project", cwd=workspace, background=True, stdin=subprocess.PIPE)
    stdout, stderr = proc.communicate("/help\n/git:touch asked.txt\ny\n/nosuch\n/hello you\n", timeout=90)
    assert proc.returncode == 0 and "Traceback" not in stdout + stderr, stdout + stderr
    assert "  /review FILE [FOCUS] Review a file for bugs (project)" in stdout
    assert "  /hello        Say hello to $ARGUMENTS (user)" in stdout
    assert "Bash: touch asked.txt && ls asked.txt" in stderr and "(y)es / (n)o / (a)lways" in stderr
    assert (workspace / "asked.txt").exists()
    assert "  ⎿  !`touch asked.txt && ls asked.txt`: asked.txt" in stdout
    assert "Answer to: Touched: asked.txt" in stdout and "Answer to: Say hello to you" in stdout
    assert "Unknown command /nosuch. Type /help." in stderr
    assert [texts(r)[-2].splitlines()[1] for r in api.requests] == ["<command-name>/git:touch</command-name>",
                                                                     "<command-name>/hello</command-name>"]


def test_the_agent_sdk_sees_the_commands_and_its_callback_answers_a_line(cluster, workspace, api):
    sdk = pytest.importorskip("claude_agent_sdk")
    asked = []

    async def can_use(name, tool_input, ctx):
        asked.append((name, tool_input))
        return sdk.PermissionResultAllow()

    async def go():
        opts = sdk.ClaudeAgentOptions(cli_path=MAINSAIL, cwd=str(workspace), env=dict(cluster.env),
                                      can_use_tool=can_use)
        async with sdk.ClaudeSDKClient(opts) as client:
            info = await client.get_server_info()
            await client.query("/git:touch sdk.txt")
            return info, [m async for m in client.receive_response()]

    info, msgs = asyncio.run(asyncio.wait_for(go(), 90))
    assert {"name": "review", "description": "Review a file for bugs (project)", "argumentHint": "FILE [FOCUS]"} \
        in info["commands"]
    assert asked == [("Bash", {"command": "touch sdk.txt && ls sdk.txt"})]
    assert msgs[0].data["slash_commands"] == ["git:touch", "hello", "review"]
    assert msgs[-1].result == "Answer to: Touched: sdk.txt" and (workspace / "sdk.txt").exists()
