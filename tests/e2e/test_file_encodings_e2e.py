"""Issue 26, end to end: the installed CLI, a real worker, real Redis and the anthropic SDK against the fake
Messages API. A Latin-1 CRLF file edited at one line keeps every other byte; a big file's Read is refused
with a note instead of becoming a huge request; an image goes to the model as an image block."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from demo.scripted import Script, ToolUse, Turn
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e

LATIN1_CRLF = b"# caf\xe9 config\r\nname = na\xefve\r\ncolour = \xfc\xf6\xe4\r\nend\r\n"


def tool_results(body: dict) -> list[dict]:
    """The tool results of ``body`` in the order of their calls (results are committed as they finish)."""
    calls = [b["id"] for m in body["messages"] if m["role"] == "assistant" and isinstance(m["content"], list)
             for b in m["content"] if b.get("type") == "tool_use"]
    results = {b["tool_use_id"]: b for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"}
    return [results[c] for c in calls]


def test_an_edit_of_a_latin1_crlf_file_keeps_every_other_byte_and_big_reads_stay_small(cluster, workspace):
    (workspace / "legacy.conf").write_bytes(LATIN1_CRLF)
    (workspace / "huge.log").write_bytes(b"a log line that repeats\n" * 180_000)  # 4.3 MB
    im = io.BytesIO()
    Image.new("RGB", (3000, 1500), (0, 90, 200)).save(im, "PNG")
    (workspace / "shot.png").write_bytes(im.getvalue())
    script = Script(turns=[
        Turn(text="Reading.", tool_uses=[ToolUse(name="Read", input={"file_path": "legacy.conf"}),
                                         ToolUse(name="Read", input={"file_path": "huge.log"}),
                                         ToolUse(name="Read", input={"file_path": "shot.png"})]),
        Turn(text="Editing.", tool_uses=[ToolUse(name="Edit", input={
            "file_path": "legacy.conf", "old_string": "name = naïve", "new_string": "name = naïve\ntitle = été"})]),
        Turn(text="Done."),
    ])
    with FakeMessagesServer(script) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        out = cluster.mainsail("-p", "--permission-mode", "bypassPermissions", "fix the config", cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stdout + out.stderr
        assert (workspace / "legacy.conf").read_bytes() == (
            b"# caf\xe9 config\r\nname = na\xefve\r\ntitle = \xe9t\xe9\r\ncolour = \xfc\xf6\xe4\r\nend\r\n")
        second = server.requests[1]
        legacy, huge, shot = tool_results(second)
        assert "café config" in legacy["content"] and "colour = üöä" in legacy["content"]
        assert huge["is_error"] and huge["content"].startswith("File content (4.1MB) exceeds maximum allowed size")
        image, note = shot["content"]
        assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
        assert Image.open(io.BytesIO(base64.b64decode(image["source"]["data"]))).size == (2000, 1000)
        assert "original 3000x1500, displayed at 2000x1000" in note["text"]
        assert len(str(second)) < 200_000  # the 4 MB log never reached the request
        assert "\ufffd" not in str(server.requests[2])
