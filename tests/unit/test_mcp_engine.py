"""MCP servers in a session, through the engine and the step runner (fakeredis, inline steps), with the test
server (tests/mcp_server.py) reached in-process by the official SDK's client: discovery before the prompt,
tools offered with their schemas, calls decided by the one permission check, outcome-unknown after a lost
worker, failures that leave the session going."""

from __future__ import annotations

import time

import pytest

from demo.scripted import Script, ToolUse, Turn
from statemachines import State
from tests.inline import Inline, api_of, scripted_model
from tests.mcp_server import build
from workflows.engine.handback import report_of
from workflows.context.assemble import offered_tools
from workflows.mcp.pool import McpPool, install
from workflows.models import RuleSet, StepKind, SystemEntry, UserEntry
from workflows.models.mcp import McpServer, McpServerConfig, McpStatus
from workflows.models.options import SessionOptions, SessionSetup

pytest.importorskip("mcp")


@pytest.fixture(autouse=True)
def in_process_servers(tmp_path, monkeypatch):
    """Every worker's pool reaches the test server in-process: command "testsrv" is it, any other fails."""
    from mcp import Client

    monkeypatch.setenv("MCP_TEST_LOG", str(tmp_path / "calls.log"))
    opened = []

    def opener(config, cwd, env, errlog, on_end):
        if config.command != "testsrv":
            raise FileNotFoundError(2, "No such file or directory", config.command)
        opened.append(config.name)
        return Client(build(config.name))

    mine = McpPool(opener=opener)
    old = install(mine)
    yield opened
    mine.close_all()
    install(old)


def server(name="t", command="testsrv", status=McpStatus.PENDING) -> McpServer:
    return McpServer(config=McpServerConfig(name=name, command=command), status=status)


def start(engine, ws, turns, *, servers=None, mode="default", allow=(), deny=(), asks="wait"):
    rules = RuleSet()
    for r in allow:
        rules.add("allow", r, "test")
    for r in deny:
        rules.add("deny", r, "test")
    model = scripted_model(Script(turns=turns))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode=mode, asks=asks), SessionSetup(rules=rules, mcp_servers=[server()] if servers is None else servers))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    return rec, inline, model


def tool_results(engine, sid):
    return [e.message.blocks()[0] for e in engine.store.entries(sid)
            if isinstance(e, UserEntry) and e.origin == "tool_result"]


def test_servers_are_found_before_the_prompt_and_their_tools_offered_with_their_schemas(engine, ws):
    rec, inline, model = start(engine, ws, [Turn(text="hello")])
    assert [s.kind for s in inline.queue] == [StepKind.MCP]
    assert inline.queue[0].queue == "tools", "stdio servers run where the tool calls run"
    assert engine.store.get_session(rec.id).held_prompt == "go"
    inline.drain()
    rec = engine.store.get_session(rec.id)
    (srv,) = rec.mcp_servers
    assert srv.status is McpStatus.CONNECTED and "mcp__t__add" in srv.tools
    (request,) = api_of(model).requests
    add = next(t for t in request["tools"] if t["name"] == "mcp__t__add")
    assert add["description"] == "Add two integers."
    assert add["input_schema"]["properties"]["a"]["type"] == "integer"
    assert request["tools"].index(add) > [t["name"] for t in request["tools"]].index("Bash")
    assert "mcp__t__echo" in offered_tools(rec) and "Bash" in offered_tools(rec)
    assert rec.state is State.IDLE


def test_a_second_run_does_not_look_for_them_again(engine, ws):
    rec, inline, _ = start(engine, ws, [Turn(text="one"), Turn(text="two")])
    inline.drain()
    inline.dispatch(engine.submit(rec.id, "again"))
    assert [s.kind for s in inline.queue] == [StepKind.MODEL]


def test_an_allowed_call_runs_on_the_server(engine, ws, tmp_path):
    turns = [Turn(tool_uses=[ToolUse(name="mcp__t__add", input={"a": 2, "b": 3}),
                             ToolUse(name="mcp__t__count", input={"note": "once"})]), Turn(text="done")]
    rec, inline, _ = start(engine, ws, turns, allow=["mcp__t"])
    inline.drain()
    add, count = tool_results(engine, rec.id)
    assert add.text == '{"result":5}' and not add.is_error
    assert count.text == "notes: 1"
    assert (tmp_path / "calls.log").read_text() == "once\n"


def test_without_a_rule_a_call_asks_and_runs_once_approved(engine, ws):
    turns = [Turn(tool_uses=[ToolUse(name="mcp__t__echo", input={"text": "hi"})]), Turn(text="done")]
    rec, inline, _ = start(engine, ws, turns)
    inline.drain()
    rec = engine.store.get_session(rec.id)
    assert rec.state is State.AWAITING_PERMISSION
    (req,) = rec.pending_requests()
    assert req.tool == "mcp__t__echo" and req.always == ["mcp__t__echo"]
    inline.dispatch(engine.decide_request(rec.id, None, True))
    inline.drain()
    (result,) = tool_results(engine, rec.id)
    assert result.text == "hi"


@pytest.mark.parametrize("deny", ["mcp__t", "mcp__t__echo", "mcp__t__*", "mcp__*"])
def test_deny_rules_in_claude_codes_forms_refuse_the_call(engine, ws, deny):
    turns = [Turn(tool_uses=[ToolUse(name="mcp__t__echo", input={"text": "hi"})]), Turn(text="done")]
    rec, inline, _ = start(engine, ws, turns, mode="bypassPermissions", deny=[deny])
    inline.drain()
    (result,) = tool_results(engine, rec.id)
    assert result.is_error and f"deny rule {deny}" in result.text
    assert StepKind.TOOL not in [s.kind for s in inline.ran]


def test_print_mode_denies_what_would_ask_and_lists_it(engine, ws):
    turns = [Turn(tool_uses=[ToolUse(name="mcp__t__echo", input={"text": "hi"})]), Turn(text="done")]
    rec, inline, _ = start(engine, ws, turns, asks="deny")
    inline.drain()
    (result,) = tool_results(engine, rec.id)
    assert result.is_error and "needs approval" in result.text
    final = [e for e in engine.store.entries(rec.id) if e.type == "result"][-1]
    assert final.permission_denials[0]["tool_name"] == "mcp__t__echo"


def test_plan_mode_denies_mcp_tools_whatever_the_rules(engine, ws):
    turns = [Turn(tool_uses=[ToolUse(name="mcp__t__echo", input={"text": "hi"})]), Turn(text="done")]
    rec, inline, _ = start(engine, ws, turns, mode="plan", allow=["mcp__t"])
    inline.drain()
    (result,) = tool_results(engine, rec.id)
    assert result.is_error and "plan mode" in result.text


def test_bad_input_and_unknown_tools_are_error_results_naming_the_fix(engine, ws):
    turns = [Turn(tool_uses=[ToolUse(name="mcp__t__add", input={"a": "two", "b": 3}),
                             ToolUse(name="mcp__t__nope", input={}),
                             ToolUse(name="mcp__other__x", input={})]), Turn(text="done")]
    rec, inline, _ = start(engine, ws, turns, mode="bypassPermissions")
    inline.drain()
    bad, nope, other = tool_results(engine, rec.id)
    assert bad.is_error and "Invalid input for mcp__t__add: a: 'two' is not of type 'integer'" in bad.text
    assert nope.is_error and "No such tool available: mcp__t__nope" in nope.text and "mcp__t__add" in nope.text
    assert other.is_error and "No MCP server of this session is named so (its servers: t)" in other.text


def test_a_server_that_fails_is_a_warning_and_the_session_goes_on(engine, ws, in_process_servers):
    turns = [Turn(tool_uses=[ToolUse(name="mcp__gone__x", input={})]), Turn(text="done")]
    rec, inline, model = start(engine, ws, turns, mode="bypassPermissions",
                               servers=[server("gone", command="/nonexistent/server"), server()])
    inline.drain()
    rec = engine.store.get_session(rec.id)
    gone, ok = rec.mcp_servers
    assert gone.status is McpStatus.FAILED and "No such file or directory" in gone.error
    assert ok.status is McpStatus.CONNECTED
    warnings = [e.content for e in engine.store.entries(rec.id) if isinstance(e, SystemEntry)]
    assert any("MCP server 'gone' failed" in w and "goes on without its tools" in w for w in warnings)
    (result,) = tool_results(engine, rec.id)
    assert "MCP server 'gone' is failed" in result.text
    assert not any(t["name"].startswith("mcp__gone") for t in api_of(model).requests[0]["tools"])


def test_an_unapproved_project_server_is_never_started(engine, ws, in_process_servers):
    rec, inline, _ = start(engine, ws, [Turn(text="hi")], servers=[server(status=McpStatus.UNAPPROVED)])
    assert [s.kind for s in inline.queue] == [StepKind.MODEL], "no discovery: nothing to start"
    inline.drain()
    assert in_process_servers == []
    assert engine.store.get_session(rec.id).mcp_servers[0].status is McpStatus.UNAPPROVED


def test_a_call_whose_worker_died_is_not_sent_again(engine, ws, settings, tmp_path):
    turns = [Turn(tool_uses=[ToolUse(name="mcp__t__count", input={"note": "x"})]), Turn(text="done")]
    rec, inline, _ = start(engine, ws, turns, allow=["mcp__t"])
    inline.run(2)  # discovery, model
    (tool_step,) = list(inline.queue)
    inline.queue.clear()
    assert engine.claim(rec.id, tool_step.id, "dead").step is not None  # its worker dies mid-call
    inline.dispatch(engine.reap(time.time() + settings.lease_seconds + 1))
    inline.drain()
    (result,) = tool_results(engine, rec.id)
    assert result.is_error and "outcome is unknown" in result.text
    assert not (tmp_path / "calls.log").exists(), "never sent again"


def test_a_discovery_whose_workers_keep_dying_fails_its_servers_and_the_run_goes_on(engine, ws, settings):
    rec, inline, _ = start(engine, ws, [Turn(text="still here")])
    (step,) = list(inline.queue)
    inline.queue.clear()
    now = time.time()
    for i in range(settings.max_attempts):
        assert engine.claim(rec.id, step.id, f"dead-{i}").step is not None
        now += settings.lease_seconds + 1
        inline.dispatch(engine.reap(now))
    inline.queue = type(inline.queue)(s for s in inline.queue if s.kind is not StepKind.MCP)
    inline.drain()
    rec = engine.store.get_session(rec.id)
    assert rec.mcp_servers[0].status is McpStatus.FAILED and "discovery failed" in rec.mcp_servers[0].error
    final = [e for e in engine.store.entries(rec.id) if e.type == "result"][-1]
    assert final.result == "still here" and not final.is_error


def test_a_fork_finds_its_servers_again_and_a_resume_adds_servers(engine, ws):
    rec, inline, _ = start(engine, ws, [Turn(text="a"), Turn(text="b")])
    inline.drain()
    fork = engine.fork_session(rec.id)
    assert fork.mcp_servers[0].status is McpStatus.PENDING and fork.mcp_tools_digest is None
    digest = engine.store.get_session(rec.id).mcp_tools_digest
    engine.add_mcp_servers(rec.id, [server("t"), server("u")])  # t unchanged: kept as it is
    again = engine.store.get_session(rec.id)
    assert [(s.name, s.status) for s in again.mcp_servers] == [("t", McpStatus.CONNECTED), ("u", McpStatus.PENDING)]
    assert again.mcp_tools_digest == digest
    inline.dispatch(engine.submit(rec.id, "more"))
    assert [s.kind for s in inline.queue] == [StepKind.MCP]
    inline.drain()
    names = offered_tools(engine.store.get_session(rec.id))
    assert "mcp__t__add" in names and "mcp__u__add" in names


def test_a_result_past_the_limit_is_saved_in_the_workspace(engine, ws):
    big = "x" * 150_000
    turns = [Turn(tool_uses=[ToolUse(name="mcp__t__echo", input={"text": big})]), Turn(text="done")]
    rec, inline, _ = start(engine, ws, turns, mode="bypassPermissions")
    inline.drain()
    (result,) = tool_results(engine, rec.id)
    assert "mcp__t__echo output too large: 150,000 characters" in result.text and len(result.text) < 3_000
    (saved,) = (ws / ".mainsail" / "tool-results").glob("*.txt")
    assert saved.read_text() == big


def test_a_cancel_during_discovery_drops_the_prompt_and_the_next_run_looks_again(engine, ws):
    rec, inline, _ = start(engine, ws, [Turn(text="answered")])
    (discovery,) = list(inline.queue)
    inline.queue.clear()
    engine.cancel(rec.id, "stop", dispatch=inline.dispatch)
    rec = engine.store.get_session(rec.id)
    assert rec.state is State.IDLE and rec.held_prompt is None
    assert rec.mcp_servers[0].status is McpStatus.PENDING
    inline.dispatch([discovery])  # a late delivery of the cancelled discovery changes nothing
    inline.drain()
    assert engine.store.get_session(rec.id).mcp_servers[0].status is McpStatus.PENDING
    inline.dispatch(engine.submit(rec.id, "again"))
    assert [s.kind for s in inline.queue] == [StepKind.MCP]
    inline.drain()
    final = [e for e in engine.store.entries(rec.id) if e.type == "result"][-1]
    assert final.result == "answered"


def test_a_sub_agent_gets_the_parents_mcp_tools_and_calls_them(engine, ws):
    from tests.fakeapi import assistant_turns, first_prompt

    def turn(body):
        if first_prompt(body) == "add them":  # the sub-agent
            if assistant_turns(body) == 0:
                assert "mcp__t__add" in [t["name"] for t in body["tools"]]
                return Turn(tool_uses=[ToolUse(name="mcp__t__add", input={"a": 20, "b": 22})])
            return Turn(text="the sum is 42")
        if assistant_turns(body) == 0:
            return Turn(tool_uses=[ToolUse(id="toolu_task", name="Task", input={
                "description": "sum", "prompt": "add them", "subagent_type": "general-purpose"})])
        return Turn(text="done")

    rules = RuleSet()
    rules.add("allow", "mcp__t", "test")
    rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(turn)), SessionSetup(rules=rules, mcp_servers=[server()]))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    parent = engine.store.get_session(rec.id)
    (child_id,) = parent.children
    child = engine.store.get_session(child_id)
    assert child.mcp_tools_digest == parent.mcp_tools_digest and [s.name for s in child.mcp_servers] == ["t"]
    assert [b.text for b in tool_results(engine, child_id)] == ['{"result":42}']
    assert [report_of(b.text) for b in tool_results(engine, rec.id)] == ["the sum is 42"]
    assert parent.state is State.IDLE
