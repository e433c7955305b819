"""Read: a text file in ``cat -n`` format, 2,000 lines at a time, within Claude Code's limits.

Claude Code's limits (2.1.332): a Read with no ``limit`` of a file over 256 KB is refused; a result over
25,000 tokens is refused when a range was asked for, and cut to its first lines with a note when the
whole file was; a range whose lines hold over 3.2 MB is refused. Binary formats are refused by their
extension (images and PDFs are read by :mod:`workflows.tools.media`), other files by their NUL bytes.
Text is decoded by :mod:`workflows.tools.text_file` (its byte-order mark, UTF-8, else Windows-1252),
exactly as Edit decodes it.
"""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import BinaryIO

from pydantic import Field

from workflows.exceptions import ToolError
from workflows.model.tokens import estimate_tokens
from workflows.tools import media, notebook, text_file
from workflows.tools.base import NotQuick, Tool, ToolContext, ToolInput, ToolOutput, raise_if_cancelled, register
from workflows.tools.files import directory_error, format_size, missing_file_error, open_regular, os_error, read_regular
from workflows.tools.text_file import BINARY_SNIFF_BYTES, LEGACY_ENCODING, UTF8, Encoding

__all__ = ["cat_n", "cut_line", "directory_error", "missing_file_error", "split_lines"]

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
#: Claude Code's limits (``maxSizeBytes``, ``maxTokens``; a range may select 128 bytes a token).
MAX_SIZE_BYTES = 256 * 1024
MAX_TOKENS = 25_000
MAX_SELECTED_BYTES = MAX_TOKENS * 128
# Enough bytes for MAX_LINE_CHARS characters of UTF-8 (at most 4 bytes each); the rest is skipped.
LINE_READ_BYTES = 4 * MAX_LINE_CHARS + 4
# A UTF-16/32 file is decoded whole: at most this large.
MAX_WIDE_BYTES = 64 * 1024 * 1024
TRY_RANGE = ("Use offset and limit parameters to read specific portions of the file, or search for specific "
             "content instead of reading the whole file.")


def cat_n(lines: list[str], first_number: int) -> str:
    """Lines numbered as Claude Code 2.1.332 numbers them: the number, a TAB, the line (``1\tx = 1``)."""
    return "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, start=first_number))


def cut_line(line: str, max_chars: int = MAX_LINE_CHARS, hidden: int = 0) -> str:
    """``line`` cut at ``max_chars`` with a note; ``hidden``: bytes of it that were never read."""
    if len(line) <= max_chars and not hidden:
        return line
    more = len(line) - max_chars + hidden
    about = "about " if hidden else ""
    return f"{line[:max_chars]}... [line truncated: {about}{more} more characters]"


def numbered_lines(text: str) -> list[str]:
    """The lines Read numbers: split on ``\\n``, a CR before it dropped, the text after the last newline a
    line too (an empty file is one empty line, ``a\\n`` two), as Claude Code 2.1.332 counts them."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def split_lines(text: str) -> list[str]:
    """Split on ``\\n`` only (like ``cat``), dropping a CR before it and the empty tail."""
    if not text:
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


class _Utf8Check:
    """Whether every byte fed so far, in order, is valid UTF-8 (stops decoding at the first error)."""

    def __init__(self) -> None:
        self._dec = codecs.getincrementaldecoder("utf-8")()
        self.ok = True

    def feed(self, data: bytes, final: bool = False) -> None:
        if self.ok:
            try:
                self._dec.decode(data, final)
            except UnicodeDecodeError:
                self.ok = False


def read_window(fh: BinaryIO, start: int, limit: int, ctx: ToolContext, bom: bytes = b"") -> tuple[list[str], int, Encoding]:
    """Lines ``start`` .. ``start + limit - 1`` (1-based, each cut), the file's line count, its encoding.

    Streams the file: memory holds the lines shown, never the whole file, and a single huge line is
    read only up to :data:`LINE_READ_BYTES`. Lines are split as :func:`numbered_lines` splits them
    (a file ending in a newline has an empty last line, as Claude Code numbers it). Every byte goes through a UTF-8 check, so the lines are decoded as
    :func:`text_file.detect` would decode the whole file (``bom``: a UTF-8 mark, dropped).

    Raises:
        ToolError: the session was cancelled meanwhile, or the range holds over
            :data:`MAX_SELECTED_BYTES` of text.
        OSError: the read failed.
    """
    check = _Utf8Check()
    if bom:
        fh.read(len(bom))
    raw_lines: list[tuple[bytes, int]] = []
    size, total, ended = 0, 0, True  # ended: the last line read ended with a newline (or none was read)
    while total < start - 1 + limit:
        raw = fh.readline(LINE_READ_BYTES)
        if not raw:
            # The text after the last newline is a line too, empty or not (as Claude Code counts them).
            if ended:
                total += 1
                if total >= start:
                    raw_lines.append((b"", 0))
            break
        check.feed(raw)
        hidden = 0 if raw.endswith(b"\n") or len(raw) < LINE_READ_BYTES else _skip_line(fh, check)
        ended = raw.endswith(b"\n") or hidden > 0
        total += 1
        if total % 10_000 == 0:
            raise_if_cancelled(ctx, "Read")
        if total >= start:
            raw_lines.append((raw, hidden))
            size += len(raw)  # (what is kept: a long line's skipped part is not shown)
            if size > MAX_SELECTED_BYTES:
                raise ToolError(f"The requested line range contains over {format_size(MAX_SELECTED_BYTES)} of "
                                "text, more than a read can return. Use a smaller limit \u2014 or, if a single line "
                                "is this large, no limit will fit it: search for specific content instead.")
    else:
        # Past the window only the count (and the encoding) matters: a megabyte at a time.
        while chunk := fh.read(1 << 20):
            raise_if_cancelled(ctx, "Read")
            check.feed(chunk)
            total += chunk.count(b"\n")
        total += ended  # the line after the last newline
    check.feed(b"", final=True)
    enc = Encoding("utf-8", bom, "UTF-8 with a byte-order mark") if bom and check.ok else (
        UTF8 if check.ok else LEGACY_ENCODING)
    shown = [cut_line(_decode_line(raw, enc), hidden=hidden) for raw, hidden in raw_lines]
    return shown, total, enc


def _decode_line(raw: bytes, enc: Encoding) -> str:
    raw = raw.removesuffix(b"\n").removesuffix(b"\r")
    # In a valid UTF-8 file only a line cut at LINE_READ_BYTES can end inside a character (past the cut).
    return raw.decode("utf-8", errors="replace") if enc.codec == "utf-8" else enc.decode(raw)


def _skip_line(fh: BinaryIO, check: _Utf8Check) -> int:
    """Skip to the end of an over-long line; return how many bytes were skipped."""
    skipped = 0
    while chunk := fh.readline(1 << 20):
        check.feed(chunk)
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
    pages: str | None = Field(
        default=None,
        description=f'Page range for PDF files (e.g., "1-5", "3", "10-20"). Only applicable to PDF files. '
        f"Maximum {media.MAX_PDF_PAGES_PER_READ} pages per request.",
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
        f"- A file over {format_size(MAX_SIZE_BYTES)} needs offset and limit; a result is at most "
        f"{MAX_TOKENS:,} tokens.\n"
        "- Results are returned using cat -n format, with line numbers starting at 1.\n"
        "- This tool reads images (PNG, JPG, GIF, WebP): their contents are presented visually.\n"
        "- This tool reads PDF files (.pdf). For large PDFs (more than "
        f"{media.MAX_PDF_PAGES_WHOLE} pages), you MUST provide the pages parameter to read specific page "
        f'ranges (e.g., pages: "1-5"). Maximum {media.MAX_PDF_PAGES_PER_READ} pages per request.\n'
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
        kind = media.kind_of(path)
        if kind is not None:
            if ctx.quick_bytes is not None:
                raise NotQuick(f"{path} is {kind}")
            return media.read(path, kind, args.pages, ctx)
        if args.pages is not None:
            raise ToolError(f"The pages parameter applies to PDF files only; {path} is not one. "
                            "Use offset and limit to read part of a text file.")
        start = max(args.offset or 1, 1)
        limit = args.limit or DEFAULT_LIMIT
        fd, st = open_regular(path, ctx)
        try:
            if ctx.quick_bytes is not None and st.st_size > ctx.quick_bytes:
                raise NotQuick(f"{path} holds {st.st_size:,} bytes")
            if args.limit is None and st.st_size > MAX_SIZE_BYTES:
                raise ToolError(f"File content ({format_size(st.st_size)}) exceeds maximum allowed size "
                                f"({format_size(MAX_SIZE_BYTES)}). {TRY_RANGE}")
            head = os.pread(fd, BINARY_SNIFF_BYTES, 0)
            enc = text_file.bom_encoding(head)
            if enc is None and text_file.has_nul(head):
                raise text_file.binary_error(path)
            if enc is not None and enc.wide:
                shown, total, enc = _read_wide(path, ctx, start, limit)
            else:
                with os.fdopen(os.dup(fd), "rb") as fh:
                    shown, total, enc = read_window(fh, start, limit, ctx, enc.bom if enc else b"")
        except OSError as exc:
            raise os_error("read", path, exc) from None
        finally:
            os.close(fd)
        out = _output(path, shown, start, total, whole=args.offset in (None, 0, 1) and args.limit is None)
        ctx.files_read.set(str(path), st.st_mtime)
        if enc.codec == text_file.LEGACY and not out.is_error:
            out.content += "\n\n" + text_file.LEGACY_NOTE
        return out


def _read_wide(path: Path, ctx: ToolContext, start: int, limit: int) -> tuple[list[str], int, Encoding]:
    """A UTF-16/32 file's window: decoded whole (lines cannot be found byte by byte)."""
    loaded = text_file.decode(read_regular(path, ctx, MAX_WIDE_BYTES)[0], path)
    lines = numbered_lines(loaded.text)
    return [cut_line(line) for line in lines[start - 1 : start - 1 + limit]], len(lines), loaded.encoding


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


EMPTY = "<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>"
SHORTER = ("<system-reminder>Warning: the file exists but is shorter than the provided offset ({start}). The file has "
           "{total} lines.</system-reminder>")


def _output(path: object, shown: list[str], start: int, total: int, whole: bool) -> ToolOutput:
    """The numbered window (Claude Code's text), or its warning for an empty file or an offset past the end;
    with Claude Code's ``tool_use_result`` (``{"type": "text", "file": {...}}``).

    Over :data:`MAX_TOKENS`: a ``whole`` read (no offset, no limit) shows its first lines with a note, as
    Claude Code does; a range asked for is refused. A whole read cut at :data:`DEFAULT_LIMIT` lines says
    where to go on.

    Raises:
        ToolError: a range over :data:`MAX_TOKENS`.
    """
    result = {"type": "text", "file": {"filePath": str(path), "content": "\n".join(shown), "numLines": len(shown),
                                       "startLine": start, "totalLines": total}}
    if total == 1 and shown == [""]:
        return ToolOutput(content=EMPTY, display="Read 0 lines (empty file)", result=result)
    if start > total:
        return ToolOutput(content=SHORTER.format(start=start, total=total), display="Read 0 lines", result=result)
    content = cat_n(shown, start)
    tokens = estimate_tokens(content)
    if tokens > MAX_TOKENS:
        if not whole:
            raise ToolError(f"File content ({tokens} tokens) exceeds maximum allowed tokens ({MAX_TOKENS}). "
                            + TRY_RANGE)
        return _partial(path, shown, total, tokens)
    end = start + len(shown) - 1
    if whole and end < total:
        content += (f"\n\n(Showing lines {start}-{end} of {total} lines. To read more, call Read with "
                    f"offset={end + 1} (and optionally limit).)")
    n = len(shown) - (end == total and shown[-1] == "")  # (the empty line after a final newline)
    return ToolOutput(content=content, display=f"Read {n} line{'' if n == 1 else 's'}", result=result)


def _partial(path: object, shown: list[str], total: int, tokens: int) -> ToolOutput:
    """The first lines of a whole-file read over :data:`MAX_TOKENS`, and Claude Code's note on paging on."""
    budget, n = MAX_TOKENS * 4 - 1000, 0  # (room for the note)
    for line, number in zip(shown, range(1, len(shown) + 1)):  # its text, its number, a TAB and a newline
        budget -= len(line) + len(str(number)) + 2
        if budget < 0:
            break
        n += 1
    n = max(n, 1)
    note = (f"[Truncated: PARTIAL view \u2014 {path}: showing lines 1-{n} of {total} total ({tokens} tokens, cap "
            f"{MAX_TOKENS}). Call Read with offset={n + 1} limit={n} for the next page, or Grep to find a specific "
            "section. Do NOT answer from this page alone if the answer may be further in the file.]")
    return ToolOutput(content=cat_n(shown[:n], 1) + "\n\n" + note,
                      display=f"Read {n} line{'' if n == 1 else 's'} (partial: over {MAX_TOKENS:,} tokens)")
