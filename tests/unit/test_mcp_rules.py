"""Claude Code's permission rule forms for MCP tools, in the one decision function: mcp__server,
mcp__server__tool and wildcards; without a rule an MCP tool asks (denied where nobody can be asked)."""

from __future__ import annotations

import pytest

from workflows.models import PermissionMode, RuleSet
from workflows.permissions import Decision, always_rules, evaluate
from workflows.permissions.rules.rules import RuleSyntaxError, mcp_covers, parse_rule
from workflows.sessions.settings_files import load_permission_settings
from workflows.settings.errors import SettingsError

A, D, Q = Decision.ALLOW, Decision.DENY, Decision.ASK


@pytest.mark.parametrize("rule, name, covered", [
    ("mcp__github", "mcp__github__create_issue", True),
    ("mcp__github", "mcp__githubx__create_issue", False),
    ("mcp__github__create_issue", "mcp__github__create_issue", True),
    ("mcp__github__create_issue", "mcp__github__create_issue_comment", False),
    ("mcp__github__*", "mcp__github__list", True),
    ("mcp__github__get_*", "mcp__github__get_issue", True),
    ("mcp__github__get_*", "mcp__github__list_issues", False),
    ("mcp__*", "mcp__anything__at_all", True),
    ("mcp__github", "Bash", False),
])
def test_what_a_rule_covers(rule, name, covered):
    assert mcp_covers(parse_rule(rule).tool, name) is covered


@pytest.mark.parametrize("rule, why", [
    ("mcp__github(create_issue)", "MCP rules take no specifier"),
    ("mcp__git hub", "invalid MCP tool name"),
])
def test_forms_claude_code_does_not_have_are_refused_with_the_fix(rule, why):
    with pytest.raises(RuleSyntaxError, match=why):
        parse_rule(rule)


def decide(name, mode="default", allow=(), ask=(), deny=()):
    rules = RuleSet()
    for kind, items in (("allow", allow), ("ask", ask), ("deny", deny)):
        for r in items:
            rules.add(kind, r, "test")
    return evaluate(name, {"a": 1}, mode=PermissionMode(mode), rules=rules, workspace="/tmp", home="/tmp",
                    read_only=False).decision


@pytest.mark.parametrize("mode, allow, ask, deny, expected", [
    ("default", (), (), (), Q),  # no rule: asks, as Claude Code does
    ("acceptEdits", (), (), (), Q),
    ("dontAsk", (), (), (), D),
    ("plan", ("mcp__srv",), (), (), D),
    ("bypassPermissions", (), (), (), A),
    ("default", ("mcp__srv",), (), (), A),
    ("default", ("mcp__srv__tool",), (), (), A),
    ("default", ("mcp__srv__t*",), (), (), A),
    ("default", ("mcp__other",), (), (), Q),
    ("default", ("mcp__srv",), ("mcp__srv__tool",), (), Q),
    ("default", ("mcp__srv",), (), ("mcp__srv__tool",), D),
    ("bypassPermissions", (), (), ("mcp__srv",), D),
])
def test_decisions(mode, allow, ask, deny, expected):
    assert decide("mcp__srv__tool", mode, allow, ask, deny) is expected


def test_flags_and_settings_take_the_forms(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    files = load_permission_settings(ws, home, allowed_tools=["mcp__srv mcp__x__y"], disallowed_tools=["mcp__z__*"])
    assert [r.rule for r in files.rules.allow] == ["mcp__srv", "mcp__x__y"]
    assert [r.rule for r in files.rules.deny] == ["mcp__z__*"]
    with pytest.raises(SettingsError, match="MCP rules take no specifier"):
        load_permission_settings(ws, home, allowed_tools=["mcp__srv(tool)"])


def test_always_adds_the_tool_itself():
    assert always_rules("mcp__srv__tool", {"a": 1}) == ["mcp__srv__tool"]
