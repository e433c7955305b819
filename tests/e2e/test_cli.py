"""The installed ``mainsail`` command as a newcomer meets it: the embedded defaults,
and a clear message (never a traceback) for each thing that can be wrong."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from demo.scripted import Script, ScriptError, Turn
from tests.conftest import free_port
from tests.e2e.conftest import MAINSAIL
from tests.fakeapi import FakeMessagesServer

pytestmark = pytest.mark.e2e


@pytest.fixture
def bare_env(tmp_path):
    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
    env["MAINSAIL_WARM"] = "false"  # (no warm server per test: tests/conftest.py)
    env["MAINSAIL_DATA_DIR"] = str(tmp_path / "data")
    # No Redis where a newcomer's machine would have none.
    env["MAINSAIL_LOCAL_REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    yield env
    # A command may have started the embedded redis-server (it outlives the command by design): stop it.
    pidfile = tmp_path / "data" / "redis" / "redis.pid"
    if pidfile.exists():
        try:
            os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
        except (ValueError, ProcessLookupError):
            pass


def mainsail(env, *args, cwd=None, timeout=120):
    return subprocess.run([MAINSAIL, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def no_traceback(out):
    assert "Traceback" not in out.stdout + out.stderr, out.stdout + out.stderr


def test_run_without_an_api_key_says_how_to_set_one(bare_env, tmp_path):
    out = mainsail(bare_env, "run", "hello", cwd=tmp_path)
    assert out.returncode == 1
    assert "No API key for model 'default'" in out.stderr
    assert "ANTHROPIC_API_KEY" in out.stderr and "ANTHROPIC_BASE_URL" in out.stderr
    assert "mainsail demo" in out.stderr
    no_traceback(out)


def test_an_unreachable_redis_url_is_named_with_the_fix(bare_env, tmp_path):
    url = f"redis://127.0.0.1:{free_port()}/0"
    out = mainsail(dict(bare_env, MAINSAIL_REDIS_URL=url, ANTHROPIC_API_KEY="k"), "run", "hi", cwd=tmp_path)
    assert out.returncode == 1
    assert f"Could not connect to Redis at {url}: is it running?" in out.stderr
    assert "MAINSAIL_REDIS_URL" in out.stderr
    no_traceback(out)


def test_an_invalid_setting_is_named(bare_env, tmp_path):
    out = mainsail(dict(bare_env, MAINSAIL_LEASE_SECONDS="soon"), "demo", cwd=tmp_path)
    assert out.returncode == 1
    assert "MAINSAIL_LEASE_SECONDS" in out.stderr and "'soon'" in out.stderr
    no_traceback(out)


def test_worker_refuses_an_unknown_queue(bare_env):
    out = mainsail(bare_env, "worker", "-Q", "modle")
    assert out.returncode == 2
    assert "unknown queue(s) modle" in out.stderr and "model, tools, memory" in out.stderr


def test_fsm_prints_the_machine_as_mermaid(bare_env):
    out = mainsail(bare_env, "fsm")
    assert out.returncode == 0
    assert "stateDiagram-v2" in out.stdout
    assert "QUERYING --> RUNNING_TOOLS: tools_requested" in out.stdout


def test_demo_on_a_bare_machine_starts_an_embedded_redis_and_a_worker(bare_env, tmp_path):
    data = tmp_path / "data" / "redis"
    homes = [tmp_path / "home1", tmp_path / "home2"]
    for home in homes:
        (home / ".claude").mkdir(parents=True)
    # The second user's settings turn bypassPermissions off: the demo then asks, and off a terminal
    # (stdin is /dev/null) what would ask is denied instead of waiting forever.
    (homes[1] / ".claude" / "settings.json").write_text('{"permissions": {"disableBypassPermissionsMode": "disable"}}')
    try:
        first = subprocess.run([MAINSAIL, "demo", "--workspace", str(tmp_path / "demo1")], env=dict(
            bare_env, HOME=str(homes[0])), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "Started an embedded Redis" in first.stderr
        assert "No worker is listening; running one in this process" in first.stderr
        assert "⏺ Edit(calc.py)" in first.stdout and "2 + 3 = 5" in first.stdout
        assert "return a + b" in (tmp_path / "demo1" / "calc.py").read_text()
        # The second run finds the same embedded server and its sessions.
        second = subprocess.run([MAINSAIL, "demo", "--workspace", str(tmp_path / "demo2")], env=dict(
            bare_env, HOME=str(homes[1])), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert second.returncode == 0, second.stderr
        assert "Started an embedded Redis" not in second.stderr
        assert (data / "appendonlydir").is_dir()
        assert "Bypass permissions mode was disabled by settings" in second.stderr
        assert "calls that would ask are denied" in second.stderr
        assert "return a - b" in (tmp_path / "demo2" / "calc.py").read_text()
    finally:
        pidfile = data / "redis.pid"
        if pidfile.exists():
            os.kill(int(pidfile.read_text()), signal.SIGTERM)


def test_demo_without_a_redis_binary_uses_fakeredis_and_warns(bare_env, tmp_path):
    out = mainsail(dict(bare_env, MAINSAIL_REDIS_SERVER_BIN="none", MAINSAIL_DEBUG="1"), "demo", "--workspace", str(tmp_path / "d"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Nothing survives this command" in out.stderr
    assert "fakeredis: !!!" not in out.stderr, "the in-process server refused a command"
    assert "2 + 3 = 5" in out.stdout


def test_a_model_api_that_keeps_failing_ends_the_run_with_a_clear_error(cluster, workspace):
    failing = Script(turns=[Turn(text="never", errors=[ScriptError(status=500, retry_after=0.01)] * 5)])
    with FakeMessagesServer(failing) as server:
        cluster.env.update(ANTHROPIC_BASE_URL=server.url, MAINSAIL_API_MAX_RETRIES="1")
        cluster.start_worker()
        out = cluster.mainsail("run", "hello", cwd=workspace)
        assert out.returncode == 1
        assert "Model call failed: 500 api_error" in out.stdout
        assert "✗ error_during_execution" in out.stdout
        no_traceback(out)
        printed = cluster.mainsail("run", "-p", "hello", cwd=workspace)
        assert printed.returncode == 1 and printed.stdout == ""
        assert "Error (error_during_execution): Model call failed: 500" in printed.stderr
        assert len(server.requests) == 4  # two runs, each one call plus one SDK retry
