"""Session titles (workflows/titles.py): after the first turn the small model names the session, once; a
failure keeps the prompt's title; the call is a side call the scripted model answers apart from the turns."""

from __future__ import annotations

from demo.scripted import Script, ScriptError, ToolUse, Turn
from tests.inline import Inline, api_of, scripted_model
from workflows.engine import Engine
from workflows.model.side_calls import fork_kind
from workflows.models import StepKind, StepStatus
from workflows.models.options import SessionOptions
from workflows.titles import SYSTEM, clean_title, title_request


def titled(engine: Engine) -> Engine:
    return Engine(engine.store, engine.settings.model_copy(update={"session_titles": True, "session_memory": False}))


def run(engine, ws, script: Script, *prompts: str):
    model = scripted_model(script)
    rec = engine.create_session(str(ws), SessionOptions(model=model, permission_mode="bypassPermissions", no_memory=True))
    inline = Inline(engine)
    for prompt in prompts:
        inline.dispatch(engine.submit(rec.id, prompt))
        inline.drain()
    return engine.store.get_session(rec.id), inline, api_of(model)


def test_the_small_model_names_the_session_after_its_first_turn_once(engine, ws):
    engine = titled(engine)
    read = ToolUse(name="Read", input={"file_path": "calc.py"})
    script = Script(turns=[Turn(text="Looking.", tool_uses=[read]), Turn(text="The add() test fails: it subtracts."),
                           Turn(text="Fixed.")],
                    title=[Turn(text='"Fix failing add test in calc.py."')])
    rec, inline, api = run(engine, ws, script, "why does   the test\nfail? " + "x" * 80, "fix it")
    assert rec.title == "Fix failing add test in calc.py"
    titles = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.TITLE]
    assert len(titles) == 1 and titles[0].status is StepStatus.DONE and titles[0].queue == "model"
    asked = api.fork_requests("title")
    assert len(asked) == 1 and asked[0]["system"] == SYSTEM
    assert "User: why does   the test\nfail?" in asked[0]["messages"][0]["content"]
    assert "Assistant: The add() test fails: it subtracts." in asked[0]["messages"][0]["content"]
    assert len(api.requests) == 3  # the session's own turns: the title call is not one of them
    assert rec.cost_by_kind.get("title") is not None and rec.usage_by_kind["title"].output_tokens > 0
    assert rec.run_memory_usage.output_tokens == 0  # beside the runs: not shown as a run's memory cost


def test_a_failed_title_call_keeps_the_prompt_as_the_title(engine, ws):
    engine = titled(engine)
    failing = Turn(text="x", errors=[ScriptError(status=400, type="invalid_request_error")])
    rec, _, _ = run(engine, ws, Script(turns=[Turn(text="Hi.")], title=[failing]), "say hi to the team")
    assert rec.title == "say hi to the team"
    (step,) = [s for s in engine.store.steps(rec.id) if s.kind is StepKind.TITLE]
    assert step.status is StepStatus.FAILED and "400" in step.error
    assert rec.state.value == "idle"


def test_without_a_script_the_scripted_title_is_the_prompt_and_sub_agents_ask_none(engine, ws):
    engine = titled(engine)
    rec, _, api = run(engine, ws, Script(turns=[Turn(text="Hi.")]), "say  hi\nto the team")
    assert rec.title == "say hi to the team" and len(api.fork_requests("title")) == 1


def test_title_requests_are_side_calls_and_answers_are_cleaned():
    assert fork_kind(title_request("claude-haiku-5-5", "p", "a")) == "title"
    assert clean_title("\n  Title: **Fix the parser.**\nmore") == "Fix the parser"
    assert clean_title("   \n") is None
    assert len(clean_title("word " * 40)) == 80
