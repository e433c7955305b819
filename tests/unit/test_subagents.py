"""Task calls as child sessions (workflows.engine.subagents), steps run inline on fakeredis."""

from __future__ import annotations

import pytest

from demo.scripted import ToolUse, Turn
from statemachines import State
from tests.fakeapi import assistant_turns, first_prompt
from tests.inline import Inline, scripted_model
from workflows.engine.handback import report_of
from workflows.agents import AgentFileError, agents_from_json, load_agents, parse_agent_file
from workflows.context.assemble import build_request
from workflows.engine.subagents import tree
from workflows.models import ResultEntry, StepKind, StepStatus, UserEntry
from workflows.models.options import SessionOptions, SessionSetup
from workflows.steps.run import run_step


def task(i: int, kind: str = "general-purpose", prompt: str | None = None) -> ToolUse:
    return ToolUse(id=f"toolu_task{i}", name="Task",
                   input={"description": f"job {i}", "prompt": prompt or f"child job {i}", "subagent_type": kind})


def family(turns_for_parent, child_turn=None):
    """A model function: the parent's turns by index, each child answers by its prompt."""

    def turn(body: dict) -> Turn:
        prompt = first_prompt(body)
        if prompt.startswith("child job"):
            if child_turn is not None:
                return child_turn(body, prompt)
            return Turn(text=f"answer to {prompt}")
        return turns_for_parent[min(assistant_turns(body), len(turns_for_parent) - 1)]

    return turn


def results(engine, sid):
    return [e for e in engine.store.entries(sid) if isinstance(e, ResultEntry)]


def tool_results(engine, sid):
    return {b.tool_use_id: b for e in engine.store.entries(sid)
            if isinstance(e, UserEntry) and e.origin == "tool_result" for b in e.message.blocks()}


def test_three_task_calls_start_three_children_and_their_answers_come_back_once(engine, ws):
    model = scripted_model(family([Turn(tool_uses=[task(1), task(2), task(3)]), Turn(text="all done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "split the work"))
    inline.run(1)  # the parent's model call: three Task calls, one batch
    parent = engine.store.get_session(rec.id)
    assert len(parent.children) == 3 and parent.state is State.RUNNING_TOOLS
    agent_steps = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.AGENT]
    assert len(agent_steps) == 3
    assert all(s.status is StepStatus.RUNNING and s.owner.startswith("agent:") for s in agent_steps)
    assert engine.store.due(10**12) == [] or all(
        sid != rec.id for sid, _ in engine.store.due(10**12))  # no lease: the reaper never takes them back
    # the three children's first model steps are queued at once (they run in parallel on workers)
    assert sorted(s.session_id for s in inline.queue) == sorted(parent.children)
    for child_id in parent.children:
        child = engine.store.get_session(child_id)
        assert child.parent_session_id == rec.id and child.agent_type == "general-purpose"
        assert "Task" not in (child.tools or []) and child.state is State.QUERYING
    inline.drain()
    parent = engine.store.get_session(rec.id)
    assert parent.state is State.IDLE
    out = tool_results(engine, rec.id)
    assert {k: report_of(b.content) for k, b in out.items()} == {f"toolu_task{i}": f"answer to child job {i}" for i in (1, 2, 3)}
    (result,) = results(engine, rec.id)
    assert result.result == "all done"
    # each report ran once; delivering one again records nothing
    child = engine.store.get_session(parent.children[0])
    before = len(engine.store.entries(rec.id))
    assert engine.record_child_answer(rec.id, child.parent_step_id, child) == []
    assert len(engine.store.entries(rec.id)) == before
    # cost rolls up: the parent's usage holds its own calls and the children's
    children_out = sum(engine.store.get_session(c).usage.output_tokens for c in parent.children)
    assert parent.usage_by_kind["subagent"].output_tokens == children_out > 0
    assert [d for d, _ in tree(engine.store, rec.id)] == [0, 1, 1, 1]


def test_an_unknown_agent_type_is_an_error_result_naming_the_available_ones(engine, ws):
    model = scripted_model(family([Turn(tool_uses=[task(1, kind="nope")]), Turn(text="ok")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    block = tool_results(engine, rec.id)["toolu_task1"]
    assert block.is_error and "Agent type 'nope' not found. Available agents: general-purpose" in str(block.content)
    assert engine.store.get_session(rec.id).children == []


def test_a_reply_starts_at_most_ten_sub_agents_and_the_rest_are_refused_saying_so(engine, ws):
    from workflows.engine.tool_calls import MAX_SUBAGENTS_PER_REPLY

    n = MAX_SUBAGENTS_PER_REPLY + 2
    model = scripted_model(family([Turn(tool_uses=[task(i) for i in range(1, n + 1)]), Turn(text="done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "fan out"))
    inline.run(1)
    assert len(engine.store.get_session(rec.id).children) == MAX_SUBAGENTS_PER_REPLY
    inline.drain()
    out = tool_results(engine, rec.id)
    assert len(out) == n  # every call has its one result
    refused = [k for k, b in out.items() if b.is_error]
    assert refused == [f"toolu_task{i}" for i in (n - 1, n)]
    assert "At most 10 sub-agents run per reply" in str(out[refused[0]].content)
    assert engine.store.get_session(rec.id).state is State.IDLE


def test_a_child_inherits_the_parents_mode_and_rules_and_its_ask_waits_in_the_child(engine, ws):
    def child(body, prompt):
        if assistant_turns(body) == 0:
            return Turn(tool_uses=[ToolUse(id="toolu_b", name="Bash", input={"command": "touch made.txt"})])
        return Turn(text="made it")

    model = scripted_model(family([Turn(tool_uses=[task(1)]), Turn(text="parent done")], child))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="default"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (cid,) = engine.store.get_session(rec.id).children
    kid = engine.store.get_session(cid)
    assert kid.state is State.AWAITING_PERMISSION and kid.permission_mode.value == "default"
    assert cid in engine.store.awaiting_sessions()
    (req,) = kid.pending_requests()
    inline.dispatch(engine.decide_request(cid, req.id, True))
    inline.drain()
    assert (ws / "made.txt").exists()
    assert report_of(tool_results(engine, rec.id)["toolu_task1"].content) == "made it"
    assert engine.store.get_session(rec.id).state is State.IDLE


def test_cancelling_the_parent_stops_its_running_children(engine, ws):
    def child(body, prompt):
        return Turn(tool_uses=[ToolUse(id=f"toolu_r{assistant_turns(body)}", name="Bash",
                                       input={"command": "rm -rf /tmp/nothing-here"})])

    model = scripted_model(family([Turn(tool_uses=[task(1), task(2)]), Turn(text="x")], child))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="default"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    children = engine.store.get_session(rec.id).children
    assert all(engine.store.get_session(c).state is State.AWAITING_PERMISSION for c in children)
    inline.dispatch(engine.stop(rec.id).steps)
    inline.drain()
    assert engine.store.get_session(rec.id).state is State.IDLE
    for c in children:
        kid = engine.store.get_session(c)
        assert kid.state is State.IDLE and kid.pending_requests() == []
        assert results(engine, c)[-1].subtype == "cancelled"
    assert engine.store.awaiting_sessions() == []
    # the parent's agent steps are closed with its run: nothing of it counts as still running
    assert {s.status for s in engine.store.steps(rec.id) if s.kind is StepKind.AGENT} == {StepStatus.SUPERSEDED}


def test_a_child_step_claimed_after_its_parent_stopped_waiting_is_not_run(engine, ws):
    model = scripted_model(family([Turn(tool_uses=[task(1)]), Turn(text="x")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)
    (child_step,) = list(inline.queue)
    inline.queue.clear()
    # the parent's run ends while its child's first step is still queued, and the cascade is lost
    engine.subagents.stop_children = lambda children: []
    engine.stop(rec.id)
    del engine.subagents.stop_children
    run_step(engine, child_step.session_id, child_step.id, inline.dispatch)
    kid = engine.store.get_session(child_step.session_id)
    assert kid.state is State.IDLE and kid.turns == 0  # stopped, and the model was never called
    assert results(engine, kid.id)[-1].subtype == "cancelled"


def test_the_task_schema_lists_the_sessions_agents_and_a_child_has_no_task_tool(engine, ws):
    agents_dir = ws / ".claude" / "agents"
    agents_dir.mkdir(parents=True)
    (agents_dir / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep\nmodel: haiku\n---\n"
        "You are a careful reviewer.\n")
    rec = engine.create_session(str(ws), SessionOptions(model="claude-sonnet-4-5"))
    tools = {t["name"]: t for t in build_request(rec, [], 100)["tools"]}
    assert "Task" not in tools  # offered as Agent, Claude Code 2.1's name
    assert "- reviewer: Reviews code for bugs (Tools: Read, Grep)" in tools["Agent"]["description"]
    assert "- general-purpose: General-purpose agent" in tools["Agent"]["description"]
    assert set(tools["Agent"]["input_schema"]["required"]) == {"description", "prompt"}
    kid = rec.model_copy(update={"parent_session_id": rec.id})
    assert not {"Task", "Agent"} & {t["name"] for t in build_request(kid, [], 100)["tools"]}


def test_a_custom_agent_runs_with_its_prompt_tools_and_model(engine, ws):
    seen = []

    def child(body, prompt):
        seen.append(body)
        return Turn(text="reviewed")

    agents = agents_from_json({"reviewer": {"description": "Reviews", "prompt": "You review.",
                                            "tools": ["Read", "Bash"], "model": "inherit"}})
    model = scripted_model(family([Turn(tool_uses=[task(1, kind="reviewer")]), Turn(text="x")], child))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", agents=agents))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (body,) = seen
    assert sorted(t["name"] for t in body["tools"]) == ["Bash", "Read"]
    assert "You review." in str(body["system"])


def test_agent_files_parse_and_bad_ones_are_named(tmp_path):
    a = parse_agent_file("---\nname: x\ndescription: d\ntools: [Read]\n---\nbody\n", "f.md", "project")
    assert (a.name, a.tools, a.prompt, a.model) == ("x", ["Read"], "body", None)
    with pytest.raises(AgentFileError, match="f.md: no YAML frontmatter"):
        parse_agent_file("no frontmatter", "f.md", "project")
    with pytest.raises(AgentFileError, match="needs a 'description'"):
        parse_agent_file("---\nname: x\n---\nbody", "f.md", "project")
    with pytest.raises(AgentFileError, match="--agents is not valid JSON"):
        agents_from_json("{nope")
    with pytest.raises(AgentFileError, match="needs a 'prompt'"):
        agents_from_json({"x": {"description": "d"}})
    home, ws = tmp_path / "home", tmp_path / "ws"
    (home / ".claude" / "agents").mkdir(parents=True)
    (ws / ".claude" / "agents").mkdir(parents=True)
    (home / ".claude" / "agents" / "x.md").write_text("---\nname: x\ndescription: user's\n---\nu")
    (ws / ".claude" / "agents" / "x.md").write_text("---\nname: x\ndescription: project's\n---\np")
    (ws / ".claude" / "agents" / "bad.md").write_text("not an agent")
    agents = load_agents(str(ws), str(home))
    assert sorted(agents) == ["general-purpose", "x"] and agents["x"].description == "project's"


def test_subagent_stop_hooks_run_for_a_child_and_stop_hooks_only_for_the_parent(engine, ws):
    from workflows.hooks.settings import parse_hooks

    log = ws / "hooks.log"
    hooks = parse_hooks({event: [{"hooks": [{"type": "command", "command": f"echo {event} >> {log}"}]}]
                         for event in ("Stop", "SubagentStop")}, "test")
    model = scripted_model(family([Turn(tool_uses=[task(1)]), Turn(text="parent done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True), SessionSetup(hooks=hooks))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    assert log.read_text().split() == ["SubagentStop", "Stop"]
    assert report_of(tool_results(engine, rec.id)["toolu_task1"].content) == "answer to child job 1"


def test_removing_a_parent_removes_its_sub_agents(engine, ws):
    model = scripted_model(family([Turn(tool_uses=[task(1), task(2)]), Turn(text="x")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    children = engine.store.get_session(rec.id).children
    engine.delete_session(rec.id)
    assert not any(engine.store.r.exists(f"mainsail:session:{s}") for s in [rec.id, *children])
    assert not set(engine.store.session_ids()) & {rec.id, *children}


def test_an_agent_call_without_a_type_runs_general_purpose(engine, ws):
    """Claude Code 2.1 offers the tool as Agent (Task still allowed by --tools); subagent_type may be left out."""
    call = ToolUse(id="toolu_agent1", name="Agent", input={"description": "look", "prompt": "child job 1"})
    model = scripted_model(family([Turn(tool_uses=[call]), Turn(text="done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions",
                                                        tools=["Task", "Read"]))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.drain()
    (kid,) = engine.store.get_session(rec.id).children
    assert engine.store.get_session(kid).agent_type == "general-purpose"
    assert report_of(tool_results(engine, rec.id)["toolu_agent1"].content) == "answer to child job 1"
    assert results(engine, rec.id)[-1].result == "done"


def test_an_agent_call_s_model_overrides_the_agent_s(engine, ws):
    call = ToolUse(id="toolu_agent1", name="Agent",
                   input={"description": "look", "prompt": "child job 1", "model": "haiku"})
    model = scripted_model(family([Turn(tool_uses=[call]), Turn(text="done")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "go"))
    inline.run(1)  # the parent's model call starts the child
    (kid,) = engine.store.get_session(rec.id).children
    assert engine.store.get_session(kid).model == "haiku"


@pytest.mark.parametrize("rule", ["Agent(general-purpose)", "Task(general-purpose)", "Agent"])
def test_a_deny_rule_may_name_the_tool_agent_or_task(rule):
    """Claude Code 2.1 names the tool Agent in rules too; a call without a type is general-purpose."""
    from workflows.models import PermissionMode, RuleSet
    from workflows.permissions import Decision, evaluate

    rules = RuleSet()
    rules.add("deny", rule, "/x/.claude/settings.json")
    result = evaluate("Task", {"description": "d", "prompt": "p"}, mode=PermissionMode.BYPASS, rules=rules,
                      workspace="/ws", home="/home/u", read_only=True)
    assert result.decision is Decision.DENY
