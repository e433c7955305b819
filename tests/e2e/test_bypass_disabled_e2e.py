"""``permissions.disableBypassPermissionsMode`` through the installed ``mainsail``, real workers and a real
``mainsail serve`` on a private Redis: print mode asking for bypass runs in default mode and says why (as
Claude Code does), an Agent SDK client cannot switch to bypass, and the team server refuses bypass to a
token made without ``--allow-bypass`` with a 403 the CLI prints in one line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.e2e.test_remote_cli import Server
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e

DISABLE = '{"permissions": {"disableBypassPermissionsMode": "disable"}}'
WARNING = "Warning: Bypass permissions mode was disabled by settings (permissions.disableBypassPermissionsMode in {}): "


def disabled_home(cluster, tmp_path: Path) -> Path:
    """A HOME whose ~/.claude/settings.json disables bypass, for the CLI and the workers."""
    path = tmp_path / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(DISABLE)
    cluster.env["HOME"] = str(tmp_path / "home")
    return path


def touch_then_done(body: dict) -> Turn:
    if len(body["messages"]) == 1:
        return Turn(text="Running it.", tool_uses=[ToolUse(name="Bash", input={"command": "touch out.txt"})])
    return Turn(text="Done.")


@pytest.mark.parametrize("args", [
    ["-p", "run it", "--permission-mode", "bypassPermissions", "--output-format", "json"],
    ["-p", "run it", "--dangerously-skip-permissions", "--output-format", "json"],
    ["run", "-p", "--permission-mode", "bypassPermissions", "--output-format", "json", "run it"],
], ids=["claude-style", "dangerously-skip", "mainsail-run"])
def test_print_mode_asking_for_bypass_runs_in_default_mode_and_says_why(cluster, workspace, tmp_path, args):
    settings = disabled_home(cluster, tmp_path)
    with FakeMessagesServer(touch_then_done) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        out = cluster.mainsail(*args, cwd=workspace)
    assert out.returncode == 0, out.stderr
    assert WARNING.format(settings) + "the session runs in default mode." in out.stderr
    assert "Traceback" not in out.stderr
    result = json.loads(out.stdout)
    assert [d["tool_name"] for d in result["permission_denials"]] == ["Bash"]
    assert not (workspace / "out.txt").exists()
    rec = cluster.store.get_session(cluster.session_id())
    assert rec.permission_mode.value == "default" and rec.bypass_disabled_by == [str(settings)]


def test_resuming_a_session_with_bypass_after_it_was_disabled_falls_back(cluster, workspace, tmp_path):
    with FakeMessagesServer(Script(turns=[Turn(text="One."), Turn(text="Two.")])) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        first = cluster.mainsail("-p", "hi", "--permission-mode", "bypassPermissions", cwd=workspace)
        assert first.returncode == 0, first.stderr
        sid = cluster.session_id()
        assert cluster.store.get_session(sid).permission_mode.value == "bypassPermissions"
        settings = workspace / ".claude" / "settings.local.json"
        settings.parent.mkdir()
        settings.write_text(DISABLE)
        again = cluster.mainsail("-p", "again", "--continue", "--permission-mode", "bypassPermissions", cwd=workspace)
    assert again.returncode == 0, again.stderr
    assert WARNING.format(settings) + f"session {sid[:8]} runs in default mode." in again.stderr
    assert cluster.store.get_session(sid).permission_mode.value == "default"


def test_an_sdk_client_cannot_switch_to_bypass_while_disabled(cluster, workspace, tmp_path):
    sdk = pytest.importorskip("claude_agent_sdk")
    from tests.e2e.conftest import MAINSAIL

    settings = disabled_home(cluster, tmp_path)
    with FakeMessagesServer(touch_then_done) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        opts = sdk.ClaudeAgentOptions(cli_path=MAINSAIL, cwd=str(workspace), env=dict(cluster.env),
                                      permission_mode="acceptEdits")

        async def go():
            async with sdk.ClaudeSDKClient(opts) as client:
                with pytest.raises(Exception) as info:
                    await client.set_permission_mode("bypassPermissions")
                await client.set_permission_mode("plan")
                return str(info.value)

        refused = asyncio.run(asyncio.wait_for(go(), 90))
    assert refused.startswith("Cannot set permission mode to bypassPermissions because it is disabled by settings "
                              f"or configuration (permissions.disableBypassPermissionsMode in {settings})")
    assert cluster.store.get_session(cluster.session_id()).permission_mode.value == "plan"


def test_the_server_refuses_bypass_to_a_token_without_the_scope(cluster, workspace, tmp_path):
    server = Server(cluster, tmp_path)  # its token "teammate" is made as tokens are by default: no bypass
    admin = server.create_token("admin", "--allow-bypass")
    server.start()
    with FakeMessagesServer(Script(turns=[Turn(text="Done.")] * 4)) as api:
        cluster.env["ANTHROPIC_BASE_URL"] = api.url
        cluster.start_worker()
        out = server.mainsail("submit", "--cwd", str(workspace), "--permission-mode", "bypassPermissions", "go")
        assert out.returncode == 1 and out.stdout == "" and "Traceback" not in out.stderr
        assert "Token 'teammate' may not start a session in bypassPermissions mode (asked for by the request's " \
               "permission_mode)" in out.stderr
        assert "`mainsail token update teammate --allow-bypass`" in out.stderr and len(out.stderr.splitlines()) == 1
        raw = httpx.post(f"{server.url}/api/sessions", headers={"Authorization": f"Bearer {server.token}"},
                         json={"workspace": str(workspace), "permission_mode": "bypassPermissions"})
        assert raw.status_code == 403 and "Token 'teammate'" in raw.json()["detail"]
        assert cluster.store.session_ids() == []

        ok = server.mainsail("submit", "--cwd", str(workspace), "--permission-mode", "bypassPermissions", "go",
                             token=admin)
        assert ok.returncode == 0, ok.stderr
        sid = ok.stdout.strip()
        assert cluster.store.get_session(sid).permission_mode.value == "bypassPermissions"
        sent = server.mainsail("send", sid[:8], "and more")
        assert sent.returncode == 1
        assert f"may not send to session {sid[:8]} (it runs in bypassPermissions mode)" in sent.stderr
        scheduled = server.mainsail("schedule", "add", "0 3 * * *", "--cwd", str(workspace), "--permission-mode",
                                    "bypassPermissions", "nightly")
        assert scheduled.returncode == 1 and "Token 'teammate' may not start a session" in scheduled.stderr

        listed = cluster.mainsail("token", "list", cwd=tmp_path)
        assert [ln.split()[2] for ln in listed.stdout.splitlines()[1:]] == ["no", "yes"]
        assert cluster.mainsail("token", "update", "teammate", "--allow-bypass", cwd=tmp_path).returncode == 0
        again = server.mainsail("submit", "--cwd", str(workspace), "--permission-mode", "bypassPermissions", "go")
        assert again.returncode == 0, again.stderr

        # The workspace's own settings still apply to a token that may bypass: next mode, with a warning.
        settings = workspace / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text(DISABLE)
        fell = server.mainsail("submit", "--cwd", str(workspace), "--permission-mode", "bypassPermissions", "go")
        assert fell.returncode == 0, fell.stderr
        assert WARNING.format(settings) + "the session runs in default mode." in fell.stderr
        assert cluster.store.get_session(fell.stdout.strip()).permission_mode.value == "default"
