"""Export to and import from Claude Code's transcript JSONL (fakeredis, steps run inline)."""

from __future__ import annotations

import json

import pytest

from demo.scripted import DEMO_FILES, DEMO_PROMPT, Turn
from statemachines import State
from tests.inline import Inline, scripted_model
from workflows.context.assemble import api_messages
from workflows.context.export import export_entries, export_jsonl
from workflows.context.transcript import import_entries, import_session
from workflows.engine import INTERRUPTED, STOPPED_WHILE_RUNNING, Engine
from workflows.models import (
    AssistantEntry,
    PermissionDecisionEntry,
    PermissionRequestEntry,
    ResultEntry,
    StateEntry,
    ToolResultBlock,
    UserEntry,
)
from workflows.models.options import SessionOptions
from workflows.store.redis_store import Store

CLAUDE_FIELDS = ("type", "uuid", "parentUuid", "sessionId", "timestamp", "cwd", "gitBranch", "version",
                 "isSidechain", "userType")


def demo_session(engine, ws, mode="bypassPermissions"):
    """The demo run to the end; in default mode Edit is approved and Bash denied with a message."""
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode=mode))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, DEMO_PROMPT))
    inline.drain()
    while (cur := engine.store.get_session(rec.id)).state is State.AWAITING_PERMISSION:
        (req,) = cur.pending_requests()
        approve = req.tool != "Bash"
        inline.dispatch(engine.decide_request(rec.id, req.id, approve, message=None if approve else "not now"))
        inline.drain()
    assert engine.store.get_session(rec.id).state is State.IDLE
    return rec.id


def exported(engine, sid) -> list[str]:
    return list(export_jsonl(engine.store.entries(sid), engine.store.get_session(sid)))


def plain(messages: list[dict]) -> list[dict]:
    """Request messages without prompt-caching marks (where they go is not this module's business)."""
    return [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
            for m in messages]


def without_session(entries) -> list[dict]:
    out = []
    for e in entries:
        d = e.dump()
        d.pop("sessionId")
        out.append(d)
    return out


# --------------------------------------------------------------------------- export


def test_every_exported_line_has_claude_codes_fields(engine, ws):
    sid = demo_session(engine, ws)
    entries = engine.store.entries(sid)
    rec = engine.store.get_session(sid)
    lines = exported(engine, sid)
    assert len(lines) == len(entries)
    prev = None
    for line, e in zip(lines, entries):
        assert line.endswith("\n") and "\n" not in line[:-1]
        obj = json.loads(line)
        missing = [f for f in CLAUDE_FIELDS if f not in obj]
        assert not missing, (missing, obj)
        assert obj["uuid"] == e.uuid and obj["sessionId"] == sid and obj["timestamp"] == e.timestamp
        assert obj["parentUuid"] == prev
        assert obj["cwd"] == rec.workspace
        assert isinstance(obj["gitBranch"], str)
        assert obj["version"].startswith("mainsail")
        assert obj["isSidechain"] is False and obj["userType"] == "external"
        if isinstance(e, UserEntry):
            assert obj["type"] == "user"
            assert obj["message"]["role"] == "user" and "content" in obj["message"]
        elif isinstance(e, AssistantEntry):
            assert obj["type"] == "assistant"
            msg = obj["message"]
            assert msg["type"] == "message" and msg["role"] == "assistant"
            assert msg["model"] == "scripted:demo" and msg["id"].startswith("msg_")
            assert msg["stop_reason"] in ("tool_use", "end_turn")
            assert set(msg["usage"]) == {"input_tokens", "output_tokens", "cache_creation_input_tokens",
                                         "cache_read_input_tokens"}
            assert isinstance(msg["content"], list) and msg["content"]
        else:
            assert obj["type"] == "system"
            assert obj["subtype"] == e.type
            assert isinstance(obj["content"], str) and obj["content"]
            assert obj["mainsail"] == e.dump()
        prev = e.uuid
    kinds = [json.loads(ln)["type"] for ln in lines]
    assert kinds[0] == "user" and "assistant" in kinds and "system" in kinds
    result_line = [json.loads(ln) for ln in lines if json.loads(ln).get("subtype") == "result"][-1]
    assert result_line["subtype"] == "result" and result_line["content"].startswith("success: Fixed")


def test_export_entries_yields_plain_dicts(engine, ws):
    sid = demo_session(engine, ws)
    for d in export_entries(engine.store.entries(sid), engine.store.get_session(sid)):
        assert isinstance(d, dict)
        json.dumps(d)


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("mode", ["bypassPermissions", "default"])
def test_export_then_import_round_trips_exactly(engine, ws, mode):
    sid = demo_session(engine, ws, mode)
    original = engine.store.entries(sid)
    if mode == "default":  # every kind of entry is in it
        kinds = {type(e) for e in original}
        assert {PermissionRequestEntry, PermissionDecisionEntry, StateEntry, ResultEntry} <= kinds
    rec = import_session(engine.store, exported(engine, sid))
    assert rec.id != sid
    assert engine.store.get_session(rec.id) == rec
    copy = engine.store.entries(rec.id)
    assert all(e.session_id == rec.id for e in copy)
    assert [e.uuid for e in copy] == [e.uuid for e in original]
    assert without_session(copy) == without_session(original)
    assert api_messages(copy) == api_messages(original)
    assert rec.state is State.IDLE and rec.epoch == 0
    assert rec.workspace == engine.store.get_session(sid).workspace
    assert rec.last_uuid == original[-1].uuid
    assert rec.model == "scripted:demo"
    assert rec.title == engine.store.get_session(sid).title
    assert rec.turns == 4
    assert rec.usage == engine.store.get_session(sid).usage
    assert engine.store.entries(sid) == original, "the original was touched"


def test_a_cancelled_session_round_trips(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model="scripted:demo", permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, DEMO_PROMPT))
    inline.run(2)  # the model call and the Read: the Edit's model call is next
    inline.run(1)  # the Edit is dispatched, not run
    assert engine.cancel(rec.id)
    original = engine.store.entries(rec.id)
    assert [e.message.blocks()[0].text for e in original
            if isinstance(e, UserEntry) and e.origin == "tool_result"][-1] == STOPPED_WHILE_RUNNING
    assert [e.message.text() for e in original if isinstance(e, UserEntry) and e.origin == "interrupt"] == [
        INTERRUPTED]
    assert isinstance(original[-1], ResultEntry) and original[-1].subtype == "cancelled"
    new = import_session(engine.store, exported(engine, rec.id))
    assert without_session(engine.store.entries(new.id)) == without_session(original)


def test_import_into_another_workspace(engine, ws, tmp_path):
    sid = demo_session(engine, ws)
    other = tmp_path / "other"
    other.mkdir()
    rec = import_session(engine.store, exported(engine, sid), workspace=str(other))
    assert rec.workspace == str(other.resolve())


def test_a_missing_transcript_directory_says_to_pass_cwd(engine, ws, tmp_path):
    sid = demo_session(engine, ws)
    lines = [ln.replace(str(ws), str(tmp_path / "gone")) for ln in exported(engine, sid)]
    before = engine.store.session_ids()
    with pytest.raises(ValueError) as exc:
        import_session(engine.store, lines)
    assert str(tmp_path / "gone") in str(exc.value) and "--cwd" in str(exc.value)
    assert engine.store.session_ids() == before, "a failed import left a session behind"


# --------------------------------------------------------------------------- Claude Code's own files


def claude_code_file(cwd: str) -> list[str]:
    """A Claude Code transcript as Claude Code writes it: a summary line, a snapshot line, a streamed
    assistant message split into one line per block, a rewound branch, and a dangling tool_use."""
    common = {"isSidechain": False, "userType": "external", "cwd": cwd, "sessionId": "cc-session",
              "version": "1.0.98", "gitBranch": "main"}

    def line(kind, uuid, parent, message, **extra):
        return json.dumps({"parentUuid": parent, **common, "type": kind, "message": message, "uuid": uuid,
                           "timestamp": f"2025-09-01T10:00:{len(uuid):02d}.000Z", **extra})

    usage = {"input_tokens": 50, "output_tokens": 5, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 10, "service_tier": "standard"}

    def assistant(mid, content, stop):
        return {"id": mid, "type": "message", "role": "assistant", "model": "claude-opus-4-1-20250805",
                "content": content, "stop_reason": stop, "stop_sequence": None, "usage": usage}

    return [
        json.dumps({"type": "summary", "summary": "Fixing calc.py", "leafUuid": "u7"}),
        line("user", "u1", None, {"role": "user", "content": "Why does add() fail?"}),
        json.dumps({"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}}),
        line("assistant", "u2", "u1", assistant("msg_A", [{"type": "text", "text": "Let me look."}], None),
             requestId="req_1"),
        line("assistant", "u3", "u2", assistant("msg_A", [{"type": "tool_use", "id": "toolu_A", "name": "Read",
                                                           "input": {"file_path": "calc.py"}}], "tool_use"),
             requestId="req_1"),
        line("user", "u4", "u3", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_A",
             "content": [{"type": "text", "text": "def add(a, b):"}, {"type": "image", "source": {}}]}]},
             toolUseResult={"file": {"filePath": "calc.py"}}),
        # a branch the user rewound away from: not part of the conversation
        line("assistant", "x1", "u4", assistant("msg_X", [{"type": "text", "text": "ABANDONED"}], "end_turn")),
        json.dumps({"parentUuid": "u4", **common, "type": "system", "subtype": "informational",
                    "content": "a note", "uuid": "s1", "timestamp": "2025-09-01T10:00:30.000Z"}),
        line("assistant", "u6", "s1", assistant("msg_B", [{"type": "text", "text": "It subtracts. Running it."},
                                                          {"type": "tool_use", "id": "toolu_B", "name": "Bash",
                                                           "input": {"command": "python3 calc.py"}}],
                                                 "tool_use")),
        json.dumps({"type": "summary", "summary": "Fixing calc.py", "leafUuid": "u6"}),
    ]


def test_importing_a_claude_code_transcript(engine, ws):
    entries, meta = import_entries(claude_code_file(str(ws)))
    assert meta == {"cwd": str(ws), "gitBranch": "main", "model": "claude-opus-4-1-20250805",
                    "source_session_id": "cc-session"}
    kinds = [(type(e).__name__, getattr(e, "origin", None)) for e in entries]
    assert kinds == [("UserEntry", "prompt"), ("AssistantEntry", None), ("UserEntry", "tool_result"),
                     ("AssistantEntry", None), ("UserEntry", "tool_result")]
    prompt, first, result, second, interrupted = entries
    assert prompt.message.content == "Why does add() fail?" and prompt.uuid == "u1" and prompt.parent_uuid is None
    # the two lines of the streamed message msg_A are one assistant message
    assert first.message.id == "msg_A" and [b.type for b in first.message.blocks()] == ["text", "tool_use"]
    assert first.message.usage.cache_read_input_tokens == 10 and first.message.stop_reason == "tool_use"
    assert first.uuid == "u3" and first.parent_uuid == "u1"
    assert result.message.blocks()[0].text == "def add(a, b):\n[image omitted on import]"
    assert result.parent_uuid == "u3"
    assert second.uuid == "u6" and second.parent_uuid == "u4", "the system line between is skipped"
    assert "ABANDONED" not in str([e.dump() for e in entries])
    (block,) = interrupted.message.blocks()
    assert isinstance(block, ToolResultBlock)
    assert block.tool_use_id == "toolu_B" and block.is_error and block.text == INTERRUPTED
    assert interrupted.parent_uuid == "u6"

    rec = import_session(engine.store, claude_code_file(str(ws)))
    assert rec.model == "claude-opus-4-1-20250805" and rec.title == "Why does add() fail?"
    stored = engine.store.entries(rec.id)
    assert rec.workspace == str(ws.resolve()) and rec.last_uuid == stored[-1].uuid
    assert [e.uuid for e in stored[:-1]] == [e.uuid for e in entries[:-1]]
    assert stored[-1].message == interrupted.message
    msgs = api_messages(stored)
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]


def test_a_tool_result_answering_nothing_is_dropped():
    lines = [json.dumps({"type": "user", "uuid": "a", "parentUuid": None, "sessionId": "s", "cwd": "/",
                         "message": {"role": "user", "content": [
                             {"type": "tool_result", "tool_use_id": "toolu_gone", "content": "x"},
                             {"type": "text", "text": "continue"}]}})]
    (entry,), _ = import_entries(lines)
    assert [b.type for b in entry.message.blocks()] == ["text"]


def test_invalid_json_names_the_line():
    lines = claude_code_file("/tmp")
    lines.insert(3, '{"type": "user", "message": ')
    with pytest.raises(ValueError, match=r"^Line 4 is not valid JSON"):
        import_entries(lines)


def test_a_line_that_is_not_an_entry_names_the_line():
    lines = claude_code_file("/tmp")[:2] + [json.dumps({"type": "assistant", "uuid": "z", "message": "hi"})]
    with pytest.raises(ValueError, match=r"^Line 3 is not a transcript entry"):
        import_entries(lines)


def test_a_file_without_messages_is_refused():
    lines = [json.dumps({"type": "summary", "summary": "x", "leafUuid": "u"}), "",
             json.dumps({"type": "file-history-snapshot", "messageId": "u", "snapshot": {}})]
    with pytest.raises(ValueError, match="no user or assistant messages"):
        import_entries(lines)
    with pytest.raises(ValueError, match="no user or assistant messages"):
        import_entries([])


# --------------------------------------------------------------------------- resuming


def test_an_imported_session_resumes_with_the_imported_messages_first(engine, ws):
    bodies = []

    def turn(body):
        bodies.append(body)
        return Turn(text="Carrying on.")

    model = scripted_model(turn)
    rec = import_session(engine.store, claude_code_file(str(ws)), model=model)
    imported = plain(api_messages(engine.store.entries(rec.id)))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "Now fix it."))
    inline.drain()

    (body,) = bodies
    sent = plain(body["messages"])
    # the imported messages come first; the new prompt joins their last (user) message
    assert sent[:-1] == imported[:-1]
    assert imported[-1]["role"] == "user"
    assert sent[-1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_B", "content": INTERRUPTED, "is_error": True},
        {"type": "text", "text": "Now fix it."}]}
    entries = engine.store.entries(rec.id)
    assert isinstance(entries[-1], ResultEntry) and entries[-1].result == "Carrying on."
    assert engine.store.get_session(rec.id).state is State.IDLE
    for prev, cur in zip(entries, entries[1:]):
        assert cur.parent_uuid == prev.uuid


def test_a_round_tripped_demo_session_resumes(engine, ws):
    sid = demo_session(engine, ws)
    bodies = []
    model = scripted_model(lambda body: bodies.append(body) or Turn(text="More."))
    rec = import_session(engine.store, exported(engine, sid), model=model)
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "And again?"))
    inline.drain()
    (body,) = bodies
    sent = plain(body["messages"])
    assert sent[:-1] == plain(api_messages(engine.store.entries(sid)))
    assert sent[-1] == {"role": "user", "content": [{"type": "text", "text": "And again?"}]}
