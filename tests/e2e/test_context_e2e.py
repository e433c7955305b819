"""Context and compaction through real workers and the real SDK over HTTP."""

from __future__ import annotations

import json

import pytest

from demo.scripted import ScriptUsage, ToolUse, Turn
from tests.fakeapi import FakeMessagesServer
from workflows.compaction.run import SUMMARY_SYSTEM
from workflows.models import CompactBoundaryEntry

pytestmark = pytest.mark.e2e


def model():
    reads = 0

    def turn(body):
        nonlocal reads
        if body["system"][0]["text"] == SUMMARY_SYSTEM:
            return Turn(text="<summary>E2E SUMMARY</summary>")
        if reads < 1:
            reads += 1
            return Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})],
                        usage=ScriptUsage(input_tokens=185_000, output_tokens=100))
        return Turn(text="answered")

    return turn


def test_compaction_on_workers_cache_marks_and_the_compact_command(cluster, workspace):
    (workspace / "CLAUDE.md").write_text("Always answer in haiku.\n")
    with FakeMessagesServer(model()) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.env["MAINSAIL_MODEL"] = "claude-sonnet-4-6"  # a 200k window (180k effective): 185k compacts
        cluster.start_worker()
        out = cluster.mainsail("run", "-p", "--permission-mode", "bypassPermissions", "read it", cwd=workspace)
        assert out.returncode == 0 and out.stdout == "answered\n", out.stderr
        sid = cluster.session_id()
        first = server.requests[0]
        assert json.dumps(first).count('"cache_control"') == 3
        assert "Always answer in haiku." in first["messages"][0]["content"][0]["text"]
        assert "Today's date is" in first["messages"][0]["content"][0]["text"]
        assert any(b["system"][0]["text"] == SUMMARY_SYSTEM for b in server.requests)
        assert "E2E SUMMARY" in json.dumps(server.requests[-1]["messages"])
        shown = cluster.mainsail("show", sid[:8], "--no-transcript", cwd=workspace)
        assert shown.returncode == 0 and "context " in shown.stdout and "of 180,000 tokens" in shown.stdout
        manual = cluster.mainsail("compact", sid[:8], "mention calc.py", cwd=workspace)
        assert manual.returncode == 0, manual.stderr
        assert manual.stdout.strip().splitlines()[-1].startswith("Compacted")
        assert "mention calc.py" in json.dumps(server.requests[-1]["messages"])
        kinds = [e.trigger for e in cluster.store.entries(sid) if isinstance(e, CompactBoundaryEntry)]
        assert kinds == ["auto", "manual"]
