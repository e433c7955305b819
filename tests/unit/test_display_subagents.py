"""How sub-agents and tool lines are shown: unique Task labels, children nested under their Task call in a
replay (``show``, ``watch``, a resume's recap), paths relative to the session's directory."""

from __future__ import annotations

import pytest

import io

from rich.console import Console

from cli.render import Renderer
from cli.shown import shown_path
from cli.replay import replay
from demo.scripted import ToolUse, Turn
from tests.fakeapi import assistant_turns, first_prompt
from tests.inline import Inline, scripted_model
from workflows.agents.labels import MAX_LABEL, TaskLabels
from workflows.models import AssistantEntry, AssistantMessage, ToolUseBlock, UserEntry
from workflows.models.options import SessionOptions


def renderer() -> tuple[Renderer, io.StringIO]:
    buf = io.StringIO()
    r = Renderer(show_prompts=True, show_requests=False)
    r.console = Console(file=buf, width=200, color_system=None)
    return r, buf


def test_two_task_calls_with_one_description_get_distinct_labels():
    labels = TaskLabels()
    assert labels.add("t1", "look around") == "look around"
    assert labels.add("t2", "look around") == "look around #2"
    assert labels.add("t3", "look around #2") == "look around #2 #2"  # never a label already given
    assert labels.add("t1", "look around") == "look around"  # one call, one label
    assert labels.add("t4", "") == "sub-agent"
    long = labels.add("t5", "x" * 100)
    assert len(long) == MAX_LABEL and labels.add("t6", "x" * 100).endswith("... #2")


def _task_reply(sid: str, cwd: str, name: str = "Task") -> AssistantEntry:
    same = {"description": "look around", "prompt": "list the files", "subagent_type": "general-purpose"}
    return AssistantEntry(session_id=sid, cwd=cwd, message=AssistantMessage(role="assistant", content=[
        ToolUseBlock(id="toolu_a", name=name, input=same), ToolUseBlock(id="toolu_b", name=name, input=same)]))


def _child_call(child: str, cwd: str, path: str) -> AssistantEntry:
    return AssistantEntry(session_id=child, cwd=cwd, message=AssistantMessage(role="assistant", content=[
        ToolUseBlock(id=f"toolu_{child}", name="Read", input={"file_path": path})]))


def test_live_lines_of_two_sub_agents_with_one_prompt_carry_their_own_labels():
    r, buf = renderer()
    r.entry(_task_reply("parent", "/ws"))
    # the feed links each child to its Task call (from its record), the second one first here
    r.link_child("kid2", "toolu_b")
    r.link_child("kid1", "toolu_a")
    for kid, path in (("kid1", "/ws/a.py"), ("kid2", "/ws/b.py")):
        r.child_entry(kid, UserEntry(session_id=kid, message={"role": "user", "content": "list the files"}))
    r.child_entry("kid2", _child_call("kid2", "/ws", "/ws/b.py"))
    r.child_entry("kid1", _child_call("kid1", "/ws", "/ws/a.py"))
    out = buf.getvalue()
    assert "⏺ Task(look around)" in out and "⏺ Task(look around #2)" in out
    assert "[look around #2] ⏺ Read(b.py)" in out and "[look around] ⏺ Read(a.py)" in out


@pytest.mark.parametrize("name", ["Task", "Agent"])  # Agent: Claude Code 2.1's name for it
def test_without_links_sub_agents_with_one_prompt_take_the_calls_in_order(name):
    r, buf = renderer()
    r.entry(_task_reply("parent", "/ws", name))
    for kid in ("kid1", "kid2"):
        r.child_entry(kid, UserEntry(session_id=kid, message={"role": "user", "content": "list the files"}))
        r.child_entry(kid, _child_call(kid, "/ws", f"/ws/{kid}.py"))
    out = buf.getvalue()
    assert "[look around] ⏺ Read(kid1.py)" in out and "[look around #2] ⏺ Read(kid2.py)" in out


def test_paths_inside_the_directory_are_shown_relative_to_it_and_others_as_given():
    assert shown_path("/ws/src/a.py", "/ws") == "src/a.py"
    assert shown_path("/ws", "/ws/") == "."
    assert shown_path("/wsx/a.py", "/ws") == "/wsx/a.py"
    assert shown_path("/etc/passwd", "/ws") == "/etc/passwd"
    assert shown_path("rel.py", "/ws") == "rel.py"
    r, buf = renderer()
    r.entry(AssistantEntry(session_id="s", cwd="/ws", message=AssistantMessage(role="assistant", content=[
        ToolUseBlock(id="t1", name="Edit", input={"file_path": "/ws/calc.py", "old_string": "a", "new_string": "b"}),
        ToolUseBlock(id="t2", name="Grep", input={"pattern": "x", "path": "/ws/src"}),
        ToolUseBlock(id="t3", name="Read", input={"file_path": "/tmp/out.txt"}),
        ToolUseBlock(id="t4", name="Bash", input={"command": "/ws/run.sh"})])))
    out = buf.getvalue()
    assert "Edit(calc.py)" in out and "Grep(x)" in out and "Read(/tmp/out.txt)" in out
    assert "Bash(/ws/run.sh)" in out  # a command is not a path: shown as the model wrote it


def _same_prompt_family(ws):
    same = {"description": "look around", "prompt": "child job", "subagent_type": "general-purpose"}

    (ws / "notes.md").write_text("notes\n")
    files = iter(["calc.py", "notes.md"])

    def turn(body: dict) -> Turn:
        prompt = first_prompt(body)
        if prompt.startswith("child job"):
            if assistant_turns(body) == 0:  # each child reads a file of its own (the first calc.py)
                return Turn(tool_uses=[ToolUse(id="toolu_r", name="Read", input={"file_path": str(ws / next(files))})])
            return Turn(text="child done")
        if assistant_turns(body) == 0:
            return Turn(tool_uses=[ToolUse(id="toolu_t1", name="Task", input=same),
                                   ToolUse(id="toolu_t2", name="Task", input=same)])
        return Turn(text="all done")

    return turn


def test_show_nests_each_sub_agents_lines_under_its_own_task_call(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(model=scripted_model(_same_prompt_family(ws)), permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "split the work"))
    inline.drain()
    r, buf = renderer()
    replay(engine.store, rec.id, r)
    out = buf.getvalue().splitlines()
    task_lines = [i for i, line in enumerate(out) if line.startswith("⏺ Task(")]
    assert [out[i] for i in task_lines] == ["⏺ Task(look around)", "⏺ Task(look around #2)"]
    # right under each Task call: its own sub-agent's Read and the Read's result, then its end
    children = {c.parent_tool_use_id: c.id
                for c in engine.store.get_sessions(engine.store.get_session(rec.id).children)}
    for i, call in zip(task_lines, ["toolu_t1", "toolu_t2"]):
        read = next(tu for e in engine.store.entries(children[call]) if isinstance(e, AssistantEntry)
                    for tu in e.message.tool_uses())
        assert out[i + 1] == f"    ⏺ Read({read.input['file_path'].rsplit('/', 1)[1]})", out
        assert out[i + 2].startswith("      ⎿  ")
        assert out[i + 3].startswith("    ✓ sub-agent ")
    assert {out[i + 1] for i in task_lines} == {"    ⏺ Read(calc.py)", "    ⏺ Read(notes.md)"}


def test_stream_json_gives_each_same_prompt_child_its_own_task_call_id():
    from cli.output import StreamJson

    lines: list[str] = []
    stream = StreamJson(lines.append)
    stream.entry(_task_reply("parent", "/ws"))
    stream.link_child("kid2", "toolu_b")  # as the feed links them, from the children's records
    stream.link_child("kid1", "toolu_a")
    for kid in ("kid1", "kid2"):
        stream.child_entry(kid, UserEntry(session_id=kid, message={"role": "user", "content": "list the files"}))
    stream.child_entry("kid2", _child_call("kid2", "/ws", "/ws/b.py"))
    stream.child_entry("kid1", _child_call("kid1", "/ws", "/ws/a.py"))
    import json

    calls = {json.loads(line)["message"]["content"][0]["input"]["file_path"]: json.loads(line)["parent_tool_use_id"]
             for line in lines if json.loads(line)["type"] == "assistant" and json.loads(line).get("parent_tool_use_id")}
    assert calls == {"/ws/a.py": "toolu_a", "/ws/b.py": "toolu_b"}


def test_the_resume_picker_shows_each_sessions_age_and_turns_and_no_sub_agents(engine, ws, capsys):
    from types import SimpleNamespace

    from cli.interactive_habits import pick_recent

    model = scripted_model(_same_prompt_family(ws))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "split the work"))
    inline.drain()
    asked: list[str] = []
    chosen = pick_recent(SimpleNamespace(store=engine.store), ws, lambda q: asked.append(q) or "1")
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if rec.id[:8] in line]
    assert "split the work" in row and "s ago" in row and "2 turns" in row and row.rstrip().endswith("idle"), row
    assert out.count(" turn") == 1, out  # the sub-agents (same workspace) are not offered
    assert chosen == rec.id and asked


def test_a_resume_recaps_the_whole_conversation_compactly(engine, ws, capsys):
    from cli.interactive_open import recap

    model = scripted_model(_same_prompt_family(ws))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions"))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "split the work"))
    inline.drain()
    inline.dispatch(engine.submit(rec.id, "and now?"))
    inline.drain()
    recap(engine.store, rec.id)
    out = capsys.readouterr().out
    assert out.index("> split the work") < out.index("⏺ Task(look around)") < out.index("> and now?"), out
    assert "    ⏺ Read(calc.py)" in out and "all done" in out
    assert "✓ session" not in out and "state" not in out  # compact: no closing lines, no state changes
