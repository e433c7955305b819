"""Read of images and PDFs: content blocks for the model, as Claude Code sends them (2.1.332).

- An image (PNG, JPEG, GIF, WebP; the type is told by its bytes, not its name) becomes an ``image``
  block. One over 2000x2000 pixels or 3.75 MB is scaled down (Pillow) and, if still too large,
  re-encoded as JPEG at falling quality; a text block then gives the original and shown sizes.
- A PDF becomes a ``document`` block after a text line ``PDF file read: PATH (SIZE)``. One of more
  than 10 pages needs ``pages`` (at most 20 a read); the pages asked for are cut out with pypdf into
  a PDF of their own (Claude Code renders them to images with poppler instead).
- Any other binary format (by extension, Claude Code's list) is refused with Claude Code's words.

The blocks ride on :attr:`ToolOutput.blocks`; ``content`` keeps a one-line text of what was read for
hooks, transcripts and front ends.
"""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path
from typing import Any

from workflows.exceptions import ToolError
from workflows.tools.base import ToolContext, ToolOutput
from workflows.tools.files import format_size, read_regular

IMAGE_EXTS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})
PDF_EXT = ".pdf"
#: Claude Code's list of binary extensions Read refuses (those it reads as images or PDFs aside).
BINARY_EXTS = frozenset((
    ".bmp .ico .tiff .tif .heic .heif .avif .mp4 .mov .avi .mkv .webm .wmv .flv .m4v .mpeg .mpg .mp3 .wav .ogg "
    ".flac .aac .m4a .wma .aiff .opus .zip .tar .gz .bz2 .7z .rar .xz .z .tgz .iso .zst .lz4 .whl .exe .dll .so "
    ".dylib .bin .o .a .obj .lib .app .msi .deb .rpm .dmg .apk .doc .docx .docm .dotx .dotm .xls .xlsx .xlsm "
    ".xlsb .xltx .xltm .ppt .pptx .pptm .ppsx .ppsm .potx .potm .odt .ods .odp .numbers .epub .ttf .otf .woff "
    ".woff2 .eot .pyc .pyo .class .jar .war .ear .node .wasm .rlib .sqlite .sqlite3 .db .mdb .idx .parquet "
    ".feather .npy .npz .pickle .psd .ai .eps .sketch .fig .xd .blend .3ds .max .swf .fla .lockb .dat .data"
).split())

#: Claude Code's image limits (sonnet/opus 4.x): pixels a side, and raw bytes before base64.
MAX_IMAGE_SIDE = 2000
TARGET_IMAGE_BYTES = 3_932_160
MAX_IMAGE_FILE_BYTES = 32 * 1024 * 1024
#: Claude Code's PDF limits.
MAX_PDF_BYTES = 20 * 1024 * 1024
MAX_PDF_PAGES_WHOLE = 10
MAX_PDF_PAGES_PER_READ = 20

_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"),
          (b"GIF89a", "image/gif"))


def kind_of(path: Path) -> str | None:
    """``"image"``, ``"pdf"`` or ``"binary"`` by the file's extension; None for a file read as text."""
    ext = path.suffix.lower()
    if ext in IMAGE_EXTS:
        return "image"
    if ext == PDF_EXT:
        return "pdf"
    if ext in BINARY_EXTS:
        return "binary"
    return None


def read(path: Path, kind: str, pages: str | None, ctx: ToolContext) -> ToolOutput:
    """Read's result for an image, a PDF, or a binary file (refused).

    Raises:
        ToolError: a binary format, a file that is not what its name says, too large, or bad ``pages``.
    """
    if kind == "binary":
        raise ToolError(
            f"This tool cannot read binary files. The file appears to be a binary {path.suffix.lower()} file. "
            "Use a shell command or script that can read the format."
        )
    if pages is not None and kind != "pdf":
        raise ToolError(f"The pages parameter applies to PDF files only; {path} is an image.")
    if kind == "image":
        data, st = read_regular(path, ctx, MAX_IMAGE_FILE_BYTES)
        out = image_output(path, data)
    else:
        data, st = read_regular(path, ctx, MAX_PDF_BYTES)
        out = pdf_output(path, data, pages)
    ctx.files_read.set(str(path), st.st_mtime)
    return out


# --------------------------------------------------------------------------- images


def media_type(data: bytes) -> str | None:
    """The image type its first bytes show (the API refuses a type that does not match the data)."""
    for magic, kind in _MAGIC:
        if data.startswith(magic):
            return kind
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_output(path: Path, data: bytes) -> ToolOutput:
    """An ``image`` block of ``data``, scaled down to Claude Code's limits when over them.

    Raises:
        ToolError: empty, not an image of a known type, or an image Pillow cannot decode.
    """
    if not data:
        raise ToolError(f"Image file is empty: {path}")
    kind = media_type(data)
    if kind is None:
        raise ToolError(f"{path} is not a PNG, JPEG, GIF or WebP image (its first bytes are no such image's), "
                        "so Read cannot show it. Use a shell command (file) to see what it is.")
    blocks: list[dict[str, Any]] = []
    size = _dimensions(data)
    if size is None or len(data) > TARGET_IMAGE_BYTES or max(size) > MAX_IMAGE_SIDE:
        data, kind, shown, size = _downsize(path, data, kind)
        if shown != size:
            ratio = size[0] / shown[0]
            blocks.append({"type": "text", "text": (
                f"[Image: original {size[0]}x{size[1]}, displayed at {shown[0]}x{shown[1]}. "
                f"Multiply coordinates by {ratio:.2f} to map to original image.]")})
    blocks.insert(0, {"type": "image", "source": {
        "type": "base64", "media_type": kind, "data": base64.b64encode(data).decode("ascii")}})
    return ToolOutput(content=f"[Image: {path} ({kind}, {format_size(len(data))})]", blocks=blocks,
                      display=f"Read image ({format_size(len(data))})")


def _dimensions(data: bytes) -> tuple[int, int] | None:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency
        return None
    try:
        with Image.open(io.BytesIO(data)) as im:
            return im.size
    except Exception:  # Pillow raises many kinds for a broken file
        return None


def _downsize(path: Path, data: bytes, kind: str) -> tuple[bytes, str, tuple[int, int], tuple[int, int]]:
    """``(data, media type, shown size, original size)`` within the limits, as Claude Code's resize does."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as im:
            im.load()
            original = im.size
            w, h = _fit(*original)
            small = im.resize((w, h)) if (w, h) != original else im.copy()
    except Exception as exc:  # Pillow raises many kinds for a broken file
        raise ToolError(f"Cannot read image {path}: it could not be decoded ({exc}).") from None
    if kind == "image/png":
        out = _encode(small, "PNG", optimize=True)
        if len(out) <= TARGET_IMAGE_BYTES:
            return out, kind, (w, h), original
    rgb = small.convert("RGB")
    for quality in (80, 60, 40, 20):
        out = _encode(rgb, "JPEG", quality=quality)
        if len(out) <= TARGET_IMAGE_BYTES:
            return out, "image/jpeg", (w, h), original
    tw = min(w, 1000)
    th = max(1, round(h * tw / max(w, 1)))
    return _encode(rgb.resize((tw, th)), "JPEG", quality=20), "image/jpeg", (tw, th), original


def _fit(w: int, h: int) -> tuple[int, int]:
    if w > MAX_IMAGE_SIDE:
        h, w = round(h * MAX_IMAGE_SIDE / w), MAX_IMAGE_SIDE
    if h > MAX_IMAGE_SIDE:
        w, h = round(w * MAX_IMAGE_SIDE / h), MAX_IMAGE_SIDE
    return max(w, 1), max(h, 1)


def _encode(im: Any, fmt: str, **options: Any) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **options)
    return buf.getvalue()


# --------------------------------------------------------------------------- PDFs


def pdf_output(path: Path, data: bytes, pages: str | None) -> ToolOutput:
    """A ``document`` block of the PDF (or of the pages asked for), after Claude Code's text line.

    Raises:
        ToolError: empty, not a PDF, unreadable, over :data:`MAX_PDF_PAGES_WHOLE` pages without
            ``pages``, or ``pages`` malformed, over :data:`MAX_PDF_PAGES_PER_READ`, or past the end.
    """
    if not data:
        raise ToolError(f"PDF file is empty: {path}")
    if not data.startswith(b"%PDF-"):
        raise ToolError(f"File is not a valid PDF (it does not start with %PDF-): {path}")
    wanted = parse_pages(pages) if pages is not None else None
    reader = _reader(path, data)
    count = len(reader.pages) if reader is not None else None
    if wanted is None:
        if count is not None and count > MAX_PDF_PAGES_WHOLE:
            raise ToolError(
                f"This PDF has {count} pages, which is too many to read at once. Use the pages parameter to read "
                f'specific page ranges (e.g., pages: "1-5"). Maximum {MAX_PDF_PAGES_PER_READ} pages per request.')
        head = f"PDF file read: {path} ({format_size(len(data))})"
        display = f"Read PDF ({format_size(len(data))})"
    else:
        if reader is None:
            raise ToolError(f"Cannot read pages of {path}: the PDF could not be parsed. Read it without pages.")
        first, last = wanted
        if first > count:
            raise ToolError(f'Page {first} is past the end of {path}: it has {count} page{"" if count == 1 else "s"}.')
        last = min(last, count)
        data = _cut_pages(reader, first, last)
        head = f"PDF pages {first}-{last} of {count} read: {path} ({format_size(len(data))})"
        display = f"Read PDF pages {first}-{last}"
    blocks = [{"type": "text", "text": head}, {"type": "document", "source": {
        "type": "base64", "media_type": "application/pdf", "data": base64.b64encode(data).decode("ascii")}}]
    return ToolOutput(content=head, blocks=blocks, display=display)


def parse_pages(pages: str) -> tuple[int, int]:
    """``"3"`` → (3, 3), ``"1-5"`` → (1, 5).

    Raises:
        ToolError: not of that form, starting at 0, reversed, or over :data:`MAX_PDF_PAGES_PER_READ` pages.
    """
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", pages)
    first, last = (int(m.group(1)), int(m.group(2) or m.group(1))) if m else (0, 0)
    if not m or first < 1 or last < first:
        raise ToolError(f'Invalid pages parameter: "{pages}". Use formats like "1-5", "3", or "10-20". '
                        "Pages are 1-indexed.")
    if last - first + 1 > MAX_PDF_PAGES_PER_READ:
        raise ToolError(f'Page range "{pages}" exceeds maximum of {MAX_PDF_PAGES_PER_READ} pages per request. '
                        "Please use a smaller range.")
    return first, last


def _reader(path: Path, data: bytes) -> Any:
    """A pypdf reader of ``data``; None when pypdf cannot parse it (the API may still read it whole)."""
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        len(reader.pages)
        return reader
    except Exception:  # pypdf raises many kinds for a damaged file
        return None


def _cut_pages(reader: Any, first: int, last: int) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for i in range(first - 1, last):
        writer.add_page(reader.pages[i])
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()

