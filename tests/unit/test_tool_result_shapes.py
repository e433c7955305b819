"""Claude Code 2.1.332's shapes of a tool result beyond its text: ``structuredPatch``, a user line's
``tool_use_result``, the ``system/permission_denied`` line, and the set_permission_mode refusals
(tests/e2e/test_claude_code_parity_table.py compares them with the bundled Claude Code)."""

from __future__ import annotations

import io
import json

from cli.output import StreamJson
from workflows.models import (
    AssistantEntry,
    AssistantMessage,
    Message,
    SessionRecord,
    ToolResultBlock,
    ToolUseBlock,
    UserEntry,
)
from workflows.permissions.bypass import NOT_LAUNCHED, switch_refusal
from workflows.tools.base import ToolContext, run_tool
from workflows.tools.patch import structured_patch

SID = "0b7c2a52-9d3e-4c55-8f61-1a2b3c4d5e6f"


def test_structured_patch_is_jsdiffs():
    assert structured_patch("a\nb\n", "a\nb\n") == []
    assert structured_patch("F\n", "z") == [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                             "lines": ["-F", "+z", "\\ No newline at end of file"]}]
    far = structured_patch("".join(f"{i}\n" for i in range(20)), "".join(f"{i}\n" for i in range(20)).replace(
        "2\n", "two\n", 1).replace("17\n", "seventeen\n"))
    assert [(h["oldStart"], h["oldLines"]) for h in far] == [(1, 6), (15, 6)]


def test_a_refusal_before_the_run_is_a_tool_use_error(tmp_path):
    (tmp_path / "f.txt").write_text("a\n")
    out = run_tool("Edit", {"file_path": str(tmp_path / "f.txt"), "old_string": "a", "new_string": "b"},
                   ToolContext(workspace=tmp_path))
    assert out.content == "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>"
    assert out.result == "Error: File has not been read yet. Read it first before writing to it."
    out = run_tool("Read", {"file_path": 3}, ToolContext(workspace=tmp_path))
    assert out.content.startswith("<tool_use_error>Invalid input for Read: file_path") and out.is_error


def lines_of(*entries) -> list[dict]:
    buf = io.StringIO()
    out = StreamJson(buf.write)
    for e in entries:
        out.entry(e)
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def test_a_structured_result_and_a_denied_call_stream_as_claude_codes():
    reply = AssistantEntry(session_id=SID, message=AssistantMessage(id="msg_1", model="m", stop_reason="tool_use", content=[
        ToolUseBlock(id="toolu_1", name="Bash", input={"command": "ls"}),
        ToolUseBlock(id="toolu_2", name="Write", input={"file_path": "/ws/a", "content": "x"})]))
    ran = UserEntry(session_id=SID, origin="tool_result", tool_use_result={"stdout": "a", "stderr": ""},
                    message=Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="a")]))
    denied = UserEntry(session_id=SID, origin="tool_result", denied=True, message=Message(role="user", content=[
        ToolResultBlock(tool_use_id="toolu_2", content="Permission to use Write was denied.", is_error=True)]))
    out = lines_of(reply, ran, denied)
    assert [(o["type"], o.get("subtype")) for o in out] == [
        ("assistant", None), ("assistant", None), ("user", None), ("system", "permission_denied"), ("user", None)]
    assert {o["message"]["stop_reason"] for o in out[:2]} == {None}
    assert out[2]["tool_use_result"] == {"stdout": "a", "stderr": ""}
    line = out[3]
    assert {k: line[k] for k in ("tool_name", "tool_use_id", "message", "session_id")} == {
        "tool_name": "Write", "tool_use_id": "toolu_2", "message": "Permission to use Write was denied.",
        "session_id": SID}
    assert out[4]["tool_use_result"] == "Error: Permission to use Write was denied."


def test_set_permission_mode_to_bypass_needs_a_launch_allowing_it(tmp_path):
    rec = SessionRecord(id=SID, model="m", workspace=str(tmp_path), home=str(tmp_path))
    assert switch_refusal("bypassPermissions", rec, False) == (NOT_LAUNCHED, "bypass_not_launched")
    assert switch_refusal("bypassPermissions", rec, True) is None
    assert switch_refusal("plan", rec, False) is None
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"permissions": {"disableBypassPermissionsMode": "disable"}}')
    message, code = switch_refusal("bypassPermissions", rec, False)  # settings first, as Claude Code
    assert code == "bypass_disabled" and message.startswith("Cannot set permission mode to bypassPermissions because "
                                                            "it is disabled by settings or configuration")
