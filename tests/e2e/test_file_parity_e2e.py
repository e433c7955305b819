"""Mainsail's Read, Edit and Write against Claude Code's own (the CLI the Agent SDK bundles), byte for byte.

Both CLIs run one scripted conversation against the local fake Messages API, each in a workspace holding the
same files: a CRLF file, UTF-16 LE and UTF-8 files behind a byte-order mark, a 300 KB file. The edited files
must come out with the same bytes, and the big file's Read must be refused with Claude Code's words. (Where
Mainsail goes further on purpose, a Latin-1 or UTF-16 BE file that Claude Code refuses to edit, is in
test_file_encodings_e2e.py.)"""

from __future__ import annotations

import codecs
import json
import os
import subprocess

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL
from tests.e2e.test_claude_code_parity import CLAUDE, MODEL
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e

FILES = {
    "crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "utf16.txt": codecs.BOM_UTF16_LE + "h\u00e9llo one\r\nw\u00f6rld two\r\n".encode("utf-16-le"),
    "bom.txt": codecs.BOM_UTF8 + "h\u00e9llo one\nw\u00f6rld two\n".encode(),
    "w16.txt": codecs.BOM_UTF16_LE + "abc\r\n".encode("utf-16-le"),
    "mid.txt": (b"y" * 199 + b"\n") * 1500,  # 300,000 bytes
}
CALLS = [
    *(("Read", {"file_path": name}) for name in ("crlf.txt", "utf16.txt", "bom.txt", "w16.txt", "mid.txt")),
    ("Edit", {"file_path": "crlf.txt", "old_string": "two", "new_string": "two\nadded"}),
    ("Edit", {"file_path": "utf16.txt", "old_string": "two", "new_string": "TWO\nadded"}),
    ("Edit", {"file_path": "bom.txt", "old_string": "two", "new_string": "TWO"}),
    ("Write", {"file_path": "w16.txt", "content": "new\nstuff\n"}),
]


def turn(body: dict) -> Turn:
    n = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if n < len(CALLS):
        name, args = CALLS[n]
        return Turn(text=f"step {n}", tool_uses=[ToolUse(name=name, input=args)])
    return Turn(text="Done.")


def results(stdout: str) -> list[str]:
    out = []
    for line in stdout.splitlines():
        obj = json.loads(line) if line.strip() else {}
        if obj.get("type") == "user":
            out += [b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
                    for b in obj["message"]["content"] if b.get("type") == "tool_result"]
    return out


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
def test_edits_and_writes_leave_the_same_bytes_as_claude_codes(cluster, tmp_path):
    ours_ws, theirs_ws, home = tmp_path / "ours", tmp_path / "theirs", tmp_path / "home"
    for d in (ours_ws, theirs_ws, home):
        d.mkdir()
        if d is not home:
            for name, data in FILES.items():
                (d / name).write_bytes(data)
    args = ["-p", "edit them", "--output-format", "stream-json", "--verbose", "--model", MODEL,
            "--permission-mode", "bypassPermissions"]
    with FakeMessagesServer(turn) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        ours = subprocess.run([MAINSAIL, *args], cwd=ours_ws, env=cluster.env, capture_output=True, text=True,
                              timeout=180, stdin=subprocess.DEVNULL)
        env = dict(os.environ, HOME=str(home), ANTHROPIC_BASE_URL=api.url, ANTHROPIC_API_KEY="test-key",
                   IS_SANDBOX="1", DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1")
        try:
            theirs = subprocess.run([str(CLAUDE), *args], cwd=theirs_ws, env=env, capture_output=True, text=True,
                                    timeout=180, stdin=subprocess.DEVNULL)
        except OSError as exc:  # a bundled binary for another platform
            pytest.skip(f"the bundled Claude Code CLI does not run here: {exc}")
    assert ours.returncode == 0, ours.stderr
    assert theirs.returncode == 0, theirs.stderr[-2000:]
    for name in FILES:
        assert (ours_ws / name).read_bytes() == (theirs_ws / name).read_bytes(), name
    assert (ours_ws / "crlf.txt").read_bytes() == b"one\r\ntwo\r\nadded\r\nthree\r\n"
    refusal = ("File content (293KB) exceeds maximum allowed size (256KB). Use offset and limit parameters to read "
               "specific portions of the file, or search for specific content instead of reading the whole file.")
    assert results(ours.stdout)[4] == refusal
    assert results(theirs.stdout)[4].startswith(refusal)
