"""MultiEdit: several of Edit's replacements in one file, all or none.

Each edit applies to the text the previous one left, with Edit's own rules and messages
(:func:`~workflows.tools.edit.replace`); the file is written once, after the last edit, so a
failing edit leaves it untouched. As in Claude Code, an edit may not look for text an earlier
edit of the same call put in (its result would depend on the order in a way that is easy to
get wrong), and a call whose edits cancel out changes nothing and says so.
"""

from __future__ import annotations

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.edit import load_for_edit, replace
from workflows.tools.files import missing_file_error
from workflows.tools.text_file import write_text

#: How much of each old_string and new_string the result repeats.
SHOWN_CHARS = 200
OVERLAP = "Cannot edit file: old_string is a substring of a new_string from a previous edit."
UNCHANGED = "Original and edited file match exactly. Failed to apply edit."

DESCRIPTION = (
    "This is a tool for making multiple edits to a single file in one operation. It is built on top "
    "of the Edit tool and allows you to perform multiple find-and-replace operations efficiently. "
    "Prefer this tool over the Edit tool when you need to make multiple edits to the same file.\n\n"
    "Before using this tool:\n"
    "1. Use the Read tool to understand the file's contents and context\n"
    "2. Verify the directory path is correct\n\n"
    "To make multiple file edits, provide:\n"
    "1. file_path: The absolute path to the file to modify\n"
    "2. edits: An array of edit operations to perform, each with old_string, new_string and "
    "optionally replace_all\n\n"
    "IMPORTANT:\n"
    "- All edits are applied in sequence, in the order they are provided\n"
    "- Each edit operates on the result of the previous edit\n"
    "- All edits must be valid for the operation to succeed - if any edit fails, none will be applied\n"
    "- This tool is ideal when you need to make several changes to different parts of the same file\n"
    "- For Jupyter notebooks (.ipynb files), use the NotebookEdit instead\n\n"
    "CRITICAL REQUIREMENTS:\n"
    "1. All edits follow the same requirements as the single Edit tool\n"
    "2. The edits are atomic - either all succeed or none are applied\n"
    "3. Plan your edits carefully to avoid conflicts between sequential operations\n\n"
    "WARNING:\n"
    "- The tool will fail if edits.old_string doesn't match the file contents exactly (including "
    "whitespace)\n"
    "- The tool will fail if edits.old_string and edits.new_string are the same\n"
    "- Since edits are applied in sequence, ensure that earlier edits don't affect the text that "
    "later edits are trying to find\n\n"
    "If you want to create a new file, use a new file path and make the first edit's old_string "
    "empty (its new_string is the file's content); the following edits apply to that content."
)


class EditOperation(ToolInput):
    old_string: str = Field(description="The text to replace")
    new_string: str = Field(description="The text to replace it with")
    replace_all: bool = Field(default=False, description="Replace all occurences of old_string (default false).")


class MultiEditInput(ToolInput):
    file_path: str = Field(
        description="The absolute path to the file to modify (a relative path is resolved against the current "
        "working directory)"
    )
    edits: list[EditOperation] = Field(
        min_length=1, description="Array of edit operations to perform sequentially on the file"
    )


@register
class MultiEditTool(Tool):
    name = "MultiEdit"
    description = DESCRIPTION
    input_model = MultiEditInput
    read_only = False
    idempotent = False

    def run(self, args: MultiEditInput, ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(args.file_path, "file_path")
        loaded = load_for_edit(path, ctx)
        if loaded is None and args.edits[0].old_string != "":
            raise missing_file_error(path, ctx)
        original = loaded.text if loaded is not None else None
        text = apply_edits(original or "", args.edits, loaded.newline if loaded is not None else "\n")
        if original is not None and text == original:
            raise ToolError(UNCHANGED)
        write_text(path, text, ctx, loaded)
        n = len(args.edits)
        lines = [f"{i}. Replaced \"{_cut(e.old_string)}\" with \"{_cut(e.new_string)}\""
                 for i, e in enumerate(args.edits, start=1)]
        head = f"Applied {n} edit{'' if n == 1 else 's'} to {path}:"
        created = " (created)" if original is None else ""
        return ToolOutput(content="\n".join([head, *lines]),
                          display=f"Updated {path.name}{created} ({n} edit{'' if n == 1 else 's'})")


def apply_edits(text: str, edits: list[EditOperation], newline: str = "\n") -> str:
    """``text`` after every edit in turn (``newline``: the file's line end, see :func:`~workflows.tools.edit.replace`).

    Raises:
        ToolError: an edit breaks one of Edit's rules on the text before it (the message is
            Edit's, with which edit it was), or looks for text an earlier edit put in.
    """
    inserted: list[str] = []
    for i, edit in enumerate(edits, start=1):
        where = f"\n(in edit {i} of {len(edits)}; none of the edits were applied)"
        wanted = edit.old_string.rstrip("\n")
        if wanted and any(wanted in earlier for earlier in inserted):
            raise ToolError(OVERLAP + where)
        try:
            text = replace(text, edit.old_string, edit.new_string, edit.replace_all, newline).text
        except ToolError as exc:
            raise ToolError(f"{exc}{where}") from None
        inserted.append(edit.new_string)
    return text


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "..."
