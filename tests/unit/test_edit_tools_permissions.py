"""MultiEdit and NotebookEdit are edit tools: Edit(...) rules, acceptEdits and protected paths apply to
them exactly as to Edit and Write (Claude Code's rules)."""

from __future__ import annotations

import pytest

from tests.unit.test_rules import ruleset
from workflows.models import PermissionMode
from workflows.permissions import always_rules, evaluate, prompt_text, summary
from workflows.permissions.rules.results import Decision
from workflows.permissions.rules.rules import EDIT_TOOLS
from workflows.tools import REGISTRY

A, D, Q = Decision.ALLOW, Decision.DENY, Decision.ASK


def call(tool: str, path: str) -> dict:
    if tool == "NotebookEdit":
        return {"notebook_path": path, "new_source": "x", "cell_id": "c"}
    if tool == "MultiEdit":
        return {"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]}
    return {"file_path": path, "old_string": "a", "new_string": "b", "content": "x"}


def check(tool: str, path: str, dirs, mode: str = "default", **kinds):
    ws, home = dirs
    return evaluate(tool, call(tool, path), mode=PermissionMode(mode), rules=ruleset(kinds), workspace=ws,
                    home=home, read_only=REGISTRY[tool].read_only)


def test_the_edit_tools_are_the_registered_writers():
    assert set(EDIT_TOOLS) == {"Edit", "MultiEdit", "Write", "NotebookEdit"}
    assert all(not REGISTRY[t].read_only for t in EDIT_TOOLS)


@pytest.mark.parametrize("tool", ["MultiEdit", "NotebookEdit"])
@pytest.mark.parametrize("kinds, mode, path, expected", [
    ({}, "default", "nb.ipynb", Q),
    ({"deny": ["Edit(secrets/**)"]}, "bypassPermissions", "secrets/a.ipynb", D),
    ({"deny": ["Edit"]}, "acceptEdits", "nb.ipynb", D),
    ({"allow": ["Edit(src/**)"]}, "default", "src/nb.ipynb", A),
    ({"allow": ["Edit(src/**)"]}, "default", "docs/nb.ipynb", Q),
    ({"allow": ["Edit"]}, "default", "nb.ipynb", A),
    ({"ask": ["Edit(*.ipynb)"]}, "acceptEdits", "nb.ipynb", Q),
    ({}, "acceptEdits", "nb.ipynb", A),
    ({}, "acceptEdits", "{outside}/nb.ipynb", Q),
    ({}, "acceptEdits", ".git/nb.ipynb", Q),
    ({"allow": ["Edit"]}, "default", ".claude/nb.ipynb", Q),
    ({}, "plan", "nb.ipynb", D),
    ({"allow": ["Edit"]}, "plan", "nb.ipynb", D),
    ({}, "dontAsk", "nb.ipynb", D),
    ({"allow": ["Write"]}, "default", "nb.ipynb", Q),  # Write's own rules speak for Write only
])
def test_edit_rules_and_modes_cover_the_tool(tool, kinds, mode, path, expected, dirs, tmp_path):
    result = check(tool, path.replace("{outside}", str(tmp_path)), dirs, mode, **kinds)
    assert result.decision is expected, result


def test_a_tools_own_rules_speak_for_it(dirs):
    assert check("NotebookEdit", "a.ipynb", dirs, deny=["NotebookEdit(a.ipynb)"]).decision is D
    assert check("NotebookEdit", "b.ipynb", dirs, deny=["NotebookEdit(a.ipynb)"]).decision is Q
    assert check("MultiEdit", "x.py", dirs, allow=["MultiEdit"]).decision is A
    assert check("Edit", "x.py", dirs, allow=["MultiEdit"]).decision is Q


def test_a_bash_write_under_a_notebook_edit_deny_rule_is_denied(dirs):
    ws, home = dirs
    result = evaluate("Bash", {"command": "echo x > nb.ipynb"}, mode=PermissionMode.BYPASS,
                      rules=ruleset({"deny": ["NotebookEdit(nb.ipynb)"]}), workspace=ws, home=home, read_only=False)
    assert result.decision is D


def test_always_adds_edit_and_the_prompt_shows_the_path():
    for tool in ("MultiEdit", "NotebookEdit"):
        assert always_rules(tool, call(tool, "a.ipynb")) == ["Edit"]
        assert summary(tool, call(tool, "/ws/a.ipynb")) == "/ws/a.ipynb"
        assert prompt_text(tool, call(tool, "/ws/a.ipynb"), ["Edit"]) == (
            f"{tool}: /ws/a.ipynb\n  (a)lways adds: Edit")
    assert REGISTRY["NotebookEdit"].summary(call("NotebookEdit", "n.ipynb")) == "n.ipynb"
