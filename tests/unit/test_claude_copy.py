"""Claude Code's copy of a transcript (workflows/context/claude_copy.py, claude_lines.py): where it goes, the lines,
and a writer that writes each entry once whatever calls it, in what order, and how often."""

from __future__ import annotations

import json
import logging
import os

import pytest

from demo.scripted import ToolUse, Turn
from tests.fakeapi import assistant_turns, first_prompt
from tests.inline import Inline, scripted_model
from workflows.context.claude_copy import ClaudeCopy, child_file, host, project_key, projects_dir, session_file, write
from workflows.context.claude_lines import block_uuid, claude_lines
from workflows.models import (
    AssistantEntry,
    AssistantMessage,
    CompactBoundaryEntry,
    SessionRecord,
    StateEntry,
    SummaryEntry,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserEntry,
)
from workflows.models.options import SessionOptions

SID = "0b7c8f8e-1d7e-4c55-9e38-8f4a0a8f2a11"


def rec(tmp_path, **kw) -> SessionRecord:
    return SessionRecord(id=SID, model="m", workspace="/ws", claude_transcript=str(tmp_path / "p" / f"{SID}.jsonl"),
                         claude_host=host(), **kw)


def chained(*entries):
    """Entries as a commit chains them: each after the one before."""
    parent = None
    for e in entries:
        e.parent_uuid, e.cwd, parent = parent, "/ws", e.uuid
    return list(entries)


def conversation():
    call = ToolUseBlock(id="toolu_1", name="Bash", input={"command": "ls"})
    return chained(
        UserEntry(session_id=SID, message={"role": "user", "content": "list it"}),
        StateEntry(session_id=SID, trigger="submit", source="idle", dest="querying"),
        AssistantEntry(session_id=SID, message=AssistantMessage(id="msg_1", content=[TextBlock(text="Listing."), call],
                                                                stop_reason="tool_use")),
        UserEntry(session_id=SID, origin="tool_result", message={"role": "user", "content": [
            ToolResultBlock(tool_use_id="toolu_1", content="a.py", is_error=False)]}),
        AssistantEntry(session_id=SID, message=AssistantMessage(id="msg_2", content=[TextBlock(text="Done.")],
                                                                stop_reason="end_turn")),
    )


def read(path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def test_the_file_is_where_claude_code_and_the_sdk_look(tmp_path):
    sessions = pytest.importorskip("claude_agent_sdk._internal.sessions")
    for ws in ("/tmp/my.project/sub_dir", "/x/" + "long-folder." * 30):
        assert project_key(ws) == sessions._sanitize_path(ws)
    assert projects_dir("/home/u", {}) == projects_dir("/home/u", {"CLAUDE_CONFIG_DIR": ""}) == \
        type(projects_dir("/", {}))("/home/u/.claude/projects")
    assert str(projects_dir("/home/u", {"CLAUDE_CONFIG_DIR": "/cfg"})) == "/cfg/projects"
    main = session_file("/home/u", {}, "/tmp/my.project", SID)
    assert main == f"/home/u/.claude/projects/-tmp-my-project/{SID}.jsonl"
    kid = child_file(main, "kid")
    assert kid == f"/home/u/.claude/projects/-tmp-my-project/{SID}/subagents/agent-kid.jsonl"
    assert child_file(kid, "grandkid") == kid.replace("agent-kid", "agent-grandkid")


def test_an_assistant_message_is_a_line_per_block_chained_and_the_last_carries_its_uuid(tmp_path):
    entries = conversation()
    lines = list(claude_lines(entries, rec(tmp_path)))
    assert [(ln["type"], ln.get("subtype")) for ln in lines] == [
        ("user", None), ("system", "state"), ("assistant", None), ("assistant", None), ("user", None),
        ("assistant", None)]
    text, call = lines[2], lines[3]
    reply = entries[2]
    assert [b["type"] for b in text["message"]["content"]] == ["text"]
    assert [b["type"] for b in call["message"]["content"]] == ["tool_use"]
    assert text["message"]["id"] == call["message"]["id"] == "msg_1"
    assert text["parentUuid"] == reply.parent_uuid and text["uuid"] == block_uuid(reply.uuid, 0)
    assert call["parentUuid"] == text["uuid"] and call["uuid"] == reply.uuid
    assert "mainsail" not in text and call["mainsail"]["cost_usd"] == 0.0  # the entry's own fields: once
    assert lines[4]["toolUseResult"] == "a.py" and lines[4]["parentUuid"] == reply.uuid
    assert all(ln["entrypoint"] == "mainsail" and ln["sessionId"] == SID and ln["cwd"] == "/ws" for ln in lines)


def test_a_tool_results_structured_form_is_its_tool_use_result_as_in_stream_json(tmp_path):
    entries = conversation()
    structured = {"stdout": "a.py", "stderr": "", "interrupted": False, "isImage": False}
    entries[3].tool_use_result = structured
    lines = list(claude_lines(entries, rec(tmp_path)))
    assert lines[4]["toolUseResult"] == structured


def test_a_compaction_starts_a_new_chain_with_the_summary_the_model_sees(tmp_path):
    before = conversation()
    boundary, summary = CompactBoundaryEntry(session_id=SID, pre_tokens=1234), SummaryEntry(session_id=SID,
                                                                                          summary="They listed.")
    entries = chained(*before, boundary, summary)
    *_, b, s = claude_lines(entries, rec(tmp_path))
    assert b["type"] == "system" and b["subtype"] == "compact_boundary" and b["parentUuid"] is None
    assert b["logicalParentUuid"] == before[-1].uuid and b["compactMetadata"] == {"trigger": "auto", "preTokens": 1234}
    assert s["type"] == "user" and s["isCompactSummary"] and s["parentUuid"] == boundary.uuid
    assert "They listed." in s["message"]["content"] and "subtype" not in s


def test_writing_is_idempotent_in_any_batches(tmp_path):
    entries, r = conversation(), rec(tmp_path)
    path = r.claude_transcript
    assert write(path, r, entries, lambda: entries) == 5
    once = open(path).read()
    assert write(path, r, entries, lambda: entries) == 0
    assert open(path).read() == once, "writing twice gives the same file"
    other = str(tmp_path / "q" / "b.jsonl")
    for i in range(len(entries)):  # one commit at a time, each written twice (a re-sent commit)
        write(other, r, entries[i:i + 1], lambda: entries)
        write(other, r, entries[i:i + 1], lambda: entries)
    assert open(other).read() == once
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"


def test_a_gap_is_filled_from_the_whole_stream_in_order(tmp_path):
    entries, r = conversation(), rec(tmp_path)
    path = r.claude_transcript
    write(path, r, entries[:1], lambda: entries)
    # entries 1..3 were committed by a process that wrote nothing (a worker on another machine)
    assert write(path, r, entries[4:], lambda: entries) == 4
    assert [ln["uuid"] for ln in read(path) if ln["type"] != "assistant" or ln["uuid"] in
            {e.uuid for e in entries}] == [e.uuid for e in entries]


def test_lines_claude_code_appended_and_a_torn_line_are_left_alone(tmp_path):
    entries, r = conversation(), rec(tmp_path)
    path = r.claude_transcript
    write(path, r, entries[:3], lambda: entries)
    theirs = {"type": "user", "uuid": "c0de0000-0000-4000-8000-000000000000", "parentUuid": entries[2].uuid,
              "message": {"role": "user", "content": "claude --resume"}}
    with open(path, "a") as f:
        f.write(json.dumps(theirs) + "\n" + '{"type":"assistant","uuid":"tor')  # a writer died mid-line
    write(path, r, entries[3:], lambda: entries)
    raw = open(path).read().splitlines()
    assert json.loads(raw[4]) == theirs and raw[5] == '{"type":"assistant","uuid":"tor'
    assert [json.loads(x)["uuid"] for x in raw[6:]] == [e.uuid for e in entries[3:]]


def test_the_hook_writes_only_on_the_recorded_machine_and_never_raises(tmp_path, caplog):
    entries = conversation()
    copy = ClaudeCopy(lambda sid: entries)
    copy(rec(tmp_path).model_copy(update={"claude_host": "another-machine"}), entries)
    assert not (tmp_path / "p").exists()
    (tmp_path / "blocked").write_text("a file, not a folder")
    bad = rec(tmp_path).model_copy(update={"claude_transcript": str(tmp_path / "blocked" / "x.jsonl")})
    with caplog.at_level(logging.WARNING):
        copy(bad, entries)
        copy(bad, entries)
    warned = [r.getMessage() for r in caplog.records if "Claude Code's copy" in r.getMessage()]
    assert len(warned) == 1 and "mainsail export" in warned[0]


def family(body: dict) -> Turn:
    if first_prompt(body).startswith("child job"):
        return Turn(text="child answer")
    if assistant_turns(body) == 0:
        return Turn(text="Delegating.", tool_uses=[ToolUse(id="toolu_t", name="Task", input={
            "description": "job", "prompt": "child job", "subagent_type": "general-purpose"})])
    return Turn(text="all done")


def test_every_commit_of_a_session_and_its_sub_agent_lands_in_its_copy(engine, ws, tmp_path):
    model = scripted_model(family)
    rec_ = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions",
                                                         no_memory=True), claude_projects=str(tmp_path / "projects"))
    assert rec_.claude_transcript == str(tmp_path / "projects" / project_key(str(ws.resolve())) / f"{rec_.id}.jsonl")
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec_.id, "split the work"))
    inline.drain()
    lines = read(rec_.claude_transcript)
    stream = engine.store.entries(rec_.id)
    assert {e.uuid for e in stream} <= {ln["uuid"] for ln in lines}
    assert len({ln["uuid"] for ln in lines}) == len(lines)
    texts = [b.get("text") for ln in lines if ln["type"] == "assistant" for b in ln["message"]["content"]]
    assert texts[0] == "Delegating." and texts[-1] == "all done"
    (kid,) = engine.store.get_session(rec_.id).children
    kid_lines = read(engine.store.get_session(kid).claude_transcript)
    assert all(ln["isSidechain"] and ln["agentId"] == kid for ln in kid_lines)
    assert [ln["message"]["content"] for ln in kid_lines if ln["type"] == "user"][0] == "child job"
