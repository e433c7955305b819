"""Structured output (issue 28, item 3): the Agent SDK's ``output_format`` (``--json-schema``) through the
installed ``mainsail``, against the fake Messages API with a real worker; and the same flag through Claude Code's
own CLI, side by side. What Claude Code 2.1.332 does: it offers the model a StructuredOutput tool whose
``input_schema`` is the schema, answers an input that does not match with an error result (the model calls again),
ends the run at the first valid call (no model call after it) with the object in the result's
``structured_output`` and its JSON in ``result``, tells a model that ends without calling it to call it (once), and
gives up after 5 invalid calls (``error_max_structured_output_retries``)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL
from tests.e2e.test_agent_sdk import collect, options, serving
from tests.e2e.test_claude_code_parity import CLAUDE, MODEL, PARSED, lines, shape
from tests.fakeapi import FakeMessagesServer, assistant_turns

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import ResultError, ResultMessage, UserMessage  # noqa: E402

pytestmark = pytest.mark.e2e

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"],
          "additionalProperties": False}
FORMAT = {"type": "json_schema", "schema": SCHEMA}
DESCRIPTION = ("Use this tool to return your final response in the requested structured format. You MUST call this "
               "tool exactly once at the end of your response to provide the structured output.")


def answers(*inputs: dict):
    """StructuredOutput called with each of ``inputs`` in turn, then a plain answer."""

    def turn(body: dict) -> Turn:
        n = assistant_turns(body)
        if n < len(inputs):
            return Turn(text=f"Answer {n}.", tool_uses=[ToolUse(name="StructuredOutput", input=inputs[n])])
        return Turn(text="Plain text.")

    return turn


def structured_tool(body: dict) -> dict:
    (tool,) = [t for t in body["tools"] if t["name"] == "StructuredOutput"]
    return tool


def strip(tool: dict) -> dict:
    """A tool definition without its cache breakpoint (which sits on the last tool offered)."""
    return {k: v for k, v in tool.items() if k != "cache_control"}


def sent(contents: list) -> list:
    """The newest message of each request, but for cache breakpoints and Claude Code's token-budget reminder."""
    def block(b: dict) -> dict:
        out = {k: v for k, v in b.items() if k != "cache_control"}
        if isinstance(out.get("content"), str):
            out["content"] = out["content"].split("\n\n<system-reminder>")[0]
        return out

    return [[block(b) for b in content] for content in contents]


def tool_results(msgs: list) -> list[tuple[str, bool]]:
    return [(b.content, bool(b.is_error)) for m in msgs if isinstance(m, UserMessage) and isinstance(m.content, list)
            for b in m.content if type(b).__name__ == "ToolResultBlock"]


def test_a_valid_call_ends_the_run_with_its_object(cluster, workspace):
    with serving(cluster, answers({"answer": 4})) as api:
        msgs = collect("what is 2+2", options(cluster, workspace, output_format=FORMAT))
    assert strip(structured_tool(api.requests[0])) == {
        "name": "StructuredOutput", "description": DESCRIPTION, "input_schema": SCHEMA}
    assert "StructuredOutput" in msgs[0].data["tools"]
    result = msgs[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success" and not result.is_error
    assert result.structured_output == {"answer": 4} and result.result == '{"answer":4}'
    assert len(api.requests) == 1, "no model call after a valid StructuredOutput call"
    assert result.num_turns == 2 and result.stop_reason == "tool_use"
    assert tool_results(msgs) == [("Structured output provided successfully", False)]
    (sid,) = cluster.store.session_ids()
    (entry,) = [e for e in cluster.store.entries(sid) if type(e).__name__ == "ResultEntry"]
    assert entry.structured_output == {"answer": 4}


def test_an_invalid_call_gets_the_error_and_the_model_calls_again(cluster, workspace):
    with serving(cluster, answers({"answer": "four"}, {}, {"answer": 4})) as api:
        msgs = collect("what is 2+2", options(cluster, workspace, output_format=FORMAT))
    assert tool_results(msgs) == [
        ("Output does not match required schema: /answer: must be integer", True),
        ("Output does not match required schema: root: must have required property 'answer'", True),
        ("Structured output provided successfully", False)]
    assert len(api.requests) == 3
    last = api.requests[-1]["messages"][-1]["content"][0]
    assert last["is_error"] and "must have required property 'answer'" in last["content"]
    assert msgs[-1].structured_output == {"answer": 4}


def test_five_invalid_calls_end_the_run_in_error(cluster, workspace):
    with serving(cluster, answers(*[{"answer": "x"}] * 6)) as api:
        with pytest.raises(ResultError) as raised:
            collect("what is 2+2", options(cluster, workspace, output_format=FORMAT))
    assert raised.value.subtype == "error_max_structured_output_retries"
    assert raised.value.errors == ["Failed to provide valid structured output after 5 attempts \u2014 last "
                                   "StructuredOutput error: Output does not match required schema: /answer: must be "
                                   "integer"]
    assert len(api.requests) == 5


def test_a_model_that_ends_without_calling_it_is_told_once(cluster, workspace):
    with serving(cluster, answers()) as api:
        msgs = collect("what is 2+2", options(cluster, workspace, output_format=FORMAT))
    assert len(api.requests) == 2
    told = api.requests[1]["messages"][-1]["content"][-1]["text"]
    assert told == ("[structured-output-enforce] You MUST call the StructuredOutput tool to complete this request. "
                    "Call this tool now.")
    result = msgs[-1]
    assert result.subtype == "success" and result.result == "Plain text." and result.structured_output is None


def test_a_resumed_session_keeps_the_schema_of_the_command_that_resumes_it(cluster, workspace):
    """--json-schema is the command's: a resume without it offers no StructuredOutput (as Claude Code's)."""
    with serving(cluster, answers({"answer": 4})) as api:
        first = collect("what is 2+2", options(cluster, workspace, output_format=FORMAT))[-1]
        api.set_script(lambda body: Turn(text="Plain."))
        again = collect("and now?", options(cluster, workspace, resume=first.session_id))[-1]
    assert again.result == "Plain." and again.structured_output is None
    assert all(t["name"] != "StructuredOutput" for t in api.requests[-1]["tools"])


def test_a_bad_schema_is_refused_before_anything_starts(cluster, workspace):
    for value, why in (("{bad", "--json-schema is not valid JSON"), ("[1]", "--json-schema must be a JSON object"),
                       ('{"type": "object", "properties": {"a": {"type": "nope"}}}', "not a valid JSON Schema")):
        out = subprocess.run([MAINSAIL, "-p", "hi", "--json-schema", value], cwd=workspace, env=cluster.env,
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert out.returncode == 2 and why in out.stderr and "Traceback" not in out.stderr
    assert cluster.store.session_ids() == []


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
@pytest.mark.parametrize("inputs", [({"answer": "four"}, {"answer": 4}), ()], ids=["retried", "never-called"])
def test_tool_definition_lines_and_result_match_claude_codes(cluster, tmp_path, inputs):
    """The same --json-schema run through both CLIs: the StructuredOutput definition they send, their stream-json
    lines (the tool results of an invalid and a valid call; the reminder to a model that never calls it), and the
    result line's keys and values."""
    args = ["-p", "what is 2+2", "--output-format", "stream-json", "--verbose", "--model", MODEL,
            "--permission-mode", "bypassPermissions", "--json-schema", json.dumps(SCHEMA)]
    runs = {}
    for who in ("ours", "theirs"):
        with FakeMessagesServer(answers(*inputs)) as api:
            ws = tmp_path / who
            ws.mkdir()
            if who == "ours":
                cluster.env["ANTHROPIC_BASE_URL"] = api.url
                cluster.start_worker()
                cmd, env = [MAINSAIL, *args], cluster.env
            else:
                (tmp_path / "home").mkdir()
                cmd = [str(CLAUDE), *args]
                env = dict(os.environ, HOME=str(tmp_path / "home"), ANTHROPIC_BASE_URL=api.url,
                           ANTHROPIC_API_KEY="test-key", IS_SANDBOX="1", DISABLE_AUTOUPDATER="1",
                           CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
            try:
                out = subprocess.run(cmd, cwd=ws, env=env, capture_output=True, text=True, timeout=120,
                                     stdin=subprocess.DEVNULL)
            except OSError as exc:  # a bundled binary for another platform
                pytest.skip(f"the bundled Claude Code CLI does not run here: {exc}")
            assert out.returncode == 0, out.stderr[-2000:]
            runs[who] = (lines(out.stdout), [structured_tool(b) for b in api.requests],
                         [b["messages"][-1]["content"] for b in api.requests[1:]])  # (after the prompt)
    (ours, our_tools, our_last), (theirs, their_tools, their_last) = runs["ours"], runs["theirs"]
    assert [strip(t) for t in our_tools] == [strip(t) for t in their_tools]
    assert len(our_tools) == 2
    assert [shape(x) for x in ours] == [shape(x) for x in theirs], "\n".join(
        f"{'ours':6} {shape(x)}" for x in ours) + "\n" + "\n".join(f"{'theirs':6} {shape(x)}" for x in theirs)
    assert sent(our_last) == sent(their_last)
    users = [[(x["message"]["content"][0].get("content", x["message"]["content"][0].get("text")),
               x["message"]["content"][0].get("is_error", False), x.get("tool_use_result"))
              for x in out if x["type"] == "user"] for out in (ours, theirs)]
    assert users[0] == users[1] and users[0]
    a, b = ours[-1], theirs[-1]
    keys = ("type", "subtype", "is_error", "num_turns", "stop_reason", "terminal_reason", "result",
            "structured_output")
    assert {k: a.get(k) for k in keys} == {k: b.get(k) for k in keys}
    assert ("structured_output" in a) == ("structured_output" in b) == bool(inputs)
    assert PARSED["result"] <= set(a) & set(b)
