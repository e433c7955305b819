"""Read, Edit, MultiEdit and Write keep a file's encoding and line endings (workflows/tools/text_file.py).

Issue 26: a Latin-1 file edited at one line had every non-ASCII byte replaced with U+FFFD, and an Edit
adding a line to a CRLF file wrote a bare LF. Every byte an edit does not change must come back as it was.
"""

from __future__ import annotations

import codecs

import pytest

from workflows.tools import ToolContext, run_tool, text_file


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws):
    return ToolContext(workspace=ws)


def edit(ctx, path, old, new, **kw):
    read = run_tool("Read", {"file_path": str(path)}, ctx)
    assert not read.is_error, read.content
    out = run_tool("Edit", {"file_path": str(path), "old_string": old, "new_string": new, **kw}, ctx)
    assert not out.is_error, out.content
    return read, out


def test_a_latin1_crlf_file_edited_at_one_line_keeps_every_other_byte(ws, ctx):
    f = ws / "legacy.txt"
    before = b"caf\xe9 line one\r\nna\xefve two\r\nthird \xfc\xf6 \x80\x93\r\n"
    f.write_bytes(before)
    read, _ = edit(ctx, f, "two", "TWO\nadded \xe9")  # the model writes é as text
    assert "café line one" in read.content and "third üö €“" in read.content
    assert "Windows-1252" in read.content  # the note says how it is shown
    assert f.read_bytes() == b"caf\xe9 line one\r\nna\xefve TWO\r\nadded \xe9\r\nthird \xfc\xf6 \x80\x93\r\n"


def test_every_byte_round_trips_through_an_edit_elsewhere(ws, ctx):
    f = ws / "all.txt"
    body = bytes(b for b in range(1, 256) if b not in (0x0A, 0x0D))  # every byte but NUL and line ends
    f.write_bytes(b"KEY\n" + body + b"\n")
    edit(ctx, f, "KEY", "VALUE")
    assert f.read_bytes() == b"VALUE\n" + body + b"\n"


def test_a_character_the_legacy_encoding_cannot_hold_is_refused_and_nothing_written(ws, ctx):
    f = ws / "legacy.txt"
    f.write_bytes(b"na\xefve\n")
    run_tool("Read", {"file_path": str(f)}, ctx)
    out = run_tool("Edit", {"file_path": str(f), "old_string": "naïve", "new_string": "漢字"}, ctx)
    assert out.is_error and "U+6F22" in out.content and "Windows-1252" in out.content
    assert f.read_bytes() == b"na\xefve\n"


@pytest.mark.parametrize("codec,bom", [("utf-16-le", codecs.BOM_UTF16_LE), ("utf-16-be", codecs.BOM_UTF16_BE),
                                       ("utf-8", codecs.BOM_UTF8), ("utf-32-le", codecs.BOM_UTF32_LE)])
def test_a_file_behind_a_byte_order_mark_keeps_its_encoding_and_mark(ws, ctx, codec, bom):
    f = ws / "marked.txt"
    f.write_bytes(bom + "héllo one\r\nwörld two\r\n".encode(codec))
    read, out = edit(ctx, f, "two", "TWO\nadded")
    assert read.content.splitlines()[:2] == ["1\théllo one", "2\twörld two"]
    assert f.read_bytes() == bom + "héllo one\r\nwörld TWO\r\nadded\r\n".encode(codec)


def test_write_over_an_existing_file_keeps_its_encoding_not_its_line_ends(ws, ctx):
    """As Claude Code 2.1.332: Write keeps a UTF-16 or BOM file's encoding, and writes the content's LFs as given."""
    f = ws / "w16.txt"
    f.write_bytes(codecs.BOM_UTF16_LE + "abc\r\n".encode("utf-16-le"))
    run_tool("Read", {"file_path": str(f)}, ctx)
    assert not run_tool("Write", {"file_path": str(f), "content": "new\nstuff\n"}, ctx).is_error
    assert f.read_bytes() == codecs.BOM_UTF16_LE + "new\nstuff\n".encode("utf-16-le")
    g = ws / "latin.txt"
    g.write_bytes(b"\xe9t\xe9\r\n")
    run_tool("Read", {"file_path": str(g)}, ctx)
    assert not run_tool("Write", {"file_path": str(g), "content": "déjà\n"}, ctx).is_error
    assert g.read_bytes() == b"d\xe9j\xe0\n"


def test_a_new_file_is_written_as_utf8(ws, ctx):
    out = run_tool("Write", {"file_path": str(ws / "n.txt"), "content": "é\n"}, ctx)
    assert not out.is_error and (ws / "n.txt").read_bytes() == "é\n".encode()


def test_an_edit_adding_lines_to_a_crlf_file_writes_crlf(ws, ctx):
    f = ws / "crlf.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    edit(ctx, f, "two", "two\nadded")
    assert f.read_bytes() == b"one\r\ntwo\r\nadded\r\nthree\r\n"
    edit(ctx, f, "added\nthree", "3\n4")  # old_string as Read showed it (no CRs)
    assert f.read_bytes() == b"one\r\ntwo\r\n3\r\n4\r\n"


def test_a_mixed_file_keeps_the_line_ends_an_edit_does_not_touch(ws, ctx):
    """Claude Code rewrites every line end of a mixed file to the dominant one; Mainsail changes only the edit's."""
    f = ws / "mixed.txt"
    f.write_bytes(b"one\r\ntwo\nthree\r\nfour\r\n")
    edit(ctx, f, "three", "3\n3b")
    assert f.read_bytes() == b"one\r\ntwo\n3\r\n3b\r\nfour\r\n"


def test_an_lf_file_stays_lf(ws, ctx):
    f = ws / "lf.txt"
    f.write_bytes(b"a\nb\n")
    edit(ctx, f, "a", "a\r\nnew")  # even a model that writes CRLF does not change an LF file's other lines
    assert f.read_bytes() == b"a\r\nnew\nb\n"


def test_multi_edit_keeps_encoding_and_crlf(ws, ctx):
    f = ws / "m.txt"
    f.write_bytes(b"caf\xe9\r\nbar\r\n")
    run_tool("Read", {"file_path": str(f)}, ctx)
    out = run_tool("MultiEdit", {"file_path": str(f), "edits": [
        {"old_string": "café", "new_string": "CAFÉ\nnew"}, {"old_string": "bar", "new_string": "baz"}]}, ctx)
    assert not out.is_error, out.content
    assert f.read_bytes() == b"CAF\xc9\r\nnew\r\nbaz\r\n"


def test_binary_files_are_refused_by_read_and_edit(ws, ctx):
    f = ws / "blob.txt"
    f.write_bytes(b"abc\x00def\n")
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    assert out.is_error and "cannot read binary files" in out.content and "NUL" in out.content
    ctx.files_read.set(str(f), f.stat().st_mtime)  # even if it counted as read
    out = run_tool("Edit", {"file_path": str(f), "old_string": "abc", "new_string": "x"}, ctx)
    assert out.is_error and "cannot edit binary files" in out.content
    assert f.read_bytes() == b"abc\x00def\n"


@pytest.mark.parametrize("name", ["a.exe", "b.dat", "c.zip", "d.sqlite"])
def test_binary_formats_are_refused_by_extension_as_claude_code_does(ws, ctx, name):
    (ws / name).write_bytes(b"text really\n")
    out = run_tool("Read", {"file_path": str(ws / name)}, ctx)
    ext = name[name.rindex("."):]
    assert out.is_error and out.content.startswith(
        f"This tool cannot read binary files. The file appears to be a binary {ext} file.")


def test_grep_finds_text_in_a_legacy_file_as_read_shows_it(ws, ctx):
    (ws / "legacy.txt").write_bytes(b"na\xefve\n")
    out = run_tool("Grep", {"pattern": "naïve", "path": str(ws), "output_mode": "content"}, ctx)
    assert "naïve" in out.content


def test_detect_order():
    assert text_file.detect(b"\xff\xfe\x00\x00a\x00\x00\x00", "f").codec == "utf-32-le"
    assert text_file.detect(b"\xff\xfea\x00", "f").codec == "utf-16-le"
    assert text_file.detect("é".encode(), "f").codec == "utf-8"
    assert text_file.detect(b"\xe9", "f").codec == text_file.LEGACY
    assert text_file.dominant_newline("a\r\nb\r\nc\n") == "\r\n"
    assert text_file.dominant_newline("a\r\nb\nc\n") == "\n"


def test_notebook_edit_keeps_a_notebooks_encoding(ws, ctx):
    import json

    f = ws / "nb.ipynb"
    nb = {"cells": [{"cell_type": "code", "id": "a1", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": ["x = 'é'\n"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    f.write_bytes(codecs.BOM_UTF16_LE + json.dumps(nb, indent=1, ensure_ascii=False).encode("utf-16-le"))
    assert "x = 'é'" in run_tool("Read", {"file_path": str(f)}, ctx).content
    out = run_tool("NotebookEdit", {"notebook_path": str(f), "cell_id": "a1", "new_source": "y = 'ü'"}, ctx)
    assert not out.is_error, out.content
    raw = f.read_bytes()
    assert raw.startswith(codecs.BOM_UTF16_LE)
    assert json.loads(raw[2:].decode("utf-16-le"))["cells"][0]["source"] == ["y = 'ü'"]
