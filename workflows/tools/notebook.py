"""Jupyter notebooks (.ipynb, nbformat 4): loading, showing cells as Read shows them, writing back.

Read renders a notebook the way Claude Code does: each cell as ``<cell id="...">source</cell
id="...">`` (with ``<cell_type>`` for a non-code cell and ``<language>`` for code that is not
Python), followed by the text of its outputs. NotebookEdit names cells by those ids (or
``cell-N`` for a notebook whose cells have none).

Writing keeps the file as it was written: its indentation (Jupyter's is one space), its key
order, whether non-ASCII characters were escaped, its final newline, a byte-order mark and CRLF
line ends, and its encoding (:mod:`workflows.tools.text_file`); a cell's source stays a list of lines or a
string, as it was.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workflows.exceptions import ToolError
from workflows.tools import text_file
from workflows.tools.base import ToolContext
from workflows.tools.files import read_regular

#: The largest notebook Read and NotebookEdit load (it is parsed whole).
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024
#: A cell whose outputs hold more text than this shows a note instead of them.
MAX_OUTPUT_CHARS = 10_000
#: Read returns a notebook's cells whole (offset and limit do not apply); past this it points to jq.
MAX_RENDERED_CHARS = 100_000
NOT_JSON = "Notebook is not valid JSON."
NOT_NOTEBOOK = ('Notebook file is not a valid Jupyter notebook (top-level "cells" must be an array of cell '
                'objects, each with a string or string-array "source").')
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_INDENT = re.compile(r"\A\{\r?\n([ \t]+)\S")

JQ_HINT = ("Use Bash with jq to read specific portions:\n"
           "  cat {path} | jq '.cells[:20]' # First 20 cells\n"
           "  cat {path} | jq '.cells[100:120]' # Cells 100-120\n"
           "  cat {path} | jq '.cells | length' # Count total cells\n"
           "  cat {path} | jq '.cells[] | select(.cell_type==\"code\") | .source' # All code sources")


@dataclass
class Notebook:
    """A loaded notebook: its JSON, and the text it was read from (for writing it back alike)."""

    data: dict[str, Any]
    text: str
    mtime: float = 0.0
    file: text_file.TextFile | None = None  # its encoding (text_file): NotebookEdit writes it back alike

    @property
    def cells(self) -> list[dict[str, Any]]:
        return self.data["cells"]

    @property
    def language(self) -> str:
        info = (self.data.get("metadata") or {}).get("language_info") or {}
        name = info.get("name") if isinstance(info, dict) else None
        return name if isinstance(name, str) and name else "python"

    @property
    def has_cell_ids(self) -> bool:
        """nbformat 4.5 and later give every cell an ``id``."""
        major, minor = self.data.get("nbformat", 4), self.data.get("nbformat_minor", 0)
        return isinstance(major, int) and isinstance(minor, int) and (major > 4 or (major == 4 and minor >= 5))


def load(path: Path, ctx: ToolContext, action: str = "read") -> Notebook:
    """Read and parse notebook ``path``.

    Raises:
        ToolError: missing, unreadable, over :data:`MAX_NOTEBOOK_BYTES`, not JSON, or not a notebook.
    """
    raw, st = read_regular(path, ctx, MAX_NOTEBOOK_BYTES, action=action)
    loaded = text_file.decode(raw, path, action)
    text = loaded.text
    try:
        data = json.loads(text.removeprefix("\ufeff"))
    except ValueError:
        raise ToolError(NOT_JSON) from None
    if not valid(data):
        raise ToolError(NOT_NOTEBOOK)
    return Notebook(data, text, st.st_mtime, loaded)


def valid(data: Any) -> bool:
    """A JSON object whose ``cells`` are objects, each with a string or string-list ``source``."""
    cells = data.get("cells") if isinstance(data, dict) else None
    return isinstance(cells, list) and all(
        isinstance(c, dict) and (isinstance(c.get("source"), str) or (
            isinstance(c.get("source"), list) and all(isinstance(s, str) for s in c["source"])))
        for c in cells)


def source_of(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def set_source(cell: dict[str, Any], source: str, as_lines: bool) -> None:
    """Give ``cell`` ``source``, as a list of lines (Jupyter's way) or one string."""
    cell["source"] = source.splitlines(keepends=True) if as_lines else source


def cell_id(cell: dict[str, Any], index: int) -> str:
    """The id NotebookEdit knows a cell by: its ``id``, else ``cell-N`` (0-based)."""
    cid = cell.get("id")
    return cid if isinstance(cid, str) and cid else f"cell-{index}"


def find_cell(cells: list[dict[str, Any]], wanted: str | None, mode: str) -> int:
    """The index a NotebookEdit of ``mode`` works at: the cell named ``wanted`` (an ``id``, or
    ``cell-N``); for an insert, the index after it (0 with no ``wanted``).

    Raises:
        ToolError: no ``wanted`` for a replace or delete, or no such cell.
    """
    inserting = mode == "insert"
    if not wanted:
        if inserting:
            return 0
        raise ToolError("Cell ID must be specified when not inserting a new cell.")
    index = next((i for i, c in enumerate(cells) if c.get("id") == wanted), -1)
    if index < 0:
        m = re.fullmatch(r"cell-(\d+)", wanted)
        if m is None:
            raise ToolError(f'Cell with ID "{wanted}" not found in notebook.')
        index = int(m.group(1))
        if index >= len(cells):
            raise ToolError(f"Cell with index {index} does not exist in notebook.")
    return index + 1 if inserting else index


# --------------------------------------------------------------------------- showing (Read)


def render(nb: Notebook, path: Path | str) -> str:
    """The notebook's cells and their outputs as text, as Claude Code's Read shows them."""
    blocks: list[str] = []
    for index, cell in enumerate(nb.cells):
        blocks.append(_cell_tag(cell, index, nb.language))
        blocks.extend("\n" + text for text in _outputs(cell, index, path))
    return "\n".join(blocks)


def _cell_tag(cell: dict[str, Any], index: int, language: str) -> str:
    cid = cell_id(cell, index)
    kind = cell.get("cell_type", "code")
    extra = ""
    if kind != "code":
        extra += f"<cell_type>{kind}</cell_type>"
    elif language != "python":
        extra += f"<language>{language}</language>"
    return f'<cell id="{cid}">{extra}{source_of(cell)}</cell id="{cid}">'


def _outputs(cell: dict[str, Any], index: int, path: Path | str) -> list[str]:
    outputs = cell.get("outputs") if cell.get("cell_type") == "code" else None
    if not isinstance(outputs, list) or not outputs:
        return []
    texts = [_output_text(o) for o in outputs]
    known = [t for t in texts if t is not None]
    if sum(len(t) for t in known) > MAX_OUTPUT_CHARS:
        return [f"Outputs are too large to include. Use Bash with: cat {path} | jq '.cells[{index}].outputs'"]
    shown = [t for t in known if t]
    if len(known) < len(texts):
        shown.append("Outputs of an unknown type are not shown.")
    return shown


def _output_text(output: Any) -> str | None:
    """An output's text (None: a type Read does not know); images are named, not shown."""
    if not isinstance(output, dict):
        return None
    kind = output.get("output_type")
    if kind == "stream":
        return _plain(output.get("text"))
    if kind in ("execute_result", "display_data"):
        data = output.get("data") if isinstance(output.get("data"), dict) else {}
        text = _plain(data.get("text/plain"))
        images = [m for m in ("image/png", "image/jpeg") if isinstance(data.get(m), str)]
        if images:
            text += ("\n" if text else "") + f"[{images[0]} image output: Read shows notebook outputs as text only]"
        return text
    if kind == "error":
        trace = output.get("traceback") if isinstance(output.get("traceback"), list) else []
        return _plain(f"{output.get('ename', '')}: {output.get('evalue', '')}\n" + "\n".join(map(str, trace)))
    return None


def _plain(text: Any) -> str:
    """Output text as one string, without terminal colour codes (tracebacks are full of them)."""
    if isinstance(text, list):
        text = "".join(t for t in text if isinstance(t, str))
    return _ANSI.sub("", text) if isinstance(text, str) else ""


# --------------------------------------------------------------------------- writing (NotebookEdit)


def dump(nb: Notebook) -> str:
    """The notebook as text, formatted like the text it was read from (see the module docstring)."""
    original = nb.text
    body = original.removeprefix("\ufeff")
    m = _INDENT.match(body.lstrip())
    if m is not None:
        text = json.dumps(nb.data, indent=m.group(1), ensure_ascii=_escaped(body))
    else:  # written on one line
        compact = '":"' in body  # no space after a key: no space after commas either
        text = json.dumps(nb.data, ensure_ascii=_escaped(body), separators=(",", ":") if compact else None)
    if body.endswith("\n"):
        text += "\n"
    if "\r\n" in body:
        text = text.replace("\n", "\r\n")
    return ("\ufeff" if original.startswith("\ufeff") else "") + text


def _escaped(text: str) -> bool:
    """Whether the file wrote non-ASCII characters as ``\\uXXXX`` (it holds escapes and no raw ones)."""
    return not any(ord(c) > 127 for c in text) and bool(re.search(r"\\u[0-9a-fA-F]{4}", text))
