"""Claude Code's command line: which argument lists it takes, its flag checks, the control protocol."""

from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner

from cli.headless.command import REFUSED, main_command
from cli.headless.control import Control
from cli.headless.stream import permission_suggestions
from cli.main import claude_style
from cli.output import StreamJson


@pytest.mark.parametrize("args, claude", [
    ([], True),
    (["-p", "hi"], True),
    (["hi there"], True),
    (["--model", "run", "hi"], True),  # "run" is --model's value, not the subcommand
    (["--output-format", "stream-json", "--verbose", "--system-prompt", "", "--input-format", "stream-json"], True),
    (["--resume=abc", "-p", "x"], True),
    (["--", "run"], True),
    (["run", "-p", "hi"], False),
    (["sessions"], False),
    (["--help"], False),
    (["--version"], False),
    (["-p", "--help"], True),
])
def test_claude_code_argument_lists_go_to_the_claude_command(args, claude):
    assert claude_style(args) is claude


def invoke(*args, stdin=None):
    return CliRunner().invoke(main_command, list(args), input=stdin)


@pytest.mark.parametrize("args, message", [
    (["-p", "--output-format", "stream-json", "hi"], "--output-format=stream-json requires --verbose"),
    (["--input-format", "stream-json", "--output-format", "json", "--verbose"],
     "--input-format=stream-json requires --output-format=stream-json"),
    (["-p", "--resume"], "--resume needs a session id in print mode"),
    (["-p", "--permission-prompt-tool", "mcp__perm__ask", "hi"], 'only "stdio"'),
    (["-p", "--permission-prompt-tool", "stdio", "hi"], "needs --input-format stream-json"),
    (["-p", "--tools", "Bash,Teleport", "hi"], "unknown tool(s) Teleport"),
    (["-p", "--dangerously-skip-permissions", "--permission-mode", "plan", "hi"], "disagree"),
    (["-p", "--system-prompt-file", "/nonexistent/prompt.txt", "hi"], "cannot read it"),
    (["-p", "--mcp-config", "/nonexistent/servers.json", "hi"], "--mcp-config /nonexistent/servers.json: cannot read"),
    (["-p", "--mcp-config", '{"mcpServers": {"a b": {"command": "x"}}}', "hi"], "MCP server name 'a b' is not valid"),
    (["-p", "--mcp-config", '{"mcpServers": {"s": {"command": 3}}}', "hi"], "'command' must be a non-empty string"),
])
def test_bad_flag_combinations_are_refused_with_one_clear_line(args, message):
    out = invoke(*args)
    assert out.exit_code == 2 and message in out.output, out.output


def test_every_refused_flag_is_named_when_used():
    for flag, (takes_value, _) in REFUSED.items():
        out = invoke("-p", flag, *(["x"] if takes_value else []), "hi")
        assert out.exit_code == 2 and f"{flag} is not supported by Mainsail" in out.output, flag


def test_print_mode_without_a_prompt_says_how_to_give_one():
    out = invoke("-p", stdin="")
    assert out.exit_code == 2 and "Input must be provided either through stdin or as a prompt argument" in out.output


def control(handlers):
    buf = io.StringIO()
    return Control(StreamJson(buf.write), handlers), buf


def test_control_answers_known_requests_and_refuses_others_by_name():
    c, buf = control({"interrupt": lambda r: {}, "set_model": lambda r: {"model": r["model"]}})
    c.on_request({"type": "control_request", "request_id": "r1", "request": {"subtype": "set_model", "model": "x"}})
    c.on_request({"type": "control_request", "request_id": "r2", "request": {"subtype": "rewind_files"}})
    ok, refused = [json.loads(ln)["response"] for ln in buf.getvalue().splitlines()]
    assert ok == {"subtype": "success", "request_id": "r1", "response": {"model": "x"}}
    assert refused["subtype"] == "error" and refused["request_id"] == "r2"
    assert "'rewind_files'" in refused["error"] and "interrupt, set_model" in refused["error"]


def test_control_routes_an_answer_to_its_question_once():
    c, buf = control({})
    answers = []
    rid = c.ask({"subtype": "can_use_tool", "tool_name": "Bash"}, answers.append)
    sent = json.loads(buf.getvalue())
    assert sent["type"] == "control_request" and sent["request_id"] == rid
    reply = {"type": "control_response", "response": {"subtype": "success", "request_id": rid,
                                                       "response": {"behavior": "allow"}}}
    c.on_response(reply)
    c.on_response(reply)  # a duplicate changes nothing
    assert answers == [{"behavior": "allow"}] and c.pending() == 0


def test_a_question_settled_elsewhere_is_withdrawn_from_the_client():
    c, buf = control({})
    answers = []
    rid = c.ask({"subtype": "can_use_tool"}, answers.append)
    c.cancel(rid)
    c.on_response({"type": "control_response", "response": {"subtype": "success", "request_id": rid}})
    assert answers == [] and json.loads(buf.getvalue().splitlines()[-1]) == {
        "type": "control_cancel_request", "request_id": rid}


def test_always_rules_become_the_sdks_permission_suggestions():
    assert permission_suggestions(["Bash(npm test:*)", "Edit"]) == [{
        "type": "addRules", "behavior": "allow", "destination": "localSettings",
        "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}, {"toolName": "Edit"}]}]
    assert permission_suggestions([]) == []


def test_settings_sources_and_an_extra_layer(tmp_path):
    """--setting-sources picks the files read; --settings adds a layer above them (a file or inline JSON)."""
    from workflows.sessions.settings_files import load_permission_settings

    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".claude").mkdir(parents=True)
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Bash(ls:*)"]}}')
    (ws / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Read(./.env)"]}}')
    (ws / ".claude" / "settings.local.json").write_text('{"permissions": {"allow": ["Edit"]}}')
    every = load_permission_settings(ws, home)
    assert {r.rule for r in every.rules.allow} == {"Bash(ls:*)", "Edit"} and every.rules.deny
    project = load_permission_settings(ws, home, sources=["project"])
    assert project.rules.allow == [] and [r.rule for r in project.rules.deny] == ["Read(./.env)"]
    extra = load_permission_settings(ws, home, sources=[], extra=[("--settings (inline JSON)",
                                                                  '{"permissions": {"deny": ["Bash"]}}')])
    assert [(r.rule, r.source) for r in extra.rules.deny] == [("Bash", "--settings (inline JSON)")]


def test_bad_setting_flags_name_the_fix(tmp_path):
    out = invoke("-p", "--setting-sources", "user,team", "hi")
    assert out.exit_code == 2 and "unknown source(s) team" in out.output
    out = invoke("-p", "--settings", str(tmp_path / "missing.json"), "hi")
    assert out.exit_code == 2 and "cannot read it" in out.output
