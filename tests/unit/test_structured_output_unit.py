"""Structured output (--json-schema): the schema's check, the error texts in Claude Code's words (measured on
2.1.332, whose validator is ajv), the tool offered with the session's schema, and the run's end through the engine
(a valid call ends it, invalid ones are retried up to 5, a model that never calls is told once)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cli.headless.command import main_command
from cli.output import result_json
from demo.scripted import Script, ToolUse, Turn
from tests.inline import Inline, api_of, scripted_model
from workflows.context.assemble import build_request, offered_tools
from workflows.models import ResultEntry, StepKind, UserEntry
from workflows.models.options import SessionOptions
from workflows.tools.structured import ENFORCE, check_schema, problems

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer", "minimum": 0}, "tag": {"enum": ["a", "b"]},
          "name": {"type": "string", "minLength": 3, "pattern": "^x"},
          "items": {"type": "array", "maxItems": 1, "items": {"type": "number"}}},
          "required": ["answer"], "additionalProperties": False}


@pytest.mark.parametrize("value, text", [
    # Each as Claude Code 2.1.332 answered the same input for the same schema.
    ({"answer": "x", "extra": 1},
     "root: must NOT have additional properties ('extra' is not allowed), /answer: must be integer"),
    ({"answer": -1}, "/answer: must be >= 0"),
    ({"answer": 1, "tag": "c"}, '/tag: must be equal to one of the allowed values: ["a","b"]'),
    ({"answer": 1, "name": "xy"}, "/name: must NOT have fewer than 3 characters (got 2)"),
    ({"answer": 1, "name": "yyyy"}, '/name: must match pattern "^x"'),
    ({"answer": 1, "items": [1, 2]}, "/items: must NOT have more than 1 items (got 2)"),
    ({"answer": 1, "items": ["s"]}, "/items/0: must be number"),
    ({"answer": 1.5}, "/answer: must be integer"),
    ({"extra": 1}, "root: must have required property 'answer', root: must NOT have additional properties "
                   "('extra' is not allowed)"),
])
def test_problems_are_worded_as_claude_codes(value, text):
    assert problems(SCHEMA, value) == text


def test_a_matching_value_has_no_problem():
    assert problems(SCHEMA, {"answer": 3, "tag": "a", "name": "xyz", "items": [2.5]}) is None


@pytest.mark.parametrize("schema, why", [
    ([1], "must be a JSON object"),
    ({"type": "object", "properties": {"a": {"type": "nope"}}}, "not a valid JSON Schema: properties/a/type"),
    ({"type": "string"}, "must describe an object"),
])
def test_a_schema_that_cannot_be_a_tools_input_is_refused(schema, why):
    with pytest.raises(ValueError, match=why):
        check_schema(schema)


def test_the_flag_refuses_a_bad_schema_by_name():
    out = CliRunner().invoke(main_command, ["-p", "hi", "--json-schema", "{bad"])
    assert out.exit_code == 2 and "--json-schema is not valid JSON" in out.output


def session(engine, ws, turns, schema=SCHEMA, **more):
    model = scripted_model(Script(turns=turns))
    rec = engine.create_session(str(ws), SessionOptions(model=model, json_schema=schema, **more))
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "answer"))
    inline.drain()
    kinds = [step.kind for step in inline.ran]
    entries = engine.store.entries(rec.id)
    results = [e.message.blocks()[0] for e in entries if isinstance(e, UserEntry) and e.origin == "tool_result"]
    (result,) = [e for e in entries if isinstance(e, ResultEntry)]
    return engine.store.get_session(rec.id), result, results, api_of(model), kinds


def call(value: dict) -> Turn:
    return Turn(text="Here.", tool_uses=[ToolUse(name="StructuredOutput", input=value)])


def test_the_tool_is_offered_with_the_sessions_schema_last_and_only_with_one(engine, ws):
    rec = engine.create_session(str(ws), SessionOptions(json_schema=SCHEMA, tools=["Read"]))
    assert offered_tools(rec) == ["Read", "StructuredOutput"]
    tools = build_request(rec, [], 100)["tools"]
    assert tools[-1]["name"] == "StructuredOutput" and tools[-1]["input_schema"] == SCHEMA
    assert "StructuredOutput" not in offered_tools(engine.create_session(str(ws), SessionOptions()))


def test_a_valid_call_ends_the_run_without_another_model_call(engine, ws):
    rec, result, results, api, kinds = session(engine, ws, [call({"answer": 4}), Turn(text="never sent")])
    assert len(api.requests) == 1 and StepKind.TOOL not in kinds, "applied with the reply, no tool step"
    assert [r.text for r in results] == ["Structured output provided successfully"]
    assert result.subtype == "success" and result.structured_output == {"answer": 4}
    assert result.result == '{"answer":4}' and result.num_turns == 2
    assert rec.state.value == "idle"
    line = result_json(result, "tool_use")
    assert line["structured_output"] == {"answer": 4} and line["terminal_reason"] == "completed"


def test_an_invalid_call_is_an_error_result_and_the_model_calls_again(engine, ws):
    rec, result, results, api, _ = session(engine, ws, [call({"answer": "four"}), call({"answer": 4})])
    assert [(r.text, bool(r.is_error)) for r in results] == [
        ("Output does not match required schema: /answer: must be integer", True),
        ("Structured output provided successfully", False)]
    assert len(api.requests) == 2 and result.structured_output == {"answer": 4}


def test_five_invalid_calls_end_the_run_in_error(engine, ws):
    rec, result, results, api, _ = session(engine, ws, [call({"answer": "x"})] * 6)
    assert len(api.requests) == 5 and len(results) == 5
    assert result.subtype == "error_max_structured_output_retries" and result.is_error and result.num_turns == 6
    assert result.result == ("Failed to provide valid structured output after 5 attempts \u2014 last StructuredOutput "
                             "error: Output does not match required schema: /answer: must be integer")
    line = result_json(result, "tool_use")
    assert line["subtype"] == "error_max_structured_output_retries"
    assert line["terminal_reason"] == "structured_output_retry_exhausted" and line["errors"] == [result.result]
    assert "structured_output" not in line and "result" not in line


def test_a_model_that_ends_without_calling_it_is_told_once(engine, ws):
    rec, result, _, api, _ = session(engine, ws, [Turn(text="four"), Turn(text="still four")])
    assert len(api.requests) == 2
    assert api.requests[1]["messages"][-1]["content"][-1]["text"] == ENFORCE
    assert result.subtype == "success" and result.result == "still four" and result.structured_output is None
    assert "structured_output" not in result_json(result)


def test_each_run_starts_afresh(engine, ws):
    rec, first, _, api, _ = session(engine, ws, [call({"answer": 1}), Turn(text="plain"), call({"answer": 2})])
    inline = Inline(engine)
    inline.dispatch(engine.submit(rec.id, "again"))
    inline.drain()
    second = [e for e in engine.store.entries(rec.id) if isinstance(e, ResultEntry)][-1]
    assert first.structured_output == {"answer": 1} and second.structured_output == {"answer": 2}
    assert api.requests[2]["messages"][-1]["content"][-1]["text"] == ENFORCE, "the second run is told too"


def test_without_a_schema_a_call_is_an_error_result(engine, ws):
    rec, result, results, _, _ = session(engine, ws, [call({"answer": 4}), Turn(text="ok")], schema=None)
    assert results[0].is_error and "--json-schema" in results[0].text
    assert result.structured_output is None and result.result == "ok"


def test_a_resume_sets_the_commands_schema(engine, ws):
    from workflows.sessions.service import SessionService

    rec = engine.create_session(str(ws), SessionOptions(json_schema=SCHEMA))
    svc = SessionService(engine)
    svc.resume(rec.id, SessionOptions(), ws)
    assert engine.store.get_session(rec.id).json_schema == SCHEMA, "a front door that does not set it keeps it"
    svc.resume(rec.id, SessionOptions(json_schema=None), ws)
    assert engine.store.get_session(rec.id).json_schema is None


def test_stream_json_streams_the_reminder_as_claude_code_does():
    from cli.output import StreamJson
    from workflows.models import Message

    out: list[str] = []
    stream = StreamJson(out.append, lambda: None)
    told = UserEntry(session_id="s", message=Message(role="user", content=ENFORCE), origin="synthetic")
    other = UserEntry(session_id="s", message=Message(role="user", content="Stop hook feedback:\nno"),
                      origin="synthetic")
    assert [line["message"]["content"] for line in stream.entry(told)] == [[{"type": "text", "text": ENFORCE}]]
    assert stream.entry(other) == [] and len(out) == 1
