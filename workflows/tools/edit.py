"""Edit: exact string replacement in a file the session has read."""

from __future__ import annotations

import stat

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.files import directory_error, missing_file_error, read_regular, stat_or_none
from workflows.tools.read import BINARY_SNIFF_BYTES, cat_n, cut_line, looks_binary, split_lines
from workflows.tools.write import check_read_and_fresh, count_lines, write_text

SNIPPET_CONTEXT = 4
SNIPPET_MAX_LINES = 60
# Edit holds the file, and its edited copy, in memory; past this, sed in Bash does better.
MAX_EDIT_BYTES = 64 * 1024 * 1024


def snippet(content: str, pos: int, inserted: str) -> str:
    """``cat -n`` lines around the text ``inserted`` at character ``pos`` of ``content``."""
    lines = split_lines(content)
    if not lines:
        return ""
    first = content.count("\n", 0, pos)
    last = first + inserted.count("\n")
    lo = max(0, first - SNIPPET_CONTEXT)
    hi = min(len(lines) - 1, last + SNIPPET_CONTEXT, lo + SNIPPET_MAX_LINES - 1)
    return cat_n([cut_line(line) for line in lines[lo : hi + 1]], lo + 1)


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
        "spaces) as it appears AFTER the line number prefix (spaces + line number + tab). "
        "Never include any part of the line number prefix in old_string or new_string.\n"
        "- The edit will FAIL if old_string is not unique in the file. Either provide a "
        "larger string with more surrounding context to make it unique or use replace_all "
        "to change every instance of old_string.\n"
        "- Use replace_all for replacing and renaming strings across the file.\n"
        "- An empty old_string creates a new file with new_string as its content."
    )
    input_model = EditInput
    read_only = False
    idempotent = False

    def run(self, args: EditInput, ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(args.file_path, "file_path")
        old, new = args.old_string, args.new_string
        if old == new:
            raise ToolError(
                "No changes to make: old_string and new_string are exactly the same."
            )
        st = stat_or_none(path)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise directory_error(path)

        if st is None:
            if old != "":
                raise missing_file_error(path, ctx)
            write_text(path, new, ctx)
            n = count_lines(new)
            return ToolOutput(
                content=f"File created successfully at: {path}",
                display=f"Created {path.name} ({n} line{'' if n == 1 else 's'})",
            )

        check_read_and_fresh(path, ctx)
        raw, _ = read_regular(path, ctx, MAX_EDIT_BYTES, action="edit")
        if looks_binary(raw[:BINARY_SNIFF_BYTES]):
            raise ToolError(f"{path} appears to be a binary file and cannot be edited as text.")
        content = raw.decode("utf-8", errors="replace")

        if old == "":
            if content.strip():
                raise ToolError(
                    "Cannot create new file - file already exists. Use a non-empty "
                    "old_string to edit it, or Write to overwrite it."
                )
            count, pos, updated = 1, 0, new
        else:
            count = content.count(old)
            if count == 0 and "\r\n" in content and "\n" in old:
                # Read shows CRLF files without the CRs; match them the way the model saw them.
                old = old.replace("\r\n", "\n").replace("\n", "\r\n")
                new = new.replace("\r\n", "\n").replace("\n", "\r\n")
                count = content.count(old)
            if count == 0:
                raise ToolError(f"String to replace not found in file.\nString: {args.old_string}")
            if count > 1 and not args.replace_all:
                raise ToolError(
                    f"Found {count} matches of the string to replace, but replace_all is "
                    "false. To replace all occurrences, set replace_all to true. To replace "
                    "only one occurrence, please provide more context to uniquely identify "
                    f"the instance.\nString: {args.old_string}"
                )
            pos = content.find(old)
            updated = content.replace(old, new) if args.replace_all else content.replace(old, new, 1)

        write_text(path, updated, ctx)
        replaced = count if args.replace_all else 1
        head = f"The file {path} has been updated."
        if args.replace_all and replaced > 1:
            head += f" All {replaced} occurrences were replaced."
        lines = snippet(updated, pos, new)
        body = (
            f"{head} Here's the result of running `cat -n` on a snippet of the edited file:\n{lines}"
            if lines
            else head
        )
        return ToolOutput(
            content=body,
            display=f"Updated {path.name} ({replaced} replacement{'' if replaced == 1 else 's'})",
        )
