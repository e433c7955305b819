"""NotebookEdit: replace, insert or delete one cell of a Jupyter notebook the session has read.

Cells are named as Read shows them (their ``id``, or ``cell-N``). A replaced code cell loses its
outputs and execution count, as in Claude Code (they described the old source); the file is
written back formatted as it was (:func:`workflows.tools.notebook.dump`), in one atomic step.
"""

from __future__ import annotations

import stat
import uuid
from typing import Any, Literal

from pydantic import Field

from workflows.exceptions import ToolError, ToolRefused
from workflows.tools import notebook
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.files import directory_error, stat_or_none
from workflows.tools.text_file import write_text
from workflows.tools.write import MODIFIED, NOT_READ

NOT_A_NOTEBOOK = ("File must be a Jupyter notebook (.ipynb file). For editing other file types, use the Edit "
                  "tool.")
MISSING = "Notebook file does not exist."

DESCRIPTION = (
    "Replaces, inserts, or deletes a single cell in a Jupyter notebook (.ipynb file).\n\n"
    "Usage:\n"
    "- You must use the Read tool on the notebook in this conversation before editing - this tool will "
    "fail otherwise.\n"
    "- `cell_id` is the `id` attribute shown in the Read tool's `<cell id=\"...\">` output. It is "
    "required for `replace` and `delete`.\n"
    "- `edit_mode` defaults to `replace`. Use `insert` to add a new cell after the cell with the given "
    "`cell_id` (or at the beginning of the notebook if `cell_id` is omitted) - `cell_type` is required "
    "when inserting. Use `delete` to remove the cell.\n"
    "- Replacing a code cell clears its outputs and execution count."
)


class NotebookEditInput(ToolInput):
    notebook_path: str = Field(
        description="The absolute path to the Jupyter notebook file to edit (a relative path is resolved against "
        "the current working directory)"
    )
    cell_id: str | None = Field(
        default=None,
        description="The ID of the cell to edit. When inserting a new cell, the new cell will be inserted after "
        "the cell with this ID, or at the beginning if not specified.",
    )
    new_source: str = Field(description="The new source for the cell")
    cell_type: Literal["code", "markdown"] | None = Field(
        default=None,
        description="The type of the cell (code or markdown). If not specified, it defaults to the current cell "
        "type. If using edit_mode=insert, this is required.",
    )
    edit_mode: Literal["replace", "insert", "delete"] | None = Field(
        default=None, description="The type of edit to make (replace, insert, delete). Defaults to replace."
    )


@register
class NotebookEditTool(Tool):
    name = "NotebookEdit"
    description = DESCRIPTION
    input_model = NotebookEditInput
    read_only = False
    idempotent = False

    def summary(self, args: dict) -> str:
        return str(args.get("notebook_path", "")) if isinstance(args, dict) else ""

    def run(self, args: NotebookEditInput, ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(args.notebook_path, "notebook_path")
        mode = args.edit_mode or "replace"
        if path.suffix != ".ipynb":
            raise ToolError(NOT_A_NOTEBOOK)
        if mode == "insert" and args.cell_type is None:
            raise ToolError("Cell type is required when using edit_mode=insert.")
        seen = ctx.files_read.get(str(path))
        if seen is None:  # refused before it runs, as Claude Code's check of its input (<tool_use_error>)
            raise ToolRefused(NOT_READ)
        st = stat_or_none(path)
        if st is None:
            raise ToolError(MISSING)
        if stat.S_ISDIR(st.st_mode):
            raise directory_error(path)
        if st.st_mtime > seen:
            raise ToolRefused(MODIFIED)
        nb = notebook.load(path, ctx, action="edit")
        index = notebook.find_cell(nb.cells, args.cell_id, mode)
        if mode == "delete":
            del nb.cells[index]
            content, what = f"Deleted cell {args.cell_id}", f"Deleted cell {args.cell_id}"
        elif mode == "insert":
            new_id = _new_id(nb)
            nb.cells.insert(index, _new_cell(args.cell_type or "code", new_id, args.new_source, _as_lines(nb)))
            named = f"cell {new_id}" if new_id else "a new cell"
            content, what = f"Inserted {named} with {args.new_source}", f"Inserted {named}"
        else:
            _replace(nb.cells[index], args.new_source, args.cell_type)
            content, what = f"Updated cell {args.cell_id} with {args.new_source}", f"Updated cell {args.cell_id}"
        write_text(path, notebook.dump(nb), ctx, nb.file)
        return ToolOutput(content=content, display=f"{what} of {path.name}")


def _replace(cell: dict[str, Any], source: str, kind: str | None) -> None:
    """New source for ``cell``; a code cell's outputs described the old one, so they go."""
    notebook.set_source(cell, source, isinstance(cell.get("source"), list))
    new_kind = kind or cell.get("cell_type", "code")
    if new_kind == "code":
        cell["execution_count"] = None
        cell["outputs"] = []
    else:  # a markdown cell has neither (nbformat)
        cell.pop("execution_count", None)
        cell.pop("outputs", None)
    cell["cell_type"] = new_kind


def _new_cell(kind: str, cid: str | None, source: str, as_lines: bool) -> dict[str, Any]:
    """A cell in Jupyter's key order; an ``id`` only where the notebook's format has them."""
    cell: dict[str, Any] = {"cell_type": kind}
    if kind == "code":
        cell["execution_count"] = None
    if cid:
        cell["id"] = cid
    cell["metadata"] = {}
    if kind == "code":
        cell["outputs"] = []
    notebook.set_source(cell, source, as_lines)
    return cell


def _new_id(nb: notebook.Notebook) -> str | None:
    if not nb.has_cell_ids:
        return None
    taken = {c.get("id") for c in nb.cells}
    while (cid := uuid.uuid4().hex[:8]) in taken:
        pass
    return cid


def _as_lines(nb: notebook.Notebook) -> bool:
    """Whether the notebook keeps sources as lists of lines (Jupyter does); a new cell follows it."""
    first = next((c["source"] for c in nb.cells), [])
    return isinstance(first, list)
