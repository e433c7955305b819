"""Write and Edit: read-before-write, staleness, replacements, creation, confinement."""

from __future__ import annotations

import os

import pytest

from workflows.tools import ToolContext, run_tool


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws):
    return ToolContext(workspace=ws)


def read(ctx, path):
    out = run_tool("Read", {"file_path": str(path)}, ctx)
    assert not out.is_error, out.content
    return out


def touch_later(path):
    """Simulate an outside change: push the mtime into the future."""
    st = os.stat(path)
    os.utime(path, (st.st_atime, st.st_mtime + 10))


# ------------------------------------------------------------------ Write


def test_write_creates_file_and_parents(ws, ctx):
    target = ws / "pkg" / "sub" / "calc.py"
    out = run_tool("Write", {"file_path": str(target), "content": "a\nb\nc\n"}, ctx)
    assert not out.is_error
    assert out.content == (f"File created successfully at: {target} (file state is current in your context \u2014 "
                           "no need to Read it back)")
    assert out.display == "Wrote 3 lines to calc.py"
    assert out.result == {"type": "create", "filePath": str(target), "content": "a\nb\nc\n", "structuredPatch": [],
                          "originalFile": None, "userModified": False}
    assert target.read_text() == "a\nb\nc\n"
    assert ctx.files_read.get(str(target)) == os.stat(target).st_mtime


def test_write_relative_path(ws, ctx):
    out = run_tool("Write", {"file_path": "rel.txt", "content": "x"}, ctx)
    assert not out.is_error
    assert (ws / "rel.txt").read_text() == "x"
    assert out.display == "Wrote 1 line to rel.txt"


def test_write_keeps_content_byte_for_byte(ws, ctx):
    target = ws / "crlf.txt"
    run_tool("Write", {"file_path": str(target), "content": "a\r\nb"}, ctx)
    assert target.read_bytes() == b"a\r\nb"


def test_write_existing_unread_refused(ws, ctx):
    f = ws / "f.txt"
    f.write_text("original\n")
    out = run_tool("Write", {"file_path": str(f), "content": "new"}, ctx)
    assert out.is_error
    assert "File has not been read yet. Read it first before writing to it." in out.content
    assert f.read_text() == "original\n"


def test_write_existing_after_read_updates(ws, ctx):
    f = ws / "f.txt"
    f.write_text("original\n")
    read(ctx, f)
    out = run_tool("Write", {"file_path": str(f), "content": "new\n"}, ctx)
    assert not out.is_error
    assert out.content == (f"The file {f} has been updated successfully. (file state is current in your context "
                           "\u2014 no need to Read it back)")
    assert f.read_text() == "new\n"
    assert out.result == {"type": "update", "filePath": str(f), "content": "new\n", "originalFile": "original\n",
                          "userModified": False, "structuredPatch": [
                              {"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                               "lines": ["-original", "+new"]}]}


def test_write_modified_since_read_refused(ws, ctx):
    f = ws / "f.txt"
    f.write_text("original\n")
    read(ctx, f)
    touch_later(f)
    out = run_tool("Write", {"file_path": str(f), "content": "new"}, ctx)
    assert out.is_error
    assert "modified since read" in out.content and "Read it again" in out.content
    assert f.read_text() == "original\n"


def test_write_then_edit_works_without_reread(ws, ctx):
    f = ws / "f.txt"
    run_tool("Write", {"file_path": str(f), "content": "alpha\n"}, ctx)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "alpha", "new_string": "beta"}, ctx)
    assert not out.is_error, out.content
    assert f.read_text() == "beta\n"


def test_write_to_directory_refused(ws, ctx):
    (ws / "d").mkdir()
    out = run_tool("Write", {"file_path": str(ws / "d"), "content": "x"}, ctx)
    assert out.is_error and "is a directory" in out.content


def test_write_outside_workspace(ws, ctx, tmp_path):
    out = run_tool("Write", {"file_path": str(tmp_path / "evil.txt"), "content": "x"}, ctx)
    assert out.is_error and "outside the session's workspace" in out.content
    assert not (tmp_path / "evil.txt").exists()
    out = run_tool("Write", {"file_path": "../evil2.txt", "content": "x"}, ctx)
    assert out.is_error and "outside the session's workspace" in out.content
    assert not (tmp_path / "evil2.txt").exists()


def test_write_through_symlink_outside_refused(ws, ctx, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "escape").symlink_to(outside)
    out = run_tool("Write", {"file_path": str(ws / "escape" / "x.txt"), "content": "x"}, ctx)
    assert out.is_error and "outside the session's workspace" in out.content
    assert not (outside / "x.txt").exists()


@pytest.mark.parametrize(
    "raw, phrase",
    [
        ({"file_path": "a.txt"}, "content"),
        ({"file_path": "a.txt", "content": 5}, "content"),
        ({"file_path": "a.txt", "content": "x", "mode": "w"}, "mode"),
    ],
)
def test_write_malformed(ctx, ws, raw, phrase):
    out = run_tool("Write", raw, ctx)
    assert out.is_error and phrase in out.content
    assert not (ws / "a.txt").exists()


# ------------------------------------------------------------------ Edit


def test_edit_replaces_once_with_claude_codes_text_and_result(ws, ctx):
    f = ws / "calc.py"
    f.write_text("def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n")
    read(ctx, f)
    out = run_tool(
        "Edit",
        {"file_path": str(f), "old_string": "return a - b", "new_string": "return a + b"},
        ctx,
    )
    assert not out.is_error, out.content
    assert f.read_text() == "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"
    assert out.content == f"The file {f} has been updated successfully."
    assert out.result == {
        "filePath": str(f), "oldString": "return a - b", "newString": "return a + b",
        "originalFile": "def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n", "userModified": False,
        "replaceAll": False, "contentNotInModelContext": True, "structuredPatch": [
            {"oldStart": 1, "oldLines": 4, "newStart": 1, "newLines": 4,
             "lines": [" def add(a, b):", "-    return a - b", "+    return a + b", " ", " print(add(1, 2))"]}]}
    assert out.display == "Updated calc.py (1 replacement)"
    assert ctx.files_read.get(str(f)) == os.stat(f).st_mtime


def test_edit_patch_is_local(ws, ctx):
    f = ws / "long.txt"
    f.write_text("".join(f"line {i}\n" for i in range(1, 101)))
    read(ctx, f)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "line 50\n", "new_string": "FIFTY\n"}, ctx)
    assert out.result["structuredPatch"] == [{"oldStart": 47, "oldLines": 7, "newStart": 47, "newLines": 7, "lines": [
        " line 47", " line 48", " line 49", "-line 50", "+FIFTY", " line 51", " line 52", " line 53"]}]


def test_edit_unread_refused(ws, ctx):
    f = ws / "f.txt"
    f.write_text("a\n")
    out = run_tool("Edit", {"file_path": str(f), "old_string": "a", "new_string": "b"}, ctx)
    assert out.is_error and "File has not been read yet" in out.content
    assert f.read_text() == "a\n"


def test_edit_modified_since_read_refused(ws, ctx):
    f = ws / "f.txt"
    f.write_text("a\n")
    read(ctx, f)
    touch_later(f)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "a", "new_string": "b"}, ctx)
    assert out.is_error and "modified since read" in out.content
    assert f.read_text() == "a\n"


def test_edit_same_strings(ws, ctx):
    f = ws / "f.txt"
    f.write_text("a\n")
    read(ctx, f)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "a", "new_string": "a"}, ctx)
    assert out.is_error
    assert "No changes to make: old_string and new_string are exactly the same." in out.content


def test_edit_not_found(ws, ctx):
    f = ws / "f.txt"
    f.write_text("hello\n")
    read(ctx, f)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "bye", "new_string": "x"}, ctx)
    assert out.is_error
    assert "String to replace not found in file.\nString: bye" in out.content


def test_edit_multiple_matches_needs_replace_all(ws, ctx):
    f = ws / "f.txt"
    f.write_text("foo\nfoo\nfoo\n")
    read(ctx, f)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "foo", "new_string": "bar"}, ctx)
    assert out.is_error
    assert "Found 3 matches" in out.content and "replace_all" in out.content
    assert "more context" in out.content
    assert f.read_text() == "foo\nfoo\nfoo\n"


def test_edit_replace_all(ws, ctx):
    f = ws / "f.txt"
    f.write_text("foo\nfoo\nfoo\n")
    read(ctx, f)
    out = run_tool(
        "Edit",
        {"file_path": str(f), "old_string": "foo", "new_string": "bar", "replace_all": True},
        ctx,
    )
    assert not out.is_error
    assert f.read_text() == "bar\nbar\nbar\n"
    assert out.display == "Updated f.txt (3 replacements)"


def test_edit_twice_in_a_row(ws, ctx):
    f = ws / "f.txt"
    f.write_text("one two\n")
    read(ctx, f)
    assert not run_tool("Edit", {"file_path": str(f), "old_string": "one", "new_string": "1"}, ctx).is_error
    assert not run_tool("Edit", {"file_path": str(f), "old_string": "two", "new_string": "2"}, ctx).is_error
    assert f.read_text() == "1 2\n"


def test_edit_crlf_file_with_lf_old_string(ws, ctx):
    f = ws / "w.txt"
    f.write_bytes(b"a\r\nb\r\nc\r\n")
    read(ctx, f)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "a\nb", "new_string": "A\nB"}, ctx)
    assert not out.is_error, out.content
    assert f.read_bytes() == b"A\r\nB\r\nc\r\n"


def test_edit_missing_file(ws, ctx):
    out = run_tool("Edit", {"file_path": str(ws / "nope.py"), "old_string": "a", "new_string": "b"}, ctx)
    assert out.is_error and "File does not exist" in out.content


def test_edit_empty_old_string_creates_file(ws, ctx):
    target = ws / "new" / "made.py"
    out = run_tool("Edit", {"file_path": str(target), "old_string": "", "new_string": "x = 1\n"}, ctx)
    assert not out.is_error, out.content
    assert target.read_text() == "x = 1\n"
    assert "created" in out.content
    # and it counts as read: a follow-up edit works
    out = run_tool("Edit", {"file_path": str(target), "old_string": "1", "new_string": "2"}, ctx)
    assert not out.is_error and target.read_text() == "x = 2\n"


def test_edit_empty_old_string_on_existing_nonempty_file_refused(ws, ctx):
    f = ws / "f.txt"
    f.write_text("content\n")
    read(ctx, f)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "", "new_string": "x"}, ctx)
    assert out.is_error and "already exists" in out.content
    assert f.read_text() == "content\n"


def test_edit_binary_refused(ws, ctx):
    f = ws / "b.bin"
    f.write_bytes(b"a\x00b")
    ctx.files_read.set(str(f), os.stat(f).st_mtime)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "a", "new_string": "c"}, ctx)
    assert out.is_error and "binary" in out.content
    assert f.read_bytes() == b"a\x00b"


def test_edit_outside_workspace(ws, ctx, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("a\n")
    ctx.files_read.set(str(secret), os.stat(secret).st_mtime)  # even if "read", still refused
    for path in (str(secret), "../secret.txt"):
        out = run_tool("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, ctx)
        assert out.is_error and "outside the session's workspace" in out.content
    (ws / "link.txt").symlink_to(secret)
    out = run_tool("Edit", {"file_path": str(ws / "link.txt"), "old_string": "a", "new_string": "b"}, ctx)
    assert out.is_error and "outside the session's workspace" in out.content
    assert secret.read_text() == "a\n"


@pytest.mark.parametrize(
    "raw, phrase",
    [
        ({"file_path": "f.txt", "old_string": "a"}, "new_string"),
        ({"file_path": "f.txt", "old_string": "a", "new_string": "b", "replace_all": "maybe"}, "replace_all"),
        ({"file_path": "f.txt", "old_string": "a", "new_string": "b", "extra": 1}, "extra"),
    ],
)
def test_edit_malformed(ctx, raw, phrase):
    out = run_tool("Edit", raw, ctx)
    assert out.is_error and phrase in out.content
