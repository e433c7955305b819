"""Read: cat -n output, paging, errors, workspace confinement, and the generic tool contract."""

from __future__ import annotations

import os

import pytest

from workflows.exceptions import ToolInputError
from workflows.tools import REGISTRY, ToolContext, run_tool, tool_schemas, validate_input


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws):
    return ToolContext(workspace=ws)


def test_cat_n_format_and_tracking(ws, ctx):
    f = ws / "a.py"
    f.write_text("x = 1\n\tindented\ny\n")
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    assert not out.is_error
    # Claude Code's numbering: the number, a TAB; a final newline leaves an empty last line.
    assert out.content == "1\tx = 1\n2\t\tindented\n3\ty\n4\t"
    assert out.display == "Read 3 lines"
    assert out.result == {"type": "text", "file": {"filePath": str(f), "content": "x = 1\n\tindented\ny\n",
                                                   "numLines": 4, "startLine": 1, "totalLines": 4}}
    assert ctx.files_read.get(str(f)) == os.stat(f).st_mtime


def test_relative_path_resolves_against_cwd(ws):
    (ws / "sub").mkdir()
    (ws / "sub" / "f.txt").write_text("hello\n")
    ctx = ToolContext(workspace=ws, cwd=ws / "sub")
    out = run_tool("Read", {"file_path": "f.txt"}, ctx)
    assert out.content == "1\thello\n2\t"
    assert ctx.files_read.get(str(ws / "sub" / "f.txt")) is not None


def test_numbers_are_not_padded_as_in_claude_code(ws, ctx):
    f = ws / "many.txt"
    f.write_text("".join(f"l{i}\n" for i in range(1, 12)))
    out = run_tool("Read", {"file_path": str(f), "offset": 10}, ctx)
    assert out.content == "10\tl10\n11\tl11\n12\t"
    assert out.result["file"] == {"filePath": str(f), "content": "l10\nl11\n", "numLines": 3, "startLine": 10,
                                  "totalLines": 12}


def test_crlf_lines_shown_without_cr(ws, ctx):
    f = ws / "w.txt"
    f.write_bytes(b"a\r\nb\r\n")
    assert run_tool("Read", {"file_path": str(f)}, ctx).content == "1\ta\n2\tb\n3\t"


def test_default_limit_2000_and_more_note(ws, ctx):
    f = ws / "big.txt"
    f.write_text("".join(f"line {i}\n" for i in range(1, 2501)))
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    body, _, note = out.content.partition("\n\n")
    assert len(body.splitlines()) == 2000
    assert body.splitlines()[-1] == "2000\tline 2000"
    assert "Showing lines 1-2000 of 2501" in note
    assert "offset=2001" in note
    assert out.display == "Read 2000 lines"


def test_offset_and_limit(ws, ctx):
    f = ws / "f.txt"
    f.write_text("".join(f"L{i}\n" for i in range(1, 21)))
    out = run_tool("Read", {"file_path": str(f), "offset": 5, "limit": 3}, ctx)
    assert out.content == "5\tL5\n6\tL6\n7\tL7"  # a range asked for: no note, as in Claude Code


def test_offset_past_end_is_a_note_not_an_error(ws, ctx):
    f = ws / "f.txt"
    f.write_text("a\nb\n")
    out = run_tool("Read", {"file_path": str(f), "offset": 10}, ctx)
    assert not out.is_error
    assert out.content == ("<system-reminder>Warning: the file exists but is shorter than the provided offset (10). "
                           "The file has 3 lines.</system-reminder>")


def test_long_lines_cut_with_marker(ws, ctx):
    f = ws / "long.txt"
    f.write_text("x" * 2500 + "\nshort\n")
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    first = out.content.splitlines()[0]
    assert first.startswith("1\t" + "x" * 2000)
    assert "x" * 2001 not in first
    assert "truncated" in first and "500" in first


def test_empty_file(ws, ctx):
    f = ws / "empty.txt"
    f.touch()
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    assert not out.is_error
    assert out.content == "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
    assert ctx.files_read.get(str(f)) is not None


def test_missing_file(ws, ctx):
    out = run_tool("Read", {"file_path": str(ws / "nope.txt")}, ctx)
    assert out.is_error
    assert out.content == f"File does not exist. Note: your current working directory is {ctx.cwd}."


def test_directory(ws, ctx):
    (ws / "d").mkdir()
    out = run_tool("Read", {"file_path": str(ws / "d")}, ctx)
    assert out.is_error
    assert "is a directory" in out.content and "Glob" in out.content and "ls" in out.content


def test_binary_file(ws, ctx):
    f = ws / "blob.bin"
    f.write_bytes(b"abc\x00def" * 10)
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    assert out.is_error
    assert "cannot read binary files" in out.content
    assert ctx.files_read.get(str(f)) is None


def test_outside_workspace_absolute(ws, ctx, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    out = run_tool("Read", {"file_path": str(secret)}, ctx)
    assert out.is_error
    assert "outside the session's workspace" in out.content
    assert "top secret" not in out.content


def test_outside_workspace_dotdot(ws, ctx, tmp_path):
    (tmp_path / "secret.txt").write_text("top secret\n")
    out = run_tool("Read", {"file_path": "../secret.txt"}, ctx)
    assert out.is_error and "outside the session's workspace" in out.content


def test_outside_workspace_symlink(ws, ctx, tmp_path):
    (tmp_path / "secret.txt").write_text("top secret\n")
    (ws / "link.txt").symlink_to(tmp_path / "secret.txt")
    out = run_tool("Read", {"file_path": str(ws / "link.txt")}, ctx)
    assert out.is_error and "outside the session's workspace" in out.content
    assert "top secret" not in out.content


# ------------------------------------------------------------ the generic contract


def test_registry_has_the_six_tools_with_flags():
    flags = {name: (t.read_only, t.idempotent) for name, t in REGISTRY.items()}
    assert flags["Read"] == (True, True)
    assert flags["Glob"] == (True, True)
    assert flags["Grep"] == (True, True)
    assert flags["Write"] == (False, True)
    assert flags["Edit"] == (False, False)
    assert flags["Bash"] == (False, False)
    assert all(len(t.description) > 40 for t in REGISTRY.values())


def test_tool_schemas_stable_order_and_shape():
    schemas = tool_schemas()
    assert [s["name"] for s in schemas] == ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "MultiEdit", "Write",
                                            "NotebookEdit", "WebFetch", "TodoWrite", "WebSearch", "BashOutput",
                                            "KillShell", "TaskStop", "Skill"]
    assert tool_schemas() == schemas
    assert [s["name"] for s in tool_schemas(["Write", "Read"])] == ["Read", "Write"]
    read = next(s for s in schemas if s["name"] == "Read")
    props = read["input_schema"]["properties"]
    assert set(props) == {"file_path", "offset", "limit", "pages"}
    assert read["input_schema"]["required"] == ["file_path"]
    assert read["input_schema"]["additionalProperties"] is False
    assert props["file_path"]["description"]
    with pytest.raises(ToolInputError, match="Unknown tool"):
        tool_schemas(["Nope"])


def test_input_schemas_field_names():
    props = {s["name"]: set(s["input_schema"]["properties"]) for s in tool_schemas()}
    assert props["Write"] == {"file_path", "content"}
    assert props["Edit"] == {"file_path", "old_string", "new_string", "replace_all"}
    assert props["Glob"] == {"pattern", "path"}
    assert {"command", "timeout", "description"} <= props["Bash"]


@pytest.mark.parametrize(
    "raw, phrase",
    [
        ({}, "file_path"),  # missing required field
        ({"file_path": 42}, "file_path"),  # wrong type
        ({"file_path": "a", "offset": "ten"}, "offset"),
        ({"file_path": "a", "bogus": 1}, "bogus"),  # unknown field
        ("not an object", "must be a JSON object"),
    ],
)
def test_malformed_input_is_an_error_output(ctx, raw, phrase):
    out = run_tool("Read", raw, ctx)
    assert out.is_error
    assert phrase in out.content


def test_unknown_tool_is_an_error_output(ctx):
    out = run_tool("Frobnicate", {"x": 1}, ctx)
    assert out.is_error
    assert "Unknown tool 'Frobnicate'" in out.content and "Read" in out.content


def test_validate_input_raises_tool_input_error():
    with pytest.raises(ToolInputError, match="limit"):
        validate_input("Read", {"file_path": "x", "limit": 0})
