"""Notebooks: Read shows cells as Claude Code does; NotebookEdit's schema, modes, errors and formatting."""

from __future__ import annotations

import json
import os

import pytest

from workflows.tools import run_tool, tool_schemas
from workflows.tools.notebook import (
    MAX_OUTPUT_CHARS,
    MAX_RENDERED_CHARS,
    NOT_JSON,
    NOT_NOTEBOOK,
)


@pytest.fixture
def ws(empty_ws):
    return empty_ws


@pytest.fixture
def ctx(tool_ctx):
    return tool_ctx


def code(cid, source, outputs=(), count=None):
    cell = {"cell_type": "code", "execution_count": count, "metadata": {}, "outputs": list(outputs), "source": source}
    if cid:
        cell["id"] = cid
    return cell


def markdown(cid, source):
    cell = {"cell_type": "markdown", "metadata": {}, "source": source}
    if cid:
        cell["id"] = cid
    return cell


def notebook(cells, minor=5, language="python"):
    return {"cells": cells, "metadata": {"kernelspec": {"name": "k"}, "language_info": {"name": language}},
            "nbformat": 4, "nbformat_minor": minor}


def write_nb(path, nb, indent=1, ensure_ascii=False, newline=True):
    path.write_text(json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if newline else ""))
    return path


def read(ctx, path):
    out = run_tool("Read", {"file_path": str(path)}, ctx)
    assert not out.is_error, out.content
    return out


def edit(ctx, path, **kw):
    return run_tool("NotebookEdit", {"notebook_path": str(path), **kw}, ctx)


STREAM = {"name": "stdout", "output_type": "stream", "text": ["hello\n"]}
RESULT = {"output_type": "execute_result", "execution_count": 2, "metadata": {},
          "data": {"text/plain": ["42"], "image/png": "iVBORw0KGgo="}}
ERROR = {"output_type": "error", "ename": "ValueError", "evalue": "bad",
         "traceback": ["\x1b[0;31mValueError\x1b[0m Traceback", "line 1"]}


@pytest.fixture
def nb_path(ws):
    return write_nb(ws / "analysis.ipynb", notebook([
        markdown("intro", ["# Title\n", "Some text"]),
        code("load", ["print('hello')\n", "6 * 7"], [STREAM, RESULT, ERROR], count=2),
        code("empty", []),
    ]))


# ------------------------------------------------------------------ Read


def test_read_shows_cells_and_outputs_as_claude_code_does(ctx, nb_path):
    out = read(ctx, nb_path)
    assert out.content == (
        '<cell id="intro"><cell_type>markdown</cell_type># Title\nSome text</cell id="intro">\n'
        '<cell id="load">print(\'hello\')\n6 * 7</cell id="load">\n'
        "\nhello\n\n"
        "\n42\n[image/png image output: Read shows notebook outputs as text only]\n"
        "\nValueError: bad\nValueError Traceback\nline 1\n"
        '<cell id="empty"></cell id="empty">')
    assert out.display == "Read 3 cells"
    assert ctx.files_read.get(str(nb_path)) == os.stat(nb_path).st_mtime


def test_read_names_cells_without_ids_by_index_and_marks_other_languages(ctx, ws):
    p = write_nb(ws / "old.ipynb", notebook([code(None, "x = 1"), code(None, "y")], minor=4, language="julia"))
    assert read(ctx, p).content == ('<cell id="cell-0"><language>julia</language>x = 1</cell id="cell-0">\n'
                                    '<cell id="cell-1"><language>julia</language>y</cell id="cell-1">')


def test_read_leaves_out_outputs_too_large_and_unknown_ones(ctx, ws):
    big = {"name": "stdout", "output_type": "stream", "text": "x" * (MAX_OUTPUT_CHARS + 1)}
    odd = {"output_type": "mystery"}
    p = write_nb(ws / "big.ipynb", notebook([code("a", "1", [big]), code("b", "2", [STREAM, odd])]))
    text = read(ctx, p).content
    assert f"Outputs are too large to include. Use Bash with: cat {p} | jq '.cells[0].outputs'" in text
    assert "x" * 100 not in text
    assert text.endswith("\nhello\n\n\nOutputs of an unknown type are not shown.")


def test_read_of_broken_or_huge_notebooks_says_what_to_do(ctx, ws):
    (ws / "bad.ipynb").write_text("{not json")
    out = run_tool("Read", {"file_path": str(ws / "bad.ipynb")}, ctx)
    assert out.is_error and out.content == NOT_JSON
    (ws / "odd.ipynb").write_text('{"cells": [{"source": 3}]}')
    out = run_tool("Read", {"file_path": str(ws / "odd.ipynb")}, ctx)
    assert out.is_error and out.content == NOT_NOTEBOOK
    p = write_nb(ws / "huge.ipynb", notebook([code(str(i), "y" * 5000) for i in range(MAX_RENDERED_CHARS // 5000 + 1)]))
    out = run_tool("Read", {"file_path": str(p)}, ctx)
    assert out.is_error and "exceeds the 100,000 characters Read returns" in out.content
    assert f"cat {p} | jq '.cells[:20]'" in out.content
    assert ctx.files_read.get(str(p)) is None
    p = write_nb(ws / "none.ipynb", notebook([]))
    assert read(ctx, p).content == f"The notebook {p} has no cells."


# ------------------------------------------------------------------ NotebookEdit


def test_schema_is_claude_codes():
    (schema,) = tool_schemas(["NotebookEdit"])
    s = schema["input_schema"]
    assert s["required"] == ["notebook_path", "new_source"]
    assert set(s["properties"]) == {"notebook_path", "cell_id", "new_source", "cell_type", "edit_mode"}
    assert s["properties"]["cell_type"]["anyOf"][0]["enum"] == ["code", "markdown"]
    assert s["properties"]["edit_mode"]["anyOf"][0]["enum"] == ["replace", "insert", "delete"]
    assert s["additionalProperties"] is False


def test_replace_clears_a_code_cells_outputs_and_keeps_the_file_format(ctx, nb_path):
    before = nb_path.read_text()
    read(ctx, nb_path)
    out = edit(ctx, nb_path, cell_id="load", new_source="print('bye')\nx = 1")
    assert not out.is_error, out.content
    assert out.content == "Updated cell load with print('bye')\nx = 1"
    assert out.display == "Updated cell load of analysis.ipynb"
    nb = json.loads(nb_path.read_text())
    cell = nb["cells"][1]
    assert cell == {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                    "source": ["print('bye')\n", "x = 1"], "id": "load"}
    # Everything else is byte for byte as Jupyter wrote it: one-space indent, key order, final newline.
    expected = json.loads(before)
    expected["cells"][1] = cell
    assert nb_path.read_text() == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"
    assert ctx.files_read.get(str(nb_path)) == os.stat(nb_path).st_mtime  # edit again without reading again
    assert not edit(ctx, nb_path, cell_id="intro", new_source="# New").is_error


def test_replace_can_change_the_cell_type(ctx, nb_path):
    read(ctx, nb_path)
    assert not edit(ctx, nb_path, cell_id="load", new_source="Now prose", cell_type="markdown").is_error
    assert not edit(ctx, nb_path, cell_id="intro", new_source="1 + 1", cell_type="code").is_error
    cells = json.loads(nb_path.read_text())["cells"]
    assert cells[1]["cell_type"] == "markdown" and "outputs" not in cells[1] and "execution_count" not in cells[1]
    assert cells[0]["cell_type"] == "code" and cells[0]["outputs"] == [] and cells[0]["execution_count"] is None


def test_insert_after_a_cell_or_at_the_start_with_a_new_id(ctx, nb_path):
    read(ctx, nb_path)
    out = edit(ctx, nb_path, cell_id="intro", new_source="import os", cell_type="code", edit_mode="insert")
    assert not out.is_error, out.content
    cells = json.loads(nb_path.read_text())["cells"]
    new = cells[1]
    assert out.content == f"Inserted cell {new['id']} with import os"
    assert len(new["id"]) == 8 and new["source"] == ["import os"]
    assert list(new) == ["cell_type", "execution_count", "id", "metadata", "outputs", "source"]
    out = edit(ctx, nb_path, new_source="Top", cell_type="markdown", edit_mode="insert")
    assert not out.is_error
    cells = json.loads(nb_path.read_text())["cells"]
    assert cells[0]["source"] == ["Top"] and cells[0]["cell_type"] == "markdown" and "outputs" not in cells[0]
    assert [c["id"] for c in cells[2:]] == [new["id"], "load", "empty"]


def test_insert_into_an_older_notebook_adds_no_id_and_cells_are_named_by_index(ctx, ws):
    p = write_nb(ws / "old.ipynb", notebook([code(None, "a = 1"), code(None, "b = 2")], minor=4))
    read(ctx, p)
    out = edit(ctx, p, cell_id="cell-0", new_source="c = 3", cell_type="code", edit_mode="insert")
    assert out.content == "Inserted a new cell with c = 3"
    cells = json.loads(p.read_text())["cells"]
    assert [c["source"] for c in cells] == ["a = 1", "c = 3", "b = 2"] and "id" not in cells[1]
    assert edit(ctx, p, cell_id="cell-2", new_source="", edit_mode="delete").content == "Deleted cell cell-2"
    assert [c["source"] for c in json.loads(p.read_text())["cells"]] == ["a = 1", "c = 3"]


def test_delete(ctx, nb_path):
    read(ctx, nb_path)
    out = edit(ctx, nb_path, cell_id="load", new_source="", edit_mode="delete")
    assert out.content == "Deleted cell load"
    assert [c["id"] for c in json.loads(nb_path.read_text())["cells"]] == ["intro", "empty"]


@pytest.mark.parametrize("kw, message", [
    ({"cell_id": "nope", "new_source": "x"}, 'Cell with ID "nope" not found in notebook.'),
    ({"cell_id": "cell-9", "new_source": "x"}, "Cell with index 9 does not exist in notebook."),
    ({"new_source": "x"}, "Cell ID must be specified when not inserting a new cell."),
    ({"new_source": "x", "edit_mode": "delete"}, "Cell ID must be specified when not inserting a new cell."),
    ({"new_source": "x", "edit_mode": "insert"}, "Cell type is required when using edit_mode=insert."),
])
def test_errors_name_the_cell_and_change_nothing(ctx, nb_path, kw, message):
    read(ctx, nb_path)
    before = nb_path.read_bytes()
    out = edit(ctx, nb_path, **kw)
    assert out.is_error and out.content == message
    assert nb_path.read_bytes() == before


def test_the_notebook_must_have_been_read_and_unchanged_since(ctx, nb_path, ws):
    out = edit(ctx, nb_path, cell_id="load", new_source="x")
    assert out.is_error and out.content == (  # refused as Claude Code refuses it (tests/e2e/test_claude_code_parity_table.py)
        "<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>")
    read(ctx, nb_path)
    st = os.stat(nb_path)
    os.utime(nb_path, (st.st_atime, st.st_mtime + 10))
    out = edit(ctx, nb_path, cell_id="load", new_source="x")
    assert out.is_error and "modified since read" in out.content
    read(ctx, nb_path)
    nb_path.unlink()
    out = edit(ctx, nb_path, cell_id="load", new_source="x")
    assert out.is_error and out.content == "Notebook file does not exist."


def test_only_notebooks_inside_the_workspace(ctx, ws, tmp_path):
    (ws / "a.py").write_text("x")
    read(ctx, ws / "a.py")
    out = edit(ctx, ws / "a.py", cell_id="x", new_source="y")
    assert out.is_error and out.content.startswith("File must be a Jupyter notebook (.ipynb file).")
    out = edit(ctx, tmp_path / "out.ipynb", cell_id="x", new_source="y")
    assert out.is_error and "outside the session's workspace" in out.content


@pytest.mark.parametrize("raw, phrase", [
    ({"notebook_path": "a.ipynb"}, "new_source: Field required"),
    ({"notebook_path": "a.ipynb", "new_source": "x", "edit_mode": "append"}, "edit_mode: Input should be"),
    ({"notebook_path": "a.ipynb", "new_source": "x", "cell_type": "raw"}, "cell_type: Input should be"),
    ({"notebook_path": "a.ipynb", "new_source": "x", "cell_number": 0}, "cell_number: Extra inputs"),
])
def test_malformed_input_names_the_field(ctx, raw, phrase):
    out = run_tool("NotebookEdit", raw, ctx)
    assert out.is_error and phrase in out.content, out.content


@pytest.mark.parametrize("indent, ensure_ascii, newline, crlf, bom", [
    (1, False, True, False, False),
    (2, True, False, False, False),
    ("\t", False, True, True, True),
    (None, False, False, False, False),
])
def test_the_files_own_formatting_is_kept(ctx, ws, indent, ensure_ascii, newline, crlf, bom):
    nb = notebook([markdown("m", ["Café ☕\n", "ok"]), code("c", "x = 'é'")])
    text = json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if newline else "")
    if crlf:
        text = text.replace("\n", "\r\n")
    p = ws / "fmt.ipynb"
    p.write_bytes((("\ufeff" if bom else "") + text).encode())
    read(ctx, p)
    assert not edit(ctx, p, cell_id="c", new_source="y = 'ü'").is_error
    nb["cells"][1]["source"] = "y = 'ü'"
    want = json.dumps(nb, indent=indent, ensure_ascii=ensure_ascii) + ("\n" if newline else "")
    if crlf:
        want = want.replace("\n", "\r\n")
    assert p.read_bytes() == (("\ufeff" if bom else "") + want).encode()


def test_edit_refuses_notebooks_and_points_to_notebook_edit(ctx, nb_path):
    read(ctx, nb_path)
    out = run_tool("Edit", {"file_path": str(nb_path), "old_string": "Title", "new_string": "T"}, ctx)
    assert out.is_error and out.content == "File is a Jupyter Notebook. Use the NotebookEdit tool to edit this file."
