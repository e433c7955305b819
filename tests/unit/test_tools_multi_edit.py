"""MultiEdit: Edit's rules for each edit in turn, all or none, and its schema and limits."""

from __future__ import annotations

import os

import pytest

from workflows.tools import run_tool, tool_schemas
from workflows.tools.multi_edit import OVERLAP, SHOWN_CHARS, UNCHANGED


@pytest.fixture
def ws(empty_ws):
    return empty_ws


@pytest.fixture
def ctx(tool_ctx):
    return tool_ctx


@pytest.fixture
def song(ws, ctx):
    f = ws / "song.txt"
    f.write_text("once a jolly swagman\ncamped by a billabong\nunder the shade of a billabong\n")
    assert not run_tool("Read", {"file_path": str(f)}, ctx).is_error
    return f


def multi(ctx, path, *edits, **kw):
    return run_tool("MultiEdit", {"file_path": str(path), "edits": [dict(e) for e in edits], **kw}, ctx)


def E(old, new, replace_all=None):
    return {"old_string": old, "new_string": new, **({} if replace_all is None else {"replace_all": replace_all})}


def test_schema_is_claude_codes():
    (schema,) = [s for s in tool_schemas(["MultiEdit"])]
    props = schema["input_schema"]["properties"]
    assert schema["input_schema"]["required"] == ["file_path", "edits"]
    assert props["edits"]["minItems"] == 1
    item = schema["input_schema"]["$defs"]["EditOperation"]
    assert item["required"] == ["old_string", "new_string"]
    assert item["properties"]["replace_all"]["default"] is False
    assert item["additionalProperties"] is False
    assert "either all succeed or none are applied" in schema["description"]


def test_edits_apply_in_turn_each_to_the_result_of_the_one_before(song, ctx):
    out = multi(ctx, song, E("once", "Once"), E("jolly swagman", "happy traveller"),
                E("billabong", "waterhole", True))
    assert not out.is_error, out.content
    assert song.read_text() == ("Once a happy traveller\ncamped by a waterhole\nunder the shade of a waterhole\n")
    assert out.content == (f"Applied 3 edits to {song}:\n"
                           '1. Replaced "once" with "Once"\n'
                           '2. Replaced "jolly swagman" with "happy traveller"\n'
                           '3. Replaced "billabong" with "waterhole"')
    assert out.display == "Updated song.txt (3 edits)"
    # Written once: the session may edit it again without reading it again.
    assert ctx.files_read.get(str(song)) == os.stat(song).st_mtime
    assert not multi(ctx, song, E("Once", "Twice")).is_error


def test_a_later_edit_sees_what_an_earlier_one_removed(song, ctx):
    out = multi(ctx, song, E("a jolly ", ""), E("once swagman", "ONCE SWAGMAN"))
    assert not out.is_error, out.content
    assert song.read_text().startswith("ONCE SWAGMAN\n")


@pytest.mark.parametrize("edits, message", [
    ([E("once", "Once"), E("DOESNOTEXIST", "x")],
     "String to replace not found in file.\nString: DOESNOTEXIST\n(in edit 2 of 2; none of the edits were applied)"),
    ([E("billabong", "waterhole")],
     "Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set "
     "replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the "
     "instance.\nString: billabong\n(in edit 1 of 1; none of the edits were applied)"),
    ([E("once", "Once"), E("jolly", "jolly")],
     "No changes to make: old_string and new_string are exactly the same.\n(in edit 2 of 2"),
    ([E("jolly", "happy"), E("jolly", "glad")], "String to replace not found in file.\nString: jolly\n(in edit 2"),
    ([E("till", "the")], "String to replace not found"),
    ([E("once", "the once"), E("the", "a")], OVERLAP + "\n(in edit 2 of 2"),
    ([E("", "hello")], "Cannot create new file - file already exists."),
    ([E("once", "twice"), E("twice", "once")], OVERLAP),
])
def test_one_failing_edit_leaves_the_file_untouched(song, ctx, edits, message):
    before = song.read_bytes()
    out = multi(ctx, song, *edits)
    assert out.is_error and out.content.startswith(message), out.content
    assert song.read_bytes() == before


def test_edits_that_cancel_out_change_nothing_and_say_so(song, ctx):
    before = song.read_bytes()
    out = multi(ctx, song, E("a jolly", "a merry"), E("merry swagman", "jolly swagman"))
    assert out.is_error and out.content == UNCHANGED
    assert song.read_bytes() == before


def test_read_before_edit_and_freshness_are_edits(ws, ctx):
    f = ws / "f.txt"
    f.write_text("alpha\n")
    out = multi(ctx, f, E("alpha", "beta"))
    assert out.is_error and out.content == (
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>")
    run_tool("Read", {"file_path": str(f)}, ctx)
    st = os.stat(f)
    os.utime(f, (st.st_atime, st.st_mtime + 10))
    out = multi(ctx, f, E("alpha", "beta"))
    assert out.is_error and "modified since read" in out.content
    assert f.read_text() == "alpha\n"


def test_a_new_file_is_created_by_a_first_edit_with_an_empty_old_string(ws, ctx):
    f = ws / "pkg" / "new.py"
    out = multi(ctx, f, E("", "def f():\n    return 1\n"), E("return 1\n", "return 2\n"))
    assert out.is_error and OVERLAP in out.content  # "return 1" was put in by the first edit
    out = multi(ctx, f, E("", "x = 1\n"))
    assert not out.is_error and f.read_text() == "x = 1\n"
    assert out.display == "Updated new.py (created) (1 edit)"
    assert out.content == f'Applied 1 edit to {f}:\n1. Replaced "" with "x = 1\n"'
    out = multi(ctx, ws / "missing.py", E("a", "b"))
    assert out.is_error and out.content == f"File does not exist. Note: your current working directory is {ctx.cwd}."


def test_crlf_files_match_as_read_shows_them(ws, ctx):
    f = ws / "w.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    run_tool("Read", {"file_path": str(f)}, ctx)
    out = multi(ctx, f, E("one\ntwo", "1\n2"), E("three", "3"))
    assert not out.is_error, out.content
    assert f.read_bytes() == b"1\r\n2\r\n3\r\n"


def test_long_strings_are_cut_in_the_result(song, ctx):
    long = "x" * (SHOWN_CHARS + 50)
    out = multi(ctx, song, E("once", long))
    assert not out.is_error
    assert f'with "{"x" * SHOWN_CHARS}..."' in out.content and long not in out.content


@pytest.mark.parametrize("raw, phrase", [
    ({"file_path": "a.txt"}, "edits: Field required"),
    ({"file_path": "a.txt", "edits": []}, "edits: List should have at least 1 item"),
    ({"file_path": "a.txt", "edits": 42}, "edits: Input should be a valid list"),
    ({"file_path": "a.txt", "edits": [{"old_string": "a"}]}, "edits.0.new_string: Field required"),
    ({"file_path": "a.txt", "edits": [{"old_string": "a", "new_string": "b", "count": 2}]},
     "edits.0.count: Extra inputs are not permitted"),
    ({"file_path": "a.txt", "edits": [{"old_string": "a\x00", "new_string": "b"}]}, "NUL byte"),
])
def test_malformed_input_names_the_field(ws, ctx, raw, phrase):
    out = run_tool("MultiEdit", raw, ctx)
    assert out.is_error and phrase in out.content, out.content


def test_notebooks_and_directories_and_outside_paths_are_refused(ws, ctx, tmp_path):
    (ws / "nb.ipynb").write_text('{"cells": []}')
    out = multi(ctx, ws / "nb.ipynb", E("cells", "x"))
    assert out.is_error and out.content == "File is a Jupyter Notebook. Use the NotebookEdit tool to edit this file."
    (ws / "d").mkdir()
    assert "is a directory" in multi(ctx, ws / "d", E("a", "b")).content
    out = multi(ctx, tmp_path / "outside.txt", E("", "x"))
    assert out.is_error and "outside the session's workspace" in out.content
    assert not (tmp_path / "outside.txt").exists()
