"""Mainsail's stream-json against Claude Code's own: the helpers other tests share (:func:`run_both`, :func:`shape`),
and the settings that must never grant bypassPermissions.

The Agent SDK package ships Claude Code's CLI (``claude_agent_sdk/_bundled/claude``). Both CLIs run
the same scripted conversation against the local fake Messages API. The field-by-field comparison of
every tool kind, denial, sub-agent, interrupt and structured output is the table in
tests/e2e/test_claude_code_parity_table.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import MAINSAIL
from tests.e2e.parity_runner import claude_env
from tests.fakeapi import FakeMessagesServer

sdk = pytest.importorskip("claude_agent_sdk")
pytestmark = pytest.mark.e2e

CLAUDE = Path(sdk.__file__).parent / "_bundled" / "claude"
MODEL = "claude-sonnet-4-6"

#: Keys the SDK's message parser reads (claude_agent_sdk/_internal/message_parser.py), per line type.
PARSED = {
    "system": {"type", "subtype"},
    "init": {"type", "subtype", "cwd", "session_id", "tools", "model", "permissionMode", "apiKeySource",
             "claude_code_version", "uuid"},
    "assistant": {"type", "message", "parent_tool_use_id", "session_id", "uuid"},
    "assistant.message": {"id", "model", "role", "content", "stop_reason", "usage"},
    "user": {"type", "message", "parent_tool_use_id", "session_id", "uuid", "tool_use_result"},
    "result": {"type", "subtype", "duration_ms", "duration_api_ms", "is_error", "num_turns", "session_id",
               "stop_reason", "total_cost_usd", "usage", "result", "modelUsage", "permission_denials", "uuid"},
}


def turn(body: dict) -> Turn:
    if sum(1 for m in body["messages"] if m["role"] == "assistant") == 0:
        return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": "touch out.txt"})])
    return Turn(text="Done.")


def shape(line: dict) -> tuple:
    """What must agree for one line: its type, subtype, the parsed keys it has, its content block types."""
    kind = line["type"]
    key = "init" if line.get("subtype") == "init" else kind
    keys = frozenset(k for k in PARSED.get(key, {"type"}) if k in line)
    extra: tuple = ()
    if kind in ("assistant", "user"):
        content = line["message"]["content"]
        extra = tuple(b["type"] for b in content) if isinstance(content, list) else ("text",)
        if kind == "assistant":
            extra += (frozenset(k for k in PARSED["assistant.message"] if k in line["message"]),)
    return kind, line.get("subtype"), keys, extra


def lines(stdout: str) -> list[dict]:
    out = [json.loads(ln) for ln in stdout.splitlines() if ln.strip()]
    # Lines only one side has and the SDK ignores: Claude Code's lifecycle notices.
    return [o for o in out if not (o["type"] == "system" and o.get("subtype") not in ("init", "permission_denied"))]


def run_both(cluster, tmp_path, script, args: list[str], home_for_ours: bool = False,
             home_files: dict[str, str] | None = None, ws_files: dict[str, str] | None = None,
             seen: dict | None = None) -> tuple[list, list]:
    """Mainsail and Claude Code on ``args`` against one fake Messages API, each in a workspace of its own; their
    stream-json lines. ``home_for_ours``: Mainsail gets the same HOME as Claude Code, empty but for
    ``home_files`` (path in it: text); ``ws_files`` are written in both workspaces; ``seen`` gets each side's
    Messages API requests (``"ours"``, ``"theirs"``)."""
    with FakeMessagesServer(script) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        ours_ws, theirs_ws, home = tmp_path / "ours", tmp_path / "theirs", tmp_path / "home"
        for d in (ours_ws, theirs_ws, home):
            d.mkdir()
        for base, files in ((home, home_files), (ours_ws, ws_files), (theirs_ws, ws_files)):
            for rel, text in (files or {}).items():
                (base / rel).parent.mkdir(parents=True, exist_ok=True)
                (base / rel).write_text(text)
        if home_for_ours:
            cluster.env["HOME"] = str(home)
        cluster.start_worker()
        ours = subprocess.run([MAINSAIL, *args], cwd=ours_ws, env=cluster.env, capture_output=True, text=True,
                              timeout=120, stdin=subprocess.DEVNULL)
        mine = len(api.requests)
        env = claude_env(home, api.url)
        try:
            theirs = subprocess.run([str(CLAUDE), *args], cwd=theirs_ws, env=env, capture_output=True, text=True,
                                    timeout=120, stdin=subprocess.DEVNULL)
        except OSError as exc:  # a bundled binary for another platform
            pytest.skip(f"the bundled Claude Code CLI does not run here: {exc}")
        if seen is not None:
            seen.update(ours=api.requests[:mine], theirs=api.requests[mine:])
    assert ours.returncode == 0, ours.stderr
    assert theirs.returncode == 0, theirs.stderr[-2000:]
    return lines(ours.stdout), lines(theirs.stdout)


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
@pytest.mark.parametrize("flag", [["--permission-mode", "bypassPermissions"], ["--dangerously-skip-permissions"]])
def test_a_disabled_bypass_falls_back_to_default_mode_as_claude_codes(cluster, tmp_path, flag):
    """permissions.disableBypassPermissionsMode in ~/.claude/settings.json: both CLIs start in default mode (no
    error, exit 0), so print mode refuses the command that would ask."""
    settings = {".claude/settings.json": '{"permissions": {"disableBypassPermissionsMode": "disable"}}'}
    args = ["-p", "run it", "--output-format", "stream-json", "--verbose", "--model", MODEL, *flag]
    a, b = run_both(cluster, tmp_path, turn, args, home_for_ours=True, home_files=settings)
    assert a[0]["permissionMode"] == b[0]["permissionMode"] == "default"
    assert [d["tool_name"] for d in a[-1]["permission_denials"]] == ["Bash"]
    assert [d["tool_name"] for d in b[-1]["permission_denials"]] == ["Bash"]
    assert not (tmp_path / "ours" / "out.txt").exists() and not (tmp_path / "theirs" / "out.txt").exists()


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
@pytest.mark.parametrize("rel", [".claude/settings.json", ".claude/settings.local.json"])
def test_a_projects_default_mode_never_grants_bypass_as_in_claude_code(cluster, tmp_path, rel):
    """A repository's own settings asking for defaultMode bypassPermissions: both CLIs start in default mode
    (exit 0), so print mode refuses the command that would ask."""
    files = {rel: '{"permissions": {"defaultMode": "bypassPermissions"}}'}
    args = ["-p", "run it", "--output-format", "stream-json", "--verbose", "--model", MODEL]
    a, b = run_both(cluster, tmp_path, turn, args, home_for_ours=True, ws_files=files)
    assert a[0]["permissionMode"] == b[0]["permissionMode"] == "default"
    assert [d["tool_name"] for d in a[-1]["permission_denials"]] == ["Bash"]
    assert [d["tool_name"] for d in b[-1]["permission_denials"]] == ["Bash"]
    assert not (tmp_path / "ours" / "out.txt").exists() and not (tmp_path / "theirs" / "out.txt").exists()
