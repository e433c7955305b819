"""The pure parts of issue 28 item 4: tools a bare deny rule removes, the memory files setting sources choose."""

from __future__ import annotations

from workflows.context.assemble import session_tools
from workflows.context.claude_md import memory_files
from workflows.models import RuleSet, SessionRecord
from workflows.permissions.rules.removal import removed_by_deny, without_denied


def rules(*deny: str) -> RuleSet:
    out = RuleSet()
    for rule in deny:
        out.add("deny", rule, "--disallowedTools")
    return out


def test_a_bare_deny_rule_removes_the_tool_a_specifier_does_not():
    names = ["Bash", "Read", "Write", "mcp__docs__search", "mcp__docs__fetch", "mcp__other__x"]
    assert without_denied(names, rules("Bash", "Write(/etc/**)", "mcp__docs")) == ["Read", "Write", "mcp__other__x"]
    assert without_denied(names, rules("Bash(*)", "mcp__docs__fetch")) == [
        "Read", "Write", "mcp__docs__search", "mcp__other__x"]
    assert removed_by_deny(rules("Bash(rm:*)", "not a (rule")) == ()


def test_session_tools_leave_out_what_a_deny_rule_removes(tmp_path):
    rec = SessionRecord(id="s", model="m", workspace=str(tmp_path), rules=rules("Bash", "Glob"))
    offered = session_tools(rec)
    assert "Bash" not in offered and "Glob" not in offered and "Read" in offered


def test_a_bare_agent_deny_rule_removes_the_sub_agent_tool(tmp_path):
    # disallowed_tools=["Agent"]: Claude Code 2.1's name for the tool Mainsail calls Task internally.
    from workflows.agents.definitions import GENERAL_PURPOSE
    from workflows.context.assemble import build_request
    from workflows.permissions.rules import removal
    from workflows.tools.task import AGENT_ALIASES

    assert removal.ALIASES == AGENT_ALIASES
    assert removed_by_deny(rules("Agent")) == ("Task",)
    for deny in ("Agent", "Task", "Agent(*)"):
        rec = SessionRecord(id="s", model="m", workspace=str(tmp_path), rules=rules(deny),
                            agents={GENERAL_PURPOSE.name: GENERAL_PURPOSE})
        assert "Task" not in session_tools(rec), deny
        assert "Agent" not in [t["name"] for t in build_request(rec, [], 1000)["tools"]], deny
    rec = SessionRecord(id="s", model="m", workspace=str(tmp_path), rules=rules("Agent(Explore)"),
                        agents={GENERAL_PURPOSE.name: GENERAL_PURPOSE})
    assert "Task" in session_tools(rec)  # (a specifier keeps it offered; the matching calls are denied)


def test_setting_sources_choose_the_memory_files(tmp_path):
    ws, home = tmp_path / "ws", tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    ws.mkdir()
    (home / ".claude" / "CLAUDE.md").write_text("user")
    (ws / "CLAUDE.md").write_text("project")
    (ws / "CLAUDE.local.md").write_text("local")

    def kinds(sources):
        return [f.kind for f in memory_files(str(ws), str(home), stop_at=str(ws), sources=sources)]

    assert kinds(None) == ["user", "project", "local"]
    assert kinds([]) == [] and kinds(["project"]) == ["project"] and kinds(["user", "local"]) == ["user", "local"]


def test_the_client_env_keeps_the_sessions_variables_not_secrets_nor_the_machine():
    from workflows.sessions.client_env import client_env, model_env

    environ = {"MY_VAR": "1", "PATH": "/client/bin", "HOME": "/home/me", "ANTHROPIC_API_KEY": "sk",
               "GITHUB_TOKEN": "t", "MAINSAIL_REDIS_URL": "redis://x", "ANTHROPIC_BASE_URL": "http://proxy",
               "DB": "postgres://u:pw@h/db"}
    assert client_env(environ) == {"MY_VAR": "1"}
    assert model_env(environ) == {"ANTHROPIC_BASE_URL": "http://proxy"}


def test_a_sessions_model_env_moves_its_calls_but_keeps_the_workers_key():
    from workflows.model.client import custom_headers, for_session
    from workflows.settings import load_settings

    settings = load_settings(anthropic_api_key="worker-key", anthropic_base_url="http://worker")
    rec = SessionRecord(id="s", model="m", workspace="/w", model_env={"ANTHROPIC_BASE_URL": "http://client",
                                                                      "ANTHROPIC_CUSTOM_HEADERS": "X-A: 1\nX-B:2"})
    moved = for_session(settings, rec)
    assert (moved.anthropic_base_url, moved.anthropic_api_key) == ("http://client", "worker-key")
    assert custom_headers(moved.anthropic_custom_headers) == {"X-A": "1", "X-B": "2"}
    assert for_session(settings, SessionRecord(id="s", model="m", workspace="/w")) is settings


def test_permission_updates_change_the_session_and_write_their_files(tmp_path):
    import json

    from workflows.permissions.updates import session_change, update_files, write_updates

    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    files = update_files(ws, home)
    files["projectSettings"].parent.mkdir()
    files["projectSettings"].write_text(json.dumps({"model": "x", "permissions": {"allow": ["Read", "Grep"]}}))
    current = RuleSet()
    current.add("allow", "Read", str(files["projectSettings"]))
    current.add("allow", "Glob", str(files["projectSettings"]))
    updates = [
        {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "ls:*"}], "behavior": "allow",
         "destination": "localSettings"},
        {"type": "replaceRules", "rules": [{"toolName": "Read"}], "behavior": "allow", "destination": "projectSettings"},
        {"type": "addRules", "rules": [{"toolName": "WebFetch"}], "behavior": "deny", "destination": "session"},
        {"type": "setMode", "mode": "acceptEdits", "destination": "userSettings"},
        {"type": "addDirectories", "directories": ["/data"], "destination": "session"},
    ]
    change = session_change(updates, ws, home, current)
    assert [(r.rule, r.source) for r in change.add.allow] == [("Bash(ls:*)", str(files["localSettings"])),
                                                              ("Read", str(files["projectSettings"]))]
    assert [(r.rule, r.source) for r in change.remove.allow] == [("Glob", str(files["projectSettings"]))]
    assert [(r.rule, r.source) for r in change.add.deny] == [("WebFetch", "session")]
    assert change.mode == "acceptEdits" and change.directories == ["/data"]
    written = {w.path for w in write_updates(updates, ws, home)}
    assert written == {files["localSettings"], files["projectSettings"], files["userSettings"]}
    assert json.loads(files["localSettings"].read_text()) == {"permissions": {"allow": ["Bash(ls:*)"]}}
    assert json.loads(files["projectSettings"].read_text()) == {"model": "x", "permissions": {"allow": ["Read"]}}
    assert json.loads(files["userSettings"].read_text()) == {"permissions": {"defaultMode": "acceptEdits"}}


def test_a_permission_update_with_an_unknown_destination_is_refused(tmp_path):
    import pytest

    from workflows.exceptions import ConfigurationError
    from workflows.permissions.updates import session_change

    with pytest.raises(ConfigurationError, match="destination 'nowhere'"):
        session_change([{"type": "addRules", "rules": [], "destination": "nowhere"}], tmp_path, tmp_path, RuleSet())


def test_a_path_outside_the_work_area_asks_in_claude_codes_words(tmp_path):
    from workflows.models import PermissionMode
    from workflows.permissions.evaluate import evaluate
    from workflows.permissions.rules.results import Decision, nobody_to_ask

    ws, added = tmp_path / "ws", tmp_path / "added"
    ws.mkdir()
    added.mkdir()

    def check(tool, path, mode=PermissionMode.DEFAULT, dirs=()):
        key = "file_path"
        return evaluate(tool, {key: str(path), "content": ""}, mode=mode, rules=RuleSet(), workspace=str(ws),
                        home=str(tmp_path), read_only=tool == "Read", additional_dirs=list(dirs))

    read = check("Read", added / "a.txt")
    assert read.decision is Decision.ASK
    assert nobody_to_ask("Read", read).reason == (
        f"Claude requested permissions to read from {added / 'a.txt'}, but you haven't granted it yet.")
    write = check("Write", added / "a.txt", PermissionMode.ACCEPT_EDITS)
    assert write.decision is Decision.ASK and "write to" in write.reason
    assert check("Read", added / "a.txt", dirs=[str(added)]).decision is Decision.ALLOW
    assert check("Read", ws / "a.txt").decision is Decision.ALLOW
