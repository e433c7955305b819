"""Mainsail's stream-json against Claude Code's own, field by field, over a table of scripted conversations.

Every conversation runs through ``mainsail`` and through the CLI the Agent SDK bundles (Claude Code 2.1.332)
against one fake Messages API and one Mainsail worker for the module, several at once
(tests/e2e/parity_runner.py). A difference between them fails its conversation's test unless it is normalized
(what must differ: ids, timings, token counts, paths) or allowed by name below, with the reason
docs/claude-code.md gives; an allowance no conversation needs fails too."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import MAINSAIL, Cluster, cluster_env
from tests.e2e.parity_runner import INTERRUPT, Allowed, Conversation, attach_requests, differences, label, \
    router, run_all, unexplained, user_message
from tests.fakeapi import FakeMessagesServer
from workflows.store.redis_store import Store

sdk = pytest.importorskip("claude_agent_sdk")
CLAUDE = Path(sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not CLAUDE.exists(), reason="no bundled Claude Code CLI"),
              pytest.mark.skipif(MAINSAIL is None, reason="the mainsail command is not installed")]

MODEL = ["--model", "claude-sonnet-4-6"]
BYPASS = [*MODEL, "--permission-mode", "bypassPermissions"]
MCP = json.dumps({"mcpServers": {"srv": {"command": sys.executable,
                                         "args": [str(Path(__file__).resolve().parents[1] / "mcp_server.py")]},
                                 "broken": {"command": "/nonexistent/mcp-server"}}})
NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "execution_count": None,
                                  "outputs": [], "source": ["print(1)\n"]}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
#: A command that runs until its workspace has a file named release (run_all makes it), at most a minute
#: (Claude Code refuses a plain sleep).
WAIT = "python3 -c \"import os,time; any(os.path.exists('release') or time.sleep(0.05) for _ in range(1200))\""
#: A message sent with a uuid while a turn runs: it waits in the queue, and an interrupt's answer lists it.
QUEUED = dict(user_message("and this too"), uuid="11111111-2222-4333-8444-555555555555")
SCHEMA = json.dumps({"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]})


def one(*calls: tuple[str, dict]) -> list[list[tuple[str, dict]]]:
    """Steps of one call a reply."""
    return [[c] for c in calls]


TABLE = [
    Conversation("files", one(
        ("Read", {"file_path": "{ws}/a.txt"}),
        ("Read", {"file_path": "{ws}/a.txt", "offset": 2, "limit": 1}),
        ("Edit", {"file_path": "{ws}/a.txt", "old_string": "beta", "new_string": "BETA"}),
        ("Edit", {"file_path": "{ws}/a.txt", "old_string": "x", "new_string": "y", "replace_all": True}),
        ("Write", {"file_path": "{ws}/new.txt", "content": "hello\nworld\n"}),
        ("Write", {"file_path": "{ws}/a.txt", "content": "one\ntwo"}),
        ("Read", {"file_path": "{ws}/empty.txt"})),
        BYPASS, {"a.txt": "alpha\nbeta\nxx gamma x\n", "empty.txt": ""}),
    Conversation("errors", one(
        ("Edit", {"file_path": "{ws}/a.txt", "old_string": "nope", "new_string": "y"}),
        ("Read", {"file_path": "{ws}/a.txt", "offset": 10}),
        ("Read", {"file_path": "{ws}/missing.txt"}),
        ("Bash", {"command": "exit 3"})),
        BYPASS, {"a.txt": "alpha\n"}),
    Conversation("bash", one(
        ("Bash", {"command": "echo hi; echo err >&2", "description": "Say hi"}),
        ("Bash", {"command": "true"})), BYPASS),
    Conversation("search", one(("Glob", {"pattern": "*.txt"}), ("Grep", {"pattern": "hello"})), BYPASS,
                 {"h.txt": "hello\n"}),
    Conversation("notebook", one(
        ("NotebookEdit", {"notebook_path": "{ws}/n.ipynb", "cell_id": "c1", "new_source": "unread"}),
        ("Read", {"file_path": "{ws}/n.ipynb"}),
        ("NotebookEdit", {"notebook_path": "{ws}/n.ipynb", "cell_id": "c1", "new_source": "print(2)"}),
        ("NotebookEdit", {"notebook_path": "{ws}/n.ipynb", "cell_id": "c1", "new_source": "x = 1",
                          "edit_mode": "insert", "cell_type": "code"})),
        BYPASS, {"n.ipynb": NOTEBOOK}),
    Conversation("todo", one(("TodoWrite", {"todos": [
        {"content": "Plan", "status": "in_progress", "activeForm": "Planning"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping"}]})), BYPASS),
    Conversation("mcp", one(("mcp__srv__add", {"a": 2, "b": 3})),
                 [*MODEL, "--mcp-config", MCP, "--allowedTools", "mcp__srv__add"]),
    Conversation("print-deny", one(("Bash", {"command": "touch out.txt"}),
                                   ("Write", {"file_path": "{ws}/w.txt", "content": "x"})), MODEL),
    Conversation("deny-rule", one(("Bash", {"command": "rm -f a.txt"})),
                 [*BYPASS, "--disallowedTools", "Bash(rm:*)"], {"a.txt": "keep\n"}),
    Conversation("outside", one(("Write", {"file_path": "{ws}/in.txt", "content": "in"}),
                                ("Write", {"file_path": "{ws}/../outside.txt", "content": "out"})),
                 [*MODEL, "--permission-mode", "acceptEdits"]),
    Conversation("agent", one(("Agent", {"description": "Count files", "prompt": "[agent/sub] count the files",
                                         "subagent_type": "general-purpose", "run_in_background": False})),
                 BYPASS, sub=one(("Bash", {"command": "ls"}))),
    Conversation("structured", one(("StructuredOutput", {"answer": "x"}), ("StructuredOutput", {"answer": 42})),
                 [*BYPASS, "--json-schema", SCHEMA]),
    Conversation("multi-turn", one(("Bash", {"command": "echo one"})),
                 [*BYPASS, "--input-format", "stream-json"],
                 feed=[("start", user_message("[multi-turn] go")), ("result", user_message("and again"))]),
    Conversation("interrupt", one(("Bash", {"command": WAIT})),
                 [*BYPASS, "--input-format", "stream-json"],  # (the next prompt: what the model is sent after it)
                 feed=[("start", user_message("[interrupt] go")), ("tool_use", INTERRUPT),
                       ("result", user_message("and again"))]),
    Conversation("interrupt-streaming", [[]],  # a reply with no call, interrupted while it streams
                 [*BYPASS, "--input-format", "stream-json", "--include-partial-messages"],
                 feed=[("start", user_message("[interrupt-streaming] go")), ("stream_event", INTERRUPT),
                       ("result", user_message("and again"))], slow=0.5),
    Conversation("interrupt-queued", one(("Bash", {"command": WAIT})), [*BYPASS, "--input-format", "stream-json"],
                 feed=[("start", user_message("[interrupt-queued] go")), ("tool_use", QUEUED), ("start", INTERRUPT)]),
]

MINE = "Glob|Grep|MultiEdit|TodoWrite|BashOutput|KillShell|MemoryRead|MemoryWrite|MemoryDelete"
NOT_HERE = ("CronCreate|CronDelete|CronList|EnterWorktree|ExitWorktree|ListAgents|Monitor|ReportFindings|"
            "ScheduleWakeup|SendMessage|Skill|TaskCreate|TaskGet|TaskList|TaskStop|TaskUpdate|ToolSearch|Workflow|"
            "ListMcpResourcesTool|ReadMcpResourceTool|ReadMcpResourceDirTool")
#: A tool result's text and is_error, in its stream-json line and in the next request; its tool_use_result.
RESULT_LINE = (r"user\.message\.content\[0\]\.(content|is_error)|user\.tool_use_result|"
               r"request\.messages\[\d+\]\.content\[0\]\.(content|is_error)")
#: The differences Mainsail keeps on purpose (docs/claude-code.md says each), by the diff paths they cover.
ALLOWED: list[Allowed] = [
    Allowed("tools Mainsail has", rf"system/init\.tools\[({MINE})\]",
            "Glob, Grep, TodoWrite and the rest are Mainsail's; Claude Code 2.1.332 offers none of them in print mode",
            "ours only"),
    Allowed("tools Mainsail has not", rf"system/init\.tools\[({NOT_HERE})\]",
            "Claude Code's built-in tools Mainsail does not have (Skill and TaskStop only when there is a skill or a "
            "background agent)", "theirs only"),
    Allowed("built-in commands, skills, agents",
            r"system/init\.(slash_commands|skills|terminal_slash_commands|agents)\[.+\]",
            "Claude Code lists its built-in ones; Mainsail lists the session's own only", "theirs only"),
    Allowed("plugins", r"system/init\.plugins\[\]", "Claude Code's bundled plugins; Mainsail has none yet",
            "ours 0 items, theirs \\d+"),
    Allowed("capabilities", r"system/init\.capabilities\[.+\]",
            "control-protocol features Mainsail does not speak: an SDK asks only for what is listed", "theirs only"),
    Allowed("sandbox", r"system/init\.sandbox_enabled", "Mainsail runs Bash in its OS sandbox by default "
            "(docs/security.md); Claude Code does not", "ours true, theirs false"),
    Allowed("init keys not sent", r"system/init\.(served_by_anthropic|memory_paths|messaging_socket_path|"
            r"fast_mode_disabled_reason)", "what Mainsail cannot say truly (docs/cli.md)", "theirs only.*"),
    Allowed("result keys not sent", r"result\.(fast_mode_disabled_reason|ttft_ms|ttft_stream_ms|"
            r"time_to_request_ms|first_content_frame_ms|result_index|model_usage_since_last_result)",
            "timings Mainsail does not measure", "theirs only.*"),
    Allowed("cost_breakdown", r"result\.cost_breakdown", "names the memory forks' cost, which total_cost_usd "
            "leaves out (docs/cli.md)", "ours only.*"),
    Allowed("maxOutputTokens", r"result\.modelUsage\.[\w.-]+\.maxOutputTokens",
            "the model's own output limit; Claude Code reports its default cap (32000)", "ours 64000, theirs 32000"),
    Allowed("request ids", r"assistant\.request_id", "the API's request id: the worker that made the call keeps it "
            "in its log, not in the transcript", "theirs only.*"),
    Allowed("context_management", r"assistant\.message\.context_management",
            "null in every reply: Mainsail asks for no context-management beta", "theirs only null"),
    Allowed("per-call metadata", r"user\.tool_result_meta|assistant\.tool_use_meta",
            "Claude Code's own record of each call's permission decision and MCP server, for its UI", "theirs only.*"),
    Allowed("input defaults", r"(assistant\.message|request\.messages\[\d+\])\.content\[\d+\]\.input\.replace_all",
            "Claude Code writes the input's defaults into the call it keeps; Mainsail keeps the call as the model "
            "sent it", "theirs only false"),
    Allowed("Bash is_error false", r"(request\.messages\[\d+\]|user\.message)\.content\[0\]\.is_error",
            "Claude Code marks a Bash result is_error false (its other tools' successes have none); Mainsail "
            "leaves every success's is_error out (the same to the API and to the SDK)", "theirs only false"),
    Allowed("Glob, Grep, TodoWrite results", RESULT_LINE,
            "Claude Code 2.1.332 refuses them in print mode (no such tool); Mainsail runs them (docs/tools.md)",
            conversations=("search", "todo")),
    Allowed("structured tool_use_result", r"user\.tool_use_result", "tool_use_result is structured for Read, Edit, "
            "Write and Bash only; for the others it is the result's text (docs/cli.md)", r'ours ".*", theirs \{.*',
            conversations=("mcp", "notebook")),
    Allowed("notebook read as blocks", r"user\.message\.content\[0\]\.content",
            "Claude Code streams a notebook Read's result as text blocks, Mainsail as their text (the model gets the "
            "same text)", r'ours "<cell id=.*", theirs \[\{"text": "<cell id=.*', conversations=("notebook",)),
    Allowed("new cell ids", r"user\.message\.content\[0\]\.content|request\.messages\[\d+\]\.content\[0\]\.content",
            "a new notebook cell's id is random", r'ours "Inserted cell [0-9a-f]{8} with x = 1", '
            r'theirs "Inserted cell [0-9a-f]{8} with x = 1"', conversations=("notebook",)),
    Allowed("a sub-agent's output_file", r"system/task_notification\.output_file",
            "Claude Code's is a link to the agent's transcript under /tmp/claude-UID; Mainsail's is the agent's Claude "
            "Code transcript copy, empty when copies are off, as in these runs (docs/claude-code.md)",
            r'ours "", theirs "/tmp/claude-\d+/.*\.output"', conversations=("agent",)),
    Allowed("a hand-back without SendMessage", r"user\.message\.content\[0\]\.content\[0\]\.text|"
            r"request\.messages\[\d+\]\.content\[0\]\.content|user\.tool_use_result\.canContinueAgent",
            "Mainsail has no SendMessage: a foreground agent's hand-back ends its agentId line without Claude "
            "Code's \"(use SendMessage ... to continue this agent)\" and canContinueAgent is false "
            "(docs/claude-code.md)", r'ours "  <tools-used-before-summary>Bash.*, theirs "  <tools-used-before-'
            r'summary>Bash.*|ours false, theirs true', conversations=("agent",)),
    Allowed("a hand-back's usage record", r"user\.tool_use_result\.(usage\.\w+|harness\w+)",
            "the sub-agent's usage keeps the Messages API's four token counts (not the API's other usage fields), "
            "and the harness* keys (Claude Code's record of its note and tail blocks) are left out",
            "theirs only.*", conversations=("agent",)),
    Allowed("a uuid-stamped message's lifecycle", r"command_lifecycle|system/init\.user_message_uuids|"
            r"(assistant|result)\.user_message_uuids?|result\.(request_sent_wall_ms|first_request_\w+)",
            "Claude Code streams command_lifecycle lines (queued, started, completed) for a message sent with a uuid "
            "and names it in its turn's lines; Mainsail keeps no client uuids but for an interrupt's still_queued "
            "(docs/claude-code.md)", conversations=("interrupt-queued",)),
    Allowed("partial messages around an interrupt", r"stream_event(\..+)?|system/status|result\.begun_message_ids|"
            r"result\.modelUsage\.[\w.-]+",
            "Mainsail's stream events carry the API's events only (no ttft_ms, api_message_id, thinking_display, "
            "status lines or begun_message_ids); a reply cut by an interrupt is not charged (its worker's record of "
            "it is fenced off), and the events its worker had already read still reach the client, where Claude "
            "Code closes the stream at once with its own message_delta and message_stop (docs/claude-code.md)",
            conversations=("interrupt-streaming",)),
    Allowed("denial texts", rf"system/permission_denied\.message|{RESULT_LINE}",
            "Mainsail's refusals name the rule or mode that refused and the way to allow it (docs/permissions.md)",
            conversations=("print-deny", "deny-rule")),
    Allowed("denial reasons", r"system/permission_denied\.decision_reason(_type)?",
            "Claude Code's internal reason kinds (subcommandResults, workingDir...); Mainsail's message says the "
            "reason", "theirs only.*"),
    Allowed("denied input as sent", r"result\.permission_denials\[\d+\]\.tool_input\.file_path",
            "Mainsail reports the refused call's input as the model sent it; Claude Code resolves the path",
            conversations=("outside",)),
]


@pytest.fixture(scope="module")
def parity(redis_server, tmp_path_factory):
    """Every conversation of :data:`TABLE` through both CLIs: {name: (ours, theirs)}, and the seconds it took."""
    base = tmp_path_factory.mktemp("parity")
    client = redis_server.client()
    client.flushall()
    env = dict(cluster_env(redis_server.url, base / "data"), HOME=str(base / "worker-home"))
    (base / "worker-home").mkdir()
    with FakeMessagesServer(router(TABLE)) as api:
        env["ANTHROPIC_BASE_URL"] = api.url
        cluster = Cluster(env, Store(client), base)
        try:
            cluster.start_worker()
            started = time.monotonic()
            results = run_all(TABLE, base, CLAUDE, env, parallel=4)
            attach_requests(results, api.requests)
            yield results, time.monotonic() - started
        finally:
            cluster.stop()
            client.flushall()
            client.close()


USED: set[str] = set()


@pytest.mark.parametrize("conv", [c.name for c in TABLE])
def test_conversation_matches_claude_codes(parity, conv):
    ours, theirs = parity[0][conv]
    assert ours.returncode == theirs.returncode, (ours.stderr[-2000:], theirs.stderr[-2000:])
    left = unexplained(conv, differences(ours, theirs), ALLOWED, USED)
    assert not left, f"{conv}: differences from Claude Code no allowance names:\n" + "\n".join(left) + (
        "\n" + "\n".join(f"{side} lines: " + ", ".join(label(x) + ("<sub" if x.get("parent_tool_use_id") else "")
                                                       for x in run.lines)
                           for side, run in (("ours", ours), ("theirs", theirs)))
        if any(what.endswith("only line") for what in left) else "")


def test_every_allowance_is_needed(parity):
    for conv in TABLE:
        unexplained(conv.name, differences(*parity[0][conv.name]), ALLOWED, USED)
    assert {a.name for a in ALLOWED} - USED == set()

