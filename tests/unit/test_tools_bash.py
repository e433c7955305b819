"""Bash: output, exit codes, timeouts and cancellation killing the process group, truncation.

Every test that takes ``ctx`` or ``make_ctx`` runs twice: as a plain shell, and inside the
bubblewrap sandbox (skipped where bwrap cannot run).
"""

from __future__ import annotations

import os
import random
import subprocess
import threading
import time

import pytest

from tests.conftest import running
from workflows.models import SandboxSettings
from workflows.permissions.sandbox import sandbox_status
from workflows.tools import ToolContext, kill_process_group, run_tool, tool_schemas


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture(params=["plain", "sandbox"])
def make_ctx(request, ws):
    if request.param == "sandbox" and not sandbox_status().available:
        pytest.skip(f"no sandbox here: {sandbox_status().detail}")
    box = SandboxSettings() if request.param == "sandbox" else None

    def make(**kw) -> ToolContext:
        return ToolContext(workspace=ws, sandbox=box, **kw)

    return make


@pytest.fixture
def ctx(make_ctx):
    return make_ctx()


def marker() -> str:
    """A number nothing else runs with: ``sleep 30.<marker>`` is then findable in the process table."""
    return f"30.{random.randint(10**8, 10**9)}"



def gone(mark: str, timeout: float = 3.0) -> bool:
    deadline = time.monotonic() + timeout
    while running(mark) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not running(mark)


def wait_for_pidfile(path, timeout=5.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


def test_stdout_then_stderr(ctx):
    out = run_tool("Bash", {"command": "echo out; echo err >&2", "description": "print"}, ctx)
    assert not out.is_error
    assert out.content == "out\nerr"
    assert out.display == "out"


def test_runs_in_cwd(ws, make_ctx):
    (ws / "sub").mkdir()
    ctx = make_ctx(cwd=ws / "sub")
    assert run_tool("Bash", {"command": "pwd"}, ctx).content == str(ws / "sub")


def test_stdin_is_devnull(ctx):
    out = run_tool("Bash", {"command": "cat; echo done"}, ctx)
    assert out.content == "done"


def test_no_output(ctx):
    out = run_tool("Bash", {"command": "true"}, ctx)
    assert not out.is_error
    assert out.content == "(Bash completed with no output)"


def test_nonzero_exit(ctx):
    out = run_tool("Bash", {"command": "echo partial; exit 3"}, ctx)
    assert out.is_error
    assert out.content.splitlines() == ["partial", "Exit code 3"]
    assert out.display.startswith("exit 3")
    out = run_tool("Bash", {"command": "exit 7"}, ctx)
    assert out.is_error and out.content == "Exit code 7" and out.display == "exit 7"


def test_timeout_kills_the_shell(ws, ctx):
    mark = marker()
    out = run_tool("Bash", {"command": f"echo before; sleep {mark}", "timeout": 300}, ctx)
    assert out.is_error
    assert "Command timed out after 0.3s" in out.content
    assert "before" in out.content  # output so far is kept
    assert gone(mark)  # the shell (its command line holds the mark too) and the sleep


def test_timeout_kills_the_whole_group(ws, ctx):
    mark = marker()
    out = run_tool("Bash", {"command": f"sleep {mark} & wait", "timeout": 300}, ctx)
    assert out.is_error and "timed out" in out.content
    assert gone(mark)


def test_timeout_clamped_by_context(ws, make_ctx):
    ctx = make_ctx(bash_max_timeout_ms=200)
    out = run_tool("Bash", {"command": "sleep 30", "timeout": 600_000}, ctx)
    assert out.is_error and "Command timed out after 0.2s" in out.content


def test_default_timeout_from_context(ws, make_ctx):
    ctx = make_ctx(bash_default_timeout_ms=250)
    out = run_tool("Bash", {"command": "sleep 30"}, ctx)
    assert out.is_error and "Command timed out after 0.25s" in out.content


def test_timeout_above_max_is_a_validation_error(ctx, ws):
    out = run_tool("Bash", {"command": f"touch {ws / 'ran'}", "timeout": 600_001}, ctx)
    assert out.is_error
    assert "timeout" in out.content and "600000" in out.content
    assert not (ws / "ran").exists()


def test_cancel_from_another_thread(ws, ctx):
    started, mark = ws / "started", marker()

    def cancel_when_started():
        wait_for_pidfile(started)
        ctx.cancel.set()

    t = threading.Thread(target=cancel_when_started)
    t.start()
    out = run_tool("Bash", {"command": f"sleep {mark} & echo 1 > {started}; sleep {mark}", "timeout": 20_000}, ctx)
    t.join()
    assert out.is_error
    assert "Command was interrupted (the session was cancelled)" in out.content
    assert gone(mark)  # the shell, its foreground sleep and the background one


def test_already_cancelled_does_not_run(ws, ctx):
    ctx.cancel.set()
    out = run_tool("Bash", {"command": f"touch {ws / 'ran'}"}, ctx)
    assert out.is_error and "interrupted" in out.content
    assert not (ws / "ran").exists()


def test_output_truncation(ws, make_ctx):
    ctx = make_ctx(max_output_chars=1000)
    out = run_tool("Bash", {"command": "head -c 5000 /dev/zero | tr '\\0' a"}, ctx)
    assert not out.is_error
    assert out.content.startswith("a" * 1000)
    assert "a" * 1001 not in out.content
    assert "[output truncated: 4000 more characters]" in out.content


def test_truncation_counts_stderr_past_the_cap(ws, make_ctx):
    ctx = make_ctx(max_output_chars=100)
    out = run_tool("Bash", {"command": "printf '%0150d' 0; printf 'eeeee' >&2"}, ctx)
    assert "[output truncated: 55 more characters]" in out.content


def test_large_output_does_not_deadlock(ctx):
    out = run_tool("Bash", {"command": "head -c 2000000 /dev/zero | tr '\\0' b; echo; echo tail >&2"}, ctx)
    assert not out.is_error
    assert "output truncated" in out.content


def test_summary_is_the_command():
    from workflows.tools import REGISTRY

    assert REGISTRY["Bash"].summary({"command": "ls -la"}) == "ls -la"


def test_schema():
    bash = next(s for s in tool_schemas() if s["name"] == "Bash")
    assert bash["input_schema"]["required"] == ["command"]
    assert "600000" in bash["input_schema"]["properties"]["timeout"]["description"]


@pytest.mark.parametrize(
    "raw, phrase",
    [
        ({}, "command"),
        ({"command": ["ls"]}, "command"),
        ({"command": "ls", "timeout": "soon"}, "timeout"),
        ({"command": "ls", "timeout": 0}, "timeout"),
        ({"command": "ls", "run_as_root": True}, "run_as_root"),
    ],
)
def test_malformed(ctx, raw, phrase):
    out = run_tool("Bash", raw, ctx)
    assert out.is_error and phrase in out.content


def test_kill_process_group_helper(ws):
    proc = subprocess.Popen(
        ["/bin/sh", "-c", "trap '' TERM; sleep 30"], start_new_session=True
    )
    kill_process_group(proc, grace=0.2)  # TERM is ignored: SIGKILL follows
    assert proc.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(proc.pid, 0)
    kill_process_group(proc, grace=0.1)  # already gone: no error
