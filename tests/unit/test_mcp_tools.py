"""An MCP tool as Mainsail runs it: names as Claude Code makes them, input checked against the server's
schema (never fetching a remote $ref), results as Claude Code gives them to the model."""

from __future__ import annotations

import socket
import threading
from types import SimpleNamespace as NS

import pytest

from workflows.exceptions import ToolInputError
from workflows.mcp.calls import definitions
from workflows.mcp.tools import McpTool, full_name, to_output
from workflows.models.mcp import McpToolDef


def tool(schema) -> McpTool:
    return McpTool(McpToolDef(name="mcp__s__t", server="s", tool="t", input_schema=schema))


def test_names_are_claude_codes_and_unusable_ones_are_left_out_saying_why():
    assert full_name("github", "create.issue v2") == "mcp__github__create_issue_v2"
    found = definitions("s", [NS(name="o_k", description="d", input_schema={"type": "object"}),
                               NS(name="x" * 70, description="", input_schema=None),
                               NS(name="o.k", description="", input_schema={})])
    assert [d.name for d in found.tools] == ["mcp__s__o_k"]
    assert "over 64 characters" in found.skipped[0] and "another of its tools" in found.skipped[1]


def test_input_is_checked_against_the_servers_schema():
    t = tool({"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"],
              "additionalProperties": False})
    assert t.validate({"n": 2}) == {"n": 2}
    with pytest.raises(ToolInputError, match=r"Invalid input for mcp__s__t: n: 0 is less than the minimum of 1"):
        t.validate({"n": 0})
    with pytest.raises(ToolInputError, match="'n' is a required property"):
        t.validate({})
    with pytest.raises(ToolInputError, match="must be a JSON object"):
        t.validate([1])
    with pytest.raises(ToolInputError, match="NUL byte"):
        tool({"type": "object"}).validate({"s": "a\0b"})
    assert tool({"type": "nonsense-type"}).validate({"x": 1}) == {"x": 1}, "a broken schema: the server checks"


def test_a_remote_ref_in_a_schema_is_never_fetched():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(1.0)
    accepted = []
    waiter = threading.Thread(target=lambda: _accept(listener, accepted))
    waiter.start()
    port = listener.getsockname()[1]
    t = tool({"type": "object", "properties": {"x": {"$ref": f"http://127.0.0.1:{port}/schema.json"}}})
    assert t.validate({"x": 1}) == {"x": 1}
    waiter.join()
    listener.close()
    assert accepted == [], "the validator connected to the URL in the schema"


def _accept(listener, accepted):
    try:
        accepted.append(listener.accept())
    except OSError:
        pass


def text(t):
    return NS(type="text", text=t)


@pytest.mark.parametrize("result, content, is_error", [
    (NS(structured_content={"result": 5}, is_error=False, content=[text("5")]), '{"result":5}', False),
    (NS(structured_content=None, is_error=False, content=[text("a"), text("b")]), "a\nb", False),
    (NS(structured_content=None, is_error=True, content=[text("boom")]), "boom", True),
    (NS(structured_content={"x": 1}, is_error=True, content=[text("bad")]), "bad", True),
    (NS(structured_content=None, is_error=False, content=[NS(type="image", data="AAAA", mime_type="image/png")]),
     "[image: image/png, 3 bytes, not shown]", False),
    (NS(structured_content=None, is_error=False, content=[NS(type="resource", resource=NS(uri="f://x", text="hi"))]),
     "hi", False),
    (NS(structured_content=None, is_error=False, content=[NS(type="resource_link", uri="f://y")]),
     "[resource link: f://y]", False),
    (NS(structured_content=None, is_error=False, content=[]), "mcp__s__t returned no content.", False),
])
def test_results_as_claude_code_gives_them(result, content, is_error):
    out = to_output(result, "mcp__s__t")
    assert (out.content, out.is_error) == (content, is_error)
