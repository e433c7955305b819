"""entry_json encodes an entry as the store did (json.dumps of dump()), in one pydantic pass."""

from __future__ import annotations

import json
import re

import pytest

from statemachines import State
from workflows.models import (
    AssistantEntry,
    AssistantMessage,
    CompactBoundaryEntry,
    HookEntry,
    Message,
    PermissionDecisionEntry,
    PermissionRequestEntry,
    ResultEntry,
    StateEntry,
    SummaryEntry,
    SystemEntry,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    UserEntry,
    entry_json,
    parse_entry,
)
from workflows.models.hook_outcome import HookOutcome, HookRun
from workflows.models.hooks import HookEvent

SID = "s-json"
USAGE = Usage(input_tokens=1200, output_tokens=34, cache_read_input_tokens=5)


def entries() -> list:
    """One of every entry type, with None costs, non-ASCII text, nested models and odd floats."""
    return [
        UserEntry(session_id=SID, cwd="/w", git_branch="main", message=Message(role="user", content="fix é ✓ 😀")),
        UserEntry(session_id=SID, parent_uuid="p", origin="tool_result", display="Read 2 lines", step_id="st",
                  message=Message(role="user", content=[
                      ToolResultBlock(tool_use_id="t1", content="a\tb\n\"q\" \\ \u0001"),
                      ToolResultBlock(tool_use_id="t2", content=[TextBlock(text="boom")], is_error=True)])),
        AssistantEntry(session_id=SID, duration_ms=812, cost_usd=0.0123456,
                       message=AssistantMessage(id="msg", model="m", stop_reason="tool_use", usage=USAGE, content=[
                           ThinkingBlock(thinking="hmm", signature="sig"), TextBlock(text="ok"),
                           ToolUseBlock(id="t1", name="Read", input={"file_path": "x", "limit": None, "n": 1.5})])),
        AssistantEntry(session_id=SID, cost_usd=None, message=AssistantMessage(content="unpriced")),
        AssistantEntry(session_id=SID, cost_usd=1e-05, message=AssistantMessage(content=[])),
        StateEntry(session_id=SID, trigger="submit", source=State.IDLE, dest=State.QUERYING),
        SystemEntry(session_id=SID, subtype="memory", content="saved", usage=USAGE, cost_usd=None),
        SystemEntry(session_id=SID, content="plain"),
        ResultEntry(session_id=SID, result="done", num_turns=3, usage=USAGE, total_cost_usd=None, memory_cost_usd=None,
                    usage_by_model={"m": USAGE}, cost_by_model={"m": None, "n": 0.5},
                    permission_denials=[{"tool_name": "Bash", "tool_input": {"command": "rm"}}]),
        ResultEntry(session_id=SID, subtype="error_max_turns", is_error=True, session_usage=USAGE,
                    session_cost_usd=0.25),
        PermissionRequestEntry(session_id=SID, request_id="r", tool_use_id="t", tool="Bash",
                               input={"command": "ls"}, always=["Bash(ls:*)"], expires_at=None,
                               hook_input={"a": None, "b": [1, 2]}),
        PermissionDecisionEntry(session_id=SID, tool_use_id="t", tool="Bash", decision="deny", decided_by="user",
                                message="no"),
        HookEntry(session_id=SID, event="PreToolUse", tool_use_id="t", tool="Bash", outcome=HookOutcome(
            event=HookEvent.PRE_TOOL_USE, decision="deny", reason="nope", updated_input=None,
            runs=[HookRun(command="check.sh", exit_code=None, error="timeout", stderr="ü")])),
        CompactBoundaryEntry(session_id=SID, trigger="manual", pre_tokens=150_000, preserved=["u1", "u2"]),
        SummaryEntry(session_id=SID, summary="the summary"),
    ]


def old_json(entry) -> str:
    return json.dumps(entry.dump(), separators=(",", ":"))


def ordered(text: str):
    """The parsed JSON with every object's keys in order (pairs), so key order is compared too."""
    return json.loads(text, object_pairs_hook=list)


@pytest.mark.parametrize("entry", entries(), ids=lambda e: f"{e.type}")
def test_entry_json_has_the_same_keys_order_and_values_as_json_dumps_of_dump(entry):
    new, old = entry_json(entry), old_json(entry)
    assert ordered(new) == ordered(old)
    assert parse_entry(new) == parse_entry(old) == entry


@pytest.mark.parametrize("entry", entries(), ids=lambda e: f"{e.type}")
def test_entry_json_is_byte_identical_but_for_non_ascii_and_float_spelling(entry):
    old = json.dumps(entry.dump(), separators=(",", ":"), ensure_ascii=False)
    # Python spells 1e-05 where pydantic writes 0.00001: the same number (only as a value, never inside a
    # string: a random uuid may hold "1e-05" too)
    old = re.sub(r'(?<=[:,\[])1e-05(?=[,}\]])', "0.00001", old)
    assert entry_json(entry) == old


def test_unknown_costs_stay_null_and_other_nones_go():
    rec = json.loads(entry_json(entries()[8]))
    assert rec["total_cost_usd"] is None and rec["memory_cost_usd"] is None
    assert "session_cost_usd" not in rec and "session_usage" not in rec
    assert json.loads(entry_json(entries()[3]))["cost_usd"] is None


def test_a_lone_surrogate_is_repaired_noted_and_read_back():
    entry = UserEntry(session_id=SID, origin="tool_result", message=Message(role="user", content=[
        ToolResultBlock(tool_use_id="t", content="bytes \udcff from surrogateescape")]))
    text = entry_json(entry)
    text.encode("utf-8")  # valid UTF-8: what Redis gets
    back = parse_entry(text)
    assert back.message.blocks()[0].text == "bytes \ufffd from surrogateescape"
    assert back.repaired == ["message.content.0.content"]
    # Everything else as the plain path writes it, the note last.
    clean = entry.model_copy(update={"message": Message(role="user", content=[
        ToolResultBlock(tool_use_id="t", content="bytes \ufffd from surrogateescape")])})
    assert json.loads(text) == {**json.loads(entry_json(clean)), "repaired": ["message.content.0.content"]}


def test_an_entry_with_no_bad_text_has_no_note():
    for e in entries():
        assert "repaired" not in json.loads(entry_json(e))
