"""Housekeeping through the installed CLI: ``rm`` (and ``--force`` on a running command), ``gc``,
read-only commands on a bare machine (they start nothing), and ``demo`` cleaning up after itself."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from demo.scripted import Script, ToolUse, Turn
from tests.conftest import free_port, processes_under, running
from tests.e2e.conftest import MAINSAIL, wait_for
from tests.fakeapi import FakeMessagesServer
from tests.housekeeping_contract import scan, without
from workflows.store import keys

pytestmark = pytest.mark.e2e

BYPASS = ("--permission-mode", "bypassPermissions")


def long_command() -> Script:
    return Script(turns=[Turn(tool_uses=[ToolUse(name="Bash", input={"command": "sleep 30.5151"})]),
                         Turn(text="done")])


def sessions_of(r, sid: str) -> dict:
    """A SCAN snapshot restricted to what belongs to ``sid`` (workers and Celery change keys meanwhile)."""
    return {k: v for k, v in scan(r).items() if k.startswith(keys.session(sid))}


def test_rm_refuses_a_busy_session_and_force_stops_its_command_first(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="hi")])) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        other = cluster.mainsail("run", "-p", *BYPASS, "--no-memory", "quick", cwd=workspace)
        assert other.returncode == 0, other.stderr
        (other_sid,) = cluster.store.session_ids()
        server.set_script(long_command())
        sid = cluster.mainsail("submit", *BYPASS, "--no-memory", "long", cwd=workspace).stdout.strip()
        wait_for(lambda: running("30.5151"), 30, what="the command to start")
        r = cluster.store.r
        theirs = sessions_of(r, other_sid)
        out = cluster.mainsail("rm", sid[:8], cwd=workspace)
        assert out.returncode == 1 and "Traceback" not in out.stderr
        assert (f"Nothing was removed: 1 session busy ({sid[:8]}: it is running_tools). Wait, or "
                "`mainsail rm --force` to cancel first.") in out.stderr, out.stderr
        assert cluster.store.get_session(sid).state.value == "running_tools"
        out = cluster.mainsail("rm", "--force", sid[:8], cwd=workspace)
        assert out.returncode == 0, out.stderr
        assert f"Cancelled session {sid[:8]} (it was running_tools)" in out.stdout
        assert re.search(rf"Removed session {sid[:8]} \(long\): \d+ keys \(\d+\.\d KB\)\.", out.stdout), out.stdout
        assert not running("30.5151"), "the command was stopped before its session was removed"
        assert sessions_of(r, sid) == {}
        assert sid not in cluster.store.session_ids() and not list(r.zscan_iter(keys.leases(), match=f"{sid}/*"))
        assert sessions_of(r, other_sid) == theirs, "another session's keys did not change by a byte"
        out = cluster.mainsail("rm", sid[:8], cwd=workspace)
        assert out.returncode == 1 and f"No session matches '{sid[:8]}'" in out.stderr


def test_gc_lists_with_sizes_then_removes_only_the_old_idle_sessions(cluster, workspace):
    with FakeMessagesServer(Script(turns=[Turn(text="hi")])) as server:
        cluster.env["ANTHROPIC_BASE_URL"] = server.url
        cluster.start_worker()
        for _ in range(2):
            out = cluster.mainsail("run", "-p", *BYPASS, "--no-memory", "hello", cwd=workspace)
            assert out.returncode == 0, out.stderr
    old, new = cluster.store.session_ids()[::-1]
    rec = cluster.store.get_session(old)
    rec.updated_at = time.time() - 40 * 86400
    r = cluster.store.r
    r.set(keys.session(old), rec.model_dump_json())
    r.zadd(keys.sessions(), {old: rec.updated_at})
    before = scan(r)
    out = cluster.mainsail("gc", "--older-than", "30d", "--dry-run", cwd=workspace)
    assert out.returncode == 0, out.stderr
    assert re.search(r"Would remove 1 session idle for over 30d \(\d+\.\d KB in Redis\):", out.stdout), out.stdout
    assert re.search(rf"  {old[:8]}  idle .* \d+ keys \d+\.\d KB  hello  {re.escape(str(workspace))}", out.stdout)
    assert new[:8] not in out.stdout and "Nothing was removed (--dry-run)." in out.stdout
    assert {k: v for k, v in scan(r).items() if k.startswith("mainsail:session")} == \
        {k: v for k, v in before.items() if k.startswith("mainsail:session")}
    out = cluster.mainsail("gc", "--older-than", "30d", cwd=workspace)
    assert out.returncode == 0 and "Removed 1 session idle for over 30d" in out.stdout, out.stdout
    after = {k: v for k, v in scan(r).items() if k.startswith("mainsail:session")}
    assert after == {k: v for k, v in without(before, old).items() if k.startswith("mainsail:session")}
    assert cluster.store.session_ids() == [new]
    out = cluster.mainsail("gc", "--older-than", "soon", cwd=workspace)
    assert out.returncode == 2 and "'soon' is not an age" in out.stderr


# ---------------------------------------------------------------------- a bare machine


@pytest.fixture
def bare(tmp_path):
    if MAINSAIL is None:
        pytest.skip("the mainsail command is not installed")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAINSAIL_", "ANTHROPIC_"))}
    env["MAINSAIL_WARM"] = "false"  # (no warm server per test: tests/conftest.py)
    env["MAINSAIL_DATA_DIR"] = str(tmp_path / "data")
    env["MAINSAIL_LOCAL_REDIS_URL"] = f"redis://127.0.0.1:{free_port()}/0"
    return env


READ_ONLY = [
    (("sessions",), 0, "nothing to show"),
    (("show", "abc"), 1, "no session 'abc' to show"),
    (("watch", "abc"), 1, "no session 'abc' to watch"),
    (("pending",), 0, "no pending permission requests"),
    (("export", "abc"), 1, "no session 'abc' to export"),
    (("memory", "list"), 0, "no memories to list"),
    (("memory", "show"), 0, "no memories to show"),
    (("memory", "show", "user-role"), 1, "no memory 'user-role' to show"),
    (("rm", "abc"), 1, "no session to remove"),
    (("gc", "--older-than", "30d"), 0, "nothing to remove"),
    (("cancel", "abc"), 1, "no session 'abc' to cancel"),
    (("send", "abc", "hi"), 1, "no session 'abc' to send to"),
    (("approve", "abc"), 1, "no session 'abc' to decide for"),
]


@pytest.mark.parametrize("no_binary", [False, True], ids=["redis-server", "no-binary"])
def test_read_only_commands_on_a_bare_machine_start_nothing(bare, tmp_path, no_binary):
    env = dict(bare, MAINSAIL_REDIS_SERVER_BIN="none") if no_binary else bare
    for args, code, what in READ_ONLY[:3] if no_binary else READ_ONLY:  # without the binary: the fallback
        out = subprocess.run([MAINSAIL, *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
        said = out.stdout if code == 0 else out.stderr
        assert out.returncode == code, (args, out.stdout, out.stderr)
        assert f"No Mainsail server is running here ({what})." in said, (args, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr and "Started an embedded Redis" not in out.stderr
        assert "in-memory Redis" not in out.stderr and "running one in this process" not in out.stderr
    assert not (tmp_path / "data" / "redis").exists(), "no embedded Redis was started"
    assert processes_under([str(tmp_path)]) == []


# ---------------------------------------------------------------------- demo


def test_demo_removes_the_workspace_it_made_unless_keep(cluster, tmp_path):
    env = dict(cluster.env, TMPDIR=str(tmp_path), MAINSAIL_EMBEDDED_WORKER="true")
    out = subprocess.run([MAINSAIL, "demo"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    ws = Path(re.search(r"Removed the demo workspace (\S+) \(--keep keeps it\)", out.stdout).group(1))
    assert ws.parent == tmp_path and not ws.exists()
    assert "2 + 3 = 5" in out.stdout and "return a + b" in out.stdout
    sid = re.search(r"mainsail show (\w{8})", out.stdout).group(1)
    assert cluster.store.resolve_session(sid)

    out = subprocess.run([MAINSAIL, "demo", "--keep"], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    kept = Path(re.search(r"Kept the demo workspace (\S+)\.", out.stdout).group(1))
    assert "return a + b" in (kept / "calc.py").read_text()

    named = tmp_path / "mine"
    out = subprocess.run([MAINSAIL, "demo", "--workspace", str(named)], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0 and (named / "calc.py").exists(), "a workspace you name is yours: it stays"
    assert "demo workspace" not in out.stdout.split("now reads:")[-1]
