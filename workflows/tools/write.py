"""Write: create a file, or overwrite one the session has read (and that has not changed since).

The file is replaced in one step (:func:`~workflows.tools.files.write_atomic`):
a failed write never leaves it truncated or half-written. An existing file keeps its encoding
(:mod:`workflows.tools.text_file`: its byte-order mark, UTF-16, a legacy 8-bit encoding); the content's
line endings are written as given, as Claude Code writes them.
"""

from __future__ import annotations

import stat
from pathlib import Path

from pydantic import Field

from workflows.exceptions import ToolError, ToolRefused
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.files import directory_error, stat_or_none
from workflows.tools.patch import structured_patch
from workflows.tools.text_file import TextFile, read_text, write_text

#: Write keeps the encoding of an existing file up to this size (it is loaded to detect it).
MAX_ENCODING_BYTES = 64 * 1024 * 1024
NOT_READ = "File has not been read yet. Read it first before writing to it."
#: Claude Code 2.1.332 ends a Write's result so: the model wrote the whole content, so it knows it.
CURRENT = " (file state is current in your context \u2014 no need to Read it back)"
MODIFIED = (
    "File has been modified since read, either by the user or by a linter. "
    "Read it again before attempting to write it."
)


def check_read_and_fresh(path: Path, ctx: ToolContext) -> None:
    """An existing file may only be changed after the session read it, and if unchanged since.

    Raises:
        ToolError: never read in this session, or modified on disk after that read.
    """
    seen = ctx.files_read.get(str(path))
    if seen is None:
        raise ToolRefused(NOT_READ)
    st = stat_or_none(path)
    if st is None or st.st_mtime > seen:  # deleted since the read counts as modified
        raise ToolRefused(MODIFIED)


def count_lines(content: str) -> int:
    return content.count("\n") + (1 if content and not content.endswith("\n") else 0)


class WriteInput(ToolInput):
    file_path: str = Field(
        description="The absolute path to the file to write (a relative path is resolved "
        "against the current working directory)"
    )
    content: str = Field(description="The content to write to the file")


@register
class WriteTool(Tool):
    name = "Write"
    description = (
        "Writes a file to the local filesystem.\n\n"
        "Usage:\n"
        "- This tool will overwrite the existing file if there is one at the provided path.\n"
        "- If this is an existing file, you MUST use the Read tool first to read the file's "
        "contents. This tool will fail if you did not read the file first.\n"
        "- ALWAYS prefer editing existing files with the Edit tool. NEVER write new files "
        "unless explicitly required.\n"
        "- The file must be inside the session's workspace; missing parent directories are "
        "created."
    )
    input_model = WriteInput
    read_only = False
    idempotent = True

    def run(self, args: WriteInput, ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(args.file_path, "file_path")
        st = stat_or_none(path)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise directory_error(path)
        existed = st is not None
        like = None
        if existed:
            check_read_and_fresh(path, ctx)
            like = _encoding_of(path, ctx)
        write_text(path, args.content, ctx, like)
        n = count_lines(args.content)
        content = (
            f"The file {path} has been updated successfully."
            if existed
            else f"File created successfully at: {path}"
        ) + CURRENT
        original = like.text if like is not None else None
        result = {"type": "update" if existed else "create", "filePath": str(path), "content": args.content,
                  "structuredPatch": structured_patch(original, args.content) if original is not None else [],
                  "originalFile": original, "userModified": False}
        return ToolOutput(
            content=content, display=f"Wrote {n} line{'' if n == 1 else 's'} to {path.name}", result=result
        )


def _encoding_of(path: Path, ctx: ToolContext) -> TextFile | None:
    """The existing file, to write the new content in its encoding; None (UTF-8) for one that is not text
    (binary, too large to load): the new content replaces it whole."""
    try:
        return read_text(path, ctx, MAX_ENCODING_BYTES, action="write")
    except ToolError:
        return None
