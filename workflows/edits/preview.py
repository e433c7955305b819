"""What an edit would change, shown to the person asked to approve it.

:func:`preview` makes the unified diff of the change an Edit, MultiEdit, Write or NotebookEdit call
proposes, from the file as it is when the call asks (the engine stores it with the request, so
every surface shows the same diff: the CLI prompt, ``mainsail pending``, ``watch``, the console).
It is the one diff maker; the console only colours its lines.

The file is found with the tools' own resolver (:meth:`ToolContext.resolve`) and the tools' own
edit rules (:func:`~workflows.tools.edit.replace`, :func:`~workflows.tools.multi_edit.apply_edits`),
and is read only when the session's rules let Read read it: a path a Read deny rule covers (or
any failure to decide) gets no diff, and a note that says why (fail closed).
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import NamedTuple

from workflows.exceptions import ToolError
from workflows.permissions.prompt import visible
from workflows.tools.text_file import decode, dominant_newline

#: The tools whose approval shows a diff.
DIFF_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
#: Lines of diff kept with a request (and shown); the rest is counted in the note.
MAX_DIFF_LINES = 120
#: A file larger than this is not read for a diff (the request is made while the session is locked).
MAX_PREVIEW_BYTES = 2 * 1024 * 1024
#: Changed lines past which two versions are not compared line by line (difflib is quadratic at worst).
MAX_COMPARED_LINES = 4000
#: A hunk's header, whose line numbers :func:`_hunks` moves past the lines set aside.
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")
#: Characters kept of one diff line.
MAX_LINE_CHARS = 300


class Preview(NamedTuple):
    """A unified diff (``---``/``+++`` header, hunks), and a note: why none is shown, or that it was cut."""

    diff: str = ""
    note: str = ""


def preview(rec, tool_name: str, tool_input: dict) -> Preview:
    """The diff ``tool_name`` called with ``tool_input`` would make in session ``rec``'s files now.

    Never raises: whatever keeps the diff from being made is the note.
    """
    if tool_name not in DIFF_TOOLS or not isinstance(tool_input, dict):
        return Preview()
    field = "notebook_path" if tool_name == "NotebookEdit" else "file_path"
    try:
        ctx = _context(rec)
        path = ctx.resolve(str(tool_input.get(field, "")), field)
        refused = _read_refused(rec, path)
        if refused:
            return Preview(note=f"diff not shown: {refused}")
        name = str(path)
        if tool_name == "NotebookEdit":
            old, new, name = _notebook_change(path, tool_input, ctx)
        else:
            old = _current_text(path, ctx)
            new = _new_text(tool_name, tool_input, old)
    except ToolError as exc:
        return Preview(note=f"diff not shown: {_first_line(str(exc))}")
    except Exception as exc:  # noqa: BLE001 - fail closed: no diff, and why; the request is still asked
        return Preview(note=f"diff not shown: {type(exc).__name__}: {_first_line(str(exc))}")
    return unified(name, old, new)


def unified(name: str, old: str | None, new: str) -> Preview:
    """The unified diff from ``old`` (None: no file yet) to ``new``, cut at :data:`MAX_DIFF_LINES`."""
    a = _lines(old or "")
    b = _lines(new)
    if a == b:
        return Preview(note="no change: the file already reads like this")
    lines = ["--- /dev/null" if old is None else f"--- a{name}", f"+++ b{name}", *_hunks(a, b)]
    shown = [visible(line[:MAX_LINE_CHARS] + ("…" if len(line) > MAX_LINE_CHARS else "")) for line in
             lines[:MAX_DIFF_LINES]]
    note = ""
    if len(lines) > MAX_DIFF_LINES:
        note = f"diff cut: {len(lines) - MAX_DIFF_LINES} more lines not shown ({len(lines)} in all)"
    return Preview("\n".join(shown), note)


def _hunks(a: list[str], b: list[str]) -> list[str]:
    """The hunks from ``a`` to ``b`` (3 lines of context), quick for any size: the lines both share at the
    start and the end are set aside first (an edit's change is local), and a changed middle too large
    to compare line by line (:data:`MAX_COMPARED_LINES`) is one hunk of removed then added lines."""
    same_head = 0
    while same_head < min(len(a), len(b)) and a[same_head] == b[same_head]:
        same_head += 1
    same_tail = 0
    while same_tail < min(len(a), len(b)) - same_head and a[-1 - same_tail] == b[-1 - same_tail]:
        same_tail += 1
    lo = max(0, same_head - 3)
    keep_tail = max(0, same_tail - 3)
    a_mid, b_mid = a[lo:len(a) - keep_tail], b[lo:len(b) - keep_tail]
    if len(a_mid) + len(b_mid) > MAX_COMPARED_LINES:
        head = f"@@ -{lo + 1 if a_mid else lo},{len(a_mid)} +{lo + 1 if b_mid else lo},{len(b_mid)} @@"
        return [head, *("-" + line for line in a_mid), *("+" + line for line in b_mid)]
    out = list(difflib.unified_diff(a_mid, b_mid, n=3, lineterm=""))[2:]  # (its own header names no file)
    return [_HUNK.sub(lambda m: f"@@ -{int(m[1]) + lo}{m[2] or ''} +{int(m[3]) + lo}{m[4] or ''} @@", line, count=1)
            if line.startswith("@@") else line for line in out]


def _lines(text: str) -> list[str]:
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if lines[-1] == "" else lines


def _first_line(text: str) -> str:
    return visible(text.strip().splitlines()[0] if text.strip() else text)[:300]


def _context(rec):
    from workflows.tools.base import ToolContext

    return ToolContext(workspace=Path(rec.workspace), session_id=rec.id, home=rec.home,
                       additional_dirs=tuple(rec.additional_directories))


def _read_refused(rec, path: Path) -> str:
    """Why the session may not read ``path`` (a deny rule), or "" when it may."""
    from workflows.permissions import Decision, decide
    from workflows.tools.base import get_tool

    perm = decide(get_tool("Read"), {"file_path": str(path)}, rec)
    if perm.decision is Decision.DENY:
        return f"the session may not read {path} ({perm.source or perm.reason})"
    return ""


def _current_text(path: Path, ctx) -> str | None:
    """The file's text now (decoded as the tools decode it: ``text_file``), None when there is no file.

    Raises:
        ToolError: a directory, not a regular file, too large to preview, binary, or unreadable.
    """
    from workflows.tools.files import read_regular, stat_or_none

    if stat_or_none(path) is None:
        return None
    raw, _ = read_regular(path, ctx, MAX_PREVIEW_BYTES, action="preview")
    return decode(raw, path, action="preview").text


def _new_text(tool_name: str, tool_input: dict, old: str | None) -> str:
    """The file's text after the call, by the tool's own rules.

    Raises:
        ToolError: the call would fail (its message says why).
    """
    from workflows.tools.edit import replace
    from workflows.tools.multi_edit import MultiEditInput, apply_edits

    if tool_name == "Write":
        return str(tool_input.get("content", ""))
    if tool_name == "Edit":
        old_s, new_s = str(tool_input.get("old_string", "")), str(tool_input.get("new_string", ""))
        if old is None:
            if old_s:
                raise ToolError("the file does not exist, so the edit would fail")
            return new_s
        return replace(old, old_s, new_s, bool(tool_input.get("replace_all")), dominant_newline(old)).text
    edits = MultiEditInput.model_validate(tool_input).edits
    if old is None and edits[0].old_string != "":
        raise ToolError("the file does not exist, so the edit would fail")
    return apply_edits(old or "", edits, dominant_newline(old or ""))


def _notebook_change(path: Path, tool_input: dict, ctx) -> tuple[str | None, str, str]:
    """The cell's source before (None: a new cell) and after (a deleted cell: ""), and what to call it.

    Raises:
        ToolError: the notebook cannot be read, or has no such cell.
    """
    from workflows.tools import notebook

    mode = tool_input.get("edit_mode") or "replace"
    nb = notebook.load(path, ctx, action="preview")
    index = notebook.find_cell(nb.cells, tool_input.get("cell_id"), mode)
    new = str(tool_input.get("new_source", ""))
    if mode == "insert":
        return None, new, f"{path} (new cell)"
    old = notebook.source_of(nb.cells[index])
    return old, "" if mode == "delete" else new, f"{path} (cell {notebook.cell_id(nb.cells[index], index)})"
