"""Edit: exact string replacement in a file the session has read.

The rules live in two functions that MultiEdit (:mod:`workflows.tools.multi_edit`) shares:
:func:`load_for_edit` (which files may be edited, and their text) and :func:`replace` (one
replacement: not found, not unique, nothing to change).

The file is decoded and written back by :mod:`workflows.tools.text_file`: its encoding and every
byte the edit does not change are kept, and the lines an edit adds to a CRLF file end in CRLF.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import NamedTuple

from pydantic import Field

from workflows.exceptions import ToolError, ToolRefused
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.files import directory_error, missing_file_error, stat_or_none
from workflows.tools.patch import structured_patch
from workflows.tools.text_file import TextFile, read_text, with_newline, write_text
from workflows.tools.write import check_read_and_fresh, count_lines

# Edit holds the file, and its edited copy, in memory; past this, sed in Bash does better.
MAX_EDIT_BYTES = 64 * 1024 * 1024
NO_CHANGES = "No changes to make: old_string and new_string are exactly the same."
NOTEBOOK = "File is a Jupyter Notebook. Use the NotebookEdit tool to edit this file."


def load_for_edit(path: Path, ctx: ToolContext, check_read: bool = True) -> TextFile | None:
    """The text of ``path`` for an edit, and its encoding; None when no file is there (an edit may
    create it). ``check_read`` False: the caller checks the read (:func:`check_read_and_fresh`) itself.

    Raises:
        ToolError: a directory, a notebook, a file not read in this session or changed since,
            too large, binary, or unreadable.
    """
    st = stat_or_none(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise directory_error(path)
    if path.suffix == ".ipynb":
        raise ToolError(NOTEBOOK)
    if st is None:
        return None
    if check_read:
        check_read_and_fresh(path, ctx)
    return read_text(path, ctx, MAX_EDIT_BYTES, action="edit")


class Replaced(NamedTuple):
    """One replacement done: the new text, how many occurrences, where the first was, what went in."""

    text: str
    count: int
    pos: int
    inserted: str


def replace(content: str, old: str, new: str, replace_all: bool, newline: str = "\n") -> Replaced:
    """Edit's rules for replacing ``old`` with ``new`` in ``content``.

    An empty ``old`` fills an empty (or blank) file. A file with CRLF line ends matches ``old``
    written with LF, as Read showed it. ``newline``: the file's line end (``text_file.dominant_newline``);
    with CRLF, the lines ``new`` brings end in CRLF (unless ``old`` matched bare LFs as written).

    Raises:
        ToolError: ``old`` equals ``new``, is not found, or is found more than once without
            ``replace_all``; an empty ``old`` in a file that has content.
    """
    if old == new:
        raise ToolRefused(NO_CHANGES)
    if old == "":
        if content.strip():
            raise ToolRefused(
                "Cannot create new file - file already exists. Use a non-empty "
                "old_string to edit it, or Write to overwrite it."
            )
        return Replaced(new, 1, 0, new)
    shown = old
    count = content.count(old)
    if count == 0 and "\r\n" in content and "\n" in old:
        # Read shows CRLF files without the CRs; match them the way the model saw them.
        old = with_newline(old, "\r\n")
        new = with_newline(new, "\r\n")
        count = content.count(old)
    elif newline == "\r\n" and "\n" not in old.replace("\r\n", ""):
        new = with_newline(new, "\r\n")
    if count == 0:
        raise ToolRefused(f"String to replace not found in file.\nString: {shown}")
    if count > 1 and not replace_all:
        raise ToolRefused(
            f"Found {count} matches of the string to replace, but replace_all is "
            "false. To replace all occurrences, set replace_all to true. To replace "
            "only one occurrence, please provide more context to uniquely identify "
            f"the instance.\nString: {shown}"
        )
    updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
    return Replaced(updated, count if replace_all else 1, content.find(old), new)


class EditInput(ToolInput):
    file_path: str = Field(
        description="The absolute path to the file to modify (a relative path is resolved "
        "against the current working directory)"
    )
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(
        description="The text to replace it with (must be different from old_string)"
    )
    replace_all: bool = Field(
        default=False, description="Replace all occurrences of old_string (default false)"
    )


@register
class EditTool(Tool):
    name = "Edit"
    description = (
        "Performs exact string replacements in files.\n\n"
        "Usage:\n"
        "- You must use your Read tool at least once in the conversation before editing. "
        "This tool will error if you attempt an edit without reading the file.\n"
        "- When editing text from Read tool output, preserve the exact indentation (tabs/"
        "spaces) as it appears AFTER the line number prefix (line number + tab). "
        "Never include any part of the line number prefix in old_string or new_string.\n"
        "- The edit will FAIL if old_string is not unique in the file. Either provide a "
        "larger string with more surrounding context to make it unique or use replace_all "
        "to change every instance of old_string.\n"
        "- Use replace_all for replacing and renaming strings across the file.\n"
        "- An empty old_string creates a new file with new_string as its content.\n"
        "- For Jupyter notebooks (.ipynb files), use NotebookEdit instead."
    )
    input_model = EditInput
    read_only = False
    idempotent = False

    def run(self, args: EditInput, ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(args.file_path, "file_path")
        if args.old_string == args.new_string:
            raise ToolRefused(NO_CHANGES)
        loaded = load_for_edit(path, ctx, check_read=False)
        if loaded is None:
            return create(path, args, ctx)
        done = replace(loaded.text, args.old_string, args.new_string, args.replace_all, loaded.newline)
        check_read_and_fresh(path, ctx)  # after the string's checks, in Claude Code 2.1.332's order
        write_text(path, done.text, ctx, loaded)
        # Claude Code 2.1.332's words; no snippet of the file: the model knows what it changed.
        content = (f"The file {path} has been updated. All occurrences were successfully replaced."
                   if args.replace_all else f"The file {path} has been updated successfully.")
        return ToolOutput(
            content=content,
            display=f"Updated {path.name} ({done.count} replacement{'' if done.count == 1 else 's'})",
            result=edit_result(path, args, loaded.text, done.text),
        )


def edit_result(path: Path, args: EditInput, original: str, updated: str) -> dict:
    """Claude Code's ``tool_use_result`` of an Edit."""
    return {"filePath": str(path), "oldString": args.old_string, "newString": args.new_string,
            "originalFile": original, "structuredPatch": structured_patch(original, updated),
            "userModified": False, "replaceAll": args.replace_all, "contentNotInModelContext": True}


def create(path: Path, args: EditInput, ctx: ToolContext) -> ToolOutput:
    """An edit of a file that does not exist: an empty ``old`` creates it with ``content``.

    Raises:
        ToolError: ``old`` is not empty (there is nothing to replace it in).
    """
    if args.old_string != "":
        raise missing_file_error(path, ctx)
    write_text(path, args.new_string, ctx)
    n = count_lines(args.new_string)
    return ToolOutput(
        content=f"File created successfully at: {path}",
        display=f"Created {path.name} ({n} line{'' if n == 1 else 's'})",
        result=edit_result(path, args, "", args.new_string),
    )
