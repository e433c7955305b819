"""The Agent SDK's settings options, with the real SDK driving the installed ``mainsail`` against the fake
Messages API (issue 28, item 4): ``setting_sources``, ``disallowed_tools``, ``env``, ``updated_permissions``
and ``add_dirs``. Each oracle is what Claude Code 2.1.332 does for the same program (measured with its bundled
CLI): the request the fake API received, the file written, what a command printed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from demo.scripted import ToolUse, Turn
from tests.e2e.conftest import wait_for
from tests.e2e.test_agent_sdk import bash_turn, collect, options, serving
from tests.fakeapi import FakeMessagesServer

sdk = pytest.importorskip("claude_agent_sdk")
from claude_agent_sdk import ClaudeSDKClient, PermissionResultAllow, ResultMessage  # noqa: E402
from claude_agent_sdk.types import PermissionRuleValue, PermissionUpdate  # noqa: E402

pytestmark = pytest.mark.e2e


@pytest.fixture
def cluster(shared_cluster):
    """The module's one worker, shared by its tests (tests/e2e/shared_worker.py)."""
    return shared_cluster

MEMOS = {"CLAUDE.md": "PROJECT-MEMO", "CLAUDE.local.md": "LOCAL-MEMO"}


def tool_names(request: dict) -> list[str]:
    return [t["name"] for t in request["tools"]]


def with_home(cluster, tmp_path: Path, files: dict[str, str]) -> Path:
    home = tmp_path / "home"
    for rel, text in files.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    cluster.env["HOME"] = str(home)
    return home


@pytest.mark.parametrize("sources, sent", [(None, {"USER-MEMO", "PROJECT-MEMO", "LOCAL-MEMO"}), ([], set()),
                                           (["project"], {"PROJECT-MEMO"}), (["user"], {"USER-MEMO"}),
                                           (["local"], {"LOCAL-MEMO"})])
def test_setting_sources_choose_the_claude_md_files_sent(cluster, workspace, tmp_path, sources, sent):
    """Claude Code sends the memory files of the chosen sources only: [] sends none."""
    with_home(cluster, tmp_path, {".claude/CLAUDE.md": "USER-MEMO"})
    for rel, text in MEMOS.items():
        (workspace / rel).write_text(text)
    with serving(cluster, bash_turn("true")) as api:
        collect("run it", options(cluster, workspace, permission_mode="bypassPermissions", setting_sources=sources))
    request = json.dumps(api.requests[0])
    assert {m for m in ("USER-MEMO", "PROJECT-MEMO", "LOCAL-MEMO") if m in request} == sent


def test_a_project_deny_rule_removes_the_tool_under_project_sources(cluster, workspace):
    """``"deny": ["Bash"]`` in .claude/settings.json, read with setting_sources=["project"]: Claude Code offers
    no Bash at all (not a call denied when made); with [] the file is not read and Bash is offered."""
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash"]}}))
    with serving(cluster, bash_turn("true")) as api:
        collect("run it", options(cluster, workspace, permission_mode="bypassPermissions", setting_sources=[]))
        assert "Bash" in tool_names(api.requests[-1])
        api.reset()
        collect("run it", options(cluster, workspace, permission_mode="bypassPermissions",
                                  setting_sources=["project"]))
        assert "Bash" not in tool_names(api.requests[0]) and "Read" in tool_names(api.requests[0])


def test_disallowed_tools_removes_the_tool_from_the_offer(cluster, workspace):
    """disallowed_tools=["Bash"]: not offered (nor listed in system/init); Bash(rm:*) keeps Bash offered."""
    with serving(cluster, bash_turn("true")) as api:
        msgs = collect("run it", options(cluster, workspace, permission_mode="bypassPermissions",
                                         disallowed_tools=["Bash"]))
        assert "Bash" not in tool_names(api.requests[0]) and "Write" in tool_names(api.requests[0])
        assert "Bash" not in msgs[0].data["tools"]
        api.reset()
        collect("run it", options(cluster, workspace, permission_mode="bypassPermissions",
                                  disallowed_tools=["Bash(rm:*)"]))
        assert "Bash" in tool_names(api.requests[0])


def test_env_reaches_the_sessions_commands_and_model_calls(private_cluster, workspace, tmp_path):
    """ClaudeAgentOptions.env is Claude Code's process environment: its Bash sees the variables and its model
    calls go to ANTHROPIC_BASE_URL with ANTHROPIC_CUSTOM_HEADERS. Mainsail's worker (whose own endpoint leads
    nowhere here, and whose MY_VAR differs) applies the session's; a settings file's env never moves the calls,
    and the API key is not stored with the session."""
    cluster = private_cluster  # a worker of its own, with an environment of its own
    with_home(cluster, tmp_path, {".claude/settings.json": json.dumps(
        {"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "FROM_SETTINGS": "s"}})})
    with FakeMessagesServer(bash_turn('echo "$MY_VAR $FROM_SETTINGS $SHOULD_NOT_TOKEN" > env.txt')) as api:
        cluster.start_worker(env={**cluster.env, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "MY_VAR": "worker"})
        opts = options(cluster, workspace, permission_mode="bypassPermissions")
        opts.env.update({"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_CUSTOM_HEADERS": "X-Probe: from-the-sdk",
                         "MY_VAR": "from-the-client", "SHOULD_NOT_TOKEN": "hidden"})
        result = collect("run it", opts)[-1]
        assert result.subtype == "success" and not result.is_error, result
        # Every call of the session (its turns, and its title, asked for after the first turn) went there.
        wait_for(lambda: api.fork_requests("title"), 60, what="the session's title call")
        assert api.request_headers and all(h["headers"].get("x-probe") == "from-the-sdk" for h in api.request_headers)
    assert (workspace / "env.txt").read_text() == "from-the-client s \n"  # (the token-named one scrubbed)
    (sid,) = cluster.store.session_ids()
    stored = cluster.store.get_session(sid).model_dump_json()
    assert "test-key" not in stored and "hidden" not in stored


def two_calls(first: dict, second: dict, names=("Bash", "Bash")):
    """Two tool calls, one a turn, then an answer."""

    def turn(body: dict) -> Turn:
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if n < 2:
            return Turn(text="Working.", tool_uses=[ToolUse(name=names[n], input=(first, second)[n])])
        return Turn(text="done")

    return turn


def asking_client(cluster, workspace, turn, updates) -> tuple[list, list]:
    """A ClaudeSDKClient whose can_use_tool allows with ``updates``; the calls it was asked about and the
    messages."""
    seen = []

    async def can_use(name, tool_input, ctx):
        seen.append((name, tool_input, ctx.suggestions))
        return PermissionResultAllow(updated_permissions=updates)

    with serving(cluster, turn):

        async def go():
            async with ClaudeSDKClient(options(cluster, workspace, can_use_tool=can_use)) as client:
                await client.query("run it")
                return [m async for m in client.receive_response()]

        msgs = asyncio.run(asyncio.wait_for(go(), 90))
    return seen, msgs


def test_updated_permissions_for_local_settings_are_kept_and_written(cluster, workspace, tmp_path):
    """Allowing with an addRules update for localSettings: Claude Code adds the rule to the session (the next
    matching call is not asked) and to .claude/settings.local.json. Suggestions name their destination."""
    with_home(cluster, tmp_path, {})
    rule = PermissionUpdate(type="addRules", rules=[PermissionRuleValue(tool_name="Bash", rule_content="touch:*")],
                            behavior="allow", destination="localSettings")
    seen, msgs = asking_client(cluster, workspace, two_calls({"command": "touch a.txt"}, {"command": "touch b.txt"}),
                               [rule])
    assert [s[1]["command"] for s in seen] == ["touch a.txt"], "the second call was asked again"
    assert seen[0][2] and seen[0][2][0].destination == "localSettings"
    assert (workspace / "a.txt").exists() and (workspace / "b.txt").exists()
    written = json.loads((workspace / ".claude" / "settings.local.json").read_text())
    assert written == {"permissions": {"allow": ["Bash(touch:*)"]}}
    assert isinstance(msgs[-1], ResultMessage) and msgs[-1].permission_denials == []


def test_a_set_mode_update_changes_the_sessions_mode(cluster, workspace, tmp_path):
    """setMode acceptEdits for the session: the Write that follows is not asked, and no file is written."""
    with_home(cluster, tmp_path, {})
    mode = PermissionUpdate(type="setMode", mode="acceptEdits", destination="session")
    seen, msgs = asking_client(cluster, workspace, two_calls(
        {"command": "touch a.txt"}, {"file_path": str(workspace / "w.txt"), "content": "w"}, ("Bash", "Write")), [mode])
    assert [s[0] for s in seen] == ["Bash"] and (workspace / "w.txt").read_text() == "w"
    assert not (workspace / ".claude").exists()


def read_turn(path: str):
    def turn(body: dict) -> Turn:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and last and last[-1].get("type") == "tool_result":
            return Turn(text="done")
        return Turn(text="Reading.", tool_uses=[ToolUse(name="Read", input={"file_path": path})])

    return turn


def test_a_path_outside_the_added_dirs_is_a_permission_denial(cluster, workspace, tmp_path):
    """Claude Code's print mode: a Read outside the workspace and its add_dirs asks, so it is denied, listed in
    permission_denials, and the model reads Claude Code's words; the same Read under add_dirs runs."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("OUTSIDE-NOTES")
    target = str(outside / "notes.txt")
    with serving(cluster, read_turn(target)) as api:
        denied = collect("read it", options(cluster, workspace))[-1]
        assert [d["tool_name"] for d in denied.permission_denials] == ["Read"]
        result = api.requests[-1]["messages"][-1]["content"][0]
        assert result["is_error"] and result["content"] == (
            f"Claude requested permissions to read from {outside.resolve() / 'notes.txt'}, but you haven't granted "
            "it yet.")
        api.reset()
        allowed = collect("read it", options(cluster, workspace, add_dirs=[str(outside)]))[-1]
        assert allowed.permission_denials == [] and "OUTSIDE-NOTES" in json.dumps(api.requests[-1]["messages"][-1])
