"""Read: a text file in ``cat -n`` format, 2,000 lines at a time."""

from __future__ import annotations

import os
from typing import BinaryIO

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.tools import notebook
from workflows.tools.base import NotQuick, Tool, ToolContext, ToolInput, ToolOutput, raise_if_cancelled, register
from workflows.tools.files import directory_error, missing_file_error, open_regular, os_error

__all__ = ["cat_n", "cut_line", "directory_error", "missing_file_error", "split_lines"]

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
BINARY_SNIFF_BYTES = 8192
# Enough bytes for MAX_LINE_CHARS characters of UTF-8 (at most 4 bytes each); the rest is skipped.
LINE_READ_BYTES = 4 * MAX_LINE_CHARS + 4
# A Read with a huge limit stops collecting here (the default window is 2,000 cut lines, about 4M).
MAX_SHOWN_CHARS = DEFAULT_LIMIT * MAX_LINE_CHARS


def cat_n(lines: list[str], first_number: int) -> str:
    """Lines numbered exactly like ``cat -n``: the number right-aligned in 6, a TAB, the line."""
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start=first_number))


def cut_line(line: str, max_chars: int = MAX_LINE_CHARS, hidden: int = 0) -> str:
    """``line`` cut at ``max_chars`` with a note; ``hidden``: bytes of it that were never read."""
    if len(line) <= max_chars and not hidden:
        return line
    more = len(line) - max_chars + hidden
    about = "about " if hidden else ""
    return f"{line[:max_chars]}... [line truncated: {about}{more} more characters]"


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only (like ``cat``), dropping a CR before it and the empty tail."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def looks_binary(head: bytes) -> bool:
    """A NUL byte in the first bytes of a file marks it as binary (as git and grep decide)."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def read_window(fh: BinaryIO, start: int, limit: int, ctx: ToolContext) -> tuple[list[str], int]:
    """Lines ``start`` .. ``start + limit - 1`` (1-based, each cut), and the file's line count.

    Streams the file: memory holds the lines shown, never the whole file, and a
    single huge line is read only up to :data:`LINE_READ_BYTES`. Lines are split
    exactly as :func:`split_lines` splits them.

    Raises:
        ToolError: the session was cancelled meanwhile.
        OSError: the read failed.
    """
    shown: list[str] = []
    size, total = 0, 0
    while total < start - 1 + limit and size < MAX_SHOWN_CHARS:
        raw = fh.readline(LINE_READ_BYTES)
        if not raw:
            return shown, total
        hidden = 0 if raw.endswith(b"\n") or len(raw) < LINE_READ_BYTES else _skip_line(fh)
        total += 1
        if total % 10_000 == 0:
            raise_if_cancelled(ctx, "Read")
        if total >= start:
            line = raw.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", errors="replace")
            shown.append(cut_line(line, hidden=hidden))
            size += len(shown[-1])
    # Past the window only the count matters: count newlines a megabyte at a time.
    last = b"\n"
    while chunk := fh.read(1 << 20):
        raise_if_cancelled(ctx, "Read")
        total += chunk.count(b"\n")
        last = chunk[-1:]
    return shown, total + (last != b"\n")


def _skip_line(fh: BinaryIO) -> int:
    """Skip to the end of an over-long line; return how many bytes were skipped."""
    skipped = 0
    while chunk := fh.readline(1 << 20):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped


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
        "- It reads Jupyter notebooks (.ipynb files) whole, showing every cell with its outputs.\n"
        "- You must Read a file before you Edit or overwrite it with Write."
    )
    input_model = ReadInput
    read_only = True
    idempotent = True
    quick = True  # a regular file (FIFOs and devices refused unopened) of at most ctx.quick_bytes

    def run(self, args: ReadInput, ctx: ToolContext) -> ToolOutput:
        path = ctx.resolve(args.file_path, "file_path")
        if path.suffix == ".ipynb":
            if ctx.quick_bytes is not None:
                raise NotQuick(f"{path} is a notebook")
            return _notebook(path, ctx)
        start = max(args.offset or 1, 1)
        limit = args.limit or DEFAULT_LIMIT
        fd, st = open_regular(path, ctx)
        try:
            if ctx.quick_bytes is not None and st.st_size > ctx.quick_bytes:
                raise NotQuick(f"{path} holds {st.st_size:,} bytes")
            if looks_binary(os.pread(fd, BINARY_SNIFF_BYTES, 0)):
                raise ToolError(f"{path} appears to be a binary file and cannot be read as text.")
            with os.fdopen(os.dup(fd), "rb") as fh:
                shown, total = read_window(fh, start, limit, ctx)
        except OSError as exc:
            raise os_error("read", path, exc) from None
        finally:
            os.close(fd)
        ctx.files_read.set(str(path), st.st_mtime)
        return _output(path, shown, start, total)


def _notebook(path, ctx: ToolContext) -> ToolOutput:
    """A notebook's cells and outputs (see :mod:`workflows.tools.notebook`), whole."""
    nb = notebook.load(path, ctx)
    text = notebook.render(nb, path)
    if len(text) > notebook.MAX_RENDERED_CHARS:
        raise ToolError(f"Notebook content ({len(text):,} characters) exceeds the {notebook.MAX_RENDERED_CHARS:,} "
                        "characters Read returns for a notebook. " + notebook.JQ_HINT.format(path=path))
    ctx.files_read.set(str(path), nb.mtime)
    n = len(nb.cells)
    if not n:
        return ToolOutput(content=f"The notebook {path} has no cells.", display="Read 0 cells")
    return ToolOutput(content=text, display=f"Read {n} cell{'' if n == 1 else 's'}")


def _output(path: object, shown: list[str], start: int, total: int) -> ToolOutput:
    """The ``cat -n`` window, or the note for an empty file or an offset past its end."""
    if total == 0:
        return ToolOutput(
            content=f"The file {path} exists but is empty (0 lines).",
            display="Read 0 lines (empty file)",
        )

    if start > total:
        return ToolOutput(
            content=(
                f"The file {path} is shorter than the provided offset ({start}): "
                f"it has {total} lines."
            ),
            display="Read 0 lines",
        )
    end = start + len(shown) - 1
    content = cat_n(shown, start)
    if start > 1 or end < total:
        more = (
            f" To read more, call Read with offset={end + 1} (and optionally limit)."
            if end < total
            else ""
        )
        content += f"\n\n(Showing lines {start}-{end} of {total} lines.{more})"
    n = len(shown)
    return ToolOutput(content=content, display=f"Read {n} line{'' if n == 1 else 's'}")
