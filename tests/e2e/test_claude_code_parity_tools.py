"""Tool results against Claude Code's own: the texts the model gets, the lines a program reads.

Both CLIs run one scripted conversation each (Read, Edit, Write; Bash; Glob and Grep; denied calls) against the
fake Messages API (tests/e2e/test_claude_code_parity.py runs them); what must agree: each tool_result text in the
next Messages API request, each user line's structured ``tool_use_result``, the ``system/permission_denied``
lines, ``stop_reason`` null on assistant lines, and the keys of the init and result lines and of ``usage``."""

from __future__ import annotations

import json
import re

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.test_claude_code_parity import CLAUDE, MODEL, run_both

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not CLAUDE.exists(), reason="no bundled Claude Code CLI")]

ARGS = ["-p", "go", "--output-format", "stream-json", "--verbose", "--model", MODEL]
BYPASS = ["--permission-mode", "bypassPermissions"]

#: Keys Claude Code's init line has and Mainsail's has not: what Mainsail cannot say truly (docs/cli.md).
INIT_NOT_SENT = {"served_by_anthropic", "memory_paths", "messaging_socket_path", "fast_mode_disabled_reason"}
#: Keys Claude Code's result line has and Mainsail's has not: timings it does not measure, sub-agent counters.
RESULT_NOT_SENT = {"fast_mode_disabled_reason", "subagent_stats", "ttft_ms", "ttft_stream_ms", "time_to_request_ms",
                   "first_content_frame_ms", "result_index", "model_usage_since_last_result"}


def scripted(steps: list[tuple[str, dict]]):
    """A conversation calling ``steps`` (tool, input) one a reply; ``{ws}`` in an input is the CLI's workspace."""

    def turn(body: dict) -> Turn:
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if n >= len(steps):
            return Turn(text="Done.")
        ws = re.search(r"(/[^\s\"'\\]*/(?:ours|theirs))\b", json.dumps(body)).group(1)
        name, raw = steps[n]
        return Turn(text=f"Step {n}.", tool_uses=[ToolUse(name=name, id=f"toolu_{n:02d}",
                                                           input=json.loads(json.dumps(raw).replace("{ws}", ws)))])

    return turn


def model_got(requests: list[dict], ws: str) -> list[tuple[str, str, bool]]:
    """(tool_use_id, text, is_error) of each tool result in the last request; Claude Code's reminders appended to a
    result (token budgets, task hints) and trailing white space cut, the workspace named ``WS``."""
    out = []
    for m in requests[-1]["messages"]:
        for b in m["content"] if isinstance(m["content"], list) else []:
            if b["type"] == "tool_result":
                text = b["content"] if isinstance(b["content"], str) else json.dumps(b["content"])
                text = text.split("\n\n<system-reminder>\n")[0].rstrip().replace(ws, "WS")
                out.append((b["tool_use_id"], text, bool(b.get("is_error"))))
    return out


def tool_use_results(lines: list[dict], ws: str) -> dict[str, object]:
    """Each tool result's ``tool_use_result``, by tool_use id, the workspace named ``WS``."""
    return {line["message"]["content"][0]["tool_use_id"]: json.loads(json.dumps(line["tool_use_result"]).replace(ws, "WS"))
            for line in lines if line["type"] == "user"}


def both(cluster, tmp_path, steps, args, ws_files=None):
    seen: dict = {}
    a, b = run_both(cluster, tmp_path, scripted(steps), args, home_for_ours=True, ws_files=ws_files, seen=seen)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    return (a, b, model_got(seen["ours"], ours), model_got(seen["theirs"], theirs),
            tool_use_results(a, ours), tool_use_results(b, theirs))


FILES = [
    ("Read", {"file_path": "{ws}/a.txt"}),
    ("Read", {"file_path": "{ws}/a.txt", "offset": 2, "limit": 1}),
    ("Edit", {"file_path": "{ws}/a.txt", "old_string": "beta", "new_string": "BETA"}),
    ("Edit", {"file_path": "{ws}/a.txt", "old_string": "x", "new_string": "y", "replace_all": True}),
    ("Edit", {"file_path": "{ws}/a.txt", "old_string": "nope", "new_string": "y"}),
    ("Write", {"file_path": "{ws}/new.txt", "content": "hello\nworld\n"}),
    ("Write", {"file_path": "{ws}/a.txt", "content": "one\ntwo"}),
    ("Read", {"file_path": "{ws}/empty.txt"}),
    ("Read", {"file_path": "{ws}/a.txt", "offset": 10}),
    ("Read", {"file_path": "{ws}/missing.txt"}),
]


def test_read_edit_and_write_results_match_claude_codes(cluster, tmp_path):
    a, b, got_ours, got_theirs, tur_ours, tur_theirs = both(
        cluster, tmp_path, FILES, ARGS + BYPASS, ws_files={"a.txt": "alpha\nbeta\nxx gamma x\n", "empty.txt": ""})
    assert got_ours == got_theirs
    assert got_ours[0][1] == "1\talpha\n2\tbeta\n3\txx gamma x\n4"  # (Claude Code's "4\t", its tab cut with the rest)
    assert tur_ours == tur_theirs
    assert tur_ours["toolu_00"] == {"type": "text", "file": {"filePath": "WS/a.txt", "content": "alpha\nbeta\nxx gamma x\n",
                                                             "numLines": 4, "startLine": 1, "totalLines": 4}}
    # The result lines' tool_result texts are the model's, before Claude Code's reminders.
    texts = [[line["message"]["content"][0]["content"].replace(str(tmp_path / side), "WS") for line in out
              if line["type"] == "user"] for out, side in ((a, "ours"), (b, "theirs"))]
    assert texts[0] == texts[1] and texts[0][0] == "1\talpha\n2\tbeta\n3\txx gamma x\n4\t"


def test_bash_results_and_the_missing_search_tools_match_claude_codes(cluster, tmp_path):
    """Claude Code 2.1.332 offers no Glob and no Grep in print mode (its Bash searches); Mainsail keeps both: their
    texts are Mainsail's own (docs/tools.md)."""
    steps = [("Bash", {"command": "echo hi; echo err >&2", "description": "Say hi"}), ("Bash", {"command": "exit 3"}),
             ("Bash", {"command": "true"}), ("Glob", {"pattern": "*.txt"}), ("Grep", {"pattern": "hello"})]
    a, b, got_ours, got_theirs, tur_ours, tur_theirs = both(cluster, tmp_path, steps, ARGS + BYPASS,
                                                            ws_files={"h.txt": "hello\n"})
    assert got_ours[:3] == got_theirs[:3] == [("toolu_00", "hi\nerr", False), ("toolu_01", "Exit code 3", True),
                                              ("toolu_02", "(Bash completed with no output)", False)]
    assert [tur_ours[f"toolu_0{i}"] for i in range(3)] == [tur_theirs[f"toolu_0{i}"] for i in range(3)]
    assert tur_ours["toolu_00"] == {"stdout": "hi\nerr", "stderr": "", "interrupted": False, "isImage": False,
                                    "noOutputExpected": False}
    assert "No such tool available: Glob" in got_theirs[3][1] and "No such tool available: Grep" in got_theirs[4][1]
    assert got_ours[3] == ("toolu_03", "WS/h.txt", False) and got_ours[4] == ("toolu_04", "Found 1 file\nWS/h.txt", False)


def test_denied_calls_stream_permission_denied_lines_as_claude_codes(cluster, tmp_path):
    steps = [("Bash", {"command": "touch out.txt"}), ("Write", {"file_path": "{ws}/w.txt", "content": "x"})]
    a, b, got_ours, got_theirs, tur_ours, tur_theirs = both(cluster, tmp_path, steps, ARGS)
    kinds = [[(x["type"], x.get("subtype")) for x in out if x["type"] in ("system", "user")] for out in (a, b)]
    denied = [[x for x in out if x.get("subtype") == "permission_denied"] for out in (a, b)]
    assert [(d["tool_name"], d["tool_use_id"]) for d in denied[0]] == [("Bash", "toolu_00"), ("Write", "toolu_01")]
    assert [set(d) for d in denied[0]] == [set(d) for d in denied[1]]
    assert [(d["tool_name"], d["tool_use_id"]) for d in denied[0]] == [(d["tool_name"], d["tool_use_id"]) for d in denied[1]]
    # each before its call's result, whose text it holds
    assert kinds[0] == kinds[1]
    for mine, (side, got) in zip(denied, (("ours", got_ours), ("theirs", got_theirs))):
        assert [d["message"].replace(str(tmp_path / side), "WS") for d in mine] == [t for _, t, _ in got]
    assert all(e for _, _, e in got_ours) and all(e for _, _, e in got_theirs)
    assert all(isinstance(v, str) and v.startswith("Error: ") for v in [*tur_ours.values(), *tur_theirs.values()])


def test_init_result_and_usage_keys_and_a_null_stop_reason_match_claude_codes(cluster, tmp_path):
    a, b, *_ = both(cluster, tmp_path, [("Bash", {"command": "true"})], ARGS + BYPASS)
    assert set(b[0]) - set(a[0]) == INIT_NOT_SENT, "keys Claude Code's init line has and ours has not"
    assert set(b[-1]) - set(a[-1]) == RESULT_NOT_SENT, "keys Claude Code's result line has and ours has not"
    assert set(a[-1]["usage"]) == set(b[-1]["usage"])
    assert [set(u) for u in a[-1]["modelUsage"].values()] == [set(u) for u in b[-1]["modelUsage"].values()]
    for out in (a, b):
        assert {x["message"]["stop_reason"] for x in out if x["type"] == "assistant"} == {None}
    assert a[-1]["stop_reason"] == b[-1]["stop_reason"] == "end_turn"
