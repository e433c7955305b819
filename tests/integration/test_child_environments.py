"""Every process Mainsail starts on a workspace sees none of the worker's secrets (issue 25, item 3).

The worker's environment holds the API key and the Redis URL with its password; a hook, a stdio MCP
server, a custom command's ``!`` line (a Bash call of the session) must not see them, with the sandbox
on, off, unavailable, or the command in ``excludedCommands``. Mainsail's own git reads start no process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from workflows.context.files import system_context
from workflows.hooks.runner import run_command_hook
from workflows.mcp.calls import server_env
from workflows.mcp.pool import McpPool
from workflows.mcp.tools import to_output
from workflows.models import SandboxSettings, SessionRecord
from workflows.models.hooks import CommandHook
from workflows.models.mcp import McpServerConfig
from workflows.permissions import sandbox
from workflows.tools import ToolContext, run_tool

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-worker-secret-1",
    "MAINSAIL_REDIS_URL": "redis://:redis-pass-2@127.0.0.1:6390/0",
    "REDIS_PASSWORD": "redis-pass-2",
    "CELERY_BROKER_URL": "redis://:redis-pass-2@127.0.0.1:6390/1",
}
SERVER = str(Path(__file__).resolve().parents[1] / "mcp_server.py")

SANDBOXES = {
    "off": SandboxSettings(enabled=False),
    "excluded": SandboxSettings(excluded_commands=["env"]),
    "on": SandboxSettings(),
}


@pytest.fixture(autouse=True)
def secrets(monkeypatch):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)


def assert_clean(env: dict[str, str]) -> None:
    leaked = {k for k in SECRETS if k in env} | {k for k, v in env.items() if "redis-pass-2" in v or "sk-ant-" in v}
    assert not leaked, f"secrets reached the child: {sorted(leaked)}"


def parse_env(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def usable(settings: SandboxSettings) -> bool:
    return not settings.enabled or sandbox.sandbox_status().available


@pytest.mark.parametrize("where", list(SANDBOXES))
def test_a_command_hook(tmp_path, where):
    settings = SANDBOXES[where]
    if not usable(settings):
        pytest.skip("no sandbox here")
    rec = SessionRecord(id="s1", model="m", workspace=str(tmp_path), home=str(tmp_path), sandbox=settings)
    run = run_command_hook(CommandHook(command="env"), b"{}", rec, threading.Event())
    assert run.error is None and run.exit_code == 0, run
    env = parse_env(run.stdout)
    assert_clean(env)
    assert env["CLAUDE_PROJECT_DIR"] == str(tmp_path) and env["PWD"] == str(tmp_path)


def test_a_command_hook_where_the_sandbox_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "sandbox_status", lambda refresh=False: sandbox.SandboxStatus(False, "test"))
    rec = SessionRecord(id="s1", model="m", workspace=str(tmp_path), home=str(tmp_path), sandbox=SandboxSettings())
    run = run_command_hook(CommandHook(command="env"), b"{}", rec, threading.Event())
    assert run.exit_code == 0, run
    assert_clean(parse_env(run.stdout))


@pytest.mark.parametrize("where", list(SANDBOXES))
def test_a_bang_line_of_a_custom_command(tmp_path, where):
    """A custom command's ``!`` line runs as a Bash call of the session (workflows/commands/expand.py)."""
    settings = SANDBOXES[where]
    if not usable(settings):
        pytest.skip("no sandbox here")
    ctx = ToolContext(workspace=tmp_path, sandbox=settings, env={"NPM_TOKEN": "the-users-own"})
    out = run_tool("Bash", {"command": "env"}, ctx)
    assert not out.is_error, out.content
    env = parse_env(out.content)
    assert_clean(env)
    assert env["NPM_TOKEN"] == "the-users-own"  # the settings' env is the user's choice


def test_a_stdio_mcp_server(tmp_path):
    pytest.importorskip("mcp")
    config = McpServerConfig(name="t", command=sys.executable, args=[SERVER], env={"MCP_TEST_NAME": "x"})
    rec = SessionRecord(id="s1", model="m", workspace=str(tmp_path), home=str(tmp_path), env={"FROM_SETTINGS": "1"})
    pool = McpPool(idle_seconds=600)
    try:
        conn = pool.connection(rec.id, config, cwd=rec.workspace, env=server_env(rec, config), timeout=30)
        seen = json.loads(to_output(conn.call_tool("environ", {}, 30, None), "mcp__t__environ").content)
    finally:
        pool.close_all()
    assert_clean(seen["env"])
    assert seen["cwd"] == str(tmp_path)
    assert seen["env"]["MCP_TEST_NAME"] == "x" and seen["env"]["FROM_SETTINGS"] == "1"
    assert set(seen["env"]) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "MCP_TEST_NAME",
                                "FROM_SETTINGS", "LC_CTYPE", "PYTHONIOENCODING"}


def test_mainsails_own_git_reads_start_no_process(tmp_path, monkeypatch):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    started = []

    def refuse(*args, **kwargs):
        started.append(args)
        raise AssertionError(f"a process was started: {args}")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(os, "posix_spawn", refuse, raising=False)
    text = system_context(str(tmp_path))
    assert "Is directory a git repo: Yes" in text and not started
