"""``.mcp.json`` names programs Mainsail starts (issue 25, cause 4): a write to it is a protected write.

The checker asks for it whatever the mode or the rules say (as for ``.claude/``), at any depth and
through a symlink; a glob that may match it asks for a writing command; and the sandbox keeps it
read-only (tests/unit/test_sandbox.py), so a program the sandbox contains cannot write it either.
"""

from __future__ import annotations

import os

import pytest

from workflows.models import PermissionMode, RuleSet, RuleSpec
from workflows.permissions import Decision, evaluate


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / ".mcp.json").write_text('{"mcpServers": {}}')
    (ws / "link.json").symlink_to(ws / ".mcp.json")
    return ws


def rules(*allow: str) -> RuleSet:
    return RuleSet(allow=[RuleSpec(rule=r, source="test") for r in allow])


def decide(ws, tool, tool_input, mode="acceptEdits", allow=()):
    return evaluate(tool, tool_input, mode=PermissionMode(mode), rules=rules(*allow), workspace=str(ws),
                    home=str(ws.parent / "home"), read_only=tool in ("Read", "Glob", "Grep"))


@pytest.mark.parametrize("tool,tool_input", [
    ("Write", {"file_path": ".mcp.json", "content": "{}"}),
    ("Edit", {"file_path": ".mcp.json", "old_string": "{}", "new_string": "{\"x\": 1}"}),
    ("Write", {"file_path": "sub/.mcp.json", "content": "{}"}),
    ("Write", {"file_path": "link.json", "content": "{}"}),  # a symlink to it
    ("Write", {"file_path": ".MCP.JSON", "content": "{}"}),  # a case-insensitive filesystem
])
@pytest.mark.parametrize("allow", [(), ("Edit", "Write")])
def test_a_file_tool_writing_it_asks_in_accept_edits_whatever_the_rules(ws, tool, tool_input, allow):
    tool_input = dict(tool_input, file_path=os.path.join(ws, tool_input["file_path"]))
    assert decide(ws, tool, tool_input, allow=allow).decision is Decision.ASK


@pytest.mark.parametrize("command,allow", [
    ("echo '{}' > .mcp.json", ("Bash(echo:*)",)),
    ("echo '{}' > sub/.mcp.json", ("Bash(echo:*)",)),
    ("echo x > .mcp.js?n", ("Bash(echo:*)",)),
    ("cp x.json .mcp.json", ()),
    ("mv x.json .mcp.json", ()),
    ("npm test > .mcp.json", ("Bash(npm test:*)",)),
])
def test_a_command_writing_it_asks(ws, command, allow):
    assert decide(ws, "Bash", {"command": command}, allow=allow).decision is Decision.ASK, command


def test_reading_it_still_needs_nothing(ws):
    assert decide(ws, "Read", {"file_path": str(ws / ".mcp.json")}, mode="default").decision is Decision.ALLOW
    assert decide(ws, "Bash", {"command": "cat .mcp.json"}, mode="default").decision is Decision.ALLOW


def test_plan_mode_denies_writing_it(ws):
    assert decide(ws, "Write", {"file_path": str(ws / ".mcp.json"), "content": "{}"},
                  mode="plan").decision is Decision.DENY
