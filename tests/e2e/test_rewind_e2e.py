"""/rewind through real workers, the installed command and the real SDK against the fake Messages API: a file
edited over two turns, then `mainsail rewind` from a fresh process restores it and the conversation, and the
next turn's request no longer holds what was rewound."""

from __future__ import annotations

import json

import pytest

from demo.scripted import ToolUse, Turn
from workflows.models import RewindEntry

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(shared_cluster):
    """The module's one worker, shared by its tests (tests/e2e/shared_worker.py)."""
    return shared_cluster


def model(ws):
    def turn(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if any(b.get("type") == "tool_result" for b in last):
            return Turn(text="Done.")
        text = "".join(b.get("text", "") for b in last)
        path = str(ws / "notes.txt")
        if text.endswith("first message"):
            return Turn(tool_uses=[ToolUse(name="Write", input={"file_path": path, "content": "version one\n"})])
        if text.endswith("second message"):
            return Turn(tool_uses=[
                ToolUse(name="Edit", input={"file_path": path, "old_string": "one", "new_string": "two"}),
                ToolUse(name="Write", input={"file_path": str(ws / "extra.txt"), "content": "new\n"})])
        return Turn(text="third answer")

    return turn


def test_rewind_from_a_fresh_process_restores_the_file_and_the_conversation(cluster, workspace):
    cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"  # (read where the session is made: the CLI)
    with cluster.serving(model(workspace)) as server:
        out = cluster.mainsail("run", "-p", "--permission-mode", "acceptEdits", "first message", cwd=workspace)
        assert out.returncode == 0, out.stderr
        sid = cluster.session_id()
        out = cluster.mainsail("run", "-p", "--permission-mode", "acceptEdits", "--resume", sid, "second message",
                               cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert (workspace / "notes.txt").read_text() == "version two\n" and (workspace / "extra.txt").exists()

        listed = cluster.mainsail("rewind", sid[:8], "--list", cwd=workspace)
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        assert len(lines) == 2 and "first message" in lines[0] and "(edits 1 file)" in lines[0]
        assert "second message" in lines[1] and "(edits 2 files)" in lines[1]

        done = cluster.mainsail("rewind", sid[:8], "--to", "2", cwd=workspace)
        assert done.returncode == 0, done.stderr
        assert f"restored {workspace / 'notes.txt'}" in done.stdout
        assert f"deleted  {workspace / 'extra.txt'}" in done.stdout
        assert "Bash commands are not tracked" in done.stdout
        assert (workspace / "notes.txt").read_text() == "version one\n" and not (workspace / "extra.txt").exists()
        assert any(isinstance(e, RewindEntry) for e in cluster.store.entries(sid))

        out = cluster.mainsail("run", "-p", "--resume", sid, "third message", cwd=workspace)
        assert out.returncode == 0 and out.stdout == "third answer\n", out.stderr
        sent = json.dumps(server.requests[-1]["messages"])
        assert "first message" in sent and "third message" in sent
        assert "second message" not in sent and "extra.txt" not in sent


def test_rewind_refuses_to_overwrite_a_file_changed_since_unless_forced(cluster, workspace):
    cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"  # (read where the session is made: the CLI)
    with cluster.serving(model(workspace)) as server:
        out = cluster.mainsail("run", "-p", "--permission-mode", "acceptEdits", "first message", cwd=workspace)
        assert out.returncode == 0, out.stderr
        sid = cluster.session_id()
        (workspace / "notes.txt").write_text("edited by hand\n")
        refused = cluster.mainsail("rewind", sid[:8], "--to", "1", "--code", cwd=workspace)
        assert refused.returncode == 1 and "changed since the session last edited them" in refused.stderr
        assert "--force" in refused.stderr and "Traceback" not in refused.stderr
        assert (workspace / "notes.txt").read_text() == "edited by hand\n"
        forced = cluster.mainsail("rewind", sid[:8], "--to", "1", "--code", "--force", cwd=workspace)
        assert forced.returncode == 0, forced.stderr
        assert not (workspace / "notes.txt").exists()


def test_a_teammate_rewinds_through_the_team_server(cluster, workspace, tmp_path):
    from tests.e2e.test_remote_cli import Server

    cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"  # (read where the session is made: the CLI)
    with cluster.serving(model(workspace)) as api:
        for prompt in ("first message", "second message"):
            resume = ("--resume", cluster.session_id()) if prompt.startswith("second") else ()
            out = cluster.mainsail("run", "-p", "--permission-mode", "acceptEdits", *resume, prompt, cwd=workspace)
            assert out.returncode == 0, out.stderr
        sid = cluster.session_id()
        server = Server(cluster, tmp_path)
        server.start()
        listed = server.mainsail("rewind", sid[:8], "--list")
        assert listed.returncode == 0, listed.stderr
        assert "second message  (edits 2 files)" in listed.stdout.splitlines()[1]
        done = server.mainsail("rewind", sid[:8], "--to", "2", "--code")
        assert done.returncode == 0, done.stderr
        assert "Rewound the code of session" in done.stdout and f"deleted  {workspace / 'extra.txt'}" in done.stdout
        assert (workspace / "notes.txt").read_text() == "version one\n" and not (workspace / "extra.txt").exists()
        again = server.mainsail("rewind", sid[:8], "--to", "5")
        assert again.returncode == 1 and "there is no message 5" in again.stderr


def test_the_agent_sdks_rewind_files_restores_the_code(cluster, workspace):
    import asyncio

    sdk = pytest.importorskip("claude_agent_sdk")
    from tests.e2e.conftest import MAINSAIL

    cluster.env["MAINSAIL_AUTO_MEMORY"] = "false"  # (read where the session is made: the CLI)
    with cluster.serving(model(workspace)) as api:
        opts = sdk.ClaudeAgentOptions(cli_path=MAINSAIL, cwd=str(workspace), env=dict(cluster.env),
                                      permission_mode="acceptEdits", enable_file_checkpointing=True,
                                      extra_args={"replay-user-messages": None})

        async def go():
            prompts = {}
            async with sdk.ClaudeSDKClient(opts) as client:
                for prompt in ("first message", "second message"):
                    await client.query(prompt)
                    async for m in client.receive_response():
                        if isinstance(m, sdk.UserMessage) and m.uuid:
                            text = m.content if isinstance(m.content, str) else "".join(
                                getattr(b, "text", "") for b in m.content)
                            prompts[text] = m.uuid
                assert (workspace / "notes.txt").read_text() == "version two\n"
                await client.rewind_files(prompts["second message"])
                restored = (workspace / "notes.txt").read_text()
                with pytest.raises(Exception, match="not one of the messages"):
                    await client.rewind_files("no-such-message")
            return restored

        assert asyncio.run(asyncio.wait_for(go(), 120)) == "version one\n"
        assert not (workspace / "extra.txt").exists()
