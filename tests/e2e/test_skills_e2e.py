"""Skills through the installed CLI, beside the bundled Claude Code: the same ``.claude/skills/greet/SKILL.md``
in both workspaces, a model that calls the Skill tool, and what each CLI sends the model and prints."""

from __future__ import annotations

import json

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.test_claude_code_parity import CLAUDE, MODEL, run_both

pytestmark = pytest.mark.e2e

GREET = "---\nname: greet\ndescription: Greets the user warmly.\n---\n\n# Greet\n\nSay Ahoy to $ARGUMENTS\n"


def _claude_codes(body: dict) -> bool:
    return "cc_version=" in json.dumps(body.get("system", ""))


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
@pytest.mark.parametrize("name", ["greet", "nope"])
def test_a_skill_call_matches_claude_codes(cluster, tmp_path, name):
    bodies: list[dict] = []

    def turn(body: dict) -> Turn:
        bodies.append(body)
        if sum(1 for m in body["messages"] if m["role"] == "assistant") == 0:
            return Turn(text="", tool_uses=[ToolUse(name="Skill", input={"skill": name, "args": "Jo"})])
        return Turn(text="Done.")

    args = ["-p", "greet me", "--output-format", "stream-json", "--verbose", "--model", MODEL]
    a, b = run_both(cluster, tmp_path, turn, args, home_for_ours=True,
                    ws_files={".claude/skills/greet/SKILL.md": GREET})
    ours = [x for x in bodies if not _claude_codes(x)]
    theirs = [x for x in bodies if _claude_codes(x)]
    assert len(ours) == len(theirs) == 2

    # Offered and listed: the Skill tool's schema, and the listing reminder naming the skill.
    def listing(body):
        return next(t["text"] for m in body["messages"][:1] for t in m["content"]
                    if "available for use with the Skill tool" in t.get("text", ""))
    schemas = [next(t for t in x[0]["tools"] if t["name"] == "Skill")["input_schema"] for x in (ours, theirs)]
    assert schemas[0]["required"] == schemas[1]["required"] == ["skill"]
    assert set(schemas[0]["properties"]) == set(schemas[1]["properties"]) == {"skill", "args"}
    assert "- greet: Greets the user warmly." in listing(ours[0])
    assert "- greet: Greets the user warmly." in listing(theirs[0])
    assert a[0]["skills"] == ["greet"] and "greet" in b[0]["skills"]
    assert a[0]["slash_commands"][0] == b[0]["slash_commands"][0] == "greet"

    # What the model gets back: the result, and (for a skill found) its text in a block of its own.
    def answer(body, ws):
        blocks = body["messages"][-1]["content"]
        out = []
        for blk in blocks:
            text = blk.get("content") if blk["type"] == "tool_result" else blk["text"]
            text = text.split("\n\n<system-reminder>")[0]  # (Claude Code's token-count reminder)
            out.append((blk["type"], text.replace(str(ws), "WS"), bool(blk.get("is_error"))))
        return out

    got, want = answer(ours[1], tmp_path / "ours"), answer(theirs[1], tmp_path / "theirs")
    if name == "greet":
        assert got == want == [("tool_result", "Launching skill: greet", False),
                               ("text", "Base directory for this skill: WS/.claude/skills/greet\n\n# Greet\n\n"
                                        "Say Ahoy to Jo\n", False)]
        # The stream: the result line, then the skill's text marked synthetic, as Claude Code prints them.
        users = [[(x["message"]["content"][0]["type"], bool(x.get("isSynthetic"))) for x in out if x["type"] == "user"]
                 for out in (a, b)]
        assert users[0] == users[1] == [("tool_result", False), ("text", True)]
    else:
        assert got[0][0] == "tool_result" and got[0][2] and want[0][2]
        assert "Unknown skill: nope" in got[0][1] and "Unknown skill: nope" in want[0][1]
    assert a[-1]["result"] == b[-1]["result"] == "Done."
