"""Write: create a file, or overwrite one the session has read (and that has not changed since)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register
from workflows.tools.read import directory_error

NOT_READ = "File has not been read yet. Read it first before writing to it."
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
        raise ToolError(NOT_READ)
    if os.stat(path).st_mtime > seen:
        raise ToolError(MODIFIED)


def write_text(path: Path, content: str, ctx: ToolContext) -> None:
    """Write ``content`` as UTF-8, byte for byte (no newline translation), and record the read."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(content)
        ctx.files_read.set(str(path), os.stat(path).st_mtime)
    except OSError as exc:
        raise ToolError(f"Cannot write {path}: {exc.strerror or exc}") from None


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
        if path.is_dir():
            raise directory_error(path)
        existed = path.exists()
        if existed:
            check_read_and_fresh(path, ctx)
        write_text(path, args.content, ctx)
        n = count_lines(args.content)
        content = (
            f"The file {path} has been updated."
            if existed
            else f"File created successfully at: {path}"
        )
        return ToolOutput(
            content=content, display=f"Wrote {n} line{'' if n == 1 else 's'} to {path.name}"
        )
