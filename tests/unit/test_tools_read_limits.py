"""Read within Claude Code's limits (2.1.332), and images and PDFs as content blocks.

Issue 26: a 4 MB file became a ~1M-token request. Without ``limit`` a file over 256 KB is refused; a
result over 25,000 tokens is cut (a whole-file read) or refused (a range); images and PDFs go to the
model as ``image`` and ``document`` blocks, and on through the transcript into the next request.
"""

from __future__ import annotations

import base64
import io
import random

import pytest
from PIL import Image
from pypdf import PdfReader, PdfWriter

from workflows.models import Message, ToolResultBlock, UserEntry
from workflows.tools import ToolContext, media, run_tool
from workflows.tools.files import format_size


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def ctx(ws):
    return ToolContext(workspace=ws)


def test_a_file_over_256_kb_without_a_limit_is_refused_with_claude_codes_words(ws, ctx):
    f = ws / "big.log"
    f.write_bytes(b"line of a big log file\n" * 200_000)  # 4.4 MB
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    assert out.is_error
    assert out.content == (
        "File content (4.4MB) exceeds maximum allowed size (256KB). Use offset and limit parameters to read "
        "specific portions of the file, or search for specific content instead of reading the whole file.")
    part = run_tool("Read", {"file_path": str(f), "offset": 100, "limit": 2}, ctx)
    assert not part.is_error and part.content == "100\tline of a big log file\n101\tline of a big log file"
    assert part.result["file"]["totalLines"] == 200001


def test_a_whole_file_read_over_25000_tokens_shows_its_first_lines_and_says_how_to_page_on(ws, ctx):
    f = ws / "wide.txt"
    f.write_text("".join(f"{i:05d} " + "w" * 120 + "\n" for i in range(1, 1801)))  # ~230 KB, ~60,000 tokens
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    assert not out.is_error
    body, _, note = out.content.rpartition("\n\n")
    shown = body.splitlines()
    assert 100 < len(shown) < 1800 and len(out.content) // 4 <= 25_000
    assert note.startswith(f"[Truncated: PARTIAL view \u2014 {f}: showing lines 1-{len(shown)} of 1801 total (")
    assert f"Call Read with offset={len(shown) + 1} limit={len(shown)} for the next page" in note


def test_a_range_over_25000_tokens_is_refused(ws, ctx):
    f = ws / "wide.txt"
    f.write_text("".join("w" * 150 + "\n" for _ in range(1800)))
    out = run_tool("Read", {"file_path": str(f), "offset": 1, "limit": 1800}, ctx)
    assert out.is_error and "exceeds maximum allowed tokens (25000)" in out.content


def png(w: int, h: int, noise: bool = False) -> bytes:
    im = Image.new("RGB", (w, h), (200, 10, 10))
    if noise:
        im = Image.frombytes("RGB", (w, h), random.Random(1).randbytes(w * h * 3))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def test_an_image_is_an_image_block(ws, ctx):
    data = png(40, 30)
    (ws / "shot.png").write_bytes(data)
    out = run_tool("Read", {"file_path": str(ws / "shot.png")}, ctx)
    assert not out.is_error
    assert out.blocks == [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                      "data": base64.b64encode(data).decode()}}]
    assert ctx.files_read.get(str(ws / "shot.png")) is not None


def test_a_large_image_is_scaled_to_2000_pixels_and_the_result_says_so(ws, ctx):
    (ws / "big.png").write_bytes(png(3000, 2000))
    out = run_tool("Read", {"file_path": str(ws / "big.png")}, ctx)
    image, note = out.blocks
    shown = Image.open(io.BytesIO(base64.b64decode(image["source"]["data"])))
    assert shown.size == (2000, 1333)
    assert note["text"] == ("[Image: original 3000x2000, displayed at 2000x1333. Multiply coordinates by 1.50 to "
                            "map to original image.]")


def test_an_image_over_the_byte_target_becomes_a_smaller_jpeg(ws, ctx, monkeypatch):
    monkeypatch.setattr(media, "TARGET_IMAGE_BYTES", 200_000)
    (ws / "noise.png").write_bytes(png(600, 600, noise=True))
    out = run_tool("Read", {"file_path": str(ws / "noise.png")}, ctx)
    image = out.blocks[0]
    assert image["source"]["media_type"] == "image/jpeg"
    assert len(base64.b64decode(image["source"]["data"])) <= 200_000


def test_the_media_type_comes_from_the_bytes_not_the_name(ws, ctx):
    (ws / "really-a-png.jpg").write_bytes(png(4, 4))
    out = run_tool("Read", {"file_path": str(ws / "really-a-png.jpg")}, ctx)
    assert out.blocks[0]["source"]["media_type"] == "image/png"
    (ws / "fake.png").write_text("not an image")
    out = run_tool("Read", {"file_path": str(ws / "fake.png")}, ctx)
    assert out.is_error and "is not a PNG, JPEG, GIF or WebP image" in out.content


def pdf(pages: int) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def test_a_pdf_is_a_document_block_after_claude_codes_line(ws, ctx):
    data = pdf(2)
    f = ws / "doc.pdf"
    f.write_bytes(data)
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    text, doc = out.blocks
    assert text == {"type": "text", "text": f"PDF file read: {f} ({format_size(len(data))})"}
    assert doc["source"] == {"type": "base64", "media_type": "application/pdf",
                             "data": base64.b64encode(data).decode()}


def test_a_long_pdf_needs_pages_and_gets_just_those(ws, ctx):
    f = ws / "long.pdf"
    f.write_bytes(pdf(30))
    out = run_tool("Read", {"file_path": str(f)}, ctx)
    assert out.is_error and out.content.startswith("This PDF has 30 pages, which is too many to read at once.")
    out = run_tool("Read", {"file_path": str(f), "pages": "3-5"}, ctx)
    assert not out.is_error
    assert len(PdfReader(io.BytesIO(base64.b64decode(out.blocks[1]["source"]["data"]))).pages) == 3
    for bad, says in (("0-2", "Invalid pages parameter"), ("1-21", "exceeds maximum of 20 pages"),
                      ("31", "past the end")):
        out = run_tool("Read", {"file_path": str(f), "pages": bad}, ctx)
        assert out.is_error and says in out.content, out.content
    out = run_tool("Read", {"file_path": str(ws / "x.txt"), "pages": "1"}, ctx)
    assert out.is_error


def test_an_image_result_is_stored_and_sent_as_blocks():
    """A transcript entry keeps the image block: what the next request (and compaction's text) is built from."""
    data = base64.b64encode(png(4, 4)).decode()
    blocks = [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]
    entry = UserEntry(session_id="s", message=Message(role="user", content=[
        ToolResultBlock(tool_use_id="t1", content=blocks)]), origin="tool_result")
    back = UserEntry.model_validate_json(entry.model_dump_json())
    sent = back.message.to_api()["content"][0]
    assert sent["content"] == blocks
    assert back.message.content[0].text == "[image/png]"  # compaction and the memory fork read this, not base64


def test_compaction_and_the_memory_fork_count_and_render_an_image_by_what_it_is():
    """Compaction's keep-or-summarise count and the memory fork's transcript text do not choke on base64."""
    from workflows.forks.state import render_conversation
    from workflows.model.tokens import estimate_tokens
    from workflows.models import AssistantEntry, AssistantMessage, ToolUseBlock

    data = "A" * 4_000_000
    use = AssistantEntry(session_id="s", message=AssistantMessage(content=[
        ToolUseBlock(id="t1", name="Read", input={"file_path": "/ws/shot.png"})]))
    result = UserEntry(session_id="s", origin="tool_result", message=Message(role="user", content=[
        ToolResultBlock(tool_use_id="t1", content=[
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}])]))
    assert estimate_tokens(result.message.model_dump(mode="json")) < 2_000
    text = render_conversation([use, result])
    assert "Read result: [image/png]" in text and "AAAA" not in text
