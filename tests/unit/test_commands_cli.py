"""Custom slash commands in the front doors' output: the SDK's ``initialize`` list, ``system/init``'s
``slash_commands`` and print mode's note for a ``/name`` that names none (shapes as Claude Code 2.1.330's)."""

from __future__ import annotations

import io
import json

from cli.headless.control import initialize_response
from cli.output import StreamJson
from cli.slash_commands import sdk_commands, unknown_command_note
from workflows.commands import CommandDefinition
from workflows.models import PermissionMode, SessionRecord

COMMANDS = {
    "frontend:test": CommandDefinition(name="frontend:test", body="x", description="Frontend test"),
    "review": CommandDefinition(name="review", body="x", description="Review a file", argument_hint="[file] [focus]",
                                scope="user"),
}


def test_initialize_lists_commands_as_claude_code_does():
    assert initialize_response(PermissionMode.DEFAULT, "none", {}, sdk_commands(COMMANDS))["commands"] == [
        {"name": "frontend:test", "description": "Frontend test (project)", "argumentHint": ""},
        {"name": "review", "description": "Review a file (user)", "argumentHint": "[file] [focus]"},
    ]
    assert initialize_response(PermissionMode.DEFAULT, "none")["commands"] == []


def test_system_init_names_the_session_commands():
    buf = io.StringIO()
    rec = SessionRecord(id="s1", model="claude-sonnet-4-5", workspace="/tmp/ws")
    skill = CommandDefinition(name="greet", body="Say hi", skill_dir="/tmp/ws/.claude/skills/greet")
    StreamJson(buf.write).init(rec, ["Bash"], commands={**COMMANDS, "greet": skill})
    init = json.loads(buf.getvalue())
    assert init["slash_commands"] == ["greet", "frontend:test", "review"]  # skills first, as Claude Code
    assert init["skills"] == ["greet"]


def test_a_prompt_naming_no_command_gets_a_note_a_path_or_a_known_name_none():
    note = unknown_command_note("/nosuch x", COMMANDS)
    assert note.startswith("No custom command /nosuch here (custom commands: /frontend:test, /review;")
    assert note.endswith("the prompt is sent to the model as written.")
    assert "(custom commands: none;" in unknown_command_note("/x", {})
    for prompt in ("/review a.py", "/usr/bin/env fails", "fix /review", ""):
        assert unknown_command_note(prompt, COMMANDS) is None
