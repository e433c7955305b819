"""Valid text at the store boundary (workflows/models/valid_text.py) and reads that meet a bad entry
(workflows/store/entry_read.py): a lone surrogate is repaired and noted, never a failed step; one entry that
cannot be read is a marker, never an unreadable session."""

from __future__ import annotations

import io
import json

from rich.console import Console

from cli.render import Renderer
from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, api_of, scripted_model
from workflows.context.assemble import build_request
from workflows.context.export import export_jsonl
from workflows.hooks.prompt_entries import is_entry_of_prompt, prompt_digest
from workflows.model.request_json import Block, body
from workflows.models import AssistantEntry, Message, ResultEntry, SystemEntry, UserEntry
from workflows.models.options import SessionOptions
from workflows.models.valid_text import MAX_PLACES, ValidJson, note, repair, valid_str
from workflows.store import keys
from workflows.store.entry_read import read_entry

BAD = "\udc80"


def test_repair_replaces_each_lone_surrogate_and_names_its_place():
    value = {"a": "x\ud800y\udfff", "b": [1, "ok", {"c": BAD}], "k" + BAD: "v", "n": None}
    fixed, places = repair(value)
    assert fixed == {"a": "x\ufffdy\ufffd", "b": [1, "ok", {"c": "\ufffd"}], "k\ufffd": "v", "n": None}
    assert places == ["a", "b.2.c", "k\ufffd{key}"]
    json.dumps(fixed, ensure_ascii=False).encode("utf-8")  # valid UTF-8
    same = {"a": "é ü \u2028", "b": [1.5]}
    assert repair(same) == (same, [])
    assert valid_str("a\udcffb") == "a\ufffdb" and valid_str("é") == "é"


def test_a_long_note_names_the_first_places_and_how_many_more():
    places = [f"p{i}" for i in range(MAX_PLACES + 5)]
    assert note(places) == [*places[:MAX_PLACES], "... and 5 more"]


def test_a_stored_models_json_is_repaired_not_an_exception():
    class Thing(ValidJson):
        name: str
        data: dict

    thing = Thing(name="n" + BAD, data={"x": [BAD]})
    text = thing.model_dump_json()
    assert Thing.model_validate_json(text) == Thing(name="n\ufffd", data={"x": ["\ufffd"]})
    assert json.loads(Thing(name="n" + BAD, data={}).model_dump_json(indent=2)) == {"name": "n\ufffd", "data": {}}
    assert Thing(name="plain", data={}).model_dump_json() == '{"name":"plain","data":{}}'


def test_a_request_body_can_always_be_built():
    request = {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "a" + BAD}]},
                                          {"role": "assistant", "content": [Block(type="text", text=BAD)]}]}
    sent = json.loads(body(request).decode("utf-8"))
    assert sent["messages"][0]["content"][0]["text"] == "a\ufffd"
    assert sent["messages"][1]["content"][0]["text"] == "\ufffd"


def model_with_surrogates() -> str:
    return scripted_model(Script(turns=[
        Turn(text=f"Writing {BAD} now.", tool_uses=[
            ToolUse(name="Write", input={"file_path": "out.txt", "content": f"caf{BAD}"}),
            ToolUse(name="Read", input={"file_path": f"in{BAD}.txt"}),
            ToolUse(name="Bash", input={"command": f"echo x{BAD}y"})]),
        Turn(text=f"Done {BAD}."),
        Turn(text="Second answer."),
    ]))


def test_a_session_whose_model_sends_lone_surrogates_finishes_and_reads_back(engine, ws):
    model = model_with_surrogates()
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    entries = engine.store.entries(rec.id)
    (result,) = [e for e in entries if isinstance(e, ResultEntry)]
    assert result.subtype == "success" and result.result == "Done \ufffd."
    first = next(e for e in entries if isinstance(e, AssistantEntry))
    assert first.repaired == ["message.content.0.text", "message.content.1.input.content",
                              "message.content.2.input.file_path", "message.content.3.input.command"]
    results = [e.message.blocks()[0] for e in entries if isinstance(e, UserEntry) and e.origin == "tool_result"]
    assert len(results) == 3 and all(r.is_error and "lone surrogate" in r.text for r in results)
    # The next call was sent the repaired conversation; a message after it runs.
    assert "caf\ufffd" in json.dumps(api_of(model).requests[1]["messages"], ensure_ascii=False)
    inline.dispatch(engine.submit(rec.id, "again"))
    inline.drain()
    assert engine.store.entries(rec.id)[-1].type in ("result", "state", "system")
    assert [e.result for e in engine.store.entries(rec.id) if isinstance(e, ResultEntry)][-1] == "Second answer."


def test_a_session_with_an_unreadable_entry_shows_exports_and_runs_on(engine, ws):
    model = scripted_model(Script(turns=[Turn(text="First answer."), Turn(text="Second answer.")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "one"))
    inline.drain()
    bad_id = engine.store.r.xadd(keys.log(rec.id), {"entry": b'{"type":"assistant","message":\xff}'}).decode()
    inline.dispatch(engine.submit(rec.id, "two"))
    inline.drain()
    entries = engine.store.entries(rec.id)
    (marker,) = [e for e in entries if isinstance(e, SystemEntry) and e.subtype == "unreadable"]
    assert marker.content.startswith(f"Entry {bad_id} could not be read: ")
    assert [e.result for e in entries if isinstance(e, ResultEntry)] == ["First answer.", "Second answer."]
    # The model was not sent the marker.
    assert "could not be read" not in json.dumps(api_of(model).requests[-1])
    assert "could not be read" not in json.dumps(build_request(engine.store.get_session(rec.id), entries, 100))
    lines = [json.loads(line) for line in export_jsonl(entries, engine.store.get_session(rec.id))]
    assert any(line.get("subtype") == "system" and line["level"] == "warning"
               and "could not be read" in line["content"] for line in lines)
    buf = io.StringIO()
    r = Renderer(Console(file=buf, width=200, color_system=None))
    for e in entries:
        r.entry(e)
    assert f"unreadable: Entry {bad_id} could not be read" in buf.getvalue()


def test_read_entry_names_the_entry_and_why_never_its_content():
    marker = read_entry("s", b'{"type":"system","sessionId":"s","content":"secret \xff"}', "12-0", 1)
    assert marker.subtype == "unreadable" and marker.session_id == "s"
    assert marker.content.startswith("Entry 12-0 (part 2) could not be read: Invalid JSON")
    assert "secret" not in marker.content
    assert read_entry("s", "{}", "1700000000123-0").timestamp == "2023-11-14T22:13:20.123Z"  # when it was written
    assert read_entry("s", "{}", "12-0").uuid == read_entry("s", "[]", "12-0").uuid  # the same place, the same id
    assert "sessionId: Field required" in read_entry("s", '{"type":"system","content":"x"}', "1-0").content


def test_a_run_is_found_by_its_prompt_as_sent_though_it_was_stored_repaired():
    stored = UserEntry(session_id="s", message=Message(role="user", content="caf\ufffd"))
    assert is_entry_of_prompt(stored, "caf" + BAD)
    assert prompt_digest("caf" + BAD) == prompt_digest("caf\ufffd")


def _pairs_hold(messages: list[dict]) -> bool:
    """The Messages API's rule: each assistant message's tool calls are answered, each by id, in the next
    (user) message, and a tool result answers a call of the message before it."""
    for i, m in enumerate(messages):
        blocks = m["content"] if isinstance(m["content"], (list, tuple)) else []
        if m["role"] == "assistant":
            calls = {b["id"] for b in blocks if b["type"] == "tool_use"}
            nxt = messages[i + 1]["content"] if i + 1 < len(messages) else []
            if calls - {b.get("tool_use_id") for b in nxt if isinstance(b, dict)}:
                return False
        else:
            prev = messages[i - 1]["content"] if i else []
            calls = {b["id"] for b in prev if isinstance(b, dict) and b.get("type") == "tool_use"}
            if {b["tool_use_id"] for b in blocks if b["type"] == "tool_result"} - calls:
                return False
    return True


def test_a_marker_for_a_tool_call_or_its_result_leaves_a_conversation_the_api_accepts(engine, ws):
    (ws / "a.txt").write_text("hello\n")
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="Read", input={"file_path": "a.txt"})]),
                                         Turn(text="Read it.")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "read a.txt"))
    inline.drain()
    rec = engine.store.get_session(rec.id)

    def transcript() -> list:  # new objects each time, as a new process reads them (the request cache
        # holds per entry object, and a transcript's entries never change)
        return engine.store.entries(rec.id) + [UserEntry(session_id=rec.id, message=Message(role="user",
                                                                                              content="more"))]

    entries = transcript()
    call = next(i for i, e in enumerate(entries) if isinstance(e, AssistantEntry) and e.message.tool_uses())
    result = next(i for i, e in enumerate(entries) if isinstance(e, UserEntry) and e.origin == "tool_result")
    assert _pairs_hold(build_request(rec, entries, 1000)["messages"])
    for lost in (call, result):
        marked = transcript()
        marked[lost] = read_entry(rec.id, b"\xff", f"{lost}-0")
        messages = json.loads(body(build_request(rec, marked, 1000)))["messages"]
        assert _pairs_hold(messages), messages
        assert "could not be read" in json.dumps(messages)  # the stand-in says so; the marker itself is not sent
        assert f"{lost}-0" not in json.dumps(messages)
