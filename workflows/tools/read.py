"""Read: a text file in ``cat -n`` format, 2,000 lines at a time."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.tools.base import Tool, ToolContext, ToolInput, ToolOutput, register

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
BINARY_SNIFF_BYTES = 8192


def cat_n(lines: list[str], first_number: int) -> str:
    """Lines numbered exactly like ``cat -n``: the number right-aligned in 6, a TAB, the line."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first_number))


def cut_line(line: str, max_chars: int = MAX_LINE_CHARS) -> str:
    if len(line) <= max_chars:
        return line
    return f"{line[:max_chars]}... [line truncated: {len(line) - max_chars} more characters]"


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only (like ``cat``), dropping a CR before it and the empty tail."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def is_binary(path: Path) -> bool:
    with open(path, "rb") as fh:
        return b"\0" in fh.read(BINARY_SNIFF_BYTES)


def missing_file_error(path: Path | str, ctx: ToolContext) -> ToolError:
    return ToolError(f"File does not exist: {path}. Current working directory: {ctx.cwd}")


def directory_error(path: Path | str) -> ToolError:
    return ToolError(
        f"{path} is a directory, not a file. Use the Glob tool to find files in it, "
        "or Bash `ls` to list it."
    )


class ReadInput(ToolInput):
    file_path: str = Field(
        description="The absolute path to the file to read (a relative path is resolved "
        "against the current working directory)"
    )
    offset: int | None = Field(
        default=None,
        ge=0,
        description="The line number to start reading from (1-based). Only provide if the "
        "file is too large to read at once",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        description="The number of lines to read. Only provide if the file is too large to "
        "read at once.",
    )


@register
class ReadTool(Tool):
    name = "Read"
    description = (
        "Reads a file from the local filesystem.\n\n"
        "Usage:\n"
        "- The file_path parameter should be an absolute path; it must be inside the "
        "session's workspace.\n"
        f"- By default, it reads up to {DEFAULT_LIMIT} lines starting from the beginning of "
        "the file.\n"
        "- You can optionally specify a line offset and limit (especially handy for long "
        "files), but it's recommended to read the whole file by not providing these "
        "parameters.\n"
        f"- Any lines longer than {MAX_LINE_CHARS} characters will be truncated.\n"
        "- Results are returned using cat -n format, with line numbers starting at 1.\n"
        "- This tool can only read files, not directories. To read a directory, use an ls "
        "command via the Bash tool.\n"
        "- You must Read a file before you Edit or overwrite it with Write."
    )
    input_model = ReadInput
    read_only = True
    idempotent = True

    def run(self, args: ReadInput, ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(args.file_path, "file_path")
        if path.is_dir():
            raise directory_error(path)
        if not path.exists():
            raise missing_file_error(path, ctx)
        if not path.is_file():
            raise ToolError(f"{path} is not a regular file and cannot be read as text.")
        try:
            if is_binary(path):
                raise ToolError(
                    f"{path} appears to be a binary file and cannot be read as text."
                )
            mtime = os.stat(path).st_mtime
            with open(path, "rb") as fh:
                text = fh.read().decode("utf-8", errors="replace")
        except OSError as exc:
            raise ToolError(f"Cannot read {path}: {exc.strerror or exc}") from None

        lines = split_lines(text)
        total = len(lines)
        ctx.files_read.set(str(path), mtime)

        if total == 0:
            return ToolOutput(
                content=f"The file {path} exists but is empty (0 lines).",
                display="Read 0 lines (empty file)",
            )

        start = max(args.offset or 1, 1)
        limit = args.limit or DEFAULT_LIMIT
        if start > total:
            return ToolOutput(
                content=(
                    f"The file {path} is shorter than the provided offset ({start}): "
                    f"it has {total} lines."
                ),
                display="Read 0 lines",
            )
        shown = lines[start - 1 : start - 1 + limit]
        end = start + len(shown) - 1
        content = cat_n([cut_line(line) for line in shown], start)
        if start > 1 or end < total:
            more = (
                f" To read more, call Read with offset={end + 1} (and optionally limit)."
                if end < total
                else ""
            )
            content += f"\n\n(Showing lines {start}-{end} of {total} lines.{more})"
        n = len(shown)
        return ToolOutput(content=content, display=f"Read {n} line{'' if n == 1 else 's'}")
