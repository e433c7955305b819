"""Hostile tool input: NUL bytes, lone surrogates and odd values become clear errors, never exceptions."""

from __future__ import annotations

import os

import pytest

from workflows.exceptions import ToolInputError
from workflows.tools import REGISTRY, Tool, ToolContext, ToolInput, ToolOutput, run_tool, validate_input


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\nbeta\n")
    return root


@pytest.fixture
def ctx(ws):
    return ToolContext(workspace=ws)


# ------------------------------------------------------------------ NUL bytes and lone surrogates


@pytest.mark.parametrize(
    "tool, raw, field",
    [
        ("Read", {"file_path": "a.txt\x00.py"}, "file_path"),
        ("Write", {"file_path": "b.txt", "content": "x\x00y"}, "content"),
        ("Edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "\x00"}, "new_string"),
        ("Glob", {"pattern": "*.txt", "path": "\x00"}, "path"),
        ("Grep", {"pattern": "alpha", "glob": "*.txt\x00"}, "glob"),
        ("Bash", {"command": "echo \x00"}, "command"),
    ],
)
def test_nul_byte_is_a_field_error(ctx, ws, tool, raw, field):
    out = run_tool(tool, raw, ctx)
    assert out.is_error
    assert f"Invalid input for {tool}: {field} contains a NUL byte (\\x00) at character" in out.content
    assert "paths and text cannot hold NUL bytes: remove it" in out.content
    assert "\x00" not in out.content
    assert not (ws / "b.txt").exists()


@pytest.mark.parametrize(
    "tool, raw, field",
    [
        ("Read", {"file_path": "a\ud800.txt"}, "file_path"),
        ("Write", {"file_path": "b.txt", "content": "ok \udfff"}, "content"),
        ("Edit", {"file_path": "a.txt", "old_string": "\udc80", "new_string": "x"}, "old_string"),
        ("Grep", {"pattern": "\ud83d", "-A": 1}, "pattern"),
    ],
)
def test_lone_surrogate_is_a_field_error(ctx, ws, tool, raw, field):
    out = run_tool(tool, raw, ctx)
    assert out.is_error
    assert f"{field} contains a lone surrogate (\\u" in out.content
    assert "not valid Unicode text" in out.content
    out.content.encode("utf-8")  # the error itself can be sent on
    assert not (ws / "b.txt").exists()
    assert (ws / "a.txt").read_text() == "alpha\nbeta\n"


def test_the_message_reads_well():
    with pytest.raises(ToolInputError) as info:
        validate_input("Read", {"file_path": "/ws/a\x00b"})
    assert str(info.value) == (
        "Invalid input for Read: file_path contains a NUL byte (\\x00) at character 5; "
        "paths and text cannot hold NUL bytes: remove it"
    )


def test_unknown_keys_are_named_printably():
    with pytest.raises(ToolInputError) as info:
        validate_input("Grep", {"pattern": "x", "bad\x00key": 1})
    assert str(info.value) == "Invalid input for Grep: bad\\x00key: Extra inputs are not permitted"
    with pytest.raises(ToolInputError) as info:  # pydantic refuses a key that is not text at all
        validate_input("Grep", {"pattern": "x", "bad\ud800key": 1})
    str(info.value).encode("utf-8")


class NestedInput(ToolInput):
    items: list[str] = []
    meta: dict[str, list[str]] = {}


class NestedTool(Tool):
    name = "Nested"
    description = "A test tool with nested string fields."
    input_model = NestedInput

    def run(self, args, ctx):
        return ToolOutput(content="ran")


@pytest.mark.parametrize(
    "raw, where",
    [
        ({"items": ["ok", "bad\x00"]}, "items.1 contains a NUL byte"),
        ({"meta": {"k": ["ok", "\ud800"]}}, "meta.k.1 contains a lone surrogate"),
        ({"meta": {"bad\x00key": []}}, "meta.bad\\x00key contains a NUL byte"),
    ],
)
def test_nested_strings_are_checked(monkeypatch, ctx, raw, where):
    monkeypatch.setitem(REGISTRY, "Nested", NestedTool())
    out = run_tool("Nested", raw, ctx)
    assert out.is_error and where in out.content, out.content
    assert run_tool("Nested", {"items": ["fine"], "meta": {"k": ["v"]}}, ctx).content == "ran"


def test_tool_output_and_summary_are_sendable():
    out = ToolOutput(content="name \udcff.txt", display="\ud800")
    assert out.content == "name \ufffd.txt" and out.display == "\ufffd"
    assert REGISTRY["Read"].summary({"file_path": "a\udcff"}) == "a\ufffd"


# ------------------------------------------------------------------ odd values never raise


ODD_STRINGS = ["", " ", "/", "//", ".", "..", "~", "~-", "~nosuchuser/x", "-", "*", "**", "{", "}", "[", "]",
               "\\", "a" * 5000, "a/" * 3000, "\n", "\t\r", "é/ü.txt", "[!]", "{,}", "{a,{b,c}}", "(?", "+"]
ODD_INTS = [0, 1, -1, 2**63, 10**100]


@pytest.mark.timeout(120)
def test_odd_values_give_a_tool_output_never_an_unexpected_failure(ctx, ws):
    (ws / "d").mkdir()
    os.mkfifo(ws / "fifo")
    ctx.files_read.set(str(ws / "a.txt"), 1e12)
    calls = []
    for s in ODD_STRINGS + ["fifo", "d", "a.txt"]:
        calls += [
            ("Read", {"file_path": s}),
            ("Glob", {"pattern": s}),
            ("Glob", {"pattern": "*", "path": s}),
            ("Grep", {"pattern": s, "output_mode": "content", "-C": 2}),
            ("Grep", {"pattern": "a", "path": s, "glob": s}),
            ("Edit", {"file_path": s, "old_string": "alpha", "new_string": "ALPHA"}),
            ("Write", {"file_path": os.path.join("d", s) if s else s, "content": s}),
        ]
    for n in ODD_INTS:
        calls += [
            ("Read", {"file_path": "a.txt", "offset": n, "limit": n}),
            ("Grep", {"pattern": "a", "output_mode": "content", "-A": n, "-B": n, "head_limit": n}),
        ]
    for tool, raw in calls:
        out = run_tool(tool, raw, ctx)
        assert isinstance(out, ToolOutput)
        assert "failed unexpectedly" not in out.content, (tool, raw, out.content)
        out.content.encode("utf-8")
