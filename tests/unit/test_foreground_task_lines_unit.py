"""A foreground sub-agent's stream-json task lines (Claude Code 2.1.332 sends them as for a background one):
``task_started`` committed with the child, a ``task_progress`` before each of its tool calls, ``task_updated``
and ``task_notification`` committed with its answer (once), in Claude Code's order and keys."""

from __future__ import annotations

import io
import json

from rich.console import Console

from cli.output import StreamJson
from cli.render import Renderer
from demo.scripted import ToolUse, Turn
from cli.task_progress import activity
from tests.fakeapi import assistant_turns, first_prompt
from tests.inline import Inline, scripted_model
from workflows.models import AssistantEntry, SystemEntry
from workflows.models.options import SessionOptions

CALL = ToolUse(id="toolu_fg", name="Agent", input={"description": "count", "prompt": "child job",
                                                    "subagent_type": "general-purpose"})


def model():
    def turn(body: dict) -> Turn:
        n = assistant_turns(body)
        if first_prompt(body).startswith("child job"):
            return [Turn(text="Looking.", tool_uses=[ToolUse(id="toolu_c1", name="Bash", input={"command": "ls"}),
                                                    ToolUse(id="toolu_c2", name="Read",
                                                            input={"file_path": "notes.md"})]),
                    Turn(text="one two three")][min(n, 1)]
        return [Turn(text="Delegating.", tool_uses=[CALL]), Turn(text="Done.")][min(n, 1)]
    return scripted_model(turn)


def stream(engine, sid: str, child: str) -> list[dict]:
    """The stream-json lines of the session, its sub-agent's entries given right after its task_started."""
    out: list[str] = []
    lines = StreamJson(out.append)
    for e in engine.store.entries(sid):
        lines.entry(e)
        if isinstance(e, SystemEntry) and e.task and e.task["event"] == "started":
            lines.link_child(child, CALL.id)
            for c in engine.store.entries(child):
                lines.child_entry(child, c)
    return [json.loads(x) for x in out]


def test_a_foreground_agent_streams_claude_codes_task_lines_once(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model=model(), permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (child_id,) = engine.store.get_session(rec.id).children
    notices = [e.task for e in engine.store.entries(rec.id) if isinstance(e, SystemEntry) and e.subtype == "task"]
    assert [(t["event"], t["is_backgrounded"]) for t in notices] == [("started", False), ("ended", False)]
    # the answer is fenced on the parent's agent step: delivered again, no second end (nor result)
    child = engine.store.get_session(child_id)
    before = len(engine.store.entries(rec.id))
    assert engine.record_child_answer(rec.id, child.parent_step_id, child) == []
    assert len(engine.store.entries(rec.id)) == before

    got = stream(engine, rec.id, child_id)
    seq = [(o["type"], o.get("subtype"), o.get("parent_tool_use_id")) for o in got if o["type"] != "result"]
    sub = ("user", None, CALL.id)
    assert seq == [("assistant", None, None), ("assistant", None, None), ("system", "task_started", None), sub,
                   ("system", "task_progress", None), ("assistant", None, CALL.id),
                   ("system", "task_progress", None), ("assistant", None, CALL.id), sub, sub,
                   ("system", "task_updated", None), ("system", "task_notification", None),
                   ("user", None, None), ("assistant", None, None)]
    started, first, second, updated, note = [o for o in got if o["type"] == "system"]
    assert list(started) == ["type", "subtype", "task_id", "run_id", "tool_use_id", "description", "subagent_type",
                             "is_backgrounded", "spawn_depth", "task_type", "prompt", "uuid", "session_id"]
    assert (started["task_id"], started["is_backgrounded"], started["prompt"]) == (child_id, False, "child job")
    assert list(first) == ["type", "subtype", "task_id", "run_id", "tool_use_id", "description", "subagent_type",
                           "usage", "last_tool_name", "uuid", "session_id"]
    assert (first["description"], first["last_tool_name"], first["usage"]["tool_uses"]) == ("Running ls", "Bash", 1)
    assert (second["description"], second["last_tool_name"], second["usage"]["tool_uses"]) == (
        "Reading notes.md", "Read", 2)
    replies = [e for e in engine.store.entries(child_id) if isinstance(e, AssistantEntry)]
    u = replies[0].message.usage
    assert first["usage"]["total_tokens"] == (u.input_tokens + u.output_tokens + u.cache_read_input_tokens
                                              + u.cache_creation_input_tokens) > 0
    assert updated["patch"]["status"] == "completed" and set(updated["patch"]) == {"status", "end_time"}
    assert list(note) == ["type", "subtype", "task_id", "run_id", "tool_use_id", "status", "output_file", "summary",
                          "usage", "uuid", "session_id"]  # (no summary_is_report)
    assert note["output_file"] == ""  # (no Claude Code copy here; the Agent SDK requires the key)
    assert (note["status"], note["summary"], note["usage"]["tool_uses"]) == ("completed", "one two three", 2)
    assert {o["session_id"] for o in got} == {rec.id}
    shown = io.StringIO()  # a terminal shows the Agent call and its result, not the notices for stream-json
    r = Renderer(show_prompts=True, show_requests=False)
    r.console = Console(file=shown, width=200, color_system=None)
    for e in engine.store.entries(rec.id):
        r.entry(e)
    assert "⏺ Agent(count)" in shown.getvalue() and "task:" not in shown.getvalue()
    (result,) = [o for o in got if o["type"] == "result"]  # Claude Code's running totals, counted once
    assert result["subagent_stats"] == {
        "spawned": 1, "requested": {"background": 0, "foreground": 0, "unset": 1}, "started_in_background": 0,
        "max_depth": 1, "spawned_by_subagents": 0, "completed": 1, "failed": 0,
        "killed": {"parent": 0, "user": 0, "system": 0}, "refused": {"depth_limit": 0, "concurrency_limit": 0,
                                                                     "budget": 0}, "by_type": {"general-purpose": 1}}


def test_activities_are_claude_codes_words():
    long = "echo " + "1234567890" * 7
    assert activity("Bash", {"command": long}, "/w", "d") == "Running echo 12345678901234567890123456789012345678901234\u2026"
    assert activity("Bash", {"command": "ls", "description": "List them"}, "/w", "d") == "Running List them"
    assert activity("Read", {"file_path": "/w/a.txt"}, "/w", "d") == "Reading a.txt"
    assert activity("Read", {"file_path": "/elsewhere/a.txt"}, "/w", "d") == "Reading /elsewhere/a.txt"
    assert activity("Glob", {"pattern": "*.txt"}, "/w", "d") == "Finding *.txt"
    assert activity("Edit", {}, "/w", "d") == "Editing file"
    assert activity("mcp__srv__add", {"a": 1}, "/w", "count files") == "count files"
