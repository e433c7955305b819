"""Issue 28, items 5 and 6: every stream event of every reply under ``--include-partial-messages`` (and an
interrupt that lands mid-stream), and a client that goes away, against the real Agent SDK and the CLI it
bundles (Claude Code), both on the fake Messages API.

Claude Code, measured: each event of each reply as a ``stream_event`` line (the raw Messages API event); an
interrupt while a reply streams cuts it (its tool call never runs); SIGTERM or SIGHUP during a tool call stops
it and makes no further model call (exit 143 or 129, no result line); the end of stdin is not a departure
(the turns given run to their results). The SDK's client, leaving its context, closes stdin, waits 5 s and
sends SIGTERM.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.e2e.test_agent_sdk import bash_turn, options, serving
from tests.e2e.test_claude_code_parity import CLAUDE, MODEL, run_both
from tests.e2e.test_claude_code_parity import turn as text_then_tool
from workflows.models import ResultEntry, SystemEntry

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import AssistantMessage, ClaudeSDKClient, ResultMessage, StreamEvent  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(shared_cluster):
    """The module's one worker, shared by its tests (tests/e2e/shared_worker.py)."""
    return shared_cluster

SLOW = "echo started > started.txt; sleep 600.2828; echo late > late.txt"


def stream_events(lines: list[dict]) -> list[dict]:
    return [x for x in lines if x["type"] == "stream_event"]


def comparable(line: dict) -> dict:
    """A stream_event line with what differs between two runs by nature (ids, token counts, timings) named,
    not valued: its keys, and its event whole but for the message id and the usage figures."""
    event = json.loads(json.dumps(line["event"]))
    if event["type"] == "message_start":
        event["message"]["id"] = "<id>"
        event["message"]["usage"] = sorted(event["message"]["usage"])
    if "usage" in event:
        event["usage"] = sorted(event["usage"])
    return {"keys": list(line), "event": event}


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
def test_every_stream_event_of_text_and_tool_use_replies_as_claude_codes(private_cluster, tmp_path):
    cluster = private_cluster  # run_both starts a worker on its own fake API
    args = ["-p", "run it", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--model",
            MODEL, "--permission-mode", "bypassPermissions"]
    ours, theirs = run_both(cluster, tmp_path, text_then_tool, args)
    a, b = stream_events(ours), stream_events(theirs)
    assert [comparable(x) for x in a] == [comparable(x) for x in b], "\n".join(
        [json.dumps(comparable(x)) for x in a] + ["-- theirs"] + [json.dumps(comparable(x)) for x in b])
    kinds = [x["event"]["type"] for x in a]
    assert kinds.count("message_start") == kinds.count("message_stop") == 2
    assert any(x["event"].get("delta", {}).get("type") == "input_json_delta" for x in a)
    for side in (a, b):
        starts = [x for x in side if x["event"]["type"] == "message_start"]
        assert all(isinstance(x["ttft_ms"], int) for x in starts)
        ids = {x["event"]["message"]["id"] for x in starts}
        assert {x["api_message_id"] for x in side} == ids
        assert {x["session_id"] for x in side} == {side[0]["session_id"]}
        assert len({x["uuid"] for x in side}) == len(side)


def test_without_the_flag_a_tool_use_reply_has_no_stream_events(cluster, workspace):
    with serving(cluster, text_then_tool) as api:
        run = cluster.mainsail("-p", "run it", "--output-format", "stream-json", "--verbose", "--permission-mode",
                               "bypassPermissions", cwd=workspace)
    assert run.returncode == 0, run.stderr
    assert not stream_events([json.loads(x) for x in run.stdout.splitlines()])
    assert len(api.requests) == 2
    assert not cluster.store.get_session(cluster.session_id()).stream_events


def test_an_interrupt_at_the_first_stream_event_of_a_tool_use_reply_means_the_tool_never_runs(cluster, workspace):
    def turn(body: dict) -> Turn:  # the reply streams slowly: the interrupt lands while it comes
        return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": "touch out.txt"})],
                    stream_delay_seconds=0.3)

    with serving(cluster, turn) as api:

        async def go():
            opts = options(cluster, workspace, permission_mode="bypassPermissions", include_partial_messages=True)
            async with ClaudeSDKClient(opts) as client:
                await client.query("run it")
                first = None
                async for m in client.receive_response():
                    if isinstance(m, StreamEvent) and first is None:
                        first = m
                        await client.interrupt()
                    if isinstance(m, ResultMessage):
                        return first, m

        first, result = asyncio.run(asyncio.wait_for(go(), 120))
        sid = cluster.wait_state("idle")
        assert first.event["type"] == "message_start"
        assert result.is_error and result.subtype == "error_during_execution"
        assert not (workspace / "out.txt").exists(), "the cut reply's command ran"
        assert len(api.requests) == 1
        entries = cluster.store.entries(sid)
        assert not any(e.type == "assistant" for e in entries), "the cut reply was recorded"


def interrupted(cluster, sid: str) -> bool:
    entries = cluster.store.entries(sid)
    return (any(isinstance(e, SystemEntry) and e.subtype == "interrupted" for e in entries)
            and isinstance(entries[-1], ResultEntry) and cluster.store.get_session(sid).state.value == "idle")


def check_stopped(cluster, api, workspace) -> None:
    """The session ended interrupted, its command was stopped, and no model call followed the first."""
    sid = cluster.session_id()
    wait_for(lambda: interrupted(cluster, sid), 60, what="the session to end interrupted")
    assert len(api.requests) == 1, "a model call followed the client's departure"
    wait_for(lambda: subprocess.run(["pgrep", "-f", "sleep 600.2828"], capture_output=True).returncode == 1, 60,
             what="the command's processes to end")
    assert not (workspace / "late.txt").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_client_that_leaves_during_a_tool_call_stops_the_turn(cluster, workspace, sig):
    with serving(cluster, bash_turn(SLOW)) as api:
        proc = subprocess.Popen([MAINSAIL, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                                 "--verbose", "--permission-mode", "bypassPermissions"], cwd=workspace, env=cluster.env,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cluster.procs.append(proc)
        proc.stdin.write(json.dumps({"type": "user", "message": {"role": "user", "content": "run it"}}) + "\n")
        proc.stdin.flush()
        wait_for(lambda: (workspace / "started.txt").exists(), 60, what="the command to start")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 128 + sig, err
        assert not [x for x in out.splitlines() if json.loads(x)["type"] == "result"], "Claude Code writes no result"
        check_stopped(cluster, api, workspace)


def test_sigint_interrupts_the_turn_which_ends_with_its_result(cluster, workspace):
    with serving(cluster, bash_turn(SLOW)) as api:
        proc = subprocess.Popen([MAINSAIL, "-p", "run it", "--output-format", "stream-json", "--verbose",
                                 "--permission-mode", "bypassPermissions"], cwd=workspace, env=cluster.env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cluster.procs.append(proc)
        wait_for(lambda: (workspace / "started.txt").exists(), 60, what="the command to start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        result = json.loads(out.splitlines()[-1])
        assert result["type"] == "result" and result["subtype"] == "error_during_execution", err
        assert proc.returncode == 1
        check_stopped(cluster, api, workspace)


def test_an_sdk_client_leaving_its_context_during_a_tool_call_stops_the_turn(cluster, workspace):
    with serving(cluster, bash_turn(SLOW)) as api:

        async def go():
            async with ClaudeSDKClient(options(cluster, workspace, permission_mode="bypassPermissions")) as client:
                await client.query("run it")
                async for m in client.receive_response():
                    if isinstance(m, AssistantMessage):
                        while not (workspace / "started.txt").exists():
                            await asyncio.sleep(0.05)
                        return  # leaves the context: stdin closed, then SIGTERM 5 s later

        asyncio.run(asyncio.wait_for(go(), 120))
        check_stopped(cluster, api, workspace)


def test_a_prompt_then_the_end_of_stdin_still_gets_its_answer(cluster, workspace):
    with serving(cluster, bash_turn("echo ran > out.txt")) as api:
        line = json.dumps({"type": "user", "message": {"role": "user", "content": "run it"}}) + "\n"
        run = subprocess.run([MAINSAIL, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                              "--verbose", "--permission-mode", "bypassPermissions"], cwd=workspace, env=cluster.env,
                             input=line, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1])["result"] == "done: run it"
    assert (workspace / "out.txt").exists() and len(api.requests) == 2


@pytest.mark.parametrize("verb", [["submit"], ["run", "--background"]])
def test_a_detached_session_goes_on(cluster, workspace, verb):
    with serving(cluster, bash_turn("echo started > started.txt; echo ran > out.txt")) as api:
        run = cluster.mainsail(*verb, "--permission-mode", "bypassPermissions", "run it", cwd=workspace)
        assert run.returncode == 0, run.stderr
        sid = cluster.session_id()
        wait_for(lambda: cluster.store.get_session(sid).state.value == "idle" and len(api.requests) == 2, 60,
                 what="the detached session to finish")
        assert (workspace / "out.txt").exists()
        assert not any(isinstance(e, SystemEntry) and e.subtype == "interrupted" for e in cluster.store.entries(sid))
