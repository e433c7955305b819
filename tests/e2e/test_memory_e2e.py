"""Memory end to end: real worker processes (a `memory` worker apart from the main one), the
real SDK against the local fake Messages API, the installed `mainsail` command."""

from __future__ import annotations

import json
import time

import pytest

from demo.scripted import Script, ScriptedMessagesAPI, ScriptUsage, ToolUse, Turn, default_fork_turn
from tests.e2e.conftest import wait_for
from tests.fakeapi import FakeMessagesServer
from workflows.models import CompactBoundaryEntry, StepKind, StepStatus, SystemEntry
from workflows.store.memory import ProjectMemory

pytestmark = pytest.mark.e2e


def read(n: int, tokens: int) -> Turn:  # noqa: ARG001 (n: which read, for readability)
    return Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})],
                usage=ScriptUsage(input_tokens=tokens, output_tokens=50))


def main_turn(body: dict) -> Turn:
    """First run: six Reads at a growing context, then an answer. The resumed run: one Read at a nearly
    full context (auto-compaction follows), then, on the compacted conversation, the second answer."""
    text = json.dumps(body["messages"])
    if "This session is being continued" in text:
        return Turn(text="Second answer.", usage=ScriptUsage(input_tokens=1_000))
    if "read it once more" in text:
        return read(0, 190_000)
    index = ScriptedMessagesAPI.turn_index(body)
    if index < 6:
        return read(index, 2_000 * (index + 1))
    return Turn(text="First answer.", usage=ScriptUsage(input_tokens=14_000))


def slow_notes(body: dict) -> Turn:
    """The default notes edit ("Working on: <prompt>"), a second late so that requests pile up."""
    turn = default_fork_turn("session_memory", body, ScriptedMessagesAPI.turn_index(body))
    return turn.model_copy(update={"delay_seconds": 1.0})


main_turn.session_memory = slow_notes


def test_session_memory_runs_on_the_memory_worker_and_compaction_uses_it(cluster, workspace):
    with FakeMessagesServer(main_turn) as server:
        cluster.env.update({"ANTHROPIC_BASE_URL": server.url, "MAINSAIL_SESSION_MEMORY_INIT_TOKENS": "1000",
                            "MAINSAIL_SESSION_MEMORY_UPDATE_TOKENS": "1000",
                            "MAINSAIL_SESSION_MEMORY_TOOL_CALLS": "1", "MAINSAIL_AUTO_MEMORY": "false",
                            "MAINSAIL_AUTOCOMPACT_PCT_OVERRIDE": "50",
                            # a 200k-window model: the figures below are 50% of its 180k effective window
                            "MAINSAIL_MODEL": "claude-sonnet-4-6"})
        cluster.start_worker("-Q", "model,tools")
        out = cluster.mainsail("run", "--permission-mode", "bypassPermissions", "Keep reading calc.py",
                               cwd=workspace)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "First answer." in out.stdout
        # No memory worker yet: the main loop finished without waiting; one update waits for a worker.
        sid = cluster.session_id()
        rec = cluster.store.get_session(sid)
        assert rec.memory_step and rec.memory_trailing and server.fork_requests("session_memory") == []
        cluster.start_worker("-Q", "memory")
        wait_for(lambda: cluster.store.get_session(sid).memory_step is None, 60, what="the memory updates")
        doc = cluster.store.session_memory(sid)
        assert doc and "Working on: Keep reading calc.py" in doc
        steps = [s for s in cluster.store.steps(sid) if s.kind is StepKind.MEMORY]
        assert len(steps) == 2 and all(s.status is StepStatus.DONE for s in steps), "one run, one trailing run"
        # Never two at once: the trailing run's first call came after the first run's last one.
        assert [len(b["messages"]) for b in server.fork_requests("session_memory")] == [1, 3, 1]
        shown = cluster.mainsail("memory", "show", sid[:8], cwd=workspace)
        assert shown.returncode == 0 and "Working on: Keep reading calc.py" in shown.stdout

        out = cluster.mainsail("run", "--resume", sid[:8], "--permission-mode", "bypassPermissions",
                               "read it once more", cwd=workspace)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "Second answer." in out.stdout
        boundary = [e for e in cluster.store.entries(sid) if isinstance(e, CompactBoundaryEntry)]
        assert len(boundary) == 1 and boundary[0].source == "session_memory"
        assert not any("create a detailed summary" in json.dumps(b) for b in server.all_requests)
        assert "Working on: Keep reading calc.py" in json.dumps(server.requests[-1]["messages"])


EXTRACT = [
    Turn(tool_uses=[ToolUse(name="MemoryWrite", input={
        "name": "user-role", "type": "user", "description": "Data scientist, new to Python packaging",
        "body": "Explain packaging steps in detail."})], delay_seconds=2.0),
    Turn(text="Saved."),
]


def test_extraction_survives_a_killed_memory_worker_and_writes_once(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="Noted: you are a data scientist.")],
                                   extract=EXTRACT)) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker("-Q", "model,tools")
        first = cluster.start_worker("-Q", "memory")
        out = cluster.mainsail("run", "I am a data scientist, new to Python packaging", cwd=workspace)
        assert out.returncode == 0, out.stderr
        sid = cluster.session_id()
        wait_for(lambda: server.fork_requests("extract"), 30, what="the extraction's first call")
        time.sleep(0.5)  # in the (slow) first call
        cluster.kill(first)
        assert cluster.store.get_session(sid).state.value == "extracting"
        cluster.start_worker("-Q", "memory")
        cluster.wait_state("idle", 60)
        rec = cluster.store.get_session(sid)
        (step,) = [s for s in cluster.store.steps(sid) if s.kind is StepKind.EXTRACT]
        assert step.status is StepStatus.DONE and step.attempt == 2
        records = ProjectMemory(cluster.store.r, rec.project_id).records()
        assert [(r.name, r.type) for r in records] == [("user-role", "user")]
        saved = [e for e in cluster.store.entries(sid) if isinstance(e, SystemEntry) and "saved 1 memory" in e.content]
        assert len(saved) == 1, "the commit happened once"
        listing = cluster.mainsail("memory", "list", cwd=workspace)
        assert "user-role" in listing.stdout and "Data scientist" in listing.stdout

        # The next session of the project starts with the index in its first request.
        server.api.set_script(Script(turns=[Turn(text="ok")], extract=[Turn(text="Nothing to save.")]))
        out = cluster.mainsail("run", "hello again", cwd=workspace)
        assert out.returncode == 0, out.stderr
        first_request = json.dumps(server.requests[-1]["messages"][0])
        assert "[user-role](user-role.md) (user): Data scientist, new to Python packaging" in first_request


def test_a_fork_resumes_from_its_checkpoint_on_another_worker(cluster, workspace):
    # The kill lands in the second turn: the first (Read) is not asked again.
    slow = [Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "calc.py"})]),
            Turn(tool_uses=[ToolUse(name="MemoryWrite", input={
                "name": "proj-freeze", "type": "project", "description": "Deploy freeze until the release",
                "body": "No deploys before Dec 1."})], delay_seconds=2.0),
            Turn(text="Saved.")]
    with FakeMessagesServer(Script(turns=[Turn(text="ok")], extract=slow)) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker("-Q", "model,tools")
        first = cluster.start_worker("-Q", "memory")
        out = cluster.mainsail("run", "We are in a deploy freeze until the release", cwd=workspace)
        assert out.returncode == 0, out.stderr
        wait_for(lambda: any(len(b["messages"]) == 3 for b in server.fork_requests("extract")), 30,
                 what="the extraction's second call")
        time.sleep(0.5)
        cluster.kill(first)
        cluster.start_worker("-Q", "memory")
        cluster.wait_state("idle", 60)
        calls = server.fork_requests("extract")
        assert sum(1 for b in calls if len(b["messages"]) == 1) == 1, "turn 1 came from the checkpoint"
        assert sum(1 for b in calls if len(b["messages"]) == 3) == 2, "turn 2 was in flight: asked again"
        sid = cluster.session_id()
        assert cluster.store.r.keys(f"mainsail:session:{sid}:fork:*") == [], "the checkpoint went with the commit"


def test_the_memory_commands_round_trip_claude_codes_layout(cluster, workspace, tmp_path):
    def ms(*args):
        return cluster.mainsail("memory", *args, cwd=workspace)

    assert "No memories for project" in ms("list").stdout
    out = ms("edit", "user-role", "--type", "user", "--description", "Data engineer", "--body", "Prefers SQL.")
    assert out.returncode == 0 and "Saved memory 'user-role' (user)" in out.stdout
    bad = ms("edit", "x", "--type", "user", "--description", "", "--body", "b")
    assert bad.returncode == 1 and "needs a one-line description" in bad.stderr and "Traceback" not in bad.stderr
    folder = tmp_path / "export"
    assert ms("export", str(folder)).returncode == 0
    assert (folder / "user-role.md").read_text() == (
        "---\nname: user-role\ndescription: Data engineer\ntype: user\n---\n\nPrefers SQL.\n")
    assert "- [user-role](user-role.md) (user): Data engineer" in (folder / "MEMORY.md").read_text()

    (folder / "grafana.md").write_text("---\nname: grafana\ndescription: Latency dashboards\ntype: reference\n"
                                       "---\n\ngrafana.internal/d/api\n")
    (folder / "broken.md").write_text("---\nname: broken\ndescription: d\ntype: opinion\n---\n")
    refused = ms("import", str(folder))
    assert refused.returncode == 1 and "Nothing was imported" in refused.stderr
    assert "broken.md: Invalid memory type 'opinion'" in refused.stderr and "grafana" not in ms("list").stdout
    (folder / "broken.md").unlink()
    assert "Imported 2 memory record(s)" in ms("import", str(folder)).stdout
    listing = ms("list").stdout
    assert "grafana" in listing and "reference" in listing and "2 record(s)" in listing
    assert ms("show", "grafana").stdout.endswith("grafana.internal/d/api\n")
    assert "(reference): Latency dashboards" in ms("show").stdout
    missing = ms("rm", "grafana", "nope")
    assert missing.returncode == 1 and "nothing was deleted" in missing.stderr
    assert ms("rm", "grafana").returncode == 0 and "grafana" not in ms("list").stdout
    unknown = ms("show", "zzz")
    assert unknown.returncode == 1 and "neither a memory record" in unknown.stderr
