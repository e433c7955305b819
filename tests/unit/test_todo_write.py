"""TodoWrite: Claude Code's schema, kept in the session record in the reply's own commit, shown as a checklist."""

from __future__ import annotations

import io

from rich.console import Console

from cli.render import Renderer
from cli.sessions import describe
from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, scripted_model
from workflows.models import StepKind, UserEntry
from workflows.models.options import SessionOptions
from workflows.tools import tool_schemas
from workflows.tools.todo import RESULT

TODOS = [{"content": "Read calc.py", "status": "completed", "activeForm": "Reading calc.py"},
         {"content": "Fix add()", "status": "in_progress", "activeForm": "Fixing add()"},
         {"content": "Run it", "status": "pending", "activeForm": "Running it"}]


def run(engine, ws, todos, mode="default"):
    model = scripted_model(Script(turns=[Turn(tool_uses=[ToolUse(name="TodoWrite", input={"todos": todos})]),
                                         Turn(text="planned")]))
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode=mode))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "plan it"))
    kinds = []
    while inline.queue:
        kinds.append(inline.queue[0].kind)
        inline.run(1)
    return engine.store.get_session(rec.id), kinds


def results(engine, sid):
    return [e for e in engine.store.entries(sid) if isinstance(e, UserEntry) and e.origin == "tool_result"]


def test_the_list_is_kept_in_the_record_without_a_tool_step_in_every_mode(engine, ws):
    for mode in ("default", "plan"):
        rec, kinds = run(engine, ws, TODOS, mode)
        assert rec.todos == TODOS
        assert StepKind.TOOL not in kinds, "no worker round trip for the list"
        (result,) = results(engine, rec.id)
        assert result.message.blocks()[0].text == RESULT and not result.message.blocks()[0].is_error
        assert rec.state.value == "idle"


def test_an_invalid_list_is_an_error_result_and_keeps_the_old_one(engine, ws):
    rec, _ = run(engine, ws, [{"content": "x", "status": "done", "activeForm": "x"}])
    assert rec.todos == []
    (result,) = results(engine, rec.id)
    assert result.message.blocks()[0].is_error and "status" in result.message.blocks()[0].text


def test_claude_codes_schema_is_offered():
    (schema,) = [s for s in tool_schemas() if s["name"] == "TodoWrite"]
    item = schema["input_schema"]["$defs"]["TodoItem"]
    assert set(item["required"]) == {"content", "status", "activeForm"}
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]


def test_watch_and_show_print_a_checklist(engine, ws):
    rec, _ = run(engine, ws, TODOS)
    buf = io.StringIO()
    r = Renderer(show_prompts=False, show_requests=False)
    r.console = Console(file=buf, width=120, color_system=None)
    for e in engine.store.entries(rec.id):
        r.entry(e)
    shown = buf.getvalue()
    assert "TodoWrite(3 todos)" in shown
    assert "☒ Read calc.py" in shown and "◐ Fixing add()" in shown and "☐ Run it" in shown
    facts = "\n".join(describe(rec, []))
    assert "todos       1/3 done" in facts and "◐ Fixing add()" in facts
