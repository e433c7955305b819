"""Claude Code's copy of Mainsail's transcripts (workflows/context/claude_copy.py), read by the real readers.

After a session run through the installed ``mainsail -p`` and through the Agent SDK's ``query`` (cli_path=mainsail),
the SDK's ``list_sessions`` and ``get_session_messages`` find it with its messages; the bundled Claude Code resumes
it (``claude -p --resume <id>`` sends the earlier turns to the model); and its lines have the shape of the lines
Claude Code writes for the same scripted conversation."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import wait_for
from tests.e2e.test_agent_sdk import bash_turn, collect, options, serving
from tests.e2e.test_claude_code_parity import CLAUDE, MODEL, run_both, turn
from tests.fakeapi import FakeMessagesServer
from workflows.context.claude_copy import project_key

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import ResultMessage, get_session_messages, list_sessions  # noqa: E402

pytestmark = pytest.mark.e2e

#: Keys of Claude Code's transcript lines that its resume and the SDK's readers use, per line kind.
KEYS = {"parentUuid", "isSidechain", "type", "message", "uuid", "timestamp", "userType", "entrypoint", "cwd",
        "sessionId", "version", "gitBranch"}
TOOL_RESULT_KEYS = KEYS | {"toolUseResult"}
MESSAGE_KEYS = {"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}


@pytest.fixture
def home(cluster, tmp_path, monkeypatch):
    """A home of the test's own, for Mainsail's processes, Claude Code and this process's SDK calls; copies on."""
    home = tmp_path / "home"  # (made by run_both, or by the test)
    cluster.env.update(HOME=str(home), MAINSAIL_CLAUDE_TRANSCRIPTS="true")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    return home


def copy_of(home: Path, ws: Path, sid: str) -> Path:
    return home / ".claude" / "projects" / project_key(str(ws.resolve())) / f"{sid}.jsonl"


def chain(path: Path) -> list[dict]:
    """The user and assistant lines of a transcript file, in order."""
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return [x for x in lines if x.get("type") in ("user", "assistant") and not x.get("isMeta")]


def shape(line: dict) -> tuple:
    content = line["message"]["content"]
    return line["type"], tuple(b["type"] for b in content) if isinstance(content, list) else ("text",)


def idle(cluster, sid: str) -> None:
    """The session came to rest (its memory extraction, after the result, commits too)."""
    wait_for(lambda: cluster.store.get_session(sid).state.value == "idle", 30, what="the session to be idle")


def resume_with_claude(home: Path, ws: Path, sid: str, script) -> tuple[subprocess.CompletedProcess, list]:
    with FakeMessagesServer(script) as api:
        env = dict(os.environ, HOME=str(home), ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key",
                   IS_SANDBOX="1", DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        done = subprocess.run([str(CLAUDE), "-p", "--resume", sid, "next", "--output-format", "json", "--model", MODEL,
                               "--permission-mode", "bypassPermissions"], cwd=ws, env=env, capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL)
        return done, api.requests


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
def test_a_print_mode_session_is_claude_codes_to_list_read_and_resume(cluster, tmp_path, home):
    args = ["-p", "run it", "--output-format", "stream-json", "--verbose", "--model", MODEL,
            "--permission-mode", "bypassPermissions"]
    ours, theirs = run_both(cluster, tmp_path, turn, args, home_for_ours=True)
    ours_ws, theirs_ws = tmp_path / "ours", tmp_path / "theirs"
    sid, their_sid = ours[0]["session_id"], theirs[0]["session_id"]
    idle(cluster, sid)
    mine, reference = copy_of(home, ours_ws, sid), copy_of(home, theirs_ws, their_sid)
    assert mine.exists() and reference.exists(), sorted(str(p) for p in home.rglob("*.jsonl"))

    # line by line, the shape of Claude Code's own file
    a, b = chain(mine), chain(reference)
    assert [shape(x) for x in a] == [shape(x) for x in b] == [
        ("user", ("text",)), ("assistant", ("text",)), ("assistant", ("tool_use",)), ("user", ("tool_result",)),
        ("assistant", ("text",))]
    for x, y in zip(a, b):
        keys = TOOL_RESULT_KEYS if shape(x) == ("user", ("tool_result",)) else KEYS
        assert keys <= set(x) and keys <= set(y), (keys - set(x), keys - set(y))
        if x["type"] == "assistant":
            assert MESSAGE_KEYS <= set(x["message"]) and MESSAGE_KEYS <= set(y["message"])
    assert [x["parentUuid"] for x in a[1:]] and all(x["sessionId"] == sid for x in a)

    # the SDK's readers
    (info,) = list_sessions(directory=str(ours_ws))
    assert info.session_id == sid and info.first_prompt == "run it" and info.cwd == str(ours_ws.resolve())
    msgs = get_session_messages(sid, directory=str(ours_ws))
    assert [m.type for m in msgs] == ["user", "assistant", "assistant", "user", "assistant"]
    assert msgs[0].message["content"] == "run it" and msgs[-1].message["content"][0]["text"] == "Done."

    # Claude Code resumes it: its request holds the earlier turns
    done, requests = resume_with_claude(home, ours_ws, sid, lambda body: turn(body))
    assert done.returncode == 0, done.stderr[-2000:]
    sent = requests[-1]["messages"]
    assert "run it" in json.dumps(sent[0])
    assert [m["role"] for m in sent[:4]] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in sent[1]["content"]] == ["text", "tool_use"]
    assert sent[2]["content"][0]["type"] == "tool_result" and "next" in json.dumps(sent[-1])


def test_a_session_the_sdk_ran_through_mainsail_is_in_the_sdks_listing(cluster, workspace, home):
    home.mkdir()
    with serving(cluster, bash_turn("echo ran > out.txt")):
        msgs = collect("run it", options(cluster, workspace, permission_mode="bypassPermissions"))
    result = msgs[-1]
    assert isinstance(result, ResultMessage) and result.result == "done: run it"
    sid = result.session_id
    idle(cluster, sid)
    assert [s.session_id for s in list_sessions(directory=str(workspace))] == [sid]
    read = get_session_messages(sid, directory=str(workspace))
    assert [m.type for m in read] == ["user", "assistant", "assistant", "user", "assistant"]
    assert read[3].message["content"][0]["type"] == "tool_result"
    assert read[-1].message["content"][0]["text"] == "done: run it"
    assert list_sessions(directory=str(workspace))[0].summary == "run it"
