"""A plugin's MCP servers (issue 28, item 9), as Claude Code 2.1.332 runs them: the installed ``mainsail`` and the
bundled CLI side by side on one fake Messages API, a ``--plugin-dir`` plugin outside the workspace holding a stdio
server (tests/mcp_server.py) in its ``.mcp.json`` with ``${CLAUDE_PLUGIN_ROOT}`` in its arguments and environment.
Oracle: the bundled CLI's init ``mcp_servers`` entry and the tool name and result it gave the model."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.test_claude_code_parity import CLAUDE, MODEL, run_both

pytestmark = pytest.mark.e2e

TOOL = "mcp__plugin_myplug_tsrv__whoami"


def make_plugin(root: Path) -> str:
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "myplug", "version": "1.0.0"}))
    shutil.copy(Path(__file__).parent.parent / "mcp_server.py", root / "mcp_server.py")
    server = {"command": sys.executable, "args": ["${CLAUDE_PLUGIN_ROOT}/mcp_server.py"],
              "env": {"MCP_TEST_NAME": "root=${CLAUDE_PLUGIN_ROOT}"}}
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": {"tsrv": server}}))
    return str(root)


def call_whoami(body: dict) -> Turn:
    if sum(1 for m in body["messages"] if m["role"] == "assistant") == 0:
        return Turn(text="Asking.", tool_uses=[ToolUse(name=TOOL, input={})])
    return Turn(text="Done.")


def tool_result(request: dict) -> str:
    for m in request["messages"]:
        for block in m["content"] if isinstance(m["content"], list) else ():
            if block.get("type") == "tool_result":
                content = block["content"]
                return content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
    raise AssertionError(f"no tool_result in {json.dumps(request['messages'])[:1000]}")


@pytest.mark.skipif(not CLAUDE.exists(), reason="the SDK package has no bundled Claude Code CLI")
def test_a_plugins_mcp_server_runs_as_in_claude_code(cluster, tmp_path):
    """Both list ``plugin:myplug:tsrv`` (source plugin, connected) in init, offer ``mcp__plugin_myplug_tsrv__*``,
    run the model's call under an ``--allowedTools mcp__plugin_myplug_tsrv`` rule, and return the server's answer,
    ``${CLAUDE_PLUGIN_ROOT}`` replaced by the plugin's folder."""
    plugin = make_plugin(tmp_path / "plugin")
    seen: dict = {}
    args = ["-p", "who?", "--output-format", "stream-json", "--verbose", "--model", MODEL, "--plugin-dir", plugin,
            "--allowedTools", "mcp__plugin_myplug_tsrv"]
    ours, theirs = run_both(cluster, tmp_path, call_whoami, args, seen=seen)
    entry = {"name": "plugin:myplug:tsrv", "status": "connected", "source": "plugin"}
    assert [s for s in ours[0]["mcp_servers"] if s["name"].startswith("plugin:")] == [entry]
    # (Claude Code prints its init without waiting for its servers: on a busy machine this one is still
    # "pending" there, and its tools are not listed yet; the call below still reaches it.)
    (their_entry,) = [s for s in theirs[0]["mcp_servers"] if s["name"].startswith("plugin:")]
    assert their_entry in (entry, dict(entry, status="pending")), their_entry
    assert TOOL in ours[0]["tools"]
    assert TOOL in theirs[0]["tools"] or their_entry["status"] == "pending"
    for side in ("ours", "theirs"):
        # (Claude Code hands its API key to the servers it starts; Mainsail's worker does not: an existing difference)
        assert tool_result(seen[side][-1]).startswith(f"root={plugin} key="), side
    assert ours[-1]["permission_denials"] == theirs[-1]["permission_denials"] == []
