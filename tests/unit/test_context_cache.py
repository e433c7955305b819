"""The request is built from cached pieces (entry blocks, system blocks, tool schemas) and is
byte-identical to what the uncached builder sent; no cached piece is ever changed by a request."""

from __future__ import annotations

import copy
import gc
import json

import pytest

from workflows.context import assemble as context
from workflows.context.assemble import (
    CONTINUE,
    SUMMARY_INTRO,
    api_messages,
    build_request,
    model_view,
)
from workflows.memo import ObjectMemo
from workflows.model import request_json
from workflows.models import (
    AssistantEntry,
    AssistantMessage,
    CompactBoundaryEntry,
    Message,
    SessionRecord,
    StateEntry,
    SummaryEntry,
    SystemEntry,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserEntry,
)
from workflows.tools import tool_schemas

SID = "s-ctx"


# --------------------------------------------------------------------------- the uncached builder
# As workflows/context/assemble.py built requests before the caches (kept here as the reference).


def _ref_blocks(content) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks = []
    for b in content:
        d = b.model_dump(mode="json", exclude_none=True)
        if isinstance(b, ToolResultBlock) and not b.is_error:
            d.pop("is_error", None)
        blocks.append(d)
    return blocks


def _ref_model_view(entries: list) -> list:
    last = max((i for i, e in enumerate(entries) if isinstance(e, CompactBoundaryEntry)), default=None)
    if last is None:
        return entries
    boundary = entries[last]
    rest = entries[last + 1:]
    summary = next((e for e in rest if isinstance(e, SummaryEntry)), None)
    if summary is None:
        return rest
    preserved = [e for e in entries[:last] if e.uuid in set(boundary.preserved)] if boundary.preserved else []
    text = SUMMARY_INTRO + summary.summary + ("" if preserved else CONTINUE)
    intro = UserEntry(session_id=summary.session_id, uuid=summary.uuid,
                      message=Message(role="user", content=text), origin="synthetic")
    return [intro, *preserved, *(e for e in rest if e is not summary)]


def _ref_api_messages(entries: list, user_context: str = "") -> list[dict]:
    out: list[dict] = []
    for e in _ref_model_view(entries):
        if isinstance(e, AssistantEntry):
            out.append({"role": "assistant", "content": _ref_blocks(e.message.content)})
        elif isinstance(e, UserEntry):
            blocks = _ref_blocks(e.message.content)
            if out and out[-1]["role"] == "user":
                out[-1]["content"].extend(blocks)
            else:
                out.append({"role": "user", "content": blocks})
    for m in out:
        if m["role"] == "user":
            m["content"].sort(key=lambda b: 0 if b.get("type") == "tool_result" else 1)
    if user_context and out and out[0]["role"] == "user":
        out[0]["content"].insert(0, {"type": "text", "text": user_context})
    return out


def _ref_build_request(rec: SessionRecord, entries: list, max_tokens: int) -> dict:
    from workflows.context.files import system_prompt

    request = {
        "model": rec.sent_model(),
        "max_tokens": max_tokens,
        "system": system_prompt(rec.custom_system_prompt, rec.append_system_prompt, rec.system_context),
        "tools": tool_schemas(context.session_tools(rec)),
        "messages": _ref_api_messages(entries, rec.user_context),
    }
    if request.get("system"):
        request["system"][-1]["cache_control"] = context.CACHE
    if request.get("tools"):
        request["tools"][-1] = {**request["tools"][-1], "cache_control": context.CACHE}
    messages = request.get("messages") or []
    if messages and messages[-1]["content"]:
        messages[-1]["content"][-1]["cache_control"] = context.CACHE
    return request


# --------------------------------------------------------------------------- transcripts


def user(content, origin: str = "prompt", **kw) -> UserEntry:
    return UserEntry(session_id=SID, message=Message(role="user", content=content), origin=origin, **kw)


def assistant(*blocks) -> AssistantEntry:
    return AssistantEntry(session_id=SID, message=AssistantMessage(content=list(blocks), model="m", id="msg_1"))


def result(tid: str, content="ok", is_error: bool = False) -> UserEntry:
    return user([ToolResultBlock(tool_use_id=tid, content=content, is_error=is_error)], origin="tool_result")


def turn(i: int, *, error: bool = False) -> list:
    """An assistant turn with two tool calls, their results (one as a list of text blocks), state changes."""
    a, b = f"t{i}a", f"t{i}b"
    return [
        assistant(ThinkingBlock(thinking="hmm", signature="sig"), TextBlock(text=f"turn {i}"),
                  ToolUseBlock(id=a, name="Read", input={"file_path": "x.py", "limit": None}),
                  ToolUseBlock(id=b, name="Bash", input={"command": "ls"})),
        StateEntry(session_id=SID, trigger="tools_requested", source="querying", dest="running_tools"),
        result(a, "line 1\nline 2 é ✓"),
        result(b, [TextBlock(text="exit 1"), TextBlock(text=" boom")], is_error=error),
        StateEntry(session_id=SID, trigger="tools_finished", source="running_tools", dest="querying"),
    ]


def plain_session(turns: int = 3) -> list:
    entries = [user("fix the bug")]
    for i in range(turns):
        entries += turn(i, error=i % 2 == 1)
    # A message that arrived while busy lands among the results: the results must still come first.
    entries.insert(4, user("also check y.py", origin="inbox"))
    entries += [assistant(TextBlock(text="done")), SystemEntry(session_id=SID, content="note")]
    return entries


def compacted_session(preserve: bool, twice: bool = False) -> list:
    before = plain_session(2)
    kept = [before[1].uuid, before[3].uuid] if preserve else []
    entries = before + [
        CompactBoundaryEntry(session_id=SID, preserved=kept),
        SummaryEntry(session_id=SID, summary="the user wants the bug fixed"),
        user("go on"),
        *turn(7),
    ]
    if twice:
        entries += [CompactBoundaryEntry(session_id=SID), SummaryEntry(session_id=SID, summary="later"), *turn(8)]
    return entries


def record(**kw) -> SessionRecord:
    base = dict(id=SID, model="claude-sonnet-4-5", workspace="/tmp", system_context="git status: clean",
                user_context="<system-reminder>memory</system-reminder>")
    return SessionRecord(**{**base, **kw})


TRANSCRIPTS = {
    "plain": plain_session,
    "compacted": lambda: compacted_session(preserve=False),
    "compacted-preserved": lambda: compacted_session(preserve=True),
    "compacted-twice": lambda: compacted_session(preserve=False, twice=True),
    "boundary-without-summary": lambda: plain_session(1) + [CompactBoundaryEntry(session_id=SID), *turn(3)],
    "starts-with-assistant": lambda: [assistant(TextBlock(text="hello")), user("hi")],
    "prompt-only": lambda: [user("just this")],
    "empty": lambda: [],
}

RECORDS = {
    "default": record,
    "no-user-context": lambda: record(user_context=""),
    "custom-prompt": lambda: record(custom_system_prompt="You are terse.", append_system_prompt="Be kind."),
    "empty-system": lambda: record(custom_system_prompt="", system_context=""),
    "no-memory-tools": lambda: record(auto_memory=False),
    "some-tools": lambda: record(tools=["Read", "Bash"], project_id="p1"),
    "no-tools": lambda: record(tools=[]),
}


def encoded(request: dict) -> str:
    return json.dumps(request, ensure_ascii=False)


# --------------------------------------------------------------------------- byte-identical


@pytest.mark.parametrize("rec_name", RECORDS)
@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_request_is_byte_identical_to_the_uncached_builder(name, rec_name):
    entries, rec = TRANSCRIPTS[name](), RECORDS[rec_name]()
    expected = encoded(_ref_build_request(rec, entries, 1000))
    assert encoded(build_request(rec, entries, 1000)) == expected
    assert encoded(build_request(rec, entries, 1000)) == expected  # from the caches this time


@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_messages_are_identical_with_and_without_user_context(name):
    entries = TRANSCRIPTS[name]()
    for user_context in ("", "ctx"):
        assert api_messages(entries, user_context) == _ref_api_messages(entries, user_context)
    assert [type(e) for e in model_view(entries)] == [type(e) for e in _ref_model_view(entries)]


def test_a_growing_transcript_never_carries_an_old_breakpoint():
    """The newest block is marked on a copy: when it is no longer the newest, it has no cache_control."""
    rec, entries = record(), [user("start")]
    for i in range(4):
        entries += turn(i)
        request = build_request(rec, entries, 100)
        assert encoded(request) == encoded(_ref_build_request(rec, entries, 100))
        marked = [b for m in request["messages"] for b in m["content"] if "cache_control" in b]
        assert marked == [request["messages"][-1]["content"][-1]]
        assert sum("cache_control" in b for b in request["system"]) == 1
        assert sum("cache_control" in t for t in request["tools"]) == 1


def test_cached_pieces_are_not_changed_by_a_request_or_its_caller():
    rec, entries = record(), plain_session()
    build_request(rec, entries, 100)
    system = copy.deepcopy(context.system_blocks(rec))
    tools = copy.deepcopy(list(context._tool_schemas(tuple(context.session_tools(rec)))))
    blocks = [copy.deepcopy(context._ENTRY_BLOCKS.get(e)) for e in entries if isinstance(e, (UserEntry, AssistantEntry))]

    request = build_request(rec, entries, 100)
    with pytest.raises((TypeError, AttributeError)):  # the request's messages are shared: read-only
        request["messages"][0]["content"].append({"type": "text", "text": "a caller's addition"})
    with pytest.raises(TypeError):
        request["messages"][0]["role"] = "assistant"
    messages = api_messages(entries, rec.user_context)  # what a caller that adds to them (compaction) uses
    messages[0]["content"].append({"type": "text", "text": "a caller's addition"})
    assert "cache_control" not in json.dumps(system) and "cache_control" not in json.dumps(tools)
    assert context.system_blocks(rec) == system
    assert list(context._tool_schemas(tuple(context.session_tools(rec)))) == tools
    assert [context._ENTRY_BLOCKS.get(e) for e in entries if isinstance(e, (UserEntry, AssistantEntry))] == blocks
    assert encoded(build_request(rec, entries, 100)) == encoded(_ref_build_request(rec, entries, 100))


def test_each_entry_is_converted_once(monkeypatch):
    """A step converts only the entries it has not seen: its cost does not grow with the transcript."""
    calls = []
    real = context._blocks
    monkeypatch.setattr(context, "_blocks", lambda content: calls.append(content) or real(content))
    rec, entries = record(), [user("start"), *turn(0)]
    build_request(rec, entries, 100)
    assert len(calls) == 4  # the prompt, the assistant turn, two results
    calls.clear()
    entries += turn(1)
    build_request(rec, entries, 100)
    assert len(calls) == 3  # only the new turn


def test_system_blocks_and_tool_schemas_are_built_once_per_distinct_input(monkeypatch):
    context._system_blocks.cache_clear()
    context._tool_schemas.cache_clear()
    entries = [user("hi")]
    for _ in range(3):
        build_request(record(), entries, 100)
    build_request(record(system_context="other"), entries, 100)
    assert context._system_blocks.cache_info().misses == 2
    assert context._tool_schemas.cache_info().misses == 1


# --------------------------------------------------------------------------- ObjectMemo


class Thing:
    def __init__(self, value: str) -> None:
        self.value = value


def test_memo_computes_once_per_object_and_forgets_it_with_the_object():
    seen = []
    memo = ObjectMemo(lambda t: seen.append(t.value) or t.value.upper())
    a, b = Thing("a"), Thing("a")
    assert memo.get(a) == "A" and memo.get(a) == "A"
    assert memo.get(b) == "A"  # an equal object is another object
    assert seen == ["a", "a"] and len(memo) == 2
    del a, b
    gc.collect()
    assert len(memo) == 0


def test_memo_never_serves_a_dead_objects_value_to_a_new_one():
    memo = ObjectMemo(lambda t: t.value)
    for i in range(200):  # ids of dead objects are reused at once by CPython
        assert memo.get(Thing(str(i))) == str(i)
    assert len(memo) == 0


def test_a_growing_transcript_converts_only_its_new_messages(monkeypatch):
    """The messages of the previous request are reused as they are (their JSON kept): only those after
    them are built, whatever the length of the conversation."""
    rec, entries = record(), [user("start"), *turn(0), *turn(1)]
    first = build_request(rec, entries, 100)["messages"]
    entries += turn(2)
    built = []
    real = context._user_message
    monkeypatch.setattr(context, "_user_message", lambda run: built.append(len(run)) or real(run))
    second = build_request(rec, entries, 100)
    assert built == [2, 2]  # the results left open last time, and the new turn's; the rest came as they were
    assert all(a is b for a, b in zip(first[1:-1], second["messages"][1:-1]))
    assert encoded(second) == encoded(_ref_build_request(rec, entries, 100))
    entries = entries[:3] + [user("a different branch")]  # not the same transcript any more: built afresh
    assert encoded(build_request(rec, entries, 100)) == encoded(_ref_build_request(rec, entries, 100))


# --------------------------------------------------------------------------- the body's lead


def sdk_body(request: dict) -> bytes:
    """The body as the SDK itself would encode the request (anthropic._utils._json)."""
    return json.dumps({**request, "stream": True}, ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode()


@pytest.mark.parametrize("rec_name", ["default", "no-user-context"])
@pytest.mark.parametrize("name", TRANSCRIPTS)
def test_the_body_with_its_kept_lead_is_the_sdks_text(name, rec_name):
    entries, rec = TRANSCRIPTS[name](), RECORDS[rec_name]()
    for _ in range(2):  # built afresh, then from the caches
        request = build_request(rec, entries, 1000)
        assert request_json.body(request) == sdk_body(request)


def test_a_growing_transcripts_body_walks_only_its_new_messages(monkeypatch):
    """Each request's lead (the messages before its last final one) extends the previous request's
    kept JSON pieces: only the messages added since are walked, however long the conversation."""
    joined = []
    real = request_json.json_parts
    monkeypatch.setattr(request_json, "json_parts", lambda ms, after: joined.append(len(ms)) or real(ms, after))
    rec, entries = record(), [user("start")]
    for i in range(6):
        entries += turn(i)
        request = build_request(rec, entries, 100)
        messages = request["messages"]
        assert type(messages) is request_json.Messages
        assert len(messages._lead) == len(messages) - 2  # all but the last final message and the open one
        assert request_json.body(request) == sdk_body(request)
    assert joined == [1] + [2] * 5  # the prompt first; then each turn's assistant message and results


@pytest.mark.parametrize("change", ["replace-middle", "replace-first", "insert", "delete", "copy", "deepcopy"])
def test_a_messages_list_changed_after_it_was_built_is_encoded_as_it_is(change):
    """The kept lead is used only while the list still starts with its very message objects."""
    rec, entries = record(), plain_session(4)
    build_request(rec, entries, 100)
    request = build_request(rec, entries, 100)
    messages = request["messages"]
    other = {"role": "user", "content": [{"type": "text", "text": "changed"}]}
    if change == "replace-middle":
        messages[3] = other
    elif change == "replace-first":
        messages[0] = other
    elif change == "insert":
        messages.insert(1, other)
    elif change == "delete":
        del messages[2]
    elif change == "copy":
        request["messages"] = copy.copy(messages)
    else:
        request["messages"] = copy.deepcopy(messages)
    assert request_json.body(request) == sdk_body(request)
