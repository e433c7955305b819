"""/rewind: file checkpoints (idempotent under at-least-once execution) and the engine's rewind of the code,
the conversation, or both (fakeredis, steps run inline through the real SDK)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.inline import Inline, api_of, scripted_model
from workflows.context.assemble import api_messages, model_view
from workflows.edits.checkpoints import Checkpoints
from workflows.exceptions import RewindRefused, SessionBusy
from workflows.models import RewindEntry
from workflows.models.options import SessionOptions
from workflows.permissions.rules.paths import WorkArea
from workflows.store import keys
from workflows.store.checkpoints import FileCheckpoints


def script(ws: Path):
    """Prompt "one" writes a.txt; "two" edits it and creates b.txt; anything else is answered in words."""

    def turn(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if any(b.get("type") == "tool_result" for b in last):
            return Turn(text="Done.")
        text = "".join(b.get("text", "") for b in last)
        if text.endswith("one"):
            return Turn(tool_uses=[ToolUse(name="Write", input={"file_path": str(ws / "a.txt"), "content": "v1\n"})])
        if text.endswith("two"):
            return Turn(tool_uses=[
                ToolUse(name="Edit", input={"file_path": str(ws / "a.txt"), "old_string": "v1", "new_string": "v2"}),
                ToolUse(name="Write", input={"file_path": str(ws / "b.txt"), "content": "new\n"})])
        return Turn(text=f"said: {text[-20:]}")

    return turn


class Lines:
    """The interactive loop's line reader, reading scripted lines (None at their end)."""

    tty = False

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)

    def prompt(self, text: str = "> ") -> str | None:
        return self.lines.pop(0) if self.lines else None

    def fileno(self) -> int:
        raise OSError("no terminal")

    def readline(self) -> str:
        return ""


def two_turns(engine, ws):
    model = scripted_model(script(ws))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True))
    inline = Inline(engine)
    for prompt in ("one", "two"):
        inline.dispatch(engine.submit(rec.id, prompt))
        inline.drain()
    assert (ws / "a.txt").read_text() == "v2\n" and (ws / "b.txt").read_text() == "new\n"
    return rec.id, inline, model


def test_a_checkpoint_keeps_the_first_content_per_message_and_path(fake_redis, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "f.txt"
    f.write_text("before")
    cp = Checkpoints(FileCheckpoints(fake_redis, "s1"), "m1", 1024, WorkArea(str(ws)))
    cp.before(f)
    f.write_text("after the first attempt")  # the worker died after writing; the step runs again
    cp.before(f)
    snap = json.loads(fake_redis.hget(keys.file_checkpoints("s1", "m1"), str(f)))
    assert snap["state"] == "file"
    assert fake_redis.get(keys.file_blob("s1", snap["sha"])) == b"before"
    # the next message keeps its own
    Checkpoints(FileCheckpoints(fake_redis, "s1"), "m2", 1024, WorkArea(str(ws))).before(f)
    snap2 = json.loads(fake_redis.hget(keys.file_checkpoints("s1", "m2"), str(f)))
    assert fake_redis.get(keys.file_blob("s1", snap2["sha"])) == b"after the first attempt"
    missing = ws / "new.txt"
    cp.before(missing)
    assert json.loads(fake_redis.hget(keys.file_checkpoints("s1", "m1"), str(missing))) == {"state": "absent"}
    big = ws / "big.bin"
    big.write_bytes(b"x" * 2000)
    cp.before(big)
    assert json.loads(fake_redis.hget(keys.file_checkpoints("s1", "m1"), str(big)))["state"] == "too_large"


def test_rewinding_code_and_conversation_restores_files_and_forgets_the_messages(engine, ws):
    sid, inline, model = two_turns(engine, ws)
    points = engine.rewind_points(sid)
    assert [p.message.text() for p in points] == ["one", "two"]
    done = engine.rewind(sid, points[1].uuid)
    assert (ws / "a.txt").read_text() == "v1\n" and not (ws / "b.txt").exists()
    assert done.entry.restored == [str(ws / "a.txt")] and done.entry.deleted == [str(ws / "b.txt")]
    assert done.entry.prompt == "two"
    texts = json.dumps(api_messages(model_view(engine.store.entries(sid))))
    assert '"one"' in texts and '"two"' not in texts and "v2" not in texts
    inline.dispatch(engine.submit(sid, "three"))
    inline.drain()
    sent = json.dumps(api_of(model).requests[-1]["messages"])
    assert "three" in sent and '"two"' not in sent and "b.txt" not in sent
    rewinds = [e for e in engine.store.entries(sid) if isinstance(e, RewindEntry)]
    assert len(rewinds) == 1 and rewinds[0].parent_uuid == points[1].parent_uuid
    # Rewinding to the first message now: a.txt did not exist before it.
    engine.rewind(sid, engine.rewind_points(sid)[0].uuid)
    assert not (ws / "a.txt").exists()


def test_rewinding_only_the_conversation_leaves_the_files(engine, ws):
    sid, _, _ = two_turns(engine, ws)
    done = engine.rewind(sid, engine.rewind_points(sid)[1].uuid, code=False)
    assert (ws / "a.txt").read_text() == "v2\n" and done.changes == []
    assert [p.message.text() for p in engine.rewind_points(sid)] == ["one"]
    # The code can still go back later: the checkpoints of the message taken back are kept.
    engine.rewind(sid, engine.rewind_points(sid)[0].uuid, conversation=False)
    assert not (ws / "a.txt").exists() and not (ws / "b.txt").exists()
    assert [p.message.text() for p in engine.rewind_points(sid)] == ["one"]


def test_a_file_changed_since_the_last_edit_is_not_overwritten_without_force(engine, ws):
    sid, _, _ = two_turns(engine, ws)
    (ws / "a.txt").write_text("my own change\n")
    to = engine.rewind_points(sid)[1].uuid
    with pytest.raises(RewindRefused, match=r"a\.txt.*--force"):
        engine.rewind(sid, to)
    assert (ws / "a.txt").read_text() == "my own change\n" and (ws / "b.txt").exists()  # nothing changed
    assert len(engine.rewind_points(sid)) == 2
    engine.rewind(sid, to, force=True)
    assert (ws / "a.txt").read_text() == "v1\n"


def test_a_busy_session_or_an_unknown_message_is_refused(engine, ws):
    sid, inline, _ = two_turns(engine, ws)
    to = engine.rewind_points(sid)[0].uuid
    with pytest.raises(RewindRefused, match="not one of the messages"):
        engine.rewind(sid, "nope")
    engine.submit(sid, "three")  # (its steps are not run: the session stays busy)
    with pytest.raises(SessionBusy, match="Cannot rewind"):
        engine.rewind(sid, to)
    assert (ws / "a.txt").exists()


def test_a_file_over_the_cap_is_named_and_left(engine, ws, settings):
    settings.checkpoint_max_bytes = 2
    sid, _, _ = two_turns(engine, ws)
    done = engine.rewind(sid, engine.rewind_points(sid)[1].uuid)
    assert (ws / "a.txt").read_text() == "v2\n" and not (ws / "b.txt").exists()
    assert done.entry.skipped and "over the checkpoint cap" in done.entry.skipped[0]


def test_slash_rewind_picks_a_message_then_what_to_restore(engine, ws, capsys):
    from cli.connect import Runtime
    from cli.interactive import Interactive

    sid, _, _ = two_turns(engine, ws)
    (ws / "a.txt").write_text("changed by hand\n")
    ui = Interactive(Runtime(url="", engine=engine), engine.settings, ws, Lines("/rewind", "2", "1", "y"), sid)
    ui.loop()
    out = capsys.readouterr().out
    assert "  1. " in out and "one  (edits 1 file)" in out and "two  (edits 2 files)" in out
    assert "1. Restore code and conversation" in out
    assert "These files changed since the session last edited them" in out
    assert "Rewound the code and conversation" in out and "Your message was:\ntwo" in out
    assert (ws / "a.txt").read_text() == "v1\n" and not (ws / "b.txt").exists()
    assert [p.message.text() for p in engine.rewind_points(sid)] == ["one"]


def test_slash_rewind_can_be_left_without_a_change(engine, ws, capsys):
    from cli.connect import Runtime
    from cli.interactive import Interactive

    sid, _, _ = two_turns(engine, ws)
    (ws / "a.txt").write_text("changed by hand\n")
    Interactive(Runtime(url="", engine=engine), engine.settings, ws, Lines("/rewind", "2", "3", "n", "/rewind", ""),
                sid).loop()
    out = capsys.readouterr().out
    assert out.count("Nothing was rewound.") == 2
    assert (ws / "a.txt").read_text() == "changed by hand\n" and len(engine.rewind_points(sid)) == 2


def test_a_sub_agents_edits_are_checkpointed_for_its_parents_message(engine, ws):
    from tests.fakeapi import assistant_turns, first_prompt

    def turn(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if first_prompt(body).startswith("child job"):
            if assistant_turns(body):
                return Turn(text="child done")
            return Turn(tool_uses=[ToolUse(name="Write", input={"file_path": str(ws / "c.txt"), "content": "c\n"})])
        if any(b.get("type") == "tool_result" for b in last):
            return Turn(text="Done.")
        return Turn(tool_uses=[ToolUse(id="toolu_t1", name="Task", input={
            "description": "write c", "prompt": "child job", "subagent_type": "general-purpose"})])

    rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(turn), permission_mode="bypassPermissions", no_memory=True))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "delegate"))
    inline.drain()
    assert (ws / "c.txt").read_text() == "c\n"
    (point,) = engine.rewind_points(rec.id)
    done = engine.rewind(rec.id, point.uuid)
    assert done.entry.deleted == [str(ws / "c.txt")] and not (ws / "c.txt").exists()


def test_session_notes_that_covered_a_message_taken_back_are_dropped(engine, ws):
    from workflows.commit import Tx

    sid, _, _ = two_turns(engine, ws)
    entries = engine.store.entries(sid)
    rec = engine.store.get_session(sid)
    rec.memory_covers = entries[-1].uuid  # the notes saw the second turn
    tx = Tx(rec)
    tx.memory_doc = "# Notes\nedited a.txt to v2"
    engine.committer.commit(tx)
    engine.rewind(sid, engine.rewind_points(sid)[1].uuid, code=False)
    rec = engine.store.get_session(sid)
    assert not engine.store.session_memory(sid) and rec.memory_covers is None
    assert rec.context_tokens > 0 and rec.context_added == 0


def test_a_write_run_twice_keeps_the_checkpoint_of_its_first_attempt(engine, ws):
    """At-least-once execution: a Write whose worker died after writing runs again; the file's checkpoint for
    the message is still what was there before the first attempt (absent here), not the first attempt's content."""
    import threading

    from workflows.models import ToolCall
    from workflows.steps.tool import execute_call
    from workflows.tools import get_tool

    sid, _, _ = two_turns(engine, ws)
    rec = engine.store.get_session(sid)
    call = ToolCall(tool_use_id="toolu_retry", name="Write", input={"file_path": str(ws / "z.txt"), "content": "z\n"})
    for _ in range(2):
        execute_call(engine, rec, call, get_tool("Write"), threading.Event(), None)
    assert (ws / "z.txt").read_text() == "z\n"
    snap = json.loads(engine.store.r.hget(keys.file_checkpoints(sid, rec.run_prompt_uuid), str(ws / "z.txt")))
    assert snap == {"state": "absent"}
    done = engine.rewind(sid, rec.run_prompt_uuid, conversation=False)
    assert str(ws / "z.txt") in done.entry.deleted and not (ws / "z.txt").exists()
