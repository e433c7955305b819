"""A text file's encoding and line endings: the one place Read, Edit, MultiEdit and Write decode and encode.

An edit must give back every byte it did not change, so decoding is lossless and writing uses the
same encoding:

1. A byte-order mark decides first: UTF-8 (``EF BB BF``), UTF-32 LE/BE, UTF-16 LE/BE. The mark is
   kept on write.
2. No mark and a NUL byte in the first 8 KB: binary (or UTF-16/32 without a mark); refused.
3. Valid UTF-8: UTF-8.
4. Otherwise a legacy 8-bit encoding, shown and written as Windows-1252 (a superset of Latin-1's
   printable characters) extended as the WHATWG Encoding Standard does, so the five bytes Windows-1252
   leaves undefined map to U+0081, U+008D, U+008F, U+0090, U+009D: all 256 bytes decode, and encode back
   to themselves. A Shift-JIS or GBK file shows as mojibake but still round-trips; a character the
   encoding cannot hold is refused on write, naming it.

Claude Code 2.1.332 reads such files with U+FFFD in place of the bytes and refuses to Edit or Write them
(and refuses UTF-16 BE); Mainsail edits them keeping their bytes (issue 26: a Latin-1 file edited at one
line had every non-ASCII byte replaced).

Line endings: :func:`dominant_newline` is CRLF when most line ends are CRLF. Edit writes the lines it
adds with it; the lines it does not touch keep theirs. Write writes the content as given, as Claude Code.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

from workflows.exceptions import ToolError
from workflows.tools.base import ToolContext
from workflows.tools.files import read_regular, write_atomic

BINARY_SNIFF_BYTES = 8192

_BOMS: tuple[tuple[bytes, str, str], ...] = (  # UTF-32 LE before UTF-16 LE: its mark starts with FF FE
    (codecs.BOM_UTF8, "utf-8", "UTF-8 with a byte-order mark"),
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32 BE"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16 BE"),
)

LEGACY = "windows-1252"
_LEGACY_TABLE = "".join(
    bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(256)
)  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: undefined in cp1252, U+0081... in WHATWG's windows-1252
_LEGACY_ENCODING_MAP = codecs.charmap_build(_LEGACY_TABLE)

LEGACY_NOTE = (
    "[This file is not valid UTF-8: it is shown as Windows-1252/Latin-1, one character a byte. Edit and "
    "Write keep that encoding and every byte they do not change; a character it cannot hold is refused.]"
)


@dataclass(frozen=True)
class Encoding:
    """How a file's bytes become text: a codec, and the byte-order mark in front (kept on write)."""

    codec: str  # a Python codec name, or LEGACY
    bom: bytes = b""
    label: str = "UTF-8"

    @property
    def wide(self) -> bool:
        """UTF-16/32: lines cannot be found by looking for the byte ``\\n``."""
        return self.codec.startswith(("utf-16", "utf-32"))

    def decode(self, data: bytes) -> str:
        if self.codec == LEGACY:
            return codecs.charmap_decode(data, "strict", _LEGACY_TABLE)[0]
        return data.decode(self.codec)

    def encode(self, text: str, path: Path | str) -> bytes:
        """``text`` in this encoding, behind the mark.

        Raises:
            ToolError: ``text`` holds a character this encoding cannot hold (nothing is written then).
        """
        try:
            if self.codec == LEGACY:
                body = codecs.charmap_encode(text, "strict", _LEGACY_ENCODING_MAP)[0]
            else:
                body = text.encode(self.codec)
        except UnicodeEncodeError as exc:
            char = exc.object[exc.start]
            if 0xD800 <= ord(char) <= 0xDFFF:
                raise ToolError(
                    f"Cannot write {path}: the content holds {char!r} at character {exc.start}, which is not "
                    "valid Unicode text. Remove it."
                ) from None
            raise ToolError(
                f"Cannot write {path}: it is {self.label} text, and {char!r} (U+{ord(char):04X}) at character "
                f"{exc.start} has no byte in that encoding, so nothing was written. Write the character another "
                "way (an escape the file's language understands), or ask the user whether to convert the file "
                "to UTF-8 first (iconv). To replace the whole file with new UTF-8 text anyway, delete it first, "
                "then Write it."
            ) from None
        return self.bom + body


UTF8 = Encoding("utf-8")
LEGACY_ENCODING = Encoding(LEGACY, label="Windows-1252/Latin-1")


def bom_encoding(head: bytes) -> Encoding | None:
    """The encoding a byte-order mark at the start of ``head`` names, or None."""
    for bom, codec, label in _BOMS:
        if head.startswith(bom):
            return Encoding(codec, bom, label)
    return None


def has_nul(head: bytes) -> bool:
    """A NUL byte in the first bytes of a file marks it as binary (as git and grep decide)."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def binary_error(path: Path | str, action: str = "read") -> ToolError:
    """A file with NUL bytes and no byte-order mark: what Read and Edit answer."""
    return ToolError(
        f"This tool cannot {action} binary files: {path} has NUL bytes in its first 8 KB (binary data, or "
        "UTF-16/UTF-32 text without a byte-order mark). Use a shell command or script that can read the "
        "format, or ask the user whether to convert it to UTF-8."
    )


def detect(data: bytes, path: Path | str, action: str = "read") -> Encoding:
    """The encoding of a whole file's ``data`` (see the module docstring for the order).

    Raises:
        ToolError: binary (NUL bytes without a mark), or UTF-16/32 that does not decode.
    """
    enc = bom_encoding(data[:4])
    if enc is not None:
        if enc.wide:
            try:
                data[len(enc.bom):].decode(enc.codec)
            except UnicodeDecodeError:
                raise ToolError(
                    f"{path} starts with a {enc.label} byte-order mark but is not valid {enc.label} text, "
                    f"so this tool cannot {action} it. Use a shell command that can read the format."
                ) from None
        else:
            return enc if _valid_utf8(data[len(enc.bom):]) else Encoding(LEGACY, enc.bom, LEGACY_ENCODING.label)
        return enc
    if has_nul(data):
        raise binary_error(path, action)
    return UTF8 if _valid_utf8(data) else LEGACY_ENCODING


def _valid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@dataclass(frozen=True)
class TextFile:
    """A file's text (line endings as they are on disk) and how to write it back."""

    text: str
    encoding: Encoding = UTF8

    @property
    def newline(self) -> str:
        return dominant_newline(self.text)


def decode(data: bytes, path: Path | str, action: str = "read") -> TextFile:
    """Decode a whole file's bytes losslessly (:func:`detect`), without its byte-order mark.

    Raises:
        ToolError: as :func:`detect`.
    """
    enc = detect(data, path, action)
    return TextFile(enc.decode(data[len(enc.bom):]), enc)


def encode(text: str, like: TextFile | None, path: Path | str) -> bytes:
    """``text`` in the encoding of ``like`` (UTF-8 for a new file).

    Raises:
        ToolError: a character the encoding cannot hold.
    """
    return (like.encoding if like is not None else UTF8).encode(text, path)


def dominant_newline(text: str) -> str:
    """``"\\r\\n"`` when most line ends of ``text`` are CRLF, else ``"\\n"``."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf * 2 > text.count("\n") else "\n"


def with_newline(text: str, newline: str) -> str:
    """``text`` with every line end (LF or CRLF) written as ``newline``."""
    if newline == "\n":
        return text
    return text.replace("\r\n", "\n").replace("\n", newline)


def read_text(path: Path, ctx: ToolContext, max_bytes: int, action: str = "edit") -> TextFile:
    """The whole of regular file ``path``, decoded (:func:`decode`).

    Raises:
        ToolError: as :func:`~workflows.tools.files.read_regular` and :func:`detect`.
    """
    data, _ = read_regular(path, ctx, max_bytes, action=action)
    return decode(data, path, action)


def write_text(path: Path, text: str, ctx: ToolContext, like: TextFile | None = None) -> None:
    """Write ``text`` in the encoding of ``like`` (UTF-8 if None), byte for byte (no newline translation),
    and record the write as a read.

    Raises:
        ToolError: a character the encoding cannot hold (nothing is touched then), or the write failed
            (the old file is left as it was).
    """
    data = encode(text, like, path)
    ctx.files_read.set(str(path), write_atomic(path, data, ctx))
